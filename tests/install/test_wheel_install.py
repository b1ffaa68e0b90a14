"""The install a user gets: the sdist and the wheel built as a release is, then the wheel with the
README's ``lab`` extra in a fresh virtual environment, on a machine with no Node.js. There
``jupyter lab`` runs with the extension enabled and served, and the RLM Python kernel starts with
its magics.

Slow (a few minutes: two isolated builds, then the wheel's dependencies): marked ``install``, run
by the default suite; ``-m "not install"`` leaves it out while working on something else."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from waiting import wait_until

pytestmark = [pytest.mark.install, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
BUILT = ROOT / "rlm_kernel" / "labextension"
EXTENSION = "rlm-kernel-labextension"
NODE = ("node", "nodejs", "npm", "npx", "jlpm", "yarn", "yarnpkg", "corepack")


@dataclass(frozen=True)
class Installed:
    dist: Path
    venv: Path
    env: dict[str, str]  # the venv's programs first on PATH, no Node, a home of its own

    def run(self, *args: str, timeout: float = 120) -> str:
        done = subprocess.run(
            [str(self.venv / "bin" / args[0]), *args[1:]],
            env=self.env,
            cwd=self.env["HOME"],  # not the clone, whose rlm_kernel/ a kernel would import instead
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, done.stderr
        return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)


def _clean_env(path: str) -> dict[str, str]:
    drop = ("JUPYTER_", "HATCH_JUPYTER_BUILDER", "VIRTUAL_ENV", "PYTHONPATH")
    return {**{k: v for k, v in os.environ.items() if not k.startswith(drop)}, "PATH": path}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, path_without: Callable[..., str]) -> Installed:
    assert (BUILT / "package.json").is_file() and any((BUILT / "static").glob("remoteEntry.*.js")), (
        "no built extension in rlm_kernel/labextension: it is committed; rebuild it with python labextension/hatch_build.py"
    )
    no_node = path_without(*NODE)
    tmp = tmp_path_factory.mktemp("wheel")
    env = _clean_env(no_node)
    # The sdist from the tree, then the wheel from the sdist, each in an isolated build environment.
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(tmp / "dist"), str(ROOT)],
        env=env, check=True, capture_output=True, timeout=420,
    )  # fmt: skip
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], env=env, check=True, timeout=120)
    wheel = next((tmp / "dist").glob("rlm_kernel-*.whl"))
    subprocess.run(
        # --no-compile: what runs is the same; CPython compiles each module on its first import
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", f"{wheel}[lab]"],
        env=env, check=True, capture_output=True, timeout=420,
    )  # fmt: skip
    (tmp / "home").mkdir()
    used = {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{no_node}", "HOME": str(tmp / "home")}
    return Installed(tmp / "dist", venv, used)


def test_the_sdist_and_the_wheel_carry_the_built_extension(installed: Installed) -> None:
    with tarfile.open(next(installed.dist.glob("rlm_kernel-*.tar.gz"))) as sdist:
        assert any(n.endswith("rlm_kernel/labextension/package.json") for n in sdist.getnames())
    with zipfile.ZipFile(next(installed.dist.glob("rlm_kernel-*.whl"))) as wheel:
        names = wheel.namelist()
    shared = ".data/data/share/jupyter/"
    assert any(f"{shared}labextensions/{EXTENSION}/static/remoteEntry." in n for n in names)
    assert any(n.endswith(f"{shared}kernels/rlm-python/kernel.json") for n in names)


def test_jupyterlab_lists_the_extension_enabled(installed: Installed) -> None:
    assert re.match(r"4\.\d+", installed.run("jupyter", "lab", "--version").strip())
    listing = installed.run("jupyter", "labextension", "list")
    line = next(ln for ln in listing.splitlines() if EXTENSION in ln)
    assert "enabled" in line and "OK" in line and "(python, rlm-kernel)" in line


def test_the_rlm_python_kernelspec_is_in_the_venv(installed: Installed) -> None:
    specs = json.loads(installed.run("jupyter", "kernelspec", "list", "--json"))["kernelspecs"]
    assert Path(specs["rlm-python"]["resource_dir"]).is_relative_to(installed.venv)
    assert specs["rlm-python"]["spec"]["display_name"] == "RLM Python"


def _get(url: str, data: bytes | None = None, method: str = "GET") -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return 0, b""


def test_jupyter_lab_serves_the_extension(installed: Installed) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = "install-test"
    base = f"http://127.0.0.1:{port}"
    log_path = Path(installed.env["HOME"]) / "lab.log"
    # As root (CI) JupyterLab wants --allow-root; a user would not need it.
    command = [str(installed.venv / "bin" / "jupyter"), "lab", "--no-browser", "--allow-root", f"--port={port}",
               f"--ServerApp.token={token}", "--ServerApp.port_retries=0"]  # fmt: skip
    with open(log_path, "w") as log:
        lab = subprocess.Popen(command, env=installed.env, cwd=installed.env["HOME"], stdout=log, stderr=log)
    try:
        up = wait_until(lambda: _get(f"{base}/api/status?token={token}")[0] == 200, timeout=90)
        assert up, log_path.read_text()[-2000:]
        status, page = _get(f"{base}/lab?token={token}")
        assert status == 200
        config = re.search(
            rb'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page, re.S
        )
        assert config is not None
        federated = {e["name"]: e for e in json.loads(config.group(1))["federated_extensions"]}
        entry = f"{base}/lab/extensions/{EXTENSION}/{federated[EXTENSION]['load']}?token={token}"
        assert _get(entry)[0] == 200  # the browser can load it
    finally:
        lab.terminate()
        try:
            lab.wait(timeout=30)
        except subprocess.TimeoutExpired:
            lab.kill()
            lab.wait()


# Run by the venv's Python: its jupyter_client starts the installed kernelspec and asks the kernel.
ASK_THE_KERNEL = """
from jupyter_client.manager import start_new_kernel

km, kc = start_new_kernel(kernel_name="rlm-python", startup_timeout=120)
try:
    out = []
    code = "import rlm_kernel; print('kernel:', rlm_kernel.__file__, 'rlm' in get_ipython().magics_manager.magics['cell'])"
    kc.execute_interactive(code, timeout=60, output_hook=lambda m: out.append(m["content"].get("text", "")))
    print("".join(out), end="")
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
"""


def test_the_rlm_python_kernel_starts_from_the_venv_with_its_magics(installed: Installed) -> None:
    said = re.search(
        r"^kernel: (\S+) (\w+)$", installed.run("python", "-c", ASK_THE_KERNEL, timeout=240), re.M
    )
    assert said is not None
    assert Path(said[1]).is_relative_to(installed.venv) and said[2] == "True"
