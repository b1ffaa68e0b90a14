"""verbatim-copy (after Prime Intellect's environment): give the context back exactly.

The context is a JSON document, a CSV table, a list of codes or a word list; the answer must be
the same text, character for character. Score: ``verbatim`` (outer whitespace and one code fence
around the answer aside). The four kinds are in both splits; the wording of the request and the
vocabulary differ.
"""

from __future__ import annotations

import json
import random
import string

from .tasks import Task, TaskRef, family
from .text import Prose

__all__ = ["KINDS", "make"]

KINDS = ("json", "csv", "codes", "words")

_ASK = {
    "dev": "Copy the {what} in `context` exactly: your answer must be the text itself, character for "
    "character.",
    "test": "Reproduce the {what} verbatim, with nothing added, left out or reformatted.",
}
_WHAT = {"json": "JSON document", "csv": "CSV table", "codes": "list of codes", "words": "word list"}


def _text(kind: str, rng: random.Random, split: str, chars: int) -> str:
    prose = Prose(rng, split)
    if kind == "json":
        items, total = [], 0
        while total < chars:
            item = {"id": len(items) + 1, "note": prose.sentence(), "score": round(rng.uniform(0, 100), 2)}
            items.append(item)
            total += len(json.dumps(item)) + 6
        return json.dumps({"items": items}, indent=2)
    if kind == "csv":
        rows, total = ["id,name,quantity,price"], 0
        while total < chars:
            name = prose.sentence().split()[1].strip(".,")
            row = f"{len(rows)},{name},{rng.randint(1, 90)},{rng.uniform(1, 500):.2f}"
            rows.append(row)
            total += len(row) + 1
        return "\n".join(rows)
    if kind == "codes":
        alphabet = string.ascii_uppercase + string.digits
        n = max(1, chars // 11)
        return "\n".join(
            "".join(rng.choices(alphabet, k=4)) + "-" + "".join(rng.choices(alphabet, k=5)) for _ in range(n)
        )
    words = prose.text(chars).replace(".", "").split()
    return " ".join(words)


@family("verbatim", "verbatim-copy: give back a JSON or CSV document, a code list or a word list exactly")
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    kind = KINDS[ref.index % len(KINDS)]
    text = _text(kind, rng, ref.split, ref.chars)
    return Task(
        id=ref.id,
        family="verbatim",
        context=text,
        question=_ASK[ref.split].format(what=_WHAT[kind]),
        answer=text,
        scorer="verbatim",
        split=ref.split,
        length=ref.length,
        meta={"kind": kind},
        ref=ref,
    )
