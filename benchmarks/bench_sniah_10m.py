"""S-NIAH at ten million tokens (about 42 million characters) with the bundled model: score, time
and peak memory of each task, on the ``test`` split.

Each task runs in a process of its own, so its peak is its own: the process starts the model
(the machine's shared llama.cpp server, or one in the process), runs an empty task through the
same executor (so the kernel machinery's imports, some 60 MB, are not counted against the
context), reads its resident memory, builds the task's context, runs the ``rlm`` method as a
sweep does (a kernel of its own, sandboxed where the machine allows), and scores the answer.
Reported per task:

* ``seconds``: the rollout's wall time (the context built before it is ``build_s``);
* ``context_x``: what the built context holds resident in the process, over its size in
  characters: about 1 for a string, more for lists and dicts of many small Python objects;
* ``host_peak_x``: the process's peak resident memory during the rollout (``VmHWM``, reset once the
  task is built) above what it held before the task was built, over the context's characters:
  the context itself counts ``context_x``;
* ``kernel_peak_x``: the kernel's peak (``RUSAGE_CHILDREN``, read once it has exited) above an
  empty kernel's, measured the same way at the start, over the context's characters (its own copy
  of the context counts about ``context_x``);
* ``host_over_context`` and ``kernel_over_context``: the two peaks over what the context holds
  resident, so 1.0 means the run added nothing to the context's own memory.

Targets: 10 of 10 right, median time at most 60 s, peak at most 1.5 times the context (given both
over its characters and over its resident size).

    python benchmarks/bench_sniah_10m.py [-n 10] [--length 10m] [--out benchmarks/sniah_10m.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGETS = {"right": 1.0, "median_s": 60.0, "peak_x": 1.5}


def _status(field: str) -> int:
    """A /proc/self/status figure, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _kernel_peak(settings, task, log_dir: Path | None) -> tuple[float, dict]:
    from rlm_kernel.eval.methods import run_method
    from rlm_kernel.executors.kernel import close_pools

    outcome, seconds = asyncio.run(run_method("rlm", task, settings, log_dir))
    close_pools()  # the warm kernel exits too, so RUSAGE_CHILDREN has counted every kernel
    return seconds, {"answer": outcome.answer, "error": outcome.error}


def one(index: int, length: str, empty_kernel: int) -> dict:
    from rlm_kernel.eval.methods import Settings
    from rlm_kernel.eval.scoring import score
    from rlm_kernel.eval.tasks import TaskRef, generate, parse_length
    from rlm_kernel.lm import make_lm

    settings = Settings(backend="local", max_timeout=600.0)
    make_lm("local")  # the model is up before the baseline is read
    _warm()
    before = _status("VmRSS")
    started = time.perf_counter()
    task = generate(TaskRef("sniah", "test", parse_length(length), index))
    build_s = time.perf_counter() - started
    size = task.context_chars
    held = _status("VmRSS") - before
    Path("/proc/self/clear_refs").write_text("5")  # the peak from here: building the task is not the run's
    seconds, out = _kernel_peak(settings, task, None)
    kernel = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 - empty_kernel, 0)
    host = _status("VmHWM") - before
    return {
        "task": index,
        "shape": task.meta.get("shape"),
        "right": score(task.scorer, out["answer"], task.answer) == 1.0,
        "error": out["error"],
        "seconds": round(seconds, 1),
        "build_s": round(build_s, 1),
        "context_mb": round(size / 1e6, 1),
        "context_x": round(held / size, 2),
        "host_peak_x": round(host / size, 2),
        "kernel_peak_x": round(kernel / size, 2),
        "host_over_context": round(host / held, 2),
        "kernel_over_context": round(kernel / held, 2),
    }


def _warm() -> None:
    """Run an empty task through the executor, so that what it imports is resident already."""
    from rlm_kernel.eval.methods import Settings
    from rlm_kernel.eval.tasks import Task

    task = Task(id="empty", family="custom", context="", question="Say ok.", answer="ok", scorer="contains")
    _kernel_peak(Settings(backend="local", max_timeout=120.0, max_iterations=1), task, None)


def empty() -> int:
    """An empty kernel's peak, through the same executor."""
    _warm()
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10)
    parser.add_argument("--length", default="10m")
    parser.add_argument("--out", default=str(Path(__file__).with_name("sniah_10m.json")))
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--empty-kernel", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--empty", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.empty:
        print(json.dumps({"empty_kernel": empty()}))
        return
    if args.one is not None:
        print(json.dumps(one(args.one, args.length, args.empty_kernel)))
        return

    def child(*extra: str) -> dict:
        done = subprocess.run(
            [sys.executable, __file__, "--length", args.length, *extra], capture_output=True, text=True
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode or not lines:
            return {"error": f"exit {done.returncode}: {done.stderr.strip()[-500:]}"}
        return json.loads(lines[-1])

    empty_kernel = child("--empty").get("empty_kernel", 0)
    rows = []
    for i in range(args.n):
        row = child("--one", str(i), "--empty-kernel", str(empty_kernel))
        rows.append(row)
        print(json.dumps(row), flush=True)
    timed = [r["seconds"] for r in rows if "seconds" in r]
    peaks = [r for r in rows if "host_peak_x" in r]
    summary = {
        "length": args.length,
        "split": "test",
        "tasks": len(rows),
        "right": sum(bool(r.get("right")) for r in rows),
        "median_s": statistics.median(timed) if timed else None,
        "max_host_x": max((r["host_peak_x"] for r in peaks), default=None),
        "max_kernel_x": max((r["kernel_peak_x"] for r in peaks), default=None),
        "max_host_over_context": max((r["host_over_context"] for r in peaks), default=None),
        "max_kernel_over_context": max((r["kernel_over_context"] for r in peaks), default=None),
        "empty_kernel_mb": round(empty_kernel / 1e6),
        "targets": TARGETS,
    }
    print(json.dumps(summary))
    Path(args.out).write_text(json.dumps({"summary": summary, "tasks": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
