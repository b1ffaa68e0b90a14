"""The chat text of a run (rlm_kernel/jupyter_ai/transcript.py) and the message it reads
(request.py), without a kernel: every payload of the corpus in every place a run can put LM text
renders inert in two Markdown parsers with raw HTML on, and no key survives."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import mistune
import pytest
from markdown_it import MarkdownIt
from unit.test_safe import ALL, PAYLOADS, problems

from rlm_kernel.jupyter_ai.request import ChatRequest, cell, missing_line, parse, setup_code
from rlm_kernel.jupyter_ai.transcript import Transcript, fenced

COMM = {"comm_id": "c1", "target_name": "rlm_kernel"}
KEY = "sk-proj-" + "Zz9Yy8Xx" * 6


def inert(markdown: str) -> bool:
    """No element that runs script or loads a resource, however a chat renders Markdown."""
    with_html = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    return problems(with_html.render(markdown)) == [] and problems(mistune.html(markdown)) == []


def run_messages(text: str) -> list[dict[str, Any]]:
    """A run's IOPub messages, as a stock kernel sends them, with ``text`` everywhere an LM, the
    context or the kernel can put text."""
    event = {"run_id": "r1", "parent_id": None, "depth": 0, "ts": 0.0}
    events = [
        {**event, "kind": "step_started", "step": 1, "code": text, "author": "root"},
        {**event, "kind": "subcall_finished", "step": 1, "call_id": "s", "model": text, "input_tokens": 7},
        {**event, "kind": "step_finished", "step": 1, "output": text, "error": text},
        {**event, "kind": "warning", "code": "unsupported", "text": text},
        {**event, "kind": "warning", "code": text, "text": text},
    ]
    return [
        {"msg_type": "stream", "content": {"name": "stdout", "text": text}},
        {
            "msg_type": "comm_open",
            "content": {**COMM, "data": {"type": "run_started", "run_id": "r1", "model": text}},
        },
        {
            "msg_type": "comm_msg",
            "content": {**COMM, "data": {"type": "events", "run_id": "r1", "events": events}},
        },
        {
            "msg_type": "comm_msg",
            "content": {
                **COMM,
                "data": {"type": "run_finished", "run_id": "r1", "answer": text, "error": text},
            },
        },
        {"msg_type": "error", "content": {"ename": "UsageError", "evalue": text}},
    ]


def transcript_of(text: str, variables: tuple[str, ...] = ("report",)) -> str:
    transcript = Transcript(variables=variables)
    for msg in run_messages(text):
        transcript.feed(msg)
    return transcript.markdown()


@pytest.mark.parametrize("name", [*sorted(PAYLOADS), "all"])
def test_no_payload_survives_into_the_chat(name: str) -> None:
    text = PAYLOADS.get(name, ALL)
    assert inert(transcript_of(text, (text,)))
    assert inert(missing_line([text], [text]))


def test_backticks_cannot_close_a_fence() -> None:
    code = "x = 1\n```\n<img src=x onerror=alert(1)>\n````"
    block = fenced(code)
    assert block.startswith("`````\n") and block.endswith("\n`````")
    assert inert(block)


def test_keys_never_reach_the_message() -> None:
    shown = transcript_of(f"the key is {KEY} and https://user:{KEY}@example.org/")
    assert KEY not in shown and "Zz9Yy8Xx" not in shown


def test_the_run_as_the_chat_shows_it() -> None:
    transcript = Transcript(variables=("report",))
    event = {"run_id": "r1", "parent_id": None, "depth": 0, "ts": 0.0}
    child = {**event, "run_id": "r2", "parent_id": "r1", "depth": 1}
    for msg in [
        {
            "msg_type": "stream",
            "content": {"name": "stdout", "text": "No API key found: using the bundled model.\n"},
        },
        {
            "msg_type": "comm_open",
            "content": {**COMM, "data": {"type": "run_started", "run_id": "r1", "model": "m"}},
        },
        {
            "msg_type": "comm_msg",
            "content": {
                **COMM,
                "data": {
                    "type": "events",
                    "run_id": "r1",
                    "events": [
                        {**event, "kind": "step_started", "step": 1, "code": "print(1)"},
                        {
                            **event,
                            "kind": "subcall_finished",
                            "step": 1,
                            "input_tokens": 1200,
                            "output_tokens": 5,
                        },
                        {
                            **child,
                            "kind": "subcall_finished",
                            "step": 1,
                            "input_tokens": 10,
                            "output_tokens": 1,
                        },
                        {**event, "kind": "step_finished", "step": 1, "output": "1"},
                        {**event, "kind": "warning", "code": "low_confidence", "text": "roots disagree"},
                    ],
                },
            },
        },
        {
            "msg_type": "comm_msg",
            "content": {**COMM, "data": {"type": "run_finished", "run_id": "r1", "answer": "42"}},
        },
    ]:
        assert transcript.feed(msg)
    assert transcript.markdown() == (
        "RLM over `report` · m\n\n"
        "No API key found\\: using the bundled model\\.\n\n"
        "**Step 1** (done; 2 sub-call(s), 1,210 tokens in, 6 out)\n\n```python\nprint(1)\n```\n\n```\n1\n```\n\n"
        "⚠ low confidence: roots disagree\n\n"
        "**Answer** (low confidence):\n\n42\n"
    )
    assert not transcript.feed({"msg_type": "comm_msg", "content": {"comm_id": "other", "data": {}}})


@pytest.mark.parametrize(
    ("body", "question", "variables"),
    [
        (
            "@RLM which suppliers missed a deadline? @report",
            "which suppliers missed a deadline?",
            ("report",),
        ),
        ("@RLM compare @costs with @report", "compare costs with", ("costs", "report")),
        ("@RLM what is in it? @a @b @a", "what is in it?", ("a", "b")),
        ("@RLM mail me at x@example.org @report", "mail me at x@example.org", ("report",)),
        ("@RLM @Jupyternaut says so @report", "says so", ("report",)),
        ("@RLM a follow-up", "a follow-up", ()),
    ],
)
def test_a_message_names_its_variables(body: str, question: str, variables: tuple[str, ...]) -> None:
    assert parse(body, {"RLM", "Jupyternaut"}) == ChatRequest(question, variables)


def test_the_cell_is_a_plain_rlm_cell() -> None:
    one = ChatRequest("late {x}?", ("report",))
    assert cell(one, session="chat_1") == "%%rlm -c report --out _rlm_chat --session chat_1\nlate {{x}}?"
    two = ChatRequest("q", ("a", "b"))
    assert setup_code(two.variables) == "_rlm_chat_context = {'a': a, 'b': b}"
    assert cell(two, session="s").startswith("%%rlm -c _rlm_chat_context ")
    assert setup_code(one.variables) is None
    assert json.dumps(missing_line(["x"], [])) == json.dumps(
        "No variable `x` in the notebook's kernel: define it, or check the name."
    )


def test_the_avatar_is_an_svg_beside_the_persona() -> None:
    pytest.importorskip("jupyter_ai_persona_manager")
    from rlm_kernel.jupyter_ai.persona import AVATAR

    assert Path(AVATAR).read_text().startswith("<svg ")


def test_without_the_comm_the_answer_is_the_one_the_cell_shows() -> None:
    transcript = Transcript(variables=("report",))
    widget = {"application/vnd.jupyter.widget-view+json": {"model_id": "w"}, "text/plain": "RunWidget()"}
    assert not transcript.feed({"msg_type": "display_data", "content": {"data": widget}})
    assert transcript.feed({"msg_type": "display_data", "content": {"data": {"text/plain": "<b>42</b>"}}})
    assert transcript.markdown().endswith("**Answer**:\n\n\\<b>42\\</b>\n")
    assert inert(transcript.markdown())


def test_a_progress_bar_is_one_line() -> None:
    transcript = Transcript(variables=("report",))
    transcript.feed({"msg_type": "stream", "content": {"name": "stdout", "text": "No API key found.\n"}})
    for part in ("\rFetching:  10%", "\rFetching:  50%", "\rFetching: 100%\n"):
        transcript.feed({"msg_type": "stream", "content": {"name": "stderr", "text": part}})
    assert transcript.notices == ["No API key found.", "Fetching: 100%"]


def test_the_extra_and_the_entry_point_name_the_persona() -> None:
    from importlib import import_module

    tomllib = pytest.importorskip("tomllib")

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    target = project["entry-points"]["jupyter_ai.personas"]["rlm"]
    module, _, name = target.partition(":")
    pytest.importorskip("jupyter_ai_persona_manager")
    from jupyter_ai_persona_manager import BasePersona

    assert issubclass(getattr(import_module(module), name), BasePersona)
    assert "rlm-kernel[eval,ray,browser,acp,jupyter-ai]" in project["optional-dependencies"]["test"]
    assert any(
        r.startswith("jupyter-ai-persona-manager") for r in project["optional-dependencies"]["jupyter-ai"]
    )


class _Sessions:
    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    async def list_sessions(self) -> list[dict[str, Any]]:
        return [{"path": p, "kernel": {"id": f"k-{p}"}} for p in self.paths]


class _Kernels:
    def get_kernel(self, kernel_id: str) -> Any:
        return type("Manager", (), {"client": lambda self: kernel_id})()

    async def interrupt_kernel(self, kernel_id: str) -> None:
        return None


@pytest.mark.parametrize(
    ("open_paths", "attached", "chosen"),
    [
        (["a.ipynb", "report.ipynb"], ["a.ipynb"], "k-a.ipynb"),  # attached
        (["a.ipynb", "report.ipynb"], [], "k-report.ipynb"),  # beside the chat, same name
        (["a.ipynb", "notes.txt"], [], "k-a.ipynb"),  # the only notebook
        (["a.ipynb", "b.ipynb"], [], "Several notebooks are open"),
        ([], [], "No notebook has a running kernel"),
    ],
)
def test_the_chats_notebook(open_paths: list[str], attached: list[str], chosen: str) -> None:
    pytest.importorskip("jupyter_ai_persona_manager")
    from rlm_kernel.jupyter_ai.persona import find_notebook_kernel

    server = type("Server", (), {"session_manager": _Sessions(open_paths), "kernel_manager": _Kernels()})()
    found = asyncio.run(find_notebook_kernel(server, "report.chat", attached))
    assert (found if isinstance(found, str) else found.client).startswith(chosen)
