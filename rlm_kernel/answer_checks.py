"""An answer the root commits, checked before it is taken: against its ``output_type``, against
what the run's steps printed (``rlm_kernel.grounding``), and, with ``verify``, by the sub-model.
An answer that fails a check is sent back once while turns are left, or taken with a warning;
the theory of operation is in ``rlm_kernel.engine``'s docstring."""

from __future__ import annotations

from dataclasses import replace

from . import grounding
from .events import AnswerDoubted, AnswerSet
from .run_actions import Action, CommittedAnswer, Compact, Finish, PendingReply, State, Verify
from .run_core import RunCore, transition
from .typed import OutputTypeError

__all__ = ["AnswerChecks"]


class AnswerChecks(RunCore):
    """The run's moves once an answer is committed: check it, send it back, or take it."""

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
        answer = CommittedAnswer(content, source, warnings, retry, written, typed=typed)
        if checked and not warnings and not content.strip() and retry:
            return self._doubted(answer, grounding.EMPTY, "check")  # most often a value never put in
        if not checked or warnings or not content.strip():
            return self._accept(answer)
        return self._check(answer)

    def _check(self, answer: CommittedAnswer) -> Action:
        """The cheap check, then (``verify``) the sub-model's; an answer that fails either is sent
        back, or taken with a warning."""
        self.response = answer.content  # kept if the run is stopped before it is taken
        reason = grounding.unsupported(
            self.question,
            answer.content,
            self._outputs,
            written=answer.written,
            code="\n".join(self._codes),
            shown=grounding.shown_of(self.context_meta),
        )
        if reason is not None:
            return self._doubted(answer, reason, "check")
        if self.config.verify:
            self._judging = answer
            self.state = State.VERIFYING
            return Verify(grounding.verify_prompt(self.question, answer.content, self._outputs))
        return self._accept(answer)

    def _doubted(self, answer: CommittedAnswer, reason: str, by: str) -> Action:
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
        pending = self._pending or PendingReply([], None)
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

    def _accept(self, answer: CommittedAnswer) -> Finish:
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
        answer = CommittedAnswer(
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

    @transition
    def receive_verdict(self, reply: str) -> Action:
        """The sub-model's reply to ``Verify``; one that gives no verdict (a failed call) passes."""
        answer = self._judging
        assert answer is not None
        reason = grounding.verdict(reply)
        if reason is None:
            return self._accept(answer)
        return self._doubted(answer, f"a sub-model judged it unsupported ({reason})", "verify")
