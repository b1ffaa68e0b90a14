"""Right, warned and silently wrong, by family, in sweeps of the RLM: the figures the small-model
scaffold is judged by on the families held out from its development.

    python benchmarks/eval_heldout.py holdout-2026-12/0.5b-votes3 [more sweeps ...]

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
    rows = [json.loads(line) for line in (HERE / name / "results.jsonl").read_text().splitlines() if line]
    by_family: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if row["method"].startswith("rlm"):
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


def _line(label: str, rows: list[dict]) -> str:
    counts = {"right": 0, "warned": 0, "wrong": 0}
    for row in rows:
        counts[verdict(row)] += 1
    times = [row.get("wall_s") or 0.0 for row in rows]
    median = statistics.median(times) if times else 0.0
    right, warned, wrong = counts["right"], counts["warned"], counts["wrong"]
    return f"| {label} | {len(rows)} | {right} | {warned} | {wrong} | {median:.0f} |"


if __name__ == "__main__":
    for sweep in sys.argv[1:]:
        print("\n".join(summary(sweep)), end="\n\n")
