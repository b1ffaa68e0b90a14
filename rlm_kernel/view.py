"""What a view of a run shows, folded from its events, and the one-line texts every view prints.

Pure: no widgets, no I/O, no Jupyter. The in-cell HTML (``jupyter/render.py``), the plain-text
progress (``console.py``) and, in TypeScript, the lab extension's ``runs.ts`` and ``format.ts`` all
show this fold; the fixtures in ``tests/fixtures/fold`` hold both languages to the same result.

Theory of operation. :meth:`RunState.apply` takes the events of one top-level run and of its
children in the order the bus delivered them. Child runs (``rlm_query``) and their calls are
attached under the step of the top run that started them, so a view draws one tree: steps, then
their calls, then the calls' tools. What counts as an LM call is :func:`rlm_kernel.usage.is_lm_call`,
the rule ``RLMResult.usage`` follows: a branch's replayed sub-calls and ``rlm`` sub-calls do not.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .events import (
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
    Voted,
)
from .usage import Usage, is_lm_call, percent

__all__ = [
    "ToolRow",
    "CallRow",
    "StepView",
    "RunState",
    "RunStatus",
    "StepStatus",
    "rlm_command",
    "format_tokens",
    "format_seconds",
    "tool_call_text",
    "tool_outcome",
    "tool_line",
    "tool_names",
    "step_bits",
    "step_line",
    "totals_line",
    "vote_line",
    "reply_parts",
    "fence_left_open",
]

RunStatus = Literal["running", "done", "error", "stopped"]
StepStatus = Literal["waiting", "paused", "running", "done", "error", "stopped"]

TOOL_ARGS_SHOWN = 60  # characters of a tool call's arguments in its line (all of them in a tooltip)
TOOL_ERROR_SHOWN = 160

# A cell that steers a run (``%rlm hint``, ``%rlm stop``, ``%%rlm``, ``x = %rlm ...``) rather than
# joining it: the forms the magics' input transformer rewrites, plus ``%rlm?`` (help). ``%rlmx`` is
# another magic, so its cell is the human's code like any other.
_COMMAND = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*\s*=\s*)?(%%?)rlm(?=\s|\?|$)")


def rlm_command(source: str) -> Literal["%rlm", "%%rlm"] | None:
    """Which of our magics a cell's source starts with, if any (``runs.ts``'s ``rlmCommand``)."""
    m = _COMMAND.match(source.lstrip())
    if m is None:
        return None
    return "%%rlm" if m.group(1) == "%%" else "%rlm"


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
    """A sub-call (``llm``, ``rlm``) or a child run's root turn (``root``), under its step."""

    call_id: str
    model: str
    depth: int
    prompt: str
    kind: str = "llm"
    status: str = "running"  # running, done, error, cancelled
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    latency_s: float | None = None
    cost: float | None = None
    error: str | None = None
    batch_id: str | None = None
    batch_size: int = 1
    reply: str = ""
    replayed: bool = False  # answered from a recording: no LM was called
    lm_call: bool = False  # counted in the run's LM calls (``usage.is_lm_call`` of its last event)
    tools: list[ToolRow] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)  # what SubcallStarted records of them


@dataclass
class StepView:
    step: int
    reply: str = ""  # the root's text that proposed this step
    code: str = ""
    output: str | None = None
    error: str | None = None
    elapsed_s: float | None = None
    lm_s: float | None = None  # the root's reply that proposed the step: its LM time (its first step only)
    edited: bool = False
    author: str = "root"  # or "human": a cell the human ran during the run (notebook mode)
    replayed: bool = False  # a branch running again a step of the run it continues
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
    """Folds the events of one top-level run (and its children) into what a view draws.

    A few facts come from the front end rather than from events: ``waiting_for`` (a step waiting
    for the human to run its cell), ``stopping`` (Stop was pressed), ``paused``, ``executing`` (the
    step whose cell runs), and the code the human ran a step with (:meth:`human_runs`)."""

    def __init__(self) -> None:
        self.run_id: str | None = None
        self.model = ""
        self.sub_model = ""
        self.question: str | None = None
        self.parent_run: str | None = None  # a branch: the run it continues, from step ``branched_at``
        self.branched_at: int | None = None
        self.steps: dict[int, StepView] = {}
        self.streaming = ""  # root text of the turn in progress
        self.streamed_tokens = 0  # its pieces so far (a streamed piece is about a token)
        self.warnings: list[str] = []
        self.vote: str | None = None  # several roots voted (``votes``): how they agreed
        self.sent_back: list[str] = []  # answers the run's check sent back to the root, and why
        self.last_reply = ""
        self.answer: str | None = None
        self.error: str | None = None
        self.stop: str | None = None  # RunEnded.stop, once ended
        self.ended = False
        self.waiting_for: int | None = None
        self.stopping = False
        self.paused = False
        self.executing: int | None = None  # the step whose cell runs now (notebook mode)
        self._reply_latency: float | None = None  # of the last root reply, for its first step
        self.started = time.monotonic()
        self.elapsed: float | None = None
        self.usage = Usage()
        self.tool_calls = 0  # every tool call of the run, children's included
        self._child_step: dict[str, int] = {}  # child run id -> top-level step
        self._call_step: dict[str, int] = {}  # the top run's sub-call id -> its step

    def _step_of(self, event: Event, step: int | None) -> StepView | None:
        number = step if event.run_id == self.run_id else self._child_step.get(event.run_id)
        if number is None:
            return None
        return self.steps.setdefault(number, StepView(number))

    @property
    def current_step(self) -> int | None:
        return max(self.steps) if self.steps else None

    @property
    def status(self) -> RunStatus:
        """``runs.ts``'s run status: an empty answer is no answer; Stop and interrupt are not errors."""
        if not self.ended:
            return "running"
        if self.answer is not None and self.answer.strip():
            return "done"
        return "stopped" if self.stop in ("user", "interrupt") else "error"

    def step_status(self, view: StepView) -> StepStatus:
        if view.error:
            return "error"
        if view.output is not None:
            return "done"
        if self.ended:
            return "stopped"
        if self._started(view):
            return "running"
        if self.waiting_for == view.step:
            return "waiting"
        # Paused, a step not yet run is held back (its cell runs, if at all, after Resume).
        return "paused" if self.paused else "running"

    def _started(self, view: StepView) -> bool:
        """Whether the step's code is known to run (as ``runs.ts`` marks a step running): its cell
        runs, it started sub-calls, or it is a human's cell or a replayed step."""
        return view.step == self.executing or bool(view.calls) or view.author == "human" or view.replayed

    def human_runs(self, step: int, code: str) -> None:
        """The human pressed Run on ``step`` with ``code`` (step mode's editor): the step shows the
        code that runs from now, not the proposal. The run records the edit (``HumanEdit``) only
        once the step has run, and by the same rule: a change beyond whitespace."""
        view = self.steps.setdefault(step, StepView(step))
        if code.strip() != view.code.strip():
            view.code, view.edited = code, True

    def apply(self, event: Event) -> None:
        """Fold one event in: a child run's events reach only the handlers that take them
        (sub-calls, tools, root replies, run starts); the rest count for the top run alone."""
        top = event.run_id == self.run_id
        if isinstance(event, _ANY_RUN):
            self._any_run(event, top)
        elif top:
            handler = _TOP_ONLY.get(type(event))
            if handler is not None:
                handler(self, event)

    def _any_run(self, event: Event, top: bool) -> None:
        if isinstance(event, RunStarted):
            self._run_started(event)
        elif isinstance(event, RootReply):
            self._root_reply(event, top)
        elif isinstance(event, SubcallStarted):
            self._call_started(event, top)
        elif isinstance(event, SubcallFinished):
            self._call_finished(event)
        elif isinstance(event, ToolCalled):
            self._tool_called(event)

    def _root_token(self, event: RootToken) -> None:
        self.streaming += event.text
        self.streamed_tokens += 1

    def _warning(self, event: RunWarning) -> None:
        self.warnings.append(event.text)

    def _answer_doubted(self, event: AnswerDoubted) -> None:
        self.sent_back.append(f'"{event.content[:200]}": {event.reason}')

    def _step_started(self, event: StepStarted) -> None:
        view = self.steps.setdefault(event.step, StepView(event.step))
        view.code, view.author, view.replayed = event.code, event.author, event.replayed
        if event.author == "root" and not event.replayed:
            view.reply = self.last_reply
            view.lm_s, self._reply_latency = self._reply_latency, None  # the reply's first step has it

    def _human_edit(self, event: HumanEdit) -> None:
        # A view shows what ran: the executed code, not the proposal.
        view = self.steps.setdefault(event.step, StepView(event.step))
        view.code, view.edited = event.executed, True

    def _step_finished(self, event: StepFinished) -> None:
        view = self.steps.setdefault(event.step, StepView(event.step))
        view.output, view.error, view.elapsed_s = event.output, event.error, event.elapsed_s

    def _answer_set(self, event: AnswerSet) -> None:
        self.answer = event.content

    def _voted(self, event: Voted) -> None:
        self.answer, self.vote = event.answer, vote_line(event)

    def _run_ended(self, event: RunEnded) -> None:
        self.ended, self.error, self.elapsed = True, event.error, event.elapsed_s
        self.answer, self.stop, self.streaming = event.response, event.stop, ""
        for view in self.steps.values():
            for row in view.calls.values():
                if row.status == "running":  # its event, if any, comes too late to change it
                    row.status, row.cost = "cancelled", 0.0  # as the pool reports a cancelled call

    def _run_started(self, event: RunStarted) -> None:
        if self.run_id is None:
            self.run_id, self.model, self.sub_model = event.run_id, event.model, event.sub_model
            self.question, self.parent_run, self.branched_at = (
                event.question,
                event.parent_run,
                event.branched_at,
            )
        elif event.parent_id is not None:
            parent_step = (
                self._call_step.get(event.parent_call_id or "")
                if event.parent_id == self.run_id
                else self._child_step.get(event.parent_id)
            )
            if parent_step is None:  # a trajectory from before runs named their call
                parent_step = self._spawning_step()
            if parent_step is not None:
                self._child_step[event.run_id] = parent_step

    def _spawning_step(self) -> int | None:
        """The step whose ``rlm_query`` most likely started a child: the latest with one running."""
        for number in sorted(self.steps, reverse=True):
            calls = self.steps[number].calls.values()
            if any(r.kind == "rlm" and r.status == "running" and r.depth == 0 for r in calls):
                return number
        return self.current_step

    def _root_reply(self, event: RootReply, top: bool) -> None:
        self.usage.add(event)
        if top:
            self.streaming, self.last_reply, self.streamed_tokens = "", event.text, 0
            self._reply_latency = event.latency_s
        elif (view := self._step_of(event, None)) is not None:
            row = CallRow(
                f"{event.run_id}:turn{event.turn}",
                event.model,
                event.depth,
                "",  # a child root turn's prompt is in no event
                kind="root",
                status="done",
                input_tokens=event.input_tokens,
                output_tokens=event.output_tokens,
                cached_tokens=event.cached_tokens,
                latency_s=event.latency_s,
                cost=event.cost,
                reply=event.text[:200],
                lm_call=True,
            )
            view.calls[row.call_id] = row

    def _call_started(self, event: SubcallStarted, top: bool) -> None:
        if top and event.step is not None:
            self._call_step[event.call_id] = event.step
        view = self._step_of(event, event.step)
        if view is not None and event.call_id not in view.calls:
            view.calls[event.call_id] = CallRow(
                event.call_id,
                event.model,
                event.depth,
                event.prompt_preview,
                kind=event.call_kind,
                batch_id=event.batch_id,
                batch_size=event.batch_size,
                images=list(event.images),
            )

    def _call_finished(self, event: SubcallFinished) -> None:
        view = self._step_of(event, event.step)
        row = None
        if view is not None:
            row = view.calls.setdefault(
                event.call_id,  # a call whose start this view never saw
                CallRow(event.call_id, event.model, event.depth, "", kind=event.call_kind),
            )
            row.batch_id = row.batch_id or event.batch_id
        if row is not None and row.status != "running":
            return  # already ended: cancelled when the run ended, its late event changes nothing
        if is_lm_call(event):
            self.usage.add(event)
        if row is None:
            return
        row.status = "cancelled" if event.cancelled else "error" if event.error else "done"
        row.model = event.model or row.model
        row.input_tokens, row.output_tokens, row.cached_tokens = (
            event.input_tokens,
            event.output_tokens,
            event.cached_tokens,
        )
        row.latency_s, row.cost, row.error = event.latency_s, event.cost, event.error
        row.reply, row.replayed, row.lm_call = event.response_preview, event.replayed, is_lm_call(event)

    def _tool_called(self, event: ToolCalled) -> None:
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

    @property
    def elapsed_s(self) -> float:
        return self.elapsed if self.elapsed is not None else time.monotonic() - self.started

    def running_calls(self) -> int:
        return sum(row.status == "running" for view in self.steps.values() for row in view.calls.values())


# Events a child run's share with its top run's view; every other kind counts for the top run only.
_ANY_RUN = (RunStarted, RootReply, SubcallStarted, SubcallFinished, ToolCalled)

_TOP_ONLY: dict[type, Callable[[RunState, Any], None]] = {
    RootToken: RunState._root_token,
    RunWarning: RunState._warning,
    AnswerDoubted: RunState._answer_doubted,
    StepStarted: RunState._step_started,
    HumanEdit: RunState._human_edit,
    StepFinished: RunState._step_finished,
    AnswerSet: RunState._answer_set,
    Voted: RunState._voted,
    RunEnded: RunState._run_ended,
}


# -- the one-line texts: ``format.ts`` writes the same ----------------------------------------------


def format_tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 10_000 else f"{n:,}"


def format_seconds(s: float) -> str:
    return f"{s:.2f} s" if s < 10 else f"{s:.1f} s"


def _json(value: object) -> str:
    # JSON.stringify's form, so both languages write a nested argument alike.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tool_call_text(row: ToolRow) -> str:
    """A tool call in short, e.g. ``open_file(name="a.txt", start=8)``: arguments cut at
    ``TOOL_ARGS_SHOWN`` characters; arguments that are not JSON (cut by the event) as they are."""
    try:
        parsed = json.loads(row.arguments) if row.arguments else {}
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        args, kwargs = [], parsed
        if row.positional and set(parsed) == {"args", "kwargs"} and isinstance(parsed["kwargs"], dict):
            args, kwargs = (
                parsed["args"] if isinstance(parsed["args"], list) else [parsed["args"]],
                parsed["kwargs"],
            )
        shown = ", ".join([*(_json(a) for a in args), *(f"{k}={_json(v)}" for k, v in kwargs.items())])
    else:
        shown = row.arguments
    if len(shown) > TOOL_ARGS_SHOWN:
        shown = shown[: TOOL_ARGS_SHOWN - 1] + "…"
    return f"{row.tool}({shown})"


def tool_outcome(row: ToolRow) -> str:
    """What a tool call gave: its result's size and its time, or its error."""
    gave = (
        f"✗ {row.error[:TOOL_ERROR_SHOWN]}"
        if row.error is not None
        else f"{format_tokens(row.result_chars)} chars"
    )
    return f"{gave} · {format_seconds(row.latency_s)}"


def tool_line(row: ToolRow) -> str:
    return f"{tool_call_text(row)} · {tool_outcome(row)}"


def tool_names(rows: list[ToolRow]) -> str:
    """The tools called, in the order first called: "list_files, open_file × 2"."""
    counts = Counter(r.tool for r in rows)
    return ", ".join(name if n == 1 else f"{name} × {n}" for name, n in counts.items())


_STEP_STATUS = {
    "error": "error",
    "done": "done",
    "stopped": "stopped before it ran",
    "waiting": "waiting for you to run its cell",
    "paused": "paused",
}


def step_bits(view: StepView, state: RunState) -> list[str]:
    """A step's line in parts (plain text; the HTML view escapes each and colours the status)."""
    author = "human" if view.author == "human" else "root, edited" if view.edited else "root"
    status = state.step_status(view)
    shown = "stopping…" if status == "running" and state.stopping else _STEP_STATUS.get(status, status)
    bits = [f"step {view.step}", author + (", replayed" if view.replayed else ""), shown]
    if view.calls:
        running = sum(r.status == "running" for r in view.calls.values())
        bits.append(f"{len(view.calls)} sub-call(s)" + (f", {running} running" if running else ""))
    if tools := view.all_tools():
        failed = sum(t.error is not None for t in tools)
        bits.append(
            f"{len(tools)} tool call(s): {tool_names(tools)}" + (f", {failed} failed" if failed else "")
        )
    if view.lm_s is not None:
        bits.append(f"root LM {view.lm_s:.2f} s")
    if view.elapsed_s is not None:
        bits.append(f"code {view.elapsed_s:.2f} s")
    return bits


def step_line(view: StepView, state: RunState) -> str:
    """One step in a line, e.g. "step 2 · root · done · 3 sub-call(s) · root LM 1.20 s · code 0.10 s"."""
    return " · ".join(step_bits(view, state))


def totals_line(state: RunState) -> str:
    """The run's figures, children included: "5 LM call(s) · 25 in / 9 out tokens · $1.5000"."""
    total = state.usage.total
    tools = f" · {state.tool_calls} tool call(s)" if state.tool_calls else ""
    share = percent(total.cached_tokens, total.input_tokens)
    cached = f" · {total.cached_tokens:,} cached ({share} of input)" if total.cached_tokens else ""
    cost = "cost unknown" if total.cost is None else f"${total.cost:.4f}"
    return (
        f"{total.calls} LM call(s){tools} · {total.input_tokens:,} in / {total.output_tokens:,} out tokens"
        f"{cached} · {cost}"
    )


def vote_line(event: Voted) -> str:
    """The roots' vote in one line: "vote: 2 of 3 roots agree · all roots: 1,204 in / 96 out tokens"."""
    k = len(event.runs)
    counts = [int(c.get("count", 0)) for c in event.candidates]
    agree = f"{counts[0]} of {k} roots agree" if counts else f"none of {k} roots answered"
    split = "" if event.clear else " (split: low confidence)"
    return f"vote: {agree}{split} · all roots: {event.input_tokens:,} in / {event.output_tokens:,} out tokens"


_FENCE = re.compile(r"[ \t]*```[ \t]*([\w+.-]*)[ \t]*")


def _scan(text: str) -> tuple[list[tuple[str | None, str]], bool]:
    """``text``'s prose and fenced blocks, and whether its last block is left open."""
    parts: list[tuple[str | None, str]] = []
    lang: str | None = None  # the open block's language; None in prose
    lines: list[str] = []
    rows = text.split("\n")
    for i, line in enumerate(rows):
        last = i == len(rows) - 1
        if lang is None and (opening := _FENCE.fullmatch(line)) is not None and not last:
            parts.append((None, "\n".join(lines)))
            lang, lines = opening.group(1).lower(), []
        elif lang is None and last and line.lstrip().startswith("```"):
            continue  # an opening fence, its language still coming
        elif lang is not None and line.lstrip().startswith("```"):
            parts.append((lang, "\n".join(lines)))  # a line that starts a fence closes the block
            lang, lines = None, []
        elif not (last and line.strip() and set(line.strip()) <= {"`"}):  # not a fence being written
            lines.append(line)
    parts.append((lang, "\n".join(lines)))
    return [(kind, body.strip("\n")) for kind, body in parts if body.strip()], lang is not None


def reply_parts(text: str) -> list[tuple[str | None, str]]:
    """A root reply, whole or as far as it has streamed, as prose (``None``) and fenced blocks (their
    language, "" for a bare fence), in order. A block whose closing fence has not come, or never
    will (a stop sequence dropped it), runs to the end, as ``protocol.code_blocks`` reads it; a
    fence still being written on the last line (```` `` ````, ```` ```re ````) is left out."""
    return _scan(text)[0]


def fence_left_open(text: str) -> bool:
    """Whether a reply ends inside a code block: a view that prints it as it is closes the block."""
    return _scan(text)[1]
