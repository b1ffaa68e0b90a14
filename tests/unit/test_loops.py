"""No loop runs twice: a reply that repeats code that failed, or pastes printed output back as
code, is not run; the root gets a one-line note and is asked again, sampled, a bounded number of
times. Table tests of the engine, no I/O."""

from __future__ import annotations

import pytest

from rlm_kernel.config import RLMConfig
from rlm_kernel.engine import LOOP_RESAMPLES, LOOP_TURNS, AskRoot, Execute, Finish, RLMRun
from rlm_kernel.events import ProposalRejected, RunWarning, StepStarted
from rlm_kernel.executors.base import ExecResult
from rlm_kernel.export import conversations
from rlm_kernel.lm.base import Completion
from rlm_kernel.prompts import context_metadata
from rlm_kernel.rewind import branch_at

NAME_ERROR = (
    "Traceback (most recent call last):\n  Cell In[1], line 1\n    print(df.head())\n"
    "NameError: name 'df' is not defined"
)


def make_run(**settings):
    events: list = []
    run = RLMRun(
        RLMConfig(backend="replay", **settings),
        question="Which city is listed first?",
        context_meta=context_metadata("city,pop\nGraz,300\nLinz,200\n"),
        model="m",
        sub_model="m",
        emit=events.append,
        run_id="r1",
    )
    return run, events


def reply(text: str) -> Completion:
    return Completion(text=text, model="m", input_tokens=10, output_tokens=5)


def repl(*blocks: str) -> Completion:
    return reply("\n".join(f"```repl\n{b}\n```" for b in blocks))


def failed_once(code: str = "print(df.head())", error: str = NAME_ERROR):
    run, events = make_run()
    run.start()
    assert isinstance(run.receive_reply(repl(code)), Execute)
    ask = run.receive_execution(ExecResult(error=error), answer_ready=False)
    assert isinstance(ask, AskRoot) and ask.turn == 2
    return run, events


def executed(events) -> list[str]:
    return [e.code for e in events if isinstance(e, StepStarted)]


@pytest.mark.parametrize(
    "again",
    [
        "print(df.head())",
        "# look at the frame\nprint( df.head() )  # again",  # comments and spacing aside
        "\n\nprint(df.head())\n\n",
    ],
)
def test_a_reply_that_repeats_a_failing_step_is_not_run_but_asked_again_sampled(again):
    run, events = failed_once()
    action = run.receive_reply(repl(again))
    assert isinstance(action, AskRoot) and action.turn == 2  # the same turn, asked again
    assert action.sampling and action.sampling["temperature"] > 0  # another reply, not the same one
    assert executed(events) == ["print(df.head())\n"]  # the repeat never ran
    note = action.messages[-1]["content"].split("\n\n")[-1]
    assert "\n" not in note and "step 1" in note and "NameError: name 'df' is not defined" in note
    assert action.messages[-1]["role"] == "user"  # the looping reply is set aside, not kept
    (rejected,) = [e for e in events if isinstance(e, ProposalRejected)]
    assert (rejected.step, rejected.turn, rejected.added) == (2, 2, note)
    assert [e.code for e in events if isinstance(e, RunWarning)] == ["repetition"]
    # a new reply then runs, as the step the set-aside one would have been
    assert run.receive_reply(repl("import pandas as pd\nprint(pd)")) == Execute(
        2, "import pandas as pd\nprint(pd)\n"
    )


def test_the_same_error_is_sent_back_once_and_a_root_that_cannot_leave_its_loop_ends():
    run, events = failed_once()
    action: object = None
    replies = 0
    while not isinstance(action, Finish):
        replies += 1
        if isinstance(action, AskRoot) and action.final_turn:
            action = run.receive_reply(reply("FINAL(Graz)"))
            continue
        action = run.receive_reply(repl(f"# try {replies}\nprint(df.head())"))
        assert not isinstance(action, Execute), "a failing step ran again"
        assert replies < 200, "the loop is not bounded"
    assert replies == LOOP_TURNS * (LOOP_RESAMPLES + 1)  # then the run ends: it cannot get out
    assert action.error is not None and "2 turns in a row" in action.error
    assert executed(events) == ["print(df.head())\n"]
    requests = [e.content for e in events if e.kind == "root_request"]
    assert sum("NameError: name 'df' is not defined\n" in r or r.endswith("defined") for r in requests) == 1
    # one warning a turn, not one a reply
    repeated = [e for e in events if isinstance(e, RunWarning) and e.code == "repetition"]
    assert len(repeated) == LOOP_TURNS


def test_after_the_resamples_of_a_turn_the_note_alone_is_the_next_turn():
    run, events = failed_once()
    for k in range(LOOP_RESAMPLES):
        again = run.receive_reply(repl(f"print(df.head())  # {k}"))
        assert isinstance(again, AskRoot) and again.turn == 2 and again.sampling
    action = run.receive_reply(repl("print(df.head())"))
    assert isinstance(action, AskRoot) and action.turn == 3 and not action.sampling
    assert action.messages[-1]["content"].startswith("Not run: your code repeats step 1")
    assert action.messages[-2]["role"] == "assistant"  # kept this time: the turns alternate
    assert len([e for e in events if isinstance(e, ProposalRejected)]) == LOOP_RESAMPLES


def test_a_resample_that_gives_the_very_same_reply_again_ends_the_turn_s_resampling():
    run, events = failed_once()
    again = run.receive_reply(repl("print(df.head())"))
    assert isinstance(again, AskRoot) and again.turn == 2 and again.sampling
    # sampled, the model wrote it word for word: another sample would too, so the turn moves on
    action = run.receive_reply(repl("print(df.head())"))
    assert isinstance(action, AskRoot) and action.turn == 3 and not action.sampling
    assert len([e for e in events if isinstance(e, ProposalRejected)]) == 1


def test_a_reply_whose_blocks_repeat_a_failing_reply_up_to_its_error_is_not_run():
    run, events = make_run()
    run.start()
    run.receive_reply(repl("x = 1", "print(y)"))
    run.receive_execution(ExecResult(), answer_ready=False)
    run.receive_execution(ExecResult(error="NameError: name 'y' is not defined"), answer_ready=False)
    action = run.receive_reply(repl("x = 1", "print(y)", "print('more')"))
    assert isinstance(action, AskRoot) and action.sampling
    assert executed(events) == ["x = 1\n", "print(y)\n"]
    # a reply of several steps stays in the history: what its first step made is in the REPL
    (rejected,) = [e for e in events if isinstance(e, ProposalRejected)]
    assert (
        not rejected.rewound
        and action.messages[-2]["content"] == "```repl\nx = 1\n```\n```repl\nprint(y)\n```"
    )


def _bare(messages: list) -> list:
    return [(m["role"], m["content"]) for m in messages]


def test_a_repeat_of_the_step_that_just_failed_rewinds_its_turn_and_every_rebuild_agrees():
    run, events = make_run()
    opening = run.start()
    run.receive_reply(repl("print(df.head())"))
    run.receive_execution(ExecResult(error=NAME_ERROR + "\nHint: load it first."), answer_ready=False)
    action = run.receive_reply(repl("print( df.head() )  # again"))
    assert isinstance(action, AskRoot) and action.turn == 2 and action.sampling
    # The failed reply and its output are set aside: a model copies the failed code it sees. The
    # request that led to it is asked again, with what the error said.
    lesson = "Your code for this, step 1, failed (NameError: name 'df' is not defined Hint: load it first.). Write other code."
    first = opening.messages[-1]["content"]
    assert _bare(action.messages) == [*_bare(opening.messages[:-1]), ("user", f"{first}\n\n{lesson}")]
    (rejected,) = [e for e in events if isinstance(e, ProposalRejected)]
    assert rejected.rewound and rejected.added == lesson
    assert run.receive_reply(repl("import pandas as pd\nprint(pd)")) == Execute(
        2, "import pandas as pd\nprint(pd)\n"
    )
    # What the root saw, rebuilt from the events: for a branch, for training data
    assert _bare(branch_at(events, 2).messages) == _bare(action.messages)
    (conv,) = conversations(events)
    assert [(t.user, t.reply) for t in conv.turns] == [
        (action.messages[-1]["content"], "```repl\nimport pandas as pd\nprint(pd)\n```")
    ]
    assert conv.turns[0].rejected == ["```repl\nprint( df.head() )  # again\n```"]
    assert conv.steps == {1: "print(df.head())\n"}  # the failed step ran: its code is the run's


@pytest.mark.parametrize(
    "pasted",
    [
        "Output of step 1:\nshape: (2, 2)\ncolumns: city, pop",
        "shape: (2, 2)\ncolumns: city, pop",
        "Traceback (most recent call last):\nNameError: name 'df' is not defined",
    ],
)
def test_printed_output_pasted_back_as_code_is_not_run(pasted):
    run, events = make_run()
    run.start()
    run.receive_reply(repl("print('shape: (2, 2)')\nprint('columns: city, pop')"))
    run.receive_execution(ExecResult("shape: (2, 2)\ncolumns: city, pop\n"), answer_ready=False)
    run.receive_reply(repl("print(df)"))
    run.receive_execution(ExecResult(error=NAME_ERROR), answer_ready=False)
    action = run.receive_reply(repl(pasted))
    assert isinstance(action, AskRoot) and action.sampling
    assert "copy of printed output" in action.messages[-1]["content"]
    assert len(executed(events)) == 2
    assert [e.text for e in events if isinstance(e, RunWarning)] == [
        "Root reply 3 pasted printed output as code; it was not run."
    ]


@pytest.mark.parametrize(
    ("first", "error", "then", "runs"),
    [
        # code that failed, run again after a reply ran whole: the REPL is not what it was
        ("print(df)", NAME_ERROR, ["df = 1", "print(df)"], True),
        ("print(df)", NAME_ERROR, ["print(df.shape)"], True),  # other code
        ("print(df)", None, ["df = 2", "print(df)"], True),  # code that ran, after other code
        ("print(1)", None, ["[1, 2]"], True),  # an output that is Python is code
        ("print(1)", None, ["this is not python and was never printed"], True),  # a mistake, not a loop
    ],
)
def test_code_that_is_not_a_loop_runs(first, error, then, runs):
    run, events = make_run()
    run.start()
    run.receive_reply(repl(first))
    action = run.receive_execution(
        ExecResult("[1, 2]\n" if error is None else "", error=error), answer_ready=False
    )
    for code in then[:-1]:
        assert isinstance(run.receive_reply(repl(code)), Execute)
        action = run.receive_execution(ExecResult(), answer_ready=False)
    assert isinstance(action, AskRoot)
    assert isinstance(run.receive_reply(repl(then[-1])), Execute) is runs
    assert not [e for e in events if isinstance(e, ProposalRejected)]


def test_a_cell_the_human_ran_lets_failing_code_run_again():
    run, _ = failed_once()
    run.human_step("df = make_frame()", "")
    assert isinstance(run.receive_reply(repl("print(df.head())")), Execute)


def test_a_reply_that_says_its_code_over_and_over_runs_it_once():
    run, _ = make_run()
    run.start()
    looping = Completion(
        text="```repl\nprint(context[:50])\n```\n" * 6 + "```repl\nprint(len(context))\n```",
        model="m",
        extra={"finish_reason": "repetition"},
    )
    assert run.receive_reply(looping) == Execute(1, "print(context[:50])\n")
    assert run.receive_execution(ExecResult("city,pop\n"), answer_ready=False) == Execute(
        2, "print(len(context))\n"
    )
    action = run.receive_execution(ExecResult("27\n"), answer_ready=False)
    assert isinstance(action, AskRoot)
    assert (
        "5 code block(s) of your reply repeated the one before and were not run again."
        in (action.messages[-1]["content"])
    )


def ran_once(code: str = "print(context[:20])"):
    run, events = make_run()
    run.start()
    assert isinstance(run.receive_reply(repl(code)), Execute)
    ask = run.receive_execution(ExecResult("city,pop\nGraz,300\n"), answer_ready=False)
    assert isinstance(ask, AskRoot) and ask.turn == 2
    return run, events


def test_a_reply_that_repeats_the_reply_that_just_ran_is_not_run_again():
    """The same code over the same REPL prints the same output: the root proposing it again (in
    step mode, seven times in a row) is in a loop, whether or not the code failed."""
    run, events = ran_once()
    action = run.receive_reply(repl("# once more\nprint( context[:20] )"))
    assert isinstance(action, AskRoot) and action.turn == 2 and action.sampling
    note = action.messages[-1]["content"].split("\n\n")[-1].strip()
    assert "\n" not in note and "step 1" in note and "already ran" in note
    assert executed(events) == ["print(context[:20])\n"]
    assert [e.code for e in events if isinstance(e, RunWarning)] == ["repetition"]
    assert isinstance(run.receive_reply(repl("print(len(context))")), Execute)


def test_code_that_ran_before_runs_again_once_other_code_or_a_human_changed_the_repl():
    run, _ = ran_once()
    run.receive_reply(repl("x = 1"))
    run.receive_execution(ExecResult(), answer_ready=False)
    assert isinstance(run.receive_reply(repl("print(context[:20])")), Execute)
    run, _ = ran_once()
    run.human_step("context = context.upper()", "", None, 0.1)
    assert isinstance(run.receive_reply(repl("print(context[:20])")), Execute)


def test_a_reply_whose_closing_fence_the_stop_sequence_took_is_kept_whole():
    """The small profile stops a reply at its block's closing fence, which the server drops: the
    history (and the trajectory) hold the reply with its fence, and the code is the same."""
    run, events = make_run()
    run.start()
    cut = Completion(text="```repl\nprint(context[:20])\n", model="m", extra={"finish_reason": "stop"})
    assert run.receive_reply(cut) == Execute(1, "print(context[:20])\n")
    (recorded,) = [e.text for e in events if e.kind == "root_reply"]
    assert recorded == "```repl\nprint(context[:20])\n```" == run.messages[-1]["content"]
    long = Completion(text="```repl\nprint(cont", model="m", extra={"finish_reason": "length"})
    run.receive_execution(ExecResult("city,pop\n"), answer_ready=False)
    run.receive_reply(long)  # cut by its token limit: left as it came, open
    assert [e.text for e in events if e.kind == "root_reply"][-1] == "```repl\nprint(cont"
