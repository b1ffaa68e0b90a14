"""The RLM persona in Jupyter AI's chat, as a user meets it: a notebook on a stock kernel with a
variable, a chat beside it, ``@RLM question @report`` typed into the chat's input, and the run's
answer in the persona's message. The persona comes through its entry point, as the package's install
gives it; where the package is not installed with it, as a local persona of the workspace
(``.jupyter/personas``), which Jupyter AI's persona manager loads as it loads entry points.

The lab of the first tests has no real-time collaboration (the persona inserts no cell); the last
test starts one with it on (jupyter-collaboration), where the run gets a live cell in the notebook."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jupyter_ai_persona_manager")

from lab_server import Lab, running_lab
from pages import STOCK_PYTHON, open_notebook, repl, run_cell, shoot, wait_until, write_notebook
from scripted_server import Reply, Script, ScriptedServer

PERSONA = '''from rlm_kernel.jupyter_ai.persona import RLMPersona


class RLM(RLMPersona):
    """The package's persona, found by the persona manager in this folder."""
'''
MESSAGES = ".jp-chat-rendered-message"


def chat_texts(page: Any) -> list[str]:
    return page.eval_on_selector_all(MESSAGES, "els => els.map(e => e.innerText)")


def answered_in_chat(page: Any) -> str:
    """The persona's message once it holds the answer."""
    texts = wait_until(
        page,
        lambda: chat_texts(page),
        lambda ts: any("Answer" in t for t in ts),
        "the persona's answer in the chat",
        timeout=90,
    )
    [reply] = [t for t in texts if "Answer" in t]
    return reply


def ask(page: Any, lab: Lab, stem: str, message: str, *, beside: bool = False) -> None:
    """The notebook STEM.ipynb on a stock kernel with ``report`` defined, the chat STEM.chat
    beside it with the persona (in the same dock area, or ``beside`` the notebook, both in view),
    and ``message`` typed into the chat's input and sent."""
    if not entry_points(group="jupyter_ai.personas", name="rlm"):  # else two personas would be RLM
        personas = lab.root_dir / ".jupyter" / "personas"
        personas.mkdir(parents=True, exist_ok=True)
        (personas / "rlm_persona.py").write_text(PERSONA)
    code = "report = 'Acme: late. Birch: on time. Cobalt: late.'"
    name = write_notebook(lab, f"{stem}.ipynb", code, kernel=STOCK_PYTHON)
    (lab.root_dir / f"{stem}.chat").write_text(json.dumps({}))
    open_notebook(page, lab, name, connected=False)
    run_cell(page, 0)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.content.widgets[0].model.executionCount === 1"
    )
    options = {"mode": "split-right"} if beside else {}
    page.evaluate(
        "([path, options]) => window.jupyterapp.commands.execute('docmanager:open', {path, options})",
        [f"{stem}.chat", options],
    )
    box = page.wait_for_selector(".jp-chat-input-container textarea", timeout=60_000)
    box.click()
    box.type(message)
    page.keyboard.press("Escape")  # the mention pop-up, if any
    box.press("Enter")


def test_at_rlm_in_the_chat_runs_over_a_notebook_variable(
    page: Any, lab: Lab, lm_server: ScriptedServer
) -> None:
    late = "Acme and Cobalt <img src=x onerror=alert(1)>"  # an answer carrying a payload
    lm_server.responder = Script(
        root=[repl("Look.", f"late = {late!r}\nprint(context[:40], late)"), repl("Done.", "FINAL(late)")]
    )
    ask(page, lab, "report", "@RLM which suppliers missed a deadline? @report")
    reply = answered_in_chat(page)
    assert "RLM over report" in reply and "Step 2" in reply and "Error" not in reply
    assert reply.endswith("Answer:\n\nAcme and Cobalt <img src=x onerror=alert(1)>")  # shown as text
    assert page.evaluate("() => window.__rlm_pwned === undefined")
    assert page.eval_on_selector_all(f"{MESSAGES} img[src='x']", "els => els.length") == 0
    shoot(page, "jupyter-ai-chat.png")


def test_the_chats_stop_button_stops_the_run(page: Any, lab: Lab, lm_server: ScriptedServer) -> None:
    lm_server.responder = Script(
        root=[repl("Ask.", "r = llm_query_batched(['slow'] * 4)")], sub=Reply(text="x", delay=30)
    )
    ask(page, lab, "stopped", "@RLM which suppliers missed a deadline? @report")
    wait_until(
        page,
        lambda: chat_texts(page),
        lambda ts: any("Step 1 (running" in t for t in ts),
        "step 1 running",
        timeout=90,
    )
    wait_until(
        page, lambda: sum(not r.is_root for r in lm_server.requests), lambda n: n >= 4, "the sub-calls"
    )
    page.get_by_role("button", name="Stop generating").click()
    texts = wait_until(
        page, lambda: chat_texts(page), lambda ts: any("Stopped." in t for t in ts), "Stopped.", 10
    )
    assert not any("Answer" in t for t in texts)


# -- with real-time collaboration: the run's live cell ---------------------------------------------

LIVE_CELL = """(path) => {
  const panel = window.jupyterapp.shell.widgets('main').find(w => w.context?.path === path);
  if (!panel) return null;
  const cells = panel.content.widgets;
  const cell = cells[cells.length - 1];
  return {
    count: cells.length,
    source: cell.model.sharedModel.getSource(),
    prompt: cell.node.querySelector('.jp-InputPrompt')?.innerText ?? '',
    widgets: cell.node.querySelectorAll('.jp-OutputArea .jupyter-widgets').length,
    buttons: Array.from(cell.node.querySelectorAll('.jp-OutputArea button')).map(b => b.innerText.trim()),
    output: cell.node.querySelector('.jp-OutputArea')?.innerText ?? '',
  };
}"""


@pytest.fixture(scope="module")
def rtc_lab(lm_server: ScriptedServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A lab with real-time collaboration on, and JupyterLab's autosave off: the file on disk
    changes only when the user saves."""
    pytest.importorskip("jupyter_server_ydoc")
    tmp = tmp_path_factory.mktemp("rtc-lab")
    docmanager = tmp / "settings" / "@jupyterlab" / "docmanager-extension"
    docmanager.mkdir(parents=True)
    (docmanager / "plugin.jupyterlab-settings").write_text(json.dumps({"autosave": False}))
    with running_lab(tmp, lm_server, collaboration=True) as lab:
        yield lab


@pytest.fixture
def rtc_page(
    browser: Any, rtc_lab: Lab, lm_server: ScriptedServer, request: pytest.FixtureRequest
) -> Iterator[Any]:
    lm_server.requests.clear()
    context = browser.new_context(viewport={"width": 1400, "height": 900}, device_scale_factor=1.5)
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        yield page
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            with contextlib.suppress(Exception):
                shoot(page, f"FAILED-{request.node.name}.png")
            print(rtc_lab.log_tail())  # the lab's log, with the report
        context.close()


def test_with_collaboration_the_run_gets_a_live_cell_in_the_notebook(
    rtc_page: Any, rtc_lab: Lab, lm_server: ScriptedServer
) -> None:
    """The persona inserts a cell into the open notebook (the live document, not the file): the
    run's widget is live there while a sub-call is slow, then the run's static view and answer; the
    file on disk is unchanged until the user saves; the chat message has the answer and says where
    the run is shown."""
    page, lab = rtc_page, rtc_lab
    lm_server.responder = Script(
        root=[
            repl("Ask.", "r = llm_query('which were late?')\nprint(r)"),
            repl("Done.", "FINAL('Acme and Cobalt')"),
        ],
        sub=Reply(text="late: Acme, Cobalt", delay=10),  # the widget is live meanwhile
    )
    ask(page, lab, "live", "@RLM which suppliers missed a deadline? @report", beside=True)
    notebook: Path = lab.root_dir / "live.ipynb"
    on_disk = notebook.read_text()
    probe = lambda: page.evaluate(LIVE_CELL, "live.ipynb")  # noqa: E731
    cell = wait_until(page, probe, lambda c: c["count"] == 2, "the run's cell in the notebook", 90)
    assert cell["source"].startswith("%%rlm -c report --out _rlm_chat --session chat_"), cell
    assert cell["source"].endswith("\nwhich suppliers missed a deadline?"), cell
    live = lambda c: c["widgets"] > 0 and "Stop" in c["buttons"] and "Step 1" in c["output"]  # noqa: E731
    cell = wait_until(page, probe, live, "the live widget, updated to step 1", 60)
    assert cell["prompt"].strip() == "[*]:", cell  # shown as running
    shoot(page, "jupyter-ai-chat-cell-live.png")
    reply = answered_in_chat(page)
    assert "The run is shown live in a new cell at the end of live.ipynb." in reply
    assert reply.endswith("Answer:\n\nAcme and Cobalt")
    cell = wait_until(
        page, probe, lambda c: "Acme and Cobalt" in c["output"] and not c["buttons"], "the answer in the cell"
    )
    assert "Step 1" in cell["output"] and cell["count"] == 2, cell
    assert cell["prompt"].strip() == "[ ]:", cell
    shoot(page, "jupyter-ai-chat-cell.png")
    assert notebook.read_text() == on_disk  # the persona never writes the file
    page.evaluate(
        "(path) => window.jupyterapp.shell.widgets('main').find(w => w.context?.path === path).context.save()",
        "live.ipynb",
    )
    saved = wait_until(
        page, lambda: json.loads(notebook.read_text()), lambda nb: len(nb["cells"]) == 2, "the saved notebook"
    )
    [_, run] = saved["cells"]
    assert "".join(run["source"]).startswith("%%rlm -c report")
    assert any("Acme and Cobalt" in json.dumps(o) for o in run["outputs"])
