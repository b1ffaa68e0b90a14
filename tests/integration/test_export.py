"""Trajectories as data: a notebook run under nbclient (no extension: the fallback path), read back
with ``from_notebook``, and exported as fine-tuning samples with human edits as targets; and a
co-piloted run (an edit, a Regenerate) with a rewind branch, exported with the repairs on. Every
trajectory a test here writes is held to ``export_invariants`` afterwards: no target that did not
run, no ``rejected`` that is the target's text."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import nbformat
import pytest
from export_invariants import check_files, check_samples, trajectory_files
from nbclient import NotebookClient
from scripted_server import Script

from rlm_kernel import RLM
from rlm_kernel.config import RLMConfig
from rlm_kernel.driver import Regenerate
from rlm_kernel.engine import RLMRun
from rlm_kernel.events import HumanEdit, RootReply, RootRequest, RunEnded, RunStarted, StepStarted
from rlm_kernel.executors.base import ExecResult
from rlm_kernel.export import conversations, samples
from rlm_kernel.export import main as export_main
from rlm_kernel.export_stats import sample_chars
from rlm_kernel.lm.base import Completion
from rlm_kernel.prompts import context_metadata
from rlm_kernel.trajectory import from_notebook


def repl(code: str) -> str:
    return f"```repl\n{code}\n```"


@pytest.fixture(autouse=True)
def teaches_only_what_ran(tmp_path):
    """After each test, every trajectory it wrote exports (all runs, no filter) to samples whose
    targets ran and whose ``rejected`` are not their targets."""
    yield
    check_files(trajectory_files(tmp_path), tmp_path / "checked")


def test_fallback_notebook_keeps_its_trajectory_and_exports(scripted_server, tmp_path, monkeypatch):
    scripted_server.responder = Script(root=[repl("n = len(context)\nprint(n)"), repl("FINAL(n + 1)")])
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("RLM_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("RLM_LOG_DIR", str(tmp_path / "runs"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("doc = 'x' * 41"),
        nbformat.v4.new_code_cell("%%rlm -c doc\nHow long?"),
    ]
    nb.metadata["kernelspec"] = {"name": "rlm-python", "display_name": "RLM Python", "language": "python"}
    NotebookClient(nb, timeout=60, kernel_name="rlm-python").execute()
    path = tmp_path / "run.ipynb"
    nbformat.write(nb, path)

    outputs = nb.cells[1].outputs
    assert any("rlm_kernel extension" in o.get("text", "") for o in outputs)  # said how to get cell mode
    assert any(o.get("data", {}).get("text/plain") == "42" for o in outputs)
    events = from_notebook(path)
    assert events[0].kind == "run_started" and events[-1].kind == "run_ended"
    assert events[-1].response == "42"

    exported = tmp_path / "sft.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.export", str(path), "-o", str(exported)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "2 samples from 1 runs" in done.stderr and "| trajectories " in done.stderr
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    assert [r["turn"] for r in rows] == [1, 2]
    last = rows[1]["messages"]
    assert last[0]["role"] == "system" and last[-1]["role"] == "assistant"
    assert "FINAL(n + 1)" in last[-1]["content"] and "Output of step 1:\n41" in last[-2]["content"]
    # the JSONL log gives the same samples
    log = next((tmp_path / "runs").glob("*.jsonl"))
    from_log = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.export", str(log)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert [json.loads(r)["messages"] for r in from_log] == [r["messages"] for r in rows]


def _run(run_id="r1", edited=True, answer="7"):
    yield RunStarted(
        run_id=run_id,
        question="q",
        context_meta={},
        model="m",
        sub_model="m",
        prompt=[{"role": "system", "content": "sys"}],
    )
    yield RootRequest(run_id=run_id, turn=1, messages=2, chars=10, content="first")
    yield RootReply(run_id=run_id, turn=1, text="Look:\n```repl\nx = 1\n```", model="m")
    yield StepStarted(run_id=run_id, step=1, code="x = 1\n")
    if edited:
        yield HumanEdit(run_id=run_id, step=1, proposed="x = 1\n", executed="x = 2\n")
    yield RootRequest(run_id=run_id, turn=2, messages=4, chars=20, content="Output of step 1: ...")
    yield RootReply(run_id=run_id, turn=2, text="```repl\nFINAL(x)\n```", model="m")
    yield RunEnded(run_id=run_id, response=answer, error=None, iterations=2, elapsed_s=1.0)


def test_a_human_edit_becomes_the_target_and_the_history():
    (conv,) = conversations(_run())
    assert conv.turns[0].edited and conv.turns[0].target == "Look:\n```repl\nx = 2\n```"
    rows = list(samples(conv))
    assert rows[0]["messages"][-1]["content"] == "Look:\n```repl\nx = 2\n```"
    assert rows[0]["rejected"] == [{"role": "assistant", "content": "Look:\n```repl\nx = 1\n```"}]
    assert rows[1]["messages"][2]["content"] == "Look:\n```repl\nx = 2\n```"  # corrected in the history too
    assert [m["role"] for m in rows[1]["messages"]] == ["system", "user", "assistant", "user", "assistant"]
    first_size = sum(len(m["content"]) for m in rows[0]["messages"])
    assert list(samples(conv, max_chars=first_size)) == [rows[0]]  # the longer second sample is capped out


def test_filters_drop_failed_and_one_turn_runs(tmp_path):
    events = [*_run("good"), *_run("failed", answer=None)]
    log = tmp_path / "t.jsonl"
    log.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in events))
    out = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.export", str(log)], capture_output=True, text=True, check=True
    )
    assert {json.loads(r)["run_id"] for r in out.stdout.splitlines()} == {"good"}
    assert "1 runs dropped" in out.stderr
    out = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.export", str(log), "--min-turns", "3"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == ""
    # Scores from a file, for trajectories outside a results folder: they override the default.
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps({"good": 0, "failed": 0.5}))
    out = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.export", str(log), "--scores", str(scores)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert {json.loads(r)["run_id"] for r in out.stdout.splitlines()} == {"failed"}
    assert "| dropped: runs scored 0 " in out.stderr


def test_human_edits_and_the_chosen_branch_hold_with_the_repairs_on(scripted_server, tmp_path):
    """The human's edit stays the target (and the history, in the branch too), Regenerate's set-aside
    reply is ``rejected``, the branch the human chose supersedes the original from its turn on, and
    both runs' ``FINAL(y)`` (a variable their code bound) is repaired to ``FINAL_VAR(y)``."""
    first, rejected = repl("x = 1\nprint('x', x)"), repl("x = 100\nprint('rejected')")
    second = repl("y = x + 1\nprint('y', y)")
    scripted_server.responder = Script(root=[first, rejected, second, "Done.\nFINAL(y)"])
    seen: list[int] = []

    async def approve(step: int, code: str):
        seen.append(step)
        if step == 1:
            return code.replace("x = 1", "x = 20")  # the human's edit
        return Regenerate() if len(seen) == 2 else code

    kwargs = {"model_name": "gpt-4o-mini", "base_url": scripted_server.openai_base_url, "api_key": "sk-test"}
    logs = tmp_path / "logs"
    parent = asyncio.run(RLM("openai", kwargs, log_dir=logs).acompletion("abc", "y?", approve=approve))
    assert parent.response == "21", parent.error
    scripted_server.responder = Script(root=[repl("y = x * 21\nprint(y)"), "FINAL(y)"])
    branch = RLM("openai", kwargs, log_dir=logs).continue_from(parent, 2, "abc")
    assert branch.response == "420", branch.error

    out = tmp_path / "sft.jsonl"
    assert export_main([str(logs), "-o", str(out), "--stats", str(tmp_path / "stats.json")]) == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    mine = [s for s in written if s["run_id"] == parent.run_id]
    theirs = [s for s in written if s["run_id"] == branch.run_id]
    assert [s["turn"] for s in mine] == [1, 2, 3] and [s["turn"] for s in theirs] == [2, 3]
    edited = repl("x = 20\nprint('x', x)")
    assert mine[0]["edited"] and mine[0]["messages"][-1]["content"] == edited
    assert mine[0]["rejected"] == [{"role": "assistant", "content": first}]  # the proposal as written
    assert mine[1]["rejected"] == [{"role": "assistant", "content": rejected}]
    assert mine[1]["superseded_by"] == mine[2]["superseded_by"] == branch.run_id
    assert theirs[0]["branch_of"] == {"run_id": parent.run_id, "step": 2}
    assert theirs[0]["rejected"] == [{"role": "assistant", "content": second}]
    assert theirs[0]["messages"][:-1] == mine[1]["messages"][:-1]  # the same history, the edit in it
    assert edited in [m["content"] for m in theirs[0]["messages"]]
    assert mine[2]["messages"][-1]["content"] == "Done.\nFINAL_VAR(y)" and mine[2]["repaired"] == [
        "final-var"
    ]
    assert theirs[1]["messages"][-1]["content"] == "FINAL_VAR(y)" and theirs[1]["repaired"] == ["final-var"]
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["after"]["repairs"]["final-var"] == 2 and stats["after"]["trajectories"] == 2


def test_the_filters_hold_on_what_is_written(tmp_path):
    """--max-chars drops the longer turn first; the run, left with one, is then under --min-turns:
    no trajectory of fewer turns is written, and "after" counts exactly what was."""
    log = tmp_path / "t.jsonl"
    log.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in _run("good")))
    (conv,) = conversations(_run("good"))
    first_size = sample_chars(next(samples(conv)))
    stats = tmp_path / "stats.json"
    for min_turns, expected in ((2, []), (1, [1])):
        out = tmp_path / "sft.jsonl"
        args = [str(log), "-o", str(out), "--max-chars", str(first_size), "--stats", str(stats)]
        assert export_main([*args, "--min-turns", str(min_turns)]) == 0
        written = [json.loads(line) for line in out.read_text().splitlines()]
        figures = json.loads(stats.read_text())
        assert [s["turn"] for s in written] == expected
        check_samples(_run("good"), written, min_turns=min_turns, figures=figures)
        assert figures["dropped"]["over_max_chars_turns"] == 1
        assert figures["dropped"]["too_few_turns_runs"] == (1 if min_turns == 2 else 0)
        assert figures["after"]["trajectories_by_turns"] == ({} if min_turns == 2 else {"1": 1})


def test_an_edit_of_a_reply_s_second_block_lands_in_that_block():
    """Two blocks of one text: the human edits the second; the first ran as proposed."""
    events: list = []
    run = RLMRun(
        RLMConfig(backend="replay"),
        question="q",
        context_meta=context_metadata("abc"),
        model="m",
        sub_model="m",
        emit=events.append,
        run_id="r1",
        started=0.0,
    )
    run.start()
    twice = "Twice:\n```repl\nprint(1)\n```\nAgain:\n```repl\nprint(1)\n```"
    run.receive_reply(Completion(text=twice, model="m"))
    run.receive_execution(ExecResult("1\n"), answer_ready=False)
    run.human_edit(2, "print(1)\n", "print(2)")
    run.receive_execution(ExecResult("2\n"), answer_ready=False)
    run.receive_reply(Completion(text="FINAL(2)", model="m"))
    (conv,) = conversations(events)
    first, _ = samples(conv)
    assert (
        first["messages"][-1]["content"] == "Twice:\n```repl\nprint(1)\n```\nAgain:\n```repl\nprint(2)\n```"
    )
    assert first["rejected"] == [{"role": "assistant", "content": twice}]
    check_samples(events, [first])
