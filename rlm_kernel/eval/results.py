"""A sweep's results on disk, and as a table.

A results folder holds ``results.jsonl`` (one row a rollout, appended and flushed as each one
ends, so a crash or Ctrl-C loses nothing that finished), ``results.csv`` (the same rows, written
again at the end of each invocation), ``sweeps.jsonl`` (the settings of each invocation) and
``trajectories/`` (each RLM rollout's JSONL trajectory). A rollout already in ``results.jsonl``
is skipped when the same sweep runs again; a crashed one (a fault of the harness, not of the
method) is run again.
"""

from __future__ import annotations

import csv
import json
import math
import os
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from ..usage import percent

__all__ = ["Row", "ResultsDir", "Results", "load"]


@dataclass
class Row:
    """One rollout: a method's answer to one task, its score and what it cost."""

    task_id: str
    family: str
    split: str
    length: int
    method: str
    model: str
    sub_model: str
    profile: str
    score: float
    answer: str | None
    expected: Any
    error: str | None
    root_input_tokens: int = 0
    root_output_tokens: int = 0
    sub_input_tokens: int = 0
    sub_output_tokens: int = 0
    calls: int = 0
    cost: float | None = None
    wall_s: float = 0.0
    iterations: int = 0
    context_chars: int = 0
    trajectory: str | None = None  # on disk, relative to the results folder; read, absolute
    crashed: bool = False
    meta: dict[str, Any] | None = None
    tips: str = ""  # the digest of the tips a "+tips" method ran with; rows before tips have none
    # Of the input tokens (root and sub-calls), those the provider read from its prompt cache; rows
    # written before it have 0, as do providers that report none.
    cached_tokens: int = 0

    @property
    def input_tokens(self) -> int:
        return self.root_input_tokens + self.sub_input_tokens

    @property
    def cached_share(self) -> float | None:
        """The share of the rollout's input tokens read from a prompt cache; None without input."""
        return self.cached_tokens / self.input_tokens if self.input_tokens else None

    @property
    def key(self) -> str:
        return rollout_key(self.task_id, self.method, self.model, self.sub_model, self.profile, self.tips)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Row:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def rollout_key(task_id: str, method: str, model: str, sub_model: str, profile: str, tips: str = "") -> str:
    """What makes two rollouts the same one (a resumed sweep skips it). The tips' digest joins only
    where there are tips, so the keys of rows written before them are unchanged."""
    return "|".join((task_id, method, model, sub_model, profile, *((tips,) if tips else ())))


COLUMNS = [f.name for f in fields(Row)]


class ResultsDir:
    """The folder of one sweep (or of several runs of it)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.jsonl = self.path / "results.jsonl"
        self.trajectories = self.path / "trajectories"
        self._lock = threading.Lock()

    def rows(self) -> list[Row]:
        """Every row on disk; when a rollout ran more than once (after a crash), its last row."""
        latest: dict[str, Row] = {}
        for row in _read(self.jsonl):
            if row.trajectory is not None and not Path(row.trajectory).is_absolute():
                row = replace(row, trajectory=str(self.path.resolve() / row.trajectory))
            latest[row.key] = row
        return list(latest.values())

    def done(self) -> set[str]:
        """Keys of the rollouts that need not run again."""
        return {row.key for row in self.rows() if not row.crashed}

    def _on_disk(self, row: Row) -> Row:
        """The row as written: its trajectory named relative to this folder, so that results moved
        or committed name no path of the machine they ran on."""
        if row.trajectory is not None:
            path, folder = Path(row.trajectory), self.path.resolve()
            if path.is_absolute() and path.is_relative_to(folder):
                return replace(row, trajectory=str(path.relative_to(folder)))
        return row

    def add(self, row: Row) -> None:
        line = json.dumps(self._on_disk(row).to_dict(), ensure_ascii=False, default=str) + "\n"
        with self._lock, open(self.jsonl, "ab") as f:
            if f.tell() and not self._ends_with_newline():  # a line cut short by a crash: start afresh
                line = "\n" + line
            f.write(line.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())

    def _ends_with_newline(self) -> bool:
        with open(self.jsonl, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"

    def note_sweep(self, settings: dict[str, Any]) -> None:
        with open(self.path / "sweeps.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(settings, default=str) + "\n")

    def write_csv(self) -> Path:
        path = self.path / "results.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=COLUMNS)
            writer.writeheader()
            for row in self.rows():
                data = self._on_disk(row).to_dict()
                data["expected"] = (
                    json.dumps(data["expected"])
                    if not isinstance(data["expected"], str)
                    else data["expected"]
                )
                data["meta"] = json.dumps(data["meta"]) if data["meta"] else ""
                writer.writerow(data)
        return path


def _read(path: Path) -> Iterator[Row]:
    if not path.exists():
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                yield Row.from_dict(json.loads(line))
            except (json.JSONDecodeError, TypeError):
                continue  # a line cut short by a crash while it was written


@dataclass(frozen=True)
class Cell:
    """The rows of one (family, length, method, model) as summary figures."""

    family: str
    length: int
    method: str
    model: str
    n: int
    score: float
    errors: int
    cost: float | None
    wall_s: float
    root_tokens: float
    sub_tokens: float
    tips: str = ""
    label: str = ""  # the method as the table and plots name it
    cached_share: float | None = None  # of all the cell's input tokens, those read from a prompt cache

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.method)


class Results:
    """A sweep's rows, with a summary by task family, length and method."""

    def __init__(self, rows: Iterable[Row]) -> None:
        self.rows = list(rows)

    def __len__(self) -> int:
        return len(self.rows)

    def to_records(self) -> list[dict[str, Any]]:
        """A list of dicts: ``pandas.DataFrame(results.to_records())`` gives a data frame."""
        return [row.to_dict() for row in self.rows]

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.to_records())

    def summary(self) -> list[Cell]:
        """One cell per family, length, method (with its tips) and model. A method that ran with
        more than one tips text here is labelled with each one's digest: ``rlm+tips [1a2b3c4d]``."""
        groups: dict[tuple[str, int, str, str, str], list[Row]] = defaultdict(list)
        for row in self.rows:
            groups[(row.family, row.length, row.method, row.model, row.tips)].append(row)
        texts: dict[str, set[str]] = defaultdict(set)
        for _, _, method, _, tips in groups:
            texts[method].add(tips)
        cells = []
        for (fam, length, method, model, tips), rows in sorted(groups.items()):
            costs = [r.cost for r in rows]
            input_tokens = sum(r.input_tokens for r in rows)
            cells.append(
                Cell(
                    family=fam,
                    length=length,
                    method=method,
                    model=model,
                    n=len(rows),
                    score=sum(r.score for r in rows) / len(rows),
                    errors=sum(1 for r in rows if r.error),
                    cost=None if any(c is None for c in costs) else sum(costs) / len(rows),  # type: ignore[misc]
                    wall_s=sum(r.wall_s for r in rows) / len(rows),
                    root_tokens=sum(r.root_input_tokens + r.root_output_tokens for r in rows) / len(rows),
                    sub_tokens=sum(r.sub_input_tokens + r.sub_output_tokens for r in rows) / len(rows),
                    tips=tips,
                    label=f"{method} [{tips}]" if tips and len(texts[method]) > 1 else method,
                    cached_share=sum(r.cached_tokens for r in rows) / input_tokens if input_tokens else None,
                )
            )
        return cells

    def table(self) -> str:
        """The summary as a Markdown table (scores in percent, as the paper reports them)."""
        from .tasks import format_length

        head = "| task | length | method | model | n | score | errors | mean cost | mean time |"
        lines = [head, "|---|---|---|---|---:|---:|---:|---:|---:|"]
        for c in self.summary():
            cost = "unknown" if c.cost is None else f"${c.cost:.4f}"
            lines.append(
                f"| {c.family} | {format_length(c.length)} | {c.label} | {c.model} | {c.n} | "
                f"{100 * c.score:.1f} | {c.errors} | {cost} | {c.wall_s:.1f} s |"
            )
        return "\n".join(lines)

    def paper_table(self, format: str = "markdown") -> str:
        """The paper's Table 1 for these results: a row per method and model, a column per task
        (family @ length), and in each cell the score (mean × 100), the mean cost and the mean
        tokens (root and sub-calls, in and out) of a rollout, and the rollouts' count n. A cell with
        rollouts that ended in an error is starred, as the paper stars a context past the window.

        Methods come in the paper's order (base, codeact, codeact+subcalls, summary, rlm,
        rlm-no-subcalls), then the rest by name; ``format`` is ``markdown`` or ``plain`` (columns
        aligned with spaces, for a terminal). A dash marks a method that did not run on a task."""
        from .tasks import format_length

        if format not in ("markdown", "plain"):
            raise ValueError(f"format must be 'markdown' or 'plain', got {format!r}")
        cells = self.summary()
        tasks = sorted({(c.family, c.length) for c in cells})
        rows = sorted({(c.model, c.method, c.label) for c in cells}, key=_row_order)
        by = {(c.model, c.label, c.family, c.length): c for c in cells}
        head = ["method", "model", *(f"{fam} @ {format_length(length)}" for fam, length in tasks)]
        body = [
            [label, model, *(_paper_cell(by.get((model, label, *task))) for task in tasks)]
            for model, _, label in rows
        ]
        notes = [
            "Each cell: the score (mean × 100); the mean cost of a rollout ($0: a free model, $?: no price),",
            "its mean tokens (root and sub-calls, in and out), and the rollouts' count n.",
        ]
        if any(c.cached_share for c in cells):
            notes.append(
                "x% cached: the share of the input tokens that the provider read from its prompt cache."
            )
        if any(c.errors for c in cells):
            notes.append("* some rollouts of the cell ended in an error (e.g. a context past the window).")
        if format == "markdown":
            lines = [_md_row(head), "|" + "---|" * 2 + "---:|" * len(tasks)]
            lines += [_md_row(r) for r in body]
            return "\n".join([*lines, "", *notes])
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
        lines = [
            "  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)).rstrip()
            for r in [head, ["-" * w for w in widths], *body]
        ]
        return "\n".join([*lines, "", *notes])

    def __str__(self) -> str:
        return self.table()

    def mean_score(self) -> float:
        return sum(r.score for r in self.rows) / len(self.rows) if self.rows else math.nan


# The paper's Table 1 order of its methods; others follow by name.
PAPER_ORDER = ("base", "codeact", "codeact+subcalls", "summary", "rlm", "rlm-no-subcalls", "reference")


def _row_order(row: tuple[str, str, str]) -> tuple[Any, ...]:
    model, method, label = row
    plain, tips = (method[: -len("+tips")], 1) if method.endswith("+tips") else (method, 0)
    rank = PAPER_ORDER.index(plain) if plain in PAPER_ORDER else len(PAPER_ORDER)
    return (model, rank, plain, tips, label)


def _dollars(cost: float | None) -> str:
    if cost is None:
        return "$?"
    if cost == 0:
        return "$0"
    if cost >= 0.01:
        return f"${cost:.2f}"
    if cost < 1e-8:
        return "<$0.00000001"
    return f"${cost:.{1 - math.floor(math.log10(cost))}f}"  # two significant digits


def _tokens(count: float) -> str:
    if count >= 999_500:
        return f"{count / 1e6:.1f}M"
    return f"{count / 1e3:.1f}k" if count >= 999.5 else f"{count:.0f}"


def _paper_cell(cell: Cell | None) -> str:
    """``56.5 ($0.43, 12.3k tok, n=10)``, or ``56.5 ($0.43, 12.3k tok, 80% cached, n=10)`` where a
    prompt cache served some of the input; a dash where the method did not run on the task."""
    if cell is None:
        return "–"
    star = "*" if cell.errors else ""
    tokens = f"{_tokens(cell.root_tokens + cell.sub_tokens)} tok"
    if cell.cached_share:
        tokens += f", {percent(cell.cached_share, 1)} cached"
    return f"{100 * cell.score:.1f}{star} ({_dollars(cell.cost)}, {tokens}, n={cell.n})"


def _md_row(values: list[str]) -> str:
    return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"


def load(path: str | Path) -> Results:
    """The results in a folder (or a ``results.jsonl`` file)."""
    path = Path(path)
    folder = path.parent if path.suffix == ".jsonl" else path
    return Results(ResultsDir(folder).rows())
