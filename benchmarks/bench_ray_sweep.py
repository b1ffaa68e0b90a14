"""Ray sweep scaling: rollouts per second of an eval sweep on ``RayRunner`` at 1, 2, 4 and 8 workers.

Each point runs the jobs of a real sweep (``jobs_for``: S-NIAH at 4K tokens, test split, the ``rlm``
method, ``executor="local"``) through ``RayRunner(workers=N, rollouts_per_worker=K).run``, the call
``rlm_kernel.eval.run(..., runner=...)`` makes, into a fresh results folder. Two backends:

``--backend scripted`` (the default). The LM is the scripted server (``tests/scripted_server.py``, a
real HTTP server speaking the OpenAI API, in a subprocess) with this file as its script: every root
reply comes after a fixed latency (0.5 s by default), so rollouts are latency-bound, not CPU-bound.
The scripted root answers in 2 turns: turn 1 searches ``context`` for the needle and prints it, turn 2
commits it. Every row must score 1.0 in 2 iterations with no error, or the point is reported as failed.
Target: at N workers, the rate is at least 0.8 x N x the rate at 1 worker.

``--backend local``: the bundled 0.5B model (``backend="local"``, ``qwen2.5-coder-0.5b``) at 1 and 2
workers, every actor a client of the one machine-wide llama.cpp server (``rlm_kernel.lm.machine_server``).
The benchmark gives that server a private folder of its own (``$RLM_LOCAL_SERVER_DIR``: a fresh 0700
folder under /tmp; ``RLM_LOCAL_SERVER_IDLE=0``), set in its environment before ``ray.init`` and in the
job's ``runtime_env``, so the actors find it; the driver leases the server first (starting the daemon and
loading the model before any point) and holds it to the end, when the daemon stops with its last lease.
Once per point, when both the steady window has started and half the rollouts have reached the driver,
it reads /proc once (in a thread, no polling): the processes whose cmdline has ``rlm_kernel.models`` and
``serve`` (server daemons), those that map a ``.gguf`` file (model copies), and the leases the daemon
holds (its log). Counted are the benchmark's processes (its descendants, and any naming its server
folder); the machine's totals, other users' servers included, are reported beside them. Target: exactly
one process holds the model at every point. The rate is bound by the one server (on 2 cores), so the
ratio to 1 worker is reported with no target; so are the mean score and the rows with an error.

The cluster is a local Ray instance the benchmark starts once (``ray.init(address="local",
num_cpus=..., include_dashboard=False)``: a new one even where another cluster runs on this machine)
and shuts down at the end; the runner sees it running, so each point creates and kills only its own
actors. Each point runs ``--waves`` rollouts per slot (slots = N x K), so every point lasts about as
long and the steady state is most of it.

Figure: the steady-state rate. Its window starts when the last slot's first rollout ends (every
actor is up and has done its first-use imports: actor start-up is excluded, and reported as
``actor_startup_s``) and ends when the queue runs dry (the (total - slots)-th completion: after it
slots only drain). Each rollout counts for the fraction of its run (``wall_s``, ending when the
driver got its row) inside the window, so the gaps between rollouts in a slot (the round trip
through the driver, the results file, the Ray call) count against the rate. Also reported: the
end-to-end rate (start-up and drain included), the slot bound (slots / median rollout time: the rate
if slots never idled), and the CPU the benchmark's processes and the whole machine used in the window.

    python benchmarks/bench_ray_sweep.py                    # 1,2,4,8 workers: 1.5-2 minutes on 2 cores
    python benchmarks/bench_ray_sweep.py --quick            # 1,2,4 workers, fewer waves
    python benchmarks/bench_ray_sweep.py --workers 1,8 --rollouts-per-worker 2 --latency 1.0 --waves 8
    python benchmarks/bench_ray_sweep.py --backend local    # 1,2 workers, 1 rollout each, the 0.5B model

Prints one JSON line with the figures and writes them under the key ``ray_sweep`` (``ray_sweep_local``
with ``--backend local``) of ``--out`` (default ``benchmarks/ray_sweep.json``; other keys of that file
are kept). Needs Ray (``pip install "rlm-kernel[ray]"``); the local backend, xllamacpp and the model.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import pickle
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
from _common import format_result, machine_info, median, target

OUT = Path(__file__).resolve().parent / "ray_sweep.json"
TARGET = 0.8  # of linear
FAMILY, SPLIT, LENGTH = "sniah", "test", "4k"
KEYS = {"scripted": "ray_sweep", "local": "ray_sweep_local"}  # the --out key (and name) per backend
LOCAL_MODEL = "qwen2.5-coder-0.5b"
# Per backend: the worker counts, rollouts per worker and waves when not given.
DEFAULTS = {"scripted": ([1, 2, 4, 8], 2, 8), "local": ([1, 2], 1, 4)}

# ------------------------------------------------------------------ the server's script
# The scripted server loads this file (``--script``) and calls ``responder``; the benchmark never does.

_ANSWERS: dict[str, list[tuple[str, str]]] | None = None
_ANSWERS_LOCK = threading.Lock()


def _answers() -> dict[str, list[tuple[str, str]]]:
    """question -> [(how the root's first turn describes the context, the answer)] of the sweep's tasks
    (questions repeat across tasks; question and description together do not)."""
    global _ANSWERS
    with _ANSWERS_LOCK:
        if _ANSWERS is None:
            from rlm_kernel.eval.tasks import TaskRef, generate, parse_length
            from rlm_kernel.prompts import context_metadata, describe_context

            answers: dict[str, list[tuple[str, str]]] = {}
            for i in range(int(os.environ["RAY_SWEEP_TASKS"])):
                task = generate(TaskRef(FAMILY, SPLIT, parse_length(LENGTH), i))
                described = describe_context(context_metadata(task.context))
                answers.setdefault(task.question, []).append((described, str(task.answer)))
            _ANSWERS = answers
    return _ANSWERS


def responder(request: Any) -> Any:
    """Root: turn 1 finds the needle and prints it (an answer must be in what the code printed), turn 2
    commits it. Sub-calls (none are made) answer ``ok``. Every reply after ``RAY_SWEEP_LATENCY`` s."""
    from scripted_server import Reply

    latency = float(os.environ.get("RAY_SWEEP_LATENCY", "0.5"))
    if not request.is_root:
        return Reply(text="ok", delay=latency)
    text = request.text
    answer = "unknown task"
    for question, candidates in _answers().items():
        if question in text:
            answer = next((a for described, a in candidates if described in text), candidates[0][1])
            break
    quoted = json.dumps(answer)
    if sum(1 for m in request.messages if m["role"] == "assistant") == 0:
        code = f"text = str(context)\nat = text.find({quoted})\nprint(at, text[max(0, at - 80) : at + 40])"
    else:
        code = f"FINAL({quoted})"
    return Reply(text=f"```repl\n{code}\n```", delay=latency)


# ------------------------------------------------------------------ the benchmark


def scripted_server(latency: float, tasks: int) -> contextlib.AbstractContextManager[str]:
    """The scripted server in a subprocess with this file as its script; yields its /v1 URL."""
    env = {"RAY_SWEEP_LATENCY": str(latency), "RAY_SWEEP_TASKS": str(tasks)}
    return _common.scripted_server(script=Path(__file__), env=env)


# ------------------------------------------------------------------ the local backend's one server


class LocalServer:
    """The machine server of the local backend, in a private folder of the benchmark's own.

    Entered, it makes a fresh 0700 folder under /tmp (a short path: the server's UNIX socket lives in
    it) and sets ``RLM_LOCAL_SERVER_DIR`` to it, ``RLM_LOCAL_SERVER_IDLE=0`` and
    ``RLM_LOCAL_SERVER=machine`` in this process's environment, which the Ray processes started after
    inherit (:attr:`env` also goes into the job's ``runtime_env``). :meth:`hold` leases the server as
    a rollout does. Left, it closes the lease, waits for the daemon to stop (its last lease gone: idle
    timeout 0), ends it if it does not, restores the environment and removes the folder."""

    def __init__(self) -> None:
        self.folder = Path()
        self.env: dict[str, str] = {}
        self.lease: Any = None
        self.start_s: float | None = None
        self.stop: dict[str, Any] = {}
        self._saved: dict[str, str | None] = {}

    def __enter__(self) -> LocalServer:
        from rlm_kernel.lm import machine_server

        self.folder = Path(tempfile.mkdtemp(prefix="rsw-", dir="/tmp"))
        self.folder.chmod(0o700)
        self.env = {machine_server.DIR_VAR: str(self.folder), machine_server.IDLE_VAR: "0"}
        self.env[machine_server.MODE_VAR] = "machine"
        for name, value in self.env.items():
            self._saved[name] = os.environ.get(name)
            os.environ[name] = value
        return self

    def hold(self, settings: Any) -> None:
        """Lease the server of the sweep's LM through ``make_lm``, as a rollout does: the daemon starts
        and loads the model now, and stays up between points (whose actors come and go) to the end."""
        from rlm_kernel import models
        from rlm_kernel.lm import machine_server, make_lm

        backend, kwargs, model = settings.rlm.lm_kwargs("root")
        started = time.perf_counter()
        lm = make_lm(backend, kwargs, model=model)
        self.start_s = round(time.perf_counter() - started, 2)
        # The Lease make_lm took (one per process and key): asking again returns it, if the key is its.
        path = models.fetch(LOCAL_MODEL, progress=False)
        key = machine_server.ServerKey.of(path, n_ctx=lm.context_window or 0)
        if not key.paths(self.folder)[0].exists():
            raise RuntimeError(f"no server socket for {key} in {self.folder}: the lease is another key's")
        self.lease = machine_server.lease(path, n_ctx=key.n_ctx)

    def leases_held(self) -> int | None:
        """The leases the daemon holds, from the last line of its log about one (None before any)."""
        if self.lease is None:
            return None
        try:
            text = Path(self.lease.log).read_text(errors="replace")
        except OSError:
            return None
        held = re.findall(r"lease (?:opened|closed) \((\d+) held\)", text)
        return int(held[-1]) if held else None

    def __exit__(self, *exc_info: object) -> None:
        from rlm_kernel.lm import machine_server

        pid = self.lease.pid if self.lease is not None else None
        machine_server.close_leases()
        if pid is not None:
            started = time.perf_counter()
            gone = _wait_gone(pid, 30.0)
            self.stop = {"daemon_stopped_s": round(time.perf_counter() - started, 2), "on_its_own": gone}
            if not gone:  # the daemon this benchmark started, by its id
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
                self.stop["terminated"] = _wait_gone(pid, 10.0)
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(self.folder, ignore_errors=True)


def _wait_gone(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` ended (or is a zombie) within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def count_servers(folder: Path) -> dict[str, Any]:
    """One read of /proc: the llama.cpp server daemons (cmdline has ``rlm_kernel.models`` and ``serve``)
    and the model copies (processes mapping a ``.gguf`` file), of this benchmark (this process's
    descendants, and any process whose cmdline names ``folder``) and of the whole machine."""
    parents: dict[int, int] = {}
    daemons, naming = set(), set()
    mapped: dict[int, set[str]] = {}  # pid -> the .gguf files it maps
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            parents[pid] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        try:
            maps = (entry / "maps").read_bytes()
        except OSError:  # gone, or another user's to read
            maps = b""
        if "rlm_kernel.models" in cmdline and "serve" in cmdline:
            daemons.add(pid)
        if str(folder) in cmdline:
            naming.add(pid)
        if b".gguf" in maps:
            lines = (line.split(maxsplit=5) for line in maps.splitlines() if b".gguf" in line)
            mapped[pid] = {fields[-1].decode(errors="replace") for fields in lines if len(fields) == 6}
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    mine, todo = {os.getpid()}, [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in mine:
                mine.add(child)
                todo.append(child)
    mine |= naming
    models = sorted(pid for pid in mapped if pid in mine)
    return {
        "server_daemons": len(daemons & mine),
        "model_copies": len(models),
        "server_daemons_machine": len(daemons),
        "model_copies_machine": len(mapped),
        "daemon_pids": sorted(daemons & mine),
        "model_pids": models,
        "model_files": sorted({f for pid in models for f in mapped[pid]}),
    }


def _busy_jiffies() -> tuple[int, int]:
    """(busy, total) CPU jiffies of the whole machine, every process (other users' too)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


class CpuMeter:
    """Samples, every ``every`` s in a thread: the CPU seconds of this process and everything under it
    (the server, Ray's GCS and raylet, the raylet's workers: the actors), and the whole machine's busy
    jiffies. Per process, so one that exits (a killed actor) keeps what it used up to its last sample.
    The benchmark's own CPU is None without psutil."""

    def __init__(self, every: float = 0.5) -> None:
        self.every = every
        self.samples: list[tuple[float, float | None, int, int]] = []  # (time, own CPU s, busy, total)
        self._seen: dict[tuple[int, float], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-meter", daemon=True)

    def _own(self) -> float | None:
        try:
            import psutil
        except ImportError:
            return None
        me = psutil.Process()
        for proc in [me, *me.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                self._seen[(proc.pid, proc.create_time())] = times.user + times.system
        return sum(self._seen.values())

    def sample(self) -> None:
        self.samples.append((time.perf_counter(), self._own(), *_busy_jiffies()))

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def __enter__(self) -> CpuMeter:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def between(self, start: float, stop: float) -> dict[str, float | None]:
        """Cores the benchmark's processes used, and the machine's busy fraction, from the samples
        closest inside [start, stop] (None where fewer than two samples fall in it)."""
        inside = [s for s in self.samples if start - 1e-9 <= s[0] <= stop + 1e-9]
        if len(inside) < 2:
            return {"own_cpu_cores": None, "machine_cpu_busy": None}
        (t0, own0, busy0, total0), (t1, own1, busy1, total1) = inside[0], inside[-1]
        own = round((own1 - own0) / (t1 - t0), 3) if own0 is not None and own1 is not None else None
        return {"own_cpu_cores": own, "machine_cpu_busy": round((busy1 - busy0) / max(1, total1 - total0), 3)}


def steady_state(done: list[tuple[str, float, float]], first: set[str], slots: int) -> dict[str, Any]:
    """The steady-state window and rate of one point. ``done``: (task id, end, wall_s) per row, ends
    on the driver's clock; ``first``: the task ids of the first ``slots`` jobs (each slot's first)."""
    runs = [(task_id, end - wall, end) for task_id, end, wall in done]
    ends_of_first = [end for task_id, _, end in runs if task_id in first]
    ends = sorted(end for _, _, end in runs)
    if len(ends_of_first) < slots or len(ends) <= slots:
        return {"rate": None, "why": "fewer rollouts than two per slot"}
    up = max(ends_of_first)
    dry = ends[len(ends) - slots - 1]
    if dry <= up:
        return {"rate": None, "why": "the queue ran dry before every actor was up: raise --waves"}
    credit = sum(
        max(0.0, min(end, dry) - max(start, up)) / (end - start) for _, start, end in runs if end > start
    )
    return {"rate": credit / (dry - up), "up": up, "dry": dry, "rollouts_in_window": credit}


def check_rows(rows: list[Any]) -> list[str]:
    """What is wrong with a point's rows: each must score 1.0 in 2 iterations (2 root calls), no error."""
    problems = []
    for row in rows:
        if row.error or row.crashed or row.score != 1.0 or row.iterations != 2 or row.calls != 2:
            what = f"score={row.score} iterations={row.iterations} calls={row.calls} error={row.error!r}"
            problems.append(f"{row.task_id}: {what}")
    return problems


def check_local_rows(rows: list[Any]) -> list[str]:
    """What is wrong with a point's rows on the local model: a crashed rollout (a wrong answer, or an
    error the model's run ended with, is the model's: counted, not a failure of the point)."""
    return [f"{row.task_id}: crashed: {row.error!r}" for row in rows if row.crashed]


def make_clock(total: int, first: set[str] | None = None, probe: Callable[[], Any] | None = None) -> Any:
    """A Progress that notes when each row reaches the driver (``RayRunner`` calls it as it stores one).
    With ``probe``: once every task in ``first`` (each slot's first) has arrived, and half the rows
    (the steady window has started, mid-point), it runs ``probe`` once, in a thread (the driver's loop
    goes on submitting); its result is ``probed`` (time, value) after :meth:`join`."""
    from rlm_kernel.eval.runners import Progress

    class Clock(Progress):
        def __init__(self) -> None:
            super().__init__(total, enabled=False)
            self.arrivals: list[tuple[float, Any]] = []
            self.probed: tuple[float, Any] | None = None
            self._waiting = set(first or ())
            self._thread: threading.Thread | None = None

        def finished(self, row: Any) -> None:
            if row is not None:
                self.arrivals.append((time.perf_counter(), row))
                self._waiting.discard(row.task_id)
                if probe is not None and self._thread is None and not self._waiting:
                    if 2 * len(self.arrivals) >= total:
                        self._thread = threading.Thread(target=self._probe, name="probe", daemon=True)
                        self._thread.start()
            super().finished(row)

        def _probe(self) -> None:
            assert probe is not None
            at = time.perf_counter()
            self.probed = (at, probe())

        def join(self) -> None:
            if self._thread is not None:
                self._thread.join()

    return Clock()


async def one_point(
    workers: int,
    per_worker: int,
    jobs: list[Any],
    settings: Any,
    out: Path,
    check: Callable[[list[Any]], list[str]] = check_rows,
    probe: Callable[[], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One point: ``jobs`` through ``RayRunner(workers, per_worker)``; its rows must pass ``check``.
    ``probe`` (the local backend's count of servers) runs once, mid-point (:func:`make_clock`)."""
    from rlm_kernel.eval.results import ResultsDir
    from rlm_kernel.eval.runners import RayRunner

    slots = workers * per_worker
    runner = RayRunner(workers=workers, rollouts_per_worker=per_worker)
    first = {job.task_id for job in jobs[:slots]}
    store, clock = ResultsDir(out), make_clock(len(jobs), first, probe)
    driver0 = time.process_time()
    with CpuMeter() as meter:
        started = time.perf_counter()
        await runner.run(jobs, settings, store, clock)
        finished = time.perf_counter()
    clock.join()
    rows = [row for _, row in clock.arrivals]
    done = [(row.task_id, at, row.wall_s) for at, row in clock.arrivals]
    steady = steady_state(done, first, slots)
    rate = steady["rate"]
    walls = [row.wall_s for row in rows]
    elapsed = finished - started
    point = {
        "workers": workers,
        "slots": slots,
        "rollouts": len(rows),
        "rollouts_per_s": round(rate, 3) if rate is not None else None,
        "end_to_end_rollouts_per_s": round(len(rows) / elapsed, 3),
        # From the call to the end of the last slot's first rollout (actors up, first-use imports done).
        "actor_startup_s": round(steady["up"] - started, 2) if rate is not None else None,
        "window_s": round(steady["dry"] - steady["up"], 2) if rate is not None else None,
        "point_s": round(elapsed, 2),
        "rollout_wall_s_median": round(median(walls), 3) if walls else None,
        # The rate if slots never idled between rollouts: slots / the median rollout time.
        "slot_bound_rollouts_per_s": round(slots / median(walls), 3) if walls else None,
        "driver_cpu_s": round(time.process_time() - driver0, 2),
        # CPU in the steady-state window: cores of the benchmark's own processes (driver, server, Ray,
        # actors), and the whole machine's busy fraction (other users' processes too); then the same
        # over the whole point, actor start-up included.
        **(meter.between(steady["up"], steady["dry"]) if rate is not None else {}),
        **{f"{k}_whole_point": v for k, v in meter.between(started, finished).items()},
    }
    scores = [row.score for row in rows]
    point["mean_score"] = round(sum(scores) / len(scores), 3) if scores else None
    errors = [str(row.error) for row in rows if row.error]
    point["rows_with_error"] = len(errors)
    if errors:  # the model's (a timeout, the iterations spent) or the server's: a few, to tell which
        point["error_samples"] = sorted({e[:200] for e in errors})[:3]
    if probe is not None:
        if clock.probed is None:  # the point ended first (a failed one): counted after it, actors gone
            clock.probed = (time.perf_counter(), probe())
        at, counts = clock.probed
        point["servers"] = {
            **counts,
            "sampled_at_s": round(at - started, 2),
            "in_window": rate is not None and steady["up"] <= at <= steady["dry"],
        }
    if rate is None:
        point["why"] = steady["why"]
    problems = check(rows)
    if len(rows) != len(jobs):
        problems.append(f"{len(rows)} rows for {len(jobs)} jobs")
    if problems:
        point["bad_rows"] = problems[:5] + ([f"... {len(problems) - 5} more"] if len(problems) > 5 else [])
    return point


def serialization_per_rollout(settings: Any, job: Any, trajectories: str) -> dict[str, Any]:
    """What the driver pickles for each rollout it submits (the arguments of ``_RolloutWorker.run``)."""
    from ray import cloudpickle

    args = (job.task, job.method, settings, trajectories)
    start, times = time.perf_counter(), 200
    for _ in range(times):
        size = len(cloudpickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL))
    return {"bytes": size, "us": round((time.perf_counter() - start) / times * 1e6, 1)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import ray

    from rlm_kernel.eval import Settings
    from rlm_kernel.eval.sweep import jobs_for

    counts, per_worker, waves = args.workers, args.rollouts_per_worker, args.waves
    tasks = max(counts) * per_worker * waves
    local = args.backend == "local"
    points: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        check: Callable[[list[Any]], list[str]] = check_rows
        probe: Callable[[], dict[str, Any]] | None = None
        init_kwargs: dict[str, Any] = {}
        if local:
            server = stack.enter_context(LocalServer())
            settings = Settings(
                backend="local",
                model_name=LOCAL_MODEL,
                executor="local",
                max_timeout=args.max_timeout,
            )
            server.hold(settings)  # the daemon starts and loads the model, before Ray and any point
            served: dict[str, Any] = {
                "start_s": server.start_s,
                "pid": server.lease.pid,
                "folder": str(server.folder),
                "before_ray": count_servers(server.folder),
            }

            def probe() -> dict[str, Any]:
                return {**count_servers(server.folder), "server_leases": server.leases_held()}

            check = check_local_rows
            # The actors' environment: Ray's processes inherit this process's (set above), and the
            # job's runtime_env sets it again in every worker.
            init_kwargs["runtime_env"] = {"env_vars": dict(server.env)}
        else:
            url = stack.enter_context(scripted_server(args.latency, tasks))
            settings = Settings(
                backend="openai",
                model_name="scripted",
                backend_kwargs={"base_url": url, "api_key": "test"},
                executor="local",
                max_iterations=4,
                max_timeout=120.0,
            )
        jobs = jobs_for([FAMILY], [LENGTH], ["rlm"], split=SPLIT, n=tasks)
        started = time.perf_counter()
        ray.init(
            address="local",
            num_cpus=args.num_cpus,
            include_dashboard=False,
            log_to_driver=False,
            object_store_memory=args.object_store_mb * 1024 * 1024,
            **init_kwargs,
        )
        ray_init_s = time.perf_counter() - started
        try:
            if args.warmup:
                # Warm-up, not measured: the server builds its answers (or its prompt cache), the
                # driver imports, Ray's pool starts.
                warm_out = Path(tmp) / "warm"
                warm = asyncio.run(one_point(1, per_worker, jobs[:per_worker], settings, warm_out, check))
                if warm.get("bad_rows"):
                    raise RuntimeError(f"warm-up rollouts went wrong: {warm['bad_rows']}")
            for repeat in range(args.repeats):
                for n in counts:
                    count = n * per_worker * waves
                    out = Path(tmp) / f"w{n}-r{repeat}"
                    point = asyncio.run(one_point(n, per_worker, jobs[:count], settings, out, check, probe))
                    point["repeat"] = repeat
                    if "servers" in point:
                        point["servers"]["leases_expected"] = n + 1  # the driver's and each actor's
                    points.append(point)
                    print(f"ray sweep: {json.dumps(point)}", file=sys.stderr, flush=True)
        finally:
            ray.shutdown()
        wire = serialization_per_rollout(settings, jobs[0], str(Path(tmp) / "trajectories"))
    if not local:
        return summarise(args, points, ray_init_s, wire)
    # The folder is gone and the lease closed: the daemon stopped with its last lease (or was ended).
    served.update(server.stop, after=count_servers(server.folder))
    return summarise_local(args, points, ray_init_s, wire, served)


def _median_of(points: list[dict[str, Any]], key: str) -> float | None:
    values = [p[key] for p in points if p.get(key) is not None]
    return median(values) if values else None


def summarise(
    args: argparse.Namespace, points: list[dict[str, Any]], ray_init_s: float, wire: dict[str, Any]
) -> dict[str, Any]:
    def rate_of(n: int) -> float | None:
        rates = [p["rollouts_per_s"] for p in points if p["workers"] == n and p["rollouts_per_s"] is not None]
        return median(rates) if rates else None

    one = rate_of(1)
    figures, targets = [], []
    for n in args.workers:
        mine = [p for p in points if p["workers"] == n]
        rate = rate_of(n)
        linear = round(rate / (n * one), 3) if rate is not None and one else None
        figures.append(
            {
                "workers": n,
                "rollouts_per_s": round(rate, 3) if rate is not None else None,
                "linear_ratio": linear,
                "end_to_end_rollouts_per_s": median([p["end_to_end_rollouts_per_s"] for p in mine]),
                "rollouts": mine[0]["rollouts"],
                "actor_startup_s": _median_of(mine, "actor_startup_s"),
                "own_cpu_cores": _median_of(mine, "own_cpu_cores"),
                "machine_cpu_busy": _median_of(mine, "machine_cpu_busy"),
                "rows_ok": not any(p.get("bad_rows") for p in mine),
            }
        )
        if n > 1:
            targets.append(
                target(
                    f"{n} workers: rate / ({n} x rate at 1)", linear, TARGET, unit="x", lower_is_better=False
                )
            )
    bad = [p for p in points if p.get("bad_rows") or p["rollouts_per_s"] is None]
    return {
        "name": "ray_sweep",
        "description": (
            f"RayRunner sweep of {FAMILY} {LENGTH} rlm rollouts (executor local, 2 root turns of "
            f"{args.latency:g} s each), {args.rollouts_per_worker} rollouts per worker, "
            f"{args.waves} per slot"
        ),
        "measure": (
            "steady-state window: from the end of the last slot's first rollout (every actor up and warm; "
            "actor start-up excluded) to the completion after which the queue is empty (drain excluded); "
            "each rollout counts for the fraction of its run inside the window"
        ),
        "target": f"rollouts/s at N >= {TARGET} x N x rollouts/s at 1",
        "figures": figures,
        "targets": targets,
        "passed": all(t["passed"] for t in targets) and not bad,
        "points": points,
        "settings": {
            "workers": args.workers,
            "rollouts_per_worker": args.rollouts_per_worker,
            "waves": args.waves,
            "latency_s": args.latency,
            "repeats": args.repeats,
            "ray_num_cpus": args.num_cpus,
            "task": f"{FAMILY} {LENGTH} {SPLIT}",
            "method": "rlm",
            "executor": "local",
        },
        "diagnostics": {"ray_init_s": round(ray_init_s, 2), "pickled_per_rollout": wire},
        "notes": [
            "own_cpu_cores: cores used by the benchmark's processes (driver, server, Ray, actors) in the "
            "steady-state window; machine_cpu_busy: the whole machine's busy fraction in it (other users' "
            "processes too, from /proc/stat); the points also give both over the whole point",
            "Ray binds its own node address, not 127.0.0.1 (ray.init resolves loopback to the machine's "
            "address); the cluster has this one node and is shut down at the end",
        ],
    }


def summarise_local(
    args: argparse.Namespace,
    points: list[dict[str, Any]],
    ray_init_s: float,
    wire: dict[str, Any],
    served: dict[str, Any],
) -> dict[str, Any]:
    def rate_of(n: int) -> float | None:
        rates = [p["rollouts_per_s"] for p in points if p["workers"] == n and p["rollouts_per_s"] is not None]
        return median(rates) if rates else None

    def most(mine: list[dict[str, Any]], key: str) -> int | None:
        values = [p["servers"][key] for p in mine if p.get("servers", {}).get(key) is not None]
        return max(values) if values else None

    one = rate_of(1)
    figures, targets = [], []
    for n in args.workers:
        mine = [p for p in points if p["workers"] == n]
        rate = rate_of(n)
        copies = [p["servers"]["model_copies"] for p in mine if "servers" in p]
        figures.append(
            {
                "workers": n,
                "rollouts_per_s": round(rate, 3) if rate is not None else None,
                "ratio_to_1_worker": round(rate / one, 3) if rate is not None and one else None,
                "end_to_end_rollouts_per_s": median([p["end_to_end_rollouts_per_s"] for p in mine]),
                "mean_score": _median_of(mine, "mean_score"),
                "rows_with_error": sum(p["rows_with_error"] for p in mine),
                "rollouts": mine[0]["rollouts"],
                "rollout_wall_s_median": _median_of(mine, "rollout_wall_s_median"),
                # The benchmark's processes at the mid-point read (the most over repeats).
                "server_daemons": most(mine, "server_daemons"),
                "model_copies": most(mine, "model_copies"),
                "server_leases": most(mine, "server_leases"),
                "server_daemons_machine": most(mine, "server_daemons_machine"),
                "model_copies_machine": most(mine, "model_copies_machine"),
                "actor_startup_s": _median_of(mine, "actor_startup_s"),
                "own_cpu_cores": _median_of(mine, "own_cpu_cores"),
                "machine_cpu_busy": _median_of(mine, "machine_cpu_busy"),
                "rows_ok": not any(p.get("bad_rows") for p in mine),
            }
        )
        # Exactly one process holds the model: the worst repeat (0 or 2 fail alike).
        worst = max(copies, key=lambda c: abs(c - 1)) if copies else None
        one_copy = target(f"{n} workers: processes holding the model", worst, 1, unit="processes")
        one_copy.update(op="==", passed=None if worst is None else worst == 1)
        targets.append(one_copy)
    bad = [p for p in points if p.get("bad_rows") or p["rollouts_per_s"] is None]
    return {
        "name": KEYS["local"],
        "description": (
            f"RayRunner sweep of {FAMILY} {LENGTH} rlm rollouts (executor local) on the bundled "
            f"{LOCAL_MODEL} model, every worker a client of the one machine server, "
            f"{args.rollouts_per_worker} rollouts per worker, {args.waves} per slot"
        ),
        "measure": (
            "steady-state window: from the end of the last slot's first rollout (every actor up and warm; "
            "actor start-up excluded) to the completion after which the queue is empty (drain excluded); "
            "each rollout counts for the fraction of its run inside the window; servers and model copies: "
            "one read of /proc per point, once the window has started and half the rows are in"
        ),
        "target": "exactly 1 process holds the model at every point; rate: reported, no target",
        "figures": figures,
        "targets": targets,
        "passed": all(t["passed"] for t in targets) and not bad,
        "points": points,
        "settings": {
            "backend": "local",
            "model": LOCAL_MODEL,
            "workers": args.workers,
            "rollouts_per_worker": args.rollouts_per_worker,
            "waves": args.waves,
            "warmup": args.warmup,
            "max_timeout_s": args.max_timeout,
            "repeats": args.repeats,
            "ray_num_cpus": args.num_cpus,
            "task": f"{FAMILY} {LENGTH} {SPLIT}",
            "method": "rlm",
            "executor": "local",
            "server_env": {"RLM_LOCAL_SERVER_IDLE": "0", "RLM_LOCAL_SERVER": "machine"},
        },
        "diagnostics": {"ray_init_s": round(ray_init_s, 2), "pickled_per_rollout": wire, "server": served},
        "notes": [
            "rollouts_per_s is bound by the one llama.cpp server (one slot, on this machine's cores): more "
            "workers queue on it, so ratio_to_1_worker has no linear target; the claim measured is that all "
            "workers share that one server (model_copies: 1 at every point)",
            "server_daemons / model_copies: the benchmark's processes (its descendants, or naming its server "
            "folder) whose cmdline has rlm_kernel.models and serve / that map a .gguf file, read once per "
            "point; the *_machine counts are every process on the machine (other users' servers too)",
            "server_leases: the leases the daemon held then (its log), expected workers + 1 (the driver "
            "holds one from the start, so the server stays up between points); mean_score: the model's "
            "score, 0 to 1, no target",
            "own_cpu_cores: cores used by the benchmark's processes (driver, server, Ray, actors) in the "
            "steady-state window; machine_cpu_busy: the whole machine's busy fraction in it (other users' "
            "processes too, from /proc/stat)",
        ],
    }


def write(out: Path, result: dict[str, Any], key: str = KEYS["scripted"]) -> None:
    """Put ``result`` under ``key`` of ``out``, keeping the file's other keys."""
    data: dict[str, Any] = {}
    if out.exists():
        with contextlib.suppress(ValueError):
            loaded = json.loads(out.read_text(encoding="utf-8"))
            data = loaded if isinstance(loaded, dict) else {}
    data[key] = result
    out.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")


def _counts(text: str) -> list[int]:
    counts = [int(x) for x in text.split(",") if x.strip()]
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("worker counts are positive integers, comma-separated")
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backend",
        choices=sorted(KEYS),
        default="scripted",
        help="the scripted server (default), or the bundled 0.5B model on the one machine server",
    )
    parser.add_argument(
        "--workers", type=_counts, help="worker counts, comma-separated (default 1,2,4,8; local: 1,2)"
    )
    parser.add_argument("--rollouts-per-worker", type=int, help="default 2; local: 1")
    parser.add_argument(
        "--waves", type=int, help="rollouts per slot (slots = workers x per worker; default 8, local: 4)"
    )
    parser.add_argument(
        "--latency", type=float, default=0.5, help="seconds before each root reply (scripted)"
    )
    parser.add_argument("--max-timeout", type=float, default=600.0, help="seconds per rollout (local)")
    parser.add_argument(
        "--warmup",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a first, unmeasured round of rollouts at 1 worker",
    )
    parser.add_argument("--repeats", type=int, default=1, help="runs of every point (the median is reported)")
    parser.add_argument("--num-cpus", type=int, default=os.cpu_count() or 1, help="ray.init(num_cpus=...)")
    parser.add_argument("--object-store-mb", type=int, default=256)
    parser.add_argument(
        "--quick", action="store_true", help="scripted: 1, 2 and 4 workers, 5 waves; local: 3"
    )
    parser.add_argument(
        "--out", type=Path, default=OUT, help="the JSON file (key ray_sweep; local: ray_sweep_local)"
    )
    args = parser.parse_args()
    workers, per_worker, waves = DEFAULTS[args.backend]
    args.workers = args.workers or workers
    args.rollouts_per_worker = args.rollouts_per_worker or per_worker
    args.waves = args.waves or waves
    if args.quick:
        limit = 4 if args.backend == "scripted" else 2
        args.workers = [n for n in args.workers if n <= limit] or [1]
        args.waves = min(args.waves, 5 if args.backend == "scripted" else 3)
    if 1 not in args.workers:
        args.workers = [1, *args.workers]  # the ratio is against 1 worker
    key = KEYS[args.backend]
    started = time.perf_counter()
    try:
        result = run(args)
    except Exception as exc:  # a broken benchmark still reports why
        import traceback

        result = {
            "name": key,
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
    result["wall_s"] = round(time.perf_counter() - started, 2)
    result["machine"] = machine_info()
    write(args.out, result, key)
    print(format_result(result), file=sys.stderr)
    print(
        json.dumps(
            {k: result.get(k) for k in ("name", "figures", "passed", "wall_s", "error") if k in result}
        )
    )
    return 0 if result.get("passed") else 1


if __name__ == "__main__":
    raise SystemExit(main())
