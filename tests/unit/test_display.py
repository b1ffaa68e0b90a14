"""The stock widget in step mode, with real ipywidgets and no kernel: what it shows while a step runs."""

from __future__ import annotations

import asyncio

from waiting import wait_until

from rlm_kernel.events import (
    HumanEdit,
    RootReply,
    RunStarted,
    StepFinished,
    StepStarted,
    SubcallFinished,
    SubcallStarted,
)
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
    assert wait_until(lambda: "edited_by_the_human" in view.html(), timeout=5), view.html()
    assert "running…" in view.html() and "sum" not in view.html()
    assert "edited by a human" in view.html()

    view(HumanEdit(**RUN, step=1, proposed=PROPOSED, executed=EDITED))  # when the step has run
    view(StepFinished(**RUN, step=1, output="45"))
    assert wait_until(lambda: "running…" not in view.html(), timeout=5)
    assert "edited_by_the_human" in view.html() and "sum" not in view.html()


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


def test_an_update_sends_only_the_pieces_that_changed() -> None:
    """A long run's finished steps are not sent again each time its running step changes."""
    view = WidgetView(on_stop=lambda: None, min_interval=0.01)
    view.show()
    view(RunStarted(**RUN, question="q", context_meta={}, model="root-m", sub_model="sub-m"))
    for step in (1, 2, 3):
        view(StepStarted(**RUN, step=step, code=f"print({step})"))
        view(StepFinished(**RUN, step=step, output=str(step) * 2000))
    view(StepStarted(**RUN, step=4, code="x = llm_query('go')"))
    assert wait_until(lambda: "llm_query" in view.html(), timeout=5)
    _head, *steps, _tail = view.body.children
    sent: list[str] = []
    for piece in steps[:3]:
        piece.observe(lambda change: sent.append(change["new"]), names="value")
    for n in range(5):
        view(
            SubcallStarted(**RUN, call_id=f"c{n}", step=4, model="sub-m", prompt_preview="go", prompt_chars=2)
        )
        view(SubcallFinished(**RUN, call_id=f"c{n}", step=4, model="sub-m", response_preview="ok"))
    assert wait_until(lambda: "5 sub-call" in view.html(), timeout=5), view.html()
    assert sent == []  # steps 1 to 3 were not sent again
    assert "Step 2" in steps[1].value
