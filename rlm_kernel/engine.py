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

The machine is built in layers of one job each, all one object: ``rlm_kernel.run_actions`` (the
states, the table and the actions as data), ``rlm_kernel.run_core`` (the run's state, asking,
observing, finishing, compaction), ``rlm_kernel.answer_checks``, ``rlm_kernel.copilot`` (a human's
calls) and, here, the driver's protocol: start, replies, steps, FINAL, a branch's replay.
``rlm_kernel.loops`` tells a loop.
"""

from __future__ import annotations

from typing import Any

from . import prompts
from .copilot import CoPiloting
from .errors import RLMError
from .events import ProposalRejected, RootReply, RunStarted, StepFinished, StepStarted
from .executors.base import ExecResult
from .lm.base import Completion, Message, without_repeats
from .loops import LOOP_RESAMPLES, LOOP_TURNS, Loop, distinct, lesson
from .protocol import (
    FinalDirective,
    code_blocks,
    find_final,
    resolve_final,
    unclosed_final,
    whole_code_blocks,
)
from .repl import cut_note, truncate
from .run_actions import (
    LM_CALLS,
    REGENERATE_TEMPERATURE,
    STATES,
    TRANSITIONS,
    Action,
    AskRoot,
    Compact,
    Execute,
    Finish,
    Followup,
    PendingReply,
    ResolveFinal,
    State,
    Verify,
    fresh_sampling,
)
from .run_core import TURN_OUTPUT_TIMES, transition

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
    "STATES",
    "Followup",
    "LM_CALLS",
    "LOOP_RESAMPLES",
    "LOOP_TURNS",
    "REGENERATE_TEMPERATURE",
    "TURN_OUTPUT_TIMES",
]


class RLMRun(CoPiloting):
    """One run of the root loop. Emits events through ``emit``; never prints, calls or executes."""

    # -- the protocol ------------------------------------------------------------------
    @transition
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
            self.state = State.EXECUTING
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
        self._keep_output(result, shown)
        return self._replay_next()

    @transition
    def receive_reply(self, completion: Completion) -> Action:
        text, finish = self._reply_text(completion)
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
        notes = self._reply_notes(text, finish)  # about the reply itself, for the next turn
        directive = find_final(text) if self._text_final else None
        if self._final_turn:
            if directive is not None and directive.kind == "FINAL_VAR":
                self._pending = PendingReply([], directive)
                self.state = State.RESOLVING
                return ResolveFinal(directive)
            return self._last_word(resolve_final(directive, {})[0] if directive else None, text)
        return self._take_reply(text, directive, finish, notes)

    def _reply_text(self, completion: Completion) -> tuple[str, Any]:
        """The reply as the conversation keeps it, and why it ended (the provider's word)."""
        text = completion.text
        start = self._starts.get(self.turns)
        if start and start[1] and not self._final_turn:
            opener, closing = start[0].rsplit("\n", 1)[-1], start[1]
            if opener in text and closing not in text[text.rindex(opener) :]:
                text += closing  # the stop sequence that ended the reply closes the call it began
        finish = completion.extra.get("finish_reason") or completion.extra.get("stop_reason")
        if finish == "repetition":
            text = without_repeats(text)  # the lines it kept writing, once
        if finish in ("stop", "stop_sequence", "end_turn"):
            text = whole_code_blocks(text)  # the fence a stop sequence took: the history reads whole
        return text, finish

    def _reply_notes(self, text: str, finish: Any) -> list[str]:
        """A reply stopped for repeating itself or cut at the token limit: warned, and told next turn."""
        if finish == "repetition":
            self._warn("repetition", f"Root reply {self.turns} repeated itself and was stopped.")
            return [
                f"Your last reply kept repeating itself, so it was stopped after {len(text):,} characters."
            ]
        if finish in ("length", "max_tokens"):
            self._warn("reply_cut", f"Root reply {self.turns} reached the limit of tokens per reply.")
            return [
                "Your last reply reached the limit of tokens per reply and was cut: write shorter replies."
            ]
        return []

    def _take_reply(
        self, text: str, directive: FinalDirective | None, finish: Any, notes: list[str]
    ) -> Action:
        """A reply of a turn with turns after it: its code runs, unless it has none or is a loop."""
        blocks = code_blocks(text)
        if not blocks and directive is None:
            if self._text_final and (opened := unclosed_final(text)):
                notes.append(
                    f"Your {opened}( has no closing parenthesis, so the run did not end: "
                    f"write {opened}(...) whole."
                )
                return self._next_turn("\n\n".join(notes))
            return self._next_turn("\n\n".join([*notes, prompts.NO_CODE_NUDGE]))
        once = distinct(blocks)
        if finish == "repetition" and len(once) < len(blocks):  # stopped in a loop: run it once
            notes.append(
                f"{len(blocks) - len(once)} code block(s) of your reply repeated the one before and "
                "were not run again."
            )
            blocks = once
        requests = [m["content"] for m in self.messages[self._fixed :] if m["role"] == "user"]
        if (why := self._loops.reason(blocks, requests)) is not None:
            return self._resample(why, notes)
        self._loops.reply_taken()
        self._pending = PendingReply(blocks, directive, notes=notes)
        return self._advance()

    # -- loops -------------------------------------------------------------------------
    def _resample(self, why: Loop, notes: list[str]) -> AskRoot | Compact | Finish:
        """The last reply is a loop: set aside and the turn asked again, sampled, with a note on
        why; past ``LOOP_RESAMPLES`` a turn (or once sampling gave the same reply again), kept,
        with the note as the next turn's request; past ``LOOP_TURNS`` such turns in a row, the
        run ends in an error, not in a slow walk to its last iteration. A reply that repeats the
        failed step just before it rewinds the turn too: the failed reply and its output are set
        aside, and the request that led to it is asked again with the error's lesson, for a small
        model copies the failed code it sees, however it is sampled."""
        loops = self._loops
        if not loops.resampled:  # once a turn, however many of its replies loop
            self._warn("repetition", f"Root reply {self.turns} {why.warning}; it was not run.")
        note = why.note
        # sampled, the same reply again: so would the next be
        if loops.resampled >= LOOP_RESAMPLES or self.messages[-1]["content"] == loops.set_aside:
            loops.looped_turns += 1
            if loops.looped_turns >= LOOP_TURNS:
                turns = loops.looped_turns
                error = f"the root {why.warning}, {turns} turns in a row, and could not get out of it"
                return self._finish(self.response, error, "error")
            return self._next_turn("\n\n".join([*notes, note]))
        loops.resampled += 1
        rejected = self.messages.pop()
        loops.set_aside = rejected["content"]
        rewound = self._rewinds(why)
        if rewound:
            del self.messages[-2:]  # the failed reply and its output
            note = f"Your code for this, step {why.failed}, failed ({why.error}). Write other code."
            self._chars = sum(len(m["content"]) for m in self.messages)
            self._counted = (0, 0)
        sampling = fresh_sampling(f"{self.run_id}:loop:{self.iterations}")
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
                rewound=rewound,
            )
        )
        return self._ask_again(sampling)

    def _rewinds(self, why: Loop) -> bool:
        """Whether a loop rewinds its turn: it repeats the step that failed last, the root's own
        and alone in the turn before (its output the step's alone: no human cells or hints)."""
        last = self.messages[-2:]
        return (
            why.failed == self.steps
            and not self._reproposing
            and len(self.messages) - 2 >= self._fixed
            and [m["role"] for m in last] == ["assistant", "user"]
            and len(code_blocks(last[0]["content"])) == 1
            and last[1]["content"].startswith(f"Output of step {why.failed}:")
            and "\n\nHint from the human: " not in last[1]["content"]
        )

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
            self.state = State.EXECUTING
            self.emit(StepStarted(**self._ids(), step=self._executing, code=code))
            return Execute(self._executing, code)
        if pending.directive is not None and not pending.failed:
            self.state = State.RESOLVING
            return ResolveFinal(pending.directive)
        if pending.directive is not None:
            pending.notes.append("Your FINAL was ignored because the code before it failed.")
        return self._observe()

    @transition
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
        if result.error:
            self._last_failure = next((ln for ln in reversed(result.error.splitlines()) if ln.strip()), None)
            first = self._starts.get(1)  # the small profile's: the next reply writes the failing line anew
            if first and (retry := prompts.retry_start(self._code, result.error, first)):
                self._starts[self.turns + 1] = retry
                self._retries.add(self.turns + 1)
        elif self._starts.get(1) and not answer_ready and (start := prompts.answer_start(self._code, full)):
            self._starts[self.turns + 1] = start  # the small profile's: it answers with what it printed
        failure = lesson(result.error) if result.error else None
        self._loops.step_ran(
            self._code, self._executing, failure, whole=not pending.blocks, answer_ready=answer_ready
        )
        self._keep_output(result, shown)
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

    @transition
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

    @transition
    def abort(self, error: RLMError | str) -> Finish:
        """End the run now (cancel, budget, provider failure), keeping what it had."""
        if self.state == State.DONE:
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
        return self.state == State.DONE

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
