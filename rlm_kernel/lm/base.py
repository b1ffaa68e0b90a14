"""The LM port: what every backend implements, and the records it returns.

A backend turns a list of chat messages into a :class:`Completion`. The engine
and the sub-call pool only ever see this protocol, so tests, replay and real
providers are interchangeable.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypedDict, runtime_checkable

__all__ = ["Message", "Completion", "LMClient", "TokenCallback", "estimate_tokens"]

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
    """An async chat model. ``context_window`` is None when unknown."""

    model_name: str
    context_window: int | None

    async def complete(
        self,
        messages: list[Message],
        *,
        on_token: TokenCallback | None = None,
        max_tokens: int | None = None,
    ) -> Completion: ...

    async def aclose(self) -> None: ...


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
