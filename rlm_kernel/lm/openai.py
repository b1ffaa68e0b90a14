"""OpenAI Chat Completions, and every server that speaks it (vLLM, llama.cpp, Ollama), on the official SDK.

Retries with backoff and timeouts are the SDK's own (``max_retries``,
``timeout``); this module only shapes the request and reads the reply, whole or
streamed. Timing, the text's buffering, loop detection, error mapping and the
:class:`~rlm_kernel.lm.base.Completion` are the base class's.

OpenAI (and llama.cpp, vLLM) cache prompt prefixes by themselves: a request that
begins with the bytes of an earlier one reads that part from the cache. The
messages go as they are given, so the root's conversation, which only grows, keeps
its prefix. Our ``cache`` marks are not sent (strict servers reject unknown keys);
on OpenAI's own endpoint they give a marked conversation a ``prompt_cache_key``,
the digest of its fixed start, so that its turns are routed to the machines that
hold its prefix.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from rlm_kernel.lm.base import Message, Received, request_sampling, shared_ssl_context
from rlm_kernel.lm.sdk import SDKBackend
from rlm_kernel.tools import ToolRequest

if TYPE_CHECKING:
    import openai
    from openai.types import CompletionUsage

__all__ = ["OpenAILM", "cache_key"]

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
    vision_models = ("gpt-4o*", "chatgpt-4o*", "gpt-4.1*", "gpt-5*", "o3*", "o4*")

    def __init__(self, model_name: str, *, vision: bool | None = None, **kwargs: Any) -> None:
        super().__init__(model_name, **kwargs)
        self.vision = vision

    def sees_images(self) -> bool:
        """A local bundled model takes none (unless ``vision=True`` says it does); others by the table."""
        from . import LOCAL_PROVIDER

        if self.vision is None and self.provider == LOCAL_PROVIDER:
            return False
        return super().sees_images()

    def _default_http_client(self) -> Any:
        import httpx2  # the SDK's own HTTP client
        import openai

        if self.is_official:
            return openai.DefaultAsyncHttpxClient(verify=shared_ssl_context())
        # A server of one's own (llama.cpp, vLLM's uvicorn) closes an idle connection after 5 s, the
        # time httpx keeps it for reuse: a request sent on it as it closes fails ("Server disconnected
        # without sending a response"). Reused for 2 s at most, a connection is never that old.
        limits = httpx2.Limits(max_connections=1000, max_keepalive_connections=100, keepalive_expiry=2.0)
        return openai.DefaultAsyncHttpxClient(verify=shared_ssl_context(), limits=limits)

    def _new_client(self, **kwargs: Any) -> Any:
        import openai

        return openai.AsyncOpenAI(**kwargs)

    def _request(
        self,
        messages: list[Message],
        max_tokens: int | None,
        stop: Sequence[str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model_name,
            # `cache` is ours: OpenAI caches prefixes by itself and strict servers reject unknown keys.
            "messages": [_message(m) for m in messages],
        }
        if tools:
            request["tools"] = [{"type": "function", "function": dict(t)} for t in tools]
        if max_tokens is not None:
            if self.context_window:  # a reply cannot use more than half the window and leave room to read
                max_tokens = min(max_tokens, self.context_window // 2)
            # OpenAI's reasoning models refuse `max_tokens`; most local servers only know it.
            request["max_completion_tokens" if self.is_official else "max_tokens"] = max_tokens
        if stop and not (self.is_official and self.model_name.startswith(_REASONING)):
            request["stop"] = list(stop)[:4]  # OpenAI's reasoning models take no stop sequences
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.is_official and (key := cache_key(messages)):
            request["prompt_cache_key"] = key
        request.update(self.extra_body)  # the caller's own prompt_cache_key, if any, wins
        request.update(request_sampling())  # this request's own temperature and seed
        return request

    def _sdk_module(self) -> ModuleType:
        import openai

        return openai

    async def _send(
        self,
        messages: list[Message],
        max_tokens: int | None,
        stop: Sequence[str] | None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> Received:
        # The package before its submodule: a thread that imports `openai.types.chat` first, while
        # another thread imports `openai`, can leave one of them a partly initialised module.
        import openai  # noqa: F401
        from openai.types.chat import ChatCompletion

        # The low-level post sends our plain dicts as they are; `chat.completions.create` would
        # re-validate every message of the history on each turn (quadratic over a long run).
        response = await self._sdk().post(
            "/chat/completions", body=self._request(messages, max_tokens, stop, tools), cast_to=ChatCompletion
        )
        choice = response.choices[0] if response.choices else None
        calls = (choice.message.tool_calls or []) if choice else []
        return Received(
            text=(choice.message.content or "") if choice else "",
            tokens=_tokens(response.usage),
            finish=choice.finish_reason if choice else None,
            response_model=response.model,
            tool_calls=[
                ToolRequest(c.id, c.function.name, c.function.arguments or "{}")
                for c in calls
                if getattr(c, "function", None) is not None
            ],
        )

    async def _stream(
        self, messages: list[Message], max_tokens: int | None, stop: Sequence[str] | None, received: Received
    ) -> AsyncIterator[str]:
        import openai  # before its submodule, as in _send
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        body = {**self._request(messages, max_tokens, stop), "stream": True}
        body["stream_options"] = {"include_usage": True}  # the usage comes in a last chunk of its own
        stream = await self._sdk().post(
            "/chat/completions",
            body=body,
            cast_to=ChatCompletion,
            stream=True,
            stream_cls=openai.AsyncStream[ChatCompletionChunk],
        )
        async with stream:
            async for chunk in stream:
                received.response_model = chunk.model or received.response_model
                if chunk.usage is not None:
                    received.tokens = _tokens(chunk.usage)
                if not chunk.choices:
                    continue
                received.finish = chunk.choices[0].finish_reason or received.finish
                if delta := chunk.choices[0].delta.content:
                    yield delta

    def _status_message(self, error: openai.APIStatusError) -> str:
        """The provider's own words: ``error.message`` of the JSON body, else the raw body."""
        body = error.body
        if isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"]:
            return body["message"]
        if isinstance(body, str) and body.strip():
            return body.strip()
        return error.message


def _message(m: Message) -> dict[str, Any]:
    """One message as Chat Completions takes it, tool calls and results included."""
    out: dict[str, Any] = {"role": m["role"], "content": m["content"]}
    if m.get("images"):  # the text, then each image as a data URL
        out["content"] = [
            {"type": "text", "text": m["content"]},
            *({"type": "image_url", "image_url": {"url": image.data_url()}} for image in m["images"]),
        ]
    if m.get("tool_calls"):
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in m["tool_calls"]
        ]
    if m["role"] == "tool":
        out["tool_call_id"] = m["tool_call_id"]
    return out


def cache_key(messages: list[Message]) -> str | None:
    """OpenAI's ``prompt_cache_key`` for a conversation marked for caching: a digest of its fixed start,
    up to its second ``cache`` mark (the engine marks the system prompt, then the first request). Every
    root request of a run shares it, and runs that share only the system prompt do not, so that many
    runs at once do not crowd one cache machine. None for a request without marks (a sub-call), which
    its prefix alone routes."""
    marked = [i for i, m in enumerate(messages) if m.get("cache")]
    if not marked:
        return None
    start = [[m["role"], m["content"]] for m in messages[: marked[:2][-1] + 1]]
    digest = hashlib.sha256(json.dumps(start, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return "rlm-" + digest.hexdigest()[:32]


def _tokens(usage: CompletionUsage | None) -> tuple[int, int, int] | None:
    """Input (cached included), output and cached tokens, as OpenAI counts them."""
    if usage is None:
        return None
    details = usage.prompt_tokens_details
    return usage.prompt_tokens, usage.completion_tokens, (details.cached_tokens or 0) if details else 0
