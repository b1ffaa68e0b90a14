"""The runtime: one loop on a thread, closed cleanly; waits that wake on the work, not on a timer."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import pytest

from rlm_kernel.errors import RunCancelled
from rlm_kernel.executors.local import STOPPED, LocalExecutor
from rlm_kernel.runtime import Runtime, StopSignal
from rlm_kernel.subcalls import SubcallPool


def test_importing_the_package_starts_no_thread_and_swaps_no_stream():
    code = (
        "import sys, threading; out = sys.stdout; import rlm_kernel, rlm_kernel.jupyter.magics\n"
        "assert sys.stdout is out, sys.stdout\n"
        "print(sorted(t.name for t in threading.enumerate()))"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "['MainThread']"


def test_a_closed_runtime_has_stopped_its_loop_and_thread():
    with Runtime(name="rlm-test-runtime") as runtime:
        assert runtime.submit(asyncio.sleep(0, "ran")).result(5) == "ran"
        thread = runtime._thread
        assert thread is not None and thread.is_alive()
        pending = runtime.submit(asyncio.sleep(60))
    assert not thread.is_alive() and runtime._loop is not None and runtime._loop.is_closed()
    assert pending.cancelled()
    with pytest.raises(RuntimeError, match="closed"):
        runtime.submit(asyncio.sleep(0))


def test_a_cancel_wakes_a_thread_waiting_on_a_call_at_once():
    with Runtime() as runtime:
        pool = SubcallPool(4, runtime=runtime)
        future = pool.submit(asyncio.sleep(60))
        threading.Timer(0.1, pool.cancel_all).start()
        started = time.perf_counter()
        with pytest.raises(RunCancelled):
            pool.wait(future)
        assert time.perf_counter() - started < 1.0
        pool.close()


def test_a_signal_set_before_the_wait_and_its_listeners_run_once():
    stop = StopSignal()
    calls: list[str] = []
    remove = stop.on_set(lambda: calls.append("first"))
    stop.set()
    stop.set()
    stop.on_set(lambda: calls.append("late"))  # already set: called at once
    remove()
    assert calls == ["first", "late"] and stop() and stop.cancelled


def test_the_watchdog_ends_a_busy_step_when_its_deadline_comes():
    with Runtime() as runtime:
        executor = LocalExecutor()
        executor.bind("ctx", None, None, stop_when=StopSignal(time.monotonic() + 0.2, runtime=runtime))
        started = time.perf_counter()
        result = executor.run("while True:\n    pass", step=1)
        assert result.error == STOPPED and time.perf_counter() - started < 5


def test_the_watchdog_ends_a_busy_step_when_its_run_is_cancelled():
    with Runtime() as runtime:
        stop = StopSignal(runtime=runtime)
        executor = LocalExecutor()
        executor.bind("ctx", None, None, stop_when=stop)
        threading.Timer(0.2, stop.set).start()
        assert executor.run("n = 0\nwhile True:\n    n += 1", step=1).error == STOPPED
        assert executor.namespace["n"] > 0


def test_a_plain_function_is_no_stop_signal():
    with pytest.raises(TypeError, match="StopSignal"):
        LocalExecutor().bind("ctx", None, None, stop_when=lambda: False)


def test_the_output_router_is_in_place_only_while_a_step_runs():
    before = sys.stdout
    executor = LocalExecutor()
    executor.bind("ctx", None, None)
    result = executor.run("import sys\nprint(type(sys.stdout).__name__)", step=1)
    assert result.stdout.strip() == "_Router" and sys.stdout is before
