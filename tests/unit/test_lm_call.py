"""BaseLM owns the call: timing, buffering the stream, stopping a loop, mapping errors, the Completion."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from rlm_kernel import usage
from rlm_kernel.errors import ProviderError, RLMError
from rlm_kernel.lm import make_lm
from rlm_kernel.lm.base import BaseLM, Completion, LMClient, Message, Received, estimate_tokens, price_of
from rlm_kernel.lm.replay import Recording, RecordingLM, ReplayLM, request_key
from rlm_kernel.usage import Price, UsageRecord, set_price


class SDKFailure(Exception):
    """Stands for an SDK's own exception class."""


class FakeLM(BaseLM):
    """A provider that reads its reply from ``reply``: a whole text, or a list of deltas to stream."""

    def __init__(self, *deltas: str, tokens: tuple[int, int, int] | None = None, **kwargs: Any) -> None:
        super().__init__(kwargs.pop("model_name", "fake-model"), **kwargs)
        self.deltas = list(deltas)
        self.tokens = tokens
        self.fail: Exception | None = None
        self.closed = False
        self.read = 0

    async def _send(
        self, messages: list[Message], max_tokens: int | None, stop: Sequence[str] | None
    ) -> Received:
        if self.fail is not None:
            raise self.fail
        await asyncio.sleep(0.01)
        return Received(
            text="".join(self.deltas), tokens=self.tokens, finish="stop", response_model="fake-v1"
        )

    async def _stream(
        self, messages: list[Message], max_tokens: int | None, stop: Sequence[str] | None, received: Received
    ) -> AsyncIterator[str]:
        try:
            for delta in self.deltas:
                if self.fail is not None:
                    raise self.fail
                self.read += 1
                yield delta
            received.tokens, received.finish = self.tokens, "stop"
        finally:
            self.closed = True

    def _error(self, exc: Exception) -> RLMError | None:
        return ProviderError("Fake", str(exc), 418) if isinstance(exc, SDKFailure) else None


def complete(lm: LMClient, messages: list[Message] | None = None, **kwargs: Any) -> Completion:
    return asyncio.run(lm.complete(messages or [{"role": "user", "content": "hi"}], **kwargs))


def test_a_whole_reply_becomes_a_timed_completion() -> None:
    lm = FakeLM("forty", "-two", tokens=(10, 2, 4))
    assert isinstance(lm, LMClient)

    result = complete(lm)

    assert result == Completion(
        text="forty-two",
        model="fake-model",
        input_tokens=10,
        output_tokens=2,
        cached_tokens=4,
        latency_s=result.latency_s,
        extra={"finish_reason": "stop", "response_model": "fake-v1"},
    )
    assert result.latency_s >= 0.01


def test_streamed_deltas_are_passed_on_and_buffered() -> None:
    lm = FakeLM("alpha ", "", "beta", tokens=(5, 2, 0))
    seen: list[str] = []

    result = complete(lm, on_token=seen.append)

    assert seen == ["alpha ", "beta"]  # an empty delta is no token
    assert result.text == "alpha beta"
    assert (result.input_tokens, result.output_tokens) == (5, 2)
    assert result.extra == {"finish_reason": "stop", "response_model": "fake-model"}
    assert lm.closed


def test_a_looping_stream_is_left_and_closed_with_an_estimate() -> None:
    lm = FakeLM(*(["Again and again. "] * 200), tokens=(1, 1, 1))
    messages: list[Message] = [{"role": "user", "content": "x" * 350}]
    seen: list[str] = []

    result = complete(lm, messages, on_token=seen.append)

    assert result.extra["finish_reason"] == "repetition"
    assert lm.closed and lm.read < 200  # the stream was closed, not read to its end
    assert result.text == "".join(seen) and 300 < len(result.text) < 1000
    assert (result.input_tokens, result.output_tokens, result.cached_tokens) == (
        estimate_tokens("x" * 350),
        len(seen),
        0,
    )


def test_a_client_that_does_not_guard_reads_the_whole_stream() -> None:
    class Trusting(FakeLM):
        guards_repetition = False

    lm = Trusting(*(["Again and again. "] * 200))
    result = complete(lm, on_token=lambda t: None)
    assert lm.read == 200 and result.extra["finish_reason"] == "stop"
    assert (result.input_tokens, result.output_tokens) == (0, 0)  # no usage reported, no loop: zeros


@pytest.mark.parametrize("stream", [False, True])
def test_sdk_and_parse_errors_are_mapped_and_others_pass_through(stream: bool) -> None:
    on_token = (lambda t: None) if stream else None
    lm = FakeLM("a", "b")
    lm.fail = SDKFailure("teapot")
    with pytest.raises(ProviderError) as caught:
        complete(lm, on_token=on_token)
    assert (caught.value.provider, caught.value.status, caught.value.provider_message) == (
        "Fake",
        418,
        "teapot",
    )
    assert isinstance(caught.value.__cause__, SDKFailure)

    lm.fail = KeyError("a bug of ours")
    with pytest.raises(KeyError):
        complete(lm, on_token=on_token)

    lm.fail = ValueError("Expecting value: line 1 column 1 (char 0)\nmore")  # a body that did not parse
    with pytest.raises(ProviderError, match=r"could not be read: ValueError: Expecting value[^\n]*$"):
        complete(lm, on_token=on_token)


def test_an_error_of_the_token_callback_is_not_the_providers() -> None:
    lm = FakeLM("a", "b")

    def stop(text: str) -> None:
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        complete(lm, on_token=stop)
    assert lm.closed


def test_cost_uses_the_clients_own_price_first() -> None:
    lm = FakeLM("x", tokens=(1_000_000, 1_000_000, 0), model_name="gpt-4o", prices={"gpt-4o": (1.0, 1.0)})
    other = FakeLM("x", tokens=(1_000_000, 1_000_000, 0), model_name="gpt-4o")

    mine, theirs = complete(lm), complete(other)

    assert mine.price == Price(1.0, 1.0) and mine.cost == 2.0
    assert theirs.cost == 12.5  # the table's gpt-4o: $2.50 in, $10 out
    assert mine == dataclasses.replace(theirs, latency_s=mine.latency_s)  # the price is not part of equality
    assert mine.usage == UsageRecord(1_000_000, 1_000_000, 0, 2.0)
    assert price_of(lm) == Price(1.0, 1.0) and price_of(other) == Price(2.5, 10.0, 1.25)


def test_a_completion_made_by_hand_is_priced_by_the_table() -> None:
    assert Completion(text="", model="gpt-4o-mini", input_tokens=1_000_000).cost == 0.15
    assert Completion(text="", model="nobody-prices-this", input_tokens=10).cost is None
    assert Completion(text="", model="m", input_tokens=3, output_tokens=4).usage.tokens == 7


def test_an_lm_without_a_price_method_is_priced_by_the_table() -> None:
    class Plain:
        model_name = "gpt-4o-mini"

    assert price_of(Plain()) == Price(0.15, 0.6, 0.075)  # type: ignore[arg-type]
    assert price_of(Plain(), "gpt-5") == Price(1.25, 10.0, 0.125)  # type: ignore[arg-type]


def test_make_lm_passes_prices_to_every_backend(tmp_path: Any) -> None:
    lm = make_lm("openai", {"api_key": "k", "prices": {"ft:gpt-4o": [3, 12, 1.5]}}, model="ft:gpt-4o:me")
    assert price_of(lm) == Price(3.0, 12.0, 1.5)
    recording = tmp_path / "r.jsonl"
    recording.write_text("")
    replay = make_lm("replay", {"path": str(recording), "prices": {"m": {"input": 1, "output": 2}}})
    assert price_of(replay, "m") == Price(1.0, 2.0)


@pytest.fixture
def own_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process-wide price table of this test's own, as a replay and set_price change it."""
    monkeypatch.setattr(usage, "PRICES", dict(usage.PRICES))


@pytest.mark.usefixtures("own_table")
def test_recording_keeps_the_clients_own_price_and_replay_charges_it(tmp_path: Any) -> None:
    path = tmp_path / "run.jsonl"
    live = RecordingLM(
        FakeLM(
            "a reply", tokens=(2_000_000, 0, 0), model_name="house-model-1", prices={"house-model": (0.5, 1)}
        ),
        Recording(path),
    )
    assert price_of(live) == Price(0.5, 1.0)
    recorded = complete(live)

    replay = ReplayLM(path)
    seen: list[str] = []
    replayed = complete(replay, on_token=seen.append)

    assert recorded.cost == replayed.cost == 1.0
    assert replay.price("house-model-1") == Price(0.5, 1.0)
    assert (replayed.text, seen, replayed.model) == ("a reply", ["a reply"], "house-model-1")
    assert replayed.extra["finish_reason"] == "stop"
    assert (replayed.input_tokens, replayed.output_tokens) == (2_000_000, 0)


def test_replay_keeps_a_recorded_loop_as_it_was(tmp_path: Any) -> None:
    path = tmp_path / "run.jsonl"
    text = "Again and again. " * 40
    messages: list[Message] = [{"role": "user", "content": "go"}]
    Recording(path).append(
        request_key(messages),
        Completion(text=text, model="m", output_tokens=7, extra={"finish_reason": "repetition"}),
    )
    replayed = complete(ReplayLM(path), messages, on_token=lambda t: None)
    assert (replayed.text, replayed.output_tokens, replayed.extra["finish_reason"]) == (text, 7, "repetition")


@pytest.mark.usefixtures("own_table")
def test_the_process_wide_table_still_prices_every_client() -> None:
    set_price("test-lm-base-model", 4.0, 0.0)
    result = complete(FakeLM("x", tokens=(1_000_000, 0, 0), model_name="test-lm-base-model"))
    assert result.cost == 4.0
