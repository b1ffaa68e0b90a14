"""Fixtures for the browser tests: one scripted LM server, one ``jupyter lab``, one headless Chromium.

Everything runs on 127.0.0.1 and needs no API key. JupyterLab runs in its own temporary root,
settings and workspaces folders; the kernels it starts inherit ``OPENAI_BASE_URL`` and friends,
so the RLM Python kernel talks to the scripted server, whose ``responder`` each test sets.

The extension is taken from this checkout's build (``rlm_kernel/labextension``, made by
``pip install -e .`` or ``jlpm build``) ahead of any installed copy, so the tests see the
current front end; without a build they use the installed one.

On a failure, the report shows the tail of JupyterLab's log and the browser console, and a
screenshot of the page goes to ``test-artifacts/browser/FAILED-<test>.png``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from scripted_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
EXTENSION_NAME = "rlm-kernel-labextension"
EXTENSION_BUILD = ROOT / "rlm_kernel" / "labextension"


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_settings(folder: Path) -> None:
    """This JupyterLab's user settings: no news or update toasts, every cell rendered (no windowing)."""
    apputils = folder / "@jupyterlab" / "apputils-extension"
    apputils.mkdir(parents=True)
    (apputils / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    notebook = folder / "@jupyterlab" / "notebook-extension"
    notebook.mkdir(parents=True)
    (notebook / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))


def _wait_http(url: str, lab: Lab, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lab.proc.poll() is not None:
            pytest.fail(f"jupyter lab exited with {lab.proc.returncode}:\n{lab.log_tail()}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        time.sleep(0.2)
    pytest.fail(f"jupyter lab did not answer {url} in {timeout:.0f} s:\n{lab.log_tail()}")


# Module scope, not session: Playwright's sync API keeps an event loop running on the main thread
# while it is open, and the rest of the suite calls asyncio.run() there.
@pytest.fixture(scope="module")
def lm_server() -> Iterator[ScriptedServer]:
    """The scripted LM server every kernel talks to; tests set ``responder`` and read ``requests``."""
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="module")
def lab(lm_server: ScriptedServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("lab")
    root_dir = tmp / "notebooks"
    root_dir.mkdir()
    _write_settings(tmp / "settings")
    extra: list[str] = []
    if (EXTENSION_BUILD / "package.json").exists():
        # FileFindHandler serves /lab/extensions/<name>/… from <dir>/<name>: link the build there.
        (tmp / "labextensions").mkdir()
        (tmp / "labextensions" / EXTENSION_NAME).symlink_to(EXTENSION_BUILD, target_is_directory=True)
        extra.append(f"--LabApp.extra_labextensions_path={tmp / 'labextensions'}")
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
    token, port = secrets.token_hex(16), _free_port()
    log = tmp / "lab.log"
    with open(log, "w") as log_file:
        proc = subprocess.Popen(
            [
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
                "--LabApp.news_url=None",
                *extra,
            ],
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    lab = Lab(base=f"http://127.0.0.1:{port}", token=token, root_dir=root_dir, log=log, proc=proc)
    try:
        _wait_http(f"{lab.base}/api/status?token={token}", lab)
        yield lab
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            shutil.copy(log, ARTIFACTS / "lab.log")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    for stale in ARTIFACTS.glob("FAILED-*.png"):  # from an earlier session
        stale.unlink()
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any, lab: Lab, lm_server: ScriptedServer, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh browser page; the scripted server's requests are cleared; kernels are shut down after."""
    lm_server.requests.clear()
    context = browser.new_context(viewport={"width": 1400, "height": 900}, device_scale_factor=1.5)
    context.set_default_timeout(30_000)
    page = context.new_page()
    lab.console.clear()
    page.on("console", lambda m: m.type in ("error", "warning") and lab.console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: lab.console.append(f"pageerror: {e}"))
    try:
        yield page
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(Exception):
                page.screenshot(path=str(ARTIFACTS / f"FAILED-{request.node.name}.png"))
        context.close()
        # Free the CPU for the next test: its notebook starts a kernel of its own.
        with contextlib.suppress(Exception):
            for session in lab.api("GET", "sessions"):
                lab.api("DELETE", f"sessions/{session['id']}")
            for kernel in lab.api("GET", "kernels"):
                lab.api("DELETE", f"kernels/{kernel['id']}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)
    if report.failed and report.when in ("setup", "call"):
        lab = getattr(item, "funcargs", {}).get("lab")
        if isinstance(lab, Lab):
            report.sections.append(("jupyter lab log (tail)", lab.log_tail()))
            if lab.console:
                report.sections.append(("browser console", "\n".join(lab.console[-60:])))
