"""Everything that happens in a run, as frozen dataclasses, and the bus that carries them.

The JSON form of an event (``to_dict``) is the trajectory format and the payload
of the notebook comm protocol. Events never hold the context's value or an API
key: only metadata, code, what code printed, and LM text.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

__all__ = [
    "StopReason",
    "Event",
    "RunStarted",
    "RootRequest",
    "RootToken",
    "RootReply",
    "ProposalRejected",
    "Compacted",
    "StepStarted",
    "StepFinished",
    "SubcallStarted",
    "SubcallFinished",
    "ToolCalled",
    "AnswerSet",
    "AnswerDoubted",
    "HumanEdit",
    "Hint",
    "RunWarning",
    "RunEnded",
    "Voted",
    "EventBus",
    "event_from_dict",
]

# Why a run ended (``RunEnded.stop``), the one list front ends read instead of an error's text.
StopReason = Literal["answer", "max_iterations", "empty", "user", "interrupt", "budget", "error"]

log = logging.getLogger("rlm_kernel")


@dataclass(frozen=True, kw_only=True)
class Event:
    """Common fields: which run (and its parent), how deep, and when."""

    kind: ClassVar[str] = "event"
    run_id: str
    parent_id: str | None = None
    depth: int = 0
    ts: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        # Shallow on purpose: fields are plain values, and asdict's deep copy is a quarter of a replay's time.
        return {"kind": self.kind, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)}}


@dataclass(frozen=True, kw_only=True)
class RunStarted(Event):
    kind: ClassVar[str] = "run_started"
    question: str | None
    context_meta: dict[str, Any]
    model: str
    sub_model: str
    parent_call_id: str | None = None  # a child run: the rlm_query call of its parent that started it
    settings: dict[str, Any] = field(default_factory=dict)
    prompt: list[dict[str, Any]] = field(default_factory=list)  # the fixed prefix: system prompt, examples
    # A branch (rewind): the run it continues, and the root step of that run it proposes again. Its
    # ``prompt`` then holds that run's conversation up to the turn that proposed the step.
    parent_run: str | None = None
    branched_at: int | None = None
    # A branch's: how many messages of ``prompt`` are the conversation's fixed start (system prompt,
    # worked example, first request), and that first request as it was asked (compaction keeps both).
    fixed: int = 0
    opening: str = ""
    # A question of a session (``RLM.session``): the session, and its run before this one, whose
    # conversation is then this run's ``prompt`` (and ``fixed``, ``opening`` are set as a branch's).
    session: str | None = None
    follows: str | None = None


@dataclass(frozen=True, kw_only=True)
class RootRequest(Event):
    kind: ClassVar[str] = "root_request"
    turn: int
    messages: int  # how many messages were sent
    chars: int
    content: str = (
        ""  # the new user turn; with the replies and RunStarted.prompt it rebuilds the conversation
    )
    final_turn: bool = False


@dataclass(frozen=True, kw_only=True)
class RootToken(Event):
    kind: ClassVar[str] = "root_token"
    turn: int
    text: str


@dataclass(frozen=True, kw_only=True)
class RootReply(Event):
    kind: ClassVar[str] = "root_reply"
    turn: int
    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    latency_s: float = 0.0
    cost: float | None = None


@dataclass(frozen=True, kw_only=True)
class StepStarted(Event):
    kind: ClassVar[str] = "step_started"
    step: int
    code: str
    author: Literal["root", "human"] = "root"
    replayed: bool = False  # a branch re-running a step of the run it continues, to rebuild its REPL


@dataclass(frozen=True, kw_only=True)
class StepFinished(Event):
    kind: ClassVar[str] = "step_finished"
    step: int
    output: str  # what the root sees: stdout, stderr, last value, traceback (already truncated)
    error: str | None = None
    elapsed_s: float = 0.0
    cut_chars: int = 0
    restored: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SubcallStarted(Event):
    kind: ClassVar[str] = "subcall_started"
    call_id: str
    step: int | None
    model: str
    prompt_preview: str
    prompt_chars: int
    batch_id: str | None = None
    batch_size: int = 1
    call_kind: Literal["llm", "rlm"] = "llm"
    prompt_key: str = ""  # a hash of the whole request, by which a branch's replay finds the reply
    # The images sent (llm_query(images=)): media_type, width, height, bytes and, where Pillow is
    # installed, a thumbnail data URL of at most 96 pixels a side; never the image's own bytes.
    images: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class SubcallFinished(Event):
    kind: ClassVar[str] = "subcall_finished"
    call_id: str
    step: int | None
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    latency_s: float = 0.0
    cost: float | None = None
    error: str | None = None
    response_preview: str = ""
    batch_id: str | None = None
    call_kind: Literal["llm", "rlm"] = "llm"
    cancelled: bool = False  # stopped with its run, not failed
    response: str = ""  # the whole reply: the recording a branch's replay answers from
    replayed: bool = False  # answered from the recording, not asked again (and not paid again)


@dataclass(frozen=True, kw_only=True)
class ToolCalled(Event):
    """A tool ran: one the root's code called (``call_id`` None) or one a sub-call's model asked
    for (``call_id``: that sub-call), with what it was given and how much it gave back."""

    kind: ClassVar[str] = "tool_call"
    call_id: str | None
    step: int | None
    tool: str
    arguments: str  # as JSON, at most 1,000 characters
    result_chars: int = 0
    result_preview: str = ""
    latency_s: float = 0.0
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class AnswerSet(Event):
    kind: ClassVar[str] = "answer_set"
    content: str
    source: Literal["answer", "FINAL", "FINAL_VAR", "final_turn"]


@dataclass(frozen=True, kw_only=True)
class AnswerDoubted(Event):
    """An answer the root committed was not taken: what the code printed does not support it
    (``by`` the cheap check of ``rlm_kernel.grounding``, or the sub-model asked with ``verify``), or
    it is not of the run's ``output_type`` (``by`` "type").
    The root gets one more turn, told why; an ``AnswerSet`` follows when it answers again. Only a
    run's final answer can carry an ``unsupported`` warning."""

    kind: ClassVar[str] = "answer_doubted"
    content: str
    source: Literal["answer", "FINAL", "FINAL_VAR"]
    reason: str
    by: Literal["check", "verify", "type"] = "check"  # type: not of the run's output_type


@dataclass(frozen=True, kw_only=True)
class HumanEdit(Event):
    kind: ClassVar[str] = "human_edit"
    step: int
    proposed: str
    executed: str


@dataclass(frozen=True, kw_only=True)
class ProposalRejected(Event):
    """A reply set aside before any of it ran, and the root asked the same turn again: by the human
    (Regenerate), or by the engine, when the reply repeats failing code or pastes printed output
    (a loop, with a ``repetition`` warning)."""

    kind: ClassVar[str] = "proposal_rejected"
    step: int
    turn: int
    reply: str
    added: str = ""  # what came while the step waited (the human's cells, hints), added to the request
    sampling: dict[str, Any] | None = None  # the new request's temperature and seed
    # The turn before went with it (a loop of its failed step): its reply and output set aside, its
    # request asked again with ``added``.
    rewound: bool = False


@dataclass(frozen=True, kw_only=True)
class Hint(Event):
    kind: ClassVar[str] = "hint"
    text: str


@dataclass(frozen=True, kw_only=True)
class Compacted(Event):
    """The root's older turns were replaced by its notes on them, to fit its window
    (``compaction``). ``messages`` is the conversation from its first request on, before the next
    request (whose ``root_request`` follows); the fixed prefix before it is in ``run_started``. With
    the later requests and replies it rebuilds what the root saw.
    The summary's own call is a sub-call of the run, with its tokens."""

    kind: ClassVar[str] = "compacted"
    turn: int  # the request about to be made
    first_turn: int  # the turns summarised
    last_turn: int
    tokens: int  # the conversation with that request, before: the provider's count plus an estimate
    window: int
    summary: str
    names: list[str] = field(default_factory=list)  # the variables those turns made, by their code
    messages: list[dict[str, Any]] = field(default_factory=list)  # from the first request on


@dataclass(frozen=True, kw_only=True)
class RunWarning(Event):
    """Something a reader of the result should know that did not stop the run: an answer given
    without running code, an answer set by a step that raised, an answer what the code printed
    does not support (``unsupported``), a reply stopped in a loop, a sub-call's prompt over the
    window asked in parts (``subcall_split``), roots of a vote that do not agree
    (``low_confidence``)."""

    kind: ClassVar[str] = "warning"
    code: Literal[
        "no_code",
        "unseen",
        "after_error",
        "unsupported",
        "repetition",
        "reply_cut",
        "replay_diverged",
        "hint_unused",
        "compaction_failed",
        "subcall_split",
        "low_confidence",
    ]
    text: str


@dataclass(frozen=True, kw_only=True)
class RunEnded(Event):
    kind: ClassVar[str] = "run_ended"
    response: str | None
    error: str | None
    iterations: int
    elapsed_s: float
    # Why it ended, for front ends to read instead of the error's text.
    stop: StopReason = "answer"


@dataclass(frozen=True, kw_only=True)
class Voted(Event):
    """Several roots answered the question at once (``votes``) and this run's answer stands for
    them. Recorded, after its ``run_ended``, in the trajectory of the run whose answer won; each
    root's own run is in a trajectory of its own, named by ``runs`` (the greedy root's first).
    ``candidates``: each answer as its first root gave it, with ``count`` and the indexes of its
    ``roots``, most given first. ``clear``: more than half of the roots gave ``answer``; when not,
    a ``low_confidence`` warning follows."""

    kind: ClassVar[str] = "voted"
    answer: str | None
    clear: bool
    runs: list[str] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int = 0  # of all the roots' LM calls together, children included
    output_tokens: int = 0
    cost: float | None = None


_KINDS: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        RunStarted,
        RootRequest,
        RootToken,
        RootReply,
        ProposalRejected,
        Compacted,
        StepStarted,
        StepFinished,
        SubcallStarted,
        SubcallFinished,
        ToolCalled,
        AnswerSet,
        AnswerDoubted,
        HumanEdit,
        Hint,
        RunWarning,
        RunEnded,
        Voted,
    )
}


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from its JSON form (unknown fields are ignored, for forward compatibility)."""
    cls = _KINDS[data["kind"]]
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in data.items() if k in names}
    if "restored" in values:
        values["restored"] = tuple(values["restored"])
    return cls(**values)


Subscriber = Callable[[Event], None]


class EventBus:
    """Delivers each event to every subscriber, in order, from whichever thread emits it.

    Emission is serialised by a lock so that subscribers (the trajectory writer,
    widgets) see one consistent order. A subscriber that raises is logged with its
    traceback and stays subscribed; it never breaks the run.
    """

    def __init__(self, redact: Callable[[Event], Event] | None = None) -> None:
        self.redact = redact  # applied before any subscriber sees an event: no secret is recorded
        self._subscribers: list[Subscriber] = []
        self._lock = threading.RLock()
        self.failures: list[tuple[Subscriber, BaseException]] = []

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        with self._lock:
            self._subscribers.append(fn)

        def unsubscribe() -> None:
            with self._lock:
                if fn in self._subscribers:
                    self._subscribers.remove(fn)

        return unsubscribe

    def emit(self, event: Event) -> None:
        if self.redact is not None:
            event = self.redact(event)
        with self._lock:
            for fn in list(self._subscribers):
                try:
                    fn(event)
                except Exception as exc:  # a view must not break the run; report it loudly instead
                    self.failures.append((fn, exc))
                    log.exception("rlm_kernel: event subscriber %r failed on %s", fn, event.kind)
