"""Notebook mode's table: every phase against every input, and the paths a run takes."""

from __future__ import annotations

import pytest

from rlm_kernel.jupyter.flow import FLOW, LIVE, PAUSED, Effect, Input, Phase, advance

P, In, E = Phase, Input, Effect


def walk(inputs: list[Input], phase: Phase = P.IDLE) -> tuple[list[Phase], list[Effect]]:
    phases, effects = [], []
    for event in inputs:
        phase, effect = advance(phase, event)
        phases.append(phase)
        effects.append(effect)
    return phases, effects


@pytest.mark.parametrize(
    ("inputs", "phases", "effects"),
    [
        # ask, the root replies with a step, its cell is placed and runs, ask again, the end
        (
            [In.ASK, In.REPLIED, In.STEP, In.PLACED, In.STEP_RAN, In.ASK, In.REPLIED, In.END],
            [P.ASKING, P.IDLE, P.PROPOSED, P.PROPOSED, P.IDLE, P.ASKING, P.IDLE, P.DONE],
            [E.ASK, E.FEED_REPLY, E.PROPOSE, E.BIND, E.FEED_STEP, E.ASK, E.FEED_REPLY, E.FINISH],
        ),
        # paused while the root writes: its step is held until Resume, then proposed
        (
            [In.ASK, In.PAUSE, In.REPLIED, In.STEP, In.RESUME, In.STEP],
            [P.ASKING, P.PAUSED_ASKING, P.PAUSED, P.HELD, P.IDLE, P.PROPOSED],
            [E.ASK, E.STATE, E.FEED_REPLY, E.HOLD, E.RELEASE, E.PROPOSE],
        ),
        # paused with a step proposed: the cell may still run, and asking for the next step is held
        (
            [In.STEP, In.PAUSE, In.STEP_RAN, In.ASK, In.RESUME, In.ASK],
            [P.PROPOSED, P.PAUSED_PROPOSED, P.PAUSED, P.HELD, P.IDLE, P.ASKING],
            [E.PROPOSE, E.STATE, E.FEED_STEP, E.HOLD, E.RELEASE, E.ASK],
        ),
        # paused and resumed before anything came: nothing was held, nothing to release
        (
            [In.ASK, In.PAUSE, In.RESUME, In.REPLIED],
            [P.ASKING, P.PAUSED_ASKING, P.ASKING, P.IDLE],
            [E.ASK, E.STATE, E.STATE, E.FEED_REPLY],
        ),
        # Regenerate: the waiting step is dropped and the root is asked again
        (
            [In.STEP, In.REGENERATE, In.ASK, In.REPLIED, In.STEP],
            [P.PROPOSED, P.IDLE, P.ASKING, P.IDLE, P.PROPOSED],
            [E.PROPOSE, E.REGENERATE, E.ASK, E.FEED_REPLY, E.PROPOSE],
        ),
        # a human cell while a step waits is a step of the run; the proposal still waits
        (
            [In.STEP, In.HUMAN_RAN, In.STEP_RAN],
            [P.PROPOSED, P.PROPOSED, P.IDLE],
            [E.PROPOSE, E.RECORD, E.FEED_STEP],
        ),
        # stopped while held: cancel, then the loop's Finish
        (
            [In.ASK, In.PAUSE, In.REPLIED, In.STEP, In.STOP, In.END],
            [P.ASKING, P.PAUSED_ASKING, P.PAUSED, P.HELD, P.HELD, P.DONE],
            [E.ASK, E.STATE, E.FEED_REPLY, E.HOLD, E.CANCEL, E.FINISH],
        ),
        # the reply of a call cancelled by Stop comes after the end: ignored
        (
            [In.ASK, In.STOP, In.END, In.REPLIED],
            [P.ASKING, P.ASKING, P.DONE, P.DONE],
            [E.ASK, E.CANCEL, E.FINISH, E.NONE],
        ),
    ],
)
def test_paths(inputs, phases, effects):
    assert walk(inputs) == (phases, effects)


EXPECTED: dict[tuple[Phase, Input], tuple[Phase, Effect]] = {
    (P.IDLE, In.ASK): (P.ASKING, E.ASK),
    (P.IDLE, In.STEP): (P.PROPOSED, E.PROPOSE),
    (P.IDLE, In.PAUSE): (P.PAUSED, E.STATE),
    (P.ASKING, In.REPLIED): (P.IDLE, E.FEED_REPLY),
    (P.ASKING, In.PAUSE): (P.PAUSED_ASKING, E.STATE),
    (P.PROPOSED, In.STEP_RAN): (P.IDLE, E.FEED_STEP),
    (P.PROPOSED, In.PLACED): (P.PROPOSED, E.BIND),
    (P.PROPOSED, In.REGENERATE): (P.IDLE, E.REGENERATE),
    (P.PROPOSED, In.PAUSE): (P.PAUSED_PROPOSED, E.STATE),
    (P.PAUSED, In.ASK): (P.HELD, E.HOLD),
    (P.PAUSED, In.STEP): (P.HELD, E.HOLD),
    (P.PAUSED, In.RESUME): (P.IDLE, E.STATE),
    (P.PAUSED_ASKING, In.REPLIED): (P.PAUSED, E.FEED_REPLY),
    (P.PAUSED_ASKING, In.RESUME): (P.ASKING, E.STATE),
    (P.PAUSED_PROPOSED, In.STEP_RAN): (P.PAUSED, E.FEED_STEP),
    (P.PAUSED_PROPOSED, In.PLACED): (P.PAUSED_PROPOSED, E.BIND),
    (P.PAUSED_PROPOSED, In.REGENERATE): (P.PAUSED, E.REGENERATE),
    (P.PAUSED_PROPOSED, In.RESUME): (P.PROPOSED, E.STATE),
    (P.HELD, In.RESUME): (P.IDLE, E.RELEASE),
}
SAME_EVERYWHERE = {
    In.STOP: E.CANCEL,
    In.INTERRUPTED: E.INTERRUPT,
    In.HUMAN_RAN: E.RECORD,
    In.HINT: E.HINT,
    In.RECONNECT: E.RESEND,
}


@pytest.mark.parametrize("phase", list(Phase))
@pytest.mark.parametrize("event", list(Input))
def test_each_phase_against_each_input(phase: Phase, event: Input) -> None:
    """The whole table, pair by pair: what the grid says, what every live phase does alike, the
    end, and nothing (or a driver bug, for a wait) elsewhere."""
    if phase is P.DONE:
        if event in (In.ASK, In.STEP):
            with pytest.raises(RuntimeError, match="cannot wait"):
                advance(phase, event)
        else:
            assert advance(phase, event) == (P.DONE, E.NONE)
    elif (phase, event) in EXPECTED:
        assert advance(phase, event) == EXPECTED[(phase, event)]
    elif event is In.END:
        assert advance(phase, event) == (P.DONE, E.FINISH)
    elif event in SAME_EVERYWHERE:
        assert advance(phase, event) == (phase, SAME_EVERYWHERE[event])
    elif event is In.REGENERATE:
        assert advance(phase, event) == (phase, E.REFUSE)
    elif event in (In.ASK, In.STEP):
        with pytest.raises(RuntimeError, match="cannot wait"):
            advance(phase, event)
    else:
        assert advance(phase, event) == (phase, E.NONE)


def test_the_table_has_nothing_the_pairs_above_do_not_name() -> None:
    named = set(EXPECTED) | {(p, i) for p in LIVE for i in [*SAME_EVERYWHERE, In.END, In.REGENERATE]}
    assert set(FLOW) == named


def test_the_paused_phases_are_those_a_resume_leaves():
    assert {p for (p, i) in FLOW if i is In.RESUME} == PAUSED
