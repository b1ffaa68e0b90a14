"""The root loop of one run, written once: a generator over the engine's actions that does
everything but wait.

It checks the budget, records human edits, settles each step, resolves FINAL, reopens the REPL's
answer when the engine sends one back, and aborts with the drain. It yields what must be waited for:
an ``AskRoot`` (send back the ``Completion``), a ``Verify`` or a ``Compact`` (send back the
sub-model's text), an ``Execute`` (send back a :class:`Ran`, or :class:`Regenerate`) or, made with
``offload``, a :class:`Blocking`. To stop the run, a driver throws an ``RLMError`` into it.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import Any

from .engine import Action, AskRoot, Compact, Execute, Finish, ResolveFinal, Verify
from .errors import RLMError, RunCancelled, one_line
from .executors.base import StepOutcome
from .lm.base import Completion
from .run_tree import RunParts

__all__ = ["REOPEN", "Ran", "Regenerate", "Blocking", "Wait", "Loop"]

log = logging.getLogger("rlm_kernel")

# What the loop runs when the engine sent an answer back: the root's code must set it again.
REOPEN = 'answer["ready"] = False\n'


@dataclass(frozen=True)
class Ran:
    """What a driver sends back for an ``Execute``: the code that ran (a human may have edited it)
    and its outcome."""

    code: str
    outcome: StepOutcome


@dataclass(frozen=True)
class Regenerate:
    """What a driver sends back for an ``Execute`` a human wants proposed again, instead of a
    :class:`Ran`."""


@dataclass(frozen=True)
class Blocking:
    """Work that blocks (reading FINAL's variable, clearing the answer, waiting for cancelled calls
    to end), handed to a driver that must not block: it calls ``call()`` off its event loop and
    sends back the return value. Only a :class:`Loop` made with ``offload=True`` yields these."""

    call: Callable[[], Any]


Wait = AskRoot | Verify | Compact | Execute | Blocking

Steps = Generator[Wait, Any, Action]


class Loop:
    """The root loop of one run. ``start``, ``send`` and ``throw`` return the next thing to wait
    for, or the run's ``Finish``. The loop is the engine's only caller: hints queued on
    :class:`RunParts` from other threads reach the run here, between calls, and each call's time
    is read here (``clock``), never by the engine."""

    def __init__(
        self, parts: RunParts, *, offload: bool = False, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.parts = parts
        self.offload = offload
        self.clock = clock
        self.finish: Finish | None = None
        self.waiting: Execute | None = None  # the step the loop waits on, as it stands now
        self._steps = self._loop()

    def start(self) -> Wait | Finish:
        return self._advance(lambda: next(self._steps))

    def send(self, value: Completion | str | Ran | Regenerate | Any) -> Wait | Finish:
        return self._advance(lambda: self._steps.send(value))

    def throw(self, error: RLMError) -> Wait | Finish:
        """Stop the run where it waits (cancel, interrupt, a provider's error), keeping what it has."""
        return self._advance(lambda: self._steps.throw(error))

    def end(self, finish: Finish) -> Finish:
        """The run ended outside the loop."""
        self._steps.close()
        self.finish = self.finish or finish
        return self.finish

    def human_step(self, code: str, output: str, error: str | None, elapsed_s: float) -> Execute | None:
        """A cell of the human's own ran while the loop waits: a step of the run, which the root
        sees next turn (notebook mode).

        Steps are numbered in the order they ran. A step the root proposed that has not run yet
        (waiting for its cell, or being proposed again) ran after the human's cell: the human's
        cell takes its number and it takes the next. Returns the waiting step so numbered again,
        or None when no proposed step waits."""
        if self.finish is not None:
            return None
        self._boundary()
        run = self.parts.run
        waiting = self.waiting
        if waiting is not None and (waiting.replay or waiting.step != run.steps):
            waiting = None
        number = run.human_step(code, output, error, elapsed_s, waiting=waiting.code if waiting else None)
        if waiting is None:
            return None
        self.waiting = replace(waiting, step=number + 1)
        return self.waiting

    def human_answer(self, answer: Any) -> Finish:
        """A cell of the human's own set the answer: the run ends with it."""
        if self.finish is None:
            self._boundary()
            return self.end(self.parts.run.human_answer(answer))
        return self.finish

    def _advance(self, step: Callable[[], Wait]) -> Wait | Finish:
        if self.finish is not None:
            return self.finish
        try:
            return step()
        except StopIteration as stop:
            self.finish = stop.value
            return stop.value
        except Exception as exc:  # the loop or the engine failed (a bug): the run ends with what it had
            log.exception("rlm_kernel: the root loop failed")
            self._boundary()
            self.finish = self.parts.run.abort(RLMError(one_line(exc)))
            return self.finish

    def _boundary(self) -> None:
        """Before each call into the engine: the time now, and the hints that came meanwhile."""
        run, hints = self.parts.run, self.parts.hints
        run.now = self.clock()
        while not hints.empty() and not run.done:
            run.hint(hints.get_nowait())

    def _blocking(self, call: Callable[[], Any]) -> Generator[Wait, Any, Any]:
        """``call()``'s value: made here, or, with ``offload``, by the driver off its event loop."""
        if self.offload:
            return (yield Blocking(call))
        return call()

    def _loop(self) -> Generator[Wait, Any, Finish]:
        run = self.parts.run
        self._boundary()
        action: Action = run.start()
        while not isinstance(action, Finish):
            try:
                self._check()
                action = yield from self._step(action)
            except RLMError as exc:
                action = yield from self._aborted(exc)
        return action

    def _check(self) -> None:
        """Before each wait: a cancelled run stops, and one over its budget ends."""
        tree = self.parts.tree
        if tree.cancelled:
            raise RunCancelled()
        tree.budget.check()

    def _step(self, action: Action) -> Steps:
        """Wait for what ``action`` asks, and give the engine what came: its next action."""
        if isinstance(action, (AskRoot, Verify, Compact)):
            return (yield from self._call(action))
        if isinstance(action, Execute):
            return (yield from self._execute(action))
        if isinstance(action, ResolveFinal):
            return (yield from self._resolve(action))
        return action

    def _call(self, action: AskRoot | Verify | Compact) -> Steps:
        run = self.parts.run
        if isinstance(action, AskRoot) and action.reopen:
            yield from self._blocking(self._reopen)
        value = yield action
        self._boundary()
        if isinstance(action, Verify):
            return run.receive_verdict(value)
        if isinstance(action, Compact):
            return run.receive_summary(value)
        return run.receive_reply(value)

    def _execute(self, action: Execute) -> Steps:
        parts = self.parts
        run = parts.run
        parts.subcalls.step, parts.subcalls.replaying = action.step, action.replay
        self.waiting = action
        ran: Ran | Regenerate = yield action
        action, self.waiting = self.waiting or action, None  # numbered again if a human step came first
        parts.subcalls.replaying = False
        if parts.tree.cancelled:
            raise RunCancelled()
        self._boundary()
        if isinstance(ran, Regenerate):
            return run.regenerate() if run.can_regenerate else action  # else the same step waits again
        if ran.code.strip() != action.code.strip():
            run.human_edit(action.step, action.code, ran.code)
        o = ran.outcome
        return run.receive_execution(
            o.result, answer_ready=o.answer_ready, answer=o.answer, restored=o.restored
        )

    def _resolve(self, action: ResolveFinal) -> Steps:
        resolve = functools.partial(self.parts.executor.resolve, action.directive)
        content, problem = yield from self._blocking(resolve)
        self._boundary()
        return self.parts.run.receive_final(content, problem)

    def _aborted(self, exc: RLMError) -> Steps:
        """The run ends with ``exc``: at the root, cancelled calls first record their end."""
        run, tree = self.parts.run, self.parts.tree
        self.waiting = None
        if run.depth == 0:
            yield from self._blocking(tree.pool.drain)
        self._boundary()
        return run.abort(exc)

    def _reopen(self) -> None:
        """The engine sent the answer back: ``answer["ready"]``, still set in the REPL, is cleared,
        so the root's next step ends the run only when it sets the answer again."""
        try:
            self.parts.executor.execute(REOPEN, step=0)
        except Exception:  # best effort: the next step then ends the run, as without the check
            log.warning("rlm_kernel: clearing the answer after it was sent back failed", exc_info=True)
