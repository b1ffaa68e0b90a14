"""The RLM persona of Jupyter AI's chat, driven as the chat drives it (``on_message``), against a
real stock kernel (jupyter_client) and the scripted LM server: the answer streamed into a real
chat document (jupyterlab_chat's YChat), the trajectory on disk, Stop, a missing variable, a
follow-up in the same session, and no payload or key in the chat; with no real-time collaboration,
no cell and the chat as it is; with a live notebook (a ``YNotebook``, as jupyter-collaboration holds
an open one), the run's cell in it: the live widget, then the static view and the answer."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("jupyter_ai_persona_manager")

from jupyter_client.asynchronous import AsyncKernelClient
from jupyterlab_chat.models import Message
from jupyterlab_chat.ychat import YChat
from kernel_session import KernelSession, scripted_env
from scripted_server import Reply, Script, ScriptedServer
from test_jupyter_ai_transcript import inert

from rlm_kernel.jupyter_ai.kernel import NotebookKernel
from rlm_kernel.jupyter_ai.live_cell import live_notebook
from rlm_kernel.jupyter_ai.persona import NEW_SETTINGS, RLMPersona

WIDGET = "application/vnd.jupyter.widget-view+json"
PAYLOADS = json.loads((Path(__file__).parents[1] / "data" / "payloads.json").read_text())["payloads"]


def printed(kernel: KernelSession, code: str) -> str:
    msg_id = kernel.start(code)
    kernel.wait_idle(msg_id)
    return kernel.text(msg_id).strip()


def repl(code: str) -> str:
    return f"```repl\n{code}\n```"


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="module")
def kernel(server: ScriptedServer, log_dir: Path) -> Iterator[KernelSession]:
    """The notebook's kernel: a stock python3 kernel whose user defined ``report``."""
    with KernelSession("python3", scripted_env(server, log_dir)) as session:
        code = "report = 'Acme: late. Birch: on time. Cobalt: late.' * 20\ncosts = [1, 2, 3]"
        assert session.execute(code)["status"] == "ok"
        yield session


class Chat:
    """A chat document with the persona in it, the persona's kernel that of ``kernel``."""

    def __init__(self, kernel: KernelSession, path: str | None = None) -> None:
        """``path``: the notebook's, as the server's sessions give it (its live cell goes there)."""
        self.doc = YChat()
        self.persona = RLMPersona(chat=self.doc)
        self.session = kernel

        async def notebook_kernel(message: Message) -> NotebookKernel:
            client = AsyncKernelClient()
            client.load_connection_info(kernel.km.get_connection_info())
            interrupt = lambda: asyncio.to_thread(kernel.km.interrupt_kernel)  # noqa: E731
            return NotebookKernel(client, interrupt, path=path)

        self.persona.notebook_kernel = notebook_kernel  # type: ignore[method-assign]

    async def say(self, body: str) -> None:
        message = Message(body=body, id=f"m{time.monotonic_ns()}", time=time.time(), sender="user")
        await self.persona.on_message(message)

    def replies(self) -> list[str]:
        return [m.body for m in self.doc.get_messages() if m.sender == self.persona.id]


def test_a_question_over_a_variable_streams_the_run_and_its_answer(
    kernel: KernelSession, server: ScriptedServer, log_dir: Path
) -> None:
    server.responder = Script(
        root=[
            repl(
                "parts = [context[i:i+200] for i in range(0, len(context), 200)]\nr = llm_query_batched(parts)"
            ),
            repl("FINAL('Acme and Cobalt missed it.')"),
        ],
        sub="late: Acme, Cobalt",
    )
    chat = Chat(kernel)
    before = set(log_dir.glob("*.jsonl"))
    asyncio.run(chat.say("@RLM which suppliers missed a deadline? @report"))
    [reply] = chat.replies()
    assert reply.startswith("RLM over `report` · gpt\\-4o\\-mini")
    assert "**Step 1** (done; 5 sub-call(s)" in reply and "tokens in" in reply
    assert reply.endswith("**Answer**:\n\nAcme and Cobalt missed it.\n")
    [trajectory] = set(log_dir.glob("*.jsonl")) - before
    kinds = [json.loads(line)["kind"] for line in trajectory.read_text().splitlines()]
    assert kinds[0] == "run_started" and kinds[-1] == "run_ended" and kinds.count("subcall_finished") == 5
    assert (
        printed(kernel, "print(_rlm_chat.response, _rlm_chat.usage.sub.calls)")
        == "Acme and Cobalt missed it. 5"
    )


def test_stop_interrupts_the_kernel_and_ends_the_run_within_a_second(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    server.responder = Script(
        root=[repl("r = llm_query_batched(['slow'] * 8)")], sub=Reply(text="x", delay=30)
    )
    chat = Chat(kernel)
    before = len(server.requests)

    async def scenario() -> float:
        task = asyncio.create_task(chat.say("@RLM which suppliers missed a deadline? @report"))
        while sum(not r.is_root for r in server.requests[before:]) < 8:  # the batch is in flight
            await asyncio.sleep(0.05)
        start = time.monotonic()
        await chat.persona.cancel_response()
        await asyncio.wait_for(task, 10)
        return time.monotonic() - start

    assert asyncio.run(scenario()) < 1.0
    [reply] = chat.replies()
    assert "**Stopped.**" in reply and "**Answer**" not in reply
    assert "interrupted" in printed(kernel, "print(_rlm_chat.error)")
    assert printed(kernel, "print(1 + 1)") == "2"  # the kernel goes on


def test_a_follow_up_goes_on_in_the_same_session(kernel: KernelSession, server: ScriptedServer) -> None:
    server.responder = Script(
        root=[repl("late = ['Acme', 'Cobalt']\nFINAL(len(late))"), repl("FINAL(late[0])")]
    )
    chat = Chat(kernel)
    asyncio.run(chat.say("@RLM how many suppliers were late? @report"))
    asyncio.run(chat.say("@RLM which was first?"))  # no variable: the same session and context
    first, second = chat.replies()
    assert first.endswith("**Answer**:\n\n2\n") and second.endswith("**Answer**:\n\nAcme\n")
    assert "RLM over `report`" in second
    # The second root request carries the first question and answer: one conversation.
    assert "how many suppliers were late" in json.dumps(server.requests[-1].body)


def test_the_settings_chosen_in_the_chat_reach_the_run_and_its_usage_is_reported(
    kernel: KernelSession, server: ScriptedServer, log_dir: Path
) -> None:
    """Jupyter AI's persona controls: the run's settings that fit a chat are offered with their
    help; a chosen one is the cell's option, a value not offered goes nowhere; settings changed
    later start a new session, said in one line; the tokens of the chat's runs are its usage."""
    server.responder = Script(root=[repl(f"print('still looking', {i})") for i in range(30)])
    chat = Chat(kernel)
    asyncio.run(chat.persona.prepare())
    offered = {s.id: s for s in chat.persona.get_setting_configurations()}
    assert set(offered) == {"max_iterations", "max_timeout", "max_concurrency"}
    assert offered["max_iterations"].description == "Root turns before the run must answer"
    assert all(s.current is None for s in offered.values())  # the notebook's own until chosen
    spec = {"max_iterations": "5", "max_timeout": "60\nimport os", "max_concurrency": None}
    asyncio.run(chat.persona.apply_settings_spec(spec))
    asyncio.run(chat.persona.prepare())  # prepared again: the choice stays
    assert chat.persona.options() == {"max_iterations": "5"}

    def ended(before: set[Path]) -> tuple[str, int, int]:
        """The run's stop, its steps, its root replies' input tokens."""
        [trajectory] = set(log_dir.glob("*.jsonl")) - before
        events = [json.loads(line) for line in trajectory.read_text().splitlines()]
        steps = sum(e["kind"] == "step_started" for e in events)
        return events[-1]["stop"], steps, sum(e["input_tokens"] for e in events if e["kind"] == "root_reply")

    before = set(log_dir.glob("*.jsonl"))
    asyncio.run(chat.say("@RLM which suppliers missed a deadline? @report"))
    stop, steps, tokens = ended(before)
    assert (stop, steps) == ("max_iterations", 5)
    assert chat.persona.get_usage().input_tokens == tokens > 0

    asyncio.run(chat.persona.apply_settings_spec({"max_iterations": "10"}))
    before = set(log_dir.glob("*.jsonl"))
    asyncio.run(chat.say("@RLM and which was on time?"))
    stop, steps, more = ended(before)
    assert (stop, steps) == ("max_iterations", 10)
    first, second = chat.replies()
    assert NEW_SETTINGS not in first and second.split("\n\n")[1] == NEW_SETTINGS
    assert chat.persona.get_usage().input_tokens == tokens + more  # the chat's runs add up


def test_two_variables_make_one_dict_context(kernel: KernelSession, server: ScriptedServer) -> None:
    server.responder = Script(root=[repl("FINAL(sorted(context))")])
    chat = Chat(kernel)
    asyncio.run(chat.say("@RLM what is there? @report @costs"))
    assert chat.replies()[0].endswith("**Answer**:\n\n['costs', 'report']\n")


def test_a_name_not_in_the_kernel_gets_one_line_with_close_names(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    before = len(server.requests)
    chat = Chat(kernel)
    asyncio.run(chat.say("@RLM which suppliers missed a deadline? @reprot"))
    assert chat.replies() == [
        "No variable `reprot` (did you mean @report?) in the notebook's kernel: define it, or check the name."
    ]
    assert len(server.requests) == before  # nothing ran
    asyncio.run(chat.say("@RLM no variable named at all"))
    assert chat.replies()[-1].startswith("Name a variable of the notebook")


@pytest.mark.parametrize("name", ["img-onerror", "script", "markdown-js-link", "iframe-srcdoc"])
def test_an_answer_with_a_payload_reaches_the_chat_inert(
    kernel: KernelSession, server: ScriptedServer, name: str
) -> None:
    payload = PAYLOADS[name].replace("ATTACKER", "http://127.0.0.1:9")
    key = "sk-proj-" + "A1b2C3d4" * 6
    server.responder = Script(root=[repl(f"print({payload!r})\nFINAL({payload!r} + ' ' + {key!r})")])
    chat = Chat(kernel)
    asyncio.run(chat.say("@RLM summarise @report"))
    [reply] = chat.replies()
    assert inert(reply), reply
    assert key not in reply and "A1b2C3d4" not in reply


def test_on_the_rlm_python_kernel_the_chat_gets_the_steps_and_the_answer(
    server: ScriptedServer, log_dir: Path
) -> None:
    """Notebook mode tells a session's question over the runs-panel comm too: the chat shows its
    steps and its answer, with no line about a cell (the request came from no cell)."""
    server.responder = Script(root=[repl("n = len(context)\nprint(n)"), repl("FINAL(n)")])
    with KernelSession("rlm-python", scripted_env(server, log_dir)) as session:
        assert session.execute("report = 'x' * 42")["status"] == "ok"
        chat = Chat(session)
        asyncio.run(chat.say("@RLM how long is it? @report"))
    [reply] = chat.replies()
    assert reply.startswith("RLM over `report`") and reply.endswith("**Answer**:\n\n42\n"), reply
    assert "**Step 1** (done" in reply and "**Step 2** (done" in reply, reply
    assert "cell" not in reply, reply


def _server(**settings: Any) -> Any:
    return SimpleNamespace(web_app=SimpleNamespace(settings=settings))


class _NoDocument:
    disable_rtc = True  # jupyter_server_ydoc installed, RTC turned off

    async def get_document(self, **kwargs: Any) -> Any:
        raise AssertionError("no live document is asked for with RTC off")


@pytest.mark.parametrize("settings", [{}, {"jupyter_server_ydoc": _NoDocument()}], ids=["none", "disabled"])
def test_with_no_real_time_collaboration_there_is_no_cell_and_the_chat_is_as_before(
    kernel: KernelSession, server: ScriptedServer, settings: dict[str, Any]
) -> None:
    server.responder = Script(root=[repl("FINAL('Acme')")])
    chat = Chat(kernel, path="report.ipynb")
    asked: list[str] = []

    async def live(path: str) -> Any:
        asked.append(path)
        return await live_notebook(_server(**settings), path)

    chat.persona.live_notebook = live  # type: ignore[method-assign]
    asyncio.run(chat.say("@RLM which supplier was late? @report"))
    [reply] = chat.replies()
    assert asked == ["report.ipynb"]
    assert reply.startswith("RLM over `report` · gpt\\-4o\\-mini\n\n**Step 1**"), reply
    assert "new cell" not in reply and reply.endswith("**Answer**:\n\nAcme\n")


def test_with_a_live_notebook_the_run_gets_a_cell_with_its_widget_then_its_answer(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    """The live document as jupyter_server_ydoc gives it (``get_document(copy=False)``): a cell at
    its end with the command run, the live widget's display (ipywidgets, with its model id) while the
    run goes, then the static view with the trajectory and the answer, as a ``%%rlm`` cell has."""
    from jupyter_ydoc import YNotebook

    notebook = YNotebook()
    notebook.set(
        {
            "cells": [
                {
                    "cell_type": "code",
                    "source": "report = ...",
                    "metadata": {},
                    "outputs": [],
                    "execution_count": 1,
                }
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    widgets: list[dict[str, Any]] = []
    states: list[str] = []

    def seen(target: str, event: Any) -> None:
        if target == "cells" and notebook.cell_number == 2:
            states.append(str(notebook.ycells[1].get("execution_state")))
            outputs = notebook.get()["cells"][1]["outputs"]
            widgets.extend(o["data"] for o in outputs if WIDGET in o.get("data", {}))

    notebook.observe(seen)
    calls: list[dict[str, Any]] = []

    class Collaboration:
        disable_rtc = False

        async def get_document(self, **kwargs: Any) -> Any:
            calls.append(kwargs)
            return notebook

    server.responder = Script(
        root=[repl("late = 'Acme and Cobalt'\nprint(len(context), late)"), repl("FINAL(late)")]
    )
    chat = Chat(kernel, path="work/report.ipynb")
    chat.persona.live_notebook = lambda path: live_notebook(
        _server(jupyter_server_ydoc=Collaboration()), path
    )  # type: ignore[method-assign]
    asyncio.run(chat.say("@RLM which suppliers missed a deadline? @report"))
    assert calls == [
        {"path": "work/report.ipynb", "content_type": "notebook", "file_format": "json", "copy": False}
    ]
    [reply] = chat.replies()
    head, line, _ = reply.split("\n\n", 2)
    assert (
        head.startswith("RLM over `report`")
        and line == "The run is shown live in a new cell at the end of report\\.ipynb."
    )
    assert reply.endswith("**Answer**:\n\nAcme and Cobalt\n")
    first, run = notebook.get()["cells"]
    assert first["source"] == "report = ..."
    assert run["source"].startswith("%%rlm -c report --out _rlm_chat --session chat_")
    assert run["source"].endswith("\nwhich suppliers missed a deadline?")
    assert run["metadata"] == {"trusted": True} and notebook.ycells[1]["execution_state"] == "idle"
    assert "running" in states
    assert widgets and all(w[WIDGET]["model_id"] and "text/plain" in w for w in widgets), widgets
    shown = [o for o in run["outputs"] if o["output_type"] == "display_data"]
    assert not any(WIDGET in o["data"] for o in shown)  # the widget's place: the static view
    view, answer = shown
    assert "Step 2" in view["data"]["text/html"] and "rlm_kernel" in view["metadata"], view["metadata"].keys()
    assert answer["data"]["text/plain"] == "Acme and Cobalt"


def test_a_live_cell_keeps_outputs_as_the_lab_does_and_lets_go_of_a_deleted_cell() -> None:
    """Streams merge (a carriage return overwrites its line), a display's update replaces it in
    place, and once the user deletes the cell its run's messages change nothing and raise nothing."""
    from jupyter_ydoc import YNotebook

    from rlm_kernel.jupyter_ai.live_cell import LiveCell

    notebook = YNotebook()
    notebook.set({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    live = LiveCell.insert(notebook, "%%rlm -c report\nwhich?")
    for kind, content in [
        ("stream", {"name": "stdout", "text": "10%\r"}),
        ("stream", {"name": "stdout", "text": "\r100%\ndone\n"}),
        (
            "display_data",
            {"data": {WIDGET: {"model_id": "m1"}, "text/plain": "VBox()"}, "transient": {"display_id": "d"}},
        ),
        (
            "update_display_data",
            {"data": {"text/html": "<p>run</p>"}, "metadata": {"k": 1}, "transient": {"display_id": "d"}},
        ),
        ("error", {"ename": "UsageError", "evalue": "no", "traceback": ["no"]}),
    ]:
        live.feed({"msg_type": kind, "content": content})
    [cell] = notebook.get()["cells"][-1:]
    assert [o["output_type"] for o in cell["outputs"]] == ["stream", "display_data", "error"]
    assert cell["outputs"][0]["text"] == "100%\ndone\n"
    assert cell["outputs"][1]["data"] == {"text/html": "<p>run</p>"} and cell["outputs"][1]["metadata"] == {
        "k": 1
    }
    del notebook.ycells[len(notebook.ycells) - 1]
    live.feed({"msg_type": "stream", "content": {"name": "stdout", "text": "more\n"}})
    live.finish()
    assert not live.alive and all("%%rlm" not in c["source"] for c in notebook.get()["cells"])
