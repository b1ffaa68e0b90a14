"""What a run of the root loop is made of, as data: where it is (``State``), which call it takes
in which state (``TRANSITIONS``), the actions it asks a driver to perform, and the records it keeps
while a reply runs and while an answer is checked. ``rlm_kernel.engine`` is the machine over them."""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field

from . import compaction, grounding
from .errors import RLMError
from .events import StopReason
from .lm.base import Message
from .protocol import FinalDirective

REGENERATE_TEMPERATURE = 0.8  # a regenerated proposal's: another proposal, even from a greedy model

__all__ = [
    "REGENERATE_TEMPERATURE",
    "STATES",
    "TRANSITIONS",
    "Action",
    "AskRoot",
    "Compact",
    "CommittedAnswer",
    "Execute",
    "Finish",
    "Followup",
    "LM_CALLS",
    "PendingReply",
    "ResolveFinal",
    "State",
    "Verify",
    "fresh_sampling",
]


class State(str, enum.Enum):
    """Where a run is. A ``str``, so ``run.state == "done"`` reads as it did."""

    NEW = "new"
    ASKING = "asking"
    EXECUTING = "executing"
    RESOLVING = "resolving"
    VERIFYING = "verifying"
    COMPACTING = "compacting"
    DONE = "done"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


NEW, ASKING, EXECUTING, RESOLVING, VERIFYING, COMPACTING, DONE, ERROR = State
_RUNNING = frozenset({NEW, ASKING, EXECUTING, RESOLVING, VERIFYING, COMPACTING})

# call -> the states it may be made in. The state after it is the action it returns:
# AskRoot -> asking, Execute -> executing, ResolveFinal -> resolving, Verify -> verifying,
# Compact -> compacting, Finish -> done.
TRANSITIONS: dict[str, frozenset[State]] = {
    "start": frozenset({NEW}),
    "receive_reply": frozenset({ASKING}),
    "receive_execution": frozenset({EXECUTING}),
    "receive_final": frozenset({RESOLVING}),
    "receive_verdict": frozenset({VERIFYING}),
    "receive_summary": frozenset({COMPACTING}),
    "hint": _RUNNING,
    "human_step": _RUNNING,
    "human_edit": frozenset({EXECUTING}),
    "regenerate": frozenset({EXECUTING}),
    "human_answer": frozenset({ASKING, EXECUTING, RESOLVING, VERIFYING, COMPACTING, DONE}),
    "abort": _RUNNING | {ERROR, DONE},
}
STATES = tuple(State)


@dataclass(frozen=True)
class AskRoot:
    messages: list[Message]
    turn: int
    final_turn: bool = False
    max_tokens: int | None = None  # the longest reply this turn may have
    stop: tuple[str, ...] = ()  # stop sequences, where the backend takes them
    prefill: str | None = None  # the reply's start, for a backend that continues it
    closing: str | None = None  # with the prefill: one more stop, which closes the call it began
    reopen: bool = False  # an answer was sent back: clear the REPL's answer["ready"] before any code runs
    # Sampling for this request only ({"temperature": ..., "seed": ...}): a regenerated proposal.
    sampling: dict[str, float | int] | None = None


@dataclass(frozen=True)
class Execute:
    step: int
    code: str
    replay: bool = False  # a branch's inherited step, run again to rebuild the REPL: no human approves it


@dataclass(frozen=True)
class ResolveFinal:
    directive: FinalDirective


@dataclass(frozen=True)
class Verify:
    """Ask the sub-model whether the committed answer is supported (``verify``)."""

    prompt: str
    max_tokens: int = grounding.VERIFY_TOKENS


@dataclass(frozen=True)
class Compact:
    """Summarise the root's older turns (``compaction``): a call on the root's model, recorded as a
    sub-call of the run. The reply, or the :class:`~rlm_kernel.subcall_api.SubcallError` of its
    failure, goes back."""

    prompt: str
    max_tokens: int = compaction.SUMMARY_TOKENS


@dataclass(frozen=True)
class Followup:
    """Where a session's next question starts: the conversation of its last run, and what
    compaction needs of it (its fixed start, its first request, earlier notes)."""

    session: str
    run_id: str
    messages: tuple[Message, ...]
    fixed: int
    opening: str
    summary: str | None = None
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finish:
    response: str | None
    error: str | None = None
    stop: StopReason = "answer"
    cause: RLMError | None = None  # the error that ended it, for a front end to raise


Action = AskRoot | Execute | ResolveFinal | Verify | Compact | Finish
LM_CALLS = (AskRoot, Verify, Compact)  # the actions a driver answers with an LM's reply


@dataclass
class PendingReply:
    """Code blocks of the current reply, and what they have produced so far."""

    blocks: list[str]
    directive: FinalDirective | None
    outputs: list[tuple[int, str]] = field(default_factory=list)
    failed: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass
class CommittedAnswer:
    """A committed answer while it is checked, and how the run ends if it is taken."""

    content: str
    source: str
    warnings: list[tuple[str, str]]  # no_code, unseen, after_error: emitted when it is taken
    retry: bool  # whether it may still be sent back
    written: bool = True  # the root wrote it out (code computed it: not held to being printed)
    error: str | None = None
    stop: StopReason = "answer"
    typed: str | None = None  # with an output_type: the value as JSON, which is what is kept


def fresh_sampling(key: str) -> dict[str, float | int]:
    """Sampling for a request asked again: another reply, not the same one, with a seed made from
    ``key`` (recorded, so the request can be made again)."""
    digest = hashlib.sha256(key.encode()).digest()
    return {"temperature": REGENERATE_TEMPERATURE, "seed": int.from_bytes(digest[:4], "big") >> 1}
