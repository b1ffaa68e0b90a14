"""The LM port: what every backend implements, and the records it returns.

A backend turns a list of chat messages into a :class:`Completion`. The engine
and the sub-call pool only ever see this protocol, so tests, replay and real
providers are interchangeable.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypedDict, runtime_checkable

__all__ = ["Message", "Completion", "LMClient", "TokenCallback", "RepetitionGuard", "estimate_tokens"]

Role = Literal["system", "user", "assistant"]


class Message(TypedDict, total=False):
    role: Role
    content: str
    cache: bool  # ask the provider to cache the prefix up to and including this message


TokenCallback = Callable[[str], None]


@dataclass(frozen=True)
class Completion:
    """One LM reply with the usage the provider reported."""

    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    latency_s: float = 0.0
    extra: dict = field(default_factory=dict)


@runtime_checkable
class LMClient(Protocol):
    """An async chat model. ``context_window`` is None when unknown; ``continues_reply`` says
    whether a trailing assistant message is continued (llama.cpp) rather than answered."""

    model_name: str
    context_window: int | None
    continues_reply: bool

    async def complete(
        self,
        messages: list[Message],
        *,
        on_token: TokenCallback | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> Completion: ...

    async def aclose(self) -> None: ...


class RepetitionGuard:
    """Tells when a streamed reply has fallen into a loop: its tail is one piece of text (of 1 to
    ``max_period`` characters) said over and over, at least ``min_chars`` long. Small models do
    this (one sentence repeated for minutes), and the stream is then better stopped than read."""

    def __init__(
        self, *, min_chars: int = 320, max_period: int = 200, repeats: int = 4, every: int = 32
    ) -> None:
        self.min_chars, self.max_period, self.repeats, self.every = min_chars, max_period, repeats, every
        self._parts: list[str] = []
        self._size = 0
        self._checked = 0

    def feed(self, delta: str) -> bool:
        """Add a piece of the stream; True once the text so far ends in a loop."""
        self._parts.append(delta)
        self._size += len(delta)
        if self._size - self._checked < self.every or self._size < self.min_chars:
            return False
        self._checked = self._size
        text = "".join(self._parts)
        self._parts = [text]
        for period in range(1, self.max_period + 1):
            times = max(self.repeats, -(-self.min_chars // period))
            span = period * times
            if span > len(text):
                break
            if text[-span:] == text[-period:] * times:
                return True
        return False


def estimate_tokens(text: str) -> int:
    """A cheap upper-ish estimate (about 3.5 characters a token for English and code)."""
    return int(len(text) / 3.5) + 1


def now() -> float:
    return time.perf_counter()


@functools.lru_cache(maxsize=1)
def shared_ssl_context() -> ssl.SSLContext:
    """Loading the certificate store costs about 20 ms a client; every client of the process shares one."""
    try:
        import httpx2 as httpx  # what openai 3 and anthropic 2 are built on
    except ImportError:
        import httpx
    return httpx.create_ssl_context()
