"""A run's tools, as its calls use them: the root's code calls its tools, and a sub-call's model
calls the sub-tools in rounds until it answers in text. Every call is recorded (``ToolCalled``), its
arguments and result redacted; a tool's failure is data (the sub-model reads it, the root's code
gets its exception).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .errors import one_line
from .events import Event, ToolCalled
from .foreign import attempt
from .lm.base import Completion, LMClient, Message
from .oversize import fits
from .tools import RESULT_PREVIEW, Tool, ToolRequest, as_text, calls_in_text

__all__ = ["ToolCalls", "TOOL_ROUND_TOKENS", "LAST_ROUND"]

# A round offered tools writes at most this many tokens unless the call sets its own limit: a small
# model may write one call over and over, and a request with tools is not streamed, so no guard
# stops it early.
TOOL_ROUND_TOKENS = 512
LAST_ROUND = "You have used all your tool calls: answer now, in text, from what you have."


class ToolCalls:
    """The tools of one run: ``tools`` the root's code calls, ``sub_tools`` only sub-calls' models call."""

    def __init__(
        self,
        *,
        tools: Mapping[str, Tool],
        sub_tools: Sequence[Tool],
        max_tool_rounds: int,
        emit: Callable[[Event], None],
        ids: Mapping[str, Any],
        redact: Callable[[str], str],
    ) -> None:
        self.tools = dict(tools)
        self.sub_tools = {t.name: t for t in sub_tools}
        self.max_tool_rounds = max_tool_rounds
        self.emit = emit
        self.ids = dict(ids)  # the run's ids, on each event
        self.redact = redact

    async def rounds(
        self,
        lm: LMClient,
        messages: list[Message],
        max_tokens: int | None,
        call_id: str,
        step: int | None,
        index: int | None = None,
    ) -> Completion:
        """The tool-calling loop of one sub-call: the model's tool calls run (in a thread, as they
        may block) and their results go back to it, until it answers in text; after
        ``max_tool_rounds`` rounds it is asked once more to answer without them. Only the text returns,
        with the tokens and cost of every round."""
        specs = [t.spec() for t in self.sub_tools.values()]
        conversation = list(messages)
        rounds: list[Completion] = []
        results: dict[tuple[str, str], str] = {}  # (tool, arguments) -> what it gave
        nudge = ""
        while True:
            last = len(rounds) == self.max_tool_rounds
            # The last round, or one after a repeat: the tools stay declared (a history of tool
            # calls needs them), but not to be used.
            if last or nudge:
                conversation.append({"role": "user", "content": nudge or LAST_ROUND})
            completion = await self._round(lm, conversation, max_tokens or TOOL_ROUND_TOKENS, index, specs)
            rounds.append(completion)
            if not completion.tool_calls or last or nudge:
                break
            asked = [(r.name, _canonical(r.arguments)) for r in completion.tool_calls]
            if all(key in results for key in asked):  # the same calls again: a loop, not new work
                nudge = _repeated(asked, results)
                continue
            conversation.append(
                {"role": "assistant", "content": completion.text, "tool_calls": list(completion.tool_calls)}
            )
            for request, key in zip(completion.tool_calls, asked, strict=True):
                result = await asyncio.to_thread(self._sub_tool, request, call_id, step)
                results[key] = result
                conversation.append({"role": "tool", "tool_call_id": request.id, "content": result})
        return _summed(completion, rounds)

    async def _round(
        self,
        lm: LMClient,
        conversation: list[Message],
        max_tokens: int,
        index: int | None,
        specs: list[dict[str, Any]],
    ) -> Completion:
        """One request of the loop, its tool calls read from its text where the model wrote them there."""
        # Each round: the tools' results may take a conversation that fit past the window.
        await fits(lm, conversation, max_tokens, index, specs)
        completion = await lm.complete(conversation, max_tokens=max_tokens, tools=specs)
        if not completion.tool_calls and (written := calls_in_text(completion.text, self.sub_tools)):
            completion = replace(completion, text="", tool_calls=tuple(written))
        return completion

    def _sub_tool(self, request: ToolRequest, call_id: str, step: int | None) -> str:
        """One tool call a sub-model asked for; a failure is its result, for the model to read."""
        tool = self.sub_tools.get(request.name)
        if tool is None:
            return self._ran(
                call_id, step, request.name, request.arguments, error=f"no tool named {request.name!r}"
            )
        started = time.perf_counter()
        result, failed = attempt(lambda: tool.call(request.arguments))  # a tool is the user's code
        if failed is not None:
            return self._ran(
                call_id, step, tool.name, request.arguments, started=started, error=one_line(failed)
            )
        return self._ran(call_id, step, tool.name, request.arguments, started=started, result=result)

    def call(self, name: str, args: Sequence[Any], kwargs: Mapping[str, Any], step: int | None) -> Any:
        """A tool the root's code called: its result as the function returned it; its exception is
        raised again, recorded."""
        tool = self.tools[name]
        arguments = as_text({"args": list(args), "kwargs": dict(kwargs)} if args else dict(kwargs))
        started = time.perf_counter()
        value, failed = attempt(lambda: tool.fn(*args, **kwargs))  # a tool is the user's code
        if failed is not None:
            self._ran(None, step, name, arguments, started=started, error=one_line(failed))
            raise failed
        self._ran(None, step, name, arguments, started=started, result=as_text(value))
        return value

    def _ran(
        self,
        call_id: str | None,
        step: int | None,
        tool: str,
        arguments: str,
        *,
        started: float | None = None,
        result: str | None = None,
        error: str | None = None,
    ) -> str:
        """Record a tool's call; what the model reads back (its result, or the error)."""
        text = self.redact(result) if result is not None else ""
        self.emit(
            ToolCalled(
                **self.ids,
                call_id=call_id,
                step=step,
                tool=tool,
                arguments=self.redact(arguments)[:1000],
                result_chars=len(text),
                result_preview=text[:RESULT_PREVIEW],
                latency_s=0.0 if started is None else time.perf_counter() - started,
                error=error,
            )
        )
        return text if error is None else f"[tool error] {error}"


def _summed(completion: Completion, rounds: Sequence[Completion]) -> Completion:
    """The last round's text with the tokens and time of every round."""
    # One model, one price: the cost of the summed tokens is the sum of the rounds' costs.
    return replace(
        completion,
        input_tokens=sum(c.input_tokens for c in rounds),
        output_tokens=sum(c.output_tokens for c in rounds),
        cached_tokens=sum(c.cached_tokens for c in rounds),
        written_tokens=sum(c.written_tokens for c in rounds),
        latency_s=sum(c.latency_s for c in rounds),
        extra={**completion.extra, "tool_rounds": len(rounds) - 1},
    )


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except json.JSONDecodeError:
        return arguments


def _repeated(asked: list[tuple[str, str]], results: dict[tuple[str, str], str]) -> str:
    """What a model that asks for the calls it already made is told instead of their results again."""
    given = "\n".join(f"- {name}({args}) gave: {results[(name, args)][:2000]}" for name, args in asked)
    return f"You already called these tools, and they gave:\n{given}\nAnswer now, in text, without a tool."
