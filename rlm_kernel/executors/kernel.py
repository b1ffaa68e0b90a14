"""The ``kernel`` executor: the root's code runs in a kernel process of its own, in a sandbox.

The host keeps the LM clients; the kernel keeps the REPL. They talk over the kernel's own stdin
channel (the bridge, declared in :mod:`.bridge`): the one cell the host runs asks for commands with
``input()``, and ``llm_query`` inside the kernel is a request the host answers from its pool. No
port, broker or key is ever in the kernel. A local kernel (:mod:`.localkernel`) runs in a
bubblewrap sandbox (:mod:`.sandbox`) unless told ``isolation="none"``; a gateway's kernel
(:mod:`.gateway`) is checked to be in one.

The kernel executor is five modules of one job each: this one (the executor port: binding a run's
names, its steps, restarts, children), :mod:`.session` (the conversation with one kernel: every
message checked against the stack of waits; a kernel that breaks the protocol is ended and its run
gets a new one), :mod:`.pool` (warm kernels, and every kernel a runtime owns), :mod:`.transfer`
(how a context crosses, both sides) and :mod:`.errors`. What the kernel prints outside a step's
capture is kept only while a step runs and only up to ``output_cap``; the rest is counted and dropped.

Every kernel is driven from its runtime's asyncio loop (:mod:`rlm_kernel.runtime`: the run's, else
the process's default one); the executors, which the drivers call from their own threads, wait on
futures of that loop, and a step's time limit and its run's stop are watched there, as deadlines
and a signal, never by looking again. The runtime owns its kernels and warm pools (:mod:`.pool`):
closing it shuts every one down and removes its folders, and the default runtime does so when the
process exits (on SIGTERM too, where the process asks: :meth:`~rlm_kernel.runtime.Runtime.close_on_sigterm`);
folders of a host killed outright are removed by the next one.
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import dataclasses
import inspect
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, cast

from ..foreign import attempt
from ..helpers import Helpers
from ..protocol import FinalDirective
from ..repl import truncate
from ..runtime import Runtime, StopSignal, default_runtime
from ..subcall_api import errors_out
from . import bridge, sandbox, transfer
from .base import ExecResult, RemoteContext, StepOutcome
from .errors import KernelError, KernelStuck, NotSandboxed
from .pool import KernelPool, kernels_of
from .session import Kernel, KernelSession, Lost
from .settings import ISOLATIONS as ISOLATIONS
from .settings import ExecutorSettings

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

STEP_TIMEOUT_S = 300.0  # the default step_timeout: seconds of a step's own work in the kernel


# -- the default runtime's, for scripts and benchmarks that start sessions by hand -----------------
def on_kernel_loop(coro: Any) -> concurrent.futures.Future[Any]:
    return default_runtime().submit(coro)


def close_all() -> None:
    """Shut down every kernel of the default runtime, warm or in use; later runs start new ones."""
    kernels_of(default_runtime()).close()


close_pools = close_all


# -- the executor ------------------------------------------------------------------------------
AGAIN = "every variable made so far is gone; context and the REPL's functions are back.\n"
RESTARTED = "The step did not stop when interrupted, so the kernel was restarted: " + AGAIN
DIED = "The kernel died during the step ({why}); it was restarted: " + AGAIN
BROKE = "The kernel broke the bridge's protocol ({why}), so it was ended and a new kernel started: " + AGAIN


class KernelExecutor:
    """The executor port over a kernel: local (:mod:`.localkernel`) or remote (:mod:`.gateway`).

    Its settings (isolation, limits, timeouts) are an :class:`~.settings.ExecutorSettings`, where
    each is declared. ``runtime`` owns the kernel (its loop drives it, its close ends it): by default
    the runtime of the first run bound, else the process's default one."""

    kind = "kernel"

    def __init__(
        self,
        settings: ExecutorSettings | None = None,
        *,
        tag: str = "",
        runtime: Runtime | None = None,
        _parent: KernelExecutor | None = None,
        **given: Any,
    ) -> None:
        """``settings``, or settings given by name (``KernelExecutor(memory_mb=1024)``) over them; a
        child's are its parent's."""
        if _parent is not None:
            settings = _parent.settings
        settings = settings if settings is not None else ExecutorSettings()
        self.settings = ExecutorSettings.of({**settings, **given} if given else settings, self.kind)
        s = self.settings
        self.kernel_name = s.kernel_name or self.default_kernel(s.isolation)
        self.isolation = s.isolation
        self.memory_mb = s.memory_mb
        self.limits = sandbox.Limits(
            s.memory_mb or sandbox.Limits.memory_mb, s.max_procs, s.file_mb, s.cpu_s or sandbox.Limits.cpu_s
        )
        self.cpu_s = s.cpu_s
        self.step_timeout = STEP_TIMEOUT_S if s.step_timeout is None else s.step_timeout
        self.interrupt_grace_s = s.interrupt_grace_s
        self.max_subcalls = s.max_subcalls
        self.output_cap = s.output_cap
        self.warm = s.warm
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
        kernel = session.kernel
        ref = f"c{self.tag}"
        started = time.perf_counter()
        if kernel.shares_files:
            folder = transfer.transfer_dir(kernel.transfer_dirs, context)
            path, fmt, extra = transfer.write_file(folder, context, kernel.uid)
            try:
                reply = session.request(bridge.Load(tag=self.tag, ref=ref, format=fmt, path=path, **extra))
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        else:
            fmt, blob = transfer.blob(context)
            size = transfer.PART_BYTES
            self._parts[ref] = [blob[i : i + size] for i in range(0, len(blob), size)]
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
            # A tool is the user's code: what it raises goes back to its caller.
            value, exc = attempt(lambda: fn(*call.args, **call.kwargs))
            if exc is not None:
                return bridge.Value(error=f"{type(exc).__name__}: {exc}")
            return bridge.Value(json.loads(json.dumps(value, default=str)))
        subcalls = self._subcalls
        if subcalls is None:
            return bridge.Value(error="this run has no sub-calls")
        # images= only where the code sent some: a run's sub-calls may be any object of the protocol
        if isinstance(call, bridge.LlmQuery):
            with_images = {} if call.images is None else {"images": bridge.images_in(call.images)}
            return self._counted(1) or _answer(subcalls.llm_query(call.prompt, call.model, **with_images))
        if isinstance(call, bridge.LlmQueryBatched):
            per_prompt = call.images
            with_images = {} if per_prompt is None else {"images": [bridge.images_in(i) for i in per_prompt]}
            return self._counted(len(call.prompts)) or _answer(
                subcalls.llm_query_batched(call.prompts, call.model, **with_images)
            )
        if isinstance(call, bridge.AskBatched):
            return self._counted(len(call.conversations)) or _answer(
                subcalls.ask_batched(call.conversations, call.max_tokens)
            )
        contexts = None if call.contexts is None else [RemoteContext(c.ref, c.meta) for c in call.contexts]
        return self._counted(len(call.prompts)) or _answer(subcalls.rlm_query_batched(call.prompts, contexts))

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


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _answer(value: Any) -> bridge.Value:
    """A sub-call's value, with its failed calls' fields beside it (SubcallError crosses as a str)."""
    return bridge.Value(value, subcall_errors=errors_out(value))
