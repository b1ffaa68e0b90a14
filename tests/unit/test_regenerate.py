"""Regenerate: a step that waits for the human is proposed again; the reply set aside is recorded,
the same turn is asked again, and export keeps it as a rejected alternative."""

from __future__ import annotations

import time

from rlm_kernel.config import RLMConfig
from rlm_kernel.driver import Ran, Regenerate
from rlm_kernel.engine import AskRoot, Execute, Finish, RLMRun
from rlm_kernel.events import ProposalRejected
from rlm_kernel.executors.base import ExecResult, StepOutcome
from rlm_kernel.export import conversations, samples
from rlm_kernel.lm.base import Completion
from rlm_kernel.prompts import context_metadata


def reply(text: str) -> Completion:
    return Completion(text=text, model="m", input_tokens=1, output_tokens=1, extra={"finish_reason": "stop"})


def new_run(events: list) -> RLMRun:
    return RLMRun(
        RLMConfig(backend="replay"),
        question="q",
        context_meta=context_metadata("abc" * 10),
        model="m",
        sub_model="m",
        emit=events.append,
        run_id="r1",
        started=time.perf_counter(),
    )


def test_a_rejected_proposal_is_asked_again_as_the_same_turn():
    events: list = []
    run = new_run(events)
    ask = run.start()
    assert isinstance(ask, AskRoot) and ask.turn == 1
    step = run.receive_reply(reply("```repl\nimport os\n```"))
    assert isinstance(step, Execute) and step.step == 1 and run.can_regenerate
    again = run.regenerate()
    assert isinstance(again, AskRoot) and again.turn == 1
    assert again.messages == ask.messages  # the set-aside reply is not in the conversation
    rejected = [e for e in events if isinstance(e, ProposalRejected)]
    assert [(e.step, e.turn, e.reply) for e in rejected] == [(1, 1, "```repl\nimport os\n```")]
    step = run.receive_reply(reply("```repl\nprint(len(context))\n```"))
    assert isinstance(step, Execute) and step.step == 1  # the same step number
    done = run.receive_execution(ExecResult("5\n"), answer_ready=True, answer="5")
    assert isinstance(done, Finish) and done.response == "5"

    (conv,) = conversations(events)
    (sample,) = list(samples(conv))
    assert sample["messages"][-1]["content"] == "```repl\nprint(len(context))\n```"
    assert sample["rejected"] == [{"role": "assistant", "content": "```repl\nimport os\n```"}]


def test_a_step_after_another_of_its_reply_ran_is_not_proposed_again():
    events: list = []
    run = new_run(events)
    run.start()
    run.receive_reply(reply("```repl\na = 1\n```\n```repl\nb = 2\n```"))
    second = run.receive_execution(ExecResult(""), answer_ready=False)
    assert isinstance(second, Execute) and second.step == 2
    assert not run.can_regenerate


def test_the_loop_waits_again_when_a_regenerate_cannot_be_done():
    from rlm_kernel.driver import Loop, RunParts

    events: list = []
    run = new_run(events)

    class Tree:
        cancelled = False

        class budget:  # noqa: N801 - stands for the budget's one method used here
            @staticmethod
            def check() -> None:
                return None

    class Subcalls:
        step = None

    parts = RunParts(run, Tree(), None, Subcalls(), None)  # type: ignore[arg-type]
    loop = Loop(parts)
    loop.start()
    first = loop.send(reply("```repl\na = 1\n```\n```repl\nb = 2\n```"))
    second = loop.send(Ran(first.code, StepOutcome(ExecResult(""))))
    assert isinstance(second, Execute) and second.step == 2
    assert loop.send(Regenerate()) == second  # refused: the same step waits again


def test_a_human_step_and_a_hint_while_the_step_waits_are_in_the_regenerated_request():
    events: list = []
    run = new_run(events)
    ask = run.start()
    step = run.receive_reply(reply("```repl\nimport os\n```"))
    assert isinstance(step, Execute) and step.step == 1
    human = run.human_step("print(context[:3])", "abc\n")
    assert human == 2  # numbered after the waiting step
    run.hint("count the words")
    again = run.regenerate()
    request = again.messages[-1]["content"]
    assert request.startswith(ask.messages[-1]["content"])
    assert "The human ran a cell of their own (step 2)" in request and "abc" in request
    assert "Hint from the human: count the words" in request
    assert len(again.messages) == len(ask.messages)  # one user turn, one reply: nothing appended
    (rejected,) = [e for e in events if isinstance(e, ProposalRejected)]
    assert "step 2" in rejected.added and "count the words" in rejected.added

    step = run.receive_reply(reply("```repl\nprint(len(context.split()))\n```\n```repl\nx = 1\n```"))
    assert isinstance(step, Execute) and step.step == 1  # the waiting step's number, not 2 again
    second = run.receive_execution(ExecResult("1\n"), answer_ready=False)
    assert isinstance(second, Execute) and second.step == 3  # after the human's step 2
    following = run.receive_execution(ExecResult(""), answer_ready=False)
    assert isinstance(following, AskRoot)
    observed = following.messages[-1]["content"]
    assert "The human ran" not in observed and "Hint from the human" not in observed  # told once
    numbers = [(e.step, e.author) for e in events if type(e).__name__ == "StepStarted"]
    assert numbers == [(1, "root"), (2, "human"), (1, "root"), (3, "root")]


def test_a_regenerated_request_samples_with_a_recorded_seed_of_its_own():
    events: list = []
    run = new_run(events)
    first = run.start()
    assert first.sampling is None  # ordinary turns keep the backend's own sampling
    run.receive_reply(reply("```repl\nimport os\n```"))
    one = run.regenerate()
    run.receive_reply(reply("```repl\nimport sys\n```"))
    two = run.regenerate()
    assert one.sampling is not None and one.sampling["temperature"] > 0
    assert two.sampling is not None and two.sampling["seed"] != one.sampling["seed"]
    recorded = [e.sampling for e in events if isinstance(e, ProposalRejected)]
    assert recorded == [one.sampling, two.sampling]


def unmarked(messages: list) -> list:
    return [{k: v for k, v in m.items() if k != "cache"} for m in messages]


def test_a_branch_from_a_regenerated_step_sees_the_request_as_it_was_asked():
    from rlm_kernel.rewind import branch_at

    events: list = []
    run = new_run(events)
    run.start()
    run.receive_reply(reply("```repl\nimport os\n```"))
    run.human_step("print(1)", "1\n")
    again = run.regenerate()
    run.receive_reply(reply("```repl\nprint(2)\n```"))
    run.receive_execution(ExecResult("2\n"), answer_ready=False)
    branch = branch_at(events, 1)
    # The human's step is in the request, once (the cache marks are the request's, not the record's).
    assert unmarked(branch.messages) == unmarked(again.messages)
    assert branch.late_human_steps == 0


def test_a_hint_the_root_never_saw_is_a_warning_not_dropped():
    events: list = []
    run = new_run(events)
    run.start()
    run.receive_reply(reply("```repl\nanswer['content'] = 'x'\nanswer['ready'] = True\n```"))
    run.hint("look at chapter 3")
    done = run.receive_execution(ExecResult(""), answer_ready=True, answer="x")
    assert isinstance(done, Finish)
    (warning,) = [e for e in events if type(e).__name__ == "RunWarning" and e.code == "hint_unused"]
    assert "look at chapter 3" in warning.text


def test_a_regenerated_request_keeps_only_the_fence_of_the_worked_opening():
    """The small profile starts the first reply for the model; asked again with that start, a small
    model writes the same step, so the request asked again opens only the code block."""
    events: list = []
    run = RLMRun(
        RLMConfig(backend="replay", prompt_profile="small"),
        question="Which city is named?",
        context_meta=context_metadata("abc " * 400),
        model="m",
        sub_model="m",
        emit=events.append,
        run_id="r2",
        started=time.perf_counter(),
    )
    first = run.start()
    assert first.prefill and first.prefill.startswith("```repl\n") and first.prefill != "```repl\n"
    run.receive_reply(reply(first.prefill + 'city")\n```'))
    again = run.regenerate()
    assert again.prefill == "```repl\n" and again.closing is None and again.sampling is not None


def _loop(events: list):
    from rlm_kernel.driver import Loop, RunParts

    run = new_run(events)

    class Tree:
        cancelled = False

        class budget:  # noqa: N801 - stands for the budget's one method used here
            @staticmethod
            def check() -> None:
                return None

    class Subcalls:
        step = None

    parts = RunParts(run, Tree(), None, Subcalls(), None)  # type: ignore[arg-type]
    return run, Loop(parts)


def test_a_human_cell_that_runs_while_a_step_waits_takes_its_number_and_the_step_the_next():
    events: list = []
    _, loop = _loop(events)
    loop.start()
    first = loop.send(reply("```repl\na = 1\n```"))
    assert isinstance(first, Execute) and first.step == 1
    moved = loop.human_step("print(context[:3])", "abc\n", None, 0.1)
    assert moved == Execute(2, first.code)  # it ran after the human's cell
    after = loop.send(Ran("a = 2", StepOutcome(ExecResult(""))))  # edited before it ran
    assert isinstance(after, AskRoot)
    assert loop.human_step("x = 1", "", None, 0.1) is None  # no step waits: the next number
    again = loop.send(reply("```repl\nb = 1\n```"))
    assert isinstance(again, Execute) and again.step == 4
    finished = [e.step for e in events if type(e).__name__ == "StepFinished"]
    assert finished == [1, 2, 3]
    started = [(e.step, e.author) for e in events if type(e).__name__ == "StepStarted"]
    assert started == [(1, "root"), (1, "human"), (2, "root"), (3, "human"), (4, "root")]
    (edit,) = [e for e in events if type(e).__name__ == "HumanEdit"]
    assert edit.step == 2 and edit.executed == "a = 2"


def test_a_human_cell_that_runs_while_a_step_is_proposed_again_takes_its_number():
    events: list = []
    _, loop = _loop(events)
    loop.start()
    loop.send(reply("```repl\nimport os\n```"))
    ask = loop.send(Regenerate())
    assert isinstance(ask, AskRoot)
    assert loop.human_step("print(1)", "1\n", None, 0.1) is None
    step = loop.send(reply("```repl\nprint(len(context))\n```"))
    assert isinstance(step, Execute) and step.step == 2  # after the human's step 1
    started = [(e.step, e.author) for e in events if type(e).__name__ == "StepStarted"]
    assert started == [(1, "root"), (1, "human"), (2, "root")]


def test_steps_are_numbered_in_the_order_they_ran_when_a_human_cell_runs_first():
    """A human cell run while the root's step waits takes that step's number; the waiting step is
    announced again under the next, and runs under it."""
    events: list = []
    run = new_run(events)
    run.start()
    step = run.receive_reply(reply("```repl\nimport os\n```"))
    assert isinstance(step, Execute) and step.step == 1
    assert run.human_step("print(context[:3])", "abc\n", waiting=step.code) == 1
    after = run.receive_execution(ExecResult(""), answer_ready=False)
    assert isinstance(after, AskRoot)
    numbers = [(e.step, e.author, e.code) for e in events if type(e).__name__ == "StepStarted"]
    assert numbers == [
        (1, "root", "import os\n"),
        (1, "human", "print(context[:3])"),
        (2, "root", "import os\n"),
    ]
    assert [e.step for e in events if type(e).__name__ == "StepFinished"] == [1, 2]
    assert run.steps == 2


def test_a_human_cell_while_the_step_is_proposed_again_takes_its_number():
    events: list = []
    run = new_run(events)
    run.start()
    run.receive_reply(reply("```repl\nimport os\n```"))
    run.regenerate()
    assert run.regenerating
    assert run.human_step("print(context[:3])", "abc\n") == 1
    step = run.receive_reply(reply("```repl\nprint(len(context))\n```"))
    assert isinstance(step, Execute) and step.step == 2
