"""Co-piloted notebook runs as training data: each way a human steers a run in notebook mode, played
for real (the RLM Python kernel, the scripted LM server, the tests in the extension's part), then
exported from the kernel's own JSONL logs. The export teaches only what ran: a target is code that
ran (or the human's edit of it), never a proposal set aside or left waiting; ``rejected`` is never
the target's text; a human's cell is context, never a target; the filters hold on what is written
and the statistics count it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from export_invariants import check_files, check_samples
from frontend import FrontEnd
from kernel_session import KernelSession, scripted_env
from scripted_server import Script, ScriptedServer

from rlm_kernel.export import main as export_main
from rlm_kernel.export import read_inputs
from rlm_kernel.messages import RegenerateMsg, SetMode, Stop


def repl(code: str) -> str:
    return f"Next step.\n```repl\n{code}\n```"


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return tmp_path / "logs"


@pytest.fixture
def kernel(server: ScriptedServer, logs: Path) -> Iterator[KernelSession]:
    server.requests.clear()
    with KernelSession("rlm-python", scripted_env(server, logs)) as session:
        assert session.execute("doc = 'abcdefg' * 3")["status"] == "ok"
        yield session


def asked(server: ScriptedServer) -> list[list[dict[str, str]]]:
    """The conversation of each request the root got, as the samples write it."""
    return [
        [{"role": m["role"], "content": m["content"]} for m in r.messages]
        for r in server.requests
        if r.is_root
    ]


def export(logs: Path, tmp_path: Path, *args: str, min_turns: int = 2) -> tuple[list[dict], dict[str, Any]]:
    """The CLI's samples and statistics, held to the invariants; the logs checked whole too."""
    out, stats = tmp_path / "sft.jsonl", tmp_path / "stats.json"
    argv = [str(logs), "-o", str(out), "--stats", str(stats), "--min-turns", str(min_turns), *args]
    assert export_main(argv) == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    figures = json.loads(stats.read_text())
    check_samples(read_inputs([logs]), written, min_turns=min_turns, figures=figures)
    check_files(sorted(logs.glob("*.jsonl")), tmp_path / "all")
    return written, figures


def step_mode(front: FrontEnd, question: str = "q") -> dict:
    """Start a run in step mode; its first proposal, inserted and waiting for the human."""
    front.run_cell(f"%%rlm -c doc --mode step\n{question}")
    proposal = front.next("propose_step")
    front.accept(proposal)
    front.send(SetMode(run_id=proposal["run_id"], mode="step"))
    assert front.next("run_state")["waiting_for"] == proposal["step"]
    return proposal


def next_waiting(front: FrontEnd) -> dict:
    proposal = front.next("propose_step")
    front.accept(proposal)
    return proposal


def test_a_plain_run_gives_one_sample_per_turn_as_the_root_saw_it(kernel, server, logs, tmp_path) -> None:
    server.responder = Script(root=[repl("n = len(context)\nprint(n)"), repl("FINAL(n * 2)")])
    front = FrontEnd(kernel)
    front.run_cell("%%rlm -c doc\nHow long, doubled?")
    assert front.drive()["answer"] == "42"
    written, figures = export(logs, tmp_path)
    assert [s["turn"] for s in written] == [1, 2]
    assert [s["messages"][:-1] for s in written] == asked(server)  # the input is what the root saw
    assert [s["messages"][-1]["content"] for s in written] == [
        repl("n = len(context)\nprint(n)"),
        repl("FINAL(n * 2)"),
    ]
    assert not any(s["edited"] or "rejected" in s for s in written)
    assert figures["after"]["trajectories_by_turns"] == {"2": 1}


def test_a_step_the_human_edited_is_the_target_and_the_proposal_is_rejected(
    kernel, server, logs, tmp_path
) -> None:
    proposed, final = repl("x = 1\nprint(x)"), repl("FINAL(x)")
    server.responder = Script(root=[proposed, final])
    front = FrontEnd(kernel, on_propose=lambda data: None)
    step_mode(front)
    front.run_cell("x = 41 + 1\nprint(x)", front.cells[1])  # edited, then run
    front.run_cell(next_waiting(front)["code"], front.cells[2])
    assert front.next("run_finished")["answer"] == "42"

    first, second = export(logs, tmp_path)[0]
    ran = repl("x = 41 + 1\nprint(x)")
    assert first["edited"] and first["messages"][-1]["content"] == ran
    assert first["rejected"] == [{"role": "assistant", "content": proposed}]
    assert second["messages"][2]["content"] == ran  # the history holds what ran
    assert second["messages"][-1]["content"] == final and "rejected" not in second
    assert second["messages"][-2] == asked(server)[1][-1]  # the root was told of the edit


@pytest.mark.parametrize("again", ["another proposal", "the same proposal"])
def test_a_regenerated_step_teaches_the_proposal_that_ran(kernel, server, logs, tmp_path, again) -> None:
    ran = repl("n = len(context)\nprint(n)")
    set_aside = repl("import shutil") if again == "another proposal" else ran  # a greedy model's
    server.responder = Script(root=[set_aside, ran, repl("FINAL(n)")])
    front = FrontEnd(kernel, on_propose=lambda data: None)
    first = step_mode(front)
    front.send(RegenerateMsg(run_id=first["run_id"], step=1))
    second = next_waiting(front)
    assert second["step"] == 1
    front.run_cell(second["code"], front.cells[1])
    final = next_waiting(front)
    front.run_cell(final["code"], front.cells[final["step"]])
    assert front.next("run_finished")["answer"] == "21"

    written, _ = export(logs, tmp_path)
    assert [s["turn"] for s in written] == [1, 2]
    assert written[0]["messages"][-1]["content"] == ran
    assert written[0]["messages"][:-1] == asked(server)[1]  # the turn as it was asked again
    if again == "another proposal":
        assert written[0]["rejected"] == [{"role": "assistant", "content": set_aside}]
        assert set_aside not in [s["messages"][-1]["content"] for s in written]
    else:  # the same text again: no pair of one text, and the sample stays
        assert "rejected" not in written[0]


def test_a_human_cell_while_a_step_waits_is_context_never_a_target(kernel, server, logs, tmp_path) -> None:
    first, regenerated = repl("print('step one')"), repl("print(mine)")
    second, final = repl("more = mine * 2\nprint(more)"), repl("FINAL(more)")
    server.responder = Script(root=[first, regenerated, second, final])
    front = FrontEnd(kernel, on_propose=lambda data: None)
    waiting = step_mode(front)
    mine = "mine = context.upper()[:3]\nprint(mine)"
    front.run_cell(mine)  # the human's own cell, while step 1 waits: it ran first, so it is step 1
    renumbered = next_waiting(front)
    assert (renumbered["step"], renumbered["code"]) == (2, waiting["code"])
    front.send(RegenerateMsg(run_id=waiting["run_id"], step=2))  # asked again, told of the cell
    for human in (None, "print('human', len(mine))", None):
        proposal = next_waiting(front)
        if human:
            front.run_cell(human)  # another, while this step waits
            proposal = next_waiting(front)  # announced again, under the next number
        front.run_cell(proposal["code"], front.cells[proposal["step"]])
    assert front.next("run_finished")["answer"] == "ABCABC"

    written, _ = export(logs, tmp_path)
    requests = asked(server)
    assert [s["turn"] for s in written] == [1, 2, 3]
    assert [s["messages"][-1]["content"] for s in written] == [regenerated, second, final]
    assert [s["messages"][:-1] for s in written] == requests[1:]  # what the root saw, the cells in it
    assert "The human ran a cell of their own" in written[0]["messages"][-2]["content"]
    assert mine in written[0]["messages"][-2]["content"]
    assert "print('human', len(mine))" in written[2]["messages"][-2]["content"]
    assert written[0]["rejected"] == [{"role": "assistant", "content": first}]


def test_a_run_stopped_while_a_step_waits_never_teaches_that_step(kernel, server, logs, tmp_path) -> None:
    """The report this guards against: the root proposed step 2, the human regenerated it, the
    model proposed the same again, and the run was stopped while it waited. The export wrote that
    proposal as a target, with itself as ``rejected``."""
    pending = repl("print(x + 1)")
    server.responder = Script(root=[repl("x = 1\nprint(x)"), pending, pending])
    front = FrontEnd(kernel, on_propose=lambda data: None)
    step_mode(front)
    front.run_cell(front.waiting["code"], front.cells[1])
    waiting = next_waiting(front)
    front.send(RegenerateMsg(run_id=waiting["run_id"], step=2))
    assert next_waiting(front)["code"] == waiting["code"]
    front.send(Stop(run_id=waiting["run_id"]))
    assert front.next("run_finished")["stop"] == "user"

    scores = tmp_path / "scores.json"  # the human may still value the part that ran
    scores.write_text(json.dumps({waiting["run_id"]: 1}))
    written, figures = export(logs, tmp_path, "--scores", str(scores), min_turns=1)
    assert [s["turn"] for s in written] == [1]
    assert written[0]["messages"][-1]["content"] == repl("x = 1\nprint(x)")
    assert figures["left_out"]["never_ran_turns"] == 1
    assert export(logs, tmp_path, "--scores", str(scores))[0] == []  # one turn is fewer than 2


def test_rewind_branches_keep_distinct_pairs_and_the_turn_filter_holds(
    kernel, server, logs, tmp_path
) -> None:
    s1, s2, s3 = repl("n = len(context)\nprint(n)"), repl("m = n + 1\nprint(m)"), repl("FINAL(m)")
    server.responder = Script(root=[s1, s2, s3])
    front = FrontEnd(kernel)
    front.run_cell("%%rlm -c doc\nq")
    parent = front.next("run_started")["run_id"]
    assert front.drive()["answer"] == "22"
    # A greedy model, asked step 2 again, proposes it the same; then it answers otherwise.
    server.responder = Script(root=[s2, repl("FINAL(m * 2)")])
    front.run_cell("%%rlm -c doc -o again --continue-from _rlm:2\n")
    branch = front.next("run_started")["run_id"]
    assert front.drive()["answer"] == "44"
    server.responder = Script(root=[repl("FINAL(m + 100)")])  # a branch of one turn of its own
    front.run_cell(f"%%rlm -c doc -o late --continue-from {parent}:3\n")
    late = front.next("run_started")["run_id"]
    assert front.drive()["answer"] == "122"

    written, figures = export(logs, tmp_path)
    turns = {rid: [s["turn"] for s in written if s["run_id"] == rid] for rid in (parent, branch, late)}
    assert turns == {parent: [1, 2, 3], branch: [2, 3], late: []}
    assert (
        figures["dropped"]["too_few_turns_runs"] == 1 and "1" not in figures["after"]["trajectories_by_turns"]
    )
    mine = [s for s in written if s["run_id"] == branch]
    assert mine[0]["branch_of"] == {"run_id": parent, "step": 2}
    assert mine[0]["messages"][-1]["content"] == s2 and "rejected" not in mine[0]  # the same text
    # The first branch from a turn is the human's choice there.
    assert [s.get("superseded_by") for s in written if s["run_id"] == parent] == [None, branch, branch]

    one_turn, _ = export(logs, tmp_path, min_turns=1)
    (alone,) = [s for s in one_turn if s["run_id"] == late]
    assert alone["rejected"] == [{"role": "assistant", "content": s3}]
