"""Scaffold overhead per root iteration, with the LM's latency taken out.

A root that writes trivial code (``x = k; print(x)``) for 199 turns and answers on
turn 200 (``max_iterations=200``):

1. recorded once against the scripted server (0 latency) with ``record=path``;
2. replayed with the ``replay`` backend, trajectory written to a temp ``log_dir``:
   overhead per iteration = run time / iterations. Target: < 5 ms.
3. live against the scripted server at 0 latency: (run time - sum of the
   ``RootReply.latency_s``) / iterations, i.e. everything but the HTTP round trips.

A cProfile of one replay run lists where the time goes.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import main, median, scripted_server, target

ITERATIONS = 200
TARGET_MS = 5.0


def _check(result, iterations: int) -> None:
    if result.iterations != iterations or result.response != str(iterations - 1):
        raise RuntimeError(
            f"expected {iterations} iterations answering {iterations - 1}, got {result.iterations} "
            f"iterations, response {result.response!r}, error {result.error!r}"
        )


def live_once(url: str, iterations: int, log_dir: str, record: str | None = None) -> dict:
    from rlm_kernel import RLM
    from rlm_kernel.events import RootReply

    rlm = RLM(
        "openai",
        {"model_name": "scripted", "base_url": url, "api_key": "test"},
        max_iterations=iterations,
        log_dir=log_dir,
        record=record,
    )
    start = time.perf_counter()
    result = rlm.completion("a small context", root_prompt=f"ITERATIONS={iterations}")
    total = time.perf_counter() - start
    _check(result, iterations)
    latencies = [e.latency_s for e in result.trajectory if isinstance(e, RootReply)]
    lm_s = sum(latencies)
    return {
        "total_s": total,
        "lm_s": lm_s,
        "per_iter_ms": (total - lm_s) / iterations * 1000,
        # At 0 server latency, an LM call's time is client CPU: growth with the turn is per-message cost.
        "first10_lm_ms": sum(latencies[:10]) / 10 * 1000,
        "last10_lm_ms": sum(latencies[-10:]) / 10 * 1000,
    }


def replay_once(recording: str, iterations: int, log_dir: str) -> dict:
    from rlm_kernel import RLM

    rlm = RLM("replay", {"path": recording}, max_iterations=iterations, log_dir=log_dir)
    start = time.perf_counter()
    result = rlm.completion("a small context", root_prompt=f"ITERATIONS={iterations}")
    total = time.perf_counter() - start
    _check(result, iterations)
    return {
        "total_s": total,
        "per_iter_ms": total / iterations * 1000,
        "log_bytes": result.log_path.stat().st_size,
    }


def profile_replay(recording: str, iterations: int, log_dir: str, top: int = 12) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    replay_once(recording, iterations, log_dir)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    # Paths relative to the repository and the standard library, not to this machine.
    text = out.getvalue().replace(str(Path(__file__).resolve().parents[1]) + "/", "")
    text = text.replace(sysconfig.get_paths()["stdlib"] + "/", "<stdlib>/")
    lines = [line for line in text.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    return "\n".join(lines[start : start + top + 1])


def run(quick: bool = False) -> dict:
    iterations = 100 if quick else ITERATIONS
    repeats = 3
    with tempfile.TemporaryDirectory() as tmp:
        recording = str(Path(tmp) / "recording.jsonl")
        log_dir = str(Path(tmp) / "runs")
        with scripted_server(sub_latency=0.0, root_latency=0.0) as url:
            live_once(url, 5, log_dir)  # warm-up: imports
            live_once(url, iterations, log_dir, record=recording)
            live = [live_once(url, iterations, log_dir) for _ in range(repeats)]
        replay_once(recording, iterations, log_dir)  # warm-up
        replays = [replay_once(recording, iterations, log_dir) for _ in range(repeats)]
        profile = profile_replay(recording, iterations, log_dir)
    replay_ms = median([r["per_iter_ms"] for r in replays])
    live_ms = median([r["per_iter_ms"] for r in live])
    figures = [
        {
            "mode": "replay (trajectory written)",
            "iterations": iterations,
            "run_s": round(median([r["total_s"] for r in replays]), 4),
            "per_iteration_ms": round(replay_ms, 3),
            "trajectory_bytes": replays[0]["log_bytes"],
        },
        {
            "mode": "live scripted server, 0 latency, minus LM time",
            "iterations": iterations,
            "run_s": round(median([r["total_s"] for r in live]), 4),
            "lm_s": round(median([r["lm_s"] for r in live]), 4),
            "per_iteration_ms": round(live_ms, 3),
            "lm_call_ms_turns_1_10": round(median([r["first10_lm_ms"] for r in live]), 2),
            "lm_call_ms_last_10_turns": round(median([r["last10_lm_ms"] for r in live]), 2),
        },
    ]
    return {
        "name": "overhead",
        "description": f"scaffold time per root iteration over {iterations} iterations of trivial code",
        "figures": figures,
        "targets": [
            target("overhead per iteration (replay)", round(replay_ms, 3), TARGET_MS, unit="ms"),
            target(
                "overhead per iteration (live, minus LM latency)", round(live_ms, 3), TARGET_MS, unit="ms"
            ),
        ],
        "profile_replay_tottime": profile,
        "notes": [
            f"median of {repeats} runs; replay includes the trajectory JSONL written event by event",
            "lm_call_ms_*: mean root-call time at 0 server latency, early vs late turns; its growth with the "
            "history is client CPU inside the LM call (not counted in per_iteration_ms)",
        ],
    }


if __name__ == "__main__":
    main("overhead", run)
