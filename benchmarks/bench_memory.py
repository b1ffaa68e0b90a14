"""Memory: a 200 MB string context costs its own size once, and never reaches the trajectory.

Each size runs in a fresh subprocess (``--child``) against the scripted server (a
subprocess shared by both, 0 latency). The root finds the needle in two steps
(``context.find`` and a slice) and answers with it. In the child:

* ``rss_before``: RSS after imports (``rlm_kernel``, ``openai``), before the context exists;
* the context is built (``"x" * n`` around a needle) and the peak-RSS mark is reset
  (``/proc/self/clear_refs``), so building it (which makes temporaries) is not counted;
* ``rss_context``: RSS with the context built;
* ``peak``: the kernel's peak-RSS mark (``VmHWM``) after the run; where the mark cannot be
  reset, a thread samples RSS every 2 ms instead.

Targets: ``peak - rss_before <= 1.25 x`` the context's size (the run copies nothing of
it), and the trajectory file for 200 MB within 1% of the one for 2 MB with the same script.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import main, scripted_server, target

NEEDLE = "MAGIC NUMBER IS 48151623"
SIZES = {"2 MB": 2_000_000, "200 MB": 200_000_000}
RSS_TARGET = 1.25
LOG_TARGET = 1.01


def _status() -> dict[str, int]:
    """VmRSS and VmHWM of this process, in bytes."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) * 1024
    return out


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    s = _status()
    return s["VmHWM"] <= s["VmRSS"] * 1.01


class _Sampler(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, _status()["VmRSS"])
            time.sleep(0.002)


def child(size: int, url: str, log_dir: str) -> dict:
    import openai  # noqa: F401 - imported before the baseline: libraries are not the run's cost

    from rlm_kernel import RLM

    rss_before = _status()["VmRSS"]
    half = (size - len(NEEDLE)) // 2
    context = "x" * half + NEEDLE + "x" * (size - len(NEEDLE) - half)
    context_bytes = sys.getsizeof(context)
    rss_context = _status()["VmRSS"]
    hwm = _reset_peak()
    sampler = None
    if not hwm:
        sampler = _Sampler()
        sampler.start()
    rlm = RLM("openai", {"model_name": "scripted", "base_url": url, "api_key": "test"}, log_dir=log_dir)
    start = time.perf_counter()
    result = rlm.completion(context, root_prompt="NEEDLE: what is the magic number?")
    run_s = time.perf_counter() - start
    if sampler is not None:
        sampler.stop.set()
        sampler.join()
        peak = sampler.peak
    else:
        peak = _status()["VmHWM"]
    if result.response != "48151623":
        raise RuntimeError(f"wrong answer {result.response!r} ({result.error})")
    return {
        "context_bytes": context_bytes,
        "rss_before": rss_before,
        "rss_context": rss_context,
        "peak": peak,
        "peak_method": "VmHWM after clear_refs" if hwm else "sampled every 2 ms",
        "run_s": run_s,
        "log_bytes": result.log_path.stat().st_size,
        "iterations": result.iterations,
    }


def run_child(size: int, url: str, log_dir: str) -> dict:
    cmd = [sys.executable, __file__, "--child", "--size", str(size), "--url", url, "--log-dir", log_dir]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"child for {size:,} chars failed: {proc.stderr.strip()[-1500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> dict:
    mb = 1024 * 1024
    figures, results = [], {}
    with scripted_server(sub_latency=0.0) as url, tempfile.TemporaryDirectory() as tmp:
        for label, size in SIZES.items():
            r = run_child(size, url, str(Path(tmp) / label.replace(" ", "")))
            results[label] = r
            added = r["peak"] - r["rss_before"]
            figures.append(
                {
                    "context": label,
                    "context_MiB": round(r["context_bytes"] / mb, 1),
                    "rss_before_MiB": round(r["rss_before"] / mb, 1),
                    "rss_with_context_MiB": round(r["rss_context"] / mb, 1),
                    "peak_MiB": round(r["peak"] / mb, 1),
                    "peak_minus_before_MiB": round(added / mb, 1),
                    "peak_over_context_MiB": round((r["peak"] - r["rss_context"]) / mb, 1),
                    "added/context": round(added / r["context_bytes"], 3),
                    "trajectory_bytes": r["log_bytes"],
                    "run_s": round(r["run_s"], 3),
                }
            )
    big, small = results["200 MB"], results["2 MB"]
    ratio = (big["peak"] - big["rss_before"]) / big["context_bytes"]
    log_ratio = big["log_bytes"] / small["log_bytes"]
    return {
        "name": "memory",
        "description": "peak RSS of a run over a 200 MB str context; trajectory size 2 MB vs 200 MB",
        "figures": figures,
        "targets": [
            target(
                "200 MB: (peak RSS - RSS before context) / context size",
                round(ratio, 3),
                RSS_TARGET,
                unit="x",
            ),
            target("trajectory bytes, 200 MB / 2 MB context", round(log_ratio, 4), LOG_TARGET, unit="x"),
        ],
        "notes": [
            f"peak measured as {big['peak_method']}; each size in a fresh process; "
            "2 MB row is informational (fixed costs such as the SDK client dominate there)"
        ],
    }


if __name__ == "__main__":
    if "--child" in sys.argv:
        parser = argparse.ArgumentParser()
        parser.add_argument("--child", action="store_true")
        parser.add_argument("--size", type=int, required=True)
        parser.add_argument("--url", required=True)
        parser.add_argument("--log-dir", required=True)
        a = parser.parse_args()
        print(json.dumps(child(a.size, a.url, a.log_dir)))
    else:
        main("memory", run)
