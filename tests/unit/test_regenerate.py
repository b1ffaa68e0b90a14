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
