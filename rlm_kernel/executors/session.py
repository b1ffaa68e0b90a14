"""The conversation with one kernel, driven: its messages, its serve cell, the threads that answer
its calls, and the time it spends waiting on the host.

What the conversation may do is :class:`~.bridge_session.BridgeSession`'s, a state machine with no
I/O: the stack of waits inside the kernel, the commands queued for it, every message checked
against them (:mod:`.bridge` declares the messages; one out of place ends the kernel).
:class:`KernelSession` feeds it and carries out what it returns, on its runtime's loop; other
threads ask it through :meth:`KernelSession.request`, which also says when a step's time counts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ..foreign import attempt
from ..runtime import Runtime, StopSignal, default_runtime, wait_future
from . import bridge
from .bridge_session import (
    Account,
    Action,
    Answer,
    BridgeSession,
    CellDone,
    Finish,
    Lost,
    Park,
    Send,
    Serve,
    Shut,
    Unpark,
)
from .errors import KernelError, KernelStuck, NotSandboxed
from .pool import START_S

__all__ = ["Kernel", "Exits", "KernelSession", "Lost", "PARK_AFTER_S"]

# A kernel waiting in input() wakes 100 times a second (ipykernel polls its stdin socket: about 1 %
# of a core), so after this long without a command (a human reading a step, say) the serve cell
# ends, and the next command starts it again (a few ms).
PARK_AFTER_S = 30.0
ALIVE_CHECK_S = 1.0  # how often a kernel that is not an :class:`Exits` is asked whether it lives
CPU_LOOK_S = 0.25  # how often a step waiting on the host is looked at, when its CPU counts


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
Handler = Callable[[Any], bridge.Value]
SERVE = "_rlm.serve()"  # the serve cell: it asks for commands until it is told to quit


class KernelSession:
    """The conversation with one kernel, driven: the kernel's messages and the host's commands go
    to its :class:`~.bridge_session.BridgeSession`, which says what to do; this does it (replies on
    the kernel's stdin, the serve cell, a thread for each call, the idle timer) and counts the time
    the kernel waits on the host. All of it runs on the kernel loop."""

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
        self.handlers: dict[str, Handler] = {}  # a namespace's tag -> what answers its calls
        self.machine = BridgeSession()
        self._threads = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="rlm-bridge")
        self._commands: dict[int, asyncio.Future[Any]] = {}  # a command's id -> its result
        self._cells: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._park: asyncio.TimerHandle | None = None
        self._watch: asyncio.Task[None] | None = None
        self._ending: asyncio.Future[None] | None = None
        self._closing = False
        self._host_s = 0.0  # seconds the kernel waited on the host's answers, ended waits
        self._host_since: float | None = None  # when its present wait on the host began
        self._cpu_since: float | None = None  # the CPU its processes had used then, where known
        self._perform: dict[type[Any], Callable[[Any], None]] = {
            Send: lambda a: self.kernel.input_reply(a.text),
            Serve: lambda a: self.machine.serving(self.kernel.execute(SERVE)),
            Answer: self._start_answer,
            Finish: lambda a: _settle(self._commands.pop(a.id, None), a.result),
            CellDone: lambda a: _settle(self._cells.pop(a.msg_id, None), a.msg),
            Park: lambda a: self._arm_park(),
            Unpark: lambda a: self._disarm_park(),
            Account: lambda a: self._account(),
            Shut: lambda a: self._shut(),
        }

    @property
    def dead(self) -> str | None:
        """Why the kernel is gone; None while it lives."""
        return self.machine.dead

    @property
    def broken(self) -> bool:
        """Whether it died of breaking the protocol."""
        return self.machine.broken

    @property
    def output_cap(self) -> int:
        """Characters of stray output (printed outside a step's capture) kept for one step."""
        return self.machine.output_cap

    @output_cap.setter
    def output_cap(self, value: int) -> None:
        self.machine.output_cap = value

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
        future = self._cells[msg_id] = asyncio.get_running_loop().create_future()
        self.machine.expect_cell(msg_id)
        return await asyncio.wait_for(future, START_S)

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
            self._do(self.machine.end(why or "the kernel died (out of memory, out of CPU time, or killed)"))

    # -- doing what the bridge says ------------------------------------------------------------
    def _on_message(self, msg: dict[str, Any]) -> None:
        """Every message of the kernel, to the bridge: one that breaks the protocol ends the kernel."""
        self._do(self.machine.receive(msg))

    def _do(self, actions: list[Action]) -> None:
        for action in actions:
            self._perform[type(action)](action)

    def _start_answer(self, action: Answer) -> None:
        work = asyncio.get_running_loop().run_in_executor(self._threads, self._answer, action.call)
        work.add_done_callback(lambda w, f=action.frame: self._answered(f, w))

    def _answer(self, call: Any) -> bridge.Value:
        """In a bridge thread: a call of the kernel's code, answered by its namespace's handler."""
        handler = self.handlers.get(call.tag)
        if handler is None:
            return bridge.Value(error="this namespace's run has ended")
        # A handler runs the host's functions and the user's tools: the code sees a RuntimeError
        # or SubcallTooLarge, the host stays up.
        value, exc = attempt(lambda: handler(call))
        return bridge.failure(exc) if exc is not None else value

    def _answered(self, frame: int, work: asyncio.Future[bridge.Value]) -> None:
        if work.cancelled():
            return
        self._do(self.machine.answered(frame, work.result()))

    def _arm_park(self) -> None:
        self._park = asyncio.get_running_loop().call_later(PARK_AFTER_S, self._park_now)

    def _disarm_park(self) -> None:
        if self._park is not None:
            self._park.cancel()
            self._park = None

    def _park_now(self) -> None:
        self._park = None
        self._do(self.machine.park())

    def _shut(self) -> None:
        """The kernel broke the protocol: it is ended (every command in flight has failed)."""
        self._ending = asyncio.ensure_future(self.close())

    def waiting_on_host(self) -> bool:
        """Whether the kernel waits for the host (a call's value): time that is not the step's own."""
        return self.machine.waiting_on_host()

    def take_printed(self) -> tuple[str, str, int]:
        """What was printed outside the capture of the step that just ran (stdout, stderr), and how
        many characters were dropped since the last step."""
        return self.machine.take_printed()

    # -- what the host asks -------------------------------------------------------------------
    async def command(self, command: Any) -> Any:
        future = asyncio.get_running_loop().create_future()
        id_, actions = self.machine.submit(command)
        self._commands[id_] = future
        self._do(actions)
        return await future

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
        self._do(self.machine.close())
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


def _settle(future: asyncio.Future[Any] | None, result: Any = None) -> None:
    if future is not None and not future.done():
        future.set_result(result)
