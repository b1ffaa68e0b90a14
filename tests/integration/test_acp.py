"""``python -m rlm_kernel.acp`` driven as editors drive an ACP agent: the SDK's own client-side
connection over a real subprocess's stdin and stdout, the scripted LM server behind it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Reply, Script, ScriptedServer
from waiting import wait_until

from rlm_kernel.secrets import REDACTED
from rlm_kernel.trajectory import load

acp = pytest.importorskip("acp", reason="the acp extra: pip install 'rlm-kernel[acp]'")

from acp import (  # noqa: E402
    PROTOCOL_VERSION,
    embedded_text_resource,
    resource_block,
    resource_link_block,
    spawn_agent_process,
    text_block,
)
from acp.schema import (  # noqa: E402
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    ClientCapabilities,
    EnvVariable,
    McpServerStdio,
    PermissionOption,
    RequestPermissionResponse,
    SseMcpServer,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

# Looks like an OpenAI key, so that the redactor knows it by its form as well as by its variable.
KEY = "sk-proj-acpTEST0123456789abcdefghijklmnopqrstuvwxyzABCD"


def repl(*lines: str) -> str:
    return "```repl\n" + "\n".join(lines) + "\n```"


class Chat:
    """An ACP client as an editor's chat is one: it keeps the updates it is sent and answers
    permission requests with the options it is told to pick, in order."""

    def __init__(self, picks: tuple[str, ...] = ()) -> None:
        self.updates: list[Any] = []
        self.asked: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.picks = list(picks)
        self.changed = asyncio.Condition()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        async with self.changed:
            self.updates.append(update)
            self.changed.notify_all()

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append((tool_call, options))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.picks.pop(0))
        )

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 30.0) -> None:
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(predicate), timeout)

    async def answer(self, n: int) -> str:
        """The chat's ``n``-th answer, once it is in: before 0.12, the SDK's client may return a
        prompt's response before it has handled the last updates the agent sent with it."""
        await self.wait_for(lambda: len(self.answers()) >= n)
        return self.answers()[n - 1]

    # What the chat shows.
    def of(self, kind: type) -> list[Any]:
        return [u for u in self.updates if isinstance(u, kind)]

    def answers(self) -> list[str]:
        return [u.content.text for u in self.of(AgentMessageChunk)]

    def step(self, title: str) -> ToolCallStart:
        return next(u for u in self.of(ToolCallStart) if u.kind == "execute" and u.title == title)

    def ends_of(self, tool_call_id: str) -> list[ToolCallProgress]:
        return [u for u in self.of(ToolCallProgress) if u.tool_call_id == tool_call_id and u.status]

    def text(self, update: ToolCallStart | ToolCallProgress) -> str:
        return "".join(c.content.text for c in update.content or ())


@contextlib.asynccontextmanager
async def agent(
    chat: Chat, tmp_path: Path, env: dict[str, str], *args: str
) -> AsyncIterator[tuple[Any, Path]]:
    """The agent in a subprocess, initialized; its stderr goes to a file, returned too. A wait
    that times out in the body aborts the agent, whose every thread's stack (``faulthandler``)
    is then the failure's message."""
    err = tmp_path / "agent.stderr"
    with err.open("w") as stderr:
        async with spawn_agent_process(
            chat,
            sys.executable,
            "-X",
            "faulthandler",
            "-m",
            "rlm_kernel.acp",
            *args,
            env={"RLM_LOG_DIR": str(tmp_path / "runs"), **env},
            transport_kwargs={"stderr": stderr},
        ) as (conn, process):
            init = await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
            )
            assert init.agent_info.title == "RLM"
            assert init.agent_capabilities.prompt_capabilities.embedded_context
            try:
                yield conn, err
            except TimeoutError:
                process.send_signal(signal.SIGABRT)
                await process.wait()
                pytest.fail(f"the agent did not answer in time; its threads:\n{err.read_text()[-12_000:]}")


def keyed(server: ScriptedServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": KEY}


def test_a_session_answers_over_the_files_it_is_sent_and_goes_on(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    scripted_server.responder = Script(
        root=[
            f"I count the words (my key is {KEY}).\n"
            + repl("words = context.split()", f"print(len(words), {KEY!r})"),
            repl("answer['content'] = f'{len(words)} words'", "answer['ready'] = True"),
            # The follow-up: two files make a dict; `words` is still in the REPL.
            repl("print(sorted(context), context['two.txt'], words[0])"),
            repl(
                "answer['content'] = ', '.join(sorted(context)) + ' / ' + words[0]", "answer['ready'] = True"
            ),
        ]
    )
    linked = tmp_path / "two.txt"
    linked.write_text("y")
    chat = Chat()

    async def scenario() -> None:
        async with agent(chat, tmp_path, keyed(scripted_server)) as (conn, err):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            assert session.modes.current_mode_id == "confirm-risky"
            first = await conn.prompt(
                session_id=session.session_id,
                prompt=[
                    text_block("How many words?"),
                    resource_block(embedded_text_resource("file:///home/me/notes.txt", "alpha beta gamma")),
                ],
            )
            assert first.stop_reason == "end_turn"
            assert first.usage is not None and first.usage.output_tokens > 0
            assert await chat.answer(1) == "3 words"
            step = chat.step("Step 1")
            assert "words = context.split()" in chat.text(step)
            [done] = chat.ends_of(step.tool_call_id)
            assert done.status == "completed" and "3 " in chat.text(done)
            thoughts = "".join(u.content.text for u in chat.of(AgentThoughtChunk))
            assert "I count the words" in thoughts

            second = await conn.prompt(
                session_id=session.session_id,
                prompt=[
                    text_block("Which files, and which word came first?"),
                    resource_block(embedded_text_resource("file:///a/one.txt", "x")),
                    resource_link_block("two.txt", linked.as_uri()),  # read from disk
                ],
            )
            assert second.stop_reason == "end_turn"
            assert await chat.answer(2) == "one.txt, two.txt / alpha"
        # A key never reaches the client: not from the root's reply, nor from a step's output.
        sent = json.dumps([u.model_dump(mode="json") for u in chat.updates])
        assert KEY not in sent and REDACTED in sent, [u for u in chat.updates if KEY in repr(u)]
        assert KEY not in err.read_text()

    asyncio.run(scenario())
    roots = [r for r in scripted_server.requests if r.is_root]
    assert "Which files" in roots[2].last_user
    assert "['one.txt', 'two.txt'] y alpha" in roots[3].last_user


def test_risky_steps_wait_for_the_clients_permission(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    allowed, denied = tmp_path / "allowed.txt", tmp_path / "denied.txt"
    scripted_server.responder = Script(
        root=[
            repl("import pathlib", f"pathlib.Path({str(allowed)!r}).write_text('ran')"),
            repl("import pathlib", f"pathlib.Path({str(denied)!r}).write_text('ran')"),
            repl("result = 'one written, one refused'", "print(result)"),
            repl("answer['content'] = result", "answer['ready'] = True"),
        ]
    )
    chat = Chat(picks=("allow", "reject"))

    async def scenario() -> None:
        async with agent(chat, tmp_path, keyed(scripted_server)) as (conn, _err):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            response = await conn.prompt(
                session_id=session.session_id,
                prompt=[
                    text_block("Write the files."),
                    resource_block(embedded_text_resource("file:///x", "x")),
                ],
            )
            assert response.stop_reason == "end_turn"
            assert await chat.answer(1) == "one written, one refused"

    asyncio.run(scenario())
    assert allowed.read_text() == "ran"
    assert not denied.exists()  # denied code does not run
    steps = [chat.step("Step 1"), chat.step("Step 2")]
    assert [call.tool_call_id for call, _ in chat.asked] == [s.tool_call_id for s in steps]
    assert all("imports pathlib" in (call.title or "") for call, _ in chat.asked)
    kinds = {option.kind for option in chat.asked[0][1]}
    assert {"allow_once", "reject_once"} <= kinds
    assert chat.ends_of(steps[0].tool_call_id)[-1].status == "completed"
    assert chat.ends_of(steps[1].tool_call_id)[-1].status == "failed"
    roots = [r for r in scripted_server.requests if r.is_root]
    assert "did not allow this step to run" in roots[2].text  # the root is told


def test_cancel_ends_a_long_prompt_at_once_and_the_session_goes_on(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    scripted_server.responder = Script(
        root=[
            repl("import time", "time.sleep(120)"),  # a step that runs long
            Reply(hang=True),  # a root that never answers
            repl("answer['content'] = 'still here'", "answer['ready'] = True"),
        ]
    )
    chat = Chat()

    async def scenario() -> None:
        async with agent(chat, tmp_path, keyed(scripted_server)) as (conn, _err):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            sid = session.session_id

            def ask(text: str) -> asyncio.Task[Any]:
                return asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block(text)]))

            sleeping = ask("Take your time.")
            await chat.wait_for(lambda: any("time.sleep" in chat.text(s) for s in chat.of(ToolCallStart)))
            started = time.monotonic()
            await conn.cancel(session_id=sid)
            assert (await asyncio.wait_for(sleeping, 60)).stop_reason == "cancelled"
            assert time.monotonic() - started < 5

            hanging = ask("And now?")
            assert await asyncio.to_thread(wait_until, lambda: len(scripted_server.requests) == 2)
            started = time.monotonic()
            await conn.cancel(session_id=sid)
            assert (await asyncio.wait_for(hanging, 60)).stop_reason == "cancelled"
            assert time.monotonic() - started < 5

            asked = conn.prompt(session_id=sid, prompt=[text_block("Are you there?")])
            last = await asyncio.wait_for(asked, 60)
            assert last.stop_reason == "end_turn"
            assert [await chat.answer(n) for n in (1, 2)] == ["Stopped.", "Stopped."]
            answer, *notes = (await chat.answer(3)).split("\n\n")
            assert answer == "still here"
            assert notes == [
                "Warning (unseen): The answer was set before the root saw any output of its code."
            ]

    asyncio.run(scenario())
    ends = [e for path in (tmp_path / "runs").rglob("*.jsonl") for e in load(path) if e.kind == "run_ended"]
    assert sorted(e.stop for e in ends) == ["answer", "user", "user"]  # each recorded as stopped


def test_with_no_key_and_no_backend_the_bundled_model_is_said_in_one_line(tmp_path: Path) -> None:
    chat = Chat()

    async def scenario() -> str:
        async with agent(chat, tmp_path, {}) as (conn, err):
            await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            return err.read_text()

    said = asyncio.run(scenario())
    assert said.splitlines() == [
        "No API key found (OPENAI_API_KEY or ANTHROPIC_API_KEY): using the bundled model, "
        "qwen2.5-coder-0.5b, on this machine."
    ]


NOTES_SERVER = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_notes_server.py")


def test_the_clients_mcp_servers_are_the_sessions_tools(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """An editor passes the MCP servers its user set up: a stdio one is started with its environment and
    its tools are called by the root's code, prefixed by the server's name; an SSE one is said not used."""
    scripted_server.responder = Script(
        root=[
            repl("print(notes_list_notes())", "print(notes_read_note('launch'))"),
            repl("answer['content'] = notes_read_note('launch')", "answer['ready'] = True"),
        ]
    )
    chat = Chat()
    stdio = McpServerStdio(
        name="notes",
        command=sys.executable,
        args=[NOTES_SERVER],
        env=[EnvVariable(name="NOTES_TOKEN", value="notes-token-acp-0123456789")],
    )
    sse = SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[])

    async def scenario() -> None:
        async with agent(chat, tmp_path, keyed(scripted_server)) as (conn, _err):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[stdio, sse])
            response = await conn.prompt(
                session_id=session.session_id, prompt=[text_block("When is the launch?")]
            )
            assert response.stop_reason == "end_turn"
            assert await chat.answer(1) == "The launch is on 12 May."

    asyncio.run(scenario())
    thoughts = "".join(u.content.text for u in chat.of(AgentThoughtChunk))
    assert "MCP server not used: old (sse: only stdio and http MCP servers are reached)." in thoughts
    roots = [r for r in scripted_server.requests if r.is_root]
    assert "['budget', 'launch']" in roots[1].last_user  # the first step's output, as the root read it
    assert "notes_read_note" in roots[0].text  # the tools are offered in the system prompt


def test_the_agent_ends_its_kernels_on_sigterm(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    """Editors stop their agents with SIGTERM: the agent asks its runtime to close on it (a handler of
    its own, seen in /proc), and goes at once, with SIGTERM's status."""
    chat = Chat()

    async def scenario() -> int:
        async with spawn_agent_process(
            chat,
            sys.executable,
            "-m",
            "rlm_kernel.acp",
            env={"RLM_LOG_DIR": str(tmp_path / "runs"), **keyed(scripted_server)},
        ) as (conn, process):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            status = Path(f"/proc/{process.pid}/status").read_text()
            caught = int(
                next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16
            )
            assert caught >> (15 - 1) & 1, "no SIGTERM handler"
            process.terminate()
            return await asyncio.wait_for(process.wait(), 10)

    assert asyncio.run(scenario()) == -15
