"""The kernel executor against the local one: what running the code in a kernel of its own costs,
in its sandbox (the default) and, as the baseline measured in the same run, without one.

* cold start: a sandboxed kernel started and ready for steps, against one without a sandbox
  (target <= 1.5 s for the sandboxed one);
* per-step overhead: a trivial step (``x = 1``) run many times through each executor; the figure
  is the kernel's median minus the local median, in ms (target <= 5 ms);
* the same for a step after the kernel's serve cell has ended (``PARK_AFTER_S`` of idleness) and
  the step starts it again (no target: it comes after at least 30 s without a step);
* bridged sub-call round trip: a step making 200 ``llm_query`` calls answered at once by the host
  (no LM), through each executor; (kernel - local) / 200, in ms (target <= 5 ms);
* warm-pool acquisition: ``KernelPool.acquire()`` with a warm kernel waiting (target <= 50 ms);
* a 200 MB string context loaded into a kernel: MB/s (target >= 500) and the peak RSS of each
  process over its RSS before the context existed, as a multiple of the context (target <= 1.25);
* a 64-way ``llm_query_batched`` through a real RLM run and the scripted server (a subprocess,
  0.25 s a sub-call): the step's time in the kernel over the same step in-process (target <= 1.1);
* the CPU an idle kernel's sandbox uses, waiting in its serve cell and after it ended, beside what
  a bare process waking once a second uses on the same machine (no target).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import main, median, scripted_server, target

CONTEXT_MB = 200


class Echo:
    """Sub-calls answered at once, so the figures are the bridge's alone."""

    def llm_query(self, prompt: str, model: str | None = None) -> str:
        return prompt

    def llm_query_batched(self, prompts: list[str], model: str | None = None) -> list[str]:
        return list(prompts)

    def rlm_query(self, prompt: str, context: Any = None) -> str:
        return prompt

    def rlm_query_batched(self, prompts: list[str], contexts: Any = None) -> list[str]:
        return list(prompts)

    def ask_batched(self, conversations: list[Any], max_tokens: int | None = None) -> list[str]:
        return ["" for _ in conversations]


def step_times(executor: Any, code: str, n: int) -> list[float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        executor.execute(code, step=i)
        times.append(time.perf_counter() - start)
    return times


def rss(pid: int | str = "self") -> tuple[int, int]:
    """(current, peak) resident bytes of a process."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) * 1024
    return values["VmRSS"], values["VmHWM"]


def reset_peak(pid: int | str = "self") -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


async def _park(session: Any) -> None:
    """What PARK_AFTER_S of idleness does, now."""
    session._park_now()


def overheads(quick: bool) -> tuple[dict[str, float], dict[str, list[float]]]:
    from rlm_kernel.executors.bridge_session import Phase
    from rlm_kernel.executors.kernel import KernelExecutor, on_kernel_loop
    from rlm_kernel.executors.local import LocalExecutor

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from waiting import wait_until

    n = 100 if quick else 400
    calls = 200
    local, kernel = LocalExecutor(), KernelExecutor()
    local.bind("ctx", Echo(), None)
    kernel.bind("ctx", Echo(), None)
    raw: dict[str, list[float]] = {}
    try:
        for name, executor in (("local", local), ("kernel", kernel)):
            step_times(executor, "x = 1", 20)  # warm-up
            raw[f"{name} step"] = step_times(executor, "x = 1", n)
            raw[f"{name} {calls} calls"] = step_times(
                executor, f"for _ in range({calls}):\n    llm_query('a')", 10 if quick else 30
            )
        raw["kernel step after idle"] = []
        session = kernel.session
        for _ in range(5 if quick else 20):  # the serve cell has ended: the step starts it again
            on_kernel_loop(_park(session)).result(timeout=10)
            if not wait_until(lambda: session.machine.phase is Phase.PARKED, timeout=10):
                raise RuntimeError("the serve cell did not end")
            raw["kernel step after idle"] += step_times(kernel, "x = 1", 1)
    finally:
        kernel.close()
    step_ms = (median(raw["kernel step"]) - median(raw["local step"])) * 1000
    idle_ms = (median(raw["kernel step after idle"]) - median(raw["local step"])) * 1000
    call_ms = (median(raw[f"kernel {calls} calls"]) - median(raw[f"local {calls} calls"])) * 1000 / calls
    return {"step_ms": step_ms, "idle_ms": idle_ms, "call_ms": call_ms}, raw


def kernel_processes(session: Any) -> list[Any]:
    """The processes of a local kernel: its sandbox's (bubblewrap, its first process, the kernel), or
    the kernel alone."""
    import psutil

    launched = psutil.Process(session.kernel.km.provisioner.pid)
    return [launched, *launched.children(recursive=True)]


def kernel_pid(session: Any) -> int:
    """The pid of the kernel itself (ipykernel), inside its sandbox or not."""
    return next(p.pid for p in kernel_processes(session) if p.cmdline()[1:3] == ["-m", "ipykernel_launcher"])


def cold_starts(quick: bool) -> dict[str, list[float]]:
    """Seconds from nothing to a kernel ready for steps (limits set, rlm_kernel loaded), one at a time."""
    from rlm_kernel.executors.kernel import KernelSession, on_kernel_loop
    from rlm_kernel.executors.localkernel import LocalKernel

    times: dict[str, list[float]] = {"sandbox": [], "none": []}
    for _ in range(3 if quick else 8):
        for isolation in times:  # interleaved, so drift hits both alike
            session = KernelSession(
                LocalKernel(isolation=isolation), memory_mb=4096, isolated=isolation == "sandbox"
            )
            start = time.perf_counter()
            on_kernel_loop(session.start()).result(timeout=120)
            times[isolation].append(time.perf_counter() - start)
            on_kernel_loop(session.close()).result(timeout=30)
    return times


def warm_pool(quick: bool) -> list[float]:
    from rlm_kernel.executors.kernel import KernelSession, kernels_of
    from rlm_kernel.executors.localkernel import LocalKernel
    from rlm_kernel.runtime import Runtime

    with Runtime() as runtime:  # its close ends the pool's kernels
        pool = kernels_of(runtime).pool("bench", lambda: KernelSession(LocalKernel()), size=1)
        pool.fill()
        times = []
        for _ in range(3 if quick else 6):
            with pool._lock:
                waiting = pool._warm[0]
            waiting.result(timeout=120)  # the warm kernel is ready: a run arriving now gets it
            start = time.perf_counter()
            session = pool.acquire()
            times.append(time.perf_counter() - start)
            runtime.submit(session.close()).result(timeout=30)
    return times


def ran_ns(pid: int) -> int:
    """Nanoseconds a process has run (the scheduler's own count, exact where ticks are not)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def waker_cpu(seconds: float = 10.0) -> float:
    """Percent of a core a bare process uses that wakes once a second to read a little of /proc: what
    a wake-up costs on this machine, to read the idle figures against."""
    import subprocess

    code = "import os, time\nwhile True:\n    time.sleep(1)\n    os.statvfs('/tmp')\n    os.listdir('/proc')"
    process = subprocess.Popen([sys.executable, "-S", "-c", code])
    try:
        time.sleep(1)
        before = ran_ns(process.pid)
        time.sleep(seconds)
        return 100 * (ran_ns(process.pid) - before) / 1e9 / seconds
    finally:
        process.kill()
        process.wait()


def idle_cpu(seconds: float = 10.0) -> tuple[float, float]:
    """Percent of a core a kernel's sandbox (all its processes) uses while the kernel waits in its
    serve cell, and once that cell ended."""
    from rlm_kernel.executors.bridge_session import Phase
    from rlm_kernel.executors.kernel import KernelExecutor, on_kernel_loop

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from waiting import wait_until

    executor = KernelExecutor(warm=0)
    executor.bind("ctx", Echo(), None)
    session = executor.session
    processes = kernel_processes(session)  # the sandbox's first process, which watches memory, too

    def used() -> float:
        return sum(ran_ns(p.pid) for p in processes) / 1e9

    def share() -> float:
        before = used()
        time.sleep(seconds)  # the figure is what the kernel does while nothing happens
        return 100 * (used() - before) / seconds

    try:
        waiting = share()
        on_kernel_loop(_park(session)).result(timeout=10)
        if not wait_until(lambda: session.machine.phase is Phase.PARKED, timeout=10):
            raise RuntimeError("the serve cell did not end")
        parked = share()
    finally:
        executor.close()
    return waiting, parked


def big_context() -> dict[str, float]:
    from rlm_kernel.executors.kernel import KernelExecutor

    executor = KernelExecutor(memory_mb=None)
    session = executor.session  # a kernel before the context exists, so its start is not counted
    kernel = kernel_pid(session)
    host_before, _ = rss()
    kernel_before, _ = rss(kernel)
    context = "0123456789abcdef" * (CONTEXT_MB * (1 << 20) // 16)
    size = len(context)
    reset_peak()
    reset_peak(kernel)
    start = time.perf_counter()
    executor.bind(context, None, None)
    bind_s = time.perf_counter() - start
    _, host_peak = rss()
    _, kernel_peak = rss(kernel)
    check = executor.execute("len(context), context[-16:]", step=1).result.value
    executor.close()
    if check != repr((size, context[-16:])):
        raise RuntimeError(f"the context did not arrive whole: {check}")
    return {
        "load_s": executor.load_s,
        "bind_s": bind_s,
        "mb_per_s": size / (1 << 20) / executor.load_s,
        "host_peak_x": (host_peak - host_before) / size,
        "kernel_peak_x": (kernel_peak - kernel_before) / size,
    }


def batch_ratio(quick: bool) -> tuple[float, dict[str, list[float]]]:
    from rlm_kernel import RLM

    raw: dict[str, list[float]] = {"local": [], "kernel": []}
    with scripted_server(sub_latency=0.25) as url, tempfile.TemporaryDirectory() as logs:
        for _ in range(3 if quick else 7):
            for executor in ("local", "kernel"):  # interleaved, so drift hits both alike
                rlm = RLM(
                    "openai",
                    {"model_name": "scripted", "base_url": url, "api_key": "test", "max_retries": 0},
                    max_concurrency=64,
                    executor=executor,
                    log_dir=logs,
                )
                result = rlm.completion("a small context", "FANOUT=64")
                if not result.ok:
                    raise RuntimeError(f"{executor}: {result.error}")
                (step,) = [e for e in result.trajectory if e.kind == "step_finished" and "64" in e.output]
                raw[executor].append(step.elapsed_s)
    return median(raw["kernel"]) / median(raw["local"]), raw


def run(quick: bool = False) -> dict:
    from rlm_kernel.executors.kernel import close_pools

    try:
        starts = cold_starts(quick)
        costs, raw = overheads(quick)
        pool_times = warm_pool(quick)
        waiting_cpu, parked_cpu = idle_cpu()
        waker = waker_cpu()
        loaded = big_context()
        ratio, batches = batch_ratio(quick)
    finally:
        close_pools()
    raw.update({"warm acquire": pool_times, **{f"64-way step {k}": v for k, v in batches.items()}})
    raw.update({f"cold start, isolation={k}": v for k, v in starts.items()})
    cold, cold_none = median(starts["sandbox"]), median(starts["none"])
    values = [
        ("cold start of a sandboxed kernel", round(cold, 3), "s"),
        ("cold start without a sandbox (isolation='none')", round(cold_none, 3), "s"),
        ("per-step overhead, kernel - local", round(costs["step_ms"], 3), "ms"),
        ("the same, a step after 30 s idle (serve cell restarted)", round(costs["idle_ms"], 3), "ms"),
        ("bridged llm_query round trip, kernel - local", round(costs["call_ms"], 3), "ms"),
        ("warm-pool acquisition", round(median(pool_times) * 1000, 2), "ms"),
        (f"{CONTEXT_MB} MB str context load", round(loaded["mb_per_s"]), "MB/s"),
        ("host peak RSS over the context", round(loaded["host_peak_x"], 3), "x"),
        ("kernel peak RSS over the context", round(loaded["kernel_peak_x"], 3), "x"),
        ("64-way batch step, kernel / local", round(ratio, 3), "x"),
        ("idle kernel CPU, waiting in its serve cell", round(waiting_cpu, 2), "% of a core"),
        ("idle kernel CPU, serve cell ended (after 30 s idle)", round(parked_cpu, 2), "% of a core"),
        ("a bare process waking once a second, for scale", round(waker, 2), "% of a core"),
    ]
    figures = [{"figure": name, "value": value, "unit": unit} for name, value, unit in values]
    targets = [
        target("cold start of a sandboxed kernel", round(cold, 3), 1.5, unit="s"),
        target("per-step overhead of kernel over local", round(costs["step_ms"], 3), 5.0, unit="ms"),
        target("bridged sub-call round trip", round(costs["call_ms"], 3), 5.0, unit="ms"),
        target("warm-pool kernel acquisition", round(median(pool_times) * 1000, 2), 50.0, unit="ms"),
        target(
            f"{CONTEXT_MB} MB context into a kernel",
            round(loaded["mb_per_s"]),
            500.0,
            unit="MB/s",
            lower_is_better=False,
        ),
        target("host peak RSS, x the context", round(loaded["host_peak_x"], 3), 1.25, unit="x"),
        target("kernel peak RSS, x the context", round(loaded["kernel_peak_x"], 3), 1.25, unit="x"),
        target("64-way batch through the bridge / in-process", round(ratio, 3), 1.1, unit="x"),
    ]
    return {
        "name": "executors",
        "description": "the kernel executor's costs against the local executor, measured in the same run",
        "figures": figures,
        "targets": targets,
        "raw": raw,
        "notes": [
            "medians; per-step and round-trip figures are the kernel's median minus the local median",
            "every kernel is sandboxed (bubblewrap) but the cold-start baseline; idle CPU counts all the "
            "sandbox's processes, its memory watch (a look a second) included, from the scheduler's "
            "own count (/proc/<pid>/schedstat)",
            "host peak RSS counts from before the context string was made, so 1.0 is the string itself",
            f"load: the {CONTEXT_MB} MB string goes as CPython lays it out, through a file in /dev/shm; "
            f"{loaded['load_s']:.3f} s to load, {loaded['bind_s']:.3f} s for the whole bind",
            f"CPU count {os.cpu_count()}",
        ],
    }


if __name__ == "__main__":
    main("executors", run)
