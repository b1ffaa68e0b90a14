"""Several roots that vote: their answers normalised and counted. Pure: no runs, no I/O.

A question asked with ``votes=k`` is answered by k root runs at once (:meth:`rlm_kernel.RLM.completion`
starts them); the first is greedy and the others sampled (:data:`SAMPLED`). Their answers are
compared by :func:`answer_key` (text stripped of surrounding quotes and punctuation, case-folded,
numbers in one form; a typed answer as canonical JSON) and counted by :func:`tally`. The vote is
*clear* when more than half of the k roots gave one answer; otherwise it is split, the answer is the
plurality's (the greedy root's on a tie), and the result carries a ``low_confidence`` warning.
A root that ended without an answer votes for none.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["SAMPLED", "Candidate", "Vote", "answer_key", "tally", "sampling_of"]

# The sampled roots' temperature: diverse enough to disagree where the model is unsure, and
# close enough to the greedy root's to stay on task (the calibration used 0.8).
SAMPLED_TEMPERATURE = 0.8
SAMPLED = {"temperature": SAMPLED_TEMPERATURE}

_QUOTES = "\"'`“”‘’«»"
_EDGE_PUNCTUATION = ".,;:!?"
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?")


def sampling_of(index: int) -> dict[str, float | int] | None:
    """Root ``index``'s sampling: the first greedy (the model's own settings), the others at
    :data:`SAMPLED_TEMPERATURE`, each with its own seed, so a vote can be run again alike."""
    if index == 0:
        return None
    return {**SAMPLED, "seed": index}


def _number(text: str) -> str | None:
    """``text`` as one canonical number ("1,234.50" → "1234.5", "7.0" → "7"), if it is one."""
    if not text or not _NUMBER.fullmatch(text) or not any(c.isdigit() for c in text):
        return None
    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def _text_key(text: str) -> str:
    text = " ".join(text.split())
    while True:  # "'42.'" and "\"Paris\"." both come down to their words
        stripped = text.strip().rstrip(_EDGE_PUNCTUATION).strip()
        if len(stripped) >= 2 and stripped[0] in _QUOTES and stripped[-1] in _QUOTES:
            stripped = stripped[1:-1]
        if stripped == text:
            break
        text = stripped
    return _number(text) or _one_number(text) or text.casefold()


_NUMBER_IN_TEXT = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?![\w.])")
SHORT = 6  # words: an answer this short that holds one number is that number ("7 days", "total: 7")


def _one_number(text: str) -> str | None:
    """The number a short answer gives, when it gives exactly one ("2168.03 dollars", "amount
    2168.03"): roots that word one number differently agree."""
    found = _NUMBER_IN_TEXT.findall(text)
    if len(found) != 1 or len(text.split()) > SHORT:
        return None
    return _number(found[0])


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def answer_key(answer: str | None, *, typed: bool = False) -> str | None:
    """What two answers must share to count as one: None for no answer. ``typed``: the answer is
    the JSON of a value of the run's ``output_type``, compared as canonical JSON."""
    if answer is None:
        return None
    if typed:
        try:
            value = json.loads(answer)
        except ValueError:
            return _text_key(answer)
        return json.dumps(_canonical(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    key = _text_key(answer)
    return key or None


@dataclass(frozen=True)
class Candidate:
    """One answer of the vote: as its first root gave it, and which roots gave it (their indexes)."""

    answer: str
    roots: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.roots)


@dataclass(frozen=True)
class Vote:
    """The count of k roots' answers. ``winner`` is the root whose run stands for the vote: the
    first root that gave the answer given most (the greedy root's, on a tie, since it is root 0).
    ``clear`` when more than half of all k roots gave that answer."""

    k: int
    candidates: tuple[Candidate, ...]  # most votes first; ties in the order of their first root
    winner: int
    clear: bool

    @property
    def top(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None

    def counts(self) -> list[dict[str, Any]]:
        """The candidates as plain data: each answer and how many roots gave it."""
        return [{"answer": c.answer, "count": c.count, "roots": list(c.roots)} for c in self.candidates]

    def text(self) -> str:
        """The ``low_confidence`` warning's line: the candidates and their counts."""
        answered = sum(c.count for c in self.candidates)
        shown = "; ".join(f"{_shown(c.answer)} ×{c.count}" for c in self.candidates) or "no answers"
        none = f"; no answer ×{self.k - answered}" if answered < self.k else ""
        top = self.top
        if top is None:
            return f"None of the {self.k} roots answered."
        tied = sum(c.count == top.count for c in self.candidates) > 1
        which = "the first root's of those given most" if tied else "the one given most"
        return (
            f"Low confidence: the {self.k} roots do not agree ({shown}{none}); the answer is {which} "
            f"({top.count} of {self.k}) and may be wrong."
        )


def _shown(answer: str, limit: int = 80) -> str:
    one = " ".join(answer.split())
    return repr(one if len(one) <= limit else one[: limit - 1] + "…")


def tally(answers: Sequence[str | None], *, typed: bool = False) -> Vote:
    """The vote of roots whose answers are ``answers`` (root 0, the greedy one, first; None for a
    root that ended without one)."""
    groups: dict[str, list[int]] = {}
    first: dict[str, str] = {}
    for index, answer in enumerate(answers):
        key = answer_key(answer, typed=typed)
        if key is None or answer is None:
            continue
        groups.setdefault(key, []).append(index)
        first.setdefault(key, answer)
    # Most votes first; on a tie, the greedy root's answer (its run is today's one root), then the
    # answer of the earlier root.
    ordered = sorted(groups, key=lambda key: (-len(groups[key]), groups[key][0]))
    candidates = tuple(Candidate(first[key], tuple(groups[key])) for key in ordered)
    k = len(answers)
    if not candidates:
        return Vote(k, (), 0, False)
    return Vote(k, candidates, candidates[0].roots[0], candidates[0].count * 2 > k)
