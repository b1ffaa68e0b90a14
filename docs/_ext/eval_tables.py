"""Tables of the committed evaluation sweeps (``benchmarks/eval/<sweep>/``), computed at build time.

The ``eval-table`` directive takes a header line (``:columns:``) and one line per row. A row
starts with the task family and the length it covers (``*`` for any), then its cells separated by
``|``. A cell is Markdown in which these fields are replaced by figures read from the sweep's
``results.jsonl`` and ``SUMMARY.md``, for that row's family and length:

A ``SWEEP`` written ``SWEEP:N`` counts only its tasks numbered below N.

``{score METHOD SWEEP}``
    ``right / n`` where every score of the family in the sweep is 0 or 1, else the mean score times
    100; "(context > window)"
    is added when every rollout failed because the prompt exceeded the model's window.
``{time METHOD SWEEP}``
    the median wall time of a rollout.
``{misses METHOD SWEEP}``
    each wrong numeric answer of a rollout that ended without an error, as "answer for expected".
``{errors METHOD SWEEP}``, ``{calls METHOD SWEEP}``, ``{model METHOD SWEEP}``
    the rollouts that ended with an error, the LM calls of all rollouts, and the model.
``{wall SWEEP}``, ``{rollouts SWEEP}``
    the wall time of the sweep's invocation, as its ``SUMMARY.md`` gives it, and its number of
    rollouts.
``{flagged SWEEP}``, ``{right-flagged SWEEP}``
    the share of wrong (right) answers that ended with the ``unsupported`` warning, counted as
    ``benchmarks/eval_warnings.py`` counts it.

The ``eval-inline`` role gives one field in running text: ``{eval-inline}`misses rlm SWEEP FAMILY
LENGTH```. The ``eval-summaries`` directive shows every sweep's ``SUMMARY.md``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import statistics
from functools import cache
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
EVAL = BENCHMARKS / "eval"
FIELD = re.compile(r"\{([a-z-]+)((?: [^ {}]+)+)\}")
TOO_LONG = "exceeds the available context size"


@cache
def results(sweep: str) -> tuple[dict[str, Any], ...]:
    path = EVAL / sweep / "results.jsonl"
    if not path.exists():
        raise ExtensionError(f"eval-table: no committed results for sweep {sweep!r} ({path})")
    return tuple(json.loads(line) for line in path.read_text().splitlines() if line.strip())


@cache
def warnings_module() -> Any:
    spec = importlib.util.spec_from_file_location("eval_warnings", BENCHMARKS / "eval_warnings.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _length(tokens: int) -> str:
    for size, unit in ((1 << 20, "m"), (1 << 10, "k")):
        if tokens >= size and tokens % size == 0:
            return f"{tokens // size}{unit}"
    return str(tokens)


def select(sweep: str, method: str, family: str, length: str) -> list[dict[str, Any]]:
    """The rows of a method, family and length; ``SWEEP:N`` keeps the tasks numbered below N (those
    another sweep with ``-n N`` ran), so methods from two sweeps are compared on the same tasks."""
    sweep, _, first = sweep.partition(":")
    return [
        r
        for r in results(sweep)
        if (not first or int(str(r["task_id"]).rsplit("-", 1)[1]) < int(first))
        and method in ("*", r["method"])
        and family in ("*", r["family"])
        and length in ("*", _length(int(r["length"])))
    ]


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"


def _number(text: Any) -> str:
    value = float(str(text).replace(",", ""))
    return f"{value:,.0f}" if value == int(value) else f"{value:,}"


def field(name: str, args: list[str], family: str, length: str) -> str:  # noqa: C901 - a branch per field a table names
    if name in ("wall", "rollouts", "flagged", "right-flagged"):
        (sweep,) = args
        if name == "wall":
            summary = (EVAL / sweep / "SUMMARY.md").read_text()
            found = re.search(r"Wall time of this invocation: ([\d.]+ min)", summary)
            if not found:
                raise ExtensionError(f"eval-table: no wall time in {sweep}/SUMMARY.md")
            return found.group(1)
        if name == "rollouts":
            return str(len(results(sweep)))
        wf, w, rf, r = warnings_module().rates(sweep)
        flagged, total = (wf, w) if name == "flagged" else (rf, r)
        return f"{flagged} / {total} ({flagged / max(total, 1):.0%})"
    method, sweep = args
    rows = select(sweep, method, family, length)
    if not rows:
        return "—"
    scores = [float(r["score"]) for r in rows]
    if name == "score":
        # A family scored by a fraction (OOLONG, F1) gives a mean even where every score is 0.
        family_scores = [float(r["score"]) for r in select(sweep, "*", family, length)]
        if all(s in (0.0, 1.0) for s in family_scores):
            text = f"{int(sum(scores))} / {len(scores)}"
        else:
            text = f"{100 * statistics.fmean(scores):.1f}"
        if all(TOO_LONG in (r.get("error") or "") for r in rows):
            text += " (context > window)"
        return text
    if name == "errors":
        return str(sum(1 for r in rows if r.get("error")))
    if name == "calls":
        return f"{sum(int(r['calls']) for r in rows):,}"
    if name == "model":
        return ", ".join(sorted({str(r["model"]) for r in rows}))
    if name == "time":
        return _seconds(statistics.median(float(r["wall_s"]) for r in rows))
    if name == "misses":
        wrong = []
        for r in rows:
            if float(r["score"]) >= 1.0 or r.get("error"):
                continue
            try:
                wrong.append(f"{_number(r['answer'])} for {_number(r['expected'])}")
            except (TypeError, ValueError):
                continue
        return ", ".join(wrong) or "none"
    raise ExtensionError(f"eval-table: unknown field {{{name} ...}}")


def fill(cell: str, family: str, length: str) -> str:
    """A cell's Markdown with each ``{field ...}`` replaced by its figure for this family and length."""
    return FIELD.sub(lambda m: field(m.group(1), m.group(2).split(), family, length), cell).strip()


def render(columns: str, body: list[str]) -> list[str]:
    heads = [c.strip() for c in columns.split("|")]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for row in body:
        if not row.strip():
            continue
        key, _, cells = row.partition("|")
        family, length = key.split()
        filled = [fill(cell, family, length) for cell in cells.split("|")]
        if len(filled) != len(heads):
            raise ExtensionError(f"eval-table: {len(filled)} cells for {len(heads)} columns in {row!r}")
        lines.append("| " + " | ".join(filled) + " |")
    return lines


class EvalTable(SphinxDirective):
    has_content = True
    option_spec = {"columns": str}  # noqa: RUF012

    def run(self) -> list[nodes.Node]:
        lines = render(self.options["columns"], list(self.content))
        for path in EVAL.glob("*/results.jsonl"):
            self.env.note_dependency(str(path))
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="benchmarks/eval"), self.content_offset, container)
        return container.children


def eval_inline(
    name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None, content: Any = None
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    """``{eval-inline}`FIELD METHOD SWEEP FAMILY LENGTH```: one figure in a sentence."""
    parts = text.split()
    if len(parts) != 5:
        message = inliner.reporter.error(f"eval-inline takes FIELD METHOD SWEEP FAMILY LENGTH, got {text!r}")
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    kind, method, sweep, family, length = parts
    return [nodes.Text(field(kind, [method, sweep], family, length))], []


class EvalSummaries(SphinxDirective):
    """Each sweep's ``SUMMARY.md``, its title as a bold line."""

    def run(self) -> list[nodes.Node]:
        lines: list[str] = []
        for path in sorted(EVAL.glob("*/SUMMARY.md")):
            self.env.note_dependency(str(path))
            text = path.read_text().splitlines()
            if text and text[0].startswith("# "):
                text[0] = f"**`{text[0][2:].strip()}`**"
            lines += [*text, ""]
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="benchmarks/eval"), self.content_offset, container)
        return container.children


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("eval-table", EvalTable)
    app.add_directive("eval-summaries", EvalSummaries)
    app.add_role("eval-inline", eval_inline)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
