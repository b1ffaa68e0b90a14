"""Where a notebook-mode run stands between the kernel's cells, as an enum and one table.

The root loop (:class:`~rlm_kernel.driver.Loop`) yields what it waits for: an LM's reply (ASK: the
root's, or the sub-model's verdict on an answer) or a step's cell (STEP). Notebook mode adds
pausing: a wait that comes while the run is paused is held back until the human resumes.
``FLOW[(phase, input)]`` gives the next phase and what :class:`~rlm_kernel.jupyter.notebook.NotebookRun`
must do; an input the table does not list for a phase is ignored (a second Pause, a Resume that
came late).

    phase             ASK               STEP              PAUSE            RESUME          END
    idle              asking / ask      proposed / prop.
    asking            asking / ask      proposed / prop.  paused_asking                    done
    proposed          asking / ask      proposed / prop.  paused_proposed                  done
    paused_asking     held / hold       held / hold                        asking          done
    paused_proposed   held / hold       held / hold                        proposed        done
    held                                                                   idle / release  done
"""

from __future__ import annotations

from enum import Enum

__all__ = ["Phase", "Input", "Effect", "FLOW", "advance"]


class Phase(Enum):
    IDLE = "idle"  # between one wait and the next
    ASKING = "asking"  # the root LM is writing its reply
    PROPOSED = "proposed"  # a step waits for its cell to run
    PAUSED_ASKING = "paused_asking"  # paused while the root writes: its next wait will be held
    PAUSED_PROPOSED = "paused_proposed"  # paused with a step proposed: it may still be run
    HELD = "held"  # paused, with the loop's next wait kept back
    DONE = "done"


class Input(Enum):
    ASK = "ask"  # the loop waits for an LM's reply (the root's, or a verdict)
    STEP = "step"  # the loop waits for a step's cell
    PAUSE = "pause"
    RESUME = "resume"
    END = "end"  # the run finished, or was stopped


class Effect(Enum):
    NONE = "none"
    ASK = "ask"  # call the root LM
    PROPOSE = "propose"  # send the step to the front end
    HOLD = "hold"  # keep the wait until Resume
    RELEASE = "release"  # feed the held wait back in


P, In, E = Phase, Input, Effect
_WAITS = {In.ASK: (P.ASKING, E.ASK), In.STEP: (P.PROPOSED, E.PROPOSE)}
_HOLD = {In.ASK: (P.HELD, E.HOLD), In.STEP: (P.HELD, E.HOLD)}
_END = {In.END: (P.DONE, E.NONE)}

FLOW: dict[tuple[Phase, Input], tuple[Phase, Effect]] = {
    **{(P.IDLE, i): t for i, t in _WAITS.items()},
    **{(P.ASKING, i): t for i, t in {**_WAITS, **_END, In.PAUSE: (P.PAUSED_ASKING, E.NONE)}.items()},
    **{(P.PROPOSED, i): t for i, t in {**_WAITS, **_END, In.PAUSE: (P.PAUSED_PROPOSED, E.NONE)}.items()},
    **{(P.PAUSED_ASKING, i): t for i, t in {**_HOLD, **_END, In.RESUME: (P.ASKING, E.NONE)}.items()},
    **{(P.PAUSED_PROPOSED, i): t for i, t in {**_HOLD, **_END, In.RESUME: (P.PROPOSED, E.NONE)}.items()},
    (P.HELD, In.RESUME): (P.IDLE, E.RELEASE),
    (P.HELD, In.END): (P.DONE, E.NONE),
    (P.IDLE, In.END): (P.DONE, E.NONE),
}

PAUSED = frozenset({P.PAUSED_ASKING, P.PAUSED_PROPOSED, P.HELD})


def advance(phase: Phase, event: Input) -> tuple[Phase, Effect]:
    """The next phase and the effect. A wait (ASK, STEP) the table lacks is a driver bug; any other
    input it lacks changes nothing."""
    if (phase, event) in FLOW:
        return FLOW[(phase, event)]
    if event in (In.ASK, In.STEP):
        raise RuntimeError(f"notebook run is {phase.value}; it cannot wait for {event.value}")
    return phase, E.NONE
