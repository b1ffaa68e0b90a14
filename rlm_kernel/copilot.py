"""Co-piloting: what a human does to a run while it goes (a hint for the root, a cell of their
own, a step edited before it runs, a step proposed again, the answer set by hand). Each is a call
on the machine like any observation, checked against ``TRANSITIONS``."""

from __future__ import annotations

from . import prompts
from .answer_checks import AnswerChecks
from .events import Hint, HumanEdit, ProposalRejected, StepFinished, StepStarted
from .repl import truncate
from .run_actions import AskRoot, Finish, State, fresh_sampling
from .run_core import transition

__all__ = ["CoPiloting"]


class CoPiloting(AnswerChecks):
    """The calls a human makes on a run, besides the driver's observations."""

    @transition
    def hint(self, text: str) -> None:
        """Guidance from the human for the root's next turn."""
        self._hints.append(text)
        self.emit(Hint(**self._ids(), text=text))

    @property
    def regenerating(self) -> bool:
        """Whether the waiting step is being proposed again (Regenerate): no code of it waits."""
        return self._reproposing != 0 and self._reproposing == self.steps

    @transition
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
        self._codes.append(code)
        self._loops.forget()  # the human changed the REPL
        return self.steps

    @transition
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
        return self.state == State.EXECUTING and pending is not None and not pending.outputs

    @transition
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
        sampling = fresh_sampling(f"{self.run_id}:{self._executing}:{self._regenerations}")
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
        self.state = State.ASKING
        return self._ask_again(sampling)

    @transition
    def human_answer(self, content: str) -> Finish:
        """The human set the answer (``answer["ready"] = True`` in a cell of their own): the run
        ends, with it as it is (not checked)."""
        if self.state == State.DONE:
            return Finish(self.response, self.error, self._stop, self._cause)
        self._pending = self._judging = None
        finish = self._answer(content, "answer", checked=False)
        assert isinstance(finish, Finish)
        return finish
