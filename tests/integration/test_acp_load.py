"""``session/load`` of ``python -m rlm_kernel.acp``, as an editor reopens a chat: the SDK's own
client over a real process's stdio, the scripted LM server behind it. A session made and asked in
one agent process is loaded in another: its chat comes back as updates, and its next prompt goes
on from its conversation over its context."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Script, ScriptedServer

from rlm_kernel import RLM
from rlm_kernel.events import RunStarted
from rlm_kernel.trajectory import load

acp = pytest.importorskip("acp", reason="the acp extra: pip install 'rlm-kernel[acp]'")

from acp import RequestError, embedded_text_resource, resource_block, text_block  # noqa: E402
from acp.schema import AgentMessageChunk, AgentThoughtChunk, UserMessageChunk  # noqa: E402
from test_acp import KEY, Chat, agent, keyed, repl  # noqa: E402

from rlm_kernel.acp.agent import RELOADED  # noqa: E402
from rlm_kernel.acp.saved import followup_of  # noqa: E402


def chat_of(chat: Chat) -> list[tuple[str, str]]:
    """The replayed chat: (who, what) for each user and agent message chunk, in order."""
    said = []
    for update in chat.updates:
        if isinstance(update, UserMessageChunk):
            content = update.content
            said.append(("user", getattr(content, "text", None) or f"link {content.name} {content.uri}"))
        elif isinstance(update, AgentMessageChunk):
            said.append(("agent", update.content.text))
    return said


def test_a_session_loaded_in_a_new_agent_process_replays_its_chat_and_goes_on(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    scripted_server.responder = Script(
        root=[
            # The first process: the first prompt's run.
            repl("words = context.split()", f"print(len(words), {KEY!r})"),
            repl("answer['content'] = f'{len(words)} words'", "answer['ready'] = True"),
            # The second process, after the load: the context is back, `words` is not.
            repl("print(context.split()[-1], 'words' in globals())"),
            repl("answer['content'] = context.split()[-1]", "answer['ready'] = True"),
        ]
    )
    first, second = Chat(), Chat()

    async def scenario() -> str:
        async with agent(first, tmp_path, keyed(scripted_server)) as (conn, _err):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            sid = session.session_id
            await conn.set_session_mode(mode_id="auto", session_id=sid)
            response = await conn.prompt(
                session_id=sid,
                prompt=[
                    text_block("How many words?"),
                    resource_block(embedded_text_resource("file:///home/me/notes.txt", "alpha beta gamma")),
                ],
            )
            assert response.stop_reason == "end_turn"
            assert await first.answer(1) == "3 words"
        # The first agent process has ended; a new one loads the session by its id.
        async with agent(second, tmp_path, keyed(scripted_server)) as (conn, _err):
            init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            assert init.agent_capabilities.load_session
            loaded = await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            assert loaded.modes.current_mode_id == "auto"  # as the session was left
            await second.wait_for(lambda: len(chat_of(second)) == 3)
            assert chat_of(second) == [
                ("user", "How many words?"),
                ("user", "link notes.txt file:///home/me/notes.txt"),
                ("agent", "3 words"),
            ]
            response = await conn.prompt(session_id=sid, prompt=[text_block("And the last word?")])
            assert response.stop_reason == "end_turn"
            assert await second.answer(2) == "gamma"
        return sid

    sid = asyncio.run(scenario())
    roots = [r for r in scripted_server.requests if r.is_root]
    assert len(roots) == 4
    after_load = roots[2]
    # The conversation goes on: the root reads the first prompt's question, code and output again.
    assert "How many words?" in after_load.text and "words = context.split()" in after_load.text
    assert RELOADED in after_load.last_user and "And the last word?" in after_load.last_user
    assert len(after_load.messages) == len(roots[1].messages) + 2  # that conversation, one request on
    assert "gamma False" in roots[3].last_user  # the context is back; the first REPL's variables are not
    thoughts = "".join(u.content.text for u in second.of(AgentThoughtChunk))
    assert "Session loaded" in thoughts

    # The second run goes on from the first in the trajectories: the same session, `follows` it.
    starts = [e for p in (tmp_path / "runs").glob("*.jsonl") for e in load(p) if isinstance(e, RunStarted)]
    starts.sort(key=lambda e: e.follows is not None)
    assert starts[1].follows == starts[0].run_id and starts[1].session == starts[0].session

    # The saved session: no key, the agent's folder beside the trajectories.
    saved = tmp_path / "runs" / "acp-sessions" / f"{sid}.json"
    record = json.loads(saved.read_text())
    assert [t["answer"] for t in record["turns"]] == ["3 words", "gamma"]
    assert record["context"] == "alpha beta gamma"
    assert KEY not in saved.read_text()
    assert saved.stat().st_mode & 0o077 == 0


def test_an_unknown_or_foreign_session_id_is_a_clear_error(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    chat = Chat()
    outside = tmp_path / "secret.json"
    outside.write_text("{}")

    async def scenario() -> list[RequestError]:
        errors = []
        async with agent(chat, tmp_path, keyed(scripted_server)) as (conn, _err):
            for sid in ("rlm-000000000000", "../secret", str(outside.with_suffix(""))):
                with pytest.raises(RequestError) as caught:
                    await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                errors.append(caught.value)
            # The agent is still there: a new session answers.
            scripted_server.responder = Script(
                root=[repl("answer['content'] = 'ok'", "answer['ready'] = True")]
            )
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
            assert response.stop_reason == "end_turn"
        return errors

    errors = asyncio.run(scenario())
    assert [e.code for e in errors] == [-32002] * 3
    assert errors[0].data["sessionId"] == "rlm-000000000000"
    assert "no saved session" in errors[0].data["reason"]


def test_a_saved_record_that_cannot_be_read_is_invalid_params(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    folder = tmp_path / "runs" / "acp-sessions"
    folder.mkdir(parents=True)
    (folder / "rlm-0123456789ab.json").write_text("{not json")
    (folder / "rlm-ba9876543210.json").write_text(json.dumps({"version": 99, "session_id": "x"}))
    chat = Chat()

    async def scenario() -> list[RequestError]:
        errors = []
        async with agent(chat, tmp_path, keyed(scripted_server)) as (conn, _err):
            for sid in ("rlm-0123456789ab", "rlm-ba9876543210"):
                with pytest.raises(RequestError) as caught:
                    await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                errors.append(caught.value)
        return errors

    bad, newer = asyncio.run(scenario())
    assert bad.code == newer.code == -32602
    assert "not a saved session" in bad.data["reason"]
    assert "newer rlm-kernel" in newer.data["reason"]


def plain(messages: Any) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages]


WINDOW = 3000  # tokens: three turns that print 1,600 characters fill it, and the first run compacts


def test_the_conversation_rebuilt_from_the_trajectories_is_the_one_the_session_goes_on_from(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """What a load goes on from (rebuilt from the runs' trajectories) is what the session itself
    would have gone on from: the same messages, fixed start, first request and compaction notes."""
    notes = "NOTES: x holds 41."
    scripted_server.responder = Script(
        root=[
            repl("x = 41\nprint('row ' * 400)"),
            repl("y = [1, 2]\nprint('row ' * 400)"),
            repl("print('row ' * 400)"),
            repl("answer['content'] = str(x + 1)\nanswer['ready'] = True"),
            repl("answer['content'] = str(x + 2)\nanswer['ready'] = True"),
        ],
        sub=lambda r: notes if "Write your notes" in r.last_user else "ok",
    )
    backend: dict[str, Any] = {
        "model_name": "gpt-4o-mini",
        "base_url": scripted_server.openai_base_url,
        "api_key": KEY,
        "context_window": WINDOW,
    }
    with RLM("openai", backend, log_dir=tmp_path).session("a small context") as session:
        runs = []
        for question, expected in (("What is x + 1?", "42"), ("And x + 2?", "43")):
            result = session.ask(question)
            assert result.response == expected, result.error
            runs.append((result.run_id, str(result.log_path)))
            rebuilt = followup_of(runs)
            assert rebuilt is not None
            kept = session._follows
            assert plain(rebuilt.messages) == plain(kept.messages)
            assert (rebuilt.session, rebuilt.run_id, rebuilt.fixed, rebuilt.opening) == (
                kept.session,
                kept.run_id,
                kept.fixed,
                kept.opening,
            )
            assert (rebuilt.summary, rebuilt.names) == (kept.summary, kept.names)
    assert kept.summary == notes  # the first run compacted; the second kept its notes
    assert followup_of([*runs[:-1], (runs[-1][0], str(tmp_path / "gone.jsonl"))]) is None
