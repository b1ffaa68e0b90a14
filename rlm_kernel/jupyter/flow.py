"""Notebook mode as one table: where a run stands between the kernel's cells, and what each thing
that can happen to it does.

The root loop (:class:`~rlm_kernel.root_loop.Loop`) yields what it waits for: an LM's reply (ASK: the
root's, the sub-model's verdict on an answer, or the root model's notes for a compaction) or a
step's cell (STEP). Everything else comes from the kernel and the front end: the root replied, a
cell was placed or ran, the human paused, resumed, stopped, hinted, asked for another proposal, or
a view reconnected. ``FLOW[(phase, input)]`` gives
the next phase and the one effect :class:`~rlm_kernel.jupyter.notebook.NotebookRun` carries out;
the run keeps no other state about where it stands.

Inputs every live phase takes the same way (not repeated in the grid below):

    END          -> done / finish        the loop returned its Finish
    STOP         -> same / cancel        cancel the calls in flight; the loop then ends (END)
    INTERRUPTED  -> same / interrupt     a cell was interrupted: the run stops where it is
    HUMAN_RAN    -> same / record        a cell of the human's own ran: a step of the run
    HINT         -> same / hint          for the root's next turn
    RECONNECT    -> same / resend        a view became the owner: tell it everything again
    REGENERATE   -> same / refuse        (where the grid has no entry) no proposal to replace

    idle             ASK -> asking/ask; STEP -> proposed/propose; PAUSE -> paused/state
    asking           REPLIED -> idle/feed_reply; PAUSE -> paused_asking/state
    proposed         STEP_RAN -> idle/feed_step; PLACED -> proposed/bind;
                     REGENERATE -> idle/regenerate; PAUSE -> paused_proposed/state
    paused           ASK, STEP -> held/hold; RESUME -> idle/state
    paused_asking    REPLIED -> paused/feed_reply; RESUME -> asking/state
    paused_proposed  STEP_RAN -> paused/feed_step; PLACED -> paused_proposed/bind;
                     REGENERATE -> paused/regenerate; RESUME -> proposed/state
    held             RESUME -> idle/release

A run in ``done`` ignores everything. A wait (ASK, STEP) where the grid has none is a driver bug;
any other input it lacks changes nothing (a second Pause, a Resume that came late, the reply of a
call that was cancelled).
"""

from __future__ import annotations

from enum import Enum

__all__ = ["Phase", "Input", "Effect", "FLOW", "PAUSED", "LIVE", "advance"]


class Phase(Enum):
    IDLE = "idle"  # the loop is working towards its next wait
    ASKING = "asking"  # an LM call is in flight (the root's reply, a verdict, or notes)
    PROPOSED = "proposed"  # a step waits for its cell to run
    PAUSED = "paused"  # paused between waits: the next one will be held
    PAUSED_ASKING = "paused_asking"  # paused while the LM writes
    PAUSED_PROPOSED = "paused_proposed"  # paused with a step proposed: it may still be run
    HELD = "held"  # paused, with the loop's next wait kept back
    DONE = "done"


class Input(Enum):
    ASK = "ask"  # the loop waits for an LM's reply
    STEP = "step"  # the loop waits for a step's cell
    END = "end"  # the loop returned its Finish
    REPLIED = "replied"  # the LM call the loop waits on came back (or failed)
    PLACED = "placed"  # the proposed step's cell is known (inserted, or run with its metadata)
    STEP_RAN = "step_ran"  # the proposed step's cell ran
    HUMAN_RAN = "human_ran"  # another cell ran during the run
    INTERRUPTED = "interrupted"  # a cell of the run was interrupted
    REGENERATE = "regenerate"  # another proposal for the waiting step
    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"
    HINT = "hint"
    RECONNECT = "reconnect"


class Effect(Enum):
    NONE = "none"
    ASK = "ask"  # call the LM
    PROPOSE = "propose"  # send the step to the front end
    HOLD = "hold"  # keep the wait until Resume
    RELEASE = "release"  # take up the held wait
    FEED_REPLY = "feed_reply"  # the reply (or its error) to the loop
    FEED_STEP = "feed_step"  # the step's code and output to the loop
    BIND = "bind"  # the step's cell is this one
    REGENERATE = "regenerate"  # the loop asks the root again
    REFUSE = "refuse"  # not possible now: the front end learns where the run stands
    RECORD = "record"  # a human step, to the loop
    CANCEL = "cancel"
    INTERRUPT = "interrupt"
    HINT = "hint"
    RESEND = "resend"
    STATE = "state"  # tell the front end where the run stands
    FINISH = "finish"


P, In, E = Phase, Input, Effect

PAUSED = frozenset({P.PAUSED, P.PAUSED_ASKING, P.PAUSED_PROPOSED, P.HELD})
LIVE = frozenset(Phase) - {P.DONE}

_GRID: dict[Phase, dict[Input, tuple[Phase, Effect]]] = {
    P.IDLE: {
        In.ASK: (P.ASKING, E.ASK),
        In.STEP: (P.PROPOSED, E.PROPOSE),
        In.PAUSE: (P.PAUSED, E.STATE),
    },
    P.ASKING: {
        In.REPLIED: (P.IDLE, E.FEED_REPLY),
        In.PAUSE: (P.PAUSED_ASKING, E.STATE),
    },
    P.PROPOSED: {
        In.STEP_RAN: (P.IDLE, E.FEED_STEP),
        In.PLACED: (P.PROPOSED, E.BIND),
        In.REGENERATE: (P.IDLE, E.REGENERATE),
        In.PAUSE: (P.PAUSED_PROPOSED, E.STATE),
    },
    P.PAUSED: {
        In.ASK: (P.HELD, E.HOLD),
        In.STEP: (P.HELD, E.HOLD),
        In.RESUME: (P.IDLE, E.STATE),
    },
    P.PAUSED_ASKING: {
        In.REPLIED: (P.PAUSED, E.FEED_REPLY),
        In.RESUME: (P.ASKING, E.STATE),
    },
    P.PAUSED_PROPOSED: {
        In.STEP_RAN: (P.PAUSED, E.FEED_STEP),
        In.PLACED: (P.PAUSED_PROPOSED, E.BIND),
        In.REGENERATE: (P.PAUSED, E.REGENERATE),
        In.RESUME: (P.PROPOSED, E.STATE),
    },
    P.HELD: {
        In.RESUME: (P.IDLE, E.RELEASE),
    },
}

# What every live phase does the same way: the phase stays (or ends), the effect is the input's own.
_EVERYWHERE: dict[Input, Effect] = {
    In.STOP: E.CANCEL,
    In.INTERRUPTED: E.INTERRUPT,
    In.HUMAN_RAN: E.RECORD,
    In.HINT: E.HINT,
    In.RECONNECT: E.RESEND,
    In.REGENERATE: E.REFUSE,
}

FLOW: dict[tuple[Phase, Input], tuple[Phase, Effect]] = {
    **{(p, i): (p, e) for p in LIVE for i, e in _EVERYWHERE.items()},
    **{(p, In.END): (P.DONE, E.FINISH) for p in LIVE},
    **{(p, i): t for p, row in _GRID.items() for i, t in row.items()},
}


def advance(phase: Phase, event: Input) -> tuple[Phase, Effect]:
    """The next phase and the effect. A wait (ASK, STEP) the table lacks is a driver bug; any other
    input it lacks changes nothing."""
    if (phase, event) in FLOW:
        return FLOW[(phase, event)]
    if event in (In.ASK, In.STEP):
        raise RuntimeError(f"notebook run is {phase.value}; it cannot wait for {event.value}")
    return phase, E.NONE
