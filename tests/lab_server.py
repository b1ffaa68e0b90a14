"""A real ``jupyter lab`` on 127.0.0.1 wired to the scripted LM server, and Chromium's settings.

Shared by the browser tests (``tests/browser``) and the documentation's screenshots (``docs/screenshots.py``).
JupyterLab runs in its own temporary root, settings, workspaces and runtime folders; the kernels it
starts inherit ``OPENAI_BASE_URL`` and friends, so they talk to the scripted server. Real-time
collaboration is off (``YDocExtension.disable_rtc``) where jupyter-collaboration is installed,
so every lab is the one the tests were written for, unless a test asks for ``collaboration``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripted_server import ScriptedServer

CHROMIUM = "/usr/bin/chromium"  # Debian's; Playwright never downloads a browser here
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@dataclass
class Lab:
    """A running ``jupyter lab``: where it listens, the folder it serves, its log."""

    base: str
    token: str
    root_dir: Path
    log: Path
    proc: subprocess.Popen
    console: list[str] = field(default_factory=list)  # the current page's console errors

    def url(self, path: str) -> str:
        return f"{self.base}/lab/tree/{path}?reset&token={self.token}"

    def api(self, method: str, path: str) -> Any:
        request = urllib.request.Request(
            f"{self.base}/api/{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def log_tail(self, chars: int = 6000) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-chars:]
        return "(no log)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_settings(folder: Path, theme: str = "light") -> None:
    """This JupyterLab's user settings: no news or update toasts, every cell rendered (no windowing)."""
    apputils = folder / "@jupyterlab" / "apputils-extension"
    apputils.mkdir(parents=True)
    (apputils / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    name = "JupyterLab Dark" if theme == "dark" else "JupyterLab Light"
    (apputils / "themes.jupyterlab-settings").write_text(json.dumps({"theme": name}))
    notebook = folder / "@jupyterlab" / "notebook-extension"
    notebook.mkdir(parents=True)
    (notebook / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))


@contextlib.contextmanager
def running_lab(
    tmp: Path,
    lm_server: ScriptedServer,
    *,
    theme: str = "light",
    extra_args: Sequence[str] = (),
    timeout: float = 120,
    collaboration: bool = False,
) -> Iterator[Lab]:
    """Start ``jupyter lab`` in ``tmp`` (notebooks go in ``lab.root_dir``), wait until it answers, stop it after.

    ``collaboration``: real-time collaboration on (jupyter-collaboration's ``jupyter_server_ydoc``,
    where it is installed): notebooks and chats are shared documents the server holds live."""
    root_dir = tmp / "notebooks"
    root_dir.mkdir()
    write_settings(tmp / "settings", theme)
    env = {
        **os.environ,
        "OPENAI_BASE_URL": lm_server.openai_base_url,
        "OPENAI_API_KEY": "sk-scripted",
        "RLM_MODEL": "gpt-4o-mini",
        "RLM_LOG_DIR": str(tmp / "runs"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    for var in ("RLM_BACKEND", "RLM_SUB_MODEL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        env.pop(var, None)
    token, port = secrets.token_hex(16), free_port()
    log = tmp / "lab.log"
    args = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--allow-root",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        "--LabApp.expose_app_in_browser=True",
        "--JupyterNotebookApp.expose_app_in_browser=True",  # Notebook 7, where it is installed
        "--LabApp.news_url=None",
        # Off, the extension still tells the page (disableRTC) to load files as without it.
        f"--YDocExtension.disable_rtc={not collaboration}",
        f"--SQLiteYStore.db_path={tmp / 'ystore.db'}",  # else in the current folder
        f"--BaseFileIdManager.db_path={tmp / 'file_id.db'}",  # else in the user's data folder
        *extra_args,
    ]
    with open(log, "w") as log_file:
        proc = subprocess.Popen(args, env=env, stdout=log_file, stderr=subprocess.STDOUT)
    lab = Lab(base=f"http://127.0.0.1:{port}", token=token, root_dir=root_dir, log=log, proc=proc)
    try:
        _wait_until_up(lab, timeout)
        yield lab
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _wait_until_up(lab: Lab, timeout: float) -> None:
    url = f"{lab.base}/api/status?token={lab.token}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lab.proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {lab.proc.returncode}:\n{lab.log_tail()}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        time.sleep(0.2)
    raise RuntimeError(f"jupyter lab did not answer {url} in {timeout:.0f} s:\n{lab.log_tail()}")
