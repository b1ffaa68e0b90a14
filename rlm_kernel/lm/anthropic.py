"""Anthropic Messages (and servers that speak it, such as llama.cpp's ``/v1/messages``) on the official SDK.

Messages flagged ``cache`` mark the end of a stable prefix: their last content
block gets ``cache_control: ephemeral``, so the provider reads the prefix from
its prompt cache on the next call. The root's requests carry three marks (the
system prompt, the first request with the context's description, and the latest
message, which the next turn's request begins with); the API takes four at most,
so only the last four marks are sent. The mark is not part of the prompt: the
latest message, sent next turn without it, still matches the cached prefix.
Retries and timeouts are the SDK's own; timing, the text's buffering, loop
detection, error mapping and the :class:`~rlm_kernel.lm.base.Completion` are the
base class's.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from rlm_kernel.lm.base import Message, Received, request_sampling, shared_ssl_context
from rlm_kernel.lm.sdk import SDKBackend
from rlm_kernel.tools import ToolRequest

if TYPE_CHECKING:
    import anthropic

__all__ = ["AnthropicLM"]

PROVIDER = "Anthropic"
# The API refuses a request with more than four cache breakpoints.
MAX_CACHE_BREAKPOINTS = 4

CONTEXT_WINDOWS: dict[str, int] = {"claude-": 200_000}


def anthropic_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Provider-neutral tool declarations (``Tool.spec()``) as Anthropic's ``tools``."""
    return [
        {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in tools
    ]


def to_anthropic(messages: list[Message]) -> tuple[list[dict], list[dict]]:
    """Split chat messages into Anthropic's ``system`` blocks and ``messages``, marking cache breakpoints.

    Only the last four flagged messages keep their breakpoint: a later
    breakpoint's prefix already covers the earlier ones.
    """
    system: list[dict] = []
    turns: list[dict] = []
    flagged: list[dict] = []
    for message in messages:
        block: dict[str, Any] = {"type": "text", "text": message["content"]}
        if message["role"] == "system":
            system.append(block)
        elif message["role"] == "tool":  # results go back in a user turn, one block a call
            block = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": message["content"],
            }
            if turns and turns[-1]["role"] == "user" and turns[-1]["content"][-1]["type"] == "tool_result":
                turns[-1]["content"].append(block)
            else:
                turns.append({"role": "user", "content": [block]})
        else:
            blocks = [block] if message["content"] or not message.get("tool_calls") else []
            blocks += [
                {"type": "image", "source": {"type": "base64", "media_type": i.media_type, "data": i.b64()}}
                for i in message.get("images", ())
            ]
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": json.loads(c.arguments or "{}")}
                for c in message.get("tool_calls", ())
            ]
            turns.append({"role": message["role"], "content": blocks})
        if message.get("cache"):
            flagged.append(block)
    for block in flagged[-MAX_CACHE_BREAKPOINTS:]:
        block["cache_control"] = {"type": "ephemeral"}
    for turn in turns:  # plain strings where no breakpoint is needed: smaller, and every server accepts them
        blocks = turn["content"]
        if len(blocks) == 1 and blocks[0]["type"] == "text" and "cache_control" not in blocks[0]:
            turn["content"] = blocks[0]["text"]
    return system, turns


class AnthropicLM(SDKBackend):
    """An :class:`~rlm_kernel.lm.base.LMClient` over ``anthropic.AsyncAnthropic``. Its ``messages.create``
    takes no ``temperature`` argument, so the temperature travels in the request body."""

    provider = PROVIDER
    finish_key = "stop_reason"
    key_var = "ANTHROPIC_API_KEY"
    base_url_var = "ANTHROPIC_BASE_URL"
    official_host = "api.anthropic.com"
    context_windows = CONTEXT_WINDOWS
    vision_models = ("claude-3*", "claude-*-4*")

    def __init__(
        self, model_name: str, *, max_tokens_default: int = 4096, vision: bool | None = None, **kwargs: Any
    ) -> None:
        super().__init__(model_name, **kwargs)
        self.max_tokens_default = max_tokens_default
        self.vision = vision

    def _default_http_client(self) -> Any:
        import anthropic

        return anthropic.DefaultAsyncHttpxClient(verify=shared_ssl_context())

    def _new_client(self, **kwargs: Any) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(**kwargs)

    def _request(
        self,
        messages: list[Message],
        max_tokens: int | None,
        stop: Sequence[str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
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
        if tools:
            request["tools"] = anthropic_tools(tools)
        # anthropic 2.x's create() and stream() have no `temperature` argument; the API still takes it.
        extra_body = dict(self.extra_body)
        if self.temperature is not None:
            extra_body.setdefault("temperature", self.temperature)
        if "temperature" in request_sampling():  # this request's own; Messages takes no seed
            extra_body["temperature"] = request_sampling()["temperature"]
        if extra_body:
            request["extra_body"] = extra_body
        return request

    def _sdk_module(self) -> ModuleType:
        import anthropic

        return anthropic

    async def _send(
        self,
        messages: list[Message],
        max_tokens: int | None,
        stop: Sequence[str] | None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> Received:
        message = await self._sdk().messages.create(**self._request(messages, max_tokens, stop, tools))
        received = Received(
            text="".join(b.text for b in message.content if b.type == "text"),
            tool_calls=[
                ToolRequest(b.id, b.name, json.dumps(b.input, ensure_ascii=False))
                for b in message.content
                if b.type == "tool_use"
            ],
        )
        return _received(message, received)

    async def _stream(
        self, messages: list[Message], max_tokens: int | None, stop: Sequence[str] | None, received: Received
    ) -> AsyncIterator[str]:
        async with self._sdk().messages.stream(**self._request(messages, max_tokens, stop)) as stream:
            async for delta in stream.text_stream:
                yield delta
            _received(await stream.get_final_message(), received)

    def _status_message(self, error: anthropic.APIStatusError) -> str:
        """The provider's own words: ``error.message`` of the JSON body, else the raw body."""
        if error.api_message:
            return error.api_message
        if isinstance(error.body, str) and error.body.strip():
            return error.body.strip()
        return error.message


def _received(message: anthropic.types.Message, received: Received) -> Received:
    """Fill ``received`` with the usage, stop reason and model of a whole message."""
    usage = message.usage
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    # Anthropic counts cached and cache-written tokens apart; the port reports the whole prompt.
    received.tokens = (
        (usage.input_tokens or 0) + cache_read + cache_write,
        usage.output_tokens or 0,
        cache_read,
    )
    received.written = cache_write
    received.finish = message.stop_reason
    received.response_model = message.model
    return received
