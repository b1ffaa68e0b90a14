"""A sub-call's pre-flight: does its prompt fit the sub-model's window? Counted before it is sent.

The cheap checks come first, so that a prompt far below the window costs a few microseconds:

=========  ==================================================================================
bound      the prompt's UTF-8 bytes (``len`` for ASCII text, which Python knows without a pass):
           no tokenizer makes more tokens than bytes, so a prompt of fewer bytes than the limit
           fits for certain.
estimate   :func:`conservative_tokens`, at most half the limit: it fits (the estimate counts
           more tokens than tokenizers do for text and code, see its docstring).
count      the backend's own count, where one is to be had: llama.cpp's ``/tokenize`` (the
           ``local`` backend, and any OpenAI-compatible server that answers it the same way, as vLLM),
           ``tiktoken`` for OpenAI's models when it is installed and its encoding is on disk (it
           is never downloaded), Anthropic's ``messages.count_tokens``. A backend may offer its
           own by :class:`CountsTokens`.
estimate   otherwise, the conservative estimate against the limit.
=========  ==================================================================================

Where a count is not worth a pass over the text (a conversation's size, a usage a stream left
without), :func:`estimate_tokens` is the one estimate: :data:`CHARS_PER_TOKEN` characters a token.

The limit is the window less room for the reply (:func:`reply_room`). :func:`split_text` cuts a
text into pieces that each fit a number of tokens, at paragraph, line, sentence or word breaks.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
import tempfile
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: lm.base takes estimate_tokens from here
    from .base import LMClient, Message

__all__ = [
    "CHARS_PER_TOKEN",
    "estimate_tokens",
    "REPLY_TOKENS",
    "FAR_BELOW",
    "Fit",
    "CountsTokens",
    "reply_room",
    "prompt_limit",
    "prompt_text",
    "byte_bound",
    "conservative_tokens",
    "template_tokens",
    "image_tokens",
    "preflight",
    "counter_for",
    "split_text",
    "fitting_prefix",
]

# Characters a token, for an estimate where nothing counts: cautious for code and printed output
# (English prose runs nearer 4), so that an estimate errs high.
CHARS_PER_TOKEN = 3
# Tokens kept for the reply of a call that sets no ``max_tokens`` (a quarter of a small window).
REPLY_TOKENS = 1024
# A conservative estimate at most this share of the limit needs no exact count: no text measured
# counts more than 1.5 times its estimate.
FAR_BELOW = 0.5
# What a chat template adds around the messages' text: Qwen's ChatML with its default system
# message is 20 tokens plus 5 a message; OpenAI's format 3 plus 4 a message.
TEMPLATE_TOKENS = 32
MESSAGE_TOKENS = 8
# Counting a prompt waits at most this long for the server or provider; then the estimate stands.
COUNT_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Fit:
    """A prompt measured against a window: ``tokens`` as ``counted_by`` counted them (at most the
    true count for ``bound`` and ``estimate``, which are upper bounds)."""

    tokens: int
    limit: int  # the most the prompt may have: the window less room for the reply
    window: int
    counted_by: str  # "bound", "estimate", or the tokenizer: "llama.cpp", "tiktoken", "anthropic"

    @property
    def fits(self) -> bool:
        return self.tokens <= self.limit


def reply_room(window: int, max_tokens: int | None = None) -> int:
    """Tokens kept for the reply: the call's ``max_tokens`` (the OpenAI backend caps it at half the
    window), else ``REPLY_TOKENS`` or a quarter of a small window."""
    if max_tokens:
        return min(max_tokens, window // 2)
    return min(REPLY_TOKENS, window // 4)


def prompt_limit(window: int, max_tokens: int | None = None) -> int:
    """The most tokens a prompt may have in ``window``."""
    return window - reply_room(window, max_tokens)


def prompt_text(messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] | None = None) -> str:
    """Everything of a request that takes tokens besides the template: the messages' text, the tool
    calls they carry, and the tools offered."""
    parts = [m["content"] for m in messages]
    for m in messages:
        parts.extend(f"{c.name}({c.arguments})" for c in m.get("tool_calls", ()))
    if tools:
        parts.append(json.dumps(list(tools), ensure_ascii=False))
    return "\n".join(parts)


def byte_bound(text: str) -> int:
    """The text's UTF-8 bytes, more than any tokenizer's count of it (a token is at least a byte);
    free for ASCII text, whose length is its size."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


_HIGH = bytes(range(0x80, 0x100))
_LETTERS = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Letters a word break lets go at 3 a token: a run of letters without breaks (base64, hex, a key)
# is cut into tokens of 1 to 2 characters, so only this many letters a break count as words.
_WORD = 4


def conservative_tokens(text: str) -> int:
    """An estimate above what tokenizers count for text and code: a token for every 3 letters and
    spaces (English runs about 4 characters a token), but a token a letter past 4 a word break (base64,
    hex and keys are cut into tokens of 1 to 2 characters); one for each digit (Qwen and Llama 2 read
    them one by one), punctuation mark and line break; one for every 2 bytes of other scripts.

    Against Qwen2.5's tokenizer it counts 1.4 to 1.8 times more for prose, code, Markdown and JSON,
    1.1 to 1.3 for CSV, hex and base64, 1.0 for UUIDs, 2 for other scripts and emoji; only short
    "words" of random letters (no language's) come out low, at 0.7. It is at least a third of the
    bytes, so three times it bounds any count. A few passes in C over the bytes: about 0.1 ms for
    100 KB."""
    data = text.encode("utf-8", "surrogatepass")
    size = len(data)
    high = size - len(data.translate(None, _HIGH))
    letters = size - len(data.translate(None, _LETTERS))
    spaces = data.count(b" ")
    breaks = spaces + data.count(b"\n") + data.count(b"\t")
    other = size - high - letters - spaces
    return max(-(-(letters + spaces) // 3), letters - _WORD * breaks) + other + -(-high // 2)


def estimate_tokens(text: str | int) -> int:
    """The tokens of ``text`` (or of that many characters) at :data:`CHARS_PER_TOKEN`, rounded up:
    the cheap estimate, where neither a count nor :func:`conservative_tokens`' pass over the bytes
    is worth its cost."""
    chars = text if isinstance(text, int) else len(text)
    return -(-chars // CHARS_PER_TOKEN)


def template_tokens(messages: int) -> int:
    """What a chat template adds to ``messages`` messages: role markers, a default system prompt."""
    return TEMPLATE_TOKENS + MESSAGE_TOKENS * messages


# What an image costs at most, counted as the providers do after they scale it down: OpenAI's tiles
# of 512 pixels (85 + 170 each, the image fit in 2048 x 2048) and Anthropic's pixels / 750 (the long
# side at most 1568), whichever is more; an image of unknown size counts as the largest.
IMAGE_BOX = 2048
IMAGE_MAX_TOKENS = 85 + 170 * 16


def image_tokens(messages: Sequence[Message]) -> int:
    """The most tokens the messages' images take (text aside), for the pre-flight."""
    total = 0
    for m in messages:
        for image in m.get("images", ()):
            w, h = image.width, image.height
            if not w or not h:
                total += IMAGE_MAX_TOKENS
                continue
            scale = min(1.0, IMAGE_BOX / max(w, h))
            tiles = -(-int(w * scale) // 512) * -(-int(h * scale) // 512)
            long_side = min(1.0, 1568 / max(w, h))
            total += max(85 + 170 * tiles, int(w * h * long_side * long_side / 750) + 1)
    return total


@runtime_checkable
class CountsTokens(Protocol):
    """A client that counts a request's prompt tokens itself (its template included); None when it
    cannot this time."""

    async def count_tokens(
        self, messages: list[Message], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> int | None: ...


async def preflight(
    lm: LMClient,
    messages: list[Message],
    *,
    max_tokens: int | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> Fit | None:
    """How ``messages`` (and ``tools``) measure against ``lm``'s window, the cheapest way that
    decides it; None when the window is unknown."""
    window = lm.context_window
    if not window:
        return None
    limit = prompt_limit(window, max_tokens)
    text = prompt_text(messages, tools)
    overhead = template_tokens(len(messages)) + image_tokens(messages)
    if (bound := byte_bound(text) + overhead) <= limit:
        return Fit(bound, limit, window, "bound")
    estimate = conservative_tokens(text) + overhead
    if estimate <= limit * FAR_BELOW:
        return Fit(estimate, limit, window, "estimate")
    counter = counter_for(lm)
    if counter is not None and (counted := await counter.count(messages, tools)) is not None:
        return Fit(counted, limit, window, counter.name)
    return Fit(estimate, limit, window, "estimate")


# -- the counters ---------------------------------------------------------------------------------


class _Counter:
    name = "count"

    async def count(self, messages: list[Message], tools: Sequence[Mapping[str, Any]] | None) -> int | None:
        raise NotImplementedError


class _Own(_Counter):
    """The client's own count (:class:`CountsTokens`)."""

    def __init__(self, lm: CountsTokens, name: str) -> None:
        self.lm, self.name = lm, name

    async def count(self, messages: list[Message], tools: Sequence[Mapping[str, Any]] | None) -> int | None:
        return await self.lm.count_tokens(messages, tools)


class _ServerTokenize(_Counter):
    """llama.cpp's ``POST /tokenize`` at the server's root (vLLM's takes the same request), through
    the client's own SDK connection, its key included. A server that refuses it, or answers
    something else, is not asked again; one that cannot be reached is asked again next time."""

    name = "llama.cpp"

    def __init__(self, lm: Any) -> None:
        from . import LOCAL_PROVIDER

        self.lm = lm
        root = str(lm.base_url).rstrip("/")
        self.url = (root[: -len("/v1")] if root.endswith("/v1") else root) + "/tokenize"
        self.refused = False
        # llama.cpp reads "content"; vLLM's /tokenize, which answers "tokens" too, reads "prompt".
        self.llama = lm.provider == LOCAL_PROVIDER

    async def count(self, messages: list[Message], tools: Sequence[Mapping[str, Any]] | None) -> int | None:
        if self.refused:
            return None
        import openai

        text = prompt_text(messages, tools)
        body = {"content": text}
        if not self.llama:
            body.update(prompt=text, model=self.lm.model_name)
        try:
            reply = await self.lm._sdk().post(
                self.url,
                body=body,
                cast_to=object,
                options={"max_retries": 0, "timeout": COUNT_TIMEOUT_S},
            )
        except openai.APIStatusError:  # no /tokenize here (404), or not this one (400, 422)
            self.refused = True
            return None
        except openai.APIError:  # not reached this time, or not JSON
            return None
        tokens = reply.get("tokens") if isinstance(reply, dict) else None
        if not isinstance(tokens, list):
            self.refused = True
            return None
        return len(tokens) + template_tokens(len(messages)) + image_tokens(messages)


class _Tiktoken(_Counter):
    name = "tiktoken"

    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding

    async def count(self, messages: list[Message], tools: Sequence[Mapping[str, Any]] | None) -> int | None:
        text = prompt_text(messages, tools)
        # tiktoken holds no lock of ours and releases the GIL: a long text is counted off the loop.
        tokens = await asyncio.to_thread(self.encoding.encode, text, disallowed_special=())
        return len(tokens) + template_tokens(len(messages)) + image_tokens(messages)


class _AnthropicCount(_Counter):
    """Anthropic's ``messages.count_tokens`` (free; llama.cpp serves it too): the whole request,
    system prompt and tools included."""

    name = "anthropic"

    def __init__(self, lm: Any) -> None:
        self.lm = lm
        self.refused = False

    async def count(self, messages: list[Message], tools: Sequence[Mapping[str, Any]] | None) -> int | None:
        if self.refused:
            return None
        import anthropic

        from .anthropic import anthropic_tools, to_anthropic

        system, turns = to_anthropic(messages)
        request: dict[str, Any] = {"model": self.lm.model_name, "messages": turns}
        if system:
            request["system"] = system
        if tools:
            request["tools"] = anthropic_tools(tools)
        client = self.lm._sdk().with_options(max_retries=0, timeout=COUNT_TIMEOUT_S)
        try:
            counted = await client.messages.count_tokens(**request)
        except anthropic.APIStatusError:
            self.refused = True
            return None
        except anthropic.APIError:
            return None
        return int(counted.input_tokens)


_counters: weakref.WeakKeyDictionary[Any, _Counter | None] = weakref.WeakKeyDictionary()


def counter_for(lm: LMClient) -> _Counter | None:
    """The exact counter for ``lm``'s prompts, chosen once per client; None where there is none."""
    from .replay import RecordingLM

    while isinstance(lm, RecordingLM):  # the recorded client is the one that counts
        lm = lm.inner
    try:
        return _counters[lm]
    except KeyError:
        pass
    except TypeError:  # a client that cannot be weakly referenced is not remembered
        return _choose(lm)
    counter = _counters[lm] = _choose(lm)
    return counter


def _choose(lm: LMClient) -> _Counter | None:
    from .anthropic import AnthropicLM
    from .openai import OpenAILM

    if isinstance(lm, CountsTokens):
        return _Own(lm, type(lm).__name__)
    if isinstance(lm, OpenAILM):
        if not lm.is_official:  # llama.cpp (the local backend), or a server that may serve /tokenize
            return _ServerTokenize(lm)
        encoding = _tiktoken_encoding(lm.model_name)
        return None if encoding is None else _Tiktoken(encoding)
    if isinstance(lm, AnthropicLM):
        return _AnthropicCount(lm)
    return None


# tiktoken's encodings of OpenAI's chat models, and where tiktoken fetches them from: the address is
# only the name of its cache file (tiktoken.load.read_file_cached), never fetched here.
_ENCODINGS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


@functools.lru_cache(maxsize=8)
def _tiktoken_encoding(model: str) -> Any:
    """tiktoken's encoding for ``model``, if tiktoken is installed and the encoding is in its cache
    on disk; None otherwise. Nothing is downloaded: a machine without the file gets the estimate."""
    try:
        import tiktoken
        import tiktoken.model
    except ImportError:
        return None
    try:
        name = tiktoken.model.encoding_name_for_model(model)
    except KeyError:
        return None
    if name not in _ENCODINGS or not os.path.isfile(_tiktoken_cache_file(_ENCODINGS[name])):
        return None
    return tiktoken.get_encoding(name)


def _tiktoken_cache_file(blobpath: str) -> str:
    """Where tiktoken keeps the file fetched from ``blobpath`` (its own rule)."""
    folder = (
        os.environ.get("TIKTOKEN_CACHE_DIR")
        or os.environ.get("DATA_GYM_CACHE_DIR")
        or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    )
    return os.path.join(folder, hashlib.sha1(blobpath.encode()).hexdigest())  # noqa: S324 - tiktoken's key


# -- splitting ------------------------------------------------------------------------------------

_BREAKS = ("\n\n", "\n", ". ", " ")


def split_text(text: str, max_tokens: int, count: Callable[[str], int] = conservative_tokens) -> list[str]:
    """``text`` in pieces of at most ``max_tokens`` by ``count``, in order, joining back to ``text``.
    Each piece ends at the last paragraph break in its second half, else a line break, sentence end
    or space, else where the tokens run out. (The conservative estimate can fall as a text grows, a
    space letting go of a run of letters, so each cut is counted again.)"""
    if count("x") > max_tokens:
        raise ValueError(f"max_tokens={max_tokens} holds no text at all: give more")
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = _fit(text, start, max_tokens, count)
        if end < len(text) and count(text[start : (cut := _break(text, start, end))]) <= max_tokens:
            end = cut
        pieces.append(text[start:end])
        start = end
    return pieces


def fitting_prefix(text: str, max_tokens: int, count: Callable[[str], int] = conservative_tokens) -> int:
    """How many of ``text``'s first characters fit ``max_tokens`` by ``count`` (0 for no text)."""
    return _fit(text, 0, max_tokens, count) if text else 0


def _fit(text: str, start: int, max_tokens: int, count: Callable[[str], int]) -> int:
    """A far end such that ``text[start:end]`` is at most ``max_tokens`` (one character at least, so
    that splitting always goes on): doubling the length while it fits, then bisecting, so that a
    piece costs counts of about its own length, not the rest of the text's. Where ``count`` grows
    with the text it is the furthest; either way the piece fits."""
    low, high, step = start + 1, len(text), max(max_tokens, 1)
    while low < len(text):
        end = min(len(text), start + step)
        if count(text[start:end]) > max_tokens:
            high = end
            break
        low, step = end, step * 2
    while high - low > 1:  # text[start:low] fits, text[start:high] does not
        middle = (low + high) // 2
        if count(text[start:middle]) <= max_tokens:
            low = middle
        else:
            high = middle
    return low


def _break(text: str, start: int, end: int) -> int:
    half = start + (end - start) // 2
    for mark in _BREAKS:
        if (at := text.rfind(mark, half, end)) != -1:
            return at + len(mark)
    return end
