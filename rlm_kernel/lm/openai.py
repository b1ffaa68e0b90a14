"""OpenAI Chat Completions, and every server that speaks it (vLLM, llama.cpp, Ollama), on the official SDK.

Retries with backoff and timeouts are the SDK's own (``max_retries``,
``timeout``); this module only shapes the request, streams the text and turns
the SDK's errors into :class:`~rlm_kernel.errors.ProviderError`.
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
    import openai

__all__ = ["OpenAILM"]

PROVIDER = "OpenAI"

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


_REASONING = ("o1", "o3", "o4", "gpt-5")


class OpenAILM(SDKBackend):
    """An :class:`~rlm_kernel.lm.base.LMClient` over ``openai.AsyncOpenAI``."""

    provider = PROVIDER
    key_var = "OPENAI_API_KEY"
    base_url_var = "OPENAI_BASE_URL"
    official_host = "api.openai.com"
    context_windows = CONTEXT_WINDOWS

    def _default_http_client(self) -> Any:
        import openai

        return openai.DefaultAsyncHttpxClient(verify=shared_ssl_context())

    def _new_client(self, **kwargs: Any) -> Any:
        import openai

        return openai.AsyncOpenAI(**kwargs)

    def _request(
        self, messages: list[Message], max_tokens: int | None, stop: Sequence[str] | None = None
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model_name,
            # `cache` is ours: OpenAI caches prefixes by itself and strict servers reject unknown keys.
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        }
        if max_tokens is not None:
            if self.context_window:  # a reply cannot use more than half the window and leave room to read
                max_tokens = min(max_tokens, self.context_window // 2)
            # OpenAI's reasoning models refuse `max_tokens`; most local servers only know it.
            request["max_completion_tokens" if self.is_official else "max_tokens"] = max_tokens
        if stop and not (self.is_official and self.model_name.startswith(_REASONING)):
            request["stop"] = list(stop)[:4]  # OpenAI's reasoning models take no stop sequences
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
        stop: Sequence[str] | None = None,
    ) -> Completion:
        """Send one chat request; stream it when ``on_token`` wants the text as it comes, and stop
        reading a stream that has fallen into a loop (``finish_reason`` ``repetition``)."""
        import openai
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        client = self._sdk()
        request = self._request(messages, max_tokens, stop)
        started = now()
        parts: list[str] = []
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
                usage, model, finish = None, self.model_name, None
                body = {**request, "stream": True, "stream_options": {"include_usage": True}}
                stream = await client.post(
                    "/chat/completions",
                    body=body,
                    cast_to=ChatCompletion,
                    stream=True,
                    stream_cls=openai.AsyncStream[ChatCompletionChunk],
                )
                guard = RepetitionGuard()
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
                            if guard.feed(delta):
                                finish = "repetition"
                                break
                text = "".join(parts)
        except openai.APIStatusError as e:
            raise ProviderError(PROVIDER, _status_message(e), e.status_code) from e
        except openai.APIError as e:  # connection refused, timeout, a body that is not a completion
            raise ProviderError(PROVIDER, str(e)) from e
        if usage is not None:
            details = usage.prompt_tokens_details
            tokens = (
                usage.prompt_tokens,
                usage.completion_tokens,
                (details.cached_tokens or 0) if details else 0,
            )
        elif finish == "repetition":  # the stream was left before its usage came: an estimate
            tokens = (sum(estimate_tokens(m["content"]) for m in messages), len(parts), 0)
        else:
            tokens = (0, 0, 0)
        return Completion(
            text=text,
            model=self.model_name,
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            cached_tokens=tokens[2],
            latency_s=now() - started,
            extra={"finish_reason": finish, "response_model": model},
        )


def _status_message(error: openai.APIStatusError) -> str:
    """The provider's own words: ``error.message`` of the JSON body, else the raw body."""
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"]:
        return body["message"]
    if isinstance(body, str) and body.strip():
        return body.strip()
    return error.message
