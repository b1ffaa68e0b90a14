"""How often the `unsupported` warning marks a wrong answer, and how often a right one, in sweeps
already run by ``eval_sweeps.py``: the figure the grounding check is judged by.

    python benchmarks/eval_warnings.py heldout-0.5b heldout-1.5b

A row is wrong when its score is below 1; flagged when the run ended with the ``unsupported``
warning (an answer sent back once and kept, or given on the last turn). Rows that crashed or ended
in an error are left out: they already look like failures.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent / "eval"
MARK = "not supported by what the code printed"


def rates(name: str) -> tuple[int, int, int, int]:
    """(wrong flagged, wrong, right flagged, right) over a sweep's RLM rollouts."""
    counts = [0, 0, 0, 0]
    for line in (HERE / name / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        if not row["method"].startswith("rlm") or row.get("error") or row.get("crashed"):
            continue
        flagged = any(MARK in w for w in (row.get("meta") or {}).get("warnings", []))
        right = row["score"] >= 1.0
        counts[2 if right else 0] += flagged
        counts[3 if right else 1] += 1
    return counts[0], counts[1], counts[2], counts[3]


def main(names: list[str]) -> None:
    print("| sweep | wrong answers flagged | right answers flagged |")
    print("|---|---:|---:|")
    for name in names:
        wf, w, rf, r = rates(name)
        print(f"| `{name}` | {wf} / {w} ({wf / max(w, 1):.0%}) | {rf} / {r} ({rf / max(r, 1):.0%}) |")


if __name__ == "__main__":
    main(sys.argv[1:] or ["heldout-0.5b"])
