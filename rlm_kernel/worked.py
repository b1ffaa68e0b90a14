"""Worked examples for the ``small`` profile: one per shape of context, given as earlier turns.

Small models copy the form of the example they are shown (``shared/REFERENCE.md``: the 0.5B
model printed whole lines because its example did, and invented an answer when the needle was cut
off). So the example is chosen to match the real context's shape, and its code is code that works
on any context of that shape: ``search(...)`` for text (one long line, many lines, documents,
records with text in them) and ``table()`` for rows (a list or dict of flat records, CSV text).
The example's outputs are made by the real helpers on a made-up context, so they always look
exactly like what the model will see. None of it is drawn from the evaluation's tasks.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from itertools import islice
from typing import Any

from .helpers import rows_of, search_text
from .lm.base import Message

__all__ = ["SHAPES", "shape_of", "example_turns", "reply_start"]

SHAPES = ("text", "lines", "documents", "table", "other")
_SHORT = 120  # a field longer than this is text to search, not a value to count


def _flat(item: Any) -> bool:
    return isinstance(item, Mapping) and all(
        not isinstance(v, str) or len(v) <= _SHORT for v in item.values()
    )


_HEADER_FIELD = re.compile(r"[A-Za-z_][\w .-]{0,40}")


def _looks_like_csv(text: str) -> bool:
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


def shape_of(context: Any) -> str:
    """What the context looks like to code: ``text`` (a long string with few line breaks),
    ``lines``, ``documents`` (items holding text), ``table`` (flat records), or ``other``."""
    if isinstance(context, str):
        if _looks_like_csv(context):
            return "table"
        stripped = context.lstrip()[:1]
        if stripped in ("[", "{") and len(context) < 64_000_000:
            try:
                parsed = json.loads(context)
            except ValueError:
                parsed = None
            if parsed is not None:
                inner = shape_of(parsed)
                if inner == "table":
                    return "table"
        lines = context.count("\n") + 1
        return "lines" if lines >= 20 and len(context) / lines < 2000 else "text"
    if isinstance(context, Mapping):
        values = list(islice(context.values(), 20))
    elif isinstance(context, Sequence) and not isinstance(context, (bytes, bytearray)):
        values = list(islice(context, 20))  # a deque takes no slice
    else:
        return "other"
    if values and all(_flat(v) for v in values):
        return "table"
    return "documents" if values else "other"


# -- the made-up contexts of the examples ---------------------------------------------------

_FILLER = [
    "The harbour office opens at {n} on weekdays.",
    "Tickets for the museum boat cost {n} crowns this season.",
    "Road works on Mill Street will last until week {n}.",
    "The council approved {n} new benches for the park.",
    "Fog delayed the morning crossing by {n} minutes.",
    "A new bakery opened near the old fish market.",
    "The library extends its hours during the festival.",
    "Volunteers planted {n} trees along the canal.",
]
# Questions about rows, each with the code that answers it: the usual kinds of counting question.
_TABLE_EXAMPLES = [
    (
        "What is the total revenue of the shops in Graz?",
        'rows = table()\nn = rows.where(city="Graz").sum("revenue")\nprint(n)',
    ),
    ("How many shops opened in May 2021?", 'rows = table()\nn = len(rows.where(opened="2021-05"))\nprint(n)'),
    ("Which city has the most shops?", 'rows = table()\nn = rows.most_common("city")\nprint(n)'),
    (
        "How many cafes in Porto are open?",
        'rows = table()\nn = len(rows.where(city="Porto", kind="cafe", status="open"))\nprint(n)',
    ),
    ("How many shops are closed?", 'rows = table()\nn = len(rows.where(status="closed"))\nprint(n)'),
]
# Counting by a label the data does not show: each item labelled by a sub-call.
_MESSAGES = [
    ("praise", "Thank you, the new timetable works well."),
    ("complaint", "The parcel arrived broken and nobody answered the phone."),
    ("question", "Does the night bus stop at the hospital?"),
    ("complaint", "Third delay this week on line 4."),
    ("praise", "Friendly driver on the 7:40 this morning."),
    ("question", "Can I bring a bicycle on the ferry?"),
]
_LABELS = ["praise", "complaint", "question"]
_CLASSIFY_QUESTION = (
    "How many of the messages should be labelled 'complaint'? The labels are not in the data: "
    "infer each message's label from its meaning. The labels: praise, complaint, question."
)
_CLASSIFY_CODE = (
    "from collections import Counter\nlines = context.splitlines()\n"
    f"labels = classify(lines, {_LABELS!r})\ncounts = Counter(labels)\nprint(counts)"
)
_LABELLED = re.compile(r"\blabel|classif|categor", re.IGNORECASE)
_ANSWER = 'answer["content"] = str(n)\nanswer["ready"] = True'
_NEEDLE = "The ferry to Norrholm leaves from pier 14."
_QUESTION = "From which pier does the ferry to Norrholm leave?"


def _sentences(count: int, needle_at: int) -> list[str]:
    out = [_FILLER[i % len(_FILLER)].format(n=(i * 37) % 90 + 7) for i in range(count)]
    out.insert(needle_at, _NEEDLE)
    return out


@cache
def _context(shape: str) -> Any:
    if shape == "documents":
        docs = [" ".join(_sentences(12, 99)) for _ in range(40)]
        docs[23] = " ".join(_sentences(12, 7))
        return docs
    if shape == "table":
        cities, kinds = ["Lyon", "Porto", "Graz", "Turku"], ["bakery", "cafe", "bookshop"]
        states = ["open", "open", "closed", "moved"]
        return [
            {
                "id": i + 1,
                "city": cities[i % 4],
                "kind": kinds[i * 7 % 3],
                "status": states[i * 5 % 4],
                "revenue": round(800 + (i * 37 % 400) * 3.25, 2),
                "opened": f"{2019 + i % 5}-{i * 5 % 12 + 1:02d}-{i % 27 + 1:02d}",
            }
            for i in range(1250)
        ]
    if shape == "messages":
        lines = [
            f"[2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}] #{5000 + i * 7}: {_MESSAGES[(i * i + i // 3) % 6][1]}"
            for i in range(480)
        ]
        return "\n".join(lines)
    if shape == "csv":
        rows = _context("table")
        lines = [",".join(rows[0])] + [",".join(str(v) for v in row.values()) for row in rows]
        return "\n".join(lines)
    sentences = _sentences(700, 391)
    return "\n".join(sentences) if shape == "lines" else " ".join(sentences)


def _describe(shape: str) -> str:
    from .prompts import context_metadata, describe_context

    context = _context(shape)
    return describe_context(context_metadata(context))


def _user(shape: str, question: str) -> Message:
    return {"role": "user", "content": f"{_describe(shape)}\n\nQuestion: {question}"}


def _code(code: str) -> Message:
    return {"role": "assistant", "content": f"```repl\n{code}\n```"}


def _output(step: int, text: str) -> Message:
    return {"role": "user", "content": f"Output of step {step}:\n{text}"}


_WORDS = re.compile(r"[a-z]+|\d+")


def _words(text: str) -> set[str]:
    return {"#" if w.isdigit() else w for w in _WORDS.findall(text.lower())}


def _closest_last(examples: list[tuple[str, str]], question: str | None) -> list[tuple[str, str]]:
    """The examples in order of how many words their question shares with the real one, the
    closest last: a small model copies the form of the example it saw last the most."""
    if not question:
        return examples
    words = _words(question)
    return sorted(examples, key=lambda e: len(_words(e[0]) & words) / len(_words(e[0]) | words))


@lru_cache(maxsize=64)
def _turns(shape: str, question: str | None = None) -> tuple[tuple[str, str], ...]:
    if shape in ("table", "csv"):
        turns = []
        for question_, code in _closest_last(_TABLE_EXAMPLES, question):
            namespace: dict[str, Any] = {"table": lambda: rows_of(_context(shape))}
            exec(code.replace("print(n)", ""), namespace)  # noqa: S102 - our own code, run for its true output
            turns += [_user(shape, question_), _code(code), _output(1, str(namespace["n"])), _code(_ANSWER)]
    elif shape == "messages":
        lines = _context("messages").splitlines()
        counts = Counter(_MESSAGES[(i * i + i // 3) % 6][0] for i in range(len(lines)))
        turns = [
            _user(shape, _CLASSIFY_QUESTION),
            _code(_CLASSIFY_CODE),
            _output(1, repr(counts)),
            _code('answer["content"] = str(counts["complaint"])\nanswer["ready"] = True'),
        ]
    else:
        shape = shape if shape in ("text", "lines", "documents") else "text"
        turns = [
            _user(shape, _QUESTION),
            _code(f"search({json.dumps(_QUESTION)})"),
            _output(1, search_text(_context(shape), _QUESTION)),
            _code('answer["content"] = "pier 14"\nanswer["ready"] = True'),
        ]
    return tuple((m["role"], m["content"]) for m in turns)


def _example_shape(meta: Mapping[str, Any], question: str | None) -> str:
    shape = meta.get("shape", "text")
    if shape == "table" and meta.get("type") == "str":
        return "csv"
    if shape in ("lines", "text") and question and _LABELLED.search(question):
        return "messages"  # a question that counts items by a label the data does not show
    return shape


def reply_start(meta: Mapping[str, Any], question: str | None = None) -> tuple[str, str | None]:
    """How the root's first reply begins, for a backend that continues a reply: the worked
    example's first line of code up to what depends on the question, and, where the first call
    is ``search("...")``, the ``")`` that closes it, at which the reply stops. A small model then
    looks at the context before it answers, and does not go on to write the call's output itself."""
    first = example_turns(meta, question)[1]["content"]
    if "search(" in first:
        return first[: first.index("search(") + len('search("')], '")'
    if "classify(lines, " in first:
        return first[: first.index("classify(lines, ") + len("classify(lines, ")], None
    return first[: first.index("table()") + len("table()\n")], None


def example_turns(meta: Mapping[str, Any], question: str | None = None) -> list[Message]:
    """The worked example for a context with this metadata (its shape, and for rows whether they
    come as text) and this question, as alternating user and assistant turns."""
    shape = _example_shape(meta, question)
    turns = _turns(shape, question if shape in ("table", "csv") else None)
    return [{"role": role, "content": content} for role, content in turns]  # type: ignore[typeddict-item]
