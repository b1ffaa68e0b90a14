"""The ``kernel`` executor: the root's code runs in a kernel process of its own, in a sandbox.

The host keeps the LM clients; the kernel keeps the REPL. They talk over the kernel's own stdin
channel (the bridge, declared in :mod:`.bridge`): the one cell the host runs asks for commands with
``input()``, and ``llm_query`` inside the kernel is a request the host answers from its pool. No
port, broker or key is ever in the kernel. A local kernel (:mod:`.localkernel`) runs in a
bubblewrap sandbox (:mod:`.sandbox`) unless told ``isolation="none"``; a gateway's kernel
(:mod:`.gateway`) is checked to be in one.

The host trusts nothing the kernel sends: every request is checked (:mod:`.bridge`) and must come
when the protocol allows it; a kernel that breaks the protocol is ended, and its run gets a new
one. What the kernel prints outside a step's capture is kept only while a step runs and only up to
``output_cap``; the rest is counted and dropped.

Every kernel is driven from its runtime's asyncio loop (:mod:`rlm_kernel.runtime`: the run's, else
the process's default one); the executors, which the drivers call from their own threads, wait on
futures of that loop, and a step's time limit and its run's stop are watched there, as deadlines
and a signal, never by looking again. The runtime owns its kernels and warm pools (:mod:`.pool`):
closing it shuts every one down and removes its folders, and the default runtime does so when the
process exits (on SIGTERM too, where the process asks: :meth:`~rlm_kernel.runtime.Runtime.close_on_sigterm`);
folders of a host killed outright are removed by the next one.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import concurrent.futures
import contextlib
import ctypes
import dataclasses
import inspect
import io
import itertools
import json
import os
import pickle
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

from ..errors import ConfigError
from ..helpers import Helpers
from ..protocol import FinalDirective
from ..repl import truncate
from ..runtime import Runtime, StopSignal, default_runtime, wait_future
from . import bridge, sandbox
from .base import ExecResult, RemoteContext, StepOutcome
from .bridge import MARK, ProtocolError
from .errors import KernelError, KernelStuck, NotSandboxed
from .inkernel import str_layout
from .pool import START_S, KernelPool, kernels_of

__all__ = [
    "KernelExecutor",
    "KernelSession",
    "KernelPool",
    "KernelError",
    "KernelStuck",
    "Lost",
    "on_kernel_loop",
    "STEP_TIMEOUT_S",
]

# A kernel waiting in input() wakes 100 times a second (ipykernel polls its stdin socket: about 1 %
# of a core), so after this long without a command (a human reading a step, say) the serve cell
# ends, and the next command starts it again (a few ms).
PARK_AFTER_S = 30.0
ALIVE_CHECK_S = 1.0  # how often a kernel that is not an :class:`Exits` is asked whether it lives
STEP_TIMEOUT_S = 300.0  # the default step_timeout: seconds of a step's own work in the kernel
CPU_LOOK_S = 0.25  # how often a step waiting on the host is looked at, when its CPU counts
PART_BYTES = 4 << 20  # a context crosses a remote kernel's channel in parts of this size
WRITE_CHARS = 8 << 20  # and is written for a local kernel this many characters at a time
ISOLATIONS = ("sandbox", "none")


@dataclass(frozen=True)
class Lost:
    """What a command gets when its kernel is gone: died, was shut down, or broke the protocol."""

    error: str
    broken: bool = False


# -- the default runtime's, for scripts and benchmarks that start sessions by hand -----------------
def on_kernel_loop(coro: Any) -> concurrent.futures.Future[Any]:
    return default_runtime().submit(coro)


def close_all() -> None:
    """Shut down every kernel of the default runtime, warm or in use; later runs start new ones."""
    kernels_of(default_runtime()).close()


close_pools = close_all


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


# -- the executor ------------------------------------------------------------------------------
AGAIN = "every variable made so far is gone; context and the REPL's functions are back.\n"
RESTARTED = "The step did not stop when interrupted, so the kernel was restarted: " + AGAIN
DIED = "The kernel died during the step ({why}); it was restarted: " + AGAIN
BROKE = "The kernel broke the bridge's protocol ({why}), so it was ended and a new kernel started: " + AGAIN


class KernelExecutor:
    """The executor port over a kernel: local (:mod:`.localkernel`) or remote (:mod:`.gateway`).

    ``isolation`` is ``"sandbox"`` (the default: a local kernel runs in one, a remote one must be in
    one) or ``"none"``. ``memory_mb`` holds all the kernel's processes together, ``max_procs``
    their number and ``file_mb`` any one file; ``cpu_s`` limits the kernel's CPU time;
    ``step_timeout`` ends a step that works longer (interrupt, then restart); ``max_subcalls``
    bounds the sub-calls of a run; ``output_cap`` is the most characters of a step's output that
    leave the kernel. ``runtime`` owns the kernel (its loop drives it, its close ends it): by default
    the runtime of the first run bound, else the process's default one."""

    kind = "kernel"

    def __init__(
        self,
        *,
        kernel_name: str | None = None,
        isolation: str = "sandbox",
        memory_mb: int | None = 4096,
        max_procs: int = 256,
        file_mb: int = 1024,
        cpu_s: float | None = None,
        step_timeout: float | None = None,
        interrupt_grace_s: float = 3.0,
        max_subcalls: int | None = 10_000,
        output_cap: int = 1_000_000,
        warm: int = 1,
        tag: str = "",
        runtime: Runtime | None = None,
        _parent: KernelExecutor | None = None,
    ) -> None:
        if isolation not in ISOLATIONS:
            raise ConfigError(f"Unknown isolation {isolation!r}: choose one of {', '.join(ISOLATIONS)}.")
        self.kernel_name = kernel_name or self.default_kernel(isolation)
        self.isolation = isolation
        self.memory_mb = memory_mb
        self.limits = sandbox.Limits(
            memory_mb or sandbox.Limits.memory_mb, max_procs, file_mb, cpu_s or sandbox.Limits.cpu_s
        )
        self.cpu_s = cpu_s
        self.step_timeout = STEP_TIMEOUT_S if step_timeout is None else step_timeout
        self.interrupt_grace_s = interrupt_grace_s
        self.max_subcalls = max_subcalls
        self.output_cap = output_cap
        self.warm = warm
        self.tag = tag or uuid.uuid4().hex[:12]
        self._root = _parent._root if _parent is not None else self
        self._runtime = runtime  # the root's is the one its kernel runs on
        self._restarting = threading.Lock()  # the root's: one restart of its kernel at a time
        self._session: KernelSession | None = _parent._root._session if _parent is not None else None
        self._children: list[KernelExecutor] = []
        self._subcalls: Any = None
        self._context: Any = None
        self._loaded: tuple[Any, str] | None = None  # the context sent, and its name in the kernel
        self._parts: dict[str, list[bytes]] = {}
        self._count = 0
        self.stop_when: Callable[[], bool] | None = None
        self.load_s = 0.0  # seconds the context took to load into the kernel
        if _parent is not None:  # a child run's namespace, in its parent's kernel, on its terms
            for name in self._SHARED:
                setattr(self, name, getattr(_parent, name))

    _SHARED = ("kernel_name", "isolation", "memory_mb", "limits", "cpu_s", "step_timeout")
    _SHARED += ("interrupt_grace_s", "max_subcalls", "output_cap", "warm")

    @staticmethod
    def default_kernel(isolation: str) -> str:
        return "python3"

    # -- kernels --------------------------------------------------------------------------
    def new_kernel(self) -> Kernel:
        from .localkernel import LocalKernel

        return LocalKernel(self.kernel_name, isolation=self.isolation, limits=self.limits)

    def _pool_key(self) -> tuple[Any, ...]:
        return (
            type(self).__name__,
            self.kernel_name,
            self.isolation,
            self.memory_mb,
            self.limits,
            self.cpu_s,
        )

    @property
    def runtime(self) -> Runtime:
        """The runtime that owns this run's kernel."""
        root = self._root
        if root._runtime is None:
            root._runtime = default_runtime()
        return root._runtime

    def _pool(self) -> KernelPool:
        runtime = self.runtime

        def factory() -> KernelSession:
            isolated = self.isolation == "sandbox"
            return KernelSession(
                self.new_kernel(),
                runtime=runtime,
                memory_mb=self.memory_mb,
                cpu_s=self.cpu_s,
                isolated=isolated,
            )

        return kernels_of(runtime).pool(self._pool_key(), factory, self.warm)

    @property
    def session(self) -> KernelSession:
        root = self._root
        if root._session is None:
            try:
                root._session = cast(KernelSession, root._pool().acquire())
            except NotSandboxed as exc:
                raise KernelError(self.not_sandboxed(exc.why)) from None
            root._session.output_cap = root.output_cap
        return root._session

    def not_sandboxed(self, why: str) -> str:
        return f"the {self.kernel_name!r} kernel did not start in its sandbox ({why})"

    # -- the port -------------------------------------------------------------------------
    def bind(
        self,
        context: Any,
        subcalls: Any | None,
        helpers: Mapping[str, Callable[..., Any]] | None,
        stop_when: Callable[[], bool] | None = None,
    ) -> None:
        self._subcalls = subcalls
        self.stop_when = stop_when
        stop = StopSignal.of(stop_when)
        if self._root._runtime is None and stop is not None:  # a run's kernel is its runtime's
            self._root._runtime = stop.runtime
        self._context = context
        # The small profile's helpers are rebuilt in the kernel; other functions (tools) run here,
        # called through the bridge, so what they hold (a key, a connection) never enters it.
        helpers = dict(helpers or {})
        self._host = {
            n: f for n, f in helpers.items() if not isinstance(getattr(f, "__self__", None), Helpers)
        }
        self._helpers = sorted(set(helpers) - set(self._host))
        self._bind()

    def _bind(self) -> None:
        session = self.session
        session.handlers[self.tag] = self._handle
        context = self._context
        if isinstance(context, RemoteContext):
            where: dict[str, Any] = {"ref": context.ref}
        elif isinstance(context, str) and len(context) < 100_000:
            where = {"value": context}
        elif self._loaded is not None and self._loaded[0] is context:  # a session's next question
            where = {"ref": self._loaded[1]}
        else:
            where = {"ref": self._load(context)}
            self._loaded = (context, where["ref"])
        reply = session.request(
            bridge.Bind(
                tag=self.tag,
                context=where,
                subcalls=self._subcalls is not None,
                helpers=self._helpers,
                host=[_declared(name, fn) for name, fn in self._host.items()],
                output_cap=self.output_cap,
            )
        )
        if isinstance(reply, (bridge.Failed, Lost)):
            raise KernelError(f"the kernel could not bind the run's names: {reply.error}")

    def _load(self, context: Any) -> str:
        """Send the context to the kernel, once: a file beside it, or parts over its channel."""
        session = self.session
        ref = f"c{self.tag}"
        if isinstance(context, str):
            fmt = "str"
        elif isinstance(context, (bytes, bytearray, memoryview)):
            fmt = "bytes"
        else:
            fmt = "pickle"
        started = time.perf_counter()
        if session.kernel.shares_files:
            path = os.path.join(_transfer_dir(session.kernel, context), f"rlm-{uuid.uuid4().hex}.ctx")
            layout = str_layout(context) if fmt == "str" else None
            extra: dict[str, Any] = {}
            with os.fdopen(
                os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600), "wb", buffering=0
            ) as f:
                if session.kernel.uid is not None:  # the sandbox's own uid reads it
                    os.fchown(f.fileno(), session.kernel.uid, session.kernel.uid)
                if layout is not None:  # as CPython holds it: no copy, no encoding
                    kind, address, size = layout
                    view = memoryview((ctypes.c_char * size).from_address(address)).cast("B")
                    for i in range(0, size, WRITE_CHARS):
                        f.write(view[i : i + WRITE_CHARS])
                    fmt, extra = "str-raw", {"length": len(context), "kind": kind}
                else:
                    _write(f, context, fmt)
            try:
                reply = session.request(bridge.Load(tag=self.tag, ref=ref, format=fmt, path=path, **extra))
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        else:
            blob = _blob(context, fmt)
            self._parts[ref] = [blob[i : i + PART_BYTES] for i in range(0, len(blob), PART_BYTES)]
            del blob
            reply = session.request(
                bridge.Load(tag=self.tag, ref=ref, format=fmt, parts=len(self._parts[ref]))
            )
            self._parts.pop(ref, None)
        if isinstance(reply, (bridge.Failed, Lost)):
            raise KernelError(f"the kernel could not load the context: {reply.error}")
        self.load_s = time.perf_counter() - started
        return ref

    def execute(self, code: str, *, step: int) -> StepOutcome:
        session = self.session
        try:
            reply = session.request(
                bridge.Exec(tag=self.tag, code=code, step=step),
                stop_when=self.stop_when,
                timeout=self.step_timeout,
                grace_s=self.interrupt_grace_s,
            )
        except KernelStuck:
            self._restart(session)
            return StepOutcome(ExecResult(error=RESTARTED))
        if isinstance(reply, Lost):
            self._restart(session)
            return StepOutcome(ExecResult(error=(BROKE if reply.broken else DIED).format(why=reply.error)))
        if isinstance(reply, bridge.Failed):
            return StepOutcome(ExecResult(error=reply.error + "\n"))
        # What the step's threads and subprocesses printed reached the kernel's own streams.
        stdout, stderr, dropped = session.take_printed()
        stderr += _dropped_note(dropped)
        cap = self.output_cap  # the kernel cuts its own output; whatever it sent, so does the host
        result = ExecResult(
            truncate(reply.stdout + stdout, cap)[0],
            truncate(reply.stderr + stderr, cap)[0],
            None if reply.value is None else truncate(reply.value, cap)[0],
            None if reply.error is None else truncate(reply.error, cap)[0],
            reply.elapsed_s,
        )
        return StepOutcome(result, reply.answer_ready, reply.answer, tuple(reply.restored))

    def _restart(self, failed: KernelSession) -> None:
        """A new kernel for the run in place of ``failed``, its names bound again; children whose
        contexts lived in the old kernel cannot go on. A parent and its child whose steps both
        lost the kernel restart it once."""
        root = self._root
        with root._restarting:
            if root._session is not failed:
                return  # the other one restarted it
            root._session = None
            failed.runtime.submit(failed.close())
            for executor in (root, *root._children):
                if not isinstance(executor._context, RemoteContext):
                    executor._bind()

    def resolve(self, directive: FinalDirective) -> tuple[str | None, str | None]:
        reply = self.session.request(
            bridge.Resolve(tag=self.tag, kind=directive.kind, argument=directive.argument)
        )
        if isinstance(reply, (bridge.Failed, Lost)):
            return None, reply.error
        return reply.content, reply.problem

    def close(self) -> list[str]:
        session = self._root._session
        if session is None:
            return []
        session.handlers.pop(self.tag, None)
        if self._root is not self:
            if not session.dead:
                session.request(bridge.Close(tag=self.tag))
                if isinstance(self._context, RemoteContext):
                    session.request(bridge.Forget(tag=self.tag, refs=[self._context.ref]))
            return []
        self._session = None
        session.runtime.submit(session.close()).result(timeout=30)
        return []

    def describe(self) -> dict[str, Any]:
        """The sandbox's limits, and what holds each: without a cgroup, its first process counts
        memory and CPU across its processes, and a seccomp filter refuses what it cannot count."""
        if self.isolation == "none":
            limits = {"memory_mb": self.memory_mb, "cpu_s": self.cpu_s, "held_by": "the kernel's own rlimits"}
            return {"executor": self.kind, "isolation": "none", "limits": limits}
        return {
            "executor": self.kind,
            "isolation": "sandbox",
            "limits": {**dataclasses.asdict(self.limits), "held_by": sandbox.HELD_BY},
        }

    def child(self, tag: str) -> KernelExecutor:
        """A child run's executor: a namespace of its own in the same kernel."""
        child = type(self)._child_of(self, tag)
        self._root._children.append(child)
        return child

    @staticmethod
    def _child_of(parent: KernelExecutor, tag: str) -> KernelExecutor:
        return KernelExecutor(tag=tag, _parent=parent)

    # -- the kernel's calls, in a bridge thread --------------------------------------------
    def _handle(self, call: Any) -> bridge.Value:
        if isinstance(call, bridge.Part):
            parts = self._root._parts_of(call.ref)
            if call.index >= len(parts):
                return bridge.Value(error=f"no part {call.index} of {call.ref}")
            return bridge.Value(_b64(parts[call.index]))
        if isinstance(call, bridge.HostCall):
            fn = self._host.get(call.name)
            if fn is None:
                return bridge.Value(error=f"no function {call.name!r} on the host")
            try:
                value = fn(*call.args, **call.kwargs)
            except Exception as exc:  # the tool's own failure, raised again in the kernel's code
                return bridge.Value(error=f"{type(exc).__name__}: {exc}")
            return bridge.Value(json.loads(json.dumps(value, default=str)))
        subcalls = self._subcalls
        if subcalls is None:
            return bridge.Value(error="this run has no sub-calls")
        # images= only where the code sent some: a run's sub-calls may be any object of the protocol
        if isinstance(call, bridge.LlmQuery):
            with_images = {} if call.images is None else {"images": bridge.images_in(call.images)}
            return self._counted(1) or bridge.Value(
                subcalls.llm_query(call.prompt, call.model, **with_images)
            )
        if isinstance(call, bridge.LlmQueryBatched):
            per_prompt = call.images
            with_images = {} if per_prompt is None else {"images": [bridge.images_in(i) for i in per_prompt]}
            return self._counted(len(call.prompts)) or bridge.Value(
                subcalls.llm_query_batched(call.prompts, call.model, **with_images)
            )
        if isinstance(call, bridge.AskBatched):
            return self._counted(len(call.conversations)) or bridge.Value(
                subcalls.ask_batched(call.conversations, call.max_tokens)
            )
        contexts = None if call.contexts is None else [RemoteContext(c.ref, c.meta) for c in call.contexts]
        return self._counted(len(call.prompts)) or bridge.Value(
            subcalls.rlm_query_batched(call.prompts, contexts)
        )

    def _parts_of(self, ref: str) -> list[bytes]:
        for executor in (self, *self._children):
            if ref in executor._parts:
                return executor._parts[ref]
        raise KeyError(ref)

    def _counted(self, n: int) -> bridge.Value | None:
        root = self._root
        root._count += n
        if root.max_subcalls is not None and root._count > root.max_subcalls:
            return bridge.Value(error=f"this run's limit of {root.max_subcalls:,} sub-calls is reached")
        return None


def _cpu_of(kernel: Kernel) -> float | None:
    """CPU seconds the kernel's processes have used, where its kernel can say."""
    cpu_time = getattr(kernel, "cpu_time", None)
    return None if cpu_time is None else cpu_time()


def _dropped_note(dropped: int) -> str:
    if not dropped:
        return ""
    return f"[{dropped:,} characters the kernel printed outside a step, or past output_cap, were dropped]\n"


def _declared(name: str, fn: Callable[..., Any]) -> dict[str, str]:
    """A host function as the kernel's stub shows it: name, signature, docstring."""
    try:
        signature = f"{name}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        signature = f"{name}(...)"
    return {"name": name, "signature": signature, "doc": inspect.getdoc(fn) or ""}


def _transfer_dir(kernel: Kernel, context: Any) -> str:
    """Where a context passes to a kernel on this machine: memory when it has room, else disk."""
    need = 2 * len(context) if isinstance(context, (str, bytes, bytearray)) else 0
    for path in kernel.transfer_dirs[:-1]:
        with contextlib.suppress(OSError):
            stat = os.statvfs(path)
            if stat.f_bavail * stat.f_frsize > need + (64 << 20):
                return path
    return kernel.transfer_dirs[-1]


def _write(f: Any, context: Any, fmt: str) -> None:
    if fmt == "str":
        for i in range(0, len(context), WRITE_CHARS):
            f.write(context[i : i + WRITE_CHARS].encode("utf-8", "surrogatepass"))
    elif fmt == "bytes":
        f.write(context)
    else:
        _pickle(context, f)


def _blob(context: Any, fmt: str) -> bytes:
    if fmt == "str":
        return context.encode("utf-8", "surrogatepass")
    if fmt == "bytes":
        return bytes(context)
    buffer = io.BytesIO()
    _pickle(context, buffer)
    return buffer.getvalue()


def _pickle(context: Any, f: Any) -> None:
    try:
        pickle.dump(context, f, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise ConfigError(
            f"The context ({type(context).__name__}) cannot be sent to a kernel: {exc}. "
            "Give a str, bytes or picklable object, or use executor='local'."
        ) from None


def _quiet(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
