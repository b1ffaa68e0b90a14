"""A step that never returns is ended by max_timeout, cancel() and the async driver's cancel,
in the local executor; the run keeps what it had. A deadline only fails a hung test."""

from __future__ import annotations

import asyncio
import sys
import threading
import traceback

from scripted_server import Script

from rlm_kernel import RLM
from rlm_kernel.executors.local import STOPPED

KEY = "sk-test-watchdog-0123456789"
SPIN = "```repl\nkept = 'yes'\nn = 0\nwhile True:\n    n += 1\n```"


def make_rlm(server, **settings) -> RLM:
    server.responder = Script(root=[SPIN])
    backend = {"model_name": "gpt-4o-mini", "base_url": server.openai_base_url, "api_key": KEY}
    return RLM("openai", backend, log_dir=False, **settings)


def in_thread(fn):
    """Run ``fn`` in a thread; its result, or a failed assertion if it hangs."""
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", fn()), daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the run did not end: the step was never stopped"
    return box["result"]


def test_max_timeout_ends_a_step_that_never_returns(scripted_server):
    rlm = make_rlm(scripted_server, max_timeout=1.0)
    namespace: dict = {}
    result = in_thread(lambda: rlm.completion("ctx", "q", namespace=namespace))
    assert result.response is None and "max_timeout" in result.error
    (finished,) = [e for e in result.trajectory if e.kind == "step_finished"]
    assert finished.error == STOPPED
    assert namespace["kept"] == "yes" and namespace["n"] > 0  # what the step did is kept
    assert result.trajectory[-1].kind == "run_ended" and result.trajectory[-1].stop == "budget"


def test_cancel_ends_a_running_step(scripted_server):
    rlm = make_rlm(scripted_server)
    started = threading.Event()

    def watch(event):
        if event.kind == "step_started":
            started.set()

    def stopper():
        assert started.wait(30)
        rlm.cancel()

    threading.Thread(target=stopper, daemon=True).start()
    result = in_thread(lambda: rlm.completion("ctx", "q", subscribers=(watch,)))
    assert result.trajectory[-1].stop == "user" and "stopped by the user" in result.error


def test_cancelling_the_async_run_ends_its_worker_thread(scripted_server):
    rlm = make_rlm(scripted_server)

    async def main():
        started = asyncio.Event()
        loop = asyncio.get_running_loop()

        def watch(event):
            if event.kind == "step_started":
                loop.call_soon_threadsafe(started.set)

        task = asyncio.ensure_future(rlm.acompletion("ctx", "q", subscribers=(watch,)))
        await started.wait()
        task.cancel()
        return await task

    result = in_thread(lambda: asyncio.run(main()))
    assert result.trajectory[-1].kind == "run_ended" and result.trajectory[-1].stop == "interrupt"
    running = [
        frame
        for frame in sys._current_frames().values()
        for f in traceback.extract_stack(frame)
        if f.filename.startswith("<rlm-step")
    ]
    assert running == []  # the step itself ended: no thread is left spinning in it
