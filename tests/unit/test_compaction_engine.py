"""Compaction in the engine, without I/O: when it asks for notes, what it keeps, what it tells."""

from __future__ import annotations

import pytest

from rlm_kernel import compaction
from rlm_kernel.config import RLMConfig
from rlm_kernel.engine import AskRoot, Compact, Execute, RLMRun, State
from rlm_kernel.errors import ConfigError
from rlm_kernel.events import Compacted
from rlm_kernel.executors.base import ExecResult
from rlm_kernel.lm.base import Completion
from rlm_kernel.prompts import context_metadata
from rlm_kernel.subcall_api import SubcallError


def make_run(window: int | None, **settings):
    events: list = []
    run = RLMRun(
        RLMConfig(backend="replay", **settings),
        question="How many?",
        context_meta=context_metadata("abc" * 100),
        model="m",
        sub_model="m",
        emit=events.append,
        run_id="r1",
        window=window,
    )
    return run, events


def turn(run: RLMRun, code: str, printed: str, input_tokens: int = 0):
    action = run.receive_reply(Completion(text=f"```repl\n{code}\n```", model="m", input_tokens=input_tokens))
    assert isinstance(action, Execute)
    return run.receive_execution(ExecResult(stdout=printed), answer_ready=False)


def test_the_engine_asks_for_notes_near_the_window_and_keeps_the_latest_turn():
    run, events = make_run(4000, max_reply_tokens=200)
    assert isinstance(run.start(), AskRoot)
    assert isinstance(turn(run, "a = 1", "x" * 3000), AskRoot)
    action = turn(run, "b = a + 1", "y" * 3000)
    assert isinstance(action, AskRoot)  # one reply so far besides the latest: nothing to summarise
    action = turn(run, "for c in range(3): pass", "z" * 3000)
    assert isinstance(action, Compact) and run.state == State.COMPACTING
    assert "a = 1" in action.prompt and "b = a + 1" in action.prompt and "turns 1 to 2" in action.prompt

    ask = run.receive_summary("a is 1, b is 2")
    assert isinstance(ask, AskRoot) and run.state == State.ASKING
    done = next(e for e in events if isinstance(e, Compacted))
    assert done.names == ["a", "b"] and (done.first_turn, done.last_turn) == (1, 2)
    first = ask.messages[run._fixed - 1]["content"]
    assert "a is 1, b is 2" in first and "Variables from them: a, b" in first
    assert ask.messages[-2]["content"].endswith("for c in range(3): pass\n```")  # the latest reply
    assert "z" * 3000 in ask.messages[-1]["content"] and "x" * 3000 not in str(ask.messages)


def test_the_provider_count_decides_and_no_window_means_no_compaction():
    run, _ = make_run(100_000, compaction=True, max_reply_tokens=200)
    run.start()
    turn(run, "a = 1", "x" * 3000, input_tokens=10)
    turn(run, "b = 2", "y" * 3000, input_tokens=20)
    # 3,000 tokens by its characters, 80,000 by the provider's count: the count decides
    assert isinstance(turn(run, "c = 3", "z", input_tokens=80_000), Compact)

    run, _ = make_run(None, compaction=True)
    run.start()
    for code in ("a = 1", "b = 2", "c = 3"):
        action = turn(run, code, "x" * 50_000)
    assert isinstance(action, AskRoot)


def test_a_failed_summary_leaves_the_code_and_a_warning():
    run, events = make_run(4000, max_reply_tokens=200)
    run.start()
    for code in ("a = 1", "b = 2", "c = 3"):
        action = turn(run, code, "x" * 3000)
    assert isinstance(action, Compact)
    ask = run.receive_summary(SubcallError("llm_query", "provider", "HTTP 500"))
    assert isinstance(ask, AskRoot)
    warning = next(e for e in events if e.kind == "warning")
    assert warning.code == "compaction_failed" and "HTTP 500" in warning.text
    assert "a = 1" in ask.messages[run._fixed - 1]["content"]


def test_a_human_answer_while_notes_are_written_ends_the_run():
    run, _ = make_run(4000, max_reply_tokens=200)
    run.start()
    for code in ("a = 1", "b = 2", "c = 3"):
        action = turn(run, code, "x" * 3000)
    assert isinstance(action, Compact)
    assert run.human_answer("7").response == "7" and run.done


def test_names_made_reads_what_the_code_binds():
    turns = [
        {
            "role": "assistant",
            "content": "```repl\nimport re, os.path as osp\nx, (y, z) = 1, (2, 3)\n"
            "def f(): pass\nfor i in range(2): pass\n_hidden = 1\nanswer['ready'] = False\ncontext = 1\n```",
        },
        {"role": "user", "content": "```repl\nnot = code\n```"},
        {"role": "assistant", "content": "```repl\nthis is not python\n```\n```repl\nw += 1\n```"},
    ]
    assert compaction.names_made(turns) == ["re", "osp", "x", "y", "z", "f", "i", "w"]


def test_the_settings():
    assert RLMConfig(backend="local").compacts(8192)
    assert not RLMConfig(backend="openai").compacts(272_000)
    assert RLMConfig(backend="openai", compaction=True).compacts(272_000)
    assert not RLMConfig(backend="local", compaction=False).compacts(8192)
    assert not RLMConfig(compaction=True).compacts(None)
    with pytest.raises(ConfigError, match="compaction_threshold"):
        RLMConfig(compaction_threshold=1.5)


def test_one_turn_shows_at_most_a_third_of_a_small_window():
    run, _ = make_run(2400, max_reply_tokens=200, compaction=False)
    run.start()
    reply = "```repl\nprint(1)\n```\n```repl\nprint(2)\n```"
    assert isinstance(run.receive_reply(Completion(text=reply, model="m")), Execute)
    assert isinstance(run.receive_execution(ExecResult(stdout="a" * 3000), answer_ready=False), Execute)
    ask = run.receive_execution(ExecResult(stdout="b" * 3000), answer_ready=False)
    shown = ask.messages[-1]["content"]
    assert len(shown) < 2400 + 300 and "were not shown" in shown


def compacting(run: RLMRun, *codes: str) -> Compact:
    action = None
    for code in codes:
        action = turn(run, code, "x" * 3000)
    assert isinstance(action, Compact)
    return action


def test_a_second_compaction_keeps_the_first_ones_notes():
    run, events = make_run(4000, max_reply_tokens=200)
    run.start()
    compacting(run, "a = 1", "b = 2", "c = 3")
    run.receive_summary("NOTE-ONE")
    action = compacting(run, "d = 4", "e = 5")
    assert (
        "NOTE-ONE" in action.prompt and "turns 1 to 4, keeping what your earlier notes say" in action.prompt
    )
    run.receive_summary(
        SubcallError("llm_query", "failed", "timed out")
    )  # failed: the code stands in, the first notes stay
    first = run.messages[run._fixed - 1]["content"]
    assert "NOTE-ONE" in first and "d = 4" in first and "Variables from them: a, b, c, d" in first
    assert [e.last_turn for e in events if isinstance(e, Compacted)] == [2, 4]


def test_an_answer_sent_back_near_the_window_still_clears_the_answer_after_the_notes():
    run, _ = make_run(4000, max_reply_tokens=200)
    run.start()
    turn(run, "a = 1", "x" * 3000)
    turn(run, "b = 2", "y" * 3000)
    assert isinstance(
        run.receive_reply(Completion(text="```repl\nanswer['content'] = '9'\n```", model="m")), Execute
    )
    action = run.receive_execution(ExecResult(stdout="z" * 3000), answer_ready=True, answer="9")
    assert isinstance(action, Compact)  # sent back: "9" was never printed; the request waits for notes
    ask = run.receive_summary("notes")
    assert isinstance(ask, AskRoot) and ask.reopen


def test_hints_given_while_the_notes_are_written_reach_the_request_that_waited():
    run, _ = make_run(4000, max_reply_tokens=200)
    run.start()
    compacting(run, "a = 1", "b = 2", "c = 3")
    run.hint("LOOK-AT-ROW-7")
    ask = run.receive_summary("notes")
    assert "LOOK-AT-ROW-7" in ask.messages[-1]["content"]


def test_turns_too_short_to_be_worth_notes_are_left_as_they_are():
    run, _ = make_run(1200, max_reply_tokens=100)  # the fixed start alone nears the threshold
    run.start()
    for code in ("a = 1", "b = 2", "c = 3", "d = 4"):
        action = turn(run, code, "ok")
        assert isinstance(action, AskRoot)
