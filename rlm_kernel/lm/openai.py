"""OpenAI Chat Completions, and every server that speaks it (vLLM, llama.cpp, Ollama), on the official SDK.

Retries with backoff and timeouts are the SDK's own (``max_retries``,
``timeout``); this module only shapes the request, streams the text and turns
the SDK's errors into :class:`~rlm_kernel.errors.ProviderError`.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from rlm_kernel.errors import MissingAPIKey, ProviderError
from rlm_kernel.lm.base import Completion, Message, TokenCallback, now, shared_ssl_context

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAILM"]

PROVIDER = "OpenAI"
KEY_VAR = "OPENAI_API_KEY"
# Local servers ignore the key, but the SDK refuses to start without one.
PLACEHOLDER_KEY = "not-needed"

# Longest matching prefix wins; None means unknown (the engine then skips window checks).
CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 400_000,
    "gpt-5-chat": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
}


def known_context_window(model_name: str) -> int | None:
    matches = [prefix for prefix in CONTEXT_WINDOWS if model_name.startswith(prefix)]
    return CONTEXT_WINDOWS[max(matches, key=len)] if matches else None


def is_official(base_url: str | None) -> bool:
    """True for api.openai.com, the one place where a missing key is certainly an error."""
    return not base_url or urlparse(base_url).hostname == "api.openai.com"


class OpenAILM:
    """An :class:`~rlm_kernel.lm.base.LMClient` over ``openai.AsyncOpenAI``.

    The SDK client is made on first use, so construction needs no event loop; a
    call from a different event loop (a second ``asyncio.run``) gets a fresh
    client, because connections cannot move between loops.
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
        **client_kwargs: Any,
    ) -> None:
        self.model_name = model_name
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
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
        self._client_kwargs = client_kwargs
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"OpenAILM({self.model_name!r}{where})"

    def _sdk(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            import openai

            # A plain httpx2 client, not the SDK's default wrapper: when a client from a finished loop is
            # dropped, the wrapper's __del__ would try to close its sockets on the new loop and log errors.
            kwargs = dict(self._client_kwargs)
            if "http_client" not in kwargs:
                kwargs["http_client"] = openai.DefaultAsyncHttpxClient(verify=shared_ssl_context())
            self._client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                max_retries=self.max_retries,
                timeout=self.timeout,
                **kwargs,
            )
            self._client_loop = loop
        return self._client

    def _request(self, messages: list[Message], max_tokens: int | None) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model_name,
            # `cache` is ours: OpenAI caches prefixes by itself and strict servers reject unknown keys.
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        }
        if max_tokens is not None:
            # OpenAI's reasoning models refuse `max_tokens`; most local servers only know it.
            request["max_completion_tokens" if is_official(self.base_url) else "max_tokens"] = max_tokens
        if self.temperature is not None:
            request["temperature"] = self.temperature
        request.update(self.extra_body)
        return request

    async def complete(
        self,
        messages: list[Message],
        *,
        on_token: TokenCallback | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        """Send one chat request; stream it when ``on_token`` wants the text as it comes."""
        import openai
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        client = self._sdk()
        request = self._request(messages, max_tokens)
        started = now()
        try:
            if on_token is None:
                # The low-level post sends our plain dicts as they are; `chat.completions.create` would
                # re-validate every message of the history on each turn (quadratic over a long run).
                response = await client.post("/chat/completions", body=request, cast_to=ChatCompletion)
                choice = response.choices[0] if response.choices else None
                text = (choice.message.content or "") if choice else ""
                finish = choice.finish_reason if choice else None
                usage, model = response.usage, response.model
            else:
                parts: list[str] = []
                usage, model, finish = None, self.model_name, None
                body = {**request, "stream": True, "stream_options": {"include_usage": True}}
                stream = await client.post(
                    "/chat/completions",
                    body=body,
                    cast_to=ChatCompletion,
                    stream=True,
                    stream_cls=openai.AsyncStream[ChatCompletionChunk],
                )
                async with stream:
                    async for chunk in stream:
                        model = chunk.model or model
                        if chunk.usage is not None:
                            usage = chunk.usage
                        if not chunk.choices:
                            continue
                        finish = chunk.choices[0].finish_reason or finish
                        delta = chunk.choices[0].delta.content
                        if delta:
                            parts.append(delta)
                            on_token(delta)
                text = "".join(parts)
        except openai.APIStatusError as e:
            raise ProviderError(PROVIDER, _status_message(e), e.status_code) from e
        except openai.APIError as e:  # connection refused, timeout, a body that is not a completion
            raise ProviderError(PROVIDER, str(e)) from e
        details = usage.prompt_tokens_details if usage is not None else None
        return Completion(
            text=text,
            model=self.model_name,
            input_tokens=usage.prompt_tokens if usage is not None else 0,
            output_tokens=usage.completion_tokens if usage is not None else 0,
            cached_tokens=(details.cached_tokens or 0) if details is not None else 0,
            latency_s=now() - started,
            extra={"finish_reason": finish, "response_model": model},
        )

    async def aclose(self) -> None:
        """Close the connections; a later call opens new ones."""
        client, loop = self._client, self._client_loop
        self._client, self._client_loop = None, None
        # Connections made on another (finished) loop cannot be closed from this one; they go with it.
        if client is not None and loop is asyncio.get_running_loop():
            await client.close()


def _status_message(error: openai.APIStatusError) -> str:
    """The provider's own words: ``error.message`` of the JSON body, else the raw body."""
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"]:
        return body["message"]
    if isinstance(body, str) and body.strip():
        return body.strip()
    return error.message
