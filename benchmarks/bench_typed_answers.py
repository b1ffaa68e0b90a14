"""Typed answers with a small model: the records family, untyped against ``output_type=``.

Each task of the ``records`` family (``test`` split: support tickets, as a list of dicts or as CSV
text; counts, a count by two fields, a sum, a count in a month, the name that occurs most) is run
twice on the bundled model (``qwen2.5-coder-1.5b`` by default, as root and sub-model,
``executor="local"``): as it is, and with ``output_type`` the type of its expected answer (``int``,
``float`` or ``str``). Both are scored by the task's own scorer, the typed value as its JSON text.

The family is one the small profile was developed on (its worked example for rows); nothing of the
typed answers was tuned on it. Target: the typed variant's mean score is at least the untyped one's.

    python benchmarks/bench_typed_answers.py [--quick] [--json benchmarks/typed_answers.json]
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import main, target, timed

MODEL = "qwen2.5-coder-1.5b"


def run(quick: bool) -> dict:
    from rlm_kernel import RLM
    from rlm_kernel.eval.methods import DEFAULTS
    from rlm_kernel.eval.scoring import score
    from rlm_kernel.eval.tasks import generate, generated_tasks, parse_length

    n, length = (4, "4k") if quick else (10, "8k")
    config = replace(DEFAULTS, model_name=MODEL, executor="local", max_timeout=600.0)
    rows = []
    for ref in generated_tasks(["records"], [parse_length(length)], "test", n):
        task = generate(ref)
        kind = task.meta["question_type"]
        for variant, declared in (("untyped", None), ("typed", type(task.answer))):
            rlm = RLM.from_config(replace(config, output_type=declared))
            wall, result = timed(lambda r=rlm, t=task: r.completion(t.context, t.question))
            answer = result.response
            if answer is not None and not isinstance(answer, str):
                answer = json.dumps(answer)
            rows.append(
                {
                    "task": task.id,
                    "kind": kind,
                    "container": task.meta["container"],
                    "variant": variant,
                    "score": score(task.scorer, answer, task.answer),
                    "answer": None if answer is None else answer[:80],
                    "expected": task.answer,
                    "error": (result.error or "")[:160] or None,
                    "turns": result.iterations,
                    "wall_s": round(wall, 1),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    means = {
        v: round(
            sum(r["score"] for r in rows if r["variant"] == v) / max(1, sum(r["variant"] == v for r in rows)),
            3,
        )
        for v in ("untyped", "typed")
    }
    retyped = sum(1 for r in rows if r["variant"] == "typed" and r["error"] and "declared type" in r["error"])
    return {
        "name": "typed_answers",
        "model": MODEL,
        "family": "records",
        "split": "test",
        "length": length,
        "n": n,
        "figures": rows,
        "summary": {"mean_untyped": means["untyped"], "mean_typed": means["typed"], "typed_errors": retyped},
        "targets": [
            target(
                "typed mean score - untyped mean score",
                means["typed"] - means["untyped"],
                0,
                lower_is_better=False,
            )
        ],
        "notes": [
            "records is a family the small profile was developed on (its worked example for rows); the typed "
            "answers were tuned on no family",
        ],
    }


if __name__ == "__main__":
    main("typed_answers", run)
