"""Helpers shared by the benchmarks: the server subprocess, targets, results, machine info."""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
SERVER = REPO / "tests" / "scripted_server.py"
RESPONDER = BENCH_DIR / "_responder.py"


@contextlib.contextmanager
def scripted_server(
    *,
    sub_latency: float = 0.25,
    root_latency: float = 0.0,
    python: str | None = None,
    script: Path = RESPONDER,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Run the scripted server (with the benchmarks' responder, or ``script``, which reads ``env``)
    in a subprocess; yields its /v1 URL."""
    env = {
        **os.environ,
        "BENCH_SUB_LATENCY": str(sub_latency),
        "BENCH_ROOT_LATENCY": str(root_latency),
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    cmd = [python or sys.executable, str(SERVER), "--port", "0", "--latency", "0", "--script", str(script)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("READY "):
            err = proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"scripted server did not start: {line!r} {err[-2000:]}")
        yield line.split()[1] + "/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def target(
    name: str, value: float | None, limit: float, *, unit: str = "", lower_is_better: bool = True
) -> dict:
    """One target: ``value`` must be at most (or at least) ``limit``. None means it could not be measured."""
    if value is None:
        passed = None
    else:
        passed = value <= limit if lower_is_better else value >= limit
    return {
        "name": name,
        "value": value,
        "limit": limit,
        "op": "<=" if lower_is_better else ">=",
        "unit": unit,
        "passed": passed,
    }


def median(values: list[float]) -> float:
    return statistics.median(values)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    with contextlib.suppress(Exception):
        info["cpu_affinity"] = len(os.sched_getaffinity(0))
    with contextlib.suppress(Exception):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(Exception):
        import openai

        info["openai"] = openai.__version__
    return info


def main(name: str, run: Callable[[bool], dict]) -> None:
    """Command line of every benchmark: ``--quick`` for a smaller run, ``--json PATH`` to save the result."""
    parser = argparse.ArgumentParser(description=f"benchmark: {name}")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and sizes")
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args()
    started = time.perf_counter()
    try:
        result = run(args.quick)
    except Exception as exc:  # a broken benchmark still reports why
        import traceback

        result = {"name": name, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    result.setdefault("name", name)
    result["wall_s"] = round(time.perf_counter() - started, 2)
    result["machine"] = machine_info()
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, default=str))
    print(format_result(result))


def format_result(result: dict) -> str:
    """A short plain-text view of one benchmark's result."""
    lines = [f"== {result.get('name')} ({result.get('wall_s', '?')} s)"]
    if result.get("skipped"):
        lines.append(f"SKIPPED: {result['skipped']}")
    if result.get("error"):
        lines.append(f"ERROR: {result['error']}")
    for row in result.get("figures", []):
        lines.append("  " + ", ".join(f"{k}={v}" for k, v in row.items()))
    for t in result.get("targets", []):
        verdict = {True: "PASS", False: "FAIL", None: "n/a"}[t["passed"]]
        lines.append(f"  [{verdict}] {t['name']}: {fmt(t['value'])} {t['op']} {fmt(t['limit'])} {t['unit']}")
    for note in result.get("notes", []):
        lines.append(f"  note: {note}")
    return "\n".join(lines)


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
