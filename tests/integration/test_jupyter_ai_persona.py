"""The RLM persona of Jupyter AI's chat, driven as the chat drives it (``on_message``), against a
real stock kernel (jupyter_client) and the scripted LM server: the answer streamed into a real
chat document (jupyterlab_chat's YChat), the trajectory on disk, Stop, a missing variable, a
follow-up in the same session, and no payload or key in the chat."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jupyter_ai_persona_manager")

from jupyter_client.asynchronous import AsyncKernelClient  # noqa: E402
from jupyterlab_chat.models import Message  # noqa: E402
from jupyterlab_chat.ychat import YChat  # noqa: E402
from kernel_session import KernelSession, scripted_env  # noqa: E402
from scripted_server import Reply, Script, ScriptedServer  # noqa: E402

from rlm_kernel.jupyter_ai.kernel import NotebookKernel  # noqa: E402
from rlm_kernel.jupyter_ai.persona import RLMPersona  # noqa: E402

PAYLOADS = json.loads((Path(__file__).parents[1] / "data" / "payloads.json").read_text())["payloads"]


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

    def __init__(self, kernel: KernelSession) -> None:
        self.doc = YChat()
        self.persona = RLMPersona(chat=self.doc)
        self.session = kernel

        async def notebook_kernel(message: Message) -> NotebookKernel:
            client = AsyncKernelClient()
            client.load_connection_info(kernel.km.get_connection_info())
            return NotebookKernel(client, lambda: asyncio.to_thread(kernel.km.interrupt_kernel))

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
            repl("parts = [context[i:i+200] for i in range(0, len(context), 200)]\nr = llm_query_batched(parts)"),
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
    check = kernel.execute("print(_rlm_chat.response, _rlm_chat.usage.sub.calls)")
    assert check["status"] == "ok"
