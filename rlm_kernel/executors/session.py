"""The conversation with one kernel: its serve cell, the stack of waits inside it, the commands
queued for it, and the time it spends waiting on the host.

The one cell the host runs in the kernel (``_rlm.serve()``) asks for commands with ``input()``;
each request of the kernel's code (a sub-call, a host function) is an ``input_request`` too, which
the host answers once it has the value. So the kernel's waits nest: a command the host sent, inside
it a call the kernel made, inside that (a child run's step) another command. :class:`KernelSession`
keeps that stack, checks every message against it (:mod:`.bridge` declares the messages; one out of
place ends the kernel) and says when a step's time counts. It runs on its runtime's loop; other
threads ask it through :meth:`KernelSession.request`.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import dataclasses
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..runtime import Runtime, StopSignal, default_runtime, wait_future
from . import bridge
from .bridge import MARK, ProtocolError
from .errors import KernelError, KernelStuck, NotSandboxed
from .pool import START_S

__all__ = ["Kernel", "Exits", "KernelSession", "Lost", "PARK_AFTER_S"]

# A kernel waiting in input() wakes 100 times a second (ipykernel polls its stdin socket: about 1 %
# of a core), so after this long without a command (a human reading a step, say) the serve cell
# ends, and the next command starts it again (a few ms).
PARK_AFTER_S = 30.0
ALIVE_CHECK_S = 1.0  # how often a kernel that is not an :class:`Exits` is asked whether it lives
CPU_LOOK_S = 0.25  # how often a step waiting on the host is looked at, when its CPU counts


@dataclass(frozen=True)
class Lost:
    """What a command gets when its kernel is gone: died, was shut down, or broke the protocol."""

    error: str
    broken: bool = False


# -- what a kernel must offer: local (jupyter_client) or remote (gateway.py) -----------------------
class Kernel(Protocol):
    """A running kernel: its messages arrive on ``on_message``, each with its ``channel`` (or an
    ``error`` where a message could not be read)."""

    shares_files: bool  # whether a file the host writes can be read by the kernel
    transfer_dirs: tuple[str, ...]  # where such files go: in memory first
    uid: int | None  # whom such files must belong to (a sandbox's own uid), if not this process's user

    async def start(self, on_message: Callable[[dict[str, Any]], None]) -> None: ...
    def execute(self, code: str) -> str: ...
    def input_reply(self, value: str) -> None: ...
    async def interrupt(self) -> None: ...
    async def is_alive(self) -> bool: ...
    async def shutdown(self) -> None: ...


@runtime_checkable
class Exits(Protocol):
    """A kernel that can tell when its process has ended, so nothing needs to ask it again and again."""

    async def exited(self) -> None:
        """Return when the kernel's process is gone."""
        ...


# -- one kernel in use ------------------------------------------------------------------------
@dataclass
class _Frame:
    """A wait inside the kernel: a command it is carrying out, or a request it made of the host."""

    id: int
    command: Any = None  # a command sent to the kernel (a bridge command), else a call it made
    future: asyncio.Future[Any] | None = None  # a command's result
    reply: bridge.Value | None = None  # a call's value, once the host has it


@dataclass
class _Command:
    command: Any
    future: asyncio.Future[Any]
    id: int = field(default_factory=lambda: next(_command_ids))


_command_ids = itertools.count(1)
Handler = Callable[[Any], bridge.Value]


class KernelSession:
    """The conversation with one kernel: its serve cell, the stack of waits inside it, and the
    commands queued for it. All of it runs on the kernel loop."""

    def __init__(
        self,
        kernel: Kernel,
        *,
        runtime: Runtime | None = None,
        memory_mb: int | None = None,
        cpu_s: float | None = None,
        isolated: bool = True,
    ) -> None:
        self.kernel = kernel
        self.runtime = runtime or default_runtime()
        self.when_closed: list[Callable[[], None]] = []  # its runtime's Kernels forgets it
        self.memory_mb = memory_mb
        self.cpu_s = cpu_s
        self.isolated = isolated
        self.output_cap = 1_000_000  # characters of stray output kept for one step
        self.handlers: dict[str, Handler] = {}  # a namespace's tag -> what answers its calls
        self.dead: str | None = None
        self.broken = False  # whether it died of breaking the protocol
        self._printed: list[tuple[str, str]] = []  # (stream, text) sent outside a step's capture
        self._printed_chars = 0
        self._dropped = 0  # characters of such output dropped: outside a step, or past output_cap
        self._threads = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="rlm-bridge")
        self._stack: list[_Frame] = []
        self._pending: collections.deque[_Command] = collections.deque()
        self._waiting = False  # the kernel asked and has no reply yet
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._serve_id: str | None = None
        self._serving = False
        self._expect_ready = False
        self._park: asyncio.TimerHandle | None = None
        self._watch: asyncio.Task[None] | None = None
        self._ending: asyncio.Future[None] | None = None
        self._closing = False
        self._host_s = 0.0  # seconds the kernel waited on the host's answers, ended waits
        self._host_since: float | None = None  # when its present wait on the host began
        self._cpu_since: float | None = None  # the CPU its processes had used then, where known

    # -- starting --------------------------------------------------------------------------
    async def start(self) -> None:
        await self.kernel.start(self._on_message)
        memory = self.memory_mb * (1 << 20) if self.memory_mb else None
        setup = (
            "from rlm_kernel.executors import inkernel as _rlm\n"
            f"_rlm.limit({memory!r}, {self.cpu_s!r}, isolated={self.isolated!r})\n"
        )
        reply = await self._run_cell(setup)
        if reply["content"].get("status") != "ok":
            c = reply["content"]
            await self.close()
            prefix = "the kernel is not sandboxed: "
            if c.get("ename") == "RuntimeError" and str(c.get("evalue")).startswith(prefix):
                raise NotSandboxed(str(c["evalue"])[len(prefix) :])
            raise KernelError(
                f"the kernel could not load rlm_kernel ({c.get('ename')}: {c.get('evalue')}); "
                "install rlm-kernel in the kernel's environment"
            )
        self._watch = asyncio.ensure_future(self._watch_alive())

    async def _run_cell(self, code: str) -> dict[str, Any]:
        msg_id = self.kernel.execute(code)
        future = self._replies[msg_id] = asyncio.get_running_loop().create_future()
        return await asyncio.wait_for(future, START_S)

    def _serve(self) -> None:
        """Start the serve cell; it runs while there is work, so an idle kernel waits in its own
        event loop (no CPU), not in ``input()``'s polling."""
        self._serving = self._expect_ready = True
        self._serve_id = self.kernel.execute("_rlm.serve()")

    async def _watch_alive(self) -> None:
        if isinstance(self.kernel, Exits):
            await self.kernel.exited()
        else:
            # A kernel that cannot say when its process ends is asked: no message tells the host
            # that a process killed outright (out of memory, out of CPU time) is gone.
            while await self.kernel.is_alive():
                await asyncio.sleep(ALIVE_CHECK_S)
        if not self._closing:
            why = getattr(self.kernel, "why_ended", lambda: None)()
            self._end(why or "the kernel died (out of memory, out of CPU time, or killed)")

    # -- what the kernel sends ---------------------------------------------------------------
    def _on_message(self, msg: dict[str, Any]) -> None:
        """Every message of the kernel, checked; one that breaks the protocol ends the kernel."""
        if self.dead:
            return
        try:
            self._dispatch(msg)
        except ProtocolError as exc:
            self._violation(str(exc))
        except Exception as exc:  # a message of a shape no kernel sends
            self._violation(f"a message that could not be handled ({type(exc).__name__}: {exc})")

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
            if parent in self._replies:
                self._replies.pop(parent).set_result(msg)
            elif parent == self._serve_id:
                # The serve cell ended: parked with no work left, or under a command (an interrupt
                # that came between steps), which failed with what it was waiting on.
                self._serving = self._waiting = self._expect_ready = False
                if self._stack:
                    self._fail("the kernel was interrupted", queued=False)
                if self._pending and not self._closing:
                    self._serve()
        elif channel == "iopub" and kind == "status" and content.get("execution_state") == "dead":
            self._end("the kernel died")  # whatever it was doing (a gateway's websocket closed, say)
        elif channel == "iopub" and kind == "stream" and parent == self._serve_id:
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

    def take_printed(self) -> tuple[str, str, int]:
        """What was printed outside the capture of the step that just ran (stdout, stderr), and how
        many characters were dropped since the last step."""
        out = {name: "".join(t for n, t in self._printed if n == name) for name in ("stdout", "stderr")}
        dropped = self._dropped
        self._printed, self._printed_chars, self._dropped = [], 0, 0
        return out["stdout"], out["stderr"], dropped

    def _on_request(self, prompt: Any) -> None:
        if self._waiting:
            raise ProtocolError("a second request before the first was answered")
        if not isinstance(prompt, str) or not prompt.startswith(MARK):  # the code's own input()
            self._waiting = True
            self._send_raw("\x04")  # end of file
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
        inner = next((f for f in reversed(self._stack) if f.future is not None), None)
        if inner is None or inner.id != result.id:
            raise ProtocolError(f"a result for command {result.id}, which is not the one running")
        bridge.check_result(inner.command, result.result)
        while self._stack.pop() is not inner:
            pass
        if inner.future is not None and not inner.future.done():
            inner.future.set_result(result.result)

    def _on_call(self, call: Any) -> None:
        top = self._stack[-1] if self._stack else None
        if top is None or top.future is None:
            raise ProtocolError("a call while no command of the host runs")
        if call.tag != top.command.tag:
            raise ProtocolError(f"a call under the name {call.tag!r} during a command of {top.command.tag!r}")
        frame = _Frame(next(_command_ids))
        self._stack.append(frame)
        self._account()
        work = asyncio.get_running_loop().run_in_executor(self._threads, self._answer, call)
        work.add_done_callback(lambda w, f=frame: self._answered(f, w))

    def _answer(self, call: Any) -> bridge.Value:
        """In a bridge thread: a call of the kernel's code, answered by its namespace's handler."""
        handler = self.handlers.get(call.tag)
        if handler is None:
            return bridge.Value(error="this namespace's run has ended")
        try:
            return handler(call)
        except Exception as exc:  # the code sees a RuntimeError or SubcallTooLarge; the host stays up
            return bridge.failure(exc)

    def _answered(self, frame: _Frame, work: asyncio.Future[bridge.Value]) -> None:
        if work.cancelled():
            return
        frame.reply = work.result()
        self._pump()

    def _pump(self) -> None:
        """If the kernel waits: answer its innermost request once the host has the value, else
        give it the next command (a child's step runs inside the parent's wait)."""
        try:
            self._next_message()
        finally:
            self._account()

    def _next_message(self) -> None:
        if not self._waiting or self.dead:
            return
        top = self._stack[-1] if self._stack else None
        if top is not None and top.future is None and top.reply is not None:
            self._stack.pop()
            self._send(top.reply)
        elif (top is None or top.future is None) and self._pending:
            pending = self._pending.popleft()
            self._stack.append(_Frame(pending.id, pending.command, pending.future))
            self._send_raw(bridge.command_json(pending.command, pending.id))
        elif top is None and self._park is None:  # no work: soon the serve cell ends until more
            self._park = asyncio.get_running_loop().call_later(PARK_AFTER_S, self._park_now)

    def _park_now(self) -> None:
        self._park = None
        if self._waiting and not self._stack and not self._pending:
            self._send(bridge.Quit())

    def _send(self, message: Any) -> None:
        self._send_raw(json.dumps(dataclasses.asdict(message)))

    def _send_raw(self, text: str) -> None:
        self._waiting = False
        self.kernel.input_reply(text)

    def waiting_on_host(self) -> bool:
        """Whether the kernel waits for the host (a call's value): time that is not the step's own."""
        stack = self._stack
        return bool(stack) and stack[-1].future is None

    def _fail(self, why: str, queued: bool = True, broken: bool = False) -> None:
        """End every command in flight (and, with ``queued``, those not yet sent) with ``why``."""
        lost = Lost(why, broken)
        for frame in self._stack:
            if frame.future is not None and not frame.future.done():
                frame.future.set_result(lost)
        self._stack.clear()
        self._account()
        while queued and self._pending:
            command = self._pending.popleft()
            if not command.future.done():
                command.future.set_result(lost)

    def _end(self, why: str, broken: bool = False) -> None:
        self.dead, self.broken = why, broken
        self._fail(why, broken=broken)

    def _violation(self, why: str) -> None:
        """The kernel broke the protocol: no more of it is believed; it is ended, and every command
        in flight fails."""
        self._end(why, broken=True)
        self._ending = asyncio.ensure_future(self.close())

    # -- what the host asks -------------------------------------------------------------------
    async def command(self, command: Any) -> Any:
        if self.dead:
            return Lost(self.dead, self.broken)
        pending = _Command(command, asyncio.get_running_loop().create_future())
        self._pending.append(pending)
        if self._park is not None:
            self._park.cancel()
            self._park = None
        if not self._serving:
            self._serve()
        self._pump()
        return await pending.future

    def request(
        self,
        command: Any,
        stop_when: Callable[[], bool] | None = None,
        timeout: float | None = None,
        grace_s: float = 3.0,
    ) -> Any:
        """Carry out a command and return its result, from any thread. A command still running
        when ``stop_when`` (a :class:`~rlm_kernel.runtime.StopSignal`) fires, or after ``timeout``
        seconds of its own work (time spent waiting for the host's answers does not count), is
        interrupted; one that does not end within ``grace_s`` of that raises :class:`KernelStuck`."""
        future = self.runtime.submit(self._supervised(command, StopSignal.of(stop_when), timeout, grace_s))
        wait_future(future)
        return future.result()

    async def _supervised(
        self, command: Any, stop: StopSignal | None, timeout: float | None, grace_s: float
    ) -> Any:
        """The command, watched on the kernel loop: it wakes when the command ends, when ``stop``
        is set, or when the step could have used up ``timeout`` (then it counts again, as time the
        kernel spent waiting on the host is not the step's)."""
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(self.command(command))
        stopped = loop.create_future()
        unlisten = stop.on_set(lambda: loop.call_soon_threadsafe(_settle, stopped)) if stop else None
        started, host = time.monotonic(), self.host_time()
        try:
            while not task.done():
                waits = [] if stop is None or stop.deadline is None else [stop.deadline - time.monotonic()]
                if timeout is not None:
                    worked = time.monotonic() - started - (self.host_time() - host)
                    waits.append(timeout - worked)
                if waits and min(waits) <= 0:
                    break
                timeout_s = min(waits) if waits else None
                if timeout_s is not None and self._cpu_since is not None:  # its CPU counts: look again
                    timeout_s = min(timeout_s, CPU_LOOK_S)
                await asyncio.wait({task, stopped}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
                if stopped.done():
                    break
            if task.done():
                return task.result()
            interrupting = asyncio.ensure_future(self.kernel.interrupt())
            interrupting.add_done_callback(_quiet)  # a failed interrupt shows as a stuck step
            await asyncio.wait({task}, timeout=grace_s)
            if task.done():
                return task.result()
            task.cancel()
            raise KernelStuck()
        finally:
            if unlisten is not None:
                unlisten()

    def host_time(self) -> float:
        """Seconds the kernel has spent waiting on the host's answers, since it started, less the
        CPU its processes used meanwhile (where the kernel can say): a step's other threads and
        processes compute on its own time, whatever one of them waits on."""
        return self._host_s + self._waited(time.monotonic())

    def _waited(self, now: float) -> float:
        """Of the present wait on the host, the seconds that are not the step's."""
        if self._host_since is None:
            return 0.0
        wall = now - self._host_since
        if self._cpu_since is None:
            return wall
        cpu = _cpu_of(self.kernel)
        return max(wall - (cpu - self._cpu_since), 0.0) if cpu is not None else wall

    def _account(self) -> None:
        """After the stack changed: the time the kernel waits on the host starts or stops."""
        now = time.monotonic()
        if self._host_since is not None:
            self._host_s += self._waited(now)
        waiting = self.waiting_on_host()
        self._host_since = now if waiting else None
        self._cpu_since = _cpu_of(self.kernel) if waiting else None

    async def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        for forget in self.when_closed:
            forget()
        for timer in (self._watch, self._park):
            if timer is not None:
                timer.cancel()
        if self._serving and self._waiting and not self._stack and not self.dead:
            self._send(bridge.Quit())
        self._fail(self.dead or "the kernel was shut down", broken=self.broken)
        await self.kernel.shutdown()
        self._threads.shutdown(wait=False, cancel_futures=True)

    def join_threads(self, timeout: float) -> None:
        """After :meth:`close`, from a thread other than the loop's: wait up to ``timeout`` for the
        bridge's threads to end (a call of the kernel's still running holds one)."""
        deadline = time.monotonic() + timeout
        for thread in list(self._threads._threads):  # the executor's shutdown() has no timeout
            thread.join(max(deadline - time.monotonic(), 0.0))


def _cpu_of(kernel: Kernel) -> float | None:
    """CPU seconds the kernel's processes have used, where its kernel can say."""
    cpu_time = getattr(kernel, "cpu_time", None)
    return None if cpu_time is None else cpu_time()


def _quiet(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
