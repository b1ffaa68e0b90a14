"""Runs step code in a plain dict namespace with IPython's semantics, in the calling thread.

Like an IPython cell: statements run in order, assignments made before an
exception survive, and a last bare expression's value is shown. Output is caught
per thread (a context variable picks the buffer), so concurrent child runs never
see each other's prints.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, MutableMapping
from contextvars import ContextVar
from typing import Any, TextIO

from ..protocol import FinalDirective, resolve_final
from ..repl import (
    Scaffold,
    compact_traceback,
    filter_hint,
    key_error_hint,
    no_match_hint,
    register_source,
    step_filename,
)
from ..runtime import StepInterrupted, StopSignal, Watchdog, default_runtime
from .base import ExecResult, StepOutcome

__all__ = ["LocalExecutor", "capture_output", "run_code"]

_buffers: ContextVar[tuple[io.StringIO, io.StringIO, bool] | None] = ContextVar("rlm_capture", default=None)
_install_lock = threading.Lock()
_installed = 0
_originals: tuple[TextIO, TextIO] | None = None


class _Router(io.TextIOBase):
    """Stands in for sys.stdout/sys.stderr while any capture is active; writes go to the
    current context's buffer, or to the stream it replaced."""

    def __init__(self, index: int, fallback: TextIO) -> None:
        self._index = index
        self._fallback = fallback

    def write(self, s: str) -> int:
        buffers = _buffers.get()
        if buffers is None:
            return self._fallback.write(s)
        if buffers[2]:  # tee: the front end sees it too
            self._fallback.write(s)
        return buffers[self._index].write(s)

    def flush(self) -> None:
        if _buffers.get() is None:
            self._fallback.flush()

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fallback, name)


class capture_output:  # noqa: N801 - used like contextlib's lower-case managers
    """Catch this thread's stdout and stderr until exit; with ``tee``, let them through as well."""

    def __init__(self, tee: bool = False) -> None:
        self.tee = tee

    def __enter__(self) -> tuple[io.StringIO, io.StringIO]:
        global _installed, _originals
        out, err = io.StringIO(), io.StringIO()
        with _install_lock:
            if _installed == 0:
                _originals = (sys.stdout, sys.stderr)
                sys.stdout = _Router(0, sys.stdout)  # type: ignore[assignment]
                sys.stderr = _Router(1, sys.stderr)  # type: ignore[assignment]
            _installed += 1
        self._token = _buffers.set((out, err, self.tee))
        return out, err

    def __exit__(self, *exc: object) -> None:
        global _installed, _originals
        _buffers.reset(self._token)
        with _install_lock:
            _installed -= 1
            if _installed == 0 and _originals is not None:
                # Streams the code put in place (sys.stdout = io.StringIO()) go with it.
                sys.stdout, sys.stderr = _originals
                _originals = None


def run_code(code: str, namespace: MutableMapping[str, Any], filename: str) -> tuple[str | None, str | None]:
    """Execute ``code`` like an IPython cell; returns (repr of the last expression, error text)."""
    register_source(filename, code)
    try:
        tree = ast.parse(code, filename, "exec")
    except SyntaxError as exc:
        return None, "".join(traceback.format_exception_only(type(exc), exc))
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    try:
        exec(compile(tree, filename, "exec"), namespace)  # noqa: S102 - running the REPL's code is the job
        value = None
        if last is not None:
            value = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)  # noqa: S307
        sys.stdout.write(filter_hint(code, namespace))  # after what the step printed, before its value
        if value is not None:
            return repr(value), None
    except StepInterrupted:
        return None, STOPPED
    except KeyboardInterrupt:  # Ctrl-C: the driver's to handle
        raise
    except BaseException as exc:  # noqa: BLE001 - the REPL's code may raise anything (SystemExit, CancelledError, its own): the root sees it as the step's error
        hints = key_error_hint(exc, namespace) + no_match_hint(exc, namespace) + filter_hint(code, namespace)
        return None, compact_traceback(exc) + hints
    return None, None


STOPPED = "The step was stopped before it finished (Stop, cancel() or max_timeout).\n"


def _leftovers(pid: int, recursion_limit: int, threads: set[threading.Thread]) -> None:
    """What a step leaves that would harm its host: a forked copy of the host goes no further than
    the step (it would write the run's events twice), the recursion limit is put back, and threads
    the step started do not keep the process from exiting."""
    if os.getpid() != pid:
        sys.stdout.flush()
        os._exit(0)
    sys.setrecursionlimit(recursion_limit)
    started = [t for t in threading.enumerate() if t not in threads and not t.daemon]
    locks = getattr(threading, "_shutdown_locks", None)  # CPython 3.10-3.12 joins these at exit
    for thread in started:
        thread._daemonic = True  # type: ignore[attr-defined]
        lock = getattr(thread, "_tstate_lock", None)
        if locks is not None and lock is not None:
            with threading._shutdown_locks_lock:  # type: ignore[attr-defined]
                locks.discard(lock)


SETTLE_S = 0.05  # a copy forked as its parent ended notes itself within this; the wait ends sooner
SETTLE_ROUNDS = 20  # at most this many quiet periods are waited for, however many copies note


class _Forks:
    """Copies of this process that a step's code forked (``os.fork``, multiprocessing's "fork"): each
    notes its pid and start time here as it begins, copies of copies too, and the run ends them all
    when it closes. A copy goes no further than its step's code (:func:`_leftovers`), but one that
    sleeps or serves there would outlive the run, holding the host's memory and files."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)  # under a fork bomb, notes are lost, not the copies' time

    def note(self) -> None:
        """In a copy, as it begins."""
        with contextlib.suppress(OSError):
            os.write(self._write, f"{os.getpid()} {_started(os.getpid())}\n".encode())

    def end(self) -> None:
        """End the copies still running (those whose pid is still theirs), and stop listening. A copy
        forked just before its parent ended writes its note a moment later: after copies were ended,
        the pipe is watched until ``SETTLE_S`` passes with no note (a note wakes the wait at once)."""
        ended: set[int] = set()
        for _ in range(SETTLE_ROUNDS):
            notes = b""
            with contextlib.suppress(BlockingIOError):
                while chunk := os.read(self._read, 1 << 16):
                    notes += chunk
            found = [tuple(int(n) for n in line.split()) for line in notes.decode().splitlines()]
            if not found and ended:
                break
            for pid, started in found:
                if pid != os.getpid() and _started(pid) == started:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                ended.add(pid)
            if not ended:
                break  # the run forked nothing
            select.select([self._read], [], [], SETTLE_S)
        os.close(self._read)
        os.close(self._write)


def _started(pid: int) -> int:
    """When a process started (clock ticks since boot), which tells it from a later one of its pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return -1


_forks: ContextVar[_Forks | None] = ContextVar("rlm_forks", default=None)


def _note_fork() -> None:
    forks = _forks.get()
    if forks is not None:
        forks.note()


if sys.platform == "linux":
    os.register_at_fork(after_in_child=_note_fork)


def _disarm(watchdog: Watchdog) -> None:
    """The step is over; a stop that came as it ended arrives here, and the step's result stands."""
    try:
        watchdog.disarm(threading.get_ident())
    except StepInterrupted:
        pass


class LocalExecutor:
    """The in-process executor (plain Python, the magics, child runs): a dict namespace.

    Notebook mode runs steps as the kernel's own cells in this namespace, then calls :meth:`settle`
    with what the cell did."""

    def __init__(self, namespace: MutableMapping[str, Any] | None = None, tag: str = "") -> None:
        self.namespace: MutableMapping[str, Any] = namespace if namespace is not None else {}
        self.namespace.setdefault("__name__", "__rlm__")
        self.tag = tag
        self.scaffold: Scaffold | None = None
        self.stop_when: StopSignal | None = None
        self._forks: _Forks | None = None

    def bind(
        self,
        context: Any,
        subcalls: Any | None,
        helpers: Mapping[str, Callable[..., Any]] | None,
        stop_when: Callable[[], bool] | None = None,
    ) -> None:
        self.scaffold = Scaffold(self.namespace, context, subcalls, helpers)
        self.stop_when = StopSignal.of(stop_when)

    def run(self, code: str, *, step: int) -> ExecResult:
        """Run the code alone, without settling the scaffold; a step still running when
        ``stop_when()`` holds is ended."""
        start = time.perf_counter()
        out, err = io.StringIO(), io.StringIO()
        pid, limit, threads = os.getpid(), sys.getrecursionlimit(), set(threading.enumerate())
        stop = self.stop_when
        watchdog = (stop.runtime or default_runtime()).watchdog if stop is not None else None
        if self._forks is None and sys.platform == "linux":
            self._forks = _Forks()
        forking = _forks.set(self._forks)
        try:
            try:
                if watchdog is not None and stop is not None:  # a stop already set ends it here
                    watchdog.arm(stop)
                with capture_output() as (out, err):
                    value, error = run_code(code, self.namespace, step_filename(step, self.tag))
            finally:
                if watchdog is not None:
                    _disarm(watchdog)
                _forks.reset(forking)
                _leftovers(pid, limit, threads)
        except StepInterrupted:
            value, error = None, STOPPED
        return ExecResult(out.getvalue(), err.getvalue(), value, error, time.perf_counter() - start)

    def settle(self, result: ExecResult) -> StepOutcome:
        """After a step, wherever its code ran in this namespace: reserved names back, answer read."""
        if self.scaffold is None:
            return StepOutcome(result)
        restored = self.scaffold.restore()
        return StepOutcome(result, self.scaffold.ready, self.scaffold.content, restored)

    def execute(self, code: str, *, step: int) -> StepOutcome:
        return self.settle(self.run(code, step=step))

    def resolve(self, directive: FinalDirective) -> tuple[str | None, str | None]:
        if self.scaffold is None:
            return resolve_final(directive, dict(self.namespace))
        return self.scaffold.resolve(directive)

    def close(self) -> list[str]:
        if self._forks is not None:
            self._forks.end()
            self._forks = None
        return self.scaffold.close() if self.scaffold is not None else []

    def child(self, tag: str) -> LocalExecutor:
        return LocalExecutor(tag=tag)

    def describe(self) -> dict[str, Any]:
        return {"executor": "local", "isolation": "none", "limits": "none: the code runs in this process"}
