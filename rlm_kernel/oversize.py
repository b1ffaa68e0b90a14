"""A sub-call's prompt over its model's window: the pre-flight that finds it, and ``oversize="split"``.

The pre-flight (:func:`fits`) raises :class:`~rlm_kernel.errors.SubcallTooLarge` for a request over
the window, less room for the reply, before anything is sent. With ``oversize="split"`` the prompt
is asked in parts that fit (:func:`parts`), all at once, and the parts' answers are joined in order
under a note for the root (:func:`joined`).

The answers are joined, not combined by one more call: the root, which has the question, the code
and the other results, combines them better than a sub-model that sees only the answers; and a
combining call could itself be over the window.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import SubcallTooLarge
from .lm.base import LMClient, Message
from .lm.tokens import conservative_tokens, fitting_prefix, preflight, split_text, template_tokens

__all__ = ["OVERSIZE", "MIN_PART_TOKENS", "fits", "parts", "planned", "split_note", "joined"]

# What llm_query does with a prompt over the sub-model's window: raise SubcallTooLarge in the code,
# or ask it in parts and join their answers.
OVERSIZE = ("error", "split")
# A part of a split prompt holds at least this many tokens of it, or the prompt is not split.
MIN_PART_TOKENS = 64
# Where a split prompt's parts lie in the one batch of all parts: (first, count), None when unsplit.
Plan = tuple[int, int] | None


async def fits(
    lm: LMClient,
    messages: list[Message],
    max_tokens: int | None,
    index: int | None,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> None:
    """The pre-flight: raise SubcallTooLarge for a request over ``lm``'s window, less room for the
    reply (:mod:`rlm_kernel.lm.tokens`)."""
    fit = await preflight(lm, messages, max_tokens=max_tokens, tools=tools)
    if fit is not None and not fit.fits:
        raise SubcallTooLarge(fit.tokens, fit.window, lm.model_name, fit.limit, fit.counted_by, index)


def planned(prompts: Sequence[tuple[str, SubcallTooLarge]]) -> tuple[list[Plan], list[str]]:
    """The parts of each prompt, in one list to ask as one batch, and where each prompt's lie."""
    plans: list[Plan] = []
    every: list[str] = []
    for text, too_large in prompts:
        pieces = parts(text, too_large)
        plans.append(None if pieces is None else (len(every), len(pieces)))
        every.extend(pieces or ())
    return plans, every


def split_note(too_large: SubcallTooLarge, model: str, n: int) -> str:
    """The run's warning that a prompt was asked in ``n`` parts."""
    return (
        f"An llm_query prompt of {_size(too_large)} was over {model}'s window of "
        f"{too_large.window:,} tokens: it was asked in {n} parts and their answers "
        "joined (oversize='split')."
    )


_PART = (
    "[Part {i} of {n} of a request too long to read at once. The request begins: «{head}» and ends: "
    "«{tail}». Do what it asks for this part alone; if this part holds nothing it asks for, say so in "
    "one line.]\n\n"
)


def parts(text: str, too_large: SubcallTooLarge) -> list[str] | None:
    """The prompts of the parts of ``text``, each framed with the request's first and last words (where
    its question usually is); None when the window leaves too little room for a part.

    Parts are measured by the conservative estimate, scaled by how the tokenizer counted the whole
    (with a quarter more, as a part may be denser than the whole); each is counted again before it
    is sent."""
    quote = max(min(too_large.limit // 10, 200), 8)
    head = text[: fitting_prefix(text, quote)]
    # The tail's length is the prefix's of the end reversed (the estimate ignores order); a quote of
    # n tokens holds at most 3n characters.
    tail = text[len(text) - fitting_prefix(text[-(3 * quote + 3) :][::-1], quote) :]
    frame = _PART.format(i=10**6, n=10**6, head=head, tail=tail)
    frame_tokens = conservative_tokens(frame) + template_tokens(1)
    room = too_large.limit - frame_tokens
    if room < MIN_PART_TOKENS:
        return None
    scale = 1.0
    if too_large.counted_by not in ("bound", "estimate"):
        scale = 1.25 * too_large.prompt_tokens / (conservative_tokens(text) + template_tokens(1))
    pieces = split_text(text, room, lambda s: math.ceil(conservative_tokens(s) * scale))
    n = len(pieces)
    return [_PART.format(i=i, n=n, head=head, tail=tail) + piece for i, piece in enumerate(pieces, 1)]


def _size(too_large: SubcallTooLarge) -> str:
    if too_large.counted_by == "estimate":
        return f"about {too_large.prompt_tokens:,} tokens"
    return f"{too_large.prompt_tokens:,} tokens"


def joined(answers: Sequence[str], too_large: SubcallTooLarge, model: str) -> str:
    """The answers of a split prompt's parts, in order, under a note for the root."""
    n = len(answers)
    note = (
        f"[oversize='split': this prompt, of {_size(too_large)}, is over {model}'s window of "
        f"{too_large.window:,} tokens, so it was asked in {n} parts; their answers follow in order. "
        "Combine them.]"
    )
    return note + "".join(f"\n\n[part {i} of {n}]\n{a}" for i, a in enumerate(answers, 1))
