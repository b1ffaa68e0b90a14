"""Anthropic Messages (and servers that speak it, such as llama.cpp's ``/v1/messages``) on the official SDK.

Messages flagged ``cache`` mark the end of a stable prefix: their last content
block gets ``cache_control: ephemeral``, so the provider reads the prefix from
its prompt cache on the next call. Retries and timeouts are the SDK's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rlm_kernel.errors import ProviderError
from rlm_kernel.lm.base import (
    Completion,
    Message,
    RepetitionGuard,
    TokenCallback,
    estimate_tokens,
    now,
    shared_ssl_context,
)
from rlm_kernel.lm.sdk import SDKBackend

if TYPE_CHECKING:
    import anthropic

__all__ = ["AnthropicLM"]

PROVIDER = "Anthropic"
KEY_VAR = "ANTHROPIC_API_KEY"
# The API refuses a request with more than four cache breakpoints.
MAX_CACHE_BREAKPOINTS = 4

CONTEXT_WINDOWS: dict[str, int] = {"claude-": 200_000}


def to_anthropic(messages: list[Message]) -> tuple[list[dict], list[dict]]:
    """Split chat messages into Anthropic's ``system`` blocks and ``messages``, marking cache breakpoints.

    Only the last four flagged messages keep their breakpoint: a later
    breakpoint's prefix already covers the earlier ones.
    """
    system: list[dict] = []
    turns: list[dict] = []
    flagged: list[dict] = []
    for message in messages:
        block = {"type": "text", "text": message["content"]}
        if message["role"] == "system":
            system.append(block)
        else:
            turns.append({"role": message["role"], "content": [block]})
        if message.get("cache"):
            flagged.append(block)
    for block in flagged[-MAX_CACHE_BREAKPOINTS:]:
        block["cache_control"] = {"type": "ephemeral"}
    for turn in turns:  # plain strings where no breakpoint is needed: smaller, and every server accepts them
        (block,) = turn["content"]
        if "cache_control" not in block:
            turn["content"] = block["text"]
    return system, turns


class AnthropicLM(SDKBackend):
    """An :class:`~rlm_kernel.lm.base.LMClient` over ``anthropic.AsyncAnthropic``. Its ``messages.create``
    takes no ``temperature`` argument, so the temperature travels in the request body."""

    provider = PROVIDER
    key_var = "ANTHROPIC_API_KEY"
    base_url_var = "ANTHROPIC_BASE_URL"
    official_host = "api.anthropic.com"
    context_windows = CONTEXT_WINDOWS

    def __init__(self, model_name: str, *, max_tokens_default: int = 4096, **kwargs: Any) -> None:
        super().__init__(model_name, **kwargs)
        self.max_tokens_default = max_tokens_default

    def _default_http_client(self) -> Any:
        import anthropic

        return anthropic.DefaultAsyncHttpxClient(verify=shared_ssl_context())

    def _new_client(self, **kwargs: Any) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(**kwargs)

    def _request(
        self, messages: list[Message], max_tokens: int | None, stop: Sequence[str] | None = None
    ) -> dict[str, Any]:
        system, turns = to_anthropic(messages)
        request: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": max_tokens if max_tokens is not None else self.max_tokens_default,
            "messages": turns,
        }
        if stop:
            request["stop_sequences"] = list(stop)
        if system:
            request["system"] = system
        # anthropic 2.x's create() and stream() have no `temperature` argument; the API still takes it.
        extra_body = dict(self.extra_body)
        if self.temperature is not None:
            extra_body.setdefault("temperature", self.temperature)
        if extra_body:
            request["extra_body"] = extra_body
        return request

    async def complete(
        self,
        messages: list[Message],
        *,
        on_token: TokenCallback | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> Completion:
        """Send one Messages request; stream it when ``on_token`` wants the text as it comes, and stop
        reading a stream that has fallen into a loop (``stop_reason`` ``repetition``)."""
        import anthropic

        client = self._sdk()
        request = self._request(messages, max_tokens, stop)
        started = now()
        looped: list[str] | None = None
        message: Any = None
        try:
            if on_token is None:
                message = await client.messages.create(**request)
            else:
                guard = RepetitionGuard()
                async with client.messages.stream(**request) as stream:
                    parts: list[str] = []
                    async for delta in stream.text_stream:
                        on_token(delta)
                        parts.append(delta)
                        if guard.feed(delta):
                            looped = parts
                            break
                    message = None if looped is not None else await stream.get_final_message()
        except anthropic.APIStatusError as e:
            raise ProviderError(PROVIDER, _status_message(e), e.status_code) from e
        except anthropic.APIError as e:  # connection refused, timeout, a body that is not a message
            raise ProviderError(PROVIDER, str(e)) from e
        if message is None:  # left a looping stream before its usage came: an estimate
            return Completion(
                text="".join(looped or []),
                model=self.model_name,
                input_tokens=sum(estimate_tokens(m["content"]) for m in messages),
                output_tokens=len(looped or []),
                latency_s=now() - started,
                extra={"stop_reason": "repetition", "response_model": self.model_name},
            )
        usage = message.usage
        cache_read = usage.cache_read_input_tokens or 0
        cache_write = usage.cache_creation_input_tokens or 0
        return Completion(
            text="".join(block.text for block in message.content if block.type == "text"),
            model=self.model_name,
            # Anthropic counts cached and cache-written tokens apart; the port reports the whole prompt.
            input_tokens=(usage.input_tokens or 0) + cache_read + cache_write,
            output_tokens=usage.output_tokens or 0,
            cached_tokens=cache_read,
            latency_s=now() - started,
            extra={"stop_reason": message.stop_reason, "response_model": message.model},
        )


def _status_message(error: anthropic.APIStatusError) -> str:
    """The provider's own words: ``error.message`` of the JSON body, else the raw body."""
    if error.api_message:
        return error.api_message
    if isinstance(error.body, str) and error.body.strip():
        return error.body.strip()
    return error.message
