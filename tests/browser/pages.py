"""The browser tests' view of a JupyterLab page: notebooks written for a test, cells run as a user
would, and reads of the DOM through the hooks listed in labextension/README.md ("Browser tests:
hooks"). Every wait polls a condition; none sleeps a fixed time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from scripted_server import Request, ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
RLM_PYTHON = {"name": "rlm-python", "display_name": "RLM Python", "language": "python"}
STOCK_PYTHON = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}

T = TypeVar("T")
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"
CONNECTED = f"{PANEL} [data-rlm-control='status']:not(.lm-mod-hidden)"
RUNS = "#rlm-runs-panel"


def repl(text: str, code: str) -> str:
    return f"{text}\n\n```repl\n{code.strip()}\n```"


def code_cell(source: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": source, "execution_count": None, "outputs": []}


def write_notebook(lab: Any, name: str, *sources: str, kernel: dict = RLM_PYTHON) -> str:
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": kernel, "language_info": {"name": "python"}},
        "cells": [{**code_cell(s), "id": f"cell-{i}"} for i, s in enumerate(sources)],
    }
    (lab.root_dir / name).write_text(json.dumps(nb, indent=1))
    return name


def roots(server: ScriptedServer) -> list[Request]:
    return [r for r in server.requests if r.is_root]


def subs(server: ScriptedServer) -> list[Request]:
    return [r for r in server.requests if not r.is_root]


# ------------------------------------------------------------------ the page

CELLS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.content.widgets) return null;
  return panel.content.widgets.map(c => ({
    id: c.model.id,
    type: c.model.type,
    source: c.model.sharedModel.getSource(),
    rlm: c.model.getMetadata('rlm') ?? null,
    classes: Array.from(c.node.classList),
    step: c.node.dataset.rlmStep ?? null,
    status: c.node.dataset.rlmStatus ?? null,
    run: c.node.dataset.rlmRun ?? null,
    badge: c.node.querySelector('.rlm-badge')?.textContent ?? null,
    output: c.node.querySelector('.jp-OutputArea')?.innerText ?? '',
    markdown: c.node.querySelector('.jp-RenderedMarkdown')?.innerText ?? '',
    text: c.node.innerText,
    count: c.model.type === 'code' ? c.model.executionCount : null,
  }));
}"""

RUNS_VIEW = """() => {
  const panel = document.querySelector('#rlm-runs-panel');
  if (!panel || panel.classList.contains('lm-mod-hidden')) return null;
  return {
    totals: panel.querySelector('[data-rlm-totals]')?.textContent ?? null,
    runs: Array.from(panel.querySelectorAll('.rlm-run')).map(r => ({
      id: r.dataset.runId,
      status: r.dataset.status,
      pill: r.querySelector('.rlm-pill')?.textContent ?? '',
      totals: r.querySelector('.rlm-run-totals')?.textContent ?? '',
      end: (r.querySelector('.rlm-run-answer') || r.querySelector('.rlm-run-error'))?.textContent ?? null,
      steps: Array.from(r.querySelectorAll('.rlm-step')).map(s => ({
        step: Number(s.dataset.step),
        status: s.dataset.status,
        author: s.querySelector('.rlm-step-author')?.textContent ?? '',
        calls: Array.from(s.querySelectorAll('.rlm-call')).map(c => c.dataset.status),
      })),
    })),
  };
}"""


def wait_until(
    page: Any, probe: Callable[[], T], ok: Callable[[T], bool], what: str, timeout: float = 30
) -> T:
    """Poll ``probe`` (a read of the page or the server) until ``ok``; fail with the last value seen."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value is not None and ok(value):
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}; last seen:\n{_show(value)}")
        page.wait_for_timeout(150)


def _show(value: Any) -> str:
    try:
        return json.dumps(value, indent=1, default=str)[:6000]
    except TypeError:
        return repr(value)[:6000]


def answered(cell: dict, error: bool = False) -> bool:
    """An answer cell (with the error class when ``error``), its Markdown rendered (that lags the class)."""
    return (
        "rlm-answer-cell" in cell["classes"]
        and ("rlm-answer-error" in cell["classes"]) == error
        and cell["markdown"].startswith("RLM answer" if not error else "RLM run ended without an answer")
    )


def cells(page: Any) -> list[dict]:
    return page.evaluate(CELLS)


def runs_view(page: Any) -> dict | None:
    return page.evaluate(RUNS_VIEW)


def status_text(page: Any) -> str:
    return page.locator(f"{PANEL} [data-rlm-control='status']").inner_text()


def open_notebook(page: Any, lab: Any, name: str, *, connected: bool = True) -> None:
    """Open the notebook in a fresh workspace and wait until its kernel is idle and, unless
    ``connected`` is false (a stock kernel), the extension's comm is open."""
    page.goto(lab.url(name))
    page.wait_for_function(
        "(name) => window.jupyterapp?.shell?.currentWidget?.context?.path === name",
        arg=name,
        timeout=90_000,
    )
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
    page.wait_for_selector(f"{PANEL} .jp-Cell", timeout=60_000)
    if connected:
        wait_connected(page)
    else:
        wait_idle(page)


def wait_connected(page: Any) -> None:
    try:
        page.wait_for_selector(CONNECTED, timeout=90_000)
    except Exception as e:
        pytest.fail(
            "the RLM toolbar never showed: the comm did not open (is the extension built? "
            f"pip install -e . builds it into rlm_kernel/labextension): {e}"
        )
    wait_idle(page)


def wait_idle(page: Any) -> None:
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
        timeout=60_000,
    )


def run_cell(page: Any, index: int) -> None:
    """Select cell ``index`` and run it, as Ctrl+Enter would (not awaited: watch the DOM instead)."""
    page.evaluate(
        """(i) => {
          const app = window.jupyterapp;
          const nb = app.shell.currentWidget.content;
          nb.mode = 'command';
          nb.deselectAll();
          nb.activeCellIndex = i;
          void app.commands.execute('notebook:run-cell');
        }""",
        index,
    )


def index_of(page: Any, source_start: str) -> int:
    found = [i for i, c in enumerate(cells(page)) if c["source"].startswith(source_start)]
    assert len(found) == 1, f"one cell starting with {source_start!r}: {found}"
    return found[0]


def show_runs(page: Any) -> None:
    page.evaluate("() => window.jupyterapp.commands.execute('rlm-kernel:show-runs')")
    page.wait_for_selector(f"{RUNS}:not(.lm-mod-hidden)")


def widen_runs_panel(page: Any, by: int) -> None:
    """Drag the handle between the notebook and the right side bar ``by`` pixels to the left."""
    start = page.evaluate(
        """() => {
          const r = document.querySelector('#jp-right-stack').getBoundingClientRect();
          return {x: r.left - 2, y: r.top + r.height / 2, width: r.width};
        }"""
    )
    page.mouse.move(start["x"], start["y"])
    page.mouse.down()
    page.mouse.move(start["x"] - by, start["y"], steps=8)
    page.mouse.up()
    page.wait_for_function(
        "(w) => document.querySelector('#jp-right-stack').getBoundingClientRect().width > w + 50",
        arg=start["width"],
    )


def shoot(page: Any, name: str) -> Path:
    """The notebook and, when open, the runs panel, down to the last cell (no menus, no status bar)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.mouse.move(0, 0)
    page.wait_for_timeout(200)  # let the last update paint
    box = page.evaluate(
        """() => {
          const rect = el => el && !el.classList.contains('lm-mod-hidden') ? el.getBoundingClientRect() : null;
          const main = rect(document.querySelector('#jp-main-dock-panel'));
          const side = rect(document.querySelector('#jp-right-stack'));
          const right = side && side.width > 0 ? side.right : main.right;
          const cells = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell');
          const last = cells.length ? cells[cells.length - 1].getBoundingClientRect().bottom + 16 : main.bottom;
          const runs = document.querySelector('#rlm-runs-panel .rlm-runs-content');
          const panel = side && side.width > 0 && runs ? runs.getBoundingClientRect().bottom + 16 : 0;
          const bottom = Math.min(main.bottom, Math.max(last, panel));
          return {x: main.left, y: main.top, width: right - main.left, height: bottom - main.top};
        }"""
    )
    page.screenshot(path=str(path), clip=box)
    return path
