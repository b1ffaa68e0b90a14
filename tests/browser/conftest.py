"""Fixtures for the browser tests: one scripted LM server, one ``jupyter lab``, one headless Chromium.

Everything runs on 127.0.0.1 and needs no API key. JupyterLab runs in its own temporary root,
settings and workspaces folders; the kernels it starts inherit ``OPENAI_BASE_URL`` and friends,
so the RLM Python kernel talks to the scripted server, whose ``responder`` each test sets.

The extension is taken from this checkout's build (``rlm_kernel/labextension``, made by
``pip install -e .`` or ``jlpm build``) ahead of any installed copy, so the tests see the
current front end; without a build they use the installed one.

Every test here skips, with the reason, where Chromium (``apt-get install chromium``) or the
``playwright`` package is missing; the modules need not check.

On a failure, the report shows the tail of JupyterLab's log and the browser console, and a
screenshot of the page goes to ``test-artifacts/browser/FAILED-<test>.png``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_server import CHROMIUM, CHROMIUM_ARGS, Lab, running_lab
from scripted_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
EXTENSION_NAME = "rlm-kernel-labextension"
EXTENSION_BUILD = ROOT / "rlm_kernel" / "labextension"
HERE = Path(__file__).resolve().parent


def _missing() -> str | None:
    """Why no browser test can run here, or None."""
    if not Path(CHROMIUM).exists():
        return f"browser tests need Chromium at {CHROMIUM} (apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "browser tests need the playwright package (pip install playwright)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if (why := _missing()) is None:
        return
    skip = pytest.mark.skip(reason=why)
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(skip)


# One LM server and one JupyterLab for every module here (each module's tests share them, as each
# test sets the responder and opens its own notebook); the browser is a module's own: Playwright's
# sync API keeps an event loop running on the main thread while it is open, and the rest of the
# suite calls asyncio.run() there.
@pytest.fixture(scope="package")
def lm_server() -> Iterator[ScriptedServer]:
    """The scripted LM server every kernel talks to; tests set ``responder`` and read ``requests``."""
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="package")
def lab(lm_server: ScriptedServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("lab")
    extra: list[str] = []
    if (EXTENSION_BUILD / "package.json").exists():
        # FileFindHandler serves /lab/extensions/<name>/… from <dir>/<name>: link the build there.
        (tmp / "labextensions").mkdir()
        (tmp / "labextensions" / EXTENSION_NAME).symlink_to(EXTENSION_BUILD, target_is_directory=True)
        extra.append(f"--LabApp.extra_labextensions_path={tmp / 'labextensions'}")
    try:
        with running_lab(tmp, lm_server, extra_args=extra) as lab:
            yield lab
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            shutil.copy(tmp / "lab.log", ARTIFACTS / "lab.log")


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
