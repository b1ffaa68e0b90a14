"""The stock widget in step mode, with real ipywidgets and no kernel: what it shows while a step runs."""

from __future__ import annotations

import asyncio

from waiting import wait_until

from rlm_kernel.events import HumanEdit, RootReply, RunStarted, StepFinished, StepStarted
from rlm_kernel.jupyter.display import StepApproval, WidgetView

RUN = {"run_id": "r1", "ts": 0.0}
PROPOSED = "total = sum(range(10))\nprint(total)\n"
EDITED = "total = edited_by_the_human()\nprint(total)\n"


def test_an_edited_step_shows_the_code_that_runs_from_the_moment_it_starts() -> None:
    """The human's code runs at Run; the run records the edit only when the step has run, so for a
    long step the widget showed the root's proposal under "running…" and the edit at the end."""
    view = WidgetView(on_stop=lambda: None, min_interval=0.01)
    approval = StepApproval(view)
    view(RunStarted(**RUN, question="q", context_meta={}, model="root-m", sub_model="sub-m"))
    view(RootReply(**RUN, turn=1, text=f"```repl\n{PROPOSED}```", model="root-m"))
    view(StepStarted(**RUN, step=1, code=PROPOSED))

    async def human_edits_and_runs() -> str:
        waiting = asyncio.create_task(approval(1, PROPOSED))
        while approval.editor.value != PROPOSED:  # the step waits in the editor
            await asyncio.sleep(0)
        approval.editor.value = EDITED
        approval.run_button.click()
        return await waiting  # type: ignore[return-value]

    assert asyncio.run(human_edits_and_runs()) == EDITED
    # The step runs now; no HumanEdit has come yet.
    assert wait_until(lambda: "edited_by_the_human" in view.body.value, timeout=5), view.body.value
    assert "running…" in view.body.value and "sum" not in view.body.value
    assert "edited by a human" in view.body.value

    view(HumanEdit(**RUN, step=1, proposed=PROPOSED, executed=EDITED))  # when the step has run
    view(StepFinished(**RUN, step=1, output="45"))
    assert wait_until(lambda: "running…" not in view.body.value, timeout=5)
    assert "edited_by_the_human" in view.body.value and "sum" not in view.body.value


def test_a_step_run_as_proposed_is_not_marked_edited() -> None:
    view = WidgetView(on_stop=lambda: None, min_interval=0.01)
    approval = StepApproval(view)
    view(RunStarted(**RUN, question="q", context_meta={}, model="root-m", sub_model="sub-m"))
    view(StepStarted(**RUN, step=1, code=PROPOSED))

    async def human_runs() -> str:
        waiting = asyncio.create_task(approval(1, PROPOSED))
        while approval.editor.value != PROPOSED:
            await asyncio.sleep(0)
        approval.editor.value = PROPOSED.rstrip() + "\n\n"  # whitespace only: the run records no edit
        approval.run_button.click()
        return await waiting  # type: ignore[return-value]

    asyncio.run(human_runs())
    assert wait_until(lambda: approval.editor not in view.box.children, timeout=5)
    assert not view.state.steps[1].edited
    assert view.state.steps[1].code == PROPOSED
