"""The ACP agent: each ACP session is an RLM session (:meth:`RLM.session`), one REPL for its prompts.

    initialize                   takes text, embedded files and texts, and links to files
    session/new                  an RLM with the agent's settings; its REPL starts at the first prompt
    session/prompt               blocks → question and context (blocks.py); the run's events stream
                                 back as session/update (updates.py); the answer ends the turn
    session/request_permission   asked before a step the session's mode holds for a human
    session/set_mode             the permission ladder: auto, confirm-risky, step
    session/cancel               stops the run; the prompt ends with stop reason ``cancelled``
    session/load                 a session saved earlier (saved.py), in this process or another:
                                 its chat replayed as updates, its conversation and context back

A session is saved after each prompt (saved.py): what the chat showed, its mode, its context, and
its runs, whose trajectories hold the conversation. A loaded session goes on from that conversation
over the same context, in a REPL started again: the variables its steps made are gone, and the
root is told so with the next question.

A run is driven by the async driver on a thread of its own, with its own event loop, so the
connection's loop never waits on a run: a cancel or a permission answer is heard at once. Events
come from the run's threads; they are queued onto the connection's loop and sent, in order, by one
pump per prompt.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, update_agent_message_text, update_agent_thought_text
from acp.helpers import update_user_message
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    TextContentBlock,
    Usage,
)
from pydantic import TypeAdapter, ValidationError

from .. import models
from ..config import RLMConfig
from ..errors import RLMError
from ..mcp_tools import MCPServer
from ..risk import LADDER
from ..rlm import RLM, RLMResult
from ..secrets import Redactor, secrets_of
from ..tools import tools_of
from ..trajectory import default_log_dir
from ..version import __version__
from .blocks import Prompt, ReadFile, read_prompt
from .mcp import servers_of
from .saved import (
    Record,
    RecordError,
    SavedTurn,
    SessionStore,
    context_of,
    followup_of,
    saved_context,
    shown_blocks,
)
from .turn import AgentSession, Turn

__all__ = ["RLMAgent", "MODES"]

log = logging.getLogger("rlm_kernel.acp")

MODES = {
    "auto": ("Run every step", "Each step the root writes runs without asking."),
    "confirm-risky": (
        "Ask before risky steps",
        "Ask before a step that reaches the system or the network, writes files or runs code from "
        "a string (the scan of --mode confirm-risky).",
    ),
    "step": ("Ask before each step", "Every step waits for you."),
}
# Said to the root with the first question after a load, and to the human once.
RELOADED = (
    "This session was reloaded in a new process: the REPL was started again with `context`, but "
    "every other variable that earlier steps made is gone; make again what you need."
)
RELOADED_NOTE = (
    "Session loaded: the conversation goes on over the same context, in a new REPL (the variables "
    "of earlier steps are gone)."
)
NO_CONVERSATION = (
    "Session loaded: the record of its conversation (the runs' trajectories) was not found, so the "
    "model starts a new conversation over the same context."
)


class RLMAgent:
    """The ``acp.Agent`` that ``python -m rlm_kernel.acp`` serves; ``mode`` is a new session's rung
    of the permission ladder; ``notice`` is said once in each session (the bundled model's line).
    Sessions are saved in ``sessions_dir``, by default ``acp-sessions`` in the folder of the
    trajectories (``log_dir``); with ``log_dir=False`` and no ``sessions_dir``, none is saved and
    ``session/load`` is not offered."""

    def __init__(
        self,
        config: RLMConfig,
        *,
        mode: str = "confirm-risky",
        notice: str | None = None,
        sessions_dir: str | Path | None = None,
    ) -> None:
        if mode not in LADDER:
            raise RLMError(f"Unknown mode {mode!r}: choose one of {', '.join(LADDER)}.")
        self.config = config
        self.mode = mode
        self.notice = notice
        if sessions_dir is None and config.log_dir is not False:
            sessions_dir = Path(config.log_dir or default_log_dir()) / "acp-sessions"
        self.store = SessionStore(sessions_dir) if sessions_dir is not None else None
        self.redactor = Redactor(
            secrets_of(config.backend_kwargs, config.sub_backend_kwargs, config.executor_kwargs)
        )
        self._client: Client | None = None
        self._capabilities = ClientCapabilities()
        self._sessions: dict[str, AgentSession] = {}

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("RLMAgent: no client connected; serve it with acp.run_agent")
        return self._client

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self._capabilities = client_capabilities or ClientCapabilities()
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=self.store is not None,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
            ),
            agent_info=Implementation(name="rlm-kernel", title="RLM", version=__version__),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        rlm, servers, notes = await self._opened(mcp_servers, cwd)
        session_id = f"rlm-{uuid.uuid4().hex[:12]}"
        record = Record(session_id, cwd, self.mode)
        session = self._sessions[session_id] = AgentSession(record, rlm, servers)
        session.notes = notes
        await self._save(session)  # loadable from now on, though nothing was asked yet
        return NewSessionResponse(session_id=session_id, modes=self._modes(self.mode))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        """A saved session back: its chat replayed to the client (each prompt, each answer) before
        this answers; the next prompt goes on from its conversation over its context."""
        live = self._sessions.get(session_id)
        if live is not None:  # loaded again in the process that has it: the chat again, nothing else
            await self._replay(live.record)
            return LoadSessionResponse(modes=self._modes(live.mode))
        record = await self._saved(session_id)
        rlm, servers, notes = await self._opened(mcp_servers, cwd)
        session = AgentSession(record, rlm, servers, loaded=True)
        runs = [(t.run_id, t.trajectory) for t in record.turns if t.run_id and t.trajectory]
        session.follows = await asyncio.to_thread(followup_of, runs)  # type: ignore[arg-type]
        session.notes = notes
        if record.turns:
            session.notes.insert(0, RELOADED_NOTE if session.follows or not runs else NO_CONVERSATION)
        record.cwd = cwd
        self._sessions[session_id] = session
        await self._replay(record)
        return LoadSessionResponse(modes=self._modes(session.mode))

    async def _saved(self, session_id: str) -> Record:
        """The saved session, or the JSON-RPC error the client is answered with."""
        if self.store is None:
            raise RequestError.method_not_found("session/load (no sessions are saved: log_dir is off)")
        try:
            record = await asyncio.to_thread(self.store.load, session_id)
        except RecordError as exc:
            raise RequestError.invalid_params({"sessionId": session_id, "reason": str(exc)}) from None
        if record is None:
            raise RequestError(
                -32002,  # ACP's "resource not found"
                "Resource not found",
                {"sessionId": session_id, "reason": f"no saved session {session_id} in {self.store.folder}"},
            )
        return record

    async def _replay(self, record: Record) -> None:
        """The session's chat, sent again as the spec asks: each prompt's blocks as user message
        chunks, each answer as an agent message chunk."""
        for turn in record.turns:
            for block in turn.user:
                try:
                    content = _BLOCK.validate_python(block)
                except ValidationError:
                    continue
                said = update_user_message(content)
                await self.client.session_update(session_id=record.session_id, update=said)
            if turn.answer:
                await self.client.session_update(
                    session_id=record.session_id, update=update_agent_message_text(turn.answer)
                )

    async def _save(self, session: AgentSession) -> None:
        """Save the session's record; a record that cannot be written costs the load, not the chat."""
        if self.store is None:
            return
        data = dataclasses.asdict(session.record)  # taken here, where the record changes
        try:
            await asyncio.to_thread(self.store.write, session.id, data)
        except OSError as exc:
            log.warning("rlm_kernel.acp: the session could not be saved: %s", exc)

    async def _opened(
        self, mcp_servers: list[Any] | None, cwd: str
    ) -> tuple[RLM, list[MCPServer], list[str]]:
        """A session's RLM with the client's MCP servers, the servers, and the notes on those left out."""
        servers, left_out = servers_of(mcp_servers or (), cwd)
        try:
            # Listing the servers' tools starts them: in a thread, so the connection is still served.
            rlm = await asyncio.to_thread(self._rlm, servers)
        except RLMError as exc:
            for server in servers.values():
                server.close()
            raise RequestError.internal_error({"message": self.redactor.text(str(exc))}) from None
        return rlm, list(servers.values()), [f"MCP server not used: {line}." for line in left_out]

    def _rlm(self, servers: dict[str, MCPServer]) -> RLM:
        """The session's RLM: the agent's settings, and the client's MCP servers' tools beside its own."""
        if not servers:
            return RLM.from_config(self.config)
        tools = {**self.config.tools, **tools_of(servers)}
        return RLM.from_config(dataclasses.replace(self.config, tools=tools))

    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> SetSessionModeResponse:
        if mode_id not in LADDER:
            raise RequestError.invalid_params({"modeId": mode_id, "modes": list(LADDER)})
        session = self._session(session_id)
        session.mode = mode_id
        await self._save(session)
        return SetSessionModeResponse()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        async with session.lock:
            read = await read_prompt(prompt, self._reader(session_id))
            turn = session.turn = Turn(session, self.client, self.redactor.text)
            result: RLMResult | None = None
            try:
                if not session.told:
                    session.told = True
                    for line in [self.notice or "", *session.notes]:
                        if line:
                            turn.send(update_agent_thought_text(line + "\n"))
                if read.skipped:
                    turn.send(update_agent_thought_text(f"Not read: {', '.join(read.skipped)}.\n"))
                if read.question is None and read.context is None:
                    nothing = "Nothing to answer: send a question, a file or a text."
                    turn.send(update_agent_message_text(nothing))
                else:
                    result = await asyncio.to_thread(self._answer, session, read, turn)
            except RLMError as exc:  # the run could not start: a model to fetch, a setting
                turn.send(update_agent_message_text(self.redactor.text(f"No answer: {exc}")))
            finally:
                session.turn = None
                await turn.close()
                self._keep(session, prompt, turn, result)
                await self._save(session)
        return PromptResponse(stop_reason=turn.stop_reason(), usage=_usage(result))  # type: ignore[arg-type]

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None and session.turn is not None:
            await session.turn.cancel()

    def close(self) -> None:
        """Shut every session's REPL."""
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.close()

    # -- helpers -------------------------------------------------------------------------------
    def _keep(self, session: AgentSession, prompt: list[Any], turn: Turn, result: RLMResult | None) -> None:
        """The prompt, as the chat showed it, in the session's record; and the context it left."""
        record = session.record
        log_path = result.log_path if result is not None else None
        record.turns.append(
            SavedTurn(
                user=shown_blocks(prompt, self.redactor),
                answer="".join(turn.said),
                run_id=result.run_id if result is not None else None,
                trajectory=str(Path(log_path).resolve()) if log_path is not None else None,
            )
        )
        if session.repl is not None:
            record.context = saved_context(session.repl.context, self.redactor)

    def _session(self, session_id: str) -> AgentSession:
        try:
            return self._sessions[session_id]
        except KeyError:
            missing = {"sessionId": session_id, "reason": "no such session"}
            raise RequestError.invalid_params(missing) from None

    def _reader(self, session_id: str) -> ReadFile:
        """Reads a linked file through the client (its buffer, unsaved edits too) where it offers to."""
        fs = self._capabilities.fs
        if fs is None or not fs.read_text_file:
            return None

        async def read(path: str) -> str:
            return (await self.client.read_text_file(session_id=session_id, path=path)).content

        return read

    @staticmethod
    def _modes(current: str) -> SessionModeState:
        return SessionModeState(
            current_mode_id=current,
            available_modes=[SessionMode(id=m, name=MODES[m][0], description=MODES[m][1]) for m in LADDER],
        )

    @staticmethod
    def _answer(session: AgentSession, read: Prompt, turn: Turn) -> RLMResult | None:
        """In a worker thread: the run, on an event loop of its own; None when cancelled first."""
        for model in models.bundled_models(session.rlm.config):  # a first fetch, its bar on stderr
            models.fetch(model)
        question, more = read.question, {}
        if session.repl is None:
            saved = context_of(session.record.context) if session.loaded else None
            if read.context is not None:
                context = read.context
            elif saved is not None:  # a loaded session: its context as it was
                context = saved
            else:  # nothing attached: the text is the context
                question, context = None, read.question
            session.repl = session.rlm.session(context)
            if session.follows is not None:
                session.repl.resume(session.follows)
                question = f"{RELOADED}\n\n{question}" if question else RELOADED
            session.loaded, session.follows = False, None
        elif read.context is not None:
            more = {"context": read.context}
        repl = session.repl

        async def run() -> RLMResult | None:
            task = asyncio.ensure_future(
                repl.aask(question, subscribers=(turn.event,), approve=turn.approve, **more)
            )
            if not turn.started(task):
                task.cancel()
            try:
                return await task
            except asyncio.CancelledError:  # cancelled before its driver began: no run to keep
                return None

        return asyncio.run(run())


# A saved prompt's block, read back (text or a link: what shown_blocks keeps).
_BLOCK: TypeAdapter[Any] = TypeAdapter(TextContentBlock | ResourceContentBlock)


def _usage(result: RLMResult | None) -> Usage | None:
    if result is None:
        return None
    total = result.usage.total
    return Usage(
        input_tokens=total.input_tokens,
        output_tokens=total.output_tokens,
        total_tokens=total.input_tokens + total.output_tokens,
        cached_read_tokens=total.cached_tokens,
    )
