"""What is left running after a run ends: the thread of a ``local`` step that Stop ended under
``acompletion()``, and a gateway kernel that its sandbox ended and its gateway started again."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator

import pytest
from gateway_server import KernelGateway
from redteam import attacker
from scripted_server import ScriptedServer
from waiting import wait_until

pytestmark = pytest.mark.timeout(240)

SPIN = "while True: pass"


def stepping_threads() -> list[threading.Thread]:
    """The threads running a step's code now."""
    frames = sys._current_frames()
    running = {
        ident
        for ident, frame in frames.items()
        if any(f.filename.startswith("<rlm-step") for f in traceback.extract_stack(frame))
    }
    return [t for t in threading.enumerate() if t.ident in running]


async def until(predicate: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Poll ``predicate`` on the event loop, which goes on meanwhile, until it holds or ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def cpu_idle(window: float = 0.5, share: float = 0.3) -> Callable[[], bool]:
    """A predicate for :func:`wait_until`: whether, over the last ``window`` seconds or more, this
    process used less than ``share`` of a core (a step spinning in a thread uses all of one)."""
    last = [time.monotonic(), time.process_time()]

    def idle() -> bool:
        now, cpu = time.monotonic(), time.process_time()
        if now - last[0] < window:
            return False
        quiet = cpu - last[1] < share * (now - last[0])
        last[:] = [now, cpu]
        return quiet

    return idle


@pytest.mark.parametrize("how", ["rlm.cancel", "task.cancel"])
def test_stopping_an_async_local_run_ends_its_steps_thread(server: ScriptedServer, how: str) -> None:
    rlm = attacker(server, SPIN, executor="local")

    async def main() -> tuple[object, list[threading.Thread], bool, bool]:
        task = asyncio.ensure_future(rlm.acompletion("doc", "q"))
        assert await until(lambda: bool(stepping_threads())), "the step never started"
        spinning = stepping_threads()
        if how == "rlm.cancel":
            rlm.cancel()  # the Stop of the magics' widget and of %rlm stop
        else:
            task.cancel()  # an interrupted cell, asyncio.wait_for, a task group
        result = await task
        # Checked while the caller's loop still runs, as a notebook's kernel's does for its life.
        gone = wait_until(lambda: not any(t.is_alive() for t in spinning), timeout=30)
        idle = wait_until(cpu_idle(), timeout=30)
        return result, spinning, gone, idle

    result, spinning, gone, idle = asyncio.run(main())
    assert result.error and "cancelled" in result.error  # type: ignore[attr-defined]
    assert gone, f"the step's thread is still alive after the run ended: {[t.name for t in spinning]}"
    assert idle, "the process still uses a core after the run ended"


def test_an_async_run_stopped_in_a_blocking_call_lets_its_event_loop_end(server: ScriptedServer) -> None:
    """A step blocked in C ends only when its call returns; the run does not wait for it, and neither
    does the caller's ``asyncio.run``, whose default executor's threads it joins as it ends."""
    gate = threading.Event()  # the step waits on it, in C, until the test lets it go
    rlm = attacker(server, "gate.wait()", executor="local")
    results: list[object] = []
    blocked: list[threading.Thread] = []

    async def main() -> None:
        task = asyncio.ensure_future(rlm.acompletion("doc", "q", namespace={"gate": gate}))
        assert await until(lambda: bool(stepping_threads())), "the step never started"
        blocked.extend(stepping_threads())
        task.cancel()
        results.append(await task)

    caller = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    caller.start()
    try:
        assert wait_until(lambda: not caller.is_alive(), timeout=30), "asyncio.run waits on the stopped step"
        (result,) = results
        assert result.error and "cancelled" in result.error  # type: ignore[attr-defined]
    finally:
        gate.set()
    assert wait_until(lambda: not any(t.is_alive() for t in blocked), timeout=30)


# -- a gateway's kernel that its sandbox ended ----------------------------------------------------
SANDBOX_MB = 256  # the kernelspec's --memory-mb: what the sandbox's first process holds it to


@pytest.fixture(scope="module")
def small_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelGateway]:
    """A gateway set up as docs/executors.md says, whose ``rlm-sandbox`` kernelspec holds each kernel
    to ``SANDBOX_MB`` (its ``--memory-mb``); the gateway restarts a kernel that dies, as it does by
    default."""
    prefix = tmp_path_factory.mktemp("small-sandbox")
    install = [sys.executable, "-m", "rlm_kernel.install", "--sandbox", "--prefix", str(prefix)]
    subprocess.run(install, check=True, capture_output=True)
    (spec,) = prefix.glob("share/jupyter/kernels/rlm-sandbox/kernel.json")
    kernel = json.loads(spec.read_text())
    kernel["argv"] += ["--memory-mb", str(SANDBOX_MB)]
    spec.write_text(json.dumps(kernel))
    with KernelGateway(env={"JUPYTER_PATH": str(prefix / "share" / "jupyter")}) as gateway:
        yield gateway


def test_a_gateway_kernel_its_sandbox_ended_is_seen_dead_at_once(
    server: ScriptedServer, small_gateway: KernelGateway
) -> None:
    code = f"hog = b'x' * ({4 * SANDBOX_MB} << 20)\nprint('allocated', len(hog))"
    settings = {
        "url": small_gateway.url,
        "auth_token": small_gateway.token,
        "memory_mb": 8 * SANDBOX_MB,  # the kernel's own address-space limit lets the step try
        "step_timeout": 120,
    }
    rlm = attacker(server, code, "print('after')", executor="gateway", executor_kwargs=settings)
    seen: dict[tuple[str, int], float] = {}  # when each step started and finished

    def clock(event: object) -> None:
        if event.kind in ("step_started", "step_finished"):  # type: ignore[attr-defined]
            seen.setdefault((event.kind, event.step), time.monotonic())  # type: ignore[attr-defined]

    result = rlm.completion("doc", "q", subscribers=(clock,))
    ended, after = [e for e in result.trajectory if e.kind == "step_finished"]
    took = seen["step_finished", ended.step] - seen["step_started", ended.step]
    assert "allocated" not in ended.output
    assert "did not stop when interrupted" not in (ended.error or "")
    assert "died" in (ended.error or "") and "memory" in (ended.error or ""), ended.error
    assert after.output == "after\n"  # the run goes on in a new kernel
    assert took < 60, f"the step took {took:.0f} s: it waited for its timeout"
