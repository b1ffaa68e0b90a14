"""What a view of a run shows, folded from its events. Pure: no widgets, no I/O.

Child runs (``rlm_query``) and their calls are attached under the step of the top
run that started them, so a view can draw one tree: steps, then sub-calls.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..events import (
    AnswerDoubted,
    AnswerSet,
    Event,
    HumanEdit,
    RootReply,
    RootToken,
    RunEnded,
    RunStarted,
    RunWarning,
    StepFinished,
    StepStarted,
    SubcallFinished,
    SubcallStarted,
    ToolCalled,
)
from ..usage import Usage

__all__ = ["ToolRow", "CallRow", "StepView", "RunState"]


@dataclass
class ToolRow:
    """One tool call: asked for by a sub-call's model, or made by the root's code."""

    tool: str
    arguments: str  # JSON text, as the event has it
    result_chars: int = 0
    result_preview: str = ""
    latency_s: float = 0.0
    error: str | None = None
    depth: int = 0
    positional: bool = False  # the root's code's form: {"args": [...], "kwargs": {...}}


@dataclass
class CallRow:
    call_id: str
    model: str
    depth: int
    prompt: str
    kind: str = "llm"
    status: str = "running"  # running, done, error, cancelled
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float | None = None
    cost: float | None = None
    error: str | None = None
    batch_id: str | None = None
    batch_size: int = 1
    reply: str = ""
    tools: list[ToolRow] = field(default_factory=list)


@dataclass
class StepView:
    step: int
    reply: str = ""  # the root's text that proposed this step
    code: str = ""
    output: str | None = None
    error: str | None = None
    elapsed_s: float | None = None
    lm_s: float | None = None  # the root's reply that proposed the step: its LM time
    edited: bool = False
    author: str = "root"  # or "human": a cell the human ran during the run (notebook mode)
    calls: dict[str, CallRow] = field(default_factory=dict)
    tools: list[ToolRow] = field(default_factory=list)  # called by the step's code (or a child run's)

    def all_tools(self) -> list[ToolRow]:
        """The step's tool calls: its code's, then its sub-calls'."""
        return [*self.tools, *(t for row in self.calls.values() for t in row.tools)]

    def tool_calls(self) -> int:
        """How many tool calls the step made: its code's and its sub-calls'."""
        return len(self.all_tools())

    def batches(self) -> dict[str, tuple[int, int]]:
        """Per batch: (finished, size)."""
        out: dict[str, tuple[int, int]] = {}
        for row in self.calls.values():
            if row.batch_id:
                done, size = out.get(row.batch_id, (0, row.batch_size))
                out[row.batch_id] = (done + (row.status != "running"), size)
        return out


class RunState:
    """Folds the events of one top-level run (and its children) into what a view draws."""

    def __init__(self) -> None:
        self.run_id: str | None = None
        self.model = ""
        self.sub_model = ""
        self.question: str | None = None
        self.steps: dict[int, StepView] = {}
        self.streaming = ""  # root text of the turn in progress
        self.streamed_tokens = 0  # its pieces so far (a streamed piece is about a token)
        self.warnings: list[str] = []
        self.sent_back: list[str] = []  # answers the run's check sent back to the root, and why
        self.last_reply = ""
        self.answer: str | None = None
        self.error: str | None = None
        self.ended = False
        self.waiting_for: int | None = None  # a step that waits for the human to run it (step mode)
        self.stopping = False  # Stop was pressed; the run has not ended yet
        self.paused = False  # notebook mode's Pause
        self._reply_latency: float | None = None  # of the last root reply, for its first step
        self.started = time.monotonic()
        self.elapsed: float | None = None
        self.usage = Usage()
        self.tool_calls = 0  # every tool call of the run, children's included
        self._child_step: dict[str, int] = {}  # child run id -> top-level step
        self._call_step: dict[str, int] = {}  # the top run's sub-call id -> its step

    def _step_of(self, event: Event, step: int | None) -> StepView | None:
        if event.run_id == self.run_id:
            number = step
        else:
            number = self._child_step.get(event.run_id)
        if number is None:
            return None
        return self.steps.setdefault(number, StepView(number))

    @property
    def current_step(self) -> int | None:
        return max(self.steps) if self.steps else None

    def apply(self, event: Event) -> None:
        top = event.run_id == self.run_id
        if isinstance(event, RunStarted):
            if self.run_id is None:
                self.run_id, self.model, self.sub_model = event.run_id, event.model, event.sub_model
                self.question = event.question
            elif event.parent_id is not None:
                parent_step = (
                    self._call_step.get(event.parent_call_id or "")
                    if event.parent_id == self.run_id
                    else self._child_step.get(event.parent_id)
                )
                if parent_step is None:  # a trajectory from before runs named their call
                    parent_step = self.current_step
                if parent_step is not None:
                    self._child_step[event.run_id] = parent_step
        elif isinstance(event, RootToken) and top:
            self.streaming += event.text
            self.streamed_tokens += 1
        elif isinstance(event, RunWarning) and top:
            self.warnings.append(event.text)
        elif isinstance(event, AnswerDoubted) and top:
            self.sent_back.append(f'"{event.content[:200]}": {event.reason}')
        elif isinstance(event, RootReply):
            self.usage.add(event)
            if top:
                self.streaming, self.last_reply, self.streamed_tokens = "", event.text, 0
                self._reply_latency = event.latency_s
            elif (view := self._step_of(event, None)) is not None:
                row = CallRow(
                    f"{event.run_id}:{event.turn}",
                    event.model,
                    event.depth,
                    "(child root turn)",
                    kind="root",
                    status="done",
                    input_tokens=event.input_tokens,
                    output_tokens=event.output_tokens,
                    latency_s=event.latency_s,
                    cost=event.cost,
                )
                view.calls[row.call_id] = row
        elif isinstance(event, StepStarted) and top:
            view = self.steps.setdefault(event.step, StepView(event.step))
            view.reply, view.code, view.author = self.last_reply, event.code, event.author
            view.lm_s, self._reply_latency = self._reply_latency, None  # the reply's first step has it
        elif isinstance(event, HumanEdit) and top:
            view = self.steps.setdefault(event.step, StepView(event.step))
            view.code, view.edited = event.executed, True
        elif isinstance(event, StepFinished) and top:
            view = self.steps.setdefault(event.step, StepView(event.step))
            view.output, view.error, view.elapsed_s = event.output, event.error, event.elapsed_s
        elif isinstance(event, SubcallStarted):
            if top and event.step is not None:
                self._call_step[event.call_id] = event.step
            if (view := self._step_of(event, event.step)) is not None:
                view.calls[event.call_id] = CallRow(
                    event.call_id,
                    event.model,
                    event.depth,
                    event.prompt_preview,
                    kind=event.call_kind,
                    batch_id=event.batch_id,
                    batch_size=event.batch_size,
                )
        elif isinstance(event, SubcallFinished):
            if event.call_kind == "llm":
                self.usage.add(event)
            view = self._step_of(event, event.step)
            row = view.calls.get(event.call_id) if view is not None else None
            if row is not None:
                row.status = "cancelled" if event.cancelled else "error" if event.error else "done"
                row.input_tokens, row.output_tokens = event.input_tokens, event.output_tokens
                row.latency_s, row.cost, row.error = event.latency_s, event.cost, event.error
                row.reply = event.response_preview
        elif isinstance(event, ToolCalled):
            self.tool_calls += 1
            view = self._step_of(event, event.step)
            if view is None:
                return
            row = ToolRow(
                event.tool,
                event.arguments,
                event.result_chars,
                event.result_preview,
                event.latency_s,
                event.error,
                depth=event.depth,
                positional=event.call_id is None,
            )
            owner = view.calls.get(event.call_id) if event.call_id is not None else None
            # A sub-call's tools go under it; the code's (or a call not seen) under the step.
            (owner.tools if owner is not None else view.tools).append(row)
        elif isinstance(event, AnswerSet) and top:
            self.answer = event.content
        elif isinstance(event, RunEnded) and top:
            self.ended, self.error, self.elapsed = True, event.error, event.elapsed_s
            self.answer = event.response if event.response is not None else self.answer

    @property
    def elapsed_s(self) -> float:
        return self.elapsed if self.elapsed is not None else time.monotonic() - self.started

    def running_calls(self) -> int:
        return sum(row.status == "running" for view in self.steps.values() for row in view.calls.values())
