"""Helpers bound in the REPL beside the paper's names, for the ``small`` profile's models.

Small models copy the code of the worked example they are shown, so what that code does must
work whatever the context looks like. Two helpers carry that:

- ``search(query)`` finds the passages of ``context`` (a string of any length, lines, a list of
  documents, a dict of records, JSON text) that hold the most of the query's words, rarest words
  counting most, and prints a window around each, with where it is. A model that prints whole
  lines or whole documents sees its output cut; a window never is.
- ``table()`` reads ``context`` as rows whatever holds them (a list of dicts, a dict of dicts, CSV
  or JSON text), numbers as numbers, so that counting code is the same for every container; the
  rows answer ``where(field=value, ...)``, ``sum(field)`` and ``most_common(field)``, which a
  small model writes more reliably than comprehensions.
- ``classify(items, labels)`` labels each item with a sub-call (few-shot, from examples the
  sub-model writes itself when none are given), for questions that count things by meaning.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

__all__ = ["Helpers", "Rows", "search_text", "rows_of"]

_STOP = frozenset(
    """a an the of to in on for at by with from and or is are was were be been being what which who
    whom whose when where why how do does did you your must has have had that this these those it its
    as into about than then there their they them we our us i me my he she his her not no can could
    should would will shall may might get give gets given one any all some many much there here
    tell say find please answer question value number data text""".split()
)
_WORD = re.compile(r"[\w][\w'.-]*[\w]|\w")


def terms_of(query: str) -> list[str]:
    """The words of a query worth looking for: no stop words, the rest lower-cased, once each."""
    words = [re.sub(r"'s$", "", w.strip(".'-").lower()) for w in _WORD.findall(query)]
    terms = [w for w in words if w and w not in _STOP and (len(w) > 2 or w.isdigit())]
    return list(dict.fromkeys(terms)) or [w for w in words if w][:3]


def _segments(context: Any) -> Iterator[tuple[str, str]]:
    """(where, text) pieces to search: the string itself, or each item of a list or dict."""
    if isinstance(context, str):
        yield "context", context
    elif isinstance(context, Mapping):
        for key, value in context.items():
            yield f"context[{key!r}]", value if isinstance(value, str) else _dump(value)
    elif isinstance(context, (list, tuple)):
        for i, value in enumerate(context):
            yield f"context[{i}]", value if isinstance(value, str) else _dump(value)
    else:
        yield "context", str(context)


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def search_text(context: Any, query: str, n: int = 3, width: int = 150) -> str:
    """The report ``search`` prints: the ``n`` best windows of about ``2 * width`` characters."""
    terms = terms_of(query)
    if not terms:
        return "search() needs words to look for, such as search('archive room code')."
    segments = list(_segments(context))
    lowered = [(where, text, text.lower()) for where, text in segments]
    counts = {t: sum(low.count(t) for _, _, low in lowered) for t in terms}
    found = [t for t in terms if counts[t]]
    if not found:
        return f"No match for {', '.join(repr(t) for t in terms)}. Try other words from the question."
    weight = {t: 1.0 / math.log2(2 + counts[t]) for t in found}
    candidates: list[tuple[float, int, int, str, str]] = []
    for rank, (where, text, low) in enumerate(lowered):
        for term in sorted(found, key=counts.get)[:3]:  # windows are centred on the rarer words
            start = low.find(term)
            seen = 0
            while start != -1 and seen < 200:
                lo, hi = max(0, start - width), min(len(text), start + len(term) + width)
                window = low[lo:hi]
                score = sum(weight[t] for t in found if t in window)
                candidates.append((score, -rank, lo, where, text))
                start = low.find(term, start + 1)
                seen += 1
    candidates.sort(key=lambda c: (c[0], c[1], -c[2]), reverse=True)
    best = candidates[0][0]
    shown: list[tuple[str, int, str]] = []
    passages: set[tuple[str, int]] = set()
    for score, _rank, lo, where, text in candidates:
        passages.add((where, lo // (2 * width)))
        if len(shown) == n or score < 0.6 * best:
            continue  # counted, not shown: weaker than the best by far
        start, end = _sentence(text, lo, lo + 2 * width, found, weight)
        if any(w == where and abs(start - s) < width for w, s, _ in shown):
            continue  # the same passage again
        piece = " ".join(text[start:end].split())
        at = where if len(text) <= 2 * width + 20 else f"{where}, character {start:,}"
        shown.append((where, start, f"[{len(shown) + 1}] {at}: {piece}"))
    many = f"{len(passages)} passages match" if len(passages) > 1 else "1 passage matches"
    head = f"search({query!r}): {many}" + (f"; the best {len(shown)}" if len(passages) > len(shown) else "")
    missing = [t for t in terms if not counts[t]]
    note = f" (no match for {', '.join(repr(t) for t in missing)})" if missing else ""
    return "\n".join([head + note + ":", *(line for _, _, line in shown)])


_SENTENCE = re.compile(r"[^\n]*?(?:[.!?](?=\s|$)|\n|$)")  # "3346.81" is not a full stop
_LONGEST = 400  # characters of one shown passage


def _sentence(text: str, lo: int, hi: int, found: list[str], weight: dict[str, float]) -> tuple[int, int]:
    """The sentence (or line) of ``text`` near ``[lo, hi)`` that holds the most of the words, as
    (start, end); a very long one is cut to a window around its words. A sentence that a question
    is about is what a small model should read, not a window that starts or ends mid-way."""
    a, b = max(0, lo - _LONGEST), min(len(text), hi + _LONGEST)
    low = text[a:b].lower()
    best: tuple[float, int, int] = (-1.0, lo, hi)
    for m in _SENTENCE.finditer(low):
        if m.end() <= lo - a or m.start() >= hi - a or not m.group().strip():
            continue
        score = sum(weight[t] for t in found if t in m.group())
        if score > best[0]:
            best = (score, a + m.start(), a + m.end())
    _, start, end = best
    while start < end and text[start].isspace():
        start += 1
    if end - start > _LONGEST:  # one line of JSON, say: a window around its first matched word
        first = min(
            (text.lower().find(t, start, end) for t in found if t in text[start:end].lower()), default=start
        )
        start = max(start, first - _LONGEST // 3)
        end = min(end, start + _LONGEST)
    return start, end


def _number(value: str) -> Any:
    text = value.strip()
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    if re.fullmatch(r"[-+]?(\d+\.\d*|\.\d+|\d+)(e[-+]?\d+)?", text, re.IGNORECASE):
        return float(text)
    return value


_COMPARE = re.compile(r"^\s*(>=|<=|>|<|!=)\s*(-?\d+(?:\.\d+)?)\s*$")
_DATE_PREFIX = re.compile(r"^[\d][\d:/ T-]*$")


def _matches(value: Any, wanted: Any) -> bool:
    """Whether a field's value meets a condition of ``where``: equal (strings without case), a
    date or time that starts with the given one (``"2024-03"``), or ``">4"``, ``"<=10"``, ``"!=0"``."""
    if isinstance(wanted, str):
        m = _COMPARE.match(wanted)
        if m and isinstance(value, (int, float)) and not isinstance(value, bool):
            op, limit = m.group(1), float(m.group(2))
            return {">": value > limit, "<": value < limit, ">=": value >= limit, "<=": value <= limit,
                    "!=": value != limit}[op]  # fmt: skip
        if isinstance(value, str):
            if value.casefold() == wanted.casefold():
                return True
            return bool(_DATE_PREFIX.match(wanted)) and value.startswith(wanted)
        return str(value) == wanted
    return value == wanted


class Rows(list):
    """Rows as dicts, with the questions people ask of them: ``where``, ``sum``, ``most_common``."""

    def where(self, **conditions: Any) -> Rows:
        """The rows whose fields meet every condition: ``rows.where(city="Graz", rating=">4")``."""
        return Rows(r for r in self if all(_matches(r.get(k), v) for k, v in conditions.items()))

    def sum(self, field: str) -> float:
        """The total of a field over these rows (rounded to the cent)."""
        return round(sum(float(r[field]) for r in self if isinstance(r.get(field), (int, float))), 2)

    def most_common(self, field: str) -> Any:
        """The value of ``field`` that the most rows have."""
        counts = Counter(r.get(field) for r in self)
        return counts.most_common(1)[0][0] if counts else None


def rows_of(data: Any) -> Rows:
    """``data`` as a list of dicts, numbers as numbers. Raises TypeError when it holds no rows."""
    if isinstance(data, str):
        text = data.strip()
        if text[:1] in "[{":
            try:
                return rows_of(json.loads(text))
            except json.JSONDecodeError:
                pass
        sample = text[:4096]
        try:
            dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
        except csv.Error:
            raise TypeError("table() found no rows in this text: it reads CSV or JSON text.") from None
        reader = csv.DictReader(io.StringIO(text), dialect=dialect)
        return Rows({k: _number(v) if isinstance(v, str) else v for k, v in row.items()} for row in reader)
    if isinstance(data, Mapping):
        values = list(data.values())
        if values and all(isinstance(v, Mapping) for v in values):
            return Rows({"key": k, **v} for k, v in data.items())
        raise TypeError("table() reads a dict whose values are dicts (records); this one's are not.")
    if isinstance(data, (list, tuple)) and all(isinstance(v, Mapping) for v in data):
        return Rows(dict(v) for v in data)
    raise TypeError(
        f"table() reads a list of dicts, a dict of dicts, CSV or JSON text; got {type(data).__name__}."
    )


class _Asker(Protocol):
    def ask_batched(self, conversations: Sequence[list[Any]], max_tokens: int | None = None) -> list[str]: ...


_LIST_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*")


def _example_prompt(label: str, sample: list[str]) -> list[dict[str, str]]:
    shown = "\n".join(sample)
    return [
        {
            "role": "user",
            "content": f"Here are a few items of a list:\n{shown}\n\nWrite three new items of the same kind "
            f"whose label is '{label}', one per line, with nothing else.",
        }
    ]


def _examples(reply: str, label: str) -> list[tuple[str, str]]:
    lines = [_LIST_ITEM.sub("", line).strip().strip('"') for line in reply.splitlines()]
    keep = [x for x in lines if x and not x.endswith(":") and not x.lower().startswith(("sure", "here"))]
    return [(x, label) for x in keep[:3]]


def _label_of(reply: str, labels: Sequence[str]) -> str:
    """The label a reply names: the one it starts with, else the one it shares most words with."""
    text = reply.strip().strip(".\"'").lower()
    for label in sorted(labels, key=len, reverse=True):
        if text.startswith(label.lower()):
            return label
    words = set(re.findall(r"\w+", text))
    scored = [(len(words & set(re.findall(r"\w+", label.lower()))), label) for label in labels]
    best = max(scored)
    return best[1] if best[0] else "unknown"


def classify_items(
    asker: _Asker,
    items: Sequence[Any],
    labels: Sequence[str],
    examples: Sequence[tuple[str, str]] | None = None,
) -> list[str]:
    """One label for each item, from sub-calls that answer with a label only. Small models label
    far better from examples than from label names alone, so without ``examples`` the sub-model
    first writes three items of each label, modelled on the real ones; then each item is one
    short sub-call, all in one batch."""
    labels = [str(label) for label in labels]
    texts = [str(item)[:600] for item in items]
    if not texts:
        return []
    if examples is None:
        sample = texts[:: max(1, len(texts) // 3)][:3]
        replies = asker.ask_batched([_example_prompt(label, sample) for label in labels], max_tokens=160)
        per_label = [_examples(reply, label) for reply, label in zip(replies, labels, strict=True)]
        examples = [pair for row in itertools.zip_longest(*per_label) for pair in row if pair]  # interleaved
    system = f"Label the text. Answer with one of these labels only: {', '.join(labels)}."
    shots: list[dict[str, str]] = [{"role": "system", "content": system}]
    for text, label in examples:
        shots += [{"role": "user", "content": str(text)}, {"role": "assistant", "content": str(label)}]
    replies = asker.ask_batched([[*shots, {"role": "user", "content": t}] for t in texts], max_tokens=12)
    return [_label_of(reply, labels) for reply in replies]


class Helpers:
    """The helpers of one run, bound to its context (and, for ``classify``, to its sub-calls)."""

    def __init__(self, context: Any, asker: _Asker | None = None) -> None:
        self._context = context
        self._asker = asker

    def classify(
        self, items: Sequence[Any], labels: Sequence[str], examples: Sequence[tuple[str, str]] | None = None
    ) -> list[str]:
        """A label for each item (a line, a document, a record), by the sub-model: a list in the
        items' order. ``examples`` are (item, label) pairs to show it; without, it makes its own."""
        if self._asker is None:
            raise RuntimeError("classify() needs sub-calls, which this run does not have.")
        if isinstance(items, str):
            raise TypeError("classify() takes a list of items; for lines of text use context.splitlines().")
        return classify_items(self._asker, list(items), labels, examples)

    def search(self, query: str, n: int = 3, width: int = 150) -> None:
        """Print the passages of ``context`` with the most words of ``query``, best first."""
        print(search_text(self._context, str(query), n=n, width=width))

    def table(self, data: Any = None) -> Rows:
        """``context`` (or ``data``) as rows (dicts): of a CSV or JSON text, a list or a dict."""
        return rows_of(self._context if data is None else data)

    def bound(self) -> dict[str, Callable[..., Any]]:
        names = {"search": self.search, "table": self.table}
        if self._asker is not None:
            names["classify"] = self.classify
        return names
