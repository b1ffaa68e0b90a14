"""Table tests of the root loop's state machine: observations in, actions out, no I/O."""

from itertools import pairwise

import pytest

from rlm_kernel.config import RLMConfig
from rlm_kernel.engine import AskRoot, Execute, Finish, ResolveFinal, RLMRun
from rlm_kernel.events import AnswerSet, RunEnded
from rlm_kernel.executors.base import ExecResult
from rlm_kernel.lm.base import Completion
from rlm_kernel.prompts import context_metadata


def make_run(**settings):
    events = []
    config = RLMConfig(backend="replay", **settings)
    run = RLMRun(
        config,
        question="Q?",
        context_meta=context_metadata("abc" * 100),
        model="m",
        sub_model="m",
        emit=events.append,
    )
    return run, events


def reply(text):
    return Completion(text=text, model="m", input_tokens=10, output_tokens=5)


def ok(stdout="", error=None):
    return ExecResult(stdout=stdout, error=error)


def assert_alternates(messages):
    roles = [m["role"] for m in messages]
    assert roles[0] == "system"
    for a, b in pairwise(roles[1:]):
        assert a != b, roles
    assert roles[-1] == "user"


def test_start_sends_metadata_not_context():
    run, _ = make_run()
    action = run.start()
    assert isinstance(action, AskRoot)
    first = action.messages[-1]["content"]
    assert "300 characters" in first and "Question: Q?" in first
    assert "abc" * 100 not in first  # only a preview
    assert action.messages[0]["role"] == "system"
    assert action.messages[-2]["cache"] is True  # the stable prefix is marked for caching


def test_code_then_answer_finishes():
    run, events = make_run()
    run.start()
    action = run.receive_reply(reply("```repl\nx = 1\n```"))
    assert action == Execute(1, "x = 1\n")
    action = run.receive_execution(ok(), answer_ready=True, answer="42")
    assert action == Finish("42")
    assert isinstance(events[-2], AnswerSet) and events[-2].content == "42"
    assert isinstance(events[-1], RunEnded) and events[-1].iterations == 1


def test_output_goes_back_to_the_root():
    run, _ = make_run()
    run.start()
    run.receive_reply(reply("```repl\nprint('hi')\n```"))
    action = run.receive_execution(ok("hi\n"), answer_ready=False)
    assert isinstance(action, AskRoot)
    assert "Output of step 1:\nhi" in action.messages[-1]["content"]
    assert_alternates(action.messages)


def test_no_code_gets_a_corrective_turn():
    run, _ = make_run()
    run.start()
    action = run.receive_reply(reply("I think the answer is 4."))
    assert isinstance(action, AskRoot)
    assert "no ```repl code block" in action.messages[-1]["content"]
    assert_alternates(action.messages)


def test_blocks_run_in_order_and_an_error_skips_the_rest():
    run, _ = make_run()
    run.start()
    action = run.receive_reply(reply("```repl\na\n```\n```python\nb\n```\n```repl\nc\n```"))
    assert action == Execute(1, "a\n")
    action = run.receive_execution(ok("A"), answer_ready=False)
    assert action == Execute(2, "b\n")
    action = run.receive_execution(ok(error="NameError: b"), answer_ready=False)
    assert isinstance(action, AskRoot)
    text = action.messages[-1]["content"]
    assert "Output of step 1:\nA" in text and "NameError: b" in text
    assert "1 later code block(s)" in text


def test_text_final_after_code_resolves():
    run, _ = make_run()
    run.start()
    action = run.receive_reply(reply("```repl\nresult = 6 * 7\n```\nFINAL_VAR(result)"))
    assert isinstance(action, Execute)
    action = run.receive_execution(ok(), answer_ready=False)
    assert action == ResolveFinal(action.directive) and action.directive.argument == "result"
    assert run.receive_final("42", None) == Finish("42")


def test_text_final_ignored_when_code_failed():
    run, _ = make_run()
    run.start()
    run.receive_reply(reply("```repl\n1/0\n```\nFINAL(7)"))
    action = run.receive_execution(ok(error="ZeroDivisionError"), answer_ready=False)
    assert isinstance(action, AskRoot)
    assert "FINAL was ignored" in action.messages[-1]["content"]


def test_unresolvable_final_is_explained():
    run, _ = make_run()
    run.start()
    action = run.receive_reply(reply("FINAL_VAR(nothing)"))
    assert isinstance(action, ResolveFinal)
    action = run.receive_final(None, "FINAL_VAR(nothing): there is no variable named 'nothing'")
    assert isinstance(action, AskRoot) and "no variable named" in action.messages[-1]["content"]


def test_answer_protocol_ignores_text_final():
    run, _ = make_run(protocol="answer")
    run.start()
    action = run.receive_reply(reply("FINAL(7)"))
    assert isinstance(action, AskRoot)  # treated as a reply without code


def test_max_iterations_asks_once_more_keeping_alternation():
    run, _ = make_run(max_iterations=2)
    run.start()
    run.receive_reply(reply("```repl\nx = 1\n```"))
    run.receive_execution(ok(), answer_ready=False)
    run.receive_reply(reply("```repl\nx = 2\n```"))
    action = run.receive_execution(ok(), answer_ready=False)
    assert isinstance(action, AskRoot) and action.final_turn
    assert_alternates(action.messages)
    assert "used all 2 turns" in action.messages[-1]["content"]
    finish = run.receive_reply(reply("FINAL(best guess)"))
    assert isinstance(finish, Finish)
    assert finish.response == "best guess"
    assert "max_iterations (2)" in finish.error


def test_hints_and_edits_reach_the_next_turn():
    run, events = make_run()
    run.start()
    run.receive_reply(reply("```repl\nprint(1)\n```"))
    run.hint("look at the last chapter")
    run.human_edit(1, "print(1)\n", "print(2)\n")
    action = run.receive_execution(ok("2\n"), answer_ready=False)
    text = action.messages[-1]["content"]
    assert "Hint from the human: look at the last chapter" in text
    assert "You proposed:\n```\nprint(1)\n```" in text and "What actually ran:\n```\nprint(2)\n```" in text
    assert {e.kind for e in events} >= {"hint", "human_edit"}


def test_restored_names_are_reported():
    run, _ = make_run()
    run.start()
    run.receive_reply(reply("```repl\nllm_query = None\n```"))
    action = run.receive_execution(ok(), answer_ready=False, restored=("llm_query",))
    assert "put back" in action.messages[-1]["content"] and "llm_query" in action.messages[-1]["content"]


def test_out_of_order_calls_are_driver_bugs():
    run, _ = make_run()
    with pytest.raises(RuntimeError):
        run.receive_reply(reply("x"))
    run.start()
    with pytest.raises(RuntimeError):
        run.receive_execution(ok(), answer_ready=False)


def test_abort_keeps_the_run_and_is_final():
    run, events = make_run()
    run.start()
    finish = run.abort("stopped")
    assert finish == Finish(None, "stopped")
    assert run.abort("again") == finish
    assert [e.kind for e in events].count("run_ended") == 1


def test_small_profile_opens_with_a_worked_example():
    run, _ = make_run(prompt_profile="small")
    action = run.start()
    roles = [m["role"] for m in action.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "```repl" in action.messages[2]["content"]
    assert len(action.messages[0]["content"]) < 600


def test_no_subcalls_profile_leaves_sub_calls_out():
    run, _ = make_run(prompt_profile="no_subcalls")
    system = run.start().messages[0]["content"]
    assert "llm_query" not in system and "rlm_query" not in system and "answer" in system


def test_child_runs_are_told_they_answer_a_sub_task():
    events = []
    config = RLMConfig(backend="replay", depth=1, max_depth=2)
    run = RLMRun(
        config,
        question=None,
        context_meta=context_metadata("x"),
        model="m",
        sub_model="m",
        emit=events.append,
        parent_id="p",
    )
    action = run.start()
    assert "sub-task for another model" in action.messages[0]["content"]
    assert "Answer the request contained in the context." in action.messages[-1]["content"]
    assert events[0].parent_id == "p" and events[0].depth == 1


def test_a_human_step_while_a_step_waits_keeps_both_numbers_right():
    run, events = make_run()
    run.start()
    assert run.receive_reply(reply("```repl\nx = 1\n```")) == Execute(1, "x = 1\n")
    assert run.human_step("print('mine')", "mine\n") == 2
    action = run.receive_execution(ok("one\n"), answer_ready=False)
    finished = [e.step for e in events if e.kind == "step_finished"]
    assert finished == [2, 1]
    text = action.messages[-1]["content"]
    assert "Output of step 1:\none" in text and "own (step 2)" in text
