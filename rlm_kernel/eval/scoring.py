"""Scorers: how an answer compares with the expected one, as a number from 0 to 1.

- ``contains``: the expected string is in the answer (case and spacing ignored); S-NIAH's score.
- ``exact``: the same answer. Numbers compare as numbers (``1,234.50`` equals ``1234.5``, and
  ``6.77706027e+08`` equals ``677706027``; the last number in the answer is the one read); text
  compares without case, spacing, quotes, a final period or a code fence around it.
- ``numeric``: ``0.75 ** |answer - expected|`` (OOLONG's numeric score).
- ``approx``: 1 when the answer's last number is within 2% of the expected one (and always within
  1 of it: ``|answer - expected| <= max(1, 0.02 * |expected|)``), else 0; for counts that need a
  judgement on every item, where a few borderline items may go either way.
- ``oolong``: ``numeric`` for a number, else the label or comparison named in the answer must be
  the expected one (exactly one of the candidates may be named).
- ``f1_pairs``: F1 over the set of ``(a, b)`` pairs in the answer (OOLONG-Pairs); with no
  expected pair, 1 when the answer lists none, else 0.
- ``verbatim``: the answer is the expected text exactly, outer whitespace and one code fence aside.
- ``module:function`` (or a dotted path): your own ``fn(answer, expected) -> float``.

A missing answer (``None``) scores 0 everywhere.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import ConfigError

__all__ = ["SCORERS", "score", "resolve", "parse_number", "parse_pairs", "f1"]

Scorer = Callable[[str, Any], float]

_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_PAIR = re.compile(r"\(?\s*(\d+)\s*[,;]\s*(\d+)\s*\)?")
_FENCE = re.compile(r"^```[^\n]*\n(.*?)\n?```$", re.S)
_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def _unfence(text: str) -> str:
    text = text.strip()
    m = _FENCE.match(text)
    return m.group(1) if m else text


def parse_number(text: str) -> float | None:
    """The last number in the text (thousands separators and an exponent allowed), or None."""
    found = _NUMBER.findall(text)
    return float(found[-1].replace(",", "")) if found else None


def parse_pairs(text: str) -> set[tuple[int, int]]:
    """Every ``(a, b)`` in the text, as a pair with the lower number first."""
    pairs = set()
    for a, b in _PAIR.findall(text):
        x, y = int(a), int(b)
        if x != y:
            pairs.add((min(x, y), max(x, y)))
    return pairs


def f1(predicted: set, gold: set) -> float:
    if not gold:
        return 1.0 if not predicted else 0.0
    hits = len(predicted & gold)
    if hits == 0:
        return 0.0
    precision, recall = hits / len(predicted), hits / len(gold)
    return 2 * precision * recall / (precision + recall)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def contains(answer: str, expected: Any) -> float:
    return float(_norm(str(expected)) in _norm(answer))


def exact(answer: str, expected: Any) -> float:
    if _is_number(expected):
        got = parse_number(answer)
        return float(got is not None and math.isclose(got, float(expected), rel_tol=1e-9, abs_tol=1e-6))
    strip = "\"'`*. "
    return float(_norm(_unfence(answer)).strip(strip) == _norm(str(expected)).strip(strip))


def numeric(answer: str, expected: Any) -> float:
    got = parse_number(answer)
    if got is None:
        return 0.0
    return 0.75 ** abs(got - float(expected))


def approx(answer: str, expected: Any) -> float:
    got = parse_number(answer)
    if got is None:
        return 0.0
    want = float(expected)
    return float(abs(got - want) <= max(1.0, 0.02 * abs(want)))


def _named(answer: str, candidates: Iterable[str]) -> set[str]:
    text = _norm(answer)
    return {c for c in candidates if re.search(rf"\b{re.escape(c)}\b", text)}


def oolong(answer: str, expected: Any) -> float:
    if _is_number(expected):
        return numeric(answer, expected)
    from .oolong import COMPARISONS, LABELS

    expected = _norm(str(expected))
    pool = COMPARISONS if expected in COMPARISONS else LABELS.values()
    named = _named(answer, pool)
    return float(named == {expected})


def f1_pairs(answer: str, expected: Any) -> float:
    gold = {(min(a, b), max(a, b)) for a, b in expected}
    return f1(parse_pairs(answer), gold)


def verbatim(answer: str, expected: Any) -> float:
    return float(_unfence(answer) == str(expected).strip() or answer.strip() == str(expected).strip())


SCORERS: dict[str, Scorer] = {
    "contains": contains,
    "exact": exact,
    "numeric": numeric,
    "approx": approx,
    "oolong": oolong,
    "f1_pairs": f1_pairs,
    "verbatim": verbatim,
}


def resolve(name: str) -> Scorer:
    """A scorer by name, or your own by ``module:function`` / ``module.function``."""
    if name in SCORERS:
        return SCORERS[name]
    module, sep, attr = name.partition(":") if ":" in name else name.rpartition(".")
    if not sep or not module or not attr:
        raise ConfigError(
            f"Unknown scorer {name!r}: choose {', '.join(SCORERS)}, or give module:function of your own."
        )
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"Cannot load the scorer {name!r}: {exc}.") from None
    if not callable(fn):
        raise ConfigError(f"The scorer {name!r} is not a function.")
    return fn


def score(scorer: str, answer: str | None, expected: Any) -> float:
    """The answer's score, from 0 to 1; a missing answer scores 0."""
    if answer is None:
        return 0.0
    value = float(resolve(scorer)(answer, expected))
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise ConfigError(f"The scorer {scorer!r} returned {value}: scores must be from 0 to 1.")
    return value
