"""The Binder configuration, checked the way mybinder runs it: in a fresh virtual environment,
``pip install -r binder/requirements.txt`` then ``binder/postBuild``, then the demo notebook runs
with no API key (it replays a recorded run of the real local model)."""

from __future__ import annotations

import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def tracked_copy(dest: Path) -> Path:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in files.stdout.splitlines():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    cache = ROOT / "labextension" / ".yarn" / "cache"  # npm packages already fetched: same bytes, no network
    if cache.is_dir():
        shutil.copytree(cache, dest / "labextension" / ".yarn" / "cache")
    return dest


@pytest.mark.timeout(900)
def test_binder_steps_build_a_working_environment(tmp_path):
    if not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout to know the tracked files")
    repo = tracked_copy(tmp_path / "repo")
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(env_dir),
        "RLM_LOG_DIR": str(tmp_path / "runs"),
    }
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "PYTHONPATH"):
        env.pop(var, None)

    def run(*cmd: str) -> str:
        done = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{cmd} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        return done.stdout + done.stderr

    run(str(bin_dir / "python"), "-m", "pip", "install", "-q", "-r", "binder/requirements.txt")
    log = run("bash", "binder/postBuild")
    assert "rlm-python" in log and "rlm-kernel-labextension" in log
    python = str(bin_dir / "python")
    run(python, "-m", "pip", "install", "-q", "nbclient", "nbformat")
    notebook = repo / "examples" / "01-quickstart.ipynb"
    code = (
        "import nbformat, sys\n"
        "from nbclient import NotebookClient\n"
        f"nb = nbformat.read({str(notebook)!r}, as_version=4)\n"
        f"NotebookClient(nb, timeout=120, kernel_name='python3', resources={{'metadata': {{'path': {str(notebook.parent)!r}}}}}).execute()\n"
        "print([o.get('data', {}).get('text/plain') for c in nb.cells for o in c.get('outputs', []) if o.get('output_type') == 'execute_result'][:1])\n"
    )
    out = run(python, "-c", code)
    assert "Blue Heron, 7 pm on 14 March" in out
    assert str(ROOT) not in run(python, "-c", "import rlm_kernel; print(rlm_kernel.__file__)")  # not ours
