"""Notebook mode's states between cells, as tables: no kernel, no waiting."""

from __future__ import annotations

import pytest

from rlm_kernel.jupyter.flow import FLOW, PAUSED, Effect, Input, Phase, advance

P, In, E = Phase, Input, Effect


@pytest.mark.parametrize(
    ("inputs", "phases", "effects"),
    [
        # auto or step mode, unpaused: ask, propose, ask again, the end
        (
            [In.ASK, In.STEP, In.ASK, In.END],
            [P.ASKING, P.PROPOSED, P.ASKING, P.DONE],
            [E.ASK, E.PROPOSE, E.ASK, E.NONE],
        ),
        # two code blocks in one reply: one proposal after the other
        ([In.ASK, In.STEP, In.STEP], [P.ASKING, P.PROPOSED, P.PROPOSED], [E.ASK, E.PROPOSE, E.PROPOSE]),
        # paused while the root writes: its step is held until Resume, then proposed
        (
            [In.ASK, In.PAUSE, In.STEP, In.RESUME, In.STEP],
            [P.ASKING, P.PAUSED_ASKING, P.HELD, P.IDLE, P.PROPOSED],
            [E.ASK, E.NONE, E.HOLD, E.RELEASE, E.PROPOSE],
        ),
        # paused with a step proposed: the cell may still run, and asking for the next step is held
        (
            [In.ASK, In.STEP, In.PAUSE, In.ASK, In.RESUME, In.ASK],
            [P.ASKING, P.PROPOSED, P.PAUSED_PROPOSED, P.HELD, P.IDLE, P.ASKING],
            [E.ASK, E.PROPOSE, E.NONE, E.HOLD, E.RELEASE, E.ASK],
        ),
        # paused and resumed before anything came: nothing was held, nothing to release
        (
            [In.ASK, In.PAUSE, In.RESUME, In.STEP],
            [P.ASKING, P.PAUSED_ASKING, P.ASKING, P.PROPOSED],
            [E.ASK, E.NONE, E.NONE, E.PROPOSE],
        ),
        # stopped while held
        (
            [In.ASK, In.PAUSE, In.STEP, In.END],
            [P.ASKING, P.PAUSED_ASKING, P.HELD, P.DONE],
            [E.ASK, E.NONE, E.HOLD, E.NONE],
        ),
    ],
)
def test_sequences(inputs, phases, effects):
    phase, seen_phases, seen_effects = P.IDLE, [], []
    for event in inputs:
        phase, effect = advance(phase, event)
        seen_phases.append(phase)
        seen_effects.append(effect)
    assert (seen_phases, seen_effects) == (phases, effects)


@pytest.mark.parametrize("phase", list(Phase))
@pytest.mark.parametrize("event", [In.PAUSE, In.RESUME])
def test_a_control_the_table_lacks_changes_nothing(phase, event):
    if (phase, event) not in FLOW:
        assert advance(phase, event) == (phase, E.NONE)


@pytest.mark.parametrize("phase", [P.HELD, P.DONE])
@pytest.mark.parametrize("event", [In.ASK, In.STEP])
def test_a_wait_where_none_can_come_is_a_driver_bug(phase, event):
    with pytest.raises(RuntimeError, match="cannot wait"):
        advance(phase, event)


def test_the_paused_phases_are_those_a_resume_leaves():
    assert {p for (p, i) in FLOW if i is In.RESUME} == PAUSED


def test_every_phase_but_done_can_end():
    assert {p for (p, i) in FLOW if i is In.END} == set(Phase) - {P.DONE}
