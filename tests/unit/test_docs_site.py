"""The documentation site builds with warnings as errors, and the README stays a front door whose
Develop section holds the two commands that `.ci/run` runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETUP = 'pip install -e ".[test]"'
TEST = "python -m pytest"


def test_the_docs_build_with_warnings_as_errors(tmp_path: Path) -> None:
    out = tmp_path / "html"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "docs", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert (out / "index.html").is_file()
    api = out / "api.html"
    assert api.is_file()
    assert 'id="rlm_kernel.RLM"' in api.read_text(), "the API page documents RLM"


def test_the_readme_is_short_and_holds_the_two_commands_of_a_fresh_clone() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert f"```bash\n{SETUP}\n```" in readme
    assert f"```bash\n{TEST}\n```" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert SETUP in ci and TEST in ci, ".ci/run runs the README's commands"
