"""Rewind: a new run that continues a recorded one from one of its root steps.

``branch_at(events, step)`` reads a run's trajectory and returns the :class:`Branch` that proposes
that step again. The branch's conversation is the recorded one up to the request the step's reply
answered; its REPL is rebuilt by running again every step that came before that reply (root and
human, as they ran, edits included), with their sub-calls answered from the recording, so nothing
is paid twice. Then the root is asked that turn again. The new run's ``run_started`` names the run
it continues (``parent_run``) and the step (``branched_at``), so views and export keep both.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError
from .events import (
    Compacted,
    Event,
    Hint,
    HumanEdit,
    ProposalRejected,
    RootReply,
    RootRequest,
    RunStarted,
    StepFinished,
    StepStarted,
    SubcallFinished,
    SubcallStarted,
)

__all__ = ["Branch", "ReplayedStep", "RecordedReplies", "branch_at"]


class RecordedReplies:
    """Sub-call replies of a recorded run, by step and request: each reply is given once, in the
    order it was recorded, so identical prompts of one step get their own replies."""

    def __init__(self, replies: dict[tuple[int, str], list[str]] | None = None) -> None:
        self._replies = {key: deque(values) for key, values in (replies or {}).items()}
        self._lock = threading.Lock()
        self.given = 0

    def take(self, step: int, key: str) -> str | None:
        with self._lock:
            queue = self._replies.get((step, key))
            if not queue:
                return None
            self.given += 1
            return queue.popleft()


@dataclass(frozen=True)
class ReplayedStep:
    step: int
    code: str  # as it ran: a human's edit of the proposal, where there was one
    author: str  # root or human
    output: str  # as recorded, to tell whether the replay saw the same
    error: bool


@dataclass(frozen=True)
class Branch:
    """Where a branch starts: the recorded conversation, the steps to run again, their replies."""

    parent_run: str
    step: int  # the root step proposed again: the first of its reply
    question: str | None
    messages: list[dict[str, Any]]  # ends with the request the root answers again
    turn: int  # that request's turn
    iterations: int  # root replies before it
    final_turn: bool
    steps: list[ReplayedStep]
    late_human_steps: int  # the last this many ``steps`` ran after the request: told to the root next turn
    hints: list[str]  # given after the request, for the root's next turn as in the recorded run
    replies: dict[tuple[int, str], list[str]] = field(repr=False)
    fixed: int = 0  # the conversation's fixed start: the recorded prompt and the first request
    opening: str = ""  # that first request, as it was asked
    compacted: Compacted | None = None  # the last compaction before the request, which the branch keeps

    def recorded(self) -> RecordedReplies:
        return RecordedReplies(self.replies)


def _root_run(events: list[Event], run_id: str | None) -> str:
    tops = [e.run_id for e in events if isinstance(e, RunStarted) and e.depth == 0]
    if run_id is not None:
        if run_id not in tops:
            raise ConfigError(f"The trajectory has no run {run_id!r}: it holds {', '.join(tops) or 'none'}.")
        return run_id
    if len(tops) != 1:
        raise ConfigError(
            f"The trajectory holds {len(tops)} runs: name the one to continue ({', '.join(tops)})."
        )
    return tops[0]


def branch_at(events: Iterable[Event], step: int, run_id: str | None = None) -> Branch:
    """The branch of a recorded run (``run_id``, or the trajectory's one top-level run) that has
    the root propose ``step`` again (with the rest of its reply, when the reply held several
    steps). A step that no root reply proposed is a one-line error."""
    events = list(events)
    rid = _root_run(events, run_id)
    own = [e for e in events if e.run_id == rid]
    proposals = [i for i, e in enumerate(own) if isinstance(e, StepStarted) and e.author == "root"]
    # The step's last proposal: a step proposed again (Regenerate) keeps its number.
    at = max((i for i in proposals if own[i].step == step), default=None)  # type: ignore[attr-defined]
    if at is None:
        steps = ", ".join(str(own[i].step) for i in proposals) or "none"  # type: ignore[attr-defined]
        raise ConfigError(f"Run {rid} has no step {step} proposed by the root: its root steps are {steps}.")
    reply_at = max(i for i in range(at) if isinstance(own[i], RootReply))
    # A reply with several code blocks is proposed again whole: the branch starts at its first.
    step = next(e.step for e in own[reply_at:] if isinstance(e, StepStarted) and e.author == "root")

    started = own[0]
    assert isinstance(started, RunStarted)
    messages: list[dict[str, Any]] = [dict(m) for m in started.prompt]
    turn = iterations = 0
    final_turn = False
    request_at = 0
    opening, compacted = started.opening or None, None
    # A branch's run_started says where its fixed start ends; else it is the prompt and first request.
    fixed = started.fixed or len(started.prompt) + 1
    for i, event in enumerate(own[:reply_at]):
        if isinstance(event, RootRequest):
            opening = event.content if opening is None else opening
            messages.append({"role": "user", "content": event.content})
            turn, final_turn, request_at = event.turn, event.final_turn, i
        elif isinstance(event, RootReply):
            messages.append({"role": "assistant", "content": event.text})
            iterations += 1
        elif isinstance(event, Compacted):  # the root saw its notes in place of the older turns
            messages, compacted = [*messages[: fixed - 1], *(dict(m) for m in event.messages)], event
        elif isinstance(event, ProposalRejected) and messages[-1]["role"] == "assistant":
            del messages[-3 if event.rewound else -1 :]
            if event.added:  # what came while the step waited went into the request asked again
                messages[-1] = {**messages[-1], "content": f"{messages[-1]['content']}\n\n{event.added}"}
                request_at = i

    executed = {e.step: e.executed for e in own[:reply_at] if isinstance(e, HumanEdit)}
    finished = {e.step: e for e in own[:reply_at] if isinstance(e, StepFinished)}
    # A step proposed again (Regenerate) started twice: the last start is the one that ran.
    started_at = {e.step: i for i, e in enumerate(own[:reply_at]) if isinstance(e, StepStarted)}
    steps, late = [], 0
    for number, i in sorted(started_at.items()):
        event, done = own[i], finished.get(number)
        assert isinstance(event, StepStarted)
        if done is not None:
            code = executed.get(number, event.code)
            steps.append(ReplayedStep(number, code, event.author, done.output, done.error is not None))
            late += i > request_at  # only a human's cell runs while the root writes its reply
    hints = [e.text for e in own[request_at:reply_at] if isinstance(e, Hint)]

    return Branch(
        parent_run=rid,
        step=step,
        question=started.question,
        messages=messages,
        turn=turn,
        iterations=iterations,
        final_turn=final_turn,
        steps=steps,
        late_human_steps=late,
        hints=hints,
        replies=_replies(own[:reply_at]),
        fixed=fixed,
        opening=opening or "",
        compacted=compacted,
    )


def _replies(events: list[Event]) -> dict[tuple[int, str], list[str]]:
    """The recorded replies of the run's own sub-calls that ended well, by step and request."""
    asked = {e.call_id: e for e in events if isinstance(e, SubcallStarted) and e.prompt_key}
    replies: dict[tuple[int, str], list[str]] = defaultdict(list)
    for event in events:
        if isinstance(event, SubcallFinished) and event.error is None and not event.cancelled:
            start = asked.get(event.call_id)
            if start is not None and start.step is not None and event.response:
                replies[(start.step, start.prompt_key)].append(event.response)
    return dict(replies)
