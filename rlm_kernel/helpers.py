"""Helpers bound in the REPL beside the paper's names, for the ``small`` profile's models.

Small models copy the code of the worked example they are shown, so what that code does must
work whatever the context looks like. Two helpers carry that:

- ``search(query)`` ranks the passages of ``context`` (lines, and windows of long lines, of a
  string, a list of documents, a dict of files or records, JSON text, a DataFrame's rows) by BM25
  (bm25s) for the query's content words, and prints the best few, each with where it is and the
  heading above it. A model that pastes the whole question still searches for its content words;
  a model that prints whole lines or documents sees its output cut, a passage never is.
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
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
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
    """(where, text) pieces to search: the string itself, each item of a list or dict, or each
    row of a DataFrame (as ``column=value`` pairs)."""
    if isinstance(context, str):
        yield "context", context
    elif isinstance(context, Mapping):
        for key, value in context.items():
            yield f"context[{key!r}]", value if isinstance(value, str) else _dump(value)
    elif isinstance(context, (list, tuple)):
        for i, value in enumerate(context):
            yield f"context[{i}]", value if isinstance(value, str) else _dump(value)
    elif hasattr(context, "iterrows") and hasattr(context, "columns"):  # a pandas DataFrame
        for index, row in context.iterrows():
            yield f"row {index}", ", ".join(f"{k}={v}" for k, v in row.items())
    else:
        yield "context", str(context)


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


_TOKEN = re.compile(r"\w+")
PASSAGE_CHARS = 300  # a long line is searched in windows of this size, half overlapping
WEAKER = 0.6  # a hit scoring under this share of the best one is not shown
_SHOWN = 400  # characters of one hit shown at most


def _tokens(text: str) -> list[str]:
    """Words as the index keeps them: lower case, a plural's ``s`` dropped, numbers whole (so
    ``53`` does not match ``853``)."""
    out = []
    for word in _TOKEN.findall(text.lower()):
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss") and not word.isdigit():
            word = word[:-1]
        out.append(word)
    return out


@dataclass(frozen=True)
class _Passage:
    where: str  # context, line 3 · context['key'], line 8 · context[3] · row 17
    text: str
    heading: str  # the nearest heading above it, or a table's header row
    start: int = 0  # where a window of a long line starts in it
    window: bool = False  # a window of a long line, not the whole line


_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s+\S|\d+(?:\.\d+)*\.?\s+[A-Z]|[A-Z][^.!?]*:$|[A-Z][A-Z0-9 ,&'-]{3,}$|=+ .* =+$)"
)


def _passages(context: Any) -> list[_Passage]:
    """Lines, and windows of long lines: what ``search`` ranks and shows, each with the heading
    above it (a numbered or marked line, a line in capitals) or, in CSV text, the header row."""
    out = []
    step = PASSAGE_CHARS // 2
    for where, text in _segments(context):
        lines = text.split("\n")
        table = len(lines) > 2 and looks_like_csv(text)
        heading = lines[0] if table else ""
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            at = f"{where}, line {number}" if len(lines) > 1 else where
            if len(line) <= PASSAGE_CHARS:
                out.append(_Passage(at, line, heading if heading != line else ""))
                if not table and len(line) <= 60 and _HEADING.match(line):
                    heading = line.strip()
                continue
            for start in range(0, len(line) - step, step):
                out.append(_Passage(at, line[start : start + PASSAGE_CHARS], heading, start, True))
    return out


_HEADER_FIELD = re.compile(r"[A-Za-z_][\w .-]{0,40}")


def looks_like_csv(text: str) -> bool:
    """A header row of field names, then rows with as many separators."""
    head = text[:4096].splitlines()[:6]
    if len(head) < 3:
        return False
    for sep in (",", "\t", ";", "|"):
        counts = {line.count(sep) for line in head[:-1]}  # the last line may be cut
        if len(counts) == 1 and counts.pop() >= 1:
            names = [field.strip().strip('"') for field in head[0].split(sep)]
            return all(_HEADER_FIELD.fullmatch(name) for name in names)
    return False


class _Index:
    """BM25 (bm25s) over the passages of one context, built on the first search and kept."""

    def __init__(self, context: Any) -> None:
        import bm25s

        self.passages = _passages(context)
        self.retriever = bm25s.BM25()
        # A passage's key (a file's path, a document's title) counts as its words too.
        keys = {p.where.split(", ")[0] for p in self.passages}
        key_words = {k: _tokens(k[len("context") :]) for k in keys if k.startswith("context[")}
        corpus = [_tokens(p.text) + key_words.get(p.where.split(", ")[0], []) or [""] for p in self.passages]
        self.vocabulary = {t for tokens in corpus for t in tokens}
        self.retriever.index(corpus, show_progress=False)

    def scores(self, terms: list[str]) -> Any:
        return self.retriever.get_scores(terms)


def search_text(context: Any, query: str, n: int = 3, index: _Index | None = None) -> str:
    """The report ``search`` prints: the ``n`` passages that BM25 ranks best for the query's
    content words (none far weaker than the best), each with where it is and its heading."""
    terms = terms_of(query)
    if not terms:
        return "search() needs words to look for, such as search('archive room code')."
    index = index or _Index(context)
    wanted = list(dict.fromkeys(t for term in terms for t in _tokens(term)))
    found = [t for t in wanted if t in index.vocabulary]
    if not found or not index.passages:
        return f"No match for {', '.join(repr(t) for t in terms)}. Try other words from the question."
    scores = index.scores(found)
    hits = scores.nonzero()[0]
    matching = len({(index.passages[i].where, index.passages[i].start // PASSAGE_CHARS) for i in hits})
    shown: list[_Passage] = []
    order = scores.argsort()[::-1][: n * 4]
    for i in order:
        if scores[i] <= 0 or len(shown) == n or scores[i] < WEAKER * scores[order[0]]:
            break  # the rest are counted, not shown: far weaker than the best
        p = index.passages[i]
        if not any(p.where == q.where and abs(p.start - q.start) < PASSAGE_CHARS for q in shown):
            shown.append(p)  # else another window of a line already shown
    many = f"{matching} passages match" if matching > 1 else "1 passage matches"
    head = f"search({query!r}): {many}" + (f"; the best {len(shown)}" if matching > len(shown) else "")
    missing = [t for t in wanted if t not in index.vocabulary]
    note = f" (no match for {', '.join(repr(t) for t in missing)})" if missing else ""
    hits = [
        f"[{k}] {p.where}{f', character {p.start:,}' if p.window else ''}:{_hit(p, found)}"
        for k, p in enumerate(shown, 1)
    ]
    return "\n".join([head + note + ":", *hits])


def _hit(p: _Passage, found: list[str]) -> str:
    """A passage as shown: under its heading, if it has one, with a very long one cut around
    its first matched word."""
    text = " ".join(p.text.split())
    if p.start and " " in text:
        text = text[text.index(" ") + 1 :]  # a window starts mid-word
    if len(text) > _SHOWN:
        low = text.lower()
        first = min((low.find(t) for t in found if t in low), default=0)
        text = text[max(0, first - _SHOWN // 3) :][:_SHOWN]
    heading = " ".join(p.heading.split())[:120]
    return f" (under {heading!r}) {text}" if heading else f" {text}"


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
        self._index: _Index | None = None

    def classify(
        self, items: Sequence[Any], labels: Sequence[str], examples: Sequence[tuple[str, str]] | None = None
    ) -> list[str]:
        """A label for each item (a line, a document, a record), by the sub-model: a list in the
        items' order. ``examples`` are (item, label) pairs to show it; without, it makes its own."""
        if self._asker is None:
            raise RuntimeError("classify() needs sub-calls, which this run does not have.")
        if isinstance(items, str):
            raise TypeError("classify() takes a list of items; for lines of text use context.splitlines().")
        if isinstance(labels, str) or not isinstance(labels, Iterable) or len(labels := list(labels)) < 2:
            raise TypeError(
                "classify() takes the labels to choose from as a list of two or more strings, "
                f"e.g. classify(items, ['praise', 'complaint']); got {labels!r:.80}."
            )
        return classify_items(self._asker, list(items), labels, examples)

    def search(self, query: str, n: int = 3) -> None:
        """Print the passages of ``context`` that hold the query's words, best first."""
        if self._index is None:
            self._index = _Index(self._context)
        print(search_text(self._context, str(query), n=n, index=self._index))

    def table(self, data: Any = None) -> Rows:
        """``context`` (or ``data``) as rows (dicts): of a CSV or JSON text, a list or a dict."""
        return rows_of(self._context if data is None else data)

    def bound(self) -> dict[str, Callable[..., Any]]:
        names = {"search": self.search, "table": self.table}
        if self._asker is not None:
            names["classify"] = self.classify
        return names
