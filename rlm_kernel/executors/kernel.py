"""The ``kernel`` executor: the root's code runs in a kernel process of its own, with no keys inside.

The host keeps the LM clients; the kernel keeps the REPL. They talk over the kernel's own stdin
channel (see :mod:`~rlm_kernel.executors.inkernel`): the one cell the host runs asks for commands
with ``input()``, and ``llm_query`` inside the kernel is a request the host answers from its pool.
No port, broker or key is ever in the kernel, and its environment is scrubbed of key-like names.

Every kernel of the process is driven from one asyncio loop on a daemon thread; the executors, which
the drivers call from their own threads, wait on futures of that loop.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import collections
import concurrent.futures
import contextlib
import ctypes
import inspect
import io
import itertools
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import ConfigError, RLMError
from ..helpers import Helpers
from ..protocol import FinalDirective
from ..secrets import is_secret_name, secrets_of
from .base import ExecResult, RemoteContext, StepOutcome
from .inkernel import MARK, str_layout

__all__ = [
    "KernelExecutor",
    "KernelSession",
    "KernelPool",
    "LocalKernel",
    "KernelError",
    "scrubbed_env",
    "on_kernel_loop",
]

# A kernel waiting in input() wakes 100 times a second (ipykernel polls its stdin socket: about 1 %
# of a core), so after this long without a command (a human reading a step, say) the serve cell
# ends, and the next command starts it again (a few ms).
PARK_AFTER_S = 30.0
START_S = 120.0  # for a kernel to start and load this module, many starting at once on 2 cores
PART_BYTES = 4 << 20  # a context crosses a remote kernel's channel in parts of this size
WRITE_CHARS = 8 << 20  # and is written for a local kernel this many characters at a time
_URL_WITH_CREDENTIALS = re.compile(r"://[^/\s:@]+:[^/\s@]+@")


class KernelError(RLMError):
    """A kernel could not start, died, or stopped answering."""


# -- the loop every kernel of the process runs on ------------------------------------------------
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _kernel_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="rlm-kernels", daemon=True).start()
        return _loop


def on_kernel_loop(coro: Any) -> concurrent.futures.Future[Any]:
    return asyncio.run_coroutine_threadsafe(coro, _kernel_loop())


# -- what a kernel must offer: local (jupyter_client) or remote (gateway.py) -----------------------
class Kernel(Protocol):
    """A running kernel: its messages arrive on ``on_message``, each with its ``channel``."""

    shares_files: bool  # whether a file the host writes can be read by the kernel

    async def start(self, on_message: Callable[[dict[str, Any]], None]) -> None: ...
    def execute(self, code: str) -> str: ...
    def input_reply(self, value: str) -> None: ...
    async def interrupt(self) -> None: ...
    async def is_alive(self) -> bool: ...
    async def shutdown(self) -> None: ...


def scrubbed_env(
    environ: Mapping[str, str] | None = None, secrets: list[str] | None = None
) -> dict[str, str]:
    """The environment a kernel gets: without key-like names, values holding a configured secret,
    or addresses with credentials in them."""
    environ = os.environ if environ is None else environ
    secrets = secrets or []
    return {
        k: v
        for k, v in environ.items()
        if not is_secret_name(k) and not _URL_WITH_CREDENTIALS.search(v) and not any(s in v for s in secrets)
    }


def _drop_capabilities() -> None:
    """In the kernel's process before it starts (as root): no capabilities, so it cannot read
    another process's memory or environment, and no way to gain them back."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, pr_set_no_new_privs = 24, 38
    for cap in range(64):
        if libc.prctl(pr_capbset_drop, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0)


def protect_host() -> None:
    """Make this process's environment and memory unreadable to processes without capabilities,
    kernels of the same user included (``/proc/<pid>/environ``, ``/proc/<pid>/mem``)."""
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


class LocalKernel:
    """A kernel on this machine, started by jupyter_client with a scrubbed environment, in a
    temporary working directory, without capabilities."""

    shares_files = True

    def __init__(self, kernel_name: str = "python3") -> None:
        self.kernel_name = kernel_name
        self.workdir = tempfile.mkdtemp(prefix="rlm-kernel-")
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self, on_message: Callable[[dict[str, Any]], None]) -> None:
        from jupyter_client.manager import AsyncKernelManager

        protect_host()
        # IPC sockets in the kernel's own directory: nothing listens on the network.
        self.km = AsyncKernelManager(
            kernel_name=self.kernel_name, transport="ipc", ip=os.path.join(self.workdir, "kernel")
        )
        launch: dict[str, Any] = {
            "env": scrubbed_env(secrets=secrets_of()),
            "cwd": self.workdir,
            "stdout": subprocess.DEVNULL,
            "stderr": subprocess.DEVNULL,
        }
        if sys.platform == "linux" and os.geteuid() == 0:
            launch["preexec_fn"] = _drop_capabilities
        try:
            await self.km.start_kernel(**launch)
            self.kc = self.km.client()
            self.kc.start_channels()
            await self.kc.wait_for_ready(timeout=START_S)
        except Exception as exc:
            await self.shutdown()
            raise KernelError(f"the {self.kernel_name!r} kernel did not start: {exc}") from exc
        for name in ("shell", "iopub", "stdin"):
            self._tasks.append(asyncio.ensure_future(self._pump(name, on_message)))

    async def _pump(self, name: str, on_message: Callable[[dict[str, Any]], None]) -> None:
        channel = getattr(self.kc, f"{name}_channel")
        while True:
            msg = await channel.get_msg()
            msg["channel"] = name
            on_message(msg)

    def execute(self, code: str) -> str:
        return self.kc.execute(code, silent=False, store_history=False, allow_stdin=True)

    def input_reply(self, value: str) -> None:
        self.kc.input(value)

    async def interrupt(self) -> None:
        await self.km.interrupt_kernel()

    async def is_alive(self) -> bool:
        return await self.km.is_alive()

    async def shutdown(self) -> None:
        for task in self._tasks:
            task.cancel()
        km = getattr(self, "km", None)
        if km is not None:
            if getattr(self, "kc", None) is not None:
                self.kc.stop_channels()
            with contextlib.suppress(Exception):  # already gone
                await km.shutdown_kernel(now=True)
        shutil.rmtree(self.workdir, ignore_errors=True)


# -- one kernel in use ------------------------------------------------------------------------
@dataclass
class _Frame:
    """A wait inside the kernel: a command it is carrying out, or a request it made of the host."""

    kind: str  # "exec": a command sent to the kernel; "call": a request the kernel made
    id: int
    future: asyncio.Future[dict[str, Any]] | None = None  # exec: the command's result
    reply: dict[str, Any] | None = None  # call: the value, once the host has it


@dataclass
class _Command:
    op: str
    args: dict[str, Any]
    future: asyncio.Future[dict[str, Any]]
    id: int = field(default_factory=lambda: next(_command_ids))


_command_ids = itertools.count(1)
Handler = Callable[[dict[str, Any]], dict[str, Any]]


class KernelSession:
    """The conversation with one kernel: its serve cell, the stack of waits inside it, and the
    commands queued for it. All of it runs on the kernel loop."""

    def __init__(self, kernel: Kernel, *, memory_mb: int | None = None, cpu_s: float | None = None) -> None:
        self.kernel = kernel
        self.memory_mb = memory_mb
        self.cpu_s = cpu_s
        self.handlers: dict[str, Handler] = {}  # a namespace's tag -> what answers its requests
        self.stray: list[tuple[str, str]] = []  # (stream, text) sent outside a step's capture
        self.dead: str | None = None
        self._threads = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="rlm-bridge")
        self._stack: list[_Frame] = []
        self._pending: collections.deque[_Command] = collections.deque()
        self._waiting = False  # the kernel asked and has no reply yet
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._serve_id: str | None = None
        self._serving = False
        self._park: asyncio.TimerHandle | None = None
        self._watch: asyncio.Task[None] | None = None
        self._closing = False

    # -- starting --------------------------------------------------------------------------
    async def start(self) -> None:
        await self.kernel.start(self._on_message)
        memory = self.memory_mb * (1 << 20) if self.memory_mb else None
        workdir = getattr(self.kernel, "workdir", None)
        setup = (
            "from rlm_kernel.executors import inkernel as _rlm\n"
            f"_rlm.limit({memory!r}, {self.cpu_s!r}, {workdir!r})\n"
        )
        reply = await self._run_cell(setup)
        if reply["content"].get("status") != "ok":
            c = reply["content"]
            await self.kernel.shutdown()
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
        self._serving = True
        self._serve_id = self.kernel.execute("_rlm.serve()")

    async def _watch_alive(self) -> None:
        while not self._closing:
            await asyncio.sleep(1.0)
            if not self._closing and not await self.kernel.is_alive():
                self._fail("the kernel died (out of memory, out of CPU time, or killed)")
                self.dead = "the kernel died"
                return

    # -- what the kernel sends ---------------------------------------------------------------
    def _on_message(self, msg: dict[str, Any]) -> None:
        kind = msg["header"]["msg_type"]
        parent = msg.get("parent_header", {}).get("msg_id")
        content = msg.get("content", {})
        if msg["channel"] == "stdin" and kind == "input_request":
            self._on_request(str(content.get("prompt", "")))
        elif msg["channel"] == "shell" and kind == "execute_reply":
            if parent in self._replies:
                self._replies.pop(parent).set_result(msg)
            elif parent == self._serve_id:
                # The serve cell ended: parked with no work left, or under a command (an interrupt
                # that came between steps), which failed with what it was waiting on.
                self._serving = self._waiting = False
                if self._stack:
                    self._fail("the kernel was interrupted", queued=False)
                if self._pending and not self._closing:
                    self._serve()
        elif msg["channel"] == "iopub" and kind == "status" and content.get("execution_state") == "dead":
            self.dead = "the kernel died"  # whatever it was doing (a gateway's websocket closed, say)
            self._fail(self.dead)
        elif msg["channel"] == "iopub" and parent == self._serve_id and kind == "stream":
            self.stray.append((content.get("name", "stdout"), content.get("text", "")))

    def _on_request(self, prompt: str) -> None:
        if not prompt.startswith(MARK):  # the code called input() itself: end of file
            self.kernel.input_reply("\x04")
            return
        request = json.loads(prompt[len(MARK) :])
        op = request.pop("op")
        self._waiting = True
        if op == "ready":
            self._stack.clear()
        elif op == "result":
            while self._stack:  # requests the command abandoned (interrupted) go with it
                frame = self._stack.pop()
                if frame.kind == "exec" and frame.id == request["id"]:
                    if frame.future is not None and not frame.future.done():
                        frame.future.set_result(request)
                    break
        elif op == "call":
            frame = _Frame("call", next(_command_ids))
            self._stack.append(frame)
            work = asyncio.get_running_loop().run_in_executor(self._threads, self._answer, request)
            work.add_done_callback(lambda w, f=frame: self._answered(f, w))
        self._pump()

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """In a bridge thread: a request of the kernel's code, answered by its namespace's handler."""
        handler = self.handlers.get(request.get("tag", ""))
        if handler is None:
            return {"error": "this namespace's run has ended"}
        try:
            return handler(request)
        except Exception as exc:  # the code sees a one-line RuntimeError, the host stays up
            return {"error": f"{type(exc).__name__}: {exc}"}

    def _answered(self, frame: _Frame, work: asyncio.Future[dict[str, Any]]) -> None:
        frame.reply = work.result()
        self._pump()

    def _pump(self) -> None:
        """If the kernel waits: answer its innermost request once the host has the value, else
        give it the next command (a child's step runs inside the parent's wait)."""
        if not self._waiting:
            return
        top = self._stack[-1] if self._stack else None
        if top is not None and top.kind == "call" and top.reply is not None:
            self._stack.pop()
            self._send({"op": "value", **top.reply})
        elif (top is None or top.kind == "call") and self._pending:
            command = self._pending.popleft()
            self._stack.append(_Frame("exec", command.id, command.future))
            self._send({"op": command.op, "id": command.id, **command.args})
        elif top is None and self._park is None:  # no work: soon the serve cell ends until more
            self._park = asyncio.get_running_loop().call_later(PARK_AFTER_S, self._park_now)

    def _park_now(self) -> None:
        self._park = None
        if self._waiting and not self._stack and not self._pending:
            self._send({"op": "quit"})

    def _send(self, reply: dict[str, Any]) -> None:
        self._waiting = False
        self.kernel.input_reply(json.dumps(reply))

    def _fail(self, why: str, queued: bool = True) -> None:
        """End every command in flight (and, with ``queued``, those not yet sent) with ``why``."""
        for frame in self._stack:
            if frame.future is not None and not frame.future.done():
                frame.future.set_result({"error": why, "lost": True})
        self._stack.clear()
        while queued and self._pending:
            command = self._pending.popleft()
            if not command.future.done():
                command.future.set_result({"error": why, "lost": True})

    # -- what the host asks -------------------------------------------------------------------
    async def command(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        if self.dead:
            return {"error": self.dead, "lost": True}
        command = _Command(op, args, asyncio.get_running_loop().create_future())
        self._pending.append(command)
        if self._park is not None:
            self._park.cancel()
            self._park = None
        if not self._serving:
            self._serve()
        self._pump()
        return await command.future

    def request(
        self,
        op: str,
        stop_when: Callable[[], bool] | None = None,
        timeout: float | None = None,
        grace_s: float = 3.0,
        **args: Any,
    ) -> dict[str, Any]:
        """Carry out a command and return its result, from any thread. A command still running
        when ``stop_when()`` holds or ``timeout`` passes is interrupted; one that does not end
        within ``grace_s`` of that raises :class:`KernelStuck`."""
        future = on_kernel_loop(self.command(op, args))
        deadline = None if timeout is None else time.monotonic() + timeout
        interrupted_at: float | None = None
        while True:
            try:
                return future.result(timeout=0.05)
            except concurrent.futures.TimeoutError:
                pass
            now = time.monotonic()
            if interrupted_at is None:
                if (stop_when is not None and stop_when()) or (deadline is not None and now > deadline):
                    interrupted_at = now
                    on_kernel_loop(self.kernel.interrupt())
            elif now - interrupted_at > grace_s:
                future.cancel()
                raise KernelStuck()

    async def close(self) -> None:
        self._closing = True
        for timer in (self._watch, self._park):
            if timer is not None:
                timer.cancel()
        if self._serving and self._waiting and not self._stack and not self.dead:
            self._send({"op": "quit"})
        self._fail("the kernel was shut down")
        await self.kernel.shutdown()
        self._threads.shutdown(wait=False, cancel_futures=True)


class KernelStuck(KernelError):
    """A step that did not end when interrupted."""


# -- a warm pool of kernels -------------------------------------------------------------------
class KernelPool:
    """Kernels started ahead, so a run gets one in milliseconds; each serves one run and goes."""

    def __init__(self, factory: Callable[[], KernelSession], size: int = 1) -> None:
        self.factory = factory
        self.size = size
        self._warm: collections.deque[concurrent.futures.Future[KernelSession]] = collections.deque()
        self._lock = threading.Lock()

    def _start_one(self) -> concurrent.futures.Future[KernelSession]:
        session = self.factory()

        async def start() -> KernelSession:
            await session.start()
            return session

        return on_kernel_loop(start())

    def fill(self) -> None:
        with self._lock:
            while len(self._warm) < self.size:
                self._warm.append(self._start_one())

    def acquire(self) -> KernelSession:
        with self._lock:
            future = self._warm.popleft() if self._warm else self._start_one()
        self.fill()
        try:
            return future.result(timeout=START_S)
        except concurrent.futures.TimeoutError:
            raise KernelError(f"no kernel was ready within {START_S:g} s") from None

    def close(self) -> None:
        with self._lock:
            warm, self._warm = list(self._warm), collections.deque()
        for future in warm:
            with contextlib.suppress(Exception):  # one that never started has nothing to close
                on_kernel_loop(future.result(timeout=START_S).close()).result(timeout=30)


_pools: dict[tuple[Any, ...], KernelPool] = {}


def pool_for(key: tuple[Any, ...], factory: Callable[[], KernelSession], size: int) -> KernelPool:
    """The process's pool for kernels of one kind and limits."""
    with _loop_lock:
        pool = _pools.get(key)
        if pool is None:
            if not _pools:
                atexit.register(close_pools)
            pool = _pools[key] = KernelPool(factory, size)
    return pool


def close_pools() -> None:
    """Shut down every warm kernel of the process (at exit, too)."""
    with _loop_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()


# -- the executor ------------------------------------------------------------------------------
RESTARTED = (
    "The step did not stop when interrupted, so the kernel was restarted: every variable made so "
    "far is gone; context and the REPL's functions are back.\n"
)
DIED = "The kernel died during the step ({why}); it was restarted: every variable made so far is gone.\n"


class KernelExecutor:
    """The executor port over a kernel: local (``LocalKernel``) or remote (``GatewayKernel``).

    ``memory_mb`` and ``cpu_s`` limit the kernel; ``step_timeout`` ends a step that runs longer
    (interrupt, then restart); ``max_subcalls`` bounds the sub-calls of a run; ``output_cap`` is
    the most characters of a step's output that leave the kernel."""

    kind = "kernel"

    def __init__(
        self,
        *,
        kernel_name: str = "python3",
        memory_mb: int | None = 4096,
        cpu_s: float | None = None,
        step_timeout: float | None = None,
        interrupt_grace_s: float = 3.0,
        max_subcalls: int | None = 10_000,
        output_cap: int = 1_000_000,
        warm: int = 1,
        tag: str = "",
        _parent: KernelExecutor | None = None,
    ) -> None:
        self.kernel_name = kernel_name
        self.memory_mb = memory_mb
        self.cpu_s = cpu_s
        self.step_timeout = step_timeout
        self.interrupt_grace_s = interrupt_grace_s
        self.max_subcalls = max_subcalls
        self.output_cap = output_cap
        self.warm = warm
        self.tag = tag or uuid.uuid4().hex[:12]
        self._root = _parent._root if _parent is not None else self
        self._session: KernelSession | None = _parent._root._session if _parent is not None else None
        self._children: list[KernelExecutor] = []
        self._subcalls: Any = None
        self._bound: dict[str, Any] | None = None
        self._context: Any = None
        self._parts: dict[str, list[bytes]] = {}
        self._count = 0
        self.stop_when: Callable[[], bool] | None = None
        self.load_s = 0.0  # seconds the context took to load into the kernel

    # -- kernels --------------------------------------------------------------------------
    def new_kernel(self) -> Kernel:
        return LocalKernel(self.kernel_name)

    def _pool_key(self) -> tuple[Any, ...]:
        return (type(self).__name__, self.kernel_name, self.memory_mb, self.cpu_s)

    def _pool(self) -> KernelPool:
        key = self._pool_key()
        factory = lambda: KernelSession(self.new_kernel(), memory_mb=self.memory_mb, cpu_s=self.cpu_s)  # noqa: E731
        return pool_for(key, factory, self.warm)

    @property
    def session(self) -> KernelSession:
        root = self._root
        if root._session is None:
            root._session = root._pool().acquire()
        return root._session

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
        else:
            where = {"ref": self._load(context)}
        reply = session.request(
            "bind",
            tag=self.tag,
            context=where,
            subcalls=self._subcalls is not None,
            helpers=self._helpers,
            host=[_declared(name, fn) for name, fn in self._host.items()],
            output_cap=self.output_cap,
        )
        if "error" in reply:
            raise KernelError(f"the kernel could not bind the run's names: {reply['error']}")

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
                if layout is not None:  # as CPython holds it: no copy, no encoding
                    kind, address, size = layout
                    view = memoryview((ctypes.c_char * size).from_address(address)).cast("B")
                    for i in range(0, size, WRITE_CHARS):
                        f.write(view[i : i + WRITE_CHARS])
                    fmt, extra = "str-raw", {"length": len(context), "kind": kind}
                else:
                    _write(f, context, fmt)
            try:
                reply = session.request("load", ref=ref, tag=self.tag, format=fmt, path=path, **extra)
            finally:
                with contextlib.suppress(FileNotFoundError):  # the kernel removes it once read
                    os.unlink(path)
        else:
            blob = _blob(context, fmt)
            self._parts[ref] = [blob[i : i + PART_BYTES] for i in range(0, len(blob), PART_BYTES)]
            del blob
            reply = session.request("load", ref=ref, tag=self.tag, format=fmt, parts=len(self._parts[ref]))
            self._parts.pop(ref, None)
        if "error" in reply:
            raise KernelError(f"the kernel could not load the context: {reply['error']}")
        self.load_s = time.perf_counter() - started
        return ref

    def execute(self, code: str, *, step: int) -> StepOutcome:
        session = self.session
        session.stray.clear()
        try:
            reply = session.request(
                "exec",
                stop_when=self.stop_when,
                timeout=self.step_timeout,
                grace_s=self.interrupt_grace_s,
                tag=self.tag,
                code=code,
                step=step,
            )
        except KernelStuck:
            self._restart()
            return StepOutcome(ExecResult(error=RESTARTED))
        if reply.get("lost"):
            why = reply["error"]
            self._restart()
            return StepOutcome(ExecResult(error=DIED.format(why=why)))
        if "error" in reply and "stdout" not in reply:
            return StepOutcome(ExecResult(error=str(reply["error"]) + "\n"))
        # What the step's threads and subprocesses printed reached the kernel's own streams.
        stray = {name: "".join(t for n, t in session.stray if n == name) for name in ("stdout", "stderr")}
        stdout, stderr = reply["stdout"] + stray["stdout"], reply["stderr"] + stray["stderr"]
        result = ExecResult(stdout, stderr, reply["value"], reply["error"], reply["elapsed_s"])
        return StepOutcome(result, reply["answer_ready"], reply["answer"], tuple(reply["restored"]))

    def _restart(self) -> None:
        """A new kernel for the run, its names bound again; children whose contexts lived in the
        old kernel cannot go on."""
        root = self._root
        old, root._session = root._session, None
        if old is not None:
            on_kernel_loop(old.close())
        for executor in (root, *root._children):
            if not isinstance(executor._context, RemoteContext):
                executor._bind()

    def resolve(self, directive: FinalDirective) -> tuple[str | None, str | None]:
        reply = self.session.request(
            "resolve", tag=self.tag, kind=directive.kind, argument=directive.argument
        )
        if "error" in reply:
            return None, str(reply["error"])
        return reply["content"], reply["problem"]

    def close(self) -> list[str]:
        session = self._root._session
        if session is None:
            return []
        session.handlers.pop(self.tag, None)
        if self._root is not self:
            if not session.dead:
                session.request("close", tag=self.tag)
                if isinstance(self._context, RemoteContext):
                    session.request("forget", refs=[self._context.ref])
            return []
        self._session = None
        on_kernel_loop(session.close()).result(timeout=30)
        return []

    def child(self, tag: str) -> KernelExecutor:
        """A child run's executor: a namespace of its own in the same kernel."""
        child = KernelExecutor(tag=tag, _parent=self)
        self._root._children.append(child)
        return child

    # -- the kernel's requests, in a bridge thread --------------------------------------------
    def _handle(self, request: dict[str, Any]) -> dict[str, Any]:
        fn = request["fn"]
        if fn == "part":
            return {"value": _b64(self._root._parts_of(request["ref"])[request["index"]])}
        if fn == "host":
            call = self._host.get(request["name"])
            if call is None:
                return {"error": f"no function {request['name']!r} on the host"}
            try:
                value = call(*request.get("args", []), **request.get("kwargs", {}))
            except Exception as exc:  # the tool's own failure, raised again in the kernel's code
                return {"error": f"{type(exc).__name__}: {exc}"}
            return {"value": json.loads(json.dumps(value, default=str))}
        subcalls = self._subcalls
        if subcalls is None:
            return {"error": "this run has no sub-calls"}
        if fn == "llm_query":
            return self._counted(1) or {"value": subcalls.llm_query(request["prompt"], request.get("model"))}
        if fn == "llm_query_batched":
            prompts = request["prompts"]
            return self._counted(len(prompts)) or {
                "value": subcalls.llm_query_batched(prompts, request.get("model"))
            }
        if fn == "ask_batched":
            conversations = request["conversations"]
            return self._counted(len(conversations)) or {
                "value": subcalls.ask_batched(conversations, request.get("max_tokens"))
            }
        if fn == "rlm_query_batched":
            prompts = request["prompts"]
            refs = request.get("contexts")
            contexts = None if refs is None else [RemoteContext(r["ref"], r["meta"]) for r in refs]
            return self._counted(len(prompts)) or {"value": subcalls.rlm_query_batched(prompts, contexts)}
        return {"error": f"unknown request {fn!r}"}

    def _parts_of(self, ref: str) -> list[bytes]:
        for executor in (self, *self._children):
            if ref in executor._parts:
                return executor._parts[ref]
        raise KeyError(ref)

    def _counted(self, n: int) -> dict[str, Any] | None:
        root = self._root
        root._count += n
        if root.max_subcalls is not None and root._count > root.max_subcalls:
            return {"error": f"this run's limit of {root.max_subcalls:,} sub-calls is reached"}
        return None


def _declared(name: str, fn: Callable[..., Any]) -> dict[str, str]:
    """A host function as the kernel's stub shows it: name, signature, docstring."""
    try:
        signature = f"{name}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        signature = f"{name}(...)"
    return {"name": name, "signature": signature, "doc": inspect.getdoc(fn) or ""}


def _transfer_dir(kernel: Kernel, context: Any) -> str:
    """Where a context passes to a kernel on this machine: memory (``/dev/shm``) when it has room,
    the kernel's own directory otherwise."""
    need = 2 * len(context) if isinstance(context, (str, bytes, bytearray)) else 0
    shm = "/dev/shm"  # noqa: S108 - each file is new (O_EXCL), random-named and the owner's alone
    try:
        stat = os.statvfs(shm)
        if os.access(shm, os.W_OK) and stat.f_bavail * stat.f_frsize > need + (64 << 20):
            return shm
    except OSError:
        pass
    return str(getattr(kernel, "workdir", tempfile.gettempdir()))


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


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
