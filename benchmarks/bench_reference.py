"""Ours vs the reference package ``rlms`` 0.1.3 (module ``rlm``) on the same scripted run, end to end.

The root makes one 64-way ``llm_query_batched`` in a ```` ```repl ```` block, then answers
with ``answer["content"] = ...; answer["ready"] = True`` (the reference's completion
signal since 0.1.x; ours reads it too). The scripted server (a subprocess) delays
each sub-call 250 ms and answers root calls at once, as in the measurement in
``shared/REFERENCE.md`` (reference: 2.67 s end to end there).

Each package runs in a fresh process of its own virtualenv (the reference's in
``$RLMS_VENV``, default ``/tmp/rlms-venv``, created with ``pip install rlms==0.1.3`` when
missing). In each process the run is done twice: the first run pays lazy imports
(both packages import the ``openai`` SDK on first use), the second is warm. Timed:
``RLM(...)`` plus ``.completion(...)``. Ours is run with its default
``max_concurrency`` (32) and with 64; the reference's batch concurrency is fixed at 16
(``LMHandler(batch_max_concurrent=16)``, not exposed by ``RLM``).

If the reference cannot be installed or run, the benchmark is skipped with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH_DIR, main, median, scripted_server, target, timed

VENV = Path(os.environ.get("RLMS_VENV", "/tmp/rlms-venv"))
VERSION = "0.1.3"
FANOUT = 64
REPEATS = 3
RUNNER = BENCH_DIR / "_e2e_run.py"


def reference_python() -> tuple[Path | None, str]:
    """The reference venv's python, creating the venv if needed; (None, why) when impossible."""
    python = VENV / "bin" / "python"
    check = [str(python), "-c", "import importlib.metadata as m, rlm; print(m.version('rlms'))"]
    if python.exists():
        probe = subprocess.run(check, capture_output=True, text=True, timeout=120)
        if probe.returncode == 0:
            return python, probe.stdout.strip()
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", str(VENV)], check=True, capture_output=True, timeout=120
        )
        install = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"rlms=={VERSION}"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        return None, f"could not create {VENV}: {exc}"
    if install.returncode != 0:
        return None, f"pip install rlms=={VERSION} failed: {install.stderr.strip()[-800:]}"
    probe = subprocess.run(check, capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        return None, f"rlms installed but `import rlm` fails: {probe.stderr.strip()[-800:]}"
    return python, probe.stdout.strip()


def one_process(python: str, package: str, url: str, concurrency: int | None = None) -> dict:
    cmd = [
        python,
        str(RUNNER),
        "--package",
        package,
        "--base-url",
        url,
        "--fanout",
        str(FANOUT),
        "--runs",
        "2",
    ]
    if concurrency is not None:
        cmd += ["--max-concurrency", str(concurrency)]
    wall, proc = timed(lambda: subprocess.run(cmd, capture_output=True, text=True, timeout=180))
    if proc.returncode != 0:
        raise RuntimeError(f"{package} run failed (rc {proc.returncode}): {proc.stderr.strip()[-1500:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = f"{FANOUT} replies"
    if any(r != expected for r in data["responses"]):
        raise RuntimeError(f"{package} answered {data['responses']!r}, expected {expected!r}")
    return {"process_s": wall, "cold_s": data["runs_s"][0], "warm_s": data["runs_s"][1]}


def run(quick: bool = False) -> dict:
    python, info = reference_python()
    if python is None:
        return {"name": "reference", "skipped": info, "figures": [], "targets": []}
    repeats = 2 if quick else REPEATS
    arms = {
        f"reference rlms {info}": (str(python), "rlm", None),
        "ours (max_concurrency=32, default)": (sys.executable, "rlm_kernel", None),
        "ours (max_concurrency=64)": (sys.executable, "rlm_kernel", 64),
    }
    samples: dict[str, list[dict]] = {name: [] for name in arms}
    with scripted_server(sub_latency=0.25, root_latency=0.0) as url:
        for _ in range(repeats):
            for name, (py, package, concurrency) in arms.items():
                samples[name].append(one_process(py, package, url, concurrency))
    figures = []
    medians = {}
    for name, rows in samples.items():
        m = {key: median([r[key] for r in rows]) for key in ("process_s", "cold_s", "warm_s")}
        medians[name] = m
        figures.append({"arm": name, **{k: round(v, 3) for k, v in m.items()}})
    theirs = medians[next(iter(arms))]
    targets = []
    for name in list(arms)[1:]:
        ours = medians[name]
        for key in ("cold_s", "warm_s"):
            targets.append(
                target(
                    f"{name}: ours/reference, {key[:-2]} run",
                    round(ours[key] / theirs[key], 3),
                    1.0,
                    unit="x",
                )
            )
    return {
        "name": "reference",
        "description": f"root + one {FANOUT}-way llm_query_batched (250 ms each) + answer, end to end",
        "figures": figures,
        "targets": targets,
        "raw": samples,
        "notes": [
            f"median of {repeats} fresh processes per arm; cold = first run in the process (includes "
            "importing the openai SDK), warm = second run; process_s = whole process incl. interpreter start",
            "the reference runs a batch 16 at a time (fixed), ours max_concurrency at a time",
        ],
    }


if __name__ == "__main__":
    main("reference", run)
