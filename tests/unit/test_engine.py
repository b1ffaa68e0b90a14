"""Table tests of the root loop's state machine: observations in, actions out, no I/O."""

from itertools import pairwise

import pytest

from rlm_kernel.config import RLMConfig
from rlm_kernel.engine import (
    STATES,
    TRANSITIONS,
    AskRoot,
    Execute,
    Finish,
    ResolveFinal,
    RLMRun,
    State,
    Verify,
)
from rlm_kernel.errors import BudgetExceeded, ProviderError, RunCancelled
from rlm_kernel.events import AnswerSet, RunEnded
from rlm_kernel.executors.base import ExecResult
from rlm_kernel.lm.base import Completion
from rlm_kernel.prompts import context_metadata
from rlm_kernel.run_actions import CommittedAnswer, PendingReply


def make_run(question="Q?", context="abc" * 100, **settings):
    events = []
    config = RLMConfig(backend="replay", **settings)
    run = RLMRun(
        config,
        question=question,
        context_meta=context_metadata(context),
        model="m",
        sub_model="m",
        emit=events.append,
        run_id="r1",
        started=1.0,
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
    answers = [e for e in events if isinstance(e, AnswerSet)]
    assert len(answers) == 1 and answers[0].content == "42"
    assert isinstance(events[-1], RunEnded) and events[-1].iterations == 1
    # it answered without seeing any output of its code: kept, and said so
    assert [e.code for e in events if e.kind == "warning"] == ["unseen"]


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
    assert finish == Finish(None, "stopped", "error")
    assert run.abort("again") == finish
    assert [e.kind for e in events].count("run_ended") == 1


@pytest.mark.parametrize(
    ("error", "stop"),
    [
        (RunCancelled(), "user"),
        (RunCancelled.interrupted(), "interrupt"),
        (BudgetExceeded("max_tokens", 10, 5), "budget"),
        (ProviderError("OpenAI", "boom", 500), "error"),
    ],
)
def test_a_stop_says_why_in_a_field_not_in_its_text(error, stop):
    run, events = make_run()
    run.start()
    assert run.abort(error).stop == stop
    assert events[-1].kind == "run_ended" and events[-1].stop == stop


ARGS = {
    "start": (),
    "receive_reply": (Completion(text="no code", model="m"),),
    "receive_final": ("x", None),
    "hint": ("h",),
    "human_step": ("1", ""),
    "human_edit": (1, "a", "b"),
    "human_answer": ("x",),
    "abort": ("e",),
    "receive_verdict": ("SUPPORTED",),
}


def _call(run: RLMRun, call: str) -> None:
    if call == "regenerate":  # the reply that proposed the waiting step is the last message
        run.messages.append({"role": "assistant", "content": "```repl\nx = 1\n```"})
        run.regenerate()
    elif call == "receive_execution":
        run.receive_execution(ExecResult(), answer_ready=True, answer="x")
    elif call == "receive_verdict":  # the answer the sub-model was asked about
        run._judging = CommittedAnswer("x", "answer", [], retry=True)
        run.receive_verdict(*ARGS[call])
    elif call == "receive_summary":  # the request the notes were asked before, and what they replace
        run.window, run._fixed, run._compacting = 4000, 1, ("next", False, 1, 1, 3500)
        run.messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
        run.receive_summary("notes")
    else:
        getattr(run, call)(*ARGS[call])


@pytest.mark.parametrize("call", sorted(TRANSITIONS))
@pytest.mark.parametrize("state", STATES)
def test_every_call_is_checked_against_the_transition_table(call, state):
    """Each call in each state: taken where TRANSITIONS says, a RuntimeError elsewhere."""
    run, _ = make_run()
    run.state = state
    run._pending = PendingReply([], None)
    if state in TRANSITIONS[call]:
        _call(run, call)
    else:
        with pytest.raises(RuntimeError, match=rf"{call}\(\) needs"):
            _call(run, call)


def test_an_exception_inside_a_call_leaves_the_run_in_error_where_only_abort_is_taken():
    run, events = make_run()
    run.start()
    with pytest.raises(AttributeError):
        run.receive_reply(object())  # not a Completion
    assert run.state == "error"
    with pytest.raises(RuntimeError, match="receive_reply\\(\\) needs asking"):
        run.receive_reply(reply("FINAL(1)"))
    assert run.abort(ProviderError("OpenAI", "boom")).stop == "error"
    assert run.state == "done" and events[-1].kind == "run_ended"


def test_the_engine_takes_the_time_from_the_driver():
    run, events = make_run()  # started at 1
    run.start()
    run.now = 2.0  # the driver's clock before its next call
    run.abort("stop")
    assert events[-1].elapsed_s == 1.0


def test_the_engine_reads_no_clock_and_its_states_are_an_enum():
    import rlm_kernel.engine as engine

    assert not {"time", "datetime", "uuid", "random"} & set(vars(engine))
    run, _ = make_run()
    assert run.state is State.NEW
    run.start()
    assert run.state is State.ASKING and run.state == "asking"


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
        run_id="r1",
        started=1.0,
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


# -- limits and honest results ------------------------------------------------------------------


def test_each_root_turn_carries_its_reply_limit_and_the_profiles_stops():
    run, _ = make_run(prompt_profile="small")
    action = run.start()
    # the first reply begins the worked example's call and, where the backend continues it, stops
    # where the call closes
    assert (action.max_tokens, action.stop) == (1024, ("\n```\n",))
    assert (action.prefill, action.closing) == ('```repl\nsearch("', '")')
    run.receive_reply(reply('```repl\nsearch("What is in it?'))  # stopped at its `")`
    assert run.messages[-1]["content"] == '```repl\nsearch("What is in it?")'
    later = run.receive_execution(ok("[1] context: it is here\n"), answer_ready=False)
    assert (later.stop, later.prefill, later.closing) == (("\n```\n",), None, None)
    # a question in two hops: the model writes its own plan, then says what the first search found
    run, _ = make_run("Parcel 12 went to a courier. Which depot does the courier who took it use?",
                      prompt_profile="small")  # fmt: skip
    assert run.start().prefill == "```repl\n# Two steps: find"
    run.receive_reply(reply('```repl\n# Two steps: find parcel 12\nsearch("parcel 12")\n```'))
    second = run.receive_execution(ok("[1] context: parcel 12 left with Ada Moss\n"), answer_ready=False)
    assert (second.prefill, second.closing) == ("```repl\n# Found in [1]:", None)
    run, _ = make_run()
    assert (run.start().max_tokens, run.start.__self__.config.stop) == (16384, ())
    run, _ = make_run(max_reply_tokens=300, max_iterations=1)
    run.start()
    action = run.receive_reply(reply("```repl\nx = 1\n```"))
    final = run.receive_execution(ok(), answer_ready=False)
    assert final.final_turn and final.max_tokens == 300 and final.stop == ()  # the last word is prose
    with pytest.raises(ValueError, match="max_reply_tokens must be at least 16"):
        RLMConfig(backend="replay", max_reply_tokens=4)


def test_after_a_failed_step_the_small_profile_reply_writes_the_failing_line_anew():
    run, _ = make_run(prompt_profile="small")
    run.start()
    run.receive_reply(reply('```repl\nrows = context.split()\nn = rows["x"]\nprint(n)\n```'))
    error = (
        'Traceback (most recent call last):\n  File "<rlm-step-1>", line 2, in <module>\n'
        "TypeError: list indices must be integers or slices, not str\n"
    )
    after = run.receive_execution(ok(error, error=error), answer_ready=False)
    assert after.prefill == "```repl\nrows = context.split()\n"  # not a reply that sets the answer from n
    again = run.receive_reply(reply('```repl\nrows = context.split()\nn = rows["x"]\nprint(n)\n```'))
    # the same code again: resampled, not from the lines that led to it (they are the first start)
    assert again.sampling and again.prefill == "```repl\n"
    run.receive_reply(reply("```repl\nrows = context.split()\nn = len(rows)\nprint(n)\n```"))
    assert (
        run.receive_execution(ok("100\n"), answer_ready=False).prefill
        == '```repl\nanswer["content"] = str(n)\n'
    )
    # a failed step written again from its lines is resampled from the lines that load the context
    run, _ = make_run(prompt_profile="small", context=[{"a": i, "b": 2 * i} for i in range(30)])
    first = run.start().prefill
    assert first == "```repl\nimport pandas as pd\ndf = pd.DataFrame(context)\n"
    step = 'import pandas as pd\ndf = pd.DataFrame(context)\nk = 2\nn = df["x"]\nprint(n)'
    run.receive_reply(reply(f"```repl\n{step}\n```"))
    error = 'Traceback (most recent call last):\n  File "<rlm-step-1>", line 4, in <module>\nKeyError: x\n'
    after = run.receive_execution(ok(error, error=error), answer_ready=False)
    assert after.prefill == first + "k = 2\n"
    again = run.receive_reply(reply(f"```repl\n{step}\n```"))
    assert again.sampling and again.prefill == first
    # where the first line raised, the reply begins as the first one did
    run, _ = make_run(prompt_profile="small")
    first = run.start().prefill
    run.receive_reply(reply('```repl\nanswer["content"] = str(n)\n```'))
    error = 'Traceback (most recent call last):\n  File "<rlm-step-1>", line 1, in <module>\nNameError: n\n'
    assert run.receive_execution(ok(error, error=error), answer_ready=False).prefill == first
    # other profiles write their replies whole
    run, _ = make_run()
    run.start()
    run.receive_reply(reply("```repl\nx = 1\ny = z\n```"))
    error = 'Traceback (most recent call last):\n  File "<rlm-step-1>", line 2, in <module>\nNameError: z\n'
    assert run.receive_execution(ok(error, error=error), answer_ready=False).prefill is None


def test_after_a_step_that_printed_one_value_the_small_profile_reply_answers_with_that_variable():
    run, _ = make_run(prompt_profile="small")
    run.start()
    run.receive_reply(
        reply("```repl\nrows = context.split()\ntotal_rows = len(rows)\nprint(total_rows)\n```")
    )
    after = run.receive_execution(ok("100\n"), answer_ready=False)
    assert after.prefill == '```repl\nanswer["content"] = str(total_rows)\n'  # not the examples' str(n)
    # a step that printed a table, or printed nothing, or not one variable: the reply is the model's
    for code, out in [("print(df)", "   a\n0  1\n1  2\n"), ("x = 1", ""), ("print(len(rows))", "100\n")]:
        run.receive_reply(reply(f"```repl\n{code}\n```"))
        assert run.receive_execution(ok(out), answer_ready=False).prefill is None
    run, _ = make_run()  # other profiles write their replies whole
    run.start()
    run.receive_reply(reply("```repl\nn = 1\nprint(n)\n```"))
    assert run.receive_execution(ok("1\n"), answer_ready=False).prefill is None


def test_a_column_named_without_its_nested_prefix_is_named_in_full_where_the_reply_writes_it_anew():
    from rlm_kernel.worked import retry_start

    code = 'import pandas as pd\ndf = pd.json_normalize(context)\nbest = df["acc"].idxmax()\nprint(best)'
    error = (
        "Traceback (most recent call last):\n  File \"<rlm-step-1>\", line 3, in <module>\nKeyError: 'acc'\n"
        "Hint: Close column names: 'metrics.acc'. Columns of the DataFrames: df: id, metrics.acc.\n"
    )
    fixed = (
        '```repl\nimport pandas as pd\ndf = pd.json_normalize(context)\nbest = df["metrics.acc"].idxmax()\n'
    )
    assert retry_start(code, error, None) == (fixed, None)
    # two nested columns of that name, or a name merely close: the line is the model's to write
    for hint in ("'metrics.acc', 'summary.acc'.", "'accuracy'."):
        other = error.replace("'metrics.acc'.", hint)
        assert retry_start(code, other, None) == (
            "```repl\nimport pandas as pd\ndf = pd.json_normalize(context)\n",
            None,
        )


def test_a_column_read_from_the_frame_that_lacks_it_is_read_from_the_one_that_has_it():
    from rlm_kernel.worked import retry_start

    load = "import pandas as pd\ndf = pd.json_normalize(context)\ncalls_df = make(df)\ndf = df.drop(columns=['calls'])\n"
    first = (f"```repl\n{load}", None)
    line = 'mask = (df["line"] == "IC3") & (df["station"] == "Olten")'
    code = f"{load}{line}\nn = int(mask.sum())\nprint(n)"
    error = (
        'Traceback (most recent call last):\n  File "<rlm-step-1>", line 5, in <module>\n'
        "KeyError: 'station'\nHint: 'station' is a column of calls_df. Columns of the DataFrames: "
        "df: line, days; calls_df: row, station, dep, line, days.\n"
    )
    fixed = 'mask = (calls_df["line"] == "IC3") & (calls_df["station"] == "Olten")'
    assert retry_start(code, error, first) == (f"```repl\n{load}{fixed}\n", None)
    # a column that frame lacks too, a frame the model made itself, or no load lines: the model's to write
    for other, start in [
        (line.replace('"line"', '"name"'), first),
        (line.replace("df[", "trains["), first),
        (line, None),
    ]:
        assert retry_start(code.replace(line, other), error, start) == (f"```repl\n{load}", None)


def test_conditions_joined_without_parentheses_get_them_where_the_reply_writes_the_line_anew():
    from rlm_kernel.worked import retry_start

    code = "import pandas as pd\ndf = pd.DataFrame(context)\nm = df[df['d'] >= '2025-01-13' & df['d'] <= '2025-01-17']"
    error = (
        'Traceback (most recent call last):\n  File "<rlm-step-1>", line 3, in <module>\n'
        "TypeError: unsupported operand type(s) for &: 'str' and 'StringArray'\n"
    )
    start, _ = retry_start(code, error, None)
    assert start.endswith("\nm = df[(df['d'] >= '2025-01-13') & (df['d'] <= '2025-01-17')]\n")
    ambiguous = error.replace(
        "TypeError: unsupported", "ValueError: The truth value of a Series is ambiguous"
    )
    line = "m = df[df.a > 1 & df.b < 2 | df.c == 3]"
    assert retry_start(code.replace(code.splitlines()[2], line), ambiguous, None)[0].endswith(
        "\nm = df[(df.a > 1) & (df.b < 2) | (df.c == 3)]\n"
    )
    # a chained comparison meant as one, or another error: the line is the model's to write
    for line, said in [
        ("m = df[1 < df.a < 3]", error),
        (code.splitlines()[2], error.replace("TypeError: unsupported", "KeyError: unsupported")),
    ]:
        start, _ = retry_start(code.replace(code.splitlines()[2], line), said, None)
        assert start == "```repl\nimport pandas as pd\ndf = pd.DataFrame(context)\n"


def test_an_empty_answer_is_sent_back_once_then_an_error_not_a_success():
    run, events = make_run()
    run.start()
    run.receive_reply(reply("```repl\nprint(len(context))\n```"))
    again = run.receive_execution(ok("300\n"), answer_ready=True, answer="   ")
    assert isinstance(again, AskRoot) and again.reopen
    assert "Your answer is empty" in again.messages[-1]["content"]
    (doubted,) = [e for e in events if e.kind == "answer_doubted"]
    assert (doubted.content, doubted.reason) == ("   ", "it is empty")
    run.receive_reply(reply("```repl\nanswer['ready'] = True\n```"))
    action = run.receive_execution(ok(""), answer_ready=True, answer="")
    assert action == Finish("", "The answer is empty: the root finished without content.", "empty")
    assert events[-1].error == action.error
    assert not [e for e in events if e.kind == "warning"]  # an empty answer is an error, not a doubt


def test_a_traceback_that_quotes_the_answer_does_not_support_it():
    run, events = make_run(question="How many notes are about music?")
    run.start()
    run.receive_reply(reply("```repl\nlabels = classify(items, 0)\n```"))
    trace = 'File "<rlm-step-1>", line 1\n    labels = classify(items, 0)\nTypeError: bad labels'
    run.receive_execution(ok(error=trace), answer_ready=False)
    run.receive_reply(reply("```repl\nanswer['content'] = '0'\nanswer['ready'] = True\n```"))
    again = run.receive_execution(ok(), answer_ready=True, answer="0")
    assert isinstance(again, AskRoot) and again.reopen
    (doubted,) = [e for e in events if e.kind == "answer_doubted"]
    assert doubted.content == "0"
    assert next(e.output for e in events if e.kind == "step_finished").endswith("TypeError: bad labels")


def test_an_answer_without_any_code_is_kept_with_a_warning():
    run, events = make_run()
    run.start()
    run.receive_reply(reply("It is 42.\nFINAL(42)"))
    action = run.receive_final("42", None)
    assert action == Finish("42")
    (warning,) = [e for e in events if e.kind == "warning"]
    assert warning.code == "no_code" and "without running any code" in warning.text


def test_an_answer_set_by_a_step_that_raised_is_kept_with_a_warning():
    run, events = make_run()
    run.start()
    run.receive_reply(reply("```repl\nanswer['content'] = '7'\nanswer['ready'] = True\n1 / 0\n```"))
    action = run.receive_execution(
        ok(error="ZeroDivisionError: division by zero"), answer_ready=True, answer="7"
    )
    assert action == Finish("7")
    assert [e.code for e in events if e.kind == "warning"] == ["after_error"]


def test_a_reply_stopped_in_a_loop_or_at_its_limit_is_said_so():
    run, events = make_run()
    run.start()
    looping = Completion(text="The license says. " * 30, model="m", extra={"finish_reason": "repetition"})
    action = run.receive_reply(looping)
    assert "kept repeating itself, so it was stopped after 540 characters" in action.messages[-1]["content"]
    cut = Completion(text="```repl\nx = [1,", model="m", extra={"finish_reason": "length"})
    run.receive_reply(cut)
    action = run.receive_execution(ok(error="SyntaxError: '[' was never closed"), answer_ready=False)
    assert "reached the limit of tokens per reply and was cut" in action.messages[-1]["content"]
    assert [e.code for e in events if e.kind == "warning"] == ["repetition", "reply_cut"]


def test_a_reply_stopped_while_writing_the_same_lines_again_runs_them_once():
    run, events = make_run()
    run.start()
    block = "".join(f"a = a[a['who'] != '{m}']\n" for m in ("sara.kim", "olivia.park", "mike.chen"))
    text = "```repl\na = load()\n" + block * 5 + "a = a[a['w"
    action = run.receive_reply(Completion(text=text, model="m", extra={"finish_reason": "repetition"}))
    assert action.code == "a = load()\n" + block
    assert [e.code for e in events if e.kind == "warning"] == ["repetition"]


def test_cut_output_says_how_much_and_where_the_question_words_were():
    events = []
    run = RLMRun(
        RLMConfig(backend="replay", max_output_chars=1000),
        question="What is the code for the boathouse?",
        context_meta=context_metadata("x"),
        model="m",
        sub_model="m",
        emit=events.append,
        run_id="r1",
        started=1.0,
    )
    run.start()
    run.receive_reply(reply("```repl\nprint(context)\n```"))
    printed = "a" * 2000 + " the boathouse code is 4821 " + "b" * 5000
    action = run.receive_execution(ok(printed), answer_ready=False)
    text = action.messages[-1]["content"]
    assert "Your output was cut: 6,028 of its 7,028 characters were not shown." in text
    assert "'boathouse' at character 2,005" in text and "'code' at character 2,015" in text
    assert "Print slices or summaries instead of everything." in text
    assert "4821" not in text  # the root learns where to look, not the answer


# -- the answer's check: sent back once, then kept with a warning ------------------------------------
COUNT = "How many passages mention the gopher protocol?"
REPORT = (
    "search('gopher protocol'): 7 passages match; the best 3:\n"
    "[1] context, character 19,104: the gopher protocol uses port 70\n"
    "[2] context, character 20,500: gopher was made in 1991\n"
    "[3] context, character 31,000: a gopher server lists 12 items\n"
)
SET = "```repl\nanswer['content'] = '7'\nanswer['ready'] = True\n```"


def searched(**settings):
    """A run on COUNT whose first step printed a search report, asking its second turn."""
    run, events = make_run(COUNT, **settings)
    run.start()
    run.receive_reply(reply("```repl\nsearch('gopher protocol')\n```"))
    action = run.receive_execution(ok(REPORT), answer_ready=False)
    assert isinstance(action, AskRoot) and not action.reopen
    return run, events


def warnings_of(events):
    return [e for e in events if e.kind == "warning"]


def test_an_unsupported_answer_gets_one_more_turn_then_a_warning():
    run, events = searched()
    run.receive_reply(reply(SET))
    action = run.receive_execution(ok("answer set\n"), answer_ready=True, answer="7")
    assert isinstance(action, AskRoot) and action.reopen and not action.final_turn
    text = action.messages[-1]["content"]
    assert "Output of step 2:\nanswer set" in text  # the step's own output is shown
    assert 'Your answer "7" is not supported by what your code printed: ' in text
    assert "a number read from search matches, not computed" in text
    (doubted,) = [e for e in events if e.kind == "answer_doubted"]
    assert (doubted.content, doubted.source, doubted.by) == ("7", "answer", "check")
    assert events[-1].kind == "root_request" and "not supported" in events[-1].content  # the trajectory
    assert not [e for e in events if e.kind in ("answer_set", "warning", "run_ended")]
    run.receive_reply(reply(SET))
    finish = run.receive_execution(ok(), answer_ready=True, answer="7")
    assert finish == Finish("7")  # kept: the run has the answer, and a warning says what to doubt
    (warning,) = warnings_of(events)
    assert (
        warning.code == "unsupported"
        and "search matches" in warning.text
        and "sent back once" in warning.text
    )
    assert [e.kind for e in events][-3:] == ["answer_set", "warning", "run_ended"]


def test_a_supported_second_answer_ends_the_run_without_a_warning():
    run, events = searched()
    run.receive_reply(reply(SET))
    action = run.receive_execution(ok(), answer_ready=True, answer="7")
    assert isinstance(action, AskRoot) and action.reopen
    run.receive_reply(reply("```repl\nn = count_matches()\nprint(n)\n```"))
    finish = run.receive_execution(ok("12\n"), answer_ready=True, answer="12")
    assert finish == Finish("12")
    assert warnings_of(events) == [] and events[-1].kind == "run_ended" and events[-1].stop == "answer"


def test_later_blocks_of_the_reply_are_not_run_after_the_answer_is_sent_back():
    run, _ = searched()
    run.receive_reply(reply(SET + "\n```repl\nprint('more')\n```"))
    action = run.receive_execution(ok(), answer_ready=True, answer="7")
    assert "1 later code block(s) of your reply were not run." in action.messages[-1]["content"]


def test_no_turn_left_means_no_second_chance_only_the_warning():
    run, events = searched(max_iterations=2)
    run.receive_reply(reply(SET))
    finish = run.receive_execution(ok(), answer_ready=True, answer="7")
    assert finish == Finish("7")
    assert [w.code for w in warnings_of(events)] == ["unsupported"]
    assert not [e for e in events if e.kind == "answer_doubted"]


def test_a_final_directive_is_checked_like_the_answer_dict():
    run, events = searched()
    action = run.receive_reply(reply("The count is in the report.\nFINAL(7)"))
    assert isinstance(action, ResolveFinal)
    action = run.receive_final("7", None)
    assert isinstance(action, AskRoot) and action.reopen
    (doubted,) = [e for e in events if e.kind == "answer_doubted"]
    assert doubted.source == "FINAL"
    run.receive_reply(reply("```repl\nprint(len(hits))\n```\nFINAL_VAR(n)"))
    assert isinstance(
        run.receive_execution(ok("7 hits, of which 3 are about the protocol\n"), answer_ready=False),
        ResolveFinal,
    )
    assert run.receive_final("3", None) == Finish("3")
    assert warnings_of(events) == []


def test_the_answer_now_turn_is_checked_for_a_warning_but_not_sent_back():
    run, events = searched(max_iterations=1)
    # the first turn was the only one: the second was the "answer now" turn
    assert run._final_turn
    finish = run.receive_reply(reply("FINAL(7)"))
    assert isinstance(finish, Finish) and finish.stop == "max_iterations" and finish.response == "7"
    assert [w.code for w in warnings_of(events)] == ["unsupported"]


def test_a_humans_answer_is_not_checked():
    run, events = searched()
    finish = run.human_answer("7")
    assert finish == Finish("7") and warnings_of(events) == []


def test_a_run_stopped_after_its_answer_was_sent_back_keeps_it_with_the_warning():
    run, events = searched()
    run.receive_reply(reply(SET))
    run.receive_execution(ok(), answer_ready=True, answer="7")
    finish = run.abort(RunCancelled())
    assert finish.response == "7" and finish.stop == "user"
    assert [w.code for w in warnings_of(events)] == ["unsupported"]


def test_answers_the_other_warnings_doubt_already_are_not_sent_back():
    run, events = make_run(COUNT)
    run.start()
    run.receive_reply(reply(SET))
    finish = run.receive_execution(ok(), answer_ready=True, answer="7")  # nothing seen: unseen
    assert finish == Finish("7") and [w.code for w in warnings_of(events)] == ["unseen"]


def test_verify_asks_the_sub_model_and_an_unsupported_verdict_sends_the_answer_back():
    run, events = searched(verify=True)
    run.receive_reply(reply("```repl\nprint(len(matches))\n```"))
    action = run.receive_execution(ok("7\n"), answer_ready=True, answer="7")  # the cheap check passes
    assert isinstance(action, Verify) and run.state == "verifying"
    assert COUNT in action.prompt and "Answer: 7" in action.prompt and "SUPPORTED" in action.prompt
    assert "search('gopher protocol'): 7 passages match" in action.prompt  # the latest outputs
    action = run.receive_verdict("UNSUPPORTED: 7 is the number of search matches, not of passages")
    assert isinstance(action, AskRoot) and action.reopen
    assert (
        "a sub-model judged it unsupported (7 is the number of search matches"
        in action.messages[-1]["content"]
    )
    (doubted,) = [e for e in events if e.kind == "answer_doubted"]
    assert doubted.by == "verify"
    run.receive_reply(reply("```repl\nprint(sum(1 for p in passages if 'protocol' in p))\n```"))
    action = run.receive_execution(ok("2\n"), answer_ready=True, answer="2")
    assert isinstance(action, Verify)
    assert run.receive_verdict("SUPPORTED") == Finish("2")
    assert warnings_of(events) == []


@pytest.mark.parametrize(
    ("verdict", "warned"),
    [("UNSUPPORTED - it is the header's count", True), ("", False), ("I cannot tell.", False)],
)
def test_a_second_verdict_warns_only_when_it_is_unsupported(verdict, warned):
    run, events = searched(verify=True)
    run.receive_reply(reply(SET))
    run.receive_execution(ok(), answer_ready=True, answer="7")  # the cheap check sends it back
    run.receive_reply(reply("```repl\nprint(7)\n```"))
    assert isinstance(run.receive_execution(ok("7\n"), answer_ready=True, answer="7"), Verify)
    assert run.receive_verdict(verdict) == Finish("7")
    assert [w.code for w in warnings_of(events)] == (["unsupported"] if warned else [])


def test_a_human_may_answer_or_stop_while_the_verdict_is_awaited():
    run, events = searched(verify=True)
    run.receive_reply(reply("```repl\nprint(len(matches))\n```"))
    run.receive_execution(ok("7\n"), answer_ready=True, answer="7")
    run.hint("count only whole passages")
    assert run.human_answer("5") == Finish("5")
    run, events = searched(verify=True)
    run.receive_reply(reply("```repl\nprint(len(matches))\n```"))
    run.receive_execution(ok("7\n"), answer_ready=True, answer="7")
    finish = run.abort(BudgetExceeded("max_tokens", 10, 5))
    assert finish.response == "7" and finish.stop == "budget" and warnings_of(events) == []


def test_an_answer_the_code_computed_is_not_held_to_having_been_printed():
    run, events = searched()
    run.receive_reply(reply("```repl\nFINAL(len([p for p in passages if 'protocol' in p]))\n```"))
    assert run.receive_execution(ok(), answer_ready=True, answer="5") == Finish("5")
    run, events = searched()
    run.receive_reply(reply("```repl\nn = count()\n```\nFINAL_VAR(n)"))
    run.receive_execution(ok(), answer_ready=False)
    assert run.receive_final("5", None) == Finish("5")
    assert warnings_of(events) == []
    run, events = searched()  # written out, and nowhere printed
    run.receive_reply(reply("```repl\nanswer['content'] = '5'\nanswer['ready'] = True\n```"))
    action = run.receive_execution(ok(), answer_ready=True, answer="5")
    assert (
        isinstance(action, AskRoot) and "not in anything the code printed" in action.messages[-1]["content"]
    )


def test_the_code_a_human_edited_is_the_code_that_set_the_answer():
    run, _ = searched()
    run.receive_reply(reply("```repl\nFINAL(count())\n```"))
    run.human_edit(2, "FINAL(count())\n", "FINAL('5')\n")
    action = run.receive_execution(ok(), answer_ready=True, answer="5")
    assert isinstance(action, AskRoot) and action.reopen


def test_a_field_named_in_camel_case_that_the_data_shows_is_held_to_the_code_that_answers():
    """The run's own description of the context is what the check reads the data's names in."""
    rows = [{"stationId": k, "tripCount": k * 3} for k in range(40)]
    run, events = make_run(question="What is the tripCount of station 7?", context=rows)
    run.start()
    code = "n = len([r for r in context if r['stationId'] == 7])\nprint(n)\nanswer['content'] = str(n)"
    run.receive_reply(reply(f"```repl\n{code}\nanswer['ready'] = True\n```"))
    again = run.receive_execution(ok("1\n"), answer_ready=True, answer="1")
    assert isinstance(again, AskRoot) and again.reopen
    (doubted,) = [e for e in events if e.kind == "answer_doubted"]
    assert doubted.reason == "the code never used tripCount, which the question names"
