"""Helpers bound in the REPL beside the paper's names, for the ``small`` profile's models.

Small models copy the code of the worked example they are shown, so what that code does must
work whatever the context looks like. Two helpers carry that:

- ``search(query)`` ranks the passages of ``context`` (lines, and windows of long lines, of a
  string, a list of documents, a dict of files or records, JSON text, a DataFrame's rows) by BM25
  (bm25s) for the query's content words, and prints the best few, each with where it is and the
  heading above it. A model that pastes the whole question still searches for its content words;
  a model that prints whole lines or documents sees its output cut, a passage never is.
  What the question names (an identifier, a code such as ``S08``, a quoted phrase, a file's
  name) outranks its common words, and rare words outrank common ones.
- ``classify(items, labels)`` labels each item with a sub-call (few-shot, from examples the
  sub-model writes itself when none are given), for questions that count things by meaning.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .structured import csv_separator

__all__ = ["Helpers", "search_text", "named_terms", "classify_items"]

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
RARE_SHARE = 0.002  # a word in at most this share of the passages is rare: it outranks common ones
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


_COMPOUND = re.compile(r"[a-z][A-Z]|[A-Za-z0-9]_[A-Za-z0-9]")


def _index_tokens(text: str) -> list[str]:
    """A passage's words as the index keeps them: :func:`_tokens`, and the words of each
    compound identifier too (``get_user_name``, ``getUserName``: ``user``, ``name``)."""
    out = _tokens(text)
    if not _COMPOUND.search(text):
        return out
    for word in _TOKEN.findall(text):
        if _COMPOUND.search(word):
            out += _tokens(" ".join(p for p in _PARTS.findall(word) if len(p) > 2))
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


def looks_like_csv(text: str) -> bool:
    """A header row of field names, then rows with as many separators."""
    return csv_separator(text) is not None


class _Index:
    """BM25 (bm25s) over the passages of one context, built on the first search and kept."""

    def __init__(self, context: Any) -> None:
        import bm25s

        self.passages = _passages(context)
        self.retriever = bm25s.BM25()
        # A passage's key (a file's path, a document's title) counts as its words too.
        keys = {_key(p) for p in self.passages}
        key_words = {k: _tokens(k[len("context") :]) for k in keys if k.startswith("context[")}
        corpus = [_index_tokens(p.text) + key_words.get(_key(p), []) or [""] for p in self.passages]
        self.vocabulary = {t for tokens in corpus for t in tokens}
        self.retriever.index(corpus, show_progress=False)

    def scores(self, terms: list[str]) -> Any:
        return self.retriever.get_scores(terms)

    def weighted(self, terms: list[str]) -> tuple[Any, Any]:
        """Each passage's BM25 score, with each term's share weighted once more by its rarity (its
        IDF), and how many of the rare terms (in at most ``RARE_SHARE`` of the passages, or two)
        it holds."""
        import numpy as np

        total = len(self.passages)
        rare_at_most = max(2, int(total * RARE_SHARE))
        scores = np.zeros(total, dtype=np.float64)
        rare = np.zeros(total, dtype=np.int32)
        for term in terms:
            part = self.retriever.get_scores([term])
            held = part > 0
            df = int(held.sum())  # the passages that hold it
            scores += part * math.log(1 + (total - df + 0.5) / (df + 0.5))
            if df <= rare_at_most:
                rare += held
        return scores, rare

    def holding(self, pattern: re.Pattern[str], words: list[str]) -> set[int]:
        """The passages (among those that score for its words) that hold a named term as it is
        written: an identifier whole, a quoted phrase's words in order; a file's path counts."""
        return {
            int(i)
            for i in self.retriever.get_scores(words).nonzero()[0]
            if pattern.search(self.passages[i].text) or pattern.search(_key(self.passages[i]))
        }


def _key(p: _Passage) -> str:
    return p.where.split(", ")[0]


@dataclass(frozen=True)
class _Named:
    """A term the question names: an identifier, a code or a quoted phrase."""

    text: str
    pattern: re.Pattern[str]
    tokens: tuple[str, ...]  # as the index keeps its words
    parts: tuple[str, ...]  # an identifier's words (``IM_A_TEAPOT``: ``teapot``), for when it is not found

    def in_index(self, vocabulary: set[str]) -> tuple[re.Pattern[str], list[str]] | None:
        """How to find it in this index: as written, else by its words in order (``getUserName``
        finds ``get_user_name``, ``IM_A_TEAPOT`` finds "I'm a teapot"); None when neither is there."""
        if self.tokens and all(t in vocabulary for t in self.tokens):
            return self.pattern, list(self.tokens)
        words = [t for p in self.parts for t in _tokens(p)]
        if self.parts and all(t in vocabulary for t in words):
            between = r"[\W_]*(?:[a-z0-9]{1,2}[\W_]+)*"
            return re.compile(between.join(re.escape(p) for p in self.parts), re.IGNORECASE), words
        return None


_QUOTED = re.compile(r""""([^"\n]{2,80})"|“([^”\n]{2,80})”|`([^`\n]{1,80})`|(?<!\w)'([^'\n]{2,80})'(?!\w)""")
_PATH = re.compile(r"[\w-]+(?:[./][\w-]+)+")  # a dotted name, a path, a version
_BARE = re.compile(r"\w+(?:-\w+)*")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _is_identifier(word: str, shouting: bool) -> bool:
    """An identifier or a code, by its form: snake_case, CamelCase, UPPER_CASE, letters with
    digits (``S08``, ``QX-4821``)."""
    letters = re.sub(r"[^A-Za-z]", "", word)
    if not letters:  # a bare number is a rare word at most: "the 300 files" names no file
        return False
    if re.search(r"\d", word) or "_" in word.strip("_") or _CAMEL.search(word):
        return True
    return not shouting and len(letters) >= 2 and word.isupper()


def named_terms(query: str) -> list[_Named]:
    """What a question names, as written: quoted phrases, dotted names and paths (``config.yaml``,
    ``pkg/util.py``), identifiers and codes. The words around them are searched as usual."""
    found: list[str] = []
    rest = query
    for m in _QUOTED.finditer(query):
        found.append(next(g for g in m.groups() if g is not None).strip())
        rest = rest.replace(m.group(0), " ")
    for m in _PATH.finditer(rest):
        word = m.group(0)
        named = re.search(r"[A-Za-z]", word) and any(len(p) >= 2 for p in re.split(r"[./]", word))
        if named or word.count(".") >= 2:  # not ``e.g``; a version such as ``2.4.1``
            found.append(word)
            rest = rest.replace(word, " ")
    words = _BARE.findall(rest)
    alphabetic = [w for w in words if w.isalpha()]
    shouting = len(alphabetic) > 1 and sum(w.isupper() for w in alphabetic) * 2 > len(alphabetic)
    found += [w for w in words if _is_identifier(w, shouting)]
    out = []
    for text in dict.fromkeys(t for t in found if t):
        words_of = re.findall(r"\w+", text)
        if not words_of:
            continue
        body = r"\W+".join(re.escape(w) for w in words_of) if not _PATH.fullmatch(text) else re.escape(text)
        pattern = re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)
        parts = [p.lower() for w in words_of for p in _PARTS.findall(w)]
        parts = [p for p in parts if len(p) > 2 and p not in _STOP]
        out.append(_Named(text, pattern, tuple(dict.fromkeys(_tokens(text))), tuple(dict.fromkeys(parts))))
    return out


def _wanted(terms: list[str], names: list[_Named], vocabulary: Container[str]) -> list[str]:
    """The tokens to look for: the content words', then the named terms'; an identifier not found
    whole is looked for by its words."""
    wanted = list(dict.fromkeys(t for term in [*terms, *(m.text for m in names)] for t in _tokens(term)))
    for name in names:
        if not all(t in vocabulary for t in name.tokens):
            wanted += [t for p in name.parts for t in _tokens(p) if t not in wanted]
    return wanted


def search_text(context: Any, query: str, n: int = 3, index: _Index | None = None) -> str:
    """The report ``search`` prints: the ``n`` passages that BM25 ranks best for the query's
    content words (none far weaker than the best), each with where it is and its heading.

    What the question names (an identifier such as ``IM_A_TEAPOT`` or ``S08``, a quoted phrase, a
    file's name) comes first: when some passage holds it as written, only passages that hold it
    are shown, those holding most of the named terms first. Within that, rare words outrank common
    ones (BM25 with each word's share weighted again by its rarity)."""
    terms = terms_of(query)
    names = named_terms(query)
    if not terms and not names:
        return "search() needs words to look for, such as search('archive room code')."
    index = index or _Index(context)
    wanted = _wanted(terms, names, index.vocabulary)
    found = [t for t in wanted if t in index.vocabulary]
    if not found or not index.passages:
        looked = ", ".join(repr(t) for t in terms or wanted)
        return f"No match for {looked}. Try other words from the question."
    scores, rare = index.weighted(found)
    hits = scores.nonzero()[0]
    matching = len({(index.passages[i].where, index.passages[i].start // PASSAGE_CHARS) for i in hits})
    named: Counter[int] = Counter()
    for name in names:
        if (how := name.in_index(index.vocabulary)) is not None:
            named.update(index.holding(*how))
    plain = index.scores(found)  # BM25 as it is: the order within a rank
    rank = {int(i): k for k, i in enumerate(plain.argsort()[::-1])}
    if named:  # only passages that hold what the question names, most of it first
        order = sorted(named, key=lambda i: (-named[i], -rare[i], rank[i]))[: n * 4]
        order = [i for i in order if named[i] == named[order[0]]]
    else:  # those that hold most of its rare words, if it has any here; the best of them first
        tier = hits[rare[hits] == rare.max()]
        order = sorted((int(i) for i in tier), key=rank.__getitem__)[: n * 4]
    first = [t for name in names for t in name.tokens if t in found] + found
    shown: list[_Passage] = []
    for i in order:
        if scores[i] <= 0 or len(shown) == n or (not named and scores[i] < WEAKER * scores[order[0]]):
            break  # the rest are counted, not shown: far weaker than the best
        p = index.passages[i]
        if not any(p.where == q.where and abs(p.start - q.start) < PASSAGE_CHARS for q in shown):
            shown.append(p)  # else another window of a line already shown
    many = f"{matching} passages match" if matching > 1 else "1 passage matches"
    head = f"search({query!r}): {many}" + (f"; the best {len(shown)}" if matching > len(shown) else "")
    missing = [t for t in wanted if t not in index.vocabulary]
    note = f" (no match for {', '.join(repr(t) for t in missing)})" if missing else ""
    lines = [
        f"[{k}] {p.where}{f', character {p.start:,}' if p.window else ''}:{_hit(p, first)}"
        for k, p in enumerate(shown, 1)
    ]
    return "\n".join([head + note + ":", *lines])


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

    def bound(self) -> dict[str, Callable[..., Any]]:
        names: dict[str, Callable[..., Any]] = {"search": self.search}
        if self._asker is not None:
            names["classify"] = self.classify
        return names
