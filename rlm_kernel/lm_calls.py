"""The LM calls a run's loop waits on: the root's reply, the sub-model's verdict, the root's notes.

Each is bounded by what is left of ``max_timeout``. The root's reply streams into ``RootToken``
events a word at a time (:class:`_Words`): a provider streams a key as several tokens, none of them
the key, and the bus's redaction sees only whole events.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import NoReturn

from .budget import Budget
from .engine import AskRoot, Compact, Verify
from .errors import RunCancelled
from .events import RootToken
from .lm.base import Completion
from .run_tree import RunParts

__all__ = ["HELD_CHARS", "ask_root", "verify", "summarise", "call_lm"]

HELD_CHARS = 512  # a word longer than any key is let out whole at this length


class _Words:
    """The root's tokens as RootToken events, let out a word at a time: a provider streams a key as
    several tokens, none of them the key, and redaction (on the bus) sees only whole events."""

    def __init__(self, parts: RunParts, turn: int) -> None:
        self._parts, self._turn, self._held = parts, turn, ""

    def __call__(self, text: str) -> None:
        held = self._held + text
        cut = len(held)
        while cut and not held[cut - 1].isspace():
            cut -= 1
        if not cut and len(held) >= HELD_CHARS:
            cut = len(held)
        self._held = held[cut:]
        if cut:
            self._emit(held[:cut])

    def flush(self) -> None:
        """The last word, once the reply has ended (or failed)."""
        held, self._held = self._held, ""
        if held:
            self._emit(held)

    def _emit(self, text: str) -> None:
        run = self._parts.run
        self._parts.tree.bus.emit(
            RootToken(run_id=run.run_id, parent_id=run.parent_id, depth=run.depth, turn=self._turn, text=text)
        )


def _out_of_time(budget: Budget) -> NoReturn:
    """The call outlived ``max_timeout``: the budget's own error, else a cancel by the budget."""
    raise budget.exceeded() or RunCancelled("max_timeout reached", stop="budget") from None


async def ask_root(parts: RunParts, action: AskRoot) -> Completion:
    """The root LM's reply to ``action``, streamed into RootToken events, within ``max_timeout``.
    Where the backend continues a reply, the action's ``prefill`` starts it, and is part of the reply
    returned."""
    on_token = _Words(parts, action.turn)
    messages, prefill, stop = action.messages, None, action.stop
    if action.prefill and parts.lm.continues_reply:
        prefill = action.prefill
        messages = [*messages, {"role": "assistant", "content": prefill}]
        stop = (action.closing, *stop) if action.closing else stop
        on_token(prefill)
    budget = parts.tree.budget
    # A regenerated proposal's sampling, else the run's own (a sampled root of a vote).
    sampling = action.sampling or parts.sampling
    sampled = {"sampling": sampling} if sampling else {}
    call = parts.lm.complete(
        messages, on_token=on_token, max_tokens=action.max_tokens, stop=stop or None, **sampled
    )
    try:
        completion = await asyncio.wait_for(call, budget.time_left())
    except asyncio.TimeoutError:
        _out_of_time(budget)
    finally:
        on_token.flush()
    return replace(completion, text=prefill + completion.text) if prefill else completion


async def verify(parts: RunParts, action: Verify) -> str:
    """The sub-model's verdict on the committed answer: a sub-call of the run like ``llm_query``'s
    (recorded, counted in usage and budget), within ``max_timeout``; "" when the call failed."""
    budget = parts.tree.budget
    try:
        return await asyncio.wait_for(
            parts.subcalls.verdict(action.prompt, action.max_tokens), budget.time_left()
        )
    except asyncio.TimeoutError:
        _out_of_time(budget)


async def summarise(parts: RunParts, action: Compact) -> str:
    """The root model's notes on its older turns: a sub-call of the run, within ``max_timeout``."""
    budget = parts.tree.budget
    try:
        return await asyncio.wait_for(
            parts.subcalls.summary(action.prompt, parts.lm, action.max_tokens), budget.time_left()
        )
    except asyncio.TimeoutError:
        _out_of_time(budget)


async def call_lm(parts: RunParts, action: AskRoot | Verify | Compact) -> Completion | str:
    """The LM call the loop waits on: the root's reply, the sub-model's verdict, or the root's notes."""
    if isinstance(action, Verify):
        return await verify(parts, action)
    if isinstance(action, Compact):
        return await summarise(parts, action)
    return await ask_root(parts, action)
