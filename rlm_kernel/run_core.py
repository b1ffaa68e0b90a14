"""What every part of a run shares: its state, and the moves each part makes with it (ask the
root, put a turn's outputs in front of it, finish), with the conversation's compaction, which
stands in front of any request. ``rlm_kernel.engine.RLMRun`` is the machine built on it; no I/O,
no clock, no ids of its own here either."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from . import compaction, prompts
from .config import RLMConfig
from .errors import ErrorThresholdExceededError, RLMError
from .events import Compacted, Event, RootRequest, RunEnded, RunWarning, StopReason
from .executors.base import ExecResult
from .lm.base import Message
from .loops import LoopGuard
from .repl import truncate
from .rewind import Branch, ReplayedStep
from .run_actions import (
    STATES,
    TRANSITIONS,
    AskRoot,
    CommittedAnswer,
    Compact,
    Finish,
    Followup,
    PendingReply,
    State,
)
from .subcall_api import SubcallError
from .typed import output_type

TURN_OUTPUT_TIMES = 4  # a turn's whole observation is at most this many times max_output_chars

__all__ = ["TURN_OUTPUT_TIMES", "RunCore", "transition"]

_T = TypeVar("_T")


def transition(method: Callable[..., _T]) -> Callable[..., _T]:
    """Check ``TRANSITIONS`` before the call; an exception inside it leaves the run in ``error``."""

    @functools.wraps(method)
    def call(self: RunCore, *args: Any, **kwargs: Any) -> _T:
        self._expect(method.__name__)
        with contextlib.ExitStack() as undo:  # whatever fails mid-call, the run is not left half-updated
            undo.callback(setattr, self, "state", State.ERROR)
            value = method(self, *args, **kwargs)
            undo.pop_all()
        return value

    return call


class RunCore:
    """A run's state and the moves its parts share. Emits events through ``emit``; never prints,
    calls or executes."""

    def __init__(
        self,
        config: RLMConfig,
        *,
        question: str | None,
        context_meta: dict[str, Any],
        model: str,
        sub_model: str,
        emit: Callable[[Event], None],
        run_id: str,
        started: float = 0.0,
        parent_id: str | None = None,
        parent_call_id: str | None = None,
        redact: Callable[[str], str] = str,
        branch: Branch | None = None,
        window: int | None = None,
        follows: Followup | None = None,
        session: str | None = None,
        sandbox: Mapping[str, Any] | None = None,
    ) -> None:
        self.config = config
        self.sandbox = dict(sandbox or {})  # where the code runs, and which limits hold it there
        self.branch = branch  # a rewind: the recorded run this one continues, and from where
        self.follows = follows  # a session's next question: the conversation it goes on from
        self.session = follows.session if follows is not None else session
        self.question = question
        self.context_meta = context_meta
        self.model = model
        self.sub_model = sub_model
        self.emit = emit
        self.run_id = run_id
        self.parent_id = parent_id
        self.parent_call_id = parent_call_id
        self.redact = redact  # what code printed, before the root or any event sees it
        self.depth = config.depth
        self.window = window  # the root model's, in tokens: what compaction keeps the conversation under
        self.state: State = State.NEW
        self.messages: list[Message] = []
        self.turns = 0  # root requests made
        self.iterations = 0  # root replies received
        self.steps = 0
        self._executing = 0
        self._reproposing = 0  # the number a regenerated proposal takes: the waiting step's
        self._regenerations = 0
        self.response: str | None = None
        self.error: str | None = None
        self.started = started  # the driver's clock when the run began
        self.now = started  # and before each call; the engine never reads a clock itself
        self._pending: PendingReply | None = None
        self._hints: list[str] = []
        self._human_steps: list[tuple[int, str, str]] = []
        self._chars = 0
        self._edits: list[tuple[int, str, str]] = []
        self._final_turn = False
        self._starts: dict[int, tuple[str, str | None]] = {}  # by turn: a reply's start, and its stop
        self._retries: set[int] = set()  # turns whose start is a failed step's code: kept when resampled
        self._seen_output = False  # whether the root has read any output of its code
        self._stop = "answer"
        self._cause: RLMError | None = None
        self._typed = output_type(config.output_type)  # what a committed answer must be, if anything
        self._type_failures = 0
        self._failed_in_row = 0  # steps in a row that raised: max_errors ends the run
        self._last_failure: str | None = None  # the last line of the last step's traceback
        self._replays: list[ReplayedStep] = []  # a branch's inherited steps still to run again
        self._replaying: ReplayedStep | None = None
        self._replayed: dict[int, tuple[str, bool]] = {}  # step -> what its replay printed, and if it failed
        self._outputs: list[str] = []  # every step's output as the root saw it, for the answer's check
        self._codes: list[str] = []  # every step's code as it ran, for the same
        self._code = ""  # the code of the step running, as it ran
        self._judging: CommittedAnswer | None = None  # the answer the sub-model is asked about
        self._sent_back = False  # an answer is sent back at most once a run
        self._open_doubt: str | None = None  # why the answer was sent back, until another is given
        self._fixed = 0  # the conversation's fixed start: system prompt, worked example, first request
        self._opening = ""  # the first request as it was, before any compaction's note
        self._counted = (0, 0)  # (tokens, messages): the provider's count of the last request and reply
        self._summarised = 0  # the last turn whose reply a compaction replaced
        self._compacting: tuple[str, bool, int, int, int] | None = None  # the ask it holds, and its span
        self._summary: str | None = None
        self._names: list[str] = []
        self._reopen = False  # the request a compaction holds must clear answer["ready"] first
        self._loops = LoopGuard()  # what a reply's code is told apart from, to find a loop

    # -- helpers ---------------------------------------------------------------------
    def _ids(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "parent_id": self.parent_id, "depth": self.depth}

    def _expect(self, call: str) -> None:
        allowed = TRANSITIONS[call]
        if self.state not in allowed:
            raise RuntimeError(
                f"RLMRun is {State(self.state).value!r}; {call}() needs "
                f"{' or '.join(s.value for s in STATES if s in allowed)}"
            )

    def _ask(self, content: str, *, final_turn: bool = False, compact: bool = True) -> AskRoot | Compact:
        if compact and (action := self._compaction(content, final_turn)) is not None:
            return action
        self.messages.append({"role": "user", "content": content})
        self.state = State.ASKING
        self.turns += 1
        self._loops.resampled, self._loops.set_aside = 0, None
        self._final_turn = final_turn
        self._chars += len(content)
        self.emit(
            RootRequest(
                **self._ids(),
                turn=self.turns,
                messages=len(self.messages),
                chars=self._chars,
                content=content,
                final_turn=final_turn,
            )
        )
        return self._asking()

    def _asking(self) -> AskRoot:
        """The request for the turn in progress: the conversation as it stands, marked for caching."""
        final_turn = self._final_turn
        first = None if final_turn else self._starts.get(self.turns)
        messages: list[Message] = [dict(m) for m in self.messages]  # type: ignore[misc]
        # Where a provider that caches by mark (Anthropic) keeps a prefix, besides the system prompt's
        # own mark: the fixed start (the context's description and the question), which every turn
        # repeats, and, unless no turn follows, the whole conversation, which the next one begins with.
        ends = [self._fixed - 1] if final_turn else [self._fixed - 1, len(messages) - 1]
        for end in ends:
            if 0 <= end < len(messages):  # no fixed start yet: -1
                messages[end]["cache"] = True
        return AskRoot(
            messages,
            self.turns,
            final_turn,
            max_tokens=self.config.reply_tokens,
            stop=() if final_turn else self.config.stop,
            prefill=first[0] if first else None,
            closing=first[1] if first else None,
        )

    def _next_turn(self, content: str) -> AskRoot | Compact:
        """Ask again, or, past the iteration limit, ask once for the answer in plain words."""
        if self.turns >= self.config.max_iterations:
            return self._ask(
                content + "\n\n" + prompts.final_turn(self.turns, self.config.protocol), final_turn=True
            )
        return self._ask(content)

    def _finish(
        self,
        response: str | None,
        error: str | None = None,
        stop: StopReason = "answer",
        cause: RLMError | None = None,
    ) -> Finish:
        if self._hints:  # given after the root's last turn: said, not dropped without a word
            unused = "; ".join(f'"{h[:80]}"' for h in self._hints)
            self._warn(
                "hint_unused", f"The run ended before the root's next turn, so it never saw: {unused}."
            )
            self._hints = []
        self.response, self.error, self._stop, self._cause = response, error, stop, cause
        self.state = State.DONE
        self.emit(
            RunEnded(
                **self._ids(),
                response=response,
                error=error,
                iterations=self.iterations,
                elapsed_s=self.now - self.started,
                stop=stop,  # type: ignore[arg-type]
            )
        )
        return Finish(response, error, stop, cause)

    def _warn(self, code: str, text: str) -> None:
        self.emit(RunWarning(**self._ids(), code=code, text=text))  # type: ignore[arg-type]

    @property
    def _text_final(self) -> bool:
        return self.config.protocol in ("final", "both")

    def _observe(self) -> AskRoot | Compact | Finish:
        pending = self._pending
        assert pending is not None
        self._pending = None
        limit = self.config.max_errors
        if limit is not None and self._failed_in_row >= limit:
            error = ErrorThresholdExceededError(self._failed_in_row, limit, self._last_failure)
            return self._finish(self.response, str(error), "error", error)
        self._seen_output = self._seen_output or any(text.strip() for _, text in pending.outputs)
        text = prompts.observation(
            pending.outputs,
            human_steps=self._human_steps,
            skipped=len(pending.blocks) if pending.failed else 0,
            notes=pending.notes,
            hints=self._hints,
            edits=self._edits,
            remaining=self.config.max_iterations - self.turns,
        )
        self._hints, self._edits, self._human_steps = [], [], []
        limit = TURN_OUTPUT_TIMES * self.config.max_output_chars
        if self.window is not None:  # and a third of the root's window: no one turn can fill it
            limit = min(limit, max(self.window * compaction.CHARS_PER_TOKEN // 3, 2_000))
        if len(text) > limit:  # many blocks in one reply: each step's cut alone does not bound the turn
            full = len(text)
            text, cut = truncate(text, limit)
            text += (
                f"\n\nThis turn's outputs came to {full:,} characters; {cut:,} of them were not shown. "
                "Run fewer blocks a reply, and print less."
            )
        return self._next_turn(text)

    # -- compaction ------------------------------------------------------------------
    def _compaction(self, content: str, final_turn: bool) -> Compact | None:
        """A ``Compact`` when the conversation, with the request ``content``, would fill more than
        ``compaction_threshold`` of the root's window (its reply's room included)."""
        config, window = self.config, self.window
        if not self._fixed or window is None or not config.compacts(window):
            return None
        asked = [*self.messages, {"role": "user", "content": content}]
        tokens = compaction.tokens_of(asked, self._counted)  # type: ignore[arg-type]
        room = min(config.reply_tokens, window // 4)  # for the reply: most are far shorter than the limit
        if tokens + room <= config.compaction_threshold * window:
            return None
        older = self.messages[self._fixed : -1]  # the latest reply stays, and what it printed
        # Not worth a call unless the turns it replaces hold at least twice what replaces them; so
        # a conversation whose fixed start alone nears the window is not summarised every turn.
        if len(older) < 2 or compaction.tokens_of(older) < 2 * compaction.SUMMARY_TOKENS:
            return None
        first, last = self._summarised + 1, self.turns - 1
        room = (window - compaction.SUMMARY_TOKENS) * compaction.CHARS_PER_TOKEN * 4 // 5
        prompt = compaction.request(
            older, question=self.question, first=first, last=last, earlier=self._summary, room=room
        )
        self._compacting = (content, final_turn, first, last, tokens)
        self.state = State.COMPACTING
        return Compact(prompt)

    @transition
    def receive_summary(self, reply: str) -> AskRoot | Compact:
        """The root's notes on its older turns take their place; then the request that waited goes."""
        assert self._compacting is not None and self.window is not None
        content, final_turn, first, last, tokens = self._compacting
        self._compacting = None
        older = self.messages[self._fixed : -1]
        summary = reply.strip()
        if not summary or isinstance(reply, SubcallError):
            why = reply.message if isinstance(reply, SubcallError) else "the reply was empty"
            self._warn(
                "compaction_failed",
                f"The summary of root turns {first} to {last} failed ({why}); their code stands in for it.",
            )
            summary = compaction.fallback(older)
            if self._summary:  # the notes of an earlier compaction stay
                summary = f"{self._summary}\n\n{summary}"
        names = list(dict.fromkeys([*self._names, *compaction.names_made(older)]))
        note = compaction.note(summary, names, first=1, last=last)
        kept = self.messages[-1]
        self.messages = [
            *self.messages[: self._fixed - 1],
            {**self.messages[self._fixed - 1], "content": f"{self._opening}\n\n{note}"},
            kept,
        ]
        self._summary, self._names, self._summarised = summary, names, last
        if added := prompts.observation([], human_steps=self._human_steps, hints=self._hints):
            content = f"{content}\n\n{added}"  # what came while the notes were written
            self._human_steps, self._hints = [], []
        self._counted = (0, 0)
        self._chars = sum(len(m["content"]) for m in self.messages)
        self.emit(
            Compacted(
                **self._ids(),
                turn=self.turns + 1,
                first_turn=first,
                last_turn=last,
                tokens=tokens,
                window=self.window,
                summary=summary,
                names=names,
                messages=[dict(m) for m in self.messages[self._fixed - 1 :]],
            )
        )
        ask = self._ask(content, final_turn=final_turn, compact=False)
        assert isinstance(ask, AskRoot)
        reopen, self._reopen = self._reopen, False
        return replace(ask, reopen=True) if reopen else ask

    def _keep_output(self, result: ExecResult, shown: str) -> None:
        """Keep a step's output for the answer's check: as the root saw it, or, where the step
        raised, only what it printed (a traceback supports no answer, though it may quote the very
        value: a line of the code)."""
        self._codes.append(self._code)
        self._outputs.append(
            truncate(self.redact(result.printed()), self.config.max_output_chars)[0]
            if result.error
            else shown
        )

    def _ask_again(self, sampling: dict[str, float | int]) -> AskRoot:
        """The turn in progress asked again, sampled: another reply, not the same one."""
        ask = replace(self._asking(), sampling=sampling)
        if not ask.prefill:
            return ask
        fence = ask.prefill.split("\n", 1)[0] + "\n"
        first = self._starts.get(1)
        if self.turns in self._retries and first and first[1] is None and first[0] != ask.prefill:
            # a failed step's lines led to its failing line again, even sampled: the step is
            # written anew from the lines that load the context
            return replace(ask, prefill=first[0], closing=None)
        # the worked opening (or a failed step's lines) would lead to the same reply: only the
        # fence is kept
        return replace(ask, prefill=fence, closing=None)
