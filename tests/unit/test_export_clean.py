"""Exported training data is clean: the small profile's stop sequence (``"\\n```\\n"``) leaves some
replies without their closing fence; the export closes them, compares replies with their fences
closed, keeps each distinct turned-down proposal once, and its statistics count what they say.

The trajectories come from the real engine (profile ``small``, its real stop sequence), driven
the way the notebook driver does: replies as the backend returned them, Regenerate, execution."""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from pathlib import Path

import pytest
from export_invariants import check_files, check_samples, open_fence
from hypothesis import given
from hypothesis import strategies as st

from rlm_kernel.config import RLMConfig
from rlm_kernel.engine import Execute, Finish, RLMRun
from rlm_kernel.events import Event, RootReply
from rlm_kernel.executors.base import ExecResult
from rlm_kernel.export import conversations, samples, whole_code_blocks
from rlm_kernel.export import main as export_main
from rlm_kernel.export_stats import ExportStats
from rlm_kernel.lm.base import Completion
from rlm_kernel.prompts import context_metadata
from rlm_kernel.protocol import code_blocks
from rlm_kernel.secrets import REDACTED, Redactor
from rlm_kernel.trajectory import TrajectoryWriter

CUT = "```repl\nimport os"  # the stop sequence took the closing fence
WHOLE = "```repl\nimport os\n```"  # the same proposal, whole (the model ended at the fence itself)
RAN = "```repl\nprint(len(context))"  # cut too, and run
ANSWER = "```repl\nanswer['content'] = '30'\nanswer['ready'] = True"


def reply(text: str) -> Completion:
    return Completion(text=text, model="m", input_tokens=1, output_tokens=1, extra={"finish_reason": "stop"})


def small_run(events: list[Event]) -> RLMRun:
    config = RLMConfig(backend="replay", prompt_profile="small", system_prompt="You write code.")
    assert config.stop == ("\n```\n",)  # what cuts the fences these tests are about
    return RLMRun(
        config,
        question="q",
        context_meta=context_metadata("abc" * 10),
        model="m",
        sub_model="m",
        emit=events.append,
        run_id="r1",
        started=time.perf_counter(),
    )


def regenerated_run(*proposals: str, ran: str = RAN) -> list[Event]:
    """A run whose first step the human regenerated once per proposal, then ran ``ran``; a second
    turn answers."""
    events: list[Event] = []
    run = small_run(events)
    run.start()
    for text in proposals:
        assert isinstance(run.receive_reply(reply(text)), Execute)
        run.regenerate()
    assert isinstance(run.receive_reply(reply(ran)), Execute)
    run.receive_execution(ExecResult("30\n"), answer_ready=False)
    assert isinstance(run.receive_reply(reply(ANSWER)), Execute)
    done = run.receive_execution(ExecResult(""), answer_ready=True, answer="30")
    assert isinstance(done, Finish)
    return events


def exported(events: list[Event]) -> list[dict]:
    written = [s for c in conversations(events) for s in samples(c)]
    check_samples(events, written)
    return written


def test_a_reply_cut_by_the_stop_sequence_is_exported_with_its_closing_fence():
    events = regenerated_run()
    assert [e.text for e in events if isinstance(e, RootReply)] == [RAN + "\n```", ANSWER + "\n```"]
    # The engine records replies whole; trajectories recorded before it did hold them cut.
    cut = [
        dataclasses.replace(e, text=e.text.removesuffix("\n```")) if isinstance(e, RootReply) else e
        for e in events
    ]
    assert [e.text for e in cut if isinstance(e, RootReply)] == [RAN, ANSWER]
    first, second = exported(cut)
    assert first["messages"][-1]["content"] == RAN + "\n```"
    assert second["messages"][-1]["content"] == ANSWER + "\n```"
    # The history holds the reply as the sample before taught it.
    assert second["messages"][-2 - 1] == first["messages"][-1]
    assert first["has_code"] and second["has_code"]


def test_the_same_proposal_with_and_without_its_fence_is_rejected_once():
    (first, _) = exported(regenerated_run(CUT, WHOLE))
    assert first["rejected"] == [{"role": "assistant", "content": WHOLE}]


def test_a_proposal_that_is_the_target_but_for_its_fence_is_not_rejected():
    (first, _) = exported(regenerated_run(RAN + "\n```\n"))
    assert "rejected" not in first


def test_distinct_proposals_are_each_rejected_once_in_order():
    (first, _) = exported(regenerated_run(CUT, "```repl\nx = 1", WHOLE + "\n\n", "```repl\nx = 1\n```"))
    assert [r["content"] for r in first["rejected"]] == [WHOLE, "```repl\nx = 1\n```"]


def test_an_edited_step_of_a_cut_reply_is_the_target_with_its_fence():
    events: list[Event] = []
    run = small_run(events)
    run.start()
    assert isinstance(run.receive_reply(reply("Look:\n" + CUT)), Execute)
    run.human_edit(1, "import os\n", "import sys\n")
    run.receive_execution(ExecResult(""), answer_ready=False)
    run.receive_reply(reply(ANSWER))
    run.receive_execution(ExecResult(""), answer_ready=True, answer="30")
    first, _ = exported(events)
    assert first["edited"] and first["messages"][-1]["content"] == "Look:\n```repl\nimport sys\n```"
    assert first["rejected"] == [{"role": "assistant", "content": "Look:\n" + WHOLE}]


def test_replies_that_differ_only_in_a_secret_are_rejected_once_and_counted():
    secret = "s3cret-token-value-42"
    events = regenerated_run(f"```repl\nkey = '{secret}'", "```repl\nkey = 'other-token-value-7'\n```")
    (conv,) = conversations(events)
    left_out: Counter[str] = Counter()
    redact = Redactor([secret, "other-token-value-7"]).text
    first, _ = samples(conv, redact=redact, left_out=left_out)
    assert first["rejected"] == [{"role": "assistant", "content": f"```repl\nkey = '{REDACTED}'\n```"}]
    assert left_out == Counter(rejected_repeated=1)


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        (CUT, WHOLE),
        (WHOLE, WHOLE),
        (CUT + "\n\n  ", WHOLE),  # trailing blank lines go with the missing fence
        ("Done.\nFINAL(30)", "Done.\nFINAL(30)"),  # no code: as it is
        ("```repl\na = 1\n```\nthen\n```python\nb = 2", "```repl\na = 1\n```\nthen\n```python\nb = 2\n```"),
        ("```text\nsome output", "```text\nsome output\n```"),  # any block a reader sees open
        ("```repl\n", "```repl\n```"),
        ("```repl\na = 1\n   ```  ", "```repl\na = 1\n   ```  "),  # closed, as the engine reads it
        # Fences glued together: a closing fence would change the code the engine reads; kept as it ran.
        ("```repl\n``````repl\n", "```repl\n``````repl\n"),
    ],
)
def test_whole_code_blocks(text: str, whole: str):
    assert whole_code_blocks(text) == whole


_lines = st.sampled_from(
    ["```repl", "```python", "```text", "```", "  ```  ", "x = 1", "print(2)", "", "  ", "FINAL(3)"]
)


@given(st.lists(_lines, max_size=10).map("\n".join))
def test_closing_fences_never_changes_the_code_and_leaves_none_open(text: str):
    whole = whole_code_blocks(text)
    assert code_blocks(whole) == code_blocks(text)
    assert not open_fence(whole)
    assert whole_code_blocks(whole) == whole


def write_trajectory(events: list[Event], path: Path) -> Path:
    writer = TrajectoryWriter(path)
    for event in events:
        writer(event)
    writer.close()
    return path


def test_the_cli_writes_whole_replies_and_counts_what_it_left_out(tmp_path: Path):
    path = write_trajectory(
        regenerated_run(CUT, WHOLE, RAN + "\n```", "```repl\nx = 1"), tmp_path / "run.jsonl"
    )
    on_disk = path.read_bytes()
    out, stats = tmp_path / "sft.jsonl", tmp_path / "stats.json"
    assert export_main([str(path), "-o", str(out), "--stats", str(stats)]) == 0
    assert path.read_bytes() == on_disk  # the trajectory is the record: only the export changes
    first, _ = [json.loads(line) for line in out.read_text().splitlines()]
    assert first["messages"][-1]["content"] == RAN + "\n```"
    assert [r["content"] for r in first["rejected"]] == [WHOLE, "```repl\nx = 1\n```"]
    figures = json.loads(stats.read_text())
    assert figures["left_out"]["rejected_same_as_target"] == 1  # RAN, whole
    assert figures["left_out"]["rejected_repeated"] == 1  # WHOLE after CUT
    assert figures["before"]["rejected"] == figures["after"]["rejected"] == 2  # distinct, written
    assert check_files([path], tmp_path / "check") == 2


def table_rows(table: str) -> dict[str, tuple[str, str]]:
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    return {name: (before, after) for name, before, after in cells}


def test_the_table_names_each_kind_of_rejected_reply_left_out():
    stats = ExportStats(rejected_same_as_target=1, rejected_repeated=2)
    stats.before.add([{"messages": [{"role": "assistant", "content": "a"}], "rejected": [{}, {}, {}]}])
    rows = table_rows(stats.table())
    assert rows["left out: rejected = target"] == ("1", "")
    assert rows["left out: rejected repeated"] == ("2", "")
    assert rows["rejected replies"] == ("3", "0")
    assert "left out: turns that never ran" not in rows  # none: no row


def test_the_checker_finds_an_open_fence_and_a_repeated_rejected():
    events = regenerated_run(CUT)
    first, _ = exported(events)
    cut_target = [*first["messages"][:-1], {"role": "assistant", "content": RAN}]
    with pytest.raises(AssertionError, match="a block left open"):
        check_samples(events, [{**first, "messages": cut_target}])
    with pytest.raises(AssertionError, match="a block left open"):
        check_samples(events, [{**first, "rejected": [{"role": "assistant", "content": CUT}]}])
    with pytest.raises(AssertionError, match="a rejected reply twice"):
        check_samples(events, [{**first, "rejected": [*first["rejected"], *first["rejected"]]}])
