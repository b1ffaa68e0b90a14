"""Lookups in real documents: the text that ships with Python itself.

The context is many documents, either one string (each document under a header line) or a dict
``{name: text}`` (the two alternate by index). Documents are taken whole, in a seeded order, until
the task's length is reached (a document that would overshoot is skipped); ``meta`` records the
real size, which stops growing once the split's corpus is used up (about 3.7 to 4.2 million
characters). Every document has a number, drawn afresh for each task, so no number can be known
beforehand. Kinds of question, each needing one passage found:

- ``cloze``: which word is missing from a quoted line (a line that occurs once in the context, and
  a word that occurs at most three times in it, even inside other words);
- ``locate``: the number of the document that holds a quoted line;
- ``heading`` (``dev``): the heading of the n-th section of a language reference topic;
- ``owner`` (``test``): the function or class whose docstring holds a quoted line.

Quoted lines are prose: lines of the language reference, or lines of docstrings. Score: ``exact``
(the word, the number, the name), ``contains`` for a heading.

Splits: ``dev`` reads the language reference's topics as ``pydoc`` ships them
(``pydoc_data.topics``) and the source files of ``dev``'s half of the standard library;
``test`` reads the source files of the other half (see :mod:`rlm_kernel.eval.repo` for the cut).
Headers, names and the wording of every question differ between the splits. The text is the
Python Software Foundation's, under the PSF License, and comes from the Python that runs the
generator: the same CPython version gives the same tasks on any install (``meta`` records it).
"""

from __future__ import annotations

import ast
import platform
import random
import re
from dataclasses import dataclass
from functools import cache

from .repo import stdlib_files
from .tasks import Task, TaskRef, family

__all__ = ["KINDS", "corpus", "make"]

KINDS = {"dev": ("cloze", "locate", "heading"), "test": ("cloze", "locate", "owner")}
BLANK = "_____"

_PROSE = re.compile(r"[A-Za-z][A-Za-z ,;:'\"()\-.]{43,}")
_WORD = re.compile(r"[A-Za-z]{5,}")


@dataclass(frozen=True)
class Document:
    title: str
    text: str


@cache
def corpus(split: str) -> tuple[Document, ...]:
    """Every document of the split, in name order."""
    docs: list[Document] = []
    if split == "dev":
        try:
            from pydoc_data.topics import topics
        except ImportError:  # a Python built without it: the sources alone
            topics = {}
        docs += [Document(f"reference/{name}", text) for name, text in sorted(topics.items())]
    docs += [Document(path, source) for _, unit in stdlib_files(split) for path, source in unit]
    return tuple(docs)


def _prose(line: str) -> bool:
    return bool(_PROSE.fullmatch(line)) and len(line.split()) >= 8 and '"""' not in line and "'''" not in line


@cache
def _lines(title: str, text: str) -> tuple[tuple[str, str], ...]:
    """The document's prose lines as ``(line, owner)``: for a reference topic, its unindented
    paragraph lines (owner ""); for a source file, its docstrings' lines, stripped, with the name of
    the function or class that the docstring belongs to ("" for the module's)."""
    if title.startswith("reference/"):
        rows = text.splitlines()
        return tuple(
            (line, "")
            for i, line in enumerate(rows)
            if _prose(line) and not (i + 1 < len(rows) and set(rows[i + 1]) <= {"=", "-", "*"})
        )
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    rows = text.splitlines()
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = node.body[0] if node.body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            owner = "" if isinstance(node, ast.Module) else node.name
            for raw in rows[first.lineno - 1 : first.end_lineno]:
                if _prose(raw.strip()):
                    out.append((raw.strip(), owner))
    return tuple(out)


def _sections(text: str) -> list[str]:
    """The headings underlined with ``=`` (a topic's sections)."""
    rows = text.splitlines()
    return [
        rows[i]
        for i in range(len(rows) - 1)
        if rows[i].strip() and set(rows[i + 1]) == {"="} and len(rows[i + 1]) == len(rows[i])
    ]


def _take(rng: random.Random, split: str, chars: int) -> list[Document]:
    docs = list(corpus(split))
    rng.shuffle(docs)
    taken, total = [], 0
    for doc in docs:
        if total + len(doc.text) <= chars:
            taken.append(doc)
            total += len(doc.text)
            if total >= 0.98 * chars:
                break
    return taken or [min(docs, key=lambda d: len(d.text))]


def _name(split: str, number: int, title: str) -> str:
    return f"{number}: {title}" if split == "dev" else f"[{number}] {title}"


def _header(split: str, number: int, title: str) -> str:
    return f"=== {number}: {title} ===" if split == "dev" else f"----- [{number}] {title} -----"


_ASK = {
    "dev": {
        "cloze": "One word is missing from this line of the documents (it is shown as {blank}):\n\n"
        "{line}\n\nWhich word is it? Answer with the word alone.",
        "locate": "Which document contains this exact line?\n\n{line}\n\n"
        "Answer with the document's number only.",
        "heading": "In document {number}, the sections are the headings underlined with '=' signs (the "
        "title, underlined with '*', is not one). What is the heading of section {n}, counting from 1?",
    },
    "test": {
        "cloze": "Fill the gap. The line below appears in one of the files, with one word replaced by "
        "{blank}:\n\n{line}\n\nGive the missing word and nothing else.",
        "locate": "The line below is quoted word for word from one of the files. What is that file's "
        "number?\n\n{line}",
        "owner": "The line below belongs to the docstring of a function or class in one of the files. Which "
        "one? Give its bare name, as written after `def` or `class`.\n\n{line}",
    },
}


@dataclass
class _Found:
    kind: str
    doc: int  # its position in the context
    line: str
    answer: object
    scorer: str
    extra: dict


def _find_heading(
    rng: random.Random, docs: list[Document], order: list[int], numbers: list[int]
) -> _Found | None:
    """A section heading of a reference page that no other heading of it contains."""
    for at in order:
        doc = docs[at]
        heads = _sections(doc.text) if doc.title.startswith("reference/") else []
        if len(heads) < 2:
            continue
        usable = [
            i
            for i, h in enumerate(heads)
            if len(h.split()) >= 2 and sum(h.lower() in other.lower() for other in heads) == 1
        ]
        if usable:
            i = rng.choice(usable)
            return _Found("heading", at, "", heads[i], "contains", {"section": i + 1, "number": numbers[at]})
    return None


def _find(
    kind: str, rng: random.Random, docs: list[Document], full: str, numbers: list[int]
) -> _Found | None:
    """A question of this kind with one answer in the context, or None when it has none."""
    lower = full.lower()
    order = list(range(len(docs)))
    rng.shuffle(order)
    if kind == "heading":
        return _find_heading(rng, docs, order, numbers)
    for at in order[:400]:
        lines = [
            (line, owner) for line, owner in _lines(docs[at].title, docs[at].text) if full.count(line) == 1
        ]
        if kind == "owner":
            lines = [(line, owner) for line, owner in lines if owner]
        rng.shuffle(lines)
        for line, owner in lines[:20]:
            if kind == "locate":
                return _Found(kind, at, line, numbers[at], "exact", {})
            if kind == "owner":
                return _Found(kind, at, line, owner, "exact", {})
            words = [m for m in _WORD.finditer(line) if line.lower().count(m.group().lower()) == 1]
            words = [m for m in words if lower.count(m.group().lower()) <= 3]
            rng.shuffle(words)
            for m in words:
                before, after = line[: m.start()], line[m.end() :]
                pattern = re.escape(before) + "[A-Za-z]+" + re.escape(after)
                if len(re.findall(pattern, full)) == 1:
                    return _Found(kind, at, f"{before}{BLANK}{after}", m.group(), "exact", {"line": line})
    return None


@family("documents", "lookups in real text shipped with Python: the language reference and stdlib sources")
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    docs = _take(rng, ref.split, ref.chars)
    numbers = rng.sample(range(1000, 10000), len(docs))
    container = ("text", "dict")[ref.index % 2]
    kinds = KINDS[ref.split]
    first = kinds[(ref.index // 2) % len(kinds)]
    order = [first, *(k for k in kinds if k != first)]
    spare = sorted(corpus(ref.split), key=lambda d: len(d.text))
    while True:
        full = "\n".join(d.text for d in docs)
        found = next(filter(None, (_find(k, rng, docs, full, numbers) for k in order)), None)
        if found:
            break
        # Too short to hold a usable line: add the smallest document that is not there yet.
        docs.append(next(d for d in spare if d not in docs))
        numbers.append(rng.choice(sorted(set(range(1000, 10000)) - set(numbers))))
    kind = found.kind
    slots = {
        "blank": BLANK,
        "line": found.line,
        "number": found.extra.get("number"),
        "n": found.extra.get("section"),
    }
    if container == "text":
        context: object = "\n\n".join(
            f"{_header(ref.split, n, d.title)}\n{d.text.rstrip()}" for n, d in zip(numbers, docs, strict=True)
        )
    else:
        context = {_name(ref.split, n, d.title): d.text for n, d in zip(numbers, docs, strict=True)}
    return Task(
        id=ref.id,
        family="documents",
        context=context,
        question=_ASK[ref.split][kind].format(**slots),
        answer=found.answer,
        scorer=found.scorer,
        split=ref.split,
        length=ref.length,
        meta={
            "question_type": kind,
            "container": container,
            "document": docs[found.doc].title,
            "number": numbers[found.doc],
            "depth": round(found.doc / len(docs), 3),
            **({"line": found.extra["line"]} if "line" in found.extra else {}),
            **({"section": found.extra["section"]} if "section" in found.extra else {}),
            "documents": len(docs),
            "chars": sum(len(d.text) for d in docs),
            "python": platform.python_version(),
        },
        ref=ref,
    )
