"""The sub-call pre-flight: counting a prompt against a window, and cutting one into parts that fit.

Pure functions and real clients that are never asked anything: no server, no download."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import pickle
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlm_kernel.errors import SubcallTooLarge
from rlm_kernel.executors import bridge
from rlm_kernel.lm import tokens
from rlm_kernel.lm.anthropic import AnthropicLM
from rlm_kernel.lm.base import Message
from rlm_kernel.lm.openai import OpenAILM
from rlm_kernel.lm.replay import Recording, RecordingLM
from rlm_kernel.lm.tokens import (
    Fit,
    byte_bound,
    conservative_tokens,
    counter_for,
    fitting_prefix,
    preflight,
    prompt_limit,
    reply_room,
    split_text,
    template_tokens,
)
from rlm_kernel.oversize import joined as _joined
from rlm_kernel.oversize import parts as _parts

ENGLISH = "The quick brown fox jumps over the lazy dog, and then it naps in the sun. " * 40


def user(text: str) -> list[Message]:
    return [{"role": "user", "content": text}]


class WordCounter:
    """A client that counts tokens itself (a token a word), as a backend with a tokenizer would."""

    model_name = "words"
    continues_reply = False

    def __init__(self, context_window: int | None) -> None:
        self.context_window = context_window
        self.counted = 0

    async def count_tokens(
        self, messages: list[Message], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> int | None:
        self.counted += 1
        return sum(len(m["content"].split()) for m in messages)

    async def complete(self, messages: list[Message], **kw: Any) -> Any:
        raise AssertionError("the pre-flight never sends")

    async def aclose(self) -> None:
        return None


@pytest.fixture
def no_tiktoken_file(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """tiktoken's cache is an empty folder: an official OpenAI model has no exact count, and nothing
    is fetched (whether or not tiktoken is installed)."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tokens._tiktoken_encoding.cache_clear()
    yield
    tokens._tiktoken_encoding.cache_clear()


# -- counting --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("hello", 5), ("héllo", 6), ("日本", 6), ("😀", 4), ("a\udcffb", 5)],
)
def test_the_bound_is_the_utf8_size(text: str, expected: int) -> None:
    assert byte_bound(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("the cat sat", 4),  # letters and spaces: a token for every 3
        ("deadbeef", 8),  # but a run of letters without a break: one a letter
        ("ab cdefghijk", 7),  # a letter a token past 4 letters a break
        ("1234", 4),  # digits: one each (Qwen and Llama 2 split them)
        ("a.b", 3),  # punctuation: one each
        ("日本", 3),  # 6 bytes of another script: one for every 2
        ("x = f(1)\n", 7),
    ],
)
def test_the_conservative_estimate_by_kind_of_character(text: str, expected: int) -> None:
    assert conservative_tokens(text) == expected


@given(st.text(max_size=300))
def test_three_estimates_bound_the_bytes(text: str) -> None:
    """So an estimate at most a third of the limit could never hold more tokens than the limit."""
    assert 3 * conservative_tokens(text) >= byte_bound(text)


def test_english_is_estimated_above_what_tokenizers_count() -> None:
    # Tokenizers of today's models give English about 4.4 characters a token (Qwen2.5's llama.cpp
    # counts 6,002 for "lorem ipsum dolor sit amet. " * 1000): the estimate is a third above that.
    assert conservative_tokens(ENGLISH) > len(ENGLISH) / 4.4 * 1.3
    assert conservative_tokens("lorem ipsum dolor sit amet. " * 1000) >= 6002 * 1.5


@pytest.mark.parametrize(
    ("window", "max_tokens", "room"),
    [(128_000, None, 1024), (8192, None, 1024), (1000, None, 250), (1000, 100, 100), (1000, 900, 500)],
)
def test_room_for_the_reply(window: int, max_tokens: int | None, room: int) -> None:
    assert reply_room(window, max_tokens) == room
    assert prompt_limit(window, max_tokens) == window - room


@pytest.mark.usefixtures("no_tiktoken_file")
def test_the_cheapest_measure_that_decides() -> None:
    lm = OpenAILM("gpt-4o-mini", api_key="sk-test", context_window=4000)  # official: no tiktoken file
    limit = prompt_limit(4000)  # 3,000
    small = asyncio.run(preflight(lm, user("hello")))
    assert small == Fit(5 + template_tokens(1), limit, 4000, "bound")
    # Past the bound, but the estimate is at most half the limit: no count.
    middle = ENGLISH + ENGLISH[:500]
    fit = asyncio.run(preflight(lm, user(middle)))
    assert fit is not None and fit.counted_by == "estimate" and fit.fits
    assert fit.tokens == conservative_tokens(middle) + template_tokens(1) <= limit / 2
    # Near the window, with no counter to be had: the estimate decides.
    big = asyncio.run(preflight(lm, user(ENGLISH * 3)))
    assert big is not None and big.counted_by == "estimate" and not big.fits


def test_no_window_no_preflight() -> None:
    assert asyncio.run(preflight(WordCounter(None), user(ENGLISH * 100))) is None


def test_a_client_that_counts_is_asked_only_near_the_window() -> None:
    lm = WordCounter(4000)
    assert asyncio.run(preflight(lm, user(ENGLISH[:500]))).counted_by == "bound"  # type: ignore[union-attr]
    assert lm.counted == 0
    near = ENGLISH * 3  # its estimate is over the limit; its words are not
    fit = asyncio.run(preflight(lm, user(near)))
    assert fit == Fit(len(near.split()), prompt_limit(4000), 4000, "WordCounter") and fit.fits
    assert lm.counted == 1


def test_tools_and_tool_calls_take_room() -> None:
    specs = [{"name": "lookup", "description": "d" * 3000, "parameters": {}}]
    bare = asyncio.run(preflight(WordCounter(100_000), user("hi")))
    offered = asyncio.run(preflight(WordCounter(100_000), user("hi"), tools=specs))
    assert bare is not None and offered is not None and offered.tokens > bare.tokens + 3000


@pytest.mark.usefixtures("no_tiktoken_file")
def test_each_client_gets_its_counter(tmp_path: Any) -> None:
    local = OpenAILM("qwen", base_url="http://127.0.0.1:9/v1", api_key="k", context_window=8192)
    counter = counter_for(local)
    assert (
        counter is not None and counter.name == "llama.cpp" and counter.url == "http://127.0.0.1:9/tokenize"
    )
    assert counter_for(local) is counter  # chosen once per client
    assert counter_for(OpenAILM("gpt-4o", api_key="k")) is None  # tiktoken's file is not on disk
    assert counter_for(AnthropicLM("claude-sonnet-4-5", api_key="k")).name == "anthropic"  # type: ignore[union-attr]
    recorded = RecordingLM(local, Recording(tmp_path / "r.jsonl"))
    assert counter_for(recorded) is counter  # the recorded client counts
    own = WordCounter(100)
    assert counter_for(own).name == "WordCounter"  # type: ignore[union-attr]


# -- splitting -------------------------------------------------------------------------------------


def test_pieces_fit_join_back_and_end_at_breaks() -> None:
    text = "\n\n".join(f"Paragraph {i}. " + "word " * 60 for i in range(30))
    pieces = split_text(text, 120)
    assert "".join(pieces) == text
    assert all(conservative_tokens(p) <= 120 for p in pieces)
    assert all(p.endswith(("\n\n", "\n", ". ", " ")) for p in pieces[:-1])
    assert sum(p.endswith("\n\n") for p in pieces) >= len(pieces) // 2  # paragraphs first


def test_a_text_without_breaks_is_cut_where_the_tokens_run_out() -> None:
    pieces = split_text("x" * 1000, 30)
    assert "".join(pieces) == "x" * 1000 and {len(p) for p in pieces[:-1]} == {30}


def test_a_limit_that_holds_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="holds no text"):
        split_text("abc", 0)


def test_a_prefix_that_fits() -> None:
    assert fitting_prefix("", 10) == 0
    assert fitting_prefix("abc def", 100) == 7
    assert fitting_prefix("1234567890", 4) == 4


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=2000), st.integers(min_value=2, max_value=300))
def test_splitting_any_text(text: str, max_tokens: int) -> None:
    pieces = split_text(text, max_tokens)
    assert "".join(pieces) == text and all(pieces)
    assert all(conservative_tokens(p) <= max_tokens or len(p) == 1 for p in pieces)


def test_the_parts_of_a_prompt_fit_and_carry_its_question() -> None:
    question = "Which city is named in the text below? "
    text = question + ENGLISH * 6 + "Zagreb is named. " + ENGLISH * 6 + " Answer with the city."
    too_large = SubcallTooLarge(conservative_tokens(text), 2000, "m", prompt_limit(2000))
    parts = _parts(text, too_large)
    assert parts is not None and len(parts) > 2
    assert all(conservative_tokens(p) + template_tokens(1) <= too_large.limit for p in parts)
    assert all(question.strip() in p and "Answer with the city." in p for p in parts)
    assert all(f"[Part {i} of {len(parts)} " in p for i, p in enumerate(parts, 1))
    assert sum("Zagreb is named" in p for p in parts) >= 1


def test_a_tokenizer_count_gives_fewer_larger_parts() -> None:
    text = ENGLISH * 12
    by_estimate = _parts(text, SubcallTooLarge(conservative_tokens(text), 2000, "m", prompt_limit(2000)))
    counted = SubcallTooLarge(len(text) // 4, 2000, "m", prompt_limit(2000), "llama.cpp")
    by_count = _parts(text, counted)
    assert by_estimate is not None and by_count is not None and len(by_count) < len(by_estimate)


def test_a_window_too_small_for_any_part_is_not_split() -> None:
    assert _parts(ENGLISH * 10, SubcallTooLarge(5000, 200, "m", 150)) is None


def test_the_joined_answers_say_what_happened() -> None:
    joined = _joined(["a", "b"], SubcallTooLarge(5000, 1000, "m", 750), "m")
    assert joined.startswith("[oversize='split': this prompt, of about 5,000 tokens, is over m's window")
    assert joined.endswith("[part 1 of 2]\na\n\n[part 2 of 2]\nb")


# -- the error -------------------------------------------------------------------------------------


def test_the_error_says_what_to_do_in_one_line_and_keeps_its_sizes() -> None:
    error = SubcallTooLarge(12_345, 8192, "qwen", 7168, "llama.cpp", index=3)
    text = str(error)
    assert "\n" not in text and text.startswith(
        "prompts[3]: a prompt of 12,345 tokens (counted by llama.cpp)"
    )
    assert "qwen's window of 8,192 tokens (7,168 with room for the reply)" in text and "split" in text
    assert (error.prompt_tokens, error.window, error.model, error.limit, error.index) == (
        12_345,
        8192,
        "qwen",
        7168,
        3,
    )
    assert "about 900 tokens (estimated)" in str(SubcallTooLarge(900, 800, "m"))
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is SubcallTooLarge and again.fields() == error.fields() and str(again) == text


def test_it_crosses_the_kernel_bridge_as_itself() -> None:
    error = SubcallTooLarge(5000, 1000, "m", 750)
    value = bridge.failure(error)
    reply = json.loads(json.dumps(dataclasses.asdict(value)))  # as the kernel reads it
    raised = bridge.raised(reply)
    assert type(raised) is SubcallTooLarge and raised.fields() == error.fields()
    other = bridge.raised(dataclasses.asdict(bridge.failure(KeyError("k"))))
    assert type(other) is RuntimeError and str(other) == "KeyError: 'k'"
