"""Plain-text progress for terminals and front ends without widgets: a bus subscriber.

Its figures are :mod:`rlm_kernel.view`'s fold, in the same lines as the other views: a step's line
when the step ends, the run's totals when the run ends.
"""

from __future__ import annotations

import sys
import textwrap
import threading
from collections.abc import Callable
from typing import Any, TextIO

from .events import (
    AnswerDoubted,
    AnswerSet,
    Event,
    RootReply,
    RootToken,
    RunEnded,
    RunStarted,
    RunWarning,
    StepFinished,
    StepStarted,
    Voted,
)
from .view import RunState, fence_left_open, step_line, totals_line, vote_line

__all__ = ["ConsoleView"]


def _ended(reply: str) -> str:
    """A reply as printed whole: on lines of its own, its last code block closed where the stop
    sequence dropped the closing fence."""
    ended = reply if reply.endswith("\n") else reply + "\n"
    return ended + "```\n" if fence_left_open(reply) else ended


class ConsoleView:
    """Prints each root turn as it streams, each step's code output and its line, and the totals.

    ``stream`` defaults to the real stdout at creation time, so output of the REPL's own
    code (which is captured for the root) never mixes with it.
    """

    def __init__(self, stream: TextIO | None = None, *, show_output: int = 600, stream_tokens: bool = True):
        self.stream = stream or sys.__stdout__ or sys.stdout
        self.show_output = show_output
        self.stream_tokens = stream_tokens
        self.state = RunState()
        self._lock = threading.Lock()
        self._streamed: str | None = None  # the top run's reply so far, while it streams

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def __call__(self, event: Event) -> None:
        with self._lock:
            if isinstance(event, RunStarted) and event.depth == 0:
                self.state = RunState()  # a view may be handed one run after another
            self.state.apply(event)
            self._handle(event)

    def _handle(self, event: Event) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event, "  " * event.depth)

    def _run_started(self, event: RunStarted, pad: str) -> None:
        what = "run" if event.depth == 0 else "child run"
        self._write(f"{pad}── {what} {event.run_id}: {event.model} (sub-calls: {event.sub_model})\n")

    def _root_token(self, event: RootToken, pad: str) -> None:
        if not self.stream_tokens or event.depth != 0:
            return
        if self._streamed is None:
            self._write(f"{pad}root ▸ ")
            self._streamed = ""
        self._streamed += event.text
        self._write(event.text)

    def _root_reply(self, event: RootReply, pad: str) -> None:
        if self._streamed is not None and event.depth == 0:
            # The reply may end with what was never streamed: the engine closes a call that the
            # reply's start opened and the server's stop sequence cut (`FINAL(` ... `)`).
            streamed, self._streamed = self._streamed, None
            rest = event.text[len(streamed) :] if event.text.startswith(streamed) else ""
            self._write(_ended(streamed + rest)[len(streamed) :])
        elif event.depth > 0 or not self.stream_tokens:
            self._write(textwrap.indent("root ▸ " + _ended(event.text.strip()), pad))
        tokens = f"{event.input_tokens:,} in / {event.output_tokens:,} out tokens"
        self._write(f"{pad}   ({tokens}, {event.latency_s:.1f} s)\n")

    def _step_started(self, event: StepStarted, pad: str) -> None:
        self._write(f"{pad}▶ step {event.step}\n")

    def _step_finished(self, event: StepFinished, pad: str) -> None:
        out = event.output
        if len(out) > self.show_output:
            out = out[: self.show_output] + " …"
        if out.strip():
            self._write(textwrap.indent(out.rstrip() + "\n", pad + "  │ "))
        if event.run_id == self.state.run_id:  # a child's calls and tools are in its top step's line
            self._write(f"  {step_line(self.state.steps[event.step], self.state)}\n")

    def _answer_set(self, event: AnswerSet, pad: str) -> None:
        self._write(f"{pad}✔ answer ({event.source}): {event.content[:200]}\n")

    def _answer_doubted(self, event: AnswerDoubted, pad: str) -> None:
        self._write(f"{pad}↩ answer sent back: {event.content[:200]} ({event.reason})\n")

    def _voted(self, event: Voted, pad: str) -> None:
        self._write(f"{pad}🗳 {vote_line(event)}\n")

    def _run_warning(self, event: RunWarning, pad: str) -> None:
        self._write(f"{pad}⚠ {event.text}\n")

    def _run_ended(self, event: RunEnded, pad: str) -> None:
        if event.error:
            self._write(f"{pad}✘ {event.error}\n")
        totals = f" · {totals_line(self.state)}" if event.run_id == self.state.run_id else ""
        self._write(f"{pad}── {event.iterations} turn(s), {event.elapsed_s:.1f} s{totals}\n")


# Each kind of event the console prints, and the method that prints it; other kinds print nothing.
_HANDLERS: dict[type[Event], Callable[[ConsoleView, Any, str], None]] = {
    RunStarted: ConsoleView._run_started,
    RootToken: ConsoleView._root_token,
    RootReply: ConsoleView._root_reply,
    StepStarted: ConsoleView._step_started,
    StepFinished: ConsoleView._step_finished,
    AnswerSet: ConsoleView._answer_set,
    AnswerDoubted: ConsoleView._answer_doubted,
    Voted: ConsoleView._voted,
    RunWarning: ConsoleView._run_warning,
    RunEnded: ConsoleView._run_ended,
}
