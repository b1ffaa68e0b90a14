"""The root loop as a state machine. No I/O, no clock, no ids of its own: the driver calls the
LM, runs the code, and passes the run's id and the time in (``started``, and ``now`` before each
call: the run's elapsed time is ``now - started``).

Theory of operation. ``start()`` returns the first action. The driver performs it and feeds the
observation back, which returns the next action:

    action                    driver does                  then calls
    AskRoot(messages)         call the root LM             receive_reply(completion)
    Compact(prompt)           summarise older turns        receive_summary(text)
    Execute(step, code)       run code in the REPL         receive_execution(result, answer)
    ResolveFinal(directive)   read a variable for FINAL    receive_final(content, problem)
    Verify(prompt)            ask the sub-model            receive_verdict(reply)
    Finish(response, error)   nothing: the run is over

A reply with several code blocks is executed block by block; a failing block skips the rest. The
run is ``done`` when code sets ``answer["ready"]`` or a FINAL directive resolves (and the answer
passes its check, below), the iteration limit's extra "answer now" turn returns, a human sets the
answer, or the driver calls ``abort(error)``. A branch (``rlm_kernel.rewind``) starts from a
recorded conversation instead: ``start()`` returns the inherited steps first, as
``Execute(replay=True)``, then asks the turn that proposed the branch's step again. Every call and
the states it may be made in are in ``TRANSITIONS``; any other call raises ``RuntimeError`` (a
driver bug, not a user error). An exception inside a call leaves the run in ``error``, where only
``abort`` is accepted, never half-updated in the state it was in.

An answer the root's code commits is checked against what the run's steps printed
(``rlm_kernel.grounding``; with ``verify``, a ``Verify`` asks the sub-model too), unless a
``no_code``, ``unseen`` or ``after_error`` warning already says it is doubtful. While turns are
left, an unsupported answer is sent back once: an ``AnswerDoubted`` event, then a turn that shows
the step's output and why (``AskRoot(reopen=True)``: the driver clears the REPL's
``answer["ready"]`` first). An answer that fails again, or with no turn left, is taken with an
``unsupported`` warning, as is a sent-back answer the run is stopped with. The "answer now" turn's
answer is checked for the warning, never sent back; a human's answer is not checked.

No loop runs twice. In a reply stopped in a loop (``repetition``), a block that repeats the one
before it is not run (a note says so). A reply whose code starts by repeating code that failed
(comments and spacing aside: the same blocks, up to the failing one, with no reply run whole since),
that is the reply run just before it (whole, with no error and no answer: the same code over the
same REPL prints the same), or is printed output pasted as code (it does not parse, and its lines
are in the root's earlier requests) is not run: a ``repetition`` warning, then, up to
``LOOP_RESAMPLES`` times a turn, the reply is set aside (``ProposalRejected``) and the same turn
asked again, sampled, with a one-line note on why; after that, the note alone is the next turn's request.
"""

from __future__ import annotations

import ast
import enum
import functools
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from . import compaction, grounding, prompts
from .config import RLMConfig
from .errors import ErrorThresholdExceededError, RLMError
from .events import (
    AnswerDoubted,
    AnswerSet,
    Compacted,
    Event,
    Hint,
    HumanEdit,
    ProposalRejected,
    RootReply,
    RootRequest,
    RunEnded,
    RunStarted,
    RunWarning,
    StepFinished,
    StepStarted,
)
from .executors.base import ExecResult
from .lm.base import Completion, Message
from .protocol import (
    FinalDirective,
    code_blocks,
    find_final,
    resolve_final,
    unclosed_final,
    whole_code_blocks,
)
from .repl import cut_note, truncate
from .rewind import Branch, ReplayedStep
from .subcalls import ERROR_PREFIX
from .typed import OutputTypeError, output_type

TURN_OUTPUT_TIMES = 4  # a turn's whole observation is at most this many times max_output_chars
REGENERATE_TEMPERATURE = 0.8  # a regenerated proposal's: another proposal, even from a greedy model
LOOP_RESAMPLES = 2  # replies a turn may set aside as a loop before one is answered with the note alone
LOOP_TURNS = 2  # turns in a row that end in a loop before the run ends: the root cannot get out of it

__all__ = [
    "RLMRun",
    "State",
    "AskRoot",
    "Execute",
    "ResolveFinal",
    "Verify",
    "Compact",
    "Finish",
    "Action",
    "TRANSITIONS",
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
_T = TypeVar("_T")
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
    sub-call of the run. The reply, or ``subcalls.ERROR_PREFIX`` and why it failed, goes back."""

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
    stop: str = "answer"  # answer, max_iterations, empty, user, interrupt, budget, error
    cause: RLMError | None = None  # the error that ended it, for a front end to raise


Action = AskRoot | Execute | ResolveFinal | Verify | Compact | Finish
LM_CALLS = (AskRoot, Verify, Compact)  # the actions a driver answers with an LM's reply


@dataclass
class _Pending:
    """Code blocks of the current reply, and what they have produced so far."""

    blocks: list[str]
    directive: FinalDirective | None
    outputs: list[tuple[int, str]] = field(default_factory=list)
    failed: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass
class _Answer:
    """A committed answer while it is checked, and how the run ends if it is taken."""

    content: str
    source: str
    warnings: list[tuple[str, str]]  # no_code, unseen, after_error: emitted when it is taken
    retry: bool  # whether it may still be sent back
    written: bool = True  # the root wrote it out (code computed it: not held to being printed)
    error: str | None = None
    stop: str = "answer"
    typed: str | None = None  # with an output_type: the value as JSON, which is what is kept


def _transition(method: Callable[..., _T]) -> Callable[..., _T]:
    """Check ``TRANSITIONS`` before the call; an exception inside it leaves the run in ``error``."""

    @functools.wraps(method)
    def call(self: RLMRun, *args: Any, **kwargs: Any) -> _T:
        self._expect(method.__name__)
        try:
            return method(self, *args, **kwargs)
        except BaseException:
            self.state = ERROR
            raise

    return call


class RLMRun:
    """One run of the root loop. Emits events through ``emit``; never prints, calls or executes."""

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
        self.state: State = NEW
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
        self._pending: _Pending | None = None
        self._hints: list[str] = []
        self._human_steps: list[tuple[int, str, str]] = []
        self._chars = 0
        self._edits: list[tuple[int, str, str]] = []
        self._final_turn = False
        self._starts: dict[int, tuple[str, str | None]] = {}  # by turn: a reply's start, and its stop
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
        self._code = ""  # the code of the step running, as it ran
        self._judging: _Answer | None = None  # the answer the sub-model is asked about
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
        # Code that failed, since a reply last ran whole: each reply's blocks up to the failing one
        # (normalised, see _normal_code) -> the failing step and the last line of its error.
        self._failing: dict[tuple[str, ...], tuple[int, str]] = {}
        self._ran: list[str] = []  # the current reply's blocks that ran, normalised
        # The last reply that ran whole without an error (normalised) and its last step: the same
        # code again over the same REPL would print the same output.
        self._last_run: tuple[tuple[str, ...], int] | None = None
        self._resampled = 0  # replies of this turn set aside as loops
        self._looped_turns = 0  # turns in a row whose replies all looped

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
        self.state = ASKING
        self.turns += 1
        self._resampled = 0
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
        stop: str = "answer",
        cause: RLMError | None = None,
    ) -> Finish:
        if self._hints:  # given after the root's last turn: said, not dropped without a word
            unused = "; ".join(f'"{h[:80]}"' for h in self._hints)
            self._warn(
                "hint_unused", f"The run ended before the root's next turn, so it never saw: {unused}."
            )
            self._hints = []
        self.response, self.error, self._stop, self._cause = response, error, stop, cause
        self.state = DONE
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

    def _answer(
        self,
        content: str,
        source: str,
        *,
        step_failed: bool = False,
        printed: bool = False,
        checked: bool = True,
        source_text: str | None = None,
    ) -> Action:
        """An answer committed: taken, or checked first (``checked``). ``source_text`` is the code
        or FINAL argument that set it: an answer not written out there was computed. With an
        ``output_type`` it is first parsed and validated, and kept as JSON."""
        content = self.redact(content)
        typed = None  # checked here; the checks below read the answer as the root gave it
        if self._typed is not None and content.strip():
            try:
                typed = self._typed.check(content)[1]
            except OutputTypeError as exc:
                return self._mistyped(content, source, exc)
        warnings = []
        if self.steps == 0:
            warnings.append(("no_code", "The answer was given without running any code on the context."))
        elif not (self._seen_output or printed):
            warnings.append(("unseen", "The answer was set before the root saw any output of its code."))
        elif step_failed:
            warnings.append(("after_error", "The answer was set by a step that raised an error."))
        self._open_doubt = None
        retry = not self._sent_back and self.turns < self.config.max_iterations
        written = source_text is None or grounding.written_in(content, source_text)
        answer = _Answer(content, source, warnings, retry, written, typed=typed)
        if checked and not warnings and not content.strip() and retry:
            return self._doubted(answer, grounding.EMPTY, "check")  # most often a value never put in
        if not checked or warnings or not content.strip():
            return self._accept(answer)
        return self._check(answer)

    def _check(self, answer: _Answer) -> Action:
        """The cheap check, then (``verify``) the sub-model's; an answer that fails either is sent
        back, or taken with a warning."""
        self.response = answer.content  # kept if the run is stopped before it is taken
        reason = grounding.unsupported(self.question, answer.content, self._outputs, written=answer.written)
        if reason is not None:
            return self._doubted(answer, reason, "check")
        if self.config.verify:
            self._judging = answer
            self.state = VERIFYING
            return Verify(grounding.verify_prompt(self.question, answer.content, self._outputs))
        return self._accept(answer)

    def _doubted(self, answer: _Answer, reason: str, by: str) -> Action:
        if not answer.retry:
            again = " It had been sent back once." if self._sent_back else ""
            text = f"The answer is not supported by what the code printed: {reason}.{again}"
            answer.warnings.append(("unsupported", text))
            return self._accept(answer)
        self._sent_back, self._open_doubt = True, reason
        self.emit(
            AnswerDoubted(**self._ids(), content=answer.content, source=answer.source, reason=reason, by=by)  # type: ignore[arg-type]
        )
        return self._send_back(grounding.send_back_note(answer.content, reason))

    def _mistyped(self, content: str, source: str, error: OutputTypeError) -> Action:
        """An answer not of ``output_type``: sent back with why, up to ``output_retries`` times; then
        the run ends in that error, the answer kept as it was committed."""
        self._type_failures += 1
        self.response = content
        retries = self.config.output_retries
        if (
            self._type_failures > retries
            or source == "final_turn"
            or self.turns >= self.config.max_iterations
        ):
            tries = f"; {self._type_failures} answers were tried" if self._type_failures > 1 else ""
            return self._finish(content, f"{error}{tries}", "error", error)
        self.emit(
            AnswerDoubted(**self._ids(), content=content, source=source, reason=error.problem, by="type")  # type: ignore[arg-type]
        )
        assert self._typed is not None
        return self._send_back(
            f"Your answer is not of the type the task asks for: {error.problem}. {self._typed.describe()} "
            'Then set answer["ready"] = True again.'
        )

    def _send_back(self, note: str) -> Action:
        """The root's next turn, with ``note`` on why its answer was not taken; ``answer["ready"]`` is
        cleared first."""
        pending = self._pending or _Pending([], None)
        self._pending = pending
        if pending.blocks:
            pending.notes.append(f"{len(pending.blocks)} later code block(s) of your reply were not run.")
        pending.blocks, pending.directive, pending.failed = [], None, False
        pending.notes.append(note)
        ask = self._observe()
        if isinstance(ask, Finish):  # max_errors
            return ask
        if isinstance(ask, Compact):  # the request after the notes clears answer["ready"]
            self._reopen = True
            return ask
        return replace(ask, reopen=True)

    def _accept(self, answer: _Answer) -> Finish:
        self._judging = None
        content = answer.content if answer.typed is None else answer.typed
        self.emit(AnswerSet(**self._ids(), content=content, source=answer.source))  # type: ignore[arg-type]
        for code, text in answer.warnings:
            self._warn(code, text)
        if answer.stop != "answer":
            return self._finish(content, answer.error, answer.stop)
        if not content.strip():
            return self._finish(content, "The answer is empty: the root finished without content.", "empty")
        return self._finish(content)

    @property
    def _text_final(self) -> bool:
        return self.config.protocol in ("final", "both")

    # -- the protocol ------------------------------------------------------------------
    @_transition
    def start(self) -> Action:
        if self.branch is not None:
            return self._start_branch()
        if (follows := self.follows) is not None:
            messages = [dict(m) for m in follows.messages]
            while messages and messages[-1]["role"] == "user":  # a request its run never had answered
                messages.pop()
            self._started(
                messages,  # type: ignore[arg-type]
                follows=follows.run_id,
                fixed=follows.fixed,
                opening=follows.opening,
            )
            self._fixed, self._opening = follows.fixed, follows.opening
            self._summary, self._names = follows.summary, list(follows.names)
            return self._ask(prompts.next_question(self.question, self._typed and self._typed.describe()))
        opening = prompts.opening_messages(
            profile=self.config.profile,
            question=self.question,
            context_meta=self.context_meta,
            protocol=self.config.protocol,
            depth=self.depth,
            system=self.config.system_prompt,
            tools=list(self.config.tools.values()),
            sub_tools=self.config.sub_tools,
            tips=self.config.tips,
            answer_type=self._typed.describe() if self._typed else None,
        )
        self._started(opening[:-1])
        self._fixed, self._opening = len(opening), opening[-1]["content"]
        return self._ask(opening[-1]["content"])

    def _started(self, prefix: list[Message], **branch: Any) -> None:
        """The conversation's fixed start is ``prefix``; the run is under way."""
        self.messages = prefix
        if self.config.profile == "small" and self.config.system_prompt is None:
            self._starts = prompts.reply_starts(self.context_meta, self.question)
        self._chars = sum(len(m["content"]) for m in self.messages)
        self.emit(
            RunStarted(
                **self._ids(),
                question=self.question,
                context_meta=self.context_meta,
                model=self.model,
                sub_model=self.sub_model,
                parent_call_id=self.parent_call_id,
                settings={**self.config.public(), "sandbox": self.sandbox},
                prompt=[dict(m) for m in self.messages],
                session=self.session,
                **branch,
            )
        )

    def _start_branch(self) -> Action:
        """A rewind: the recorded conversation up to the request that proposed the branch's step,
        then the steps before it run again (``Execute(replay=True)``), then that request again."""
        branch = self.branch
        assert branch is not None
        self.turns, self.iterations = branch.turn - 1, branch.iterations
        self._seen_output = any(s.output.strip() for s in branch.steps)
        self._started(
            [dict(m) for m in branch.messages[:-1]],  # type: ignore[misc]
            parent_run=branch.parent_run,
            branched_at=branch.step,
            fixed=branch.fixed,
            opening=branch.opening,
        )
        self._replays = list(branch.steps)
        self._fixed, self._opening = branch.fixed, branch.opening
        if (done := branch.compacted) is not None:
            self._summary, self._names, self._summarised = done.summary, list(done.names), done.last_turn
        return self._replay_next()

    def _replay_next(self) -> Action:
        branch = self.branch
        assert branch is not None
        if self._replays:
            step = self._replaying = self._replays.pop(0)
            self.steps = self._executing = step.step
            self.state = EXECUTING
            self.emit(
                StepStarted(**self._ids(), step=step.step, code=step.code, author=step.author, replayed=True)  # type: ignore[arg-type]
            )
            return Execute(step.step, step.code, replay=True)
        self._replaying = None
        recorded = {s.step: (s.output, s.error) for s in branch.steps}
        diverged = [step for step, seen in self._replayed.items() if seen != recorded[step]]
        if diverged:
            self._warn(
                "replay_diverged",
                f"Replayed step{'s' if len(diverged) > 1 else ''} {', '.join(map(str, diverged))} printed "
                f"other than in run {branch.parent_run}: the REPL may not be as it was there.",
            )
        # What happened after the request, in the recorded run, is told to the root next turn.
        late = branch.steps[len(branch.steps) - branch.late_human_steps :] if branch.late_human_steps else []
        self._human_steps = [(s.step, s.code, self._replayed[s.step][0]) for s in late]
        self._hints = list(branch.hints)
        return self._ask(branch.messages[-1]["content"], final_turn=branch.final_turn)

    def _replay_finished(self, result: ExecResult, restored: tuple[str, ...]) -> Action:
        step = self._replaying
        assert step is not None
        shown, cut = truncate(self.redact(result.text()), self.config.max_output_chars)
        self.emit(
            StepFinished(
                **self._ids(),
                step=step.step,
                output=shown,
                error=result.error,
                elapsed_s=result.elapsed_s,
                cut_chars=cut,
                restored=restored,
            )
        )
        self._replayed[step.step] = (shown, result.error is not None)
        self._outputs.append(
            truncate(self.redact(result.printed()), self.config.max_output_chars)[0]
            if result.error
            else shown
        )
        return self._replay_next()

    @_transition
    def receive_reply(self, completion: Completion) -> Action:
        text = completion.text
        start = self._starts.get(self.turns)
        if start and start[1] and not self._final_turn:
            opener, closing = start[0].rsplit("\n", 1)[-1], start[1]
            if opener in text and closing not in text[text.rindex(opener) :]:
                text += closing  # the stop sequence that ended the reply closes the call it began
        finish = completion.extra.get("finish_reason") or completion.extra.get("stop_reason")
        if finish in ("stop", "stop_sequence", "end_turn"):
            text = whole_code_blocks(text)  # the fence a stop sequence took: the history reads whole
        self.iterations += 1
        self.messages.append({"role": "assistant", "content": text})
        if completion.input_tokens:  # the provider's count: what compaction measures the conversation by
            self._counted = (completion.input_tokens + completion.output_tokens, len(self.messages))
        self.emit(
            RootReply(
                **self._ids(),
                turn=self.turns,
                text=text,
                model=completion.model or self.model,
                **completion.usage.fields(),  # tokens and cost, at the client's own price
                latency_s=completion.latency_s,
            )
        )
        notes = []  # about the reply itself, for the next turn
        if finish == "repetition":
            self._warn("repetition", f"Root reply {self.turns} repeated itself and was stopped.")
            notes.append(
                f"Your last reply kept repeating itself, so it was stopped after {len(text):,} characters."
            )
        elif finish in ("length", "max_tokens"):
            self._warn("reply_cut", f"Root reply {self.turns} reached the limit of tokens per reply.")
            notes.append(
                "Your last reply reached the limit of tokens per reply and was cut: write shorter replies."
            )
        directive = find_final(text) if self._text_final else None
        if self._final_turn:
            if directive is not None and directive.kind == "FINAL_VAR":
                self._pending = _Pending([], directive)
                self.state = RESOLVING
                return ResolveFinal(directive)
            return self._last_word(resolve_final(directive, {})[0] if directive else None, text)
        blocks = code_blocks(text)
        if not blocks and directive is None:
            if self._text_final and (opened := unclosed_final(text)):
                notes.append(
                    f"Your {opened}( has no closing parenthesis, so the run did not end: "
                    f"write {opened}(...) whole."
                )
                return self._next_turn("\n\n".join(notes))
            return self._next_turn("\n\n".join([*notes, prompts.NO_CODE_NUDGE]))
        codes = [_normal_code(b) for b in blocks]
        distinct = [b for i, b in enumerate(blocks) if i == 0 or codes[i] != codes[i - 1]]
        if finish == "repetition" and len(distinct) < len(blocks):  # stopped in a loop: run it once
            notes.append(
                f"{len(blocks) - len(distinct)} code block(s) of your reply repeated the one before and "
                "were not run again."
            )
            blocks = distinct
        if (why := self._loop(blocks)) is not None:
            return self._resample(why, notes)
        self._looped_turns = 0
        self._ran = []
        self._pending = _Pending(blocks, directive, notes=notes)
        return self._advance()

    # -- loops -------------------------------------------------------------------------
    def _loop(self, blocks: list[str]) -> tuple[str, str] | None:
        """Why a reply's code is a loop, not run again: (for the warning, for the root's note)."""
        if not blocks:
            return None
        codes = [_normal_code(b) for b in blocks]
        for ran, (step, error) in self._failing.items():
            if tuple(codes[: len(ran)]) == ran:
                return (
                    f"repeated step {step}, which had failed",
                    f"Not run: your code repeats step {step}, which failed ({error[:200]}). The same "
                    "code fails the same way: change it.",
                )
        if self._last_run is not None and tuple(codes) == self._last_run[0]:
            step = self._last_run[1]
            return (
                f"repeated step {step}, which had just run",
                f"Not run: your code is the same as step {step}, which already ran; its output is above. "
                "Use it: answer, or write different code.",
            )
        if _echoes(blocks[0], [m["content"] for m in self.messages[self._fixed :] if m["role"] == "user"]):
            return (
                "pasted printed output as code",
                "Not run: your code block is a copy of printed output, not Python. Write code that "
                "works on the value instead.",
            )
        return None

    def _resample(self, why: tuple[str, str], notes: list[str]) -> AskRoot | Compact | Finish:
        """The last reply is a loop: set aside and the turn asked again, sampled, with a note on
        why; past ``LOOP_RESAMPLES`` a turn, kept, with the note as the next turn's request; past
        ``LOOP_TURNS`` such turns in a row, the run ends in an error, not in a slow walk to its
        last iteration."""
        if not self._resampled:  # once a turn, however many of its replies loop
            self._warn("repetition", f"Root reply {self.turns} {why[0]}; it was not run.")
        note = why[1]
        if self._resampled >= LOOP_RESAMPLES:
            self._looped_turns += 1
            if self._looped_turns >= LOOP_TURNS:
                error = f"the root {why[0]}, {self._looped_turns} turns in a row, and could not get out of it"
                return self._finish(self.response, error, "error")
            return self._next_turn("\n\n".join([*notes, note]))
        self._resampled += 1
        rejected = self.messages.pop()
        digest = hashlib.sha256(f"{self.run_id}:loop:{self.iterations}".encode()).digest()
        sampling = {"temperature": REGENERATE_TEMPERATURE, "seed": int.from_bytes(digest[:4], "big") >> 1}
        last = self.messages[-1]
        added = "" if note in last["content"] else note  # said once, however often it is set aside
        if added:
            self.messages[-1] = {**last, "content": f"{last['content']}\n\n{added}"}
            self._chars += len(added) + 2
        self.emit(
            ProposalRejected(
                **self._ids(),
                step=self._reproposing or self.steps + 1,
                turn=self.turns,
                reply=rejected["content"],
                added=added,
                sampling=sampling,
            )
        )
        ask = replace(self._asking(), sampling=sampling)
        if ask.prefill:  # the worked opening would lead to the same reply: only the fence is kept
            ask = replace(ask, prefill=ask.prefill.split("\n", 1)[0] + "\n", closing=None)
        return ask

    def _advance(self) -> Action:
        """Next block of the current reply, or its FINAL, or the next turn."""
        pending = self._pending
        assert pending is not None
        if pending.blocks and not pending.failed:
            if self._reproposing:  # a regenerated proposal's first step: the waiting step's number
                self._executing, self._reproposing = self._reproposing, 0
            else:
                self.steps += 1
                self._executing = self.steps  # human steps may be numbered while this one waits
            code = self._code = pending.blocks.pop(0)
            self.state = EXECUTING
            self.emit(StepStarted(**self._ids(), step=self._executing, code=code))
            return Execute(self._executing, code)
        if pending.directive is not None and not pending.failed:
            self.state = RESOLVING
            return ResolveFinal(pending.directive)
        if pending.directive is not None:
            pending.notes.append("Your FINAL was ignored because the code before it failed.")
        return self._observe()

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

    @_transition
    def receive_execution(
        self, result: ExecResult, *, answer_ready: bool, answer: str = "", restored: tuple[str, ...] = ()
    ) -> Action:
        if self._replaying is not None:  # an answer a replayed step set is not this run's
            return self._replay_finished(result, restored)
        pending = self._pending
        assert pending is not None
        full = self.redact(result.text())
        shown, cut = truncate(full, self.config.max_output_chars)
        self.emit(
            StepFinished(
                **self._ids(),
                step=self._executing,
                output=shown,
                error=result.error,
                elapsed_s=result.elapsed_s,
                cut_chars=cut,
                restored=restored,
            )
        )
        if cut:
            pending.notes.append(cut_note(full, cut, self.question, small=self.config.profile == "small"))
        if restored:
            pending.notes.append(
                f"Reserved names were put back after your code replaced them: {', '.join(restored)}."
            )
        pending.outputs.append((self._executing, shown))
        self._failed_in_row = self._failed_in_row + 1 if result.error else 0
        self._ran.append(_normal_code(self._code))
        if result.error:
            self._last_failure = next((ln for ln in reversed(result.error.splitlines()) if ln.strip()), None)
            self._failing[tuple(self._ran)] = (self._executing, self._last_failure or "an error")
            self._last_run = None
        elif not pending.blocks:  # the reply ran whole: the REPL is not what it was when code failed
            self._failing.clear()
            # Code that set an answer may be sent again after a doubt: the root insisting, no loop.
            self._last_run = None if answer_ready else (tuple(self._ran), self._executing)
        # A traceback supports no answer, though it may quote the very value (a line of the code).
        self._outputs.append(
            truncate(self.redact(result.printed()), self.config.max_output_chars)[0]
            if result.error
            else shown
        )
        if answer_ready:
            return self._answer(
                answer,
                "answer",
                step_failed=result.error is not None,
                printed=bool(full.strip()),
                source_text=self._code,
            )
        pending.failed = result.error is not None
        return self._advance()

    def _last_word(self, content: str | None, reply: str, source_text: str | None = None) -> Action:
        """The answer given on the extra turn after the iteration limit; the run still reports why.
        It is checked, to warn, but not sent back."""
        content = self.redact(content if content is not None else reply.strip())
        typed = None
        if self._typed is not None:
            try:
                typed = self._typed.check(content)[1]
            except OutputTypeError as exc:
                return self._mistyped(content, "final_turn", exc)
        written = source_text is None or grounding.written_in(content, source_text)
        self._open_doubt = None
        answer = _Answer(
            content,
            "final_turn",
            [],
            retry=False,
            written=written,
            error=f"max_iterations ({self.config.max_iterations}) reached; the response is the root's "
            f"last answer, given without running more code.",
            stop="max_iterations",
            typed=typed,
        )
        if self.steps == 0 or not self._seen_output or not content.strip():
            return self._accept(answer)
        return self._check(answer)

    @_transition
    def receive_verdict(self, reply: str) -> Action:
        """The sub-model's reply to ``Verify``; one that gives no verdict (a failed call) passes."""
        answer = self._judging
        assert answer is not None
        reason = grounding.verdict(reply)
        if reason is None:
            return self._accept(answer)
        return self._doubted(answer, f"a sub-model judged it unsupported ({reason})", "verify")

    @_transition
    def receive_final(self, content: str | None, problem: str | None) -> Action:
        assert self._pending is not None
        directive = self._pending.directive
        argument = directive.argument if directive else None
        if self._final_turn:
            return self._last_word(content, self.messages[-1]["content"], argument)
        if content is not None:
            return self._answer(content, directive.kind if directive else "FINAL", source_text=argument)
        self._pending.notes.append(problem or "Your FINAL could not be read.")
        self._pending.directive = None
        return self._observe()

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
        self.state = COMPACTING
        return Compact(prompt)

    @_transition
    def receive_summary(self, reply: str) -> AskRoot | Compact:
        """The root's notes on its older turns take their place; then the request that waited goes."""
        assert self._compacting is not None and self.window is not None
        content, final_turn, first, last, tokens = self._compacting
        self._compacting = None
        older = self.messages[self._fixed : -1]
        summary = reply.strip()
        if not summary or summary.startswith(ERROR_PREFIX):
            why = summary[len(ERROR_PREFIX) :].strip() if summary else "the reply was empty"
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

    @_transition
    def hint(self, text: str) -> None:
        """Guidance from the human for the root's next turn."""
        self._hints.append(text)
        self.emit(Hint(**self._ids(), text=text))

    @property
    def regenerating(self) -> bool:
        """Whether the waiting step is being proposed again (Regenerate): no code of it waits."""
        return self._reproposing != 0 and self._reproposing == self.steps

    @_transition
    def human_step(
        self,
        code: str,
        output: str,
        error: str | None = None,
        elapsed_s: float = 0.0,
        *,
        waiting: str | None = None,
    ) -> int:
        """A cell the human ran during the run joins its history; the root sees it next turn.

        Steps are numbered in the order they ran. Where the root's last step has not run yet (its
        code ``waiting`` for its cell, or being proposed again), the human's cell ran first: it
        takes that step's number, and the waiting step, announced again, the next."""
        regenerating = self.regenerating
        if waiting is None and not regenerating:
            return self._human_step(code, output, error, elapsed_s)
        self.steps -= 1
        number = self._human_step(code, output, error, elapsed_s)
        self.steps = number + 1
        if regenerating:
            self._reproposing = number + 1
        else:
            self._executing = number + 1
            self.emit(StepStarted(**self._ids(), step=number + 1, code=waiting or ""))
        return number

    def _human_step(self, code: str, output: str, error: str | None, elapsed_s: float) -> int:
        self.steps += 1
        shown, cut = truncate(self.redact(output), self.config.max_output_chars)
        self.emit(StepStarted(**self._ids(), step=self.steps, code=code, author="human"))
        self.emit(
            StepFinished(
                **self._ids(), step=self.steps, output=shown, error=error, elapsed_s=elapsed_s, cut_chars=cut
            )
        )
        self._human_steps.append((self.steps, code, shown))
        self._outputs.append(shown)
        self._failing.clear()  # the human changed the REPL: code that failed may not fail again
        self._last_run = None  # nor code that ran print the same
        return self.steps

    @_transition
    def human_edit(self, step: int, proposed: str, executed: str) -> None:
        """Record that a human changed a proposed step before it ran; the root is told next turn."""
        self._edits.append((step, proposed, executed))
        if step == self._executing:
            self._code = executed
        self.emit(HumanEdit(**self._ids(), step=step, proposed=proposed, executed=executed))

    @property
    def can_regenerate(self) -> bool:
        """Whether the waiting step may be proposed again: it is its reply's first, none has run."""
        pending = self._pending
        return self.state == EXECUTING and pending is not None and not pending.outputs

    @_transition
    def regenerate(self) -> AskRoot:
        """Another proposal for the waiting step (step mode's Regenerate): the reply that proposed
        it is set aside, recorded as rejected, and the root is asked the same turn again. Each reply
        counts in ``iterations`` and against the budget; the turn stays the same."""
        if not self.can_regenerate:
            raise RuntimeError("only a step whose reply has not run any code can be proposed again")
        rejected = self.messages.pop()
        self._regenerations += 1
        # Another proposal, not the same one again: this request samples, with a seed of its own
        # (recorded, so the request can be made again).
        digest = hashlib.sha256(f"{self.run_id}:{self._executing}:{self._regenerations}".encode()).digest()
        sampling = {"temperature": REGENERATE_TEMPERATURE, "seed": int.from_bytes(digest[:4], "big") >> 1}
        # What the human did while the step waited (cells of their own, hints) is in the new request:
        # added to this turn's, so the conversation stays one user turn, one reply.
        added = prompts.observation([], human_steps=self._human_steps, hints=self._hints)
        if added:
            last = self.messages[-1]
            self.messages[-1] = {**last, "content": f"{last['content']}\n\n{added}"}
            self._chars += len(added) + 2
            self._human_steps, self._hints = [], []
        self.emit(
            ProposalRejected(
                **self._ids(),
                step=self._executing,
                turn=self.turns,
                reply=rejected["content"],
                added=added,
                sampling=sampling,
            )
        )
        # The new proposal takes the waiting step's number (its cell is the same); steps numbered
        # after it while it waited (the human's) keep theirs.
        self._reproposing = self._executing
        self._pending = None
        self.state = ASKING
        ask = replace(self._asking(), sampling=sampling)
        if ask.prefill:  # the worked opening would lead to the same proposal: only the fence is kept
            ask = replace(ask, prefill=ask.prefill.split("\n", 1)[0] + "\n", closing=None)
        return ask

    @_transition
    def human_answer(self, content: str) -> Finish:
        """The human set the answer (``answer["ready"] = True`` in a cell of their own): the run
        ends, with it as it is (not checked)."""
        if self.state == DONE:
            return Finish(self.response, self.error, self._stop, self._cause)
        self._pending = self._judging = None
        finish = self._answer(content, "answer", checked=False)
        assert isinstance(finish, Finish)
        return finish

    @_transition
    def abort(self, error: RLMError | str) -> Finish:
        """End the run now (cancel, budget, provider failure), keeping what it had."""
        if self.state == DONE:
            return Finish(self.response, self.error, self._stop, self._cause)
        stop = error.stop if isinstance(error, RLMError) else "error"
        if self._open_doubt is not None:
            self._warn(
                "unsupported",
                f"The answer is not supported by what the code printed: {self._open_doubt}. The run "
                "was stopped after it was sent back.",
            )
        return self._finish(self.response, str(error), stop, error if isinstance(error, RLMError) else None)

    @property
    def done(self) -> bool:
        return self.state == DONE

    def followup(self, session: str) -> Followup:
        """Where the session's next question starts: this run's conversation as it ended."""
        return Followup(
            session,
            self.run_id,
            tuple(dict(m) for m in self.messages),  # type: ignore[misc]
            self._fixed,
            self._opening,
            self._summary,
            tuple(self._names),
        )


def _normal_code(code: str) -> str:
    """Code as a loop is told by: its syntax tree (comments, spacing and quotes aside), or, where it
    does not parse, its words without comment lines."""
    try:
        return ast.dump(ast.parse(code))
    except (SyntaxError, ValueError):
        return " ".join(
            w for line in code.splitlines() if not line.lstrip().startswith("#") for w in line.split()
        )


def _echoes(code: str, requests: list[str]) -> bool:
    """Whether ``code`` is output pasted back: it does not parse, and most of its lines (of three
    characters or more) are in ``requests``, what the root was sent after its first request."""
    try:
        ast.parse(code)
        return False
    except (SyntaxError, ValueError):
        pass
    seen = "\n".join(" ".join(line.split()) for text in requests for line in text.splitlines())
    lines = [" ".join(line.split()) for line in code.splitlines()]
    lines = [line for line in lines if len(line) >= 3]
    return bool(lines) and 2 * sum(line in seen for line in lines) >= len(lines)
