"""A run's events as ACP session updates: what an ACP client's chat shows of a run.

    root_token, root_reply   agent_thought_chunk   the top root's reply, line by line as it streams
    step_started             tool_call             "Step n", kind execute, the code in a fenced block
    step_finished            tool_call_update      completed or failed, the output in a fenced block
    subcall_started          tool_call             "llm_query → model" (or rlm_query), kind think
    subcall_finished         tool_call_update      its tokens, latency and reply preview
    answer_doubted, warning  agent_thought_chunk   as they happen; the top run's warnings again
                                                   under the answer (``low_confidence``, ...)
    run_ended (the top run)  agent_message_chunk   the answer, or why there is none

Pure: :class:`Updates` turns events into updates and sends nothing. Every text passes the
redactor, whole lines at a time: a key split over streamed tokens is still whole in its line.
LM text goes out as plain text and fenced code blocks, which clients render themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from acp import start_tool_call, text_block, tool_content, update_agent_message_text, update_tool_call
from acp.helpers import SessionUpdate, update_agent_thought_text
from acp.schema import AgentThoughtChunk, ToolCallProgress, ToolCallStart, ToolCallUpdate

from ..events import (
    AnswerDoubted,
    Event,
    RootReply,
    RootToken,
    RunEnded,
    RunStarted,
    RunWarning,
    StepFinished,
    StepStarted,
    SubcallFinished,
    SubcallStarted,
)

__all__ = ["Updates", "fenced", "coalesce"]


def fenced(text: str, language: str = "") -> str:
    """``text`` in a Markdown code block whose fence no run of backticks inside it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def coalesce(updates: list[SessionUpdate]) -> list[SessionUpdate]:
    """Neighbouring thought chunks joined into one: fewer messages, the same text."""
    out: list[SessionUpdate] = []
    for update in updates:
        last = out[-1] if out else None
        if isinstance(update, AgentThoughtChunk) and isinstance(last, AgentThoughtChunk):
            out[-1] = update_agent_thought_text(last.content.text + update.content.text)  # type: ignore[union-attr]
        else:
            out.append(update)
    return out


class Updates:
    """Folds one prompt's events into session updates; ``redact`` cleans every text sent."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        self.redact = redact
        self.run_id: str | None = None  # the top run's: the question being answered
        self.ended: RunEnded | None = None
        self.warnings: list[RunWarning] = []
        self._held = ""  # the top root's streamed reply since its last whole line
        self._streamed = ""  # all of that reply streamed so far, as it came
        self._denied: set[int] = set()

    def step_id(self, step: int, run_id: str | None = None) -> str:
        return f"{run_id or self.run_id}-step-{step}"

    def __call__(self, event: Event) -> list[SessionUpdate]:
        handle = _HANDLERS.get(type(event))
        return handle(self, event) if handle is not None else []

    def _run_started(self, event: RunStarted) -> list[SessionUpdate]:
        if event.depth == 0:
            self.run_id = event.run_id
        return []

    def _root_token(self, event: RootToken) -> list[SessionUpdate]:
        return self._token(event.text) if event.depth == 0 else []

    def _root_reply(self, event: RootReply) -> list[SessionUpdate]:
        return self._reply(event.text) if event.depth == 0 else []

    def _doubted(self, event: AnswerDoubted) -> list[SessionUpdate]:
        return [self._thought(f"Answer sent back ({event.reason}): {event.content[:200]}\n")]

    def _warning(self, event: RunWarning) -> list[SessionUpdate]:
        if event.depth == 0:
            self.warnings.append(event)
        return [self._thought(f"Warning ({event.code}): {event.text}\n")]

    def _run_ended(self, event: RunEnded) -> list[SessionUpdate]:
        if event.depth != 0:
            return []
        self.ended = event
        return [update_agent_message_text(self.redact(self.message(event)))]

    # -- the root's reply ------------------------------------------------------------------
    def _token(self, text: str) -> list[SessionUpdate]:
        self._streamed += text
        self._held += text
        cut = self._held.rfind("\n") + 1
        if not cut:
            return []
        lines, self._held = self._held[:cut], self._held[cut:]
        return [self._thought(lines)]

    def _reply(self, text: str) -> list[SessionUpdate]:
        """The reply ends: what is held, and what never streamed (a call the engine closed)."""
        streamed, held = self._streamed, self._held
        self._streamed = self._held = ""
        rest = held + (text[len(streamed) :] if text.startswith(streamed) else "")
        if not streamed:
            rest = text
        return [self._thought(rest.rstrip("\n") + "\n\n")] if rest.strip() else []

    def _thought(self, text: str) -> AgentThoughtChunk:
        return update_agent_thought_text(self.redact(text))

    # -- steps and sub-calls -------------------------------------------------------------
    def _step_started(self, event: StepStarted) -> ToolCallStart:
        where = "" if event.depth == 0 else f" (child run, depth {event.depth})"
        who = " (yours)" if event.author == "human" else ""
        code = self.redact(event.code)
        return start_tool_call(
            self.step_id(event.step, event.run_id),
            f"Step {event.step}{where}{who}",
            kind="execute",
            status="in_progress",
            content=[tool_content(text_block(fenced(code, "python")))],
            raw_input={"code": code},
        )

    def _step_finished(self, event: StepFinished) -> ToolCallProgress:
        output = self.redact(event.output)
        denied = event.depth == 0 and event.run_id == self.run_id and event.step in self._denied
        failed = denied or event.error is not None
        return update_tool_call(
            self.step_id(event.step, event.run_id),
            status="failed" if failed else "completed",
            content=[tool_content(text_block(fenced(output or "(no output)", "text")))],
            raw_output={"output": output, "error": event.error, "elapsed_s": round(event.elapsed_s, 3)},
        )

    def _subcall_started(self, event: SubcallStarted) -> ToolCallStart:
        return start_tool_call(
            event.call_id,
            f"{event.call_kind}_query → {event.model}",
            kind="think",
            status="in_progress",
            content=[tool_content(text_block(fenced(self.redact(event.prompt_preview), "text")))],
            raw_input={"prompt_chars": event.prompt_chars, "step": event.step},
        )

    def _subcall_finished(self, event: SubcallFinished) -> ToolCallProgress:
        tokens = f"{event.input_tokens:,} in / {event.output_tokens:,} out tokens, {event.latency_s:.1f} s"
        if event.error or event.cancelled:
            said = "cancelled" if event.cancelled else self.redact(event.error or "")
            return update_tool_call(event.call_id, status="failed", content=[tool_content(text_block(said))])
        reply = self.redact(event.response_preview)
        return update_tool_call(
            event.call_id,
            title=f"{event.call_kind}_query → {event.model} ({tokens})",
            status="completed",
            content=[tool_content(text_block(fenced(reply or "(empty reply)", "text")))],
            raw_output={
                "input_tokens": event.input_tokens,
                "output_tokens": event.output_tokens,
                "cost": event.cost,
            },
        )

    # -- the human's say -------------------------------------------------------------------
    def permission_call(self, step: int, why: str) -> ToolCallUpdate:
        """The step a permission request is about: the tool call its ``step_started`` made."""
        return ToolCallUpdate(
            tool_call_id=self.step_id(step), title=f"Step {step} waits for you: {why}", status="pending"
        )

    def denied(self, step: int) -> ToolCallProgress:
        """The human said no: the step's code does not run (the root is told so in its output)."""
        self._denied.add(step)
        return update_tool_call(
            self.step_id(step),
            title=f"Step {step} (not run: you denied it)",
            status="failed",
        )

    # -- the answer ------------------------------------------------------------------------
    def message(self, ended: RunEnded) -> str:
        """The chat's answer: the response, or why none came, and the warnings a reader needs."""
        if ended.stop in ("user", "interrupt"):
            text = "Stopped." + (f" The answer so far: {ended.response}" if ended.response else "")
        elif ended.response is not None and ended.error is None:
            text = ended.response
        else:
            text = f"No answer: {ended.error or 'the run ended without one'}"
            if ended.response:
                text += f"\n\nThe answer so far: {ended.response}"
        notes = [f"Warning ({w.code}): {w.text}" for w in self.warnings]
        return "\n\n".join([text, *notes])


_HANDLERS: dict[type, Callable[[Updates, Any], list[SessionUpdate]]] = {
    RunStarted: Updates._run_started,
    RootToken: Updates._root_token,
    RootReply: Updates._root_reply,
    StepStarted: lambda updates, event: [updates._step_started(event)],
    StepFinished: lambda updates, event: [updates._step_finished(event)],
    SubcallStarted: lambda updates, event: [updates._subcall_started(event)],
    SubcallFinished: lambda updates, event: [updates._subcall_finished(event)],
    AnswerDoubted: Updates._doubted,
    RunWarning: Updates._warning,
    RunEnded: Updates._run_ended,
}
