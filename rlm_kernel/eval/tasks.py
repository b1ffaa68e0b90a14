"""Evaluation tasks: what one is, how each family is generated, and your own from JSONL.

A generated task is a pure function of its :class:`TaskRef` (family, split, length, index): the
same ref gives the same context, question and answer on any machine, so a Ray worker or a resumed
sweep rebuilds it instead of receiving megabytes. Seeds are strings that include the split, so
``dev`` and ``test`` never share one; each family also keeps phrasings, shapes or data of its own
for each split (see the family's module), so what is tuned on ``dev`` is measured on other inputs.

Lengths are in tokens, taken as four characters each (``8k`` is about 32,000 characters).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError

__all__ = [
    "CHARS_PER_TOKEN",
    "SPLITS",
    "Task",
    "TaskRef",
    "FAMILIES",
    "family_names",
    "generate",
    "generated_tasks",
    "load_jsonl",
    "parse_length",
    "format_length",
]

CHARS_PER_TOKEN = 4
SPLITS = ("dev", "test")


@dataclass(frozen=True)
class TaskRef:
    """Everything needed to rebuild a generated task."""

    family: str
    split: str
    length: int
    index: int

    @property
    def id(self) -> str:
        return f"{self.family}-{self.split}-{format_length(self.length)}-{self.index:03d}"

    def rng(self) -> random.Random:
        return random.Random(f"rlm_kernel.eval/{self.family}/{self.split}/{self.length}/{self.index}")

    @property
    def chars(self) -> int:
        return self.length * CHARS_PER_TOKEN


@dataclass
class Task:
    """One question about one context, with the expected answer and how to score a reply."""

    id: str
    family: str
    context: Any = field(repr=False)
    question: str
    answer: Any
    scorer: str
    split: str = "custom"
    length: int = 0  # target tokens; your own tasks': the file's, else the context's estimated
    meta: dict[str, Any] = field(default_factory=dict)
    ref: TaskRef | None = None

    @property
    def context_chars(self) -> int:
        """The context's size as text (what a plain model would have to read)."""
        return len(self.context) if isinstance(self.context, str) else len(as_text(self.context))


def as_text(context: Any) -> str:
    """The context as one text, for a plain model's prompt: strings as they are, a DataFrame or
    Series as CSV, an array a value a line, a dict of DataFrames (a workbook) each sheet's name
    and CSV, else JSON."""
    if isinstance(context, str):
        return context
    if isinstance(context, dict) and context and all(hasattr(v, "to_csv") for v in context.values()):
        return "\n".join(f"## {name}\n{sheet.to_csv(index=False)}" for name, sheet in context.items())
    if hasattr(context, "to_csv"):
        return context.to_csv(index=False)
    if hasattr(context, "tolist") and hasattr(context, "dtype"):
        return "\n".join(map(str, context.tolist()))
    try:
        return json.dumps(context, ensure_ascii=False, indent=1)
    except TypeError:
        return str(context)


Generator = Callable[[TaskRef], Task]
FAMILIES: dict[str, Generator] = {}
DESCRIPTIONS: dict[str, str] = {}


Asked = tuple[str, Any, dict[str, Any]]  # a generated question, its answer, and where to look


def draw_question(
    ask: Callable[[str], Asked | None],
    kind: str,
    fallback: str,
    *,
    nonzero: bool = False,
    hidden: bool = False,
) -> tuple[str, Asked]:
    """A question of ``kind``, drawn again where the data holds none (or, ``nonzero``, only a zero
    answer; or, ``hidden``, an answer the question gives away, a name it says), up to ten times;
    then one of ``fallback``, which the data always answers. Returns the kind asked and the
    question."""
    found = None
    for attempt in range(12):
        asked = kind if attempt < 10 else fallback
        found = ask(asked)
        if (
            found is not None
            and hidden
            and isinstance(found[1], str)
            and found[1].lower() in found[0].lower()
        ):
            found = None
        if found is not None and not (nonzero and found[1] == 0):
            break
    assert found is not None, f"no question of {fallback!r}, which the data always answers"
    return asked, found


def asked_task(
    ref: TaskRef,
    context: Any,
    kind: str,
    asked: Asked,
    *,
    container: str,
    chars: int | None = None,
    **sizes: Any,
) -> Task:
    """A generated family's task of one drawn question, scored by exact match, with the meta every
    such family gives: the kind asked, the container, the family's own ``sizes``, the context's
    size as text (``chars``, unless the family counts it otherwise) and where to look."""
    question, answer, params = asked
    size = len(as_text(context)) if chars is None else chars
    meta = {"question_type": kind, "container": container, **sizes, "chars": size, "params": params}
    return Task(
        id=ref.id,
        family=ref.family,
        context=context,
        question=question,
        answer=answer,
        scorer="exact",
        split=ref.split,
        length=ref.length,
        meta=meta,
        ref=ref,
    )


def family(name: str, description: str) -> Callable[[Generator], Generator]:
    """Register a task family's generator."""

    def register(fn: Generator) -> Generator:
        FAMILIES[name] = fn
        DESCRIPTIONS[name] = description
        return fn

    return register


def family_names() -> list[str]:
    _load_families()
    return list(FAMILIES)


def _load_families() -> None:
    # each registers its families
    from . import (  # noqa: F401
        admissions,
        adverse,
        api,
        birding,
        calendars,
        chain,
        chess,
        cloudcost,
        cluster,
        configs,
        contacts,
        crashes,
        dns,
        documents,
        elections,
        fitness,
        fixtures,
        flights,
        frames,
        genealogy,
        gitlog,
        gradebook,
        inspections,
        invoices,
        labs,
        ledger,
        library,
        listening,
        lockfile,
        logs,
        mailbox,
        manifest,
        meaning,
        metrics,
        mlruns,
        notebook,
        oolong,
        parcels,
        payroll,
        places,
        recipes,
        records,
        references,
        repo,
        reviews,
        rides,
        series,
        sniah,
        sqldump,
        statement,
        subtitles,
        survey,
        telescope,
        testreport,
        threads,
        tracker,
        trades,
        transit,
        variants,
        verbatim,
        weather,
        wiki,
        workbook,
    )


def _generator(name: str, split: str) -> Generator:
    _load_families()
    if split not in SPLITS:
        raise ConfigError(f"Unknown split {split!r}: choose dev or test.")
    try:
        return FAMILIES[name]
    except KeyError:
        raise ConfigError(
            f"Unknown task family {name!r}: choose from {', '.join(FAMILIES)} "
            "(or give your own with --task-file)."
        ) from None


def generate(ref: TaskRef) -> Task:
    """The task a ref stands for (the same one wherever and whenever it is built)."""
    return _generator(ref.family, ref.split)(ref)


def generated_tasks(families: Iterable[str], lengths: Iterable[int], split: str, n: int) -> list[TaskRef]:
    """The refs of a sweep, family by family, length by length."""
    families, lengths = list(families), list(lengths)
    for name in families:
        _generator(name, split)  # an unknown family or split is an error before anything runs
    return [TaskRef(name, split, length, i) for name in families for length in lengths for i in range(n)]


_LENGTH = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def parse_length(text: str | int) -> int:
    """``8k`` → 8,192 tokens, ``1m`` → 1,048,576, ``5000`` → 5,000 (powers of two, as the paper's)."""
    if isinstance(text, int):
        return text
    m = _LENGTH.match(text)
    if m is None:
        raise ConfigError(f"Cannot read the length {text!r}: write it as 8k, 128k, 1m or a number of tokens.")
    value, unit = float(m.group(1)), m.group(2).lower()
    return int(value * {"": 1, "k": 1024, "m": 1024 * 1024}[unit])


def format_length(tokens: int) -> str:
    if tokens >= 1024 * 1024 and tokens % (1024 * 1024) == 0:
        return f"{tokens // (1024 * 1024)}m"
    if tokens >= 1024 and tokens % 1024 == 0:
        return f"{tokens // 1024}k"
    return str(tokens)


def load_jsonl(path: str | Path) -> list[Task]:
    """Your own tasks, one JSON object a line: ``question``, ``answer``, and ``context`` (inline)
    or ``context_path`` (relative to the file), with optional ``id``, ``scorer`` (``contains``,
    ``exact``, ``numeric``, ``approx``, ``f1_pairs``, ``verbatim``, or ``module:function``),
    ``family``, ``meta`` and ``length`` (tokens, ``8k`` or a number; by default the context's
    size as text at four characters a token, as the generated tasks' lengths are counted)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"Cannot read the task file {path}: {exc.strerror or exc}.") from None
    return list(_tasks_from(lines, path))


def _tasks_from(lines: list[str], path: Path) -> Iterator[Task]:
    from .scoring import resolve

    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not JSON ({exc.msg}).") from None
        if not isinstance(data, dict) or "question" not in data or "answer" not in data:
            raise ConfigError(f"{where}: a task needs at least 'question' and 'answer'.")
        if "context" in data:
            context = data["context"]
        elif "context_path" in data:
            file = path.parent / data["context_path"]
            try:
                context = file.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"{where}: cannot read {file}: {exc.strerror or exc}.") from None
        else:
            raise ConfigError(f"{where}: give the task's 'context' or its 'context_path'.")
        scorer = str(data.get("scorer", "contains"))
        resolve(scorer)  # an unknown scorer is an error now, not after the run
        task = Task(
            id=str(data.get("id", f"{path.stem}-{number:04d}")),
            family=str(data.get("family", "custom")),
            context=context,
            question=str(data["question"]),
            answer=data["answer"],
            scorer=scorer,
            meta=dict(data.get("meta", {})),
        )
        if "length" in data:
            given = data["length"]
            try:
                task.length = parse_length(given if type(given) is int else str(given))
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None
        else:  # at least 1: the plots' length axis is logarithmic
            task.length = max(1, round(task.context_chars / CHARS_PER_TOKEN))
        yield task
