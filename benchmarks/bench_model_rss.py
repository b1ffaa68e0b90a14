"""Model memory: two notebook kernels and an eval worker on the local model load it once.

Three client processes start at once (``--child``): two stand for Jupyter kernels and one for an
eval worker; each makes ``make_lm("local")`` (the bundled 0.5B model, the default settings), sends
one request and holds its client until told to go. Then the parent reads ``/proc`` for every
client and for the machine's server daemon: ``VmRSS``, ``Pss`` (``smaps_rollup``: shared pages
split between their users) and the resident size of the model file's mappings.

Two modes: ``machine`` (the default: one server per machine, :mod:`rlm_kernel.lm.machine_server`)
and, unless ``--quick``, ``process`` (``RLM_LOCAL_SERVER=process``: a server in each process), for
comparison. The servers run in a private folder of the benchmark's own with an idle timeout of 0,
so they stop with their last client.

Targets (machine mode): the model file is resident once in all the processes together (within
5 %), in one daemon; and the total RSS is at most the model file plus 600 MiB (the daemon's KV
cache and buffers, and three Python clients). One JSON line per mode is printed as well.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import main, target

ROLES = ("kernel-1", "kernel-2", "eval-worker")
MIB = 1024 * 1024
OVERHEAD_LIMIT_MIB = 600


def _status_kb(pid: int, fields: tuple[str, ...]) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            name = line.split(":", 1)[0]
            if name in fields:
                out[name] = int(line.split()[1])
    return out


def _pss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("Pss:"))


def _mapped_kb(pid: int, path: Path) -> int:
    """Resident kB of ``path``'s mappings in process ``pid``."""
    total, current = 0, ""
    with open(f"/proc/{pid}/smaps") as fh:
        for line in fh:
            fields = line.split()
            if "-" in fields[0] and not fields[0].endswith(":"):
                current = fields[-1] if len(fields) >= 6 else ""
            elif fields[0] == "Rss:" and current == str(path):
                total += int(fields[1])
    return total


def child(role: str) -> None:
    """A client: one request through ``make_lm("local")``; report, then hold on until stdin closes."""
    from rlm_kernel.lm import make_lm

    lm = make_lm("local")

    async def ask() -> str:
        try:
            reply = await lm.complete([{"role": "user", "content": f"Say hi to {role}."}], max_tokens=8)
        finally:
            await lm.aclose()
        return reply.text

    text = asyncio.run(ask())
    daemon = None
    if os.environ.get("RLM_LOCAL_SERVER", "machine") == "machine":
        from rlm_kernel import models
        from rlm_kernel.lm import machine_server

        daemon = machine_server.lease(models.fetch(progress=False), n_ctx=8192).pid  # this process's lease
    print(json.dumps({"role": role, "pid": os.getpid(), "daemon": daemon, "reply": text}), flush=True)
    sys.stdin.read()


def measure(mode: str, model: Path, run_dir: str) -> dict:
    env = {
        **os.environ,
        "RLM_LOCAL_SERVER": mode,
        "RLM_LOCAL_SERVER_DIR": run_dir,
        "RLM_LOCAL_SERVER_IDLE": "0",
    }
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--child", role],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for role in ROLES
    ]
    try:
        reports = []
        for proc in procs:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if not line:
                raise RuntimeError(f"a client failed: {proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]
            reports.append(json.loads(line))
        daemons = {r["daemon"] for r in reports if r["daemon"] is not None}
        rows = [(r["role"], r["pid"]) for r in reports] + [("daemon", pid) for pid in sorted(daemons)]
        processes = []
        for role, pid in rows:
            status = _status_kb(pid, ("VmRSS", "RssAnon", "RssFile"))
            processes.append(
                {
                    "process": role,
                    "rss_MiB": round(status["VmRSS"] / 1024, 1),
                    "anon_MiB": round(status["RssAnon"] / 1024, 1),
                    "pss_MiB": round(_pss_kb(pid) / 1024, 1),
                    "model_resident_MiB": round(_mapped_kb(pid, model) / 1024, 1),
                }
            )
    finally:
        for proc in procs:
            if proc.stdin:
                proc.stdin.close()
        for proc in procs:
            proc.wait(timeout=120)
            for stream in (proc.stdout, proc.stderr):
                if stream:
                    stream.close()
    model_mb = model.stat().st_size / MIB
    resident = sum(p["model_resident_MiB"] for p in processes)
    return {
        "bench": "model_rss",
        "mode": mode,
        "model_file_MiB": round(model_mb, 1),
        "processes": len(processes),
        "daemons": len(daemons),
        "total_rss_MiB": round(sum(p["rss_MiB"] for p in processes), 1),
        "total_pss_MiB": round(sum(p["pss_MiB"] for p in processes), 1),
        "model_resident_MiB": round(resident, 1),
        "model_copies_by_rss": round(resident / model_mb, 2),
        "processes_with_model": sum(p["model_resident_MiB"] > 0 for p in processes),
        "per_process": processes,
    }


def run(quick: bool = False) -> dict:
    from rlm_kernel import models

    model = models.model_path()
    if model is None:
        return {
            "name": "model_rss",
            "skipped": "the bundled model is not fetched: python -m rlm_kernel.models fetch",
        }
    model = model.resolve()
    results = {}
    for mode in ("machine",) if quick else ("machine", "process"):
        with tempfile.TemporaryDirectory(prefix="rlm-run-", dir="/tmp") as run_dir:
            results[mode] = measure(mode, model, run_dir)
        line = {k: v for k, v in results[mode].items() if k != "per_process"}
        print(json.dumps(line), flush=True)
    machine = results["machine"]
    figures = [{k: v for k, v in r.items() if k not in ("bench", "per_process")} for r in results.values()]
    figures += [{"mode": r["mode"], **p} for r in results.values() for p in r["per_process"]]
    notes = [
        "RSS counts the model file's pages in each process that maps them; PSS splits shared pages "
        "between them. In process mode the mapped weights are shared through the page cache (PSS), "
        "but each process holds its own KV cache and buffers (anon) and competes for the cores."
    ]
    return {
        "name": "model_rss",
        "description": "two kernels and an eval worker on the local model: memory of all processes",
        "figures": figures,
        "targets": [
            target(
                "model file resident, all processes together", machine["model_copies_by_rss"], 1.05, unit="x"
            ),
            target("processes holding the model (machine mode)", machine["processes_with_model"], 1),
            target(
                "total RSS minus the model file (machine mode)",
                round(machine["total_rss_MiB"] - machine["model_file_MiB"], 1),
                OVERHEAD_LIMIT_MIB,
                unit="MiB",
            ),
        ],
        "notes": notes,
    }


if __name__ == "__main__":
    if "--child" in sys.argv:
        parser = argparse.ArgumentParser()
        parser.add_argument("--child", choices=ROLES, required=True)
        child(parser.parse_args().child)
    else:
        main("model_rss", run)
