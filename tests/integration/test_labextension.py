"""The JupyterLab extension as installed: enabled with the package, its own lint and jest tests pass."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "labextension"


def test_the_extension_is_installed_and_enabled():
    out = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"], capture_output=True, text=True, check=True
    )
    listing = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)
    line = next((ln for ln in listing.splitlines() if "rlm-kernel-labextension" in ln), "")
    assert "enabled" in line and "OK" in line, listing


@pytest.fixture(scope="module")
def jlpm() -> str:
    """jlpm with the extension's packages installed: the install skips them when the committed
    build is current, so the lint and jest tests install them here, as the lock file pins them."""
    jlpm = shutil.which("jlpm")
    if jlpm is None or shutil.which("node") is None:
        pytest.skip("the extension's lint and jest tests need Node.js (jlpm comes with JupyterLab)")
    if not (EXT / "node_modules").is_dir():
        done = subprocess.run(
            [jlpm, "install", "--immutable"], cwd=EXT, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return jlpm


@pytest.mark.parametrize("script", ["lint", "test"])
def test_front_end_lint_and_unit_tests(script: str, jlpm: str) -> None:
    done = subprocess.run([jlpm, "run", script], cwd=EXT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
