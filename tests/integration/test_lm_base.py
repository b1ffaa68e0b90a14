"""The base class's part of a call, through the real OpenAI and Anthropic SDKs against the scripted server:
loops stopped, prices per client, errors mapped the same way for both."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from scripted_server import Reply, ScriptedServer

from rlm_kernel import usage
from rlm_kernel.errors import ProviderError
from rlm_kernel.lm.anthropic import AnthropicLM
from rlm_kernel.lm.base import Completion, Message, estimate_tokens, price_of
from rlm_kernel.lm.openai import OpenAILM
from rlm_kernel.lm.replay import Recording, RecordingLM, ReplayLM
from rlm_kernel.usage import Price

BACKENDS = ["openai", "anthropic"]
FINISH_KEY = {"openai": "finish_reason", "anthropic": "stop_reason"}
MODEL = "scripted-model"


def make_lm(kind: str, server: ScriptedServer, **kwargs: Any) -> OpenAILM | AnthropicLM:
    kwargs.setdefault("api_key", "test-key")
    if kind == "openai":
        return OpenAILM(MODEL, base_url=server.openai_base_url, **kwargs)
    return AnthropicLM(MODEL, base_url=server.anthropic_base_url, **kwargs)


def complete(lm: Any, messages: list[Message], **kwargs: Any) -> Completion:
    async def go() -> Completion:
        try:
            return await lm.complete(messages, **kwargs)
        finally:
            await lm.aclose()

    return asyncio.run(go())


ASK: list[Message] = [{"role": "user", "content": "Tell me about the license."}]


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_looping_stream_is_stopped_with_an_estimate(kind: str, scripted_server: ScriptedServer) -> None:
    loop = "The license grants every patent right. " * 400
    scripted_server.responder = lambda r: Reply(text=loop, token_delay=0.0005, output_tokens=9999)
    seen: list[str] = []

    result = complete(make_lm(kind, scripted_server), ASK, on_token=seen.append)

    assert result.extra[FINISH_KEY[kind]] == "repetition"
    assert result.extra["response_model"] == MODEL
    assert result.text == "".join(seen) and 300 < len(result.text) < 2000
    # The stream was left before its usage came: the tokens are the port's estimate.
    assert (result.input_tokens, result.output_tokens, result.cached_tokens) == (
        estimate_tokens(ASK[0]["content"]),
        len(seen),
        0,
    )


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("stream", [False, True])
def test_the_reply_is_priced_by_the_clients_own_price(
    kind: str, stream: bool, scripted_server: ScriptedServer
) -> None:
    scripted_server.responder = lambda r: Reply(
        text="fine", input_tokens=2_000_000, output_tokens=1_000_000, cached_tokens=1_000_000
    )
    lm = make_lm(kind, scripted_server, prices={"scripted": (1.0, 2.0, 0.5)})
    assert price_of(lm) == Price(1.0, 2.0, 0.5)

    result = complete(lm, ASK, on_token=(lambda t: None) if stream else None)

    assert result.cost == 1.0 + 0.5 + 2.0
    assert result.usage.fields() == {
        "input_tokens": 2_000_000,
        "output_tokens": 1_000_000,
        "cached_tokens": 1_000_000,
        "cost": 3.5,
    }
    assert result.extra[FINISH_KEY[kind]] in ("stop", "end_turn")


@pytest.mark.parametrize("kind", BACKENDS)
def test_an_unpriced_model_costs_none(kind: str, scripted_server: ScriptedServer) -> None:
    result = complete(make_lm(kind, scripted_server), ASK)
    assert result.price is None and result.cost is None and result.usage.cost is None


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("stream", [False, True])
def test_both_providers_map_an_error_status_alike(
    kind: str, stream: bool, scripted_server: ScriptedServer
) -> None:
    scripted_server.responder = lambda r: Reply(status=400, error_message="prompt is too long")
    with pytest.raises(ProviderError) as caught:
        complete(
            make_lm(kind, scripted_server, max_retries=0), ASK, on_token=(lambda t: None) if stream else None
        )
    assert (caught.value.status, caught.value.provider_message) == (400, "prompt is too long")
    assert caught.value.provider == {"openai": "OpenAI", "anthropic": "Anthropic"}[kind]


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_recorded_run_replays_at_the_live_clients_price(
    kind: str, scripted_server: ScriptedServer, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(usage, "PRICES", dict(usage.PRICES))  # the replay also tells the process-wide table
    scripted_server.responder = lambda r: Reply(text="recorded", input_tokens=1_000_000, output_tokens=0)
    path = tmp_path / "run.jsonl"
    live = RecordingLM(make_lm(kind, scripted_server, prices={MODEL: (0.25, 1.0)}), Recording(path))

    recorded = complete(live, ASK, on_token=lambda t: None)
    replayed = complete(ReplayLM(path), ASK)

    assert recorded.cost == replayed.cost == 0.25
    assert (replayed.text, replayed.model, replayed.input_tokens) == ("recorded", MODEL, 1_000_000)
