"""Record a run's LM replies, and replay them offline.

Each reply is stored under a hash of the request's messages, so concurrent
sub-calls replay correctly whatever order they finish in. A request that the
recording does not hold stops the run with :class:`ReplayMismatch`, naming the
call and how its request begins.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ReplayMismatch
from ..tools import ToolRequest
from ..usage import Price, price_for
from .base import BaseLM, Completion, LMClient, Message, Received, TokenCallback, price_of

__all__ = ["request_key", "Recording", "RecordingLM", "ReplayLM"]


def request_key(messages: list[Message]) -> str:
    # Tool calls join the key only where there are any, so recordings made before them still match.
    canonical = json.dumps(
        [
            [
                m["role"],
                m["content"],
                *([[c.name, c.arguments] for c in m["tool_calls"]] if m.get("tool_calls") else []),
            ]
            for m in messages
        ],
        ensure_ascii=False,
    )
    # surrogatepass: a prompt may hold a lone surrogate that code printed
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Recording:
    """An append-only JSONL file of replies, shared by every LM of a run tree."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def append(self, key: str, completion: Completion, *, continues_reply: bool = False) -> None:
        price = completion.price or price_for(completion.model)  # the client's own price, else the table's
        finish = completion.extra.get("finish_reason") or completion.extra.get("stop_reason")
        entry = {
            "key": key,
            "model": completion.model,
            "text": completion.text,
            "finish_reason": finish,
            "continues_reply": continues_reply,
            "input_tokens": completion.input_tokens,
            "output_tokens": completion.output_tokens,
            "cached_tokens": completion.cached_tokens,
            "written_tokens": completion.written_tokens,
            "price": None
            if price is None
            else [price.input, price.output, price.cached_input, price.cache_write],
            **(
                {"tool_calls": [[c.id, c.name, c.arguments] for c in completion.tool_calls]}
                if completion.tool_calls
                else {}
            ),
        }
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")


class RecordingLM:
    """Passes calls to ``inner`` and records each reply."""

    def __init__(self, inner: LMClient, recording: Recording) -> None:
        self.inner = inner
        self.recording = recording
        self.model_name = inner.model_name
        self.context_window = inner.context_window
        self.continues_reply = inner.continues_reply

    async def complete(
        self,
        messages: list[Message],
        *,
        on_token: TokenCallback | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        sampling: Mapping[str, Any] | None = None,
    ) -> Completion:
        completion = await self.inner.complete(
            messages, on_token=on_token, max_tokens=max_tokens, stop=stop, tools=tools, sampling=sampling
        )
        self.recording.append(request_key(messages), completion, continues_reply=self.continues_reply)
        return completion

    def price(self, model: str | None = None) -> Price | None:
        """The inner client's price, so that a recorded run costs what the live one does."""
        return price_of(self.inner, model)

    async def aclose(self) -> None:
        await self.inner.aclose()


class ReplayLM(BaseLM):
    """Answers from a recording, in recorded order for identical requests. The recorded prices are
    this client's own (``prices=`` overrides them), so a replayed run costs what the recorded one did."""

    # A recorded reply is replayed as it was: its finish reason already says whether it looped.
    guards_repetition = False
    requires_finish = False
    vision = True  # a request with images was checked when it was recorded

    def __init__(
        self,
        path: str | os.PathLike[str],
        model_name: str | None = None,
        context_window: int | None = None,
        prices: Mapping[str, Any] | None = None,
    ) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise ConfigError(f"No recording at {self.path}: record one with RLM(..., record='{self.path}').")
        self._replies: dict[str, deque[dict]] = defaultdict(deque)
        first_model = None
        continues_reply = False  # as the recorded backend did, so that requests match
        recorded: dict[str, Any] = {}
        with self.path.open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    entry = json.loads(line)
                    self._replies[entry["key"]].append(entry)
                    first_model = first_model or entry.get("model")
                    continues_reply = continues_reply or bool(entry.get("continues_reply"))
                    if entry.get("price") and entry.get("model"):
                        recorded.setdefault(entry["model"], entry["price"])
        super().__init__(
            model_name or first_model or "replay",
            context_window=context_window,
            continues_reply=continues_reply,
            prices={**recorded, **(prices or {})},
        )
        self.calls = 0
        self._lock = threading.Lock()

    def _next(self, messages: list[Message]) -> dict:
        key = request_key(messages)
        with self._lock:
            self.calls += 1
            queue = self._replies.get(key)
            if not queue:
                last = messages[-1]["content"] if messages else ""
                raise ReplayMismatch(
                    f"Replay diverged at call {self.calls}: {self.path.name} has no reply for a "
                    f"{messages[-1]['role'] if messages else ''} message beginning {last[:80]!r}; "
                    f"re-record the run with record=..."
                )
            return queue.popleft()

    def _fill(self, entry: dict, received: Received) -> Received:
        """The recorded reply as the provider's reading of it: text, usage, finish reason, model."""
        received.text = entry["text"]
        received.tokens = (
            entry.get("input_tokens", 0),
            entry.get("output_tokens", 0),
            entry.get("cached_tokens", 0),
        )
        received.written = entry.get("written_tokens", 0)
        received.finish = entry.get("finish_reason")
        received.model = received.response_model = entry.get("model") or self.model_name
        received.tool_calls = [ToolRequest(*call) for call in entry.get("tool_calls", [])]
        return received

    async def _send(
        self,
        messages: list[Message],
        max_tokens: int | None,
        stop: Sequence[str] | None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> Received:
        return self._fill(self._next(messages), Received())

    async def _stream(
        self, messages: list[Message], max_tokens: int | None, stop: Sequence[str] | None, received: Received
    ) -> AsyncIterator[str]:
        """The whole recorded text as one delta."""
        yield self._fill(self._next(messages), received).text or ""
