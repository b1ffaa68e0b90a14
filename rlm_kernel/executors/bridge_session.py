"""The bridge's conversation with one kernel as a state machine that does no I/O.

:class:`BridgeSession` is fed what happens (a message of the kernel, a command of the host, a
call's value, a timer, the kernel's end) and returns what to do, as a list of actions the driver
(:class:`~rlm_kernel.executors.session.KernelSession`) carries out in order. It touches no socket,
thread, loop or clock, so every rule of :mod:`.bridge` about *when* a message may come is tested
as a table (tests/unit/test_bridge_session_table.py).

Theory of operation. The one cell the host runs in the kernel (the serve cell) asks for commands
with ``input()``; each call of the kernel's code is an ``input_request`` too. So the kernel's waits
nest: a command of the host, inside it a call the code made, inside that (a child run's step)
another command. The machine keeps that stack; the kernel waits (``waiting``) between its request
and the host's reply, and at most one reply answers each request::

    input                       what it does                                     actions
    submit(command)             queue it; start the serve cell if none runs       Unpark, Serve, ...
    serving(msg_id)             the serve cell the driver started (after Serve)   -
    expect_cell(msg_id)         a cell of the host's own, whose reply it awaits   -
    receive(msg)  stdin         input_request of the serve cell:                  Send(...)
                                  not the bridge's (the code's own input())      Send(EOF)
                                  Ready, only as the serve cell starts            -
                                  Result, only of the innermost command           Finish(id, result)
                                  a call, only under the running command's tag    Answer(frame, call)
                  shell         execute_reply of a host cell                      CellDone
                                  of the serve cell: what it ran failed           Finish(id, Lost)
                  iopub         status dead                                       Finish(id, Lost)...
                                  stream of the serve cell (outside a capture)    - (kept, take_printed)
    answered(frame, value)      a call's value, once the host has it              Send(value)
    park()                      the idle timer fired: the serve cell ends         Send(Quit)
    end(why) / close()          the kernel is gone / shut down                    Finish(id, Lost)...

Whenever the kernel waits, the innermost call with a value gets it; else the next command goes
(inside a call's wait: a child's step); else, with nothing to do, ``Park`` arms a timer. Every
change of the stack ends in ``Account``: whether the kernel waits on the host (time that is not a
step's own) may have changed.

A message out of place, malformed or too large is a :class:`~.bridge.ProtocolError`: the kernel is
believed no more. Every command in flight or queued finishes as :class:`Lost` (``broken``) and
``Shut`` tells the driver to end the kernel; later messages are ignored.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

from . import bridge
from .bridge import MARK, ProtocolError

__all__ = [
    "Lost",
    "Phase",
    "BridgeSession",
    "Action",
    "Send",
    "Serve",
    "Answer",
    "Finish",
    "CellDone",
    "Park",
    "Unpark",
    "Account",
    "Shut",
    "EOF",
]

EOF = "\x04"  # the reply to an input() of the code's own: end of file


@dataclass(frozen=True)
class Lost:
    """What a command gets when its kernel is gone: died, was shut down, or broke the protocol."""

    error: str
    broken: bool = False


# -- what the driver does -------------------------------------------------------------------------
@dataclass(frozen=True)
class Send:
    """Reply to the kernel's waiting ``input_request`` with ``text``."""

    text: str


@dataclass(frozen=True)
class Serve:
    """Start the serve cell, and give its message id to :meth:`BridgeSession.serving`."""


@dataclass(frozen=True)
class Answer:
    """Answer the code's ``call`` (off the loop: it may take long), then feed
    :meth:`BridgeSession.answered` with ``frame`` and its value."""

    frame: int
    call: Any


@dataclass(frozen=True)
class Finish:
    """Command ``id`` is done: its result, a :class:`~.bridge.Failed`, or :class:`Lost`."""

    id: int
    result: Any


@dataclass(frozen=True)
class CellDone:
    """A cell of the host's own (:meth:`BridgeSession.expect_cell`) has its ``execute_reply``."""

    msg_id: str
    msg: dict[str, Any]


@dataclass(frozen=True)
class Park:
    """Arm the timer after which an idle serve cell ends (:meth:`BridgeSession.park`)."""


@dataclass(frozen=True)
class Unpark:
    """Cancel that timer: there is work."""


@dataclass(frozen=True)
class Account:
    """The stack changed: count the time the kernel waits on the host anew."""


@dataclass(frozen=True)
class Shut:
    """The kernel broke the protocol: end it."""


Action = Send | Serve | Answer | Finish | CellDone | Park | Unpark | Account | Shut


class Phase(Enum):
    """Where the conversation stands, as a table test names it."""

    PARKED = "parked"  # no serve cell runs
    STARTING = "starting"  # a serve cell was started; its Ready has not come
    IDLE = "idle"  # the serve cell waits for a command, and none is in flight
    RUNNING = "running"  # the kernel carries out a command
    CALLING = "calling"  # the kernel waits for the value of a call of its code
    ENDED = "ended"  # gone, broken or shut down


@dataclass
class _Frame:
    """A wait inside the kernel: a command it carries out, or a call it made of the host."""

    id: int
    command: Any = None  # the command sent (a bridge command); None for a call of the kernel's
    reply: bridge.Value | None = None  # a call's value, once the host has it


class BridgeSession:
    """The stack of waits inside one kernel, the commands queued for it, and the output printed
    outside a step's capture; each input returns the actions it takes."""

    def __init__(self, output_cap: int = 1_000_000) -> None:
        self.output_cap = output_cap  # characters of stray output kept for one step
        self.dead: str | None = None
        self.broken = False  # whether it died of breaking the protocol
        self.closing = False
        self._ids = itertools.count(1)
        self._stack: list[_Frame] = []
        self._pending: collections.deque[tuple[int, Any]] = collections.deque()
        self._waiting = False  # the kernel asked and has no reply yet
        self._cells: set[str] = set()
        self._serve_id: str | None = None
        self._serving = False
        self._expect_ready = False
        self._park_armed = False
        self._printed: list[tuple[str, str]] = []  # (stream, text) sent outside a step's capture
        self._printed_chars = 0
        self._dropped = 0  # characters of such output dropped: outside a step, or past output_cap
        self._out: list[Action] = []

    # -- where it stands ---------------------------------------------------------------------------
    @property
    def phase(self) -> Phase:
        if self.dead or self.closing:
            return Phase.ENDED
        if self._stack:
            return Phase.CALLING if self._stack[-1].command is None else Phase.RUNNING
        if not self._serving:
            return Phase.PARKED
        return Phase.STARTING if self._expect_ready else Phase.IDLE

    def waiting_on_host(self) -> bool:
        """Whether the kernel waits for the host (a call's value): time that is not the step's own."""
        return bool(self._stack) and self._stack[-1].command is None

    # -- inputs ---------------------------------------------------------------------------------
    def submit(self, command: Any) -> tuple[int, list[Action]]:
        """A command of the host: its id, and what to do (a :class:`Finish` of it, when the
        kernel is gone)."""
        self._out = []
        id_ = next(self._ids)
        if self.dead:
            return id_, [Finish(id_, Lost(self.dead, self.broken))]
        self._pending.append((id_, command))
        if self._park_armed:
            self._park_armed = False
            self._out.append(Unpark())
        if not self._serving:
            self._serve()
        self._pump()
        return id_, self._out

    def serving(self, msg_id: str) -> None:
        """The serve cell the driver started on :class:`Serve` has this message id."""
        self._serve_id = msg_id

    def expect_cell(self, msg_id: str) -> None:
        """A cell of the host's own (the setup cell), whose ``execute_reply`` ends in
        :class:`CellDone`."""
        self._cells.add(msg_id)

    def receive(self, msg: dict[str, Any]) -> list[Action]:
        """A message of the kernel, checked; one that breaks the protocol ends the kernel."""
        self._out = []
        if self.dead:
            return self._out
        try:
            self._dispatch(msg)
        except ProtocolError as exc:
            self._violation(str(exc))
        except Exception as exc:  # noqa: BLE001 - the kernel is not trusted: any message it sends that the checks cannot handle ends it
            self._violation(f"a message that could not be handled ({type(exc).__name__}: {exc})")
        return self._out

    def answered(self, frame: int, value: bridge.Value) -> list[Action]:
        """The host has the value of the call that ``frame`` waits for."""
        self._out = []
        for waiting in self._stack:
            if waiting.id == frame:
                waiting.reply = value
        self._pump()
        return self._out

    def park(self) -> list[Action]:
        """The idle timer fired: a serve cell with nothing to do ends until there is more."""
        self._out = []
        self._park_armed = False
        if self._waiting and not self._stack and not self._pending:
            self._send(bridge.Quit())
        return self._out

    def end(self, why: str, broken: bool = False) -> list[Action]:
        """The kernel is gone: every command in flight or queued is lost, with ``why``."""
        self._out = []
        self._end(why, broken)
        return self._out

    def close(self) -> list[Action]:
        """The host shuts the kernel down: an idle serve cell is told to quit first."""
        self._out = []
        self.closing = True
        if self._serving and self._waiting and not self._stack and not self.dead:
            self._send(bridge.Quit())
        self._fail(self.dead or "the kernel was shut down", broken=self.broken)
        return self._out

    def take_printed(self) -> tuple[str, str, int]:
        """What was printed outside the capture of the step that just ran (stdout, stderr), and how
        many characters were dropped since the last step."""
        out = {name: "".join(t for n, t in self._printed if n == name) for name in ("stdout", "stderr")}
        dropped = self._dropped
        self._printed, self._printed_chars, self._dropped = [], 0, 0
        return out["stdout"], out["stderr"], dropped

    # -- the kernel's messages ----------------------------------------------------------------------
    def _dispatch(self, msg: dict[str, Any]) -> None:
        if "error" in msg and "header" not in msg:
            raise ProtocolError(msg["error"])
        channel, kind = msg["channel"], msg["header"]["msg_type"]
        parent = (msg.get("parent_header") or {}).get("msg_id")
        content = msg.get("content") or {}
        if channel == "stdin":
            if kind != "input_request" or parent != self._serve_id:
                raise ProtocolError(f"a {kind} on stdin that no cell of the host asked for")
            self._on_request(content.get("prompt"))
        elif channel == "shell" and kind == "execute_reply":
            self._on_executed(parent, msg)
        elif channel == "iopub":
            self._on_iopub(kind, parent, content)

    def _on_executed(self, parent: Any, msg: dict[str, Any]) -> None:
        if parent in self._cells:
            self._cells.discard(parent)
            self._out.append(CellDone(parent, msg))
        elif parent == self._serve_id:
            # The serve cell ended: parked with no work left, or under a command (an interrupt
            # that came between steps), which failed with what it was waiting on.
            self._serving = self._waiting = self._expect_ready = False
            if self._stack:
                self._fail("the kernel was interrupted", queued=False)
            if self._pending and not self.closing:
                self._serve()

    def _on_iopub(self, kind: Any, parent: Any, content: dict[str, Any]) -> None:
        if kind == "status" and content.get("execution_state") == "dead":
            self._end("the kernel died")  # whatever it was doing (a gateway's websocket closed, say)
        elif kind == "stream" and parent == self._serve_id:
            self._print(str(content.get("name")), str(content.get("text", "")))

    def _print(self, stream: str, text: str) -> None:
        """Output outside a step's capture (a thread, a subprocess): kept for the step running, up to
        ``output_cap``; else counted and dropped."""
        if stream not in ("stdout", "stderr"):
            return
        stepping = any(isinstance(f.command, bridge.Exec) for f in self._stack)
        room = self.output_cap - self._printed_chars if stepping else 0
        kept = text[: max(room, 0)]
        if kept:
            self._printed.append((stream, kept))
            self._printed_chars += len(kept)
        self._dropped += len(text) - len(kept)

    def _on_request(self, prompt: Any) -> None:
        if self._waiting:
            raise ProtocolError("a second request before the first was answered")
        if not isinstance(prompt, str) or not prompt.startswith(MARK):  # the code's own input()
            self._waiting = True
            self._send_raw(EOF)
            return
        request = bridge.parse_request(prompt[len(MARK) :])
        if isinstance(request, bridge.Ready):
            if not self._expect_ready or self._stack:
                raise ProtocolError("a ready in the middle of a command")
            self._expect_ready = False
        elif isinstance(request, bridge.Result):
            self._on_result(request)
        else:
            self._on_call(request)
        self._waiting = True
        self._pump()

    def _on_result(self, result: bridge.Result) -> None:
        # Calls the command made and abandoned (interrupted) go with it.
        inner = next((f for f in reversed(self._stack) if f.command is not None), None)
        if inner is None or inner.id != result.id:
            raise ProtocolError(f"a result for command {result.id}, which is not the one running")
        bridge.check_result(inner.command, result.result)
        while self._stack.pop() is not inner:
            pass
        self._out.append(Finish(inner.id, result.result))

    def _on_call(self, call: Any) -> None:
        top = self._stack[-1] if self._stack else None
        if top is None or top.command is None:
            raise ProtocolError("a call while no command of the host runs")
        if call.tag != top.command.tag:
            raise ProtocolError(f"a call under the name {call.tag!r} during a command of {top.command.tag!r}")
        frame = _Frame(next(self._ids))
        self._stack.append(frame)
        self._out += [Account(), Answer(frame.id, call)]

    # -- what the host sends ------------------------------------------------------------------------
    def _serve(self) -> None:
        """Start the serve cell; it runs while there is work, so an idle kernel waits in its own
        event loop (no CPU), not in ``input()``'s polling."""
        self._serving = self._expect_ready = True
        self._out.append(Serve())

    def _pump(self) -> None:
        """If the kernel waits: answer its innermost request once the host has the value, else
        give it the next command (a child's step runs inside the parent's wait)."""
        try:
            self._next_message()
        finally:
            self._out.append(Account())

    def _next_message(self) -> None:
        if not self._waiting or self.dead:
            return
        top = self._stack[-1] if self._stack else None
        if top is not None and top.command is None and top.reply is not None:
            self._stack.pop()
            self._send(top.reply)
        elif (top is None or top.command is None) and self._pending:
            id_, command = self._pending.popleft()
            self._stack.append(_Frame(id_, command))
            self._send_raw(bridge.command_json(command, id_))
        elif top is None and not self._park_armed:  # no work: soon the serve cell ends until more
            self._park_armed = True
            self._out.append(Park())

    def _send(self, message: Any) -> None:
        self._send_raw(json.dumps(dataclasses.asdict(message)))

    def _send_raw(self, text: str) -> None:
        self._waiting = False
        self._out.append(Send(text))

    # -- endings ------------------------------------------------------------------------------------
    def _fail(self, why: str, queued: bool = True, broken: bool = False) -> None:
        """End every command in flight (and, with ``queued``, those not yet sent) with ``why``."""
        lost = Lost(why, broken)
        self._out += [Finish(frame.id, lost) for frame in self._stack if frame.command is not None]
        self._stack.clear()
        self._out.append(Account())
        while queued and self._pending:
            self._out.append(Finish(self._pending.popleft()[0], lost))

    def _end(self, why: str, broken: bool = False) -> None:
        self.dead, self.broken = why, broken
        self._fail(why, broken=broken)

    def _violation(self, why: str) -> None:
        """The kernel broke the protocol: no more of it is believed; it is ended, and every command
        in flight fails."""
        self._end(why, broken=True)
        self._out.append(Shut())
