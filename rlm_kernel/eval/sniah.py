"""S-NIAH: one needle in a haystack (RULER's single needle), in many shapes and phrasings.

A task hides one fact (the needle) at a random depth of filler prose and asks for it. What varies:

- the haystack's shape: ``line`` (one long line, no newlines), ``lines`` (many lines),
  ``documents`` (a list of documents), ``records`` (a dict of records), ``json`` (JSON text);
- the needle's kind: an access code, a number assigned to a key, a ledger entry, a date, a name;
- its wording, the question's wording, its depth, and the filler's style.

Each split has its own wordings of every needle and question, its own filler style
(:mod:`rlm_kernel.eval.text`) and its own variant of every shape (``lines`` are plain in ``dev``,
timestamped log lines in ``test``; ``documents`` are strings in ``dev``, dicts with a title in
``test``; and so on). Score: the expected string is found in the answer (``contains``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, family
from .text import Prose

__all__ = ["SHAPES", "KINDS", "make"]

SHAPES = ("line", "lines", "documents", "records", "json")
KINDS = ("code", "number", "ledger", "date", "name")

_PLACES = [
    "archive room",
    "server vault",
    "boathouse",
    "east stairwell",
    "seed bank",
    "map room",
    "pump house",
]
_KEYS = ["amber-falcon", "quiet-harbor", "silver-moth", "north-lantern", "copper-reef", "velvet-orbit"]
_FIRST = ["Ilse", "Teodor", "Amara", "Bartek", "Noor", "Caspian", "Rhiannon", "Desmond", "Freya", "Oskar"]
_LAST = ["Varga", "Lindqvist", "Okafor", "Moreau", "Halloran", "Castellanos", "Nakagawa", "Brandt"]
_ITEMS = ["roof repairs", "a microscope", "translation work", "catering", "two used bicycles", "server racks"]
_DEPTS = ["dental clinic", "passport office", "tax advisor", "orthopaedic ward", "housing board"]
_PROJECTS = ["Kestrel", "Bluefin", "Obsidian", "Marigold", "Tundra", "Halcyon", "Juniper"]

# Per kind and split: (needle, question) wordings. ``{value}`` is what the answer must contain.
_WORDING: dict[str, dict[str, list[tuple[str, str]]]] = {
    "code": {
        "dev": [
            ("The access code for the {place} is {value}.", "What is the access code for the {place}?"),
            ("Remember: the {place} door opens with code {value}.", "Which code opens the {place} door?"),
        ],
        "test": [
            (
                "Anyone entering the {place} must key in {value}.",
                "What do you have to key in to enter the {place}?",
            ),
            (
                "For the {place}, the keypad combination is {value}.",
                "Which keypad combination is used for the {place}?",
            ),
        ],
    },
    "number": {
        "dev": [
            ("The magic number for {key} is {value}.", "What is the magic number for {key}?"),
            ("Note that {key} corresponds to the number {value}.", "Which number corresponds to {key}?"),
        ],
        "test": [
            ("{key} is assigned the value {value}.", "Which value is assigned to {key}?"),
            ("Registry entry: {key} -> {value}.", "What does the registry map {key} to?"),
        ],
    },
    "ledger": {
        "dev": [
            (
                "Ledger: paid {value} euros to {name} for {item}.",
                "How many euros were paid to {name} for {item}?",
            ),
            (
                "Expense logged: {value} euros to {name} ({item}).",
                "What was the expense for {item} paid to {name}?",
            ),
        ],
        "test": [
            (
                "Invoice settled: {name} received {value} dollars for {item}.",
                "How much did {name} receive for {item}?",
            ),
            (
                "{name} was reimbursed {value} dollars for {item}.",
                "What amount was {name} reimbursed for {item}?",
            ),
        ],
    },
    "date": {
        "dev": [
            (
                "{name}'s appointment with the {dept} is on {value}.",
                "On what date is {name}'s appointment with the {dept}?",
            ),
            ("The {dept} booked {name} for {value}.", "For which date did the {dept} book {name}?"),
        ],
        "test": [
            ("The {dept} will see {name} on {value}.", "When will the {dept} see {name}?"),
            (
                "{name} has been scheduled at the {dept} for {value}.",
                "What is the date of {name}'s visit to the {dept}?",
            ),
        ],
    },
    "name": {
        "dev": [
            ("The lead of project {project} is {value}.", "Who leads project {project}?"),
            ("Project {project} reports to {value}.", "To whom does project {project} report?"),
        ],
        "test": [
            ("Project {project} is coordinated by {value}.", "Who coordinates project {project}?"),
            (
                "All questions about project {project} go to {value}.",
                "Who answers questions about project {project}?",
            ),
        ],
    },
}


@dataclass(frozen=True)
class Needle:
    kind: str
    sentence: str
    question: str
    answer: str


def _value(kind: str, rng: random.Random) -> str:
    if kind == "code":
        letters = "".join(rng.choices("ABCDEFGHJKLMNPQRSTUVWXYZ", k=2))
        return rng.choice([str(rng.randint(1000, 99999)), f"{letters}-{rng.randint(1000, 9999)}"])
    if kind == "number":
        return str(rng.randint(100_000, 9_999_999))
    if kind == "ledger":
        return f"{rng.randint(12, 9999)}.{rng.randint(0, 99):02d}"
    if kind == "date":
        return f"{rng.randint(2026, 2031)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"


def needle(rng: random.Random, split: str, kind: str | None = None) -> Needle:
    kind = kind or rng.choice(KINDS)
    sentence, question = rng.choice(_WORDING[kind][split])
    value = _value(kind, rng)
    slots = {
        "place": rng.choice(_PLACES),
        "key": rng.choice(_KEYS),
        "name": f"{rng.choice(_FIRST)} {rng.choice(_LAST)}",
        "item": rng.choice(_ITEMS),
        "dept": rng.choice(_DEPTS),
        "project": rng.choice(_PROJECTS),
    }
    return Needle(kind, sentence.format(value=value, **slots), question.format(**slots), value)


def _sentences(prose: Prose, chars: int) -> list[str]:
    out, total = [], 0
    while total < chars:
        s = prose.sentence()
        out.append(s)
        total += len(s) + 1
    return out


def _insert(items: list, item: object, depth: float) -> None:
    items.insert(round(depth * len(items)), item)


def _log_lines(prose: Prose, rng: random.Random, chars: int, n: Needle, depth: float) -> str:
    """Timestamped log lines, the needle's stamped like its neighbours."""
    clock = datetime(2025, 3, 1) + timedelta(minutes=rng.randint(0, 100_000))
    parts, total = [], 0
    while total < chars:
        clock += timedelta(seconds=rng.randint(1, 90))
        level = rng.choice(["INFO", "INFO", "NOTE", "WARN"])
        parts.append(f"{clock:%Y-%m-%d %H:%M:%S} {level} {prose.sentence()}")
        total += len(parts[-1]) + 1
    at = round(depth * len(parts))
    stamp = parts[max(0, at - 1)][:19]
    parts.insert(at, f"{stamp} INFO {n.sentence}")
    return "\n".join(parts)


def _haystack(shape: str, split: str, prose: Prose, rng: random.Random, chars: int, n: Needle, depth: float):
    """The context, of about ``chars`` characters, with the needle at ``depth`` (0 to 1)."""
    if shape == "line":
        parts = _sentences(prose, chars)
        _insert(parts, n.sentence, depth)
        return " ".join(parts)
    if shape == "lines":
        if split == "dev":
            parts = _sentences(prose, chars)
        else:
            return _log_lines(prose, rng, chars, n, depth)
        _insert(parts, n.sentence, depth)
        return "\n".join(parts)
    # Shapes of many items: paragraphs of a few to a few dozen sentences.
    paragraphs = []
    total = 0
    while total < chars:
        p = prose.text(rng.randint(300, 1500))
        paragraphs.append(p)
        total += len(p) + 40
    at = min(int(depth * len(paragraphs)), len(paragraphs) - 1)
    words = paragraphs[at].split(". ")
    _insert(words, n.sentence.rstrip("."), rng.random())
    paragraphs[at] = ". ".join(words)
    if shape == "documents":
        if split == "dev":
            return paragraphs
        return [{"title": f"Field notebook, entry {i + 1}", "text": p} for i, p in enumerate(paragraphs)]
    if shape == "records":
        if split == "dev":
            return {f"note-{i:05d}": p for i, p in enumerate(paragraphs)}
        return {
            f"R{rng.randint(10, 99)}-{i:05d}": {"observer": rng.choice(_FIRST), "page": i + 1, "note": p}
            for i, p in enumerate(paragraphs)
        }
    if split == "dev":  # json
        return json.dumps([{"id": i, "text": p} for i, p in enumerate(paragraphs)])
    return json.dumps(
        {f"entry_{i}": {"body": p, "words": len(p.split())} for i, p in enumerate(paragraphs)}, indent=2
    )


@family("sniah", "one needle in a haystack: five shapes, five kinds of fact, many phrasings")
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    # Any five tasks in a row cover every shape and every kind of needle.
    shape = SHAPES[ref.index % len(SHAPES)]
    kind = KINDS[(ref.index + ref.index // len(SHAPES)) % len(KINDS)]
    n = needle(rng, ref.split, kind)
    depth = rng.random()
    context = _haystack(shape, ref.split, Prose(rng, ref.split), rng, ref.chars, n, depth)
    return Task(
        id=ref.id,
        family="sniah",
        context=context,
        question=n.question,
        answer=n.answer,
        scorer="contains",
        split=ref.split,
        length=ref.length,
        meta={"shape": shape, "kind": n.kind, "depth": round(depth, 3), "needle": n.sentence},
        ref=ref,
    )
