"""Sweeps of rlm_kernel.eval against the scripted LM server, over real HTTP with the real SDK.

The scripted root answers each task with the expected answer, or a wrong one where a test wants
a miss, by looking the task up from its question; the plain model (``base``) always answers
"no idea". Covered: scores and files, resuming, a crashing rollout, Ctrl-C in the command line,
the Ray runner on a local cluster giving the same results as the local runner, the plots, and a
sweep started where an event loop already runs (a notebook).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from scripted_server import Reply, Request, ScriptedServer

from rlm_kernel import eval as rlm_eval
from rlm_kernel.eval.results import Row
from rlm_kernel.eval.tasks import TaskRef, generate
from rlm_kernel.prompts import context_metadata, describe_context

pytestmark = pytest.mark.sandbox  # the RLM rollouts run in sandboxed kernels, the harness's default

FAMILIES, LENGTHS, N = ["sniah", "records"], ["1k"], 2


def expected_answers() -> list[tuple[str, str, object]]:
    """(question, the line the root's first turn describes the context with, answer) of each task."""
    answers = []
    for family in FAMILIES:
        for length in (1024, 2048):
            for i in range(N):
                task = generate(TaskRef(family, "test", length, i))
                described = describe_context(context_metadata(task.context)).splitlines()[0]
                answers.append((task.question, described, task.answer))
    return answers


class Solver:
    """Root requests: FINAL(the expected answer), unless the question is in ``wrong``."""

    def __init__(self, *, delay: float = 0.0) -> None:
        self.answers = expected_answers()
        self.wrong: set[str] = set()
        self.delay = delay
        self.slow_after: int | None = None  # root requests answered quickly before the rest hang
        self.roots = 0

    def __call__(self, request: Request) -> Reply:
        if not request.is_root:
            return Reply(text="no idea")
        self.roots += 1
        question, _, answer = next(a for a in self.answers if a[0] in request.text and a[1] in request.text)
        answer = "wrong" if question in self.wrong else answer
        delay = 30.0 if self.slow_after is not None and self.roots > self.slow_after else self.delay
        return Reply(text=f"```repl\nFINAL({json.dumps(str(answer))})\n```", delay=delay)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(Solver()) as srv:
        yield srv


def settings(server: ScriptedServer) -> rlm_eval.Settings:
    return rlm_eval.Settings(
        backend="openai",
        model_name="gpt-4o-mini",
        backend_kwargs={"base_url": server.openai_base_url, "api_key": "sk-test"},
    )


def sweep(server: ScriptedServer, out: Path, **kwargs: object) -> rlm_eval.Results:
    return rlm_eval.run(
        FAMILIES,
        LENGTHS,
        ["rlm", "base"],
        split="test",
        n=N,
        out=out,
        settings=settings(server),
        progress=False,
        **kwargs,
    )


def test_a_sweep_scores_every_rollout_and_keeps_it(server: ScriptedServer, tmp_path: Path) -> None:
    solver: Solver = server.responder  # type: ignore[assignment]
    miss = next(q for q, _, _ in solver.answers if "tickets" in q)
    solver.wrong.add(miss)
    results = sweep(server, tmp_path)
    assert len(results) == 8
    by = {(r.task_id, r.method): r for r in results.rows}
    for (task_id, method), row in by.items():
        if method == "base":
            assert (row.score, row.answer, row.iterations, row.calls) == (0.0, "no idea", 1, 1)
            assert row.trajectory is None
        else:
            wrong = generate(TaskRef(row.family, "test", 1024, int(task_id[-3:]))).question == miss
            assert row.score == (0.0 if wrong else 1.0), row
            assert row.error is None and Path(row.trajectory).exists()
            assert row.root_input_tokens > 0 and row.cost is not None and row.cost > 0
    assert {r.split for r in results.rows} == {"test"} and {r.length for r in results.rows} == {1024}
    table = results.table()
    assert "| sniah | 1k | rlm | gpt-4o-mini | 2 | 100.0 | 0 |" in table
    assert "| records | 1k | rlm | gpt-4o-mini | 2 | 50.0 | 0 |" in table
    assert "| sniah | 1k | base | gpt-4o-mini | 2 | 0.0 | 0 |" in table
    records = results.to_records()
    assert len(records) == 8 and {"task_id", "score", "expected", "wall_s", "trajectory"} <= set(records[0])
    # The files: one row a line, the CSV, the sweep's settings (no key), the trajectories.
    assert (
        str(tmp_path) not in (tmp_path / "results.jsonl").read_text() + (tmp_path / "results.csv").read_text()
    )
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 8 and all(json.loads(x)["method"] in ("rlm", "base") for x in lines)
    csv_lines = (tmp_path / "results.csv").read_text().splitlines()
    assert len(csv_lines) == 9 and csv_lines[0].startswith("task_id,family,split,length,method,model")
    sweeps = [json.loads(x) for x in (tmp_path / "sweeps.jsonl").read_text().splitlines()]
    assert sweeps[0]["rollouts"] == 8 and "sk-test" not in json.dumps(sweeps)
    assert len(list((tmp_path / "trajectories").glob("*.jsonl"))) == 4
    assert rlm_eval.load(tmp_path).to_records() == results.to_records()


def test_a_sweep_resumes_where_it_stopped(server: ScriptedServer, tmp_path: Path) -> None:
    first = sweep(server, tmp_path)
    calls = len(server.requests)
    again = sweep(server, tmp_path)
    assert len(server.requests) == calls  # nothing ran twice
    assert again.to_records() == first.to_records()
    # Lose half the rows (as a crash mid-sweep would): only those run again.
    path = tmp_path / "results.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:4]) + "\n" + lines[4][:30])  # the last line cut short
    resumed = sweep(server, tmp_path)
    assert len(resumed) == 8 and len(server.requests) == calls + 4
    assert sorted(r.key for r in resumed.rows) == sorted(r.key for r in first.rows)


BOOM = {"armed": True}


def exploding(answer: str, expected: object) -> float:
    if BOOM["armed"]:
        raise RuntimeError("the scorer broke")
    return float(answer.strip() == str(expected))


def test_a_crashing_rollout_is_recorded_and_runs_again(server: ScriptedServer, tmp_path: Path) -> None:
    task_file = tmp_path / "mine.jsonl"
    task = {"id": "mine", "context": "x" * 50, "question": "What is it?", "answer": "42"}
    task_file.write_text(json.dumps({**task, "scorer": f"{__name__}:exploding"}) + "\n")
    solver: Solver = server.responder  # type: ignore[assignment]
    solver.answers.append(("What is it?", "50 characters", "42"))
    BOOM["armed"] = True
    out = tmp_path / "out"
    results = rlm_eval.run(
        [], [], ["rlm"], n=1, out=out, settings=settings(server), task_files=[task_file], progress=False
    )
    (row,) = results.rows
    assert row.crashed and row.score == 0.0 and row.error == "crashed: RuntimeError: the scorer broke"
    assert "Traceback" in row.meta["warnings"][0]
    BOOM["armed"] = False
    (row,) = rlm_eval.run(
        [], [], ["rlm"], n=1, out=out, settings=settings(server), task_files=[task_file], progress=False
    ).rows
    assert not row.crashed and row.score == 1.0
    assert len((out / "results.jsonl").read_text().splitlines()) == 2  # both kept; the last one counts


def test_ctrl_c_in_the_command_line_loses_nothing_that_finished(
    server: ScriptedServer, tmp_path: Path
) -> None:
    solver: Solver = server.responder  # type: ignore[assignment]
    solver.slow_after = 2  # two root calls answer at once; the rest hang until interrupted
    cmd = [
        sys.executable, "-m", "rlm_kernel.eval", "run", "--tasks", ",".join(FAMILIES), "--lengths", "1k",
        "--methods", "rlm", "-n", str(N), "--out", str(tmp_path), "--backend", "openai", "--model-name", "gpt-4o-mini",
        "--base-url", server.openai_base_url, "--concurrency", "2", "--no-progress",
    ]  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    # Ctrl-C as a terminal sends it, even where this test runs with SIGINT ignored (in the background)
    default_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint
    )
    results = tmp_path / "results.jsonl"
    deadline = time.monotonic() + 60
    while not (results.exists() and len(results.read_text().splitlines()) >= 2 and solver.roots >= 4):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the first rollouts never finished"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    assert "Interrupted. 2 rollout(s) are kept" in err and "run the same command again to resume" in err
    rows = [Row.from_dict(json.loads(x)) for x in results.read_text().splitlines()]
    assert len(rows) == 2 and all(r.score == 1.0 and r.error is None for r in rows)  # no interrupted run
    assert (tmp_path / "results.csv").exists()
    solver.slow_after = None
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    rows = [Row.from_dict(json.loads(x)) for x in results.read_text().splitlines()]
    assert len(rows) == 4 and len({r.key for r in rows}) == 4 and all(r.score == 1.0 for r in rows)
    assert "| records | 1k | rlm | gpt-4o-mini | 2 | 100.0 | 0 |" in proc.stdout


def test_the_ray_runner_gives_the_same_results(server: ScriptedServer, tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    local = sweep(server, tmp_path / "local")
    runner = rlm_eval.RayRunner(workers=2, rollouts_per_worker=2, init_kwargs={"num_cpus": 2})
    on_ray = sweep(server, tmp_path / "ray", runner=runner)
    assert not ray.is_initialized()  # the cluster it started is gone

    def comparable(results: rlm_eval.Results) -> list[dict]:
        drop = {"wall_s", "trajectory"}
        return sorted(
            ({k: v for k, v in r.items() if k not in drop} for r in results.to_records()),
            key=lambda r: (r["task_id"], r["method"]),
        )

    assert comparable(on_ray) == comparable(local)
    assert all(Path(r.trajectory).exists() for r in on_ray.rows if r.method == "rlm")


def test_the_plots(server: ScriptedServer, tmp_path: Path) -> None:
    image = pytest.importorskip("matplotlib.image")
    results = rlm_eval.run(
        ["sniah"], ["1k", "2k"], ["rlm", "base"], n=1, out=tmp_path, settings=settings(server), progress=False
    )
    paths = rlm_eval.plot(results, tmp_path, window=1536)
    assert [p.name for p in paths] == ["figure1.png", "cost_vs_score.png", "tokens.png"]
    for path in paths:
        height, width, _ = image.imread(path).shape
        assert width > 500 and height > 400 and path.stat().st_size > 10_000
    cli = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.eval", "plot", str(tmp_path), "--out", str(tmp_path / "again")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 0 and len(list((tmp_path / "again").glob("*.png"))) == 3, cli.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.eval", "show", str(tmp_path)], capture_output=True, text=True
    )
    assert "| sniah | 2k | rlm | gpt-4o-mini | 1 | 100.0 | 0 |" in shown.stdout


def test_a_sweep_from_inside_a_running_event_loop(server: ScriptedServer, tmp_path: Path) -> None:
    """In a notebook the kernel's loop is running: run() takes a thread and a loop of its own."""

    async def in_a_notebook() -> rlm_eval.Results:
        return rlm_eval.run(
            ["sniah"], ["1k"], ["rlm"], n=1, out=tmp_path, settings=settings(server), progress=False
        )

    (row,) = asyncio.run(in_a_notebook()).rows
    assert row.score == 1.0


def test_mistakes_in_a_sweep_are_one_line_errors(tmp_path: Path) -> None:
    for args, message in [
        (["--tasks", "needles"], "error: Unknown task family 'needles'"),
        (["--methods", "rlm,guess"], "error: Unknown method 'guess'"),
        (["--lengths", "big"], "error: Cannot read the length 'big'"),
    ]:
        proc = subprocess.run(
            [sys.executable, "-m", "rlm_kernel.eval", "run", "--out", str(tmp_path), *args],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 2 and proc.stderr.strip().startswith(message), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
