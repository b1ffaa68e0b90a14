"""One ACP session of the agent (its RLM, its REPL, its mode) and the prompt it answers now (a
:class:`Turn`): the pump that sends the run's events as updates, in order, from the run's threads;
the permission asked before a step the mode holds; and the cancel."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Callable

from acp.helpers import SessionUpdate, update_current_mode
from acp.interfaces import Client
from acp.schema import AgentMessageChunk, AllowedOutcome, PermissionOption, TextContentBlock

from ..engine import Followup
from ..events import Event, RunEnded, RunStarted, StepFinished, StepStarted
from ..mcp_tools import MCPServer
from ..risk import risk_of
from ..rlm import RLM, RLMResult
from ..session import Session
from .saved import Record
from .updates import Updates, coalesce

__all__ = ["AgentSession", "OPTIONS", "STEP_GRACE_S", "Turn", "not_run"]

log = logging.getLogger("rlm_kernel.acp")

ALLOW, ALLOW_ALWAYS, REJECT = "allow", "allow-always", "reject"
OPTIONS = [
    PermissionOption(option_id=ALLOW, name="Run this step", kind="allow_once"),
    PermissionOption(option_id=ALLOW_ALWAYS, name="Run every step in this session", kind="allow_always"),
    PermissionOption(option_id=REJECT, name="Do not run it", kind="reject_once"),
]
_STOPPED = ("user", "interrupt")
# How long a stopped step may take to end before the driver stops waiting for it: the watchdog ends
# a step at its next Python instruction; one blocked in C (a long time.sleep) would hold the run.
STEP_GRACE_S = 0.25


def not_run(why: str) -> str:
    """What runs instead of a step the human denied: the root sees its output, and the edit."""
    said = f"The user did not allow this step to run ({why}); its code did not run."
    return f"print({said!r})\n"


class AgentSession:
    """An ACP session: its RLM, the REPL its first prompt opens, its mode, the prompt answered now."""

    def __init__(
        self, record: Record, rlm: RLM, servers: list[MCPServer] | None = None, *, loaded: bool = False
    ) -> None:
        self.id = record.session_id
        self.record = record  # what is saved after each prompt (saved.py)
        self.rlm = rlm
        self.servers = servers or []  # the client's MCP servers, stopped with the session
        self.notes: list[str] = []  # said once, with the first prompt's answer
        self.repl: Session | None = None
        self.lock = asyncio.Lock()  # one prompt at a time
        self.turn: Turn | None = None
        self.told = False  # the bundled model's notice, once
        # A loaded session, until its first prompt opens the REPL: the saved context, and where the
        # conversation goes on from (None: its runs' trajectories were not found).
        self.loaded = loaded
        self.follows: Followup | None = None

    @property
    def mode(self) -> str:
        return self.record.mode

    @mode.setter
    def mode(self, mode: str) -> None:
        self.record.mode = mode

    def close(self) -> None:
        if self.repl is not None:
            self.repl.close()
        for server in self.servers:
            server.close()


class Turn:
    """One prompt being answered: the pump of its updates, its permission requests, its cancel."""

    def __init__(self, session: AgentSession, client: Client, redact: Callable[[str], str]) -> None:
        self.session = session
        self.client = client
        self.loop = asyncio.get_running_loop()
        self.updates = Updates(redact)
        self.queue: asyncio.Queue[Event | SessionUpdate | asyncio.Future[None] | None] = asyncio.Queue()
        self.cancelled = False
        self._lock = threading.Lock()
        self._run: tuple[asyncio.AbstractEventLoop, asyncio.Task[RLMResult]] | None = None
        self._no_step = threading.Event()  # set while no step of the top run is under way
        self._no_step.set()
        self._asking: concurrent.futures.Future[bool] | None = None
        self._broken = False
        self.said: list[str] = []  # the agent message's text, as sent: the saved session's answer
        self._pump = asyncio.create_task(self._send_all())

    # -- updates -----------------------------------------------------------------------------
    def event(self, event: Event) -> None:
        """The run's bus subscriber, called from the run's threads."""
        if event.depth == 0:
            if isinstance(event, StepStarted):
                self._no_step.clear()
            elif isinstance(event, (StepFinished, RunEnded)):
                self._no_step.set()
            elif isinstance(event, RunStarted) and self.cancelled:
                self.session.rlm.cancel()  # the cancel came while the run was being opened
        self.loop.call_soon_threadsafe(self.queue.put_nowait, event)

    def send(self, update: SessionUpdate) -> None:
        self.queue.put_nowait(update)

    async def flush(self) -> None:
        """Until every update queued so far is sent."""
        sent: asyncio.Future[None] = self.loop.create_future()
        self.queue.put_nowait(sent)
        await sent

    async def close(self) -> None:
        self.queue.put_nowait(None)
        await self._pump

    async def _send_all(self) -> None:
        while True:
            items = [await self.queue.get()]
            while not self.queue.empty():  # what came meanwhile goes out together
                items.append(self.queue.get_nowait())
            batch: list[SessionUpdate] = []
            for item in items:
                if isinstance(item, Event):
                    try:
                        batch.extend(self.updates(item))
                    except Exception:  # a bug here must cost one update, not the prompt's end
                        log.exception("rlm_kernel.acp: showing a %s event failed", item.kind)
                elif isinstance(item, asyncio.Future):
                    await self._send(batch)
                    batch = []
                    if not item.done():
                        item.set_result(None)
                elif item is None:
                    await self._send(batch)
                    return
                else:
                    batch.append(item)
            await self._send(batch)

    async def _send(self, batch: list[SessionUpdate]) -> None:
        for update in coalesce(batch):
            if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
                self.said.append(update.content.text)
            if self._broken:
                return
            try:
                await self.client.session_update(session_id=self.session.id, update=update)
            except Exception:  # the client went away: the run goes on to its end, unseen
                log.warning("rlm_kernel.acp: sending an update failed; no more are sent", exc_info=True)
                self._broken = True

    # -- the human's say ---------------------------------------------------------------------
    async def approve(self, step: int, code: str) -> str:
        """The driver's approval hook, awaited on the run's loop before each step."""
        mode = self.session.mode
        if mode == "auto":
            return code
        why = risk_of(code) if mode == "confirm-risky" else "you asked to see each step"
        if why is None:
            return code
        asking = asyncio.run_coroutine_threadsafe(self._ask(step, why), self.loop)
        self._asking = asking
        try:
            allowed = await asyncio.wrap_future(asking)
        finally:
            self._asking = None
        return code if allowed else not_run(why)

    async def _ask(self, step: int, why: str) -> bool:
        await self.flush()  # the step's tool call reaches the client before the question about it
        try:
            response = await self.client.request_permission(
                session_id=self.session.id, tool_call=self.updates.permission_call(step, why), options=OPTIONS
            )
        except Exception as exc:  # noqa: BLE001 - a client that cannot be asked: the step does not run
            log.warning("rlm_kernel.acp: asking the client failed: %s", exc)
            self.send(self.updates.denied(step))
            return False
        outcome = response.outcome
        chosen = outcome.option_id if isinstance(outcome, AllowedOutcome) else None
        if chosen == ALLOW_ALWAYS:
            self.session.mode = "auto"
            self.send(update_current_mode("auto"))
        if chosen in (ALLOW, ALLOW_ALWAYS):
            return True
        self.send(self.updates.denied(step))
        return False

    # -- stopping ------------------------------------------------------------------------------
    def started(self, task: asyncio.Task[RLMResult]) -> bool:
        """The run's task, on the run's loop; False when a cancel came first (it must not start)."""
        with self._lock:
            if self.cancelled:
                return False
            self._run = (asyncio.get_running_loop(), task)
            return True

    async def cancel(self) -> None:
        """Stop the run: its calls in flight, the permission it waits for, and the driver's wait
        on a step, which a step blocked in C (a long ``time.sleep``) would otherwise hold."""
        with self._lock:
            self.cancelled = True
            run = self._run
        await asyncio.to_thread(self.session.rlm.cancel)  # waits a moment for calls to record their end
        asking = self._asking
        if asking is not None:
            asking.cancel()  # the driver waited on the human: it ends now
            return
        # Cancelling the driver's task is for a step that outlives the stop, and only for it: a
        # second cancel while the driver winds down would fail its loop.
        if run is not None and not await asyncio.to_thread(self._no_step.wait, STEP_GRACE_S):
            loop, task = run
            with contextlib.suppress(RuntimeError):  # the run's loop closed: the run had ended
                loop.call_soon_threadsafe(task.cancel)

    def stop_reason(self) -> str:
        ended = self.updates.ended
        if self.cancelled or (ended is not None and ended.stop in _STOPPED):
            return "cancelled"
        if ended is not None and ended.stop == "max_iterations":
            return "max_turn_requests"
        return "end_turn"
