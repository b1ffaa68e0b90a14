"""Right, warned and silently wrong, by family, in sweeps of the RLM: the figures the small-model
scaffold is judged by on the families held out from its development.

    python benchmarks/eval_heldout.py holdout-2026-12/0.5b-votes3 [more sweeps ...]
    python benchmarks/eval_heldout.py --compare holdout-6-0.5b-one-root:holdout-6-1.5b-one-root [...]

``--compare A:B`` puts two sweeps side by side on the tasks both ran (two models on one set): right,
silently wrong, the median time, and right answers per hour of the rollouts' summed wall time.

A rollout is *right* when it scored 1 with no warning; *warned* when the run ended in an error, gave
no answer, or carried the ``unsupported`` or ``low_confidence`` warning (a warned answer is not
counted right, whatever its score); *silently wrong* otherwise. Times are each rollout's wall time.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent / "eval"
MARKS = ("not supported by what the code printed", "Low confidence:")


def verdict(row: dict) -> str:
    warnings = (row.get("meta") or {}).get("warnings", [])
    if row.get("error") or row.get("crashed") or row.get("answer") in (None, ""):
        return "warned"
    if any(mark in w for w in warnings for mark in MARKS):
        return "warned"
    return "right" if row["score"] >= 1.0 else "wrong"


def summary(name: str) -> list[str]:
    by_family: dict[str, list[dict]] = defaultdict(list)
    for row in _rows(name).values():
        by_family[row["family"]].append(row)
    lines = [
        f"## {name}",
        "",
        "| family | n | right | warned | silently wrong | median s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    every: list[dict] = []
    for family, group in sorted(by_family.items()):
        every += group
        lines.append(_line(family, group))
    lines.append(_line("all", every))
    return lines


def _rows(name: str) -> dict[str, dict]:
    """A sweep's RLM rollouts by task id, so two sweeps are compared on the tasks both ran."""
    lines = (HERE / name / "results.jsonl").read_text().splitlines()
    rows = map(json.loads, filter(None, lines))
    return {row["task_id"]: row for row in rows if row["method"].startswith("rlm")}


def compare(pairs: list[str]) -> list[str]:
    """A row for each sweep of each ``A:B`` pair on their shared tasks, then one for each model over
    every pair."""
    lines = [
        "| sweep | tasks | right | silently wrong | median s | right per hour |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    by_model: dict[str, list[dict]] = defaultdict(list)
    for pair in pairs:
        first, second = pair.split(":")
        a, b = _rows(first), _rows(second)
        shared = sorted(a.keys() & b.keys())
        for name, rows in ((first, a), (second, b)):
            picked = [rows[task] for task in shared]
            by_model[picked[0]["model"]] += picked
            lines.append(_compared(f"`{name}`", picked))
    lines += [_compared(f"all, {model}", rows) for model, rows in sorted(by_model.items())]
    return lines


def _compared(label: str, rows: list[dict]) -> str:
    verdicts = [verdict(row) for row in rows]
    times = [row.get("wall_s") or 0.0 for row in rows]
    right = verdicts.count("right")
    per_hour = right / (sum(times) / 3600) if sum(times) else 0.0
    median = statistics.median(times)
    return f"| {label} | {len(rows)} | {right} | {verdicts.count('wrong')} | {median:.0f} | {per_hour:.1f} |"


def _line(label: str, rows: list[dict]) -> str:
    counts = {"right": 0, "warned": 0, "wrong": 0}
    for row in rows:
        counts[verdict(row)] += 1
    times = [row.get("wall_s") or 0.0 for row in rows]
    median = statistics.median(times) if times else 0.0
    right, warned, wrong = counts["right"], counts["warned"], counts["wrong"]
    return f"| {label} | {len(rows)} | {right} | {warned} | {wrong} | {median:.0f} |"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--compare"]:
        print("\n".join(compare(sys.argv[2:])))
    else:
        for sweep in sys.argv[1:]:
            print("\n".join(summary(sweep)), end="\n\n")
