"""The runtime: one asyncio loop on a thread, the step watchdog, and the sub-call pools on that loop.

A run's waits (sub-calls, steps, stops) are on a future, an event or a condition that the work
signals when it ends, or on a deadline, not on a timer that looks again. Three waits still look
again, each where nothing signals: whether a gateway's remote kernel lives, llama.cpp's readiness at
start-up, and the sandboxed kernel's own memory watch. A :class:`Runtime` is a context manager:
closing it ends what it owns (kernels and their warm pools, model-server leases, MCP sessions: each
held by :meth:`Runtime.own` or :meth:`Runtime.adopt`, last made first), cancels its pools' calls,
stops its loop and joins its thread. :func:`default_runtime` is the process's shared one, created on
first use and the only one closed at exit; ``RLM(runtime=...)`` takes another, so an embedding
application can own (and close) everything its runs start. No runtime installs a signal handler
unless asked (:meth:`Runtime.close_on_sigterm`).

A :class:`StopSignal` is a run tree's "stop now": set by a cancel, or reached at its deadline
(``max_timeout``). It is callable like a ``stop_when()`` and waitable, so a step's watchdog, a
kernel's supervisor and a thread blocked on a sub-call all wake the moment it fires.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import ctypes
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Coroutine, Hashable, Iterable
from typing import Any, Protocol, TypeVar

__all__ = [
    "Closeable",
    "Runtime",
    "StopSignal",
    "Watchdog",
    "StepInterrupted",
    "close_quietly",
    "default_runtime",
    "wait_any",
    "wait_future",
]

T = TypeVar("T")
C = TypeVar("C", bound="Closeable")
log = logging.getLogger(__name__)


class Closeable(Protocol):
    """What a runtime can own: something that ends what it started when closed."""

    def close(self) -> Any: ...


# On POSIX a blocked lock wait is interrupted by a signal, so Ctrl-C reaches a thread waiting on a
# future at once. Elsewhere (Windows) it is not: there the wait is cut into slices this long, so a
# KeyboardInterrupt is seen between them; the work finishing still wakes the wait at once.
SIGNAL_SLICE_S: float | None = None if os.name == "posix" else 0.25


def wait_any(futures: Iterable[concurrent.futures.Future[Any]], timeout: float | None = None) -> bool:
    """Wait until one of ``futures`` is done or ``timeout`` passes; whether one is. Ctrl-C in the
    waiting thread interrupts it at once."""
    futures = list(futures)
    first = concurrent.futures.FIRST_COMPLETED
    if SIGNAL_SLICE_S is None:
        return bool(concurrent.futures.wait(futures, timeout, first)[0])
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        piece = SIGNAL_SLICE_S if left is None else min(left, SIGNAL_SLICE_S)
        if concurrent.futures.wait(futures, piece, first)[0]:
            return True
        if left is not None and left <= piece:
            return False


def wait_future(future: concurrent.futures.Future[Any], timeout: float | None = None) -> bool:
    """Wait until ``future`` is done or ``timeout`` passes; whether it is done."""
    return wait_any([future], timeout)


class StopSignal:
    """A run tree's stop: set by a cancel, or reached at ``deadline`` (``time.monotonic()``)."""

    def __init__(self, deadline: float | None = None, runtime: Runtime | None = None) -> None:
        self.deadline = deadline
        self.runtime = runtime  # whose watchdog ends the steps it stops; the default runtime's if None
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    @staticmethod
    def of(stop_when: Callable[[], bool] | None) -> StopSignal | None:
        """An executor's ``stop_when`` as a signal it can wait on; a plain function could only be
        asked again and again, so it is refused."""
        if stop_when is None or isinstance(stop_when, StopSignal):
            return stop_when
        raise TypeError("stop_when must be a rlm_kernel.runtime.StopSignal, which wakes whoever waits on it")

    def set(self) -> None:
        """Stop now; every listener is called once, in the caller's thread."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def __call__(self) -> bool:
        """Whether work must stop now (the ``stop_when()`` the executors take)."""
        return self.cancelled or self.expired()

    def time_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def on_set(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` when the signal is set (at once if it is); returns a function that
        removes it. Listeners must be quick and must not block: they run in the setter's thread."""
        with self._lock:
            if not self._event.is_set():
                self._listeners.append(listener)
                return lambda: self._remove(listener)
        listener()
        return lambda: None

    def _remove(self, listener: Callable[[], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)


class StepInterrupted(BaseException):
    """Raised inside a running step's thread to end it: Stop, ``cancel()`` or ``max_timeout``.
    A BaseException, so the step's own ``except Exception`` does not swallow it."""


def _async_raise(thread_id: int, exc: type[BaseException]) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc))


class Watchdog:
    """Ends steps running in this process's threads when their run's :class:`StopSignal` fires, by
    raising :class:`StepInterrupted` in the step's thread at its next Python instruction (a step
    blocked in C, such as a long ``time.sleep``, ends when the call returns). One thread, started
    with the first step: it sleeps until the earliest deadline among the running steps, and a
    cancel, or a step with an earlier deadline, wakes it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._steps: dict[int, StopSignal] = {}  # thread id -> its run's stop
        self._unlisten: dict[int, Callable[[], None]] = {}
        self._thread: threading.Thread | None = None
        self._until: float | None = None  # when the thread wakes next, if no signal comes first
        self._closed = False

    def arm(self, stop: StopSignal) -> int:
        """Watch the calling thread's step until :meth:`disarm`; returns the thread's id."""
        thread_id = threading.get_ident()
        with self._cond:
            self._steps[thread_id] = stop
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._watch, name="rlm-step-watchdog", daemon=True)
                self._thread.start()
            elif stop.deadline is not None and (self._until is None or stop.deadline < self._until):
                self._cond.notify()
        self._unlisten[thread_id] = stop.on_set(self._wake)
        return thread_id

    def disarm(self, thread_id: int) -> None:
        """The step is over. An exception set just before arrives at the thread's next instruction,
        here, for the caller to catch (clearing it through the C API instead spins the interpreter
        while a profiler is on). A step is raised into at most once for each :meth:`arm`."""
        unlisten = self._unlisten.pop(thread_id, None)
        if unlisten is not None:
            unlisten()
        with self._cond:
            self._steps.pop(thread_id, None)

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify()

    def _watch(self) -> None:
        with self._cond:
            while not self._closed:
                for thread_id, stop in list(self._steps.items()):
                    if stop():
                        del self._steps[thread_id]
                        _async_raise(thread_id, StepInterrupted)
                deadlines = [s.deadline for s in self._steps.values() if s.deadline is not None]
                self._until = min(deadlines) if deadlines else None
                self._cond.wait(None if self._until is None else max(self._until - time.monotonic(), 0.0))
            self._thread = None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            thread = self._thread
            self._cond.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2)


class Runtime:
    """The event loop (on a daemon thread, started on first use) that sub-calls and kernels run
    on, the watchdog of running steps, the sub-call pools open on the loop, and every resource a
    run starts (kernels, leases, sessions), which :meth:`close` ends."""

    def __init__(self, name: str = "rlm-runtime") -> None:
        self.name = name
        self.watchdog = Watchdog()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pools: set[Any] = set()  # SubcallPool; they are cancelled when the runtime closes
        self._owned: dict[Hashable, Any] = {}  # key -> the one resource of that kind
        self._adopted: list[Closeable] = []  # closed in reverse order, owned ones among them
        self._closing = False  # resources are being closed: no new ones, the loop still runs
        self._closed = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The runtime's running loop, started on first use."""
        with self._lock:
            if self._closed:
                raise RuntimeError("this Runtime is closed: create another, or use default_runtime()")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                started = threading.Event()
                loop.call_soon(started.set)
                self._thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
                self._thread.start()
                started.wait()
                self._loop = loop
            return self._loop

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the loop, from any thread other than the loop's own."""
        try:
            loop = self.loop
        except RuntimeError:
            coro.close()
            raise
        return asyncio.run_coroutine_threadsafe(coro, loop)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` on the loop's thread, from any thread."""
        self.loop.call_soon_threadsafe(fn, *args)

    def in_loop(self) -> bool:
        """Whether the caller runs on this runtime's loop thread (where waiting on it would hang)."""
        return self._thread is not None and threading.current_thread() is self._thread

    def own(self, key: Hashable, make: Callable[[], C]) -> C:
        """The runtime's one resource under ``key`` (a module's kernels, its leases), made on first
        ask and closed with the runtime."""
        with self._lock:
            self._refuse_if_closing()
            held = self._owned.get(key)
            if held is None:
                held = self._owned[key] = make()
                self._adopted.append(held)
            return held  # type: ignore[no-any-return]

    def adopt(self, resource: C) -> C:
        """Close ``resource`` with the runtime, unless :meth:`release` comes first."""
        with self._lock:
            self._refuse_if_closing()
            self._adopted.append(resource)
        return resource

    def release(self, resource: Closeable) -> None:
        """``resource`` was closed by its owner: the runtime need not close it."""
        with self._lock:
            if resource in self._adopted:
                self._adopted.remove(resource)

    def _refuse_if_closing(self) -> None:
        if self._closing:
            raise RuntimeError("this Runtime is closed: create another, or use default_runtime()")

    def close_on_sigterm(self) -> None:
        """Asked for by a process that wants SIGTERM to end this runtime's kernels and servers
        before it goes (nothing installs it unasked). From the main thread; only where SIGTERM has
        no handler yet."""
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return

        def on_sigterm(signum: int, frame: Any) -> None:
            self.close(10.0)
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        signal.signal(signal.SIGTERM, on_sigterm)

    def _opened(self, pool: Any) -> None:
        with self._lock:
            self._pools.add(pool)

    def _closed_pool(self, pool: Any) -> None:
        with self._lock:
            self._pools.discard(pool)

    def close(self, timeout: float = 5.0) -> None:
        """End what the runtime owns (last made first, while its loop still runs), cancel the calls
        of every open pool, stop the loop, and join its thread."""
        if self.in_loop():
            raise RuntimeError("a Runtime cannot be closed from its own loop")
        with self._lock:
            if self._closing:
                return
            self._closing = True
            resources, self._adopted, self._owned = self._adopted[::-1], [], {}
        for resource in resources:
            close_quietly(resource.close, repr(resource))
        with self._lock:
            self._closed = True
            pools, loop, thread = list(self._pools), self._loop, self._thread
        for pool in pools:
            pool.cancel_all()
        self.watchdog.close()
        if loop is None or thread is None:
            return

        async def cancel_tasks() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await loop.shutdown_asyncgens()
            await loop.shutdown_default_executor()  # the threads of asyncio.to_thread

        done = asyncio.run_coroutine_threadsafe(cancel_tasks(), loop)
        wait_future(done, timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if not thread.is_alive():
            loop.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def close_quietly(close: Callable[[], T], what: str, *, log: logging.Logger = log) -> T | None:
    """``close()``'s value, or None where it failed, logged with its traceback: one thing that fails
    to close (a kernel that will not shut down, a client's connections) must neither keep the rest
    open nor cost a run its result."""
    try:
        return close()
    except Exception:  # closing: whatever one resource raises, the others still close
        log.warning("rlm_kernel: closing %s failed", what, exc_info=True)
        return None


_default: Runtime | None = None
_default_lock = threading.Lock()


def default_runtime() -> Runtime:
    """The process's shared runtime, created on first use and closed at exit."""
    global _default
    with _default_lock:
        if _default is None or _default._closing:
            _default = Runtime()
            _at_exit(_default.close)
        return _default


def _at_exit(close: Callable[[], None]) -> None:
    """At exit what the runtime owns goes before the interpreter stops its thread pools (an HTTP
    client resolving a gateway's address needs one), where CPython allows it: its thread-exit hooks
    run last registered first, so this registers after concurrent.futures' own. At exit otherwise."""
    import concurrent.futures.thread  # noqa: F401 - registers its own stop first, so that this runs before

    register = getattr(threading, "_register_atexit", None)
    try:
        if register is None:
            raise RuntimeError("no thread-exit hooks here")
        register(close)
    except RuntimeError:  # the interpreter is already shutting down, or no such hooks
        atexit.register(close)
