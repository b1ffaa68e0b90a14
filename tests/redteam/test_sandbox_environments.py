"""The sandbox starts in the environments users have: packages that come through a ``.pth`` file
(a site folder it adds, a checkout installed in editable mode) and a venv over the system's
packages; it binds what the host's ``sys.path`` holds, read-only, and of a checkout only its
packages."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import rlm_kernel

pytestmark = pytest.mark.timeout(180)

HOST = """
import json
from rlm_kernel.executors.kernel import KernelExecutor
executor = KernelExecutor()
executor.bind("doc", None, None)
code = '''
import fakepkg, cpkg
print(fakepkg.X, cpkg.Y)
for path in ({env!r}, {notes!r}):
    try:
        open(path).read()
        print("read", path)
    except OSError:
        pass
'''
print(json.dumps(executor.execute(code, step=1).result.stdout))
executor.close()
"""


def test_a_sandbox_starts_where_packages_come_through_a_pth_file(tmp_path: Path) -> None:
    site = tmp_path / "site"  # a site folder a .pth file adds, rlm_kernel in it
    (site / "fakepkg-1.0.dist-info").mkdir(parents=True)
    (site / "fakepkg").mkdir()
    (site / "fakepkg" / "__init__.py").write_text("X = 42\n")
    (site / "rlm_kernel").symlink_to(Path(rlm_kernel.__file__).parent)
    checkout = tmp_path / "checkout"  # a source checkout installed in editable mode
    (checkout / "cpkg").mkdir(parents=True)
    (checkout / "cpkg" / "__init__.py").write_text("Y = 7\n")
    (checkout / ".env").write_text("SECRET=not-for-the-kernel\n")
    (checkout / "notes.txt").write_text("not for the kernel\n")
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True
    )
    purelib = sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)})
    Path(purelib, "extra.pth").write_text(f"{site}\n{checkout}\n")
    script = HOST.format(env=str(checkout / ".env"), notes=str(checkout / "notes.txt"))
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script],
        capture_output=True,
        text=True,
        timeout=150,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == "42 7\n"
