"""Anthropic Messages (and servers that speak it, such as llama.cpp's ``/v1/messages``) on the official SDK.

Messages flagged ``cache`` mark the end of a stable prefix: their last content
block gets ``cache_control: ephemeral``, so the provider reads the prefix from
its prompt cache on the next call. Retries and timeouts are the SDK's own.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from rlm_kernel.errors import MissingAPIKey, ProviderError
from rlm_kernel.lm.base import Completion, Message, TokenCallback, now, shared_ssl_context

if TYPE_CHECKING:
    import anthropic

__all__ = ["AnthropicLM"]

PROVIDER = "Anthropic"
KEY_VAR = "ANTHROPIC_API_KEY"
# Local servers ignore the key, but the SDK looks for credentials elsewhere without one.
PLACEHOLDER_KEY = "not-needed"
# The API refuses a request with more than four cache breakpoints.
MAX_CACHE_BREAKPOINTS = 4

CONTEXT_WINDOWS: dict[str, int] = {"claude-": 200_000}


def known_context_window(model_name: str) -> int | None:
    matches = [prefix for prefix in CONTEXT_WINDOWS if model_name.startswith(prefix)]
    return CONTEXT_WINDOWS[max(matches, key=len)] if matches else None


def is_official(base_url: str | None) -> bool:
    """True for api.anthropic.com, the one place where a missing key is certainly an error."""
    return not base_url or urlparse(base_url).hostname == "api.anthropic.com"


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


class AnthropicLM:
    """An :class:`~rlm_kernel.lm.base.LMClient` over ``anthropic.AsyncAnthropic``.

    The SDK client is made on first use, so construction needs no event loop; a
    call from a different event loop gets a fresh client.
    """

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 120.0,
        context_window: int | None = None,
        temperature: float | None = None,
        extra_body: dict | None = None,
        max_tokens_default: int = 4096,
        **client_kwargs: Any,
    ) -> None:
        self.model_name = model_name
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        key = api_key or os.environ.get(KEY_VAR)
        if not key:
            if is_official(self.base_url):
                raise MissingAPIKey(PROVIDER, KEY_VAR)
            key = PLACEHOLDER_KEY
        self._api_key = key
        self.max_retries = max_retries
        self.timeout = timeout
        self.context_window = (
            context_window if context_window is not None else known_context_window(model_name)
        )
        self.temperature = temperature
        self.extra_body = dict(extra_body or {})
        self.max_tokens_default = max_tokens_default
        self._client_kwargs = client_kwargs
        self._client: anthropic.AsyncAnthropic | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"AnthropicLM({self.model_name!r}{where})"

    def _sdk(self) -> anthropic.AsyncAnthropic:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            import anthropic

            # A plain httpx2 client, not the SDK's default wrapper: when a client from a finished loop is
            # dropped, the wrapper's __del__ would try to close its sockets on the new loop and log errors.
            kwargs = dict(self._client_kwargs)
            if "http_client" not in kwargs:
                kwargs["http_client"] = anthropic.DefaultAsyncHttpxClient(verify=shared_ssl_context())
            self._client = anthropic.AsyncAnthropic(
                api_key=self._api_key,
                base_url=self.base_url,
                max_retries=self.max_retries,
                timeout=self.timeout,
                **kwargs,
            )
            self._client_loop = loop
        return self._client

    def _request(self, messages: list[Message], max_tokens: int | None) -> dict[str, Any]:
        system, turns = to_anthropic(messages)
        request: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": max_tokens if max_tokens is not None else self.max_tokens_default,
            "messages": turns,
        }
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
    ) -> Completion:
        """Send one Messages request; stream it when ``on_token`` wants the text as it comes."""
        import anthropic

        client = self._sdk()
        request = self._request(messages, max_tokens)
        started = now()
        try:
            if on_token is None:
                message = await client.messages.create(**request)
            else:
                async with client.messages.stream(**request) as stream:
                    async for delta in stream.text_stream:
                        on_token(delta)
                    message = await stream.get_final_message()
        except anthropic.APIStatusError as e:
            raise ProviderError(PROVIDER, _status_message(e), e.status_code) from e
        except anthropic.APIError as e:  # connection refused, timeout, a body that is not a message
            raise ProviderError(PROVIDER, str(e)) from e
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

    async def aclose(self) -> None:
        """Close the connections; a later call opens new ones."""
        client, loop = self._client, self._client_loop
        self._client, self._client_loop = None, None
        # Connections made on another (finished) loop cannot be closed from this one; they go with it.
        if client is not None and loop is asyncio.get_running_loop():
            await client.close()


def _status_message(error: anthropic.APIStatusError) -> str:
    """The provider's own words: ``error.message`` of the JSON body, else the raw body."""
    if error.api_message:
        return error.api_message
    if isinstance(error.body, str) and error.body.strip():
        return error.body.strip()
    return error.message
