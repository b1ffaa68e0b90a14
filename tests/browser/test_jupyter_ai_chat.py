"""The RLM persona in Jupyter AI's chat, as a user meets it: a notebook on a stock kernel with a
variable, a chat beside it, ``@RLM question @report`` typed into the chat's input, and the run's
answer in the persona's message. The persona comes through its entry point, as the package's install
gives it; where the package is not installed with it, as a local persona of the workspace
(``.jupyter/personas``), which Jupyter AI's persona manager loads as it loads entry points."""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from typing import Any

import pytest

pytest.importorskip("jupyter_ai_persona_manager")

from lab_server import Lab
from pages import STOCK_PYTHON, open_notebook, repl, run_cell, shoot, wait_until, write_notebook
from scripted_server import Reply, Script, ScriptedServer

PERSONA = '''from rlm_kernel.jupyter_ai.persona import RLMPersona


class RLM(RLMPersona):
    """The package's persona, found by the persona manager in this folder."""
'''
MESSAGES = ".jp-chat-rendered-message"


def chat_texts(page: Any) -> list[str]:
    return page.eval_on_selector_all(MESSAGES, "els => els.map(e => e.innerText)")


def ask(page: Any, lab: Lab, stem: str, message: str) -> None:
    """The notebook STEM.ipynb on a stock kernel with ``report`` defined, the chat STEM.chat
    beside it with the persona, and ``message`` typed into the chat's input and sent."""
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
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", f"{stem}.chat")
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
    texts = wait_until(
        page,
        lambda: chat_texts(page),
        lambda ts: any("Answer" in t for t in ts),
        "the persona's answer in the chat",
        timeout=90,
    )
    [reply] = [t for t in texts if "Answer" in t]
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
