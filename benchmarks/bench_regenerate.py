"""Regenerate with the bundled model: does asking again give another proposal?

For each of 10 tasks of the eval's ``dev`` split (S-NIAH, documents and DataFrames at 8K tokens),
the root's first proposal is asked for, then Regenerate is asked 5 times, through the same loop and
client the notebook uses (a regenerated request samples with a seed of its own). The figure is how
many distinct proposals the 6 requests gave; the target is at least 2 for each task.

    python benchmarks/bench_regenerate.py [--tasks 10] [--regenerates 5] [--model qwen2.5-coder-0.5b]

Results go to benchmarks/regenerate.json. It needs the bundled model (fetched on first use) and
takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from rlm_kernel import RLM
from rlm_kernel.driver import Loop, Regenerate, call_lm
from rlm_kernel.engine import AskRoot, Execute
from rlm_kernel.errors import RunCancelled
from rlm_kernel.eval.tasks import generate, generated_tasks

OUT = Path(__file__).resolve().parent / "regenerate.json"
FAMILIES = ("sniah", "documents", "frames")


async def proposals(rlm: RLM, context: object, question: str, regenerates: int) -> list[str]:
    """The root's first proposal, and the proposal after each Regenerate."""
    run = rlm.open(context, question)
    try:
        loop, parts = Loop(run.parts), run.parts
        wait, codes = loop.start(), []
        while len(codes) <= regenerates:
            assert isinstance(wait, AskRoot), wait
            wait = loop.send(await call_lm(parts, wait))
            if not isinstance(wait, Execute):  # no code in the reply: the root is asked again
                continue
            codes.append(wait.code)
            if len(codes) <= regenerates:
                wait = loop.send(Regenerate())
        return codes
    finally:
        run.close(loop.throw(RunCancelled()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--regenerates", type=int, default=5)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    args = parser.parse_args()
    refs = generated_tasks(FAMILIES, [8000], "dev", -(-args.tasks // len(FAMILIES)))[: args.tasks]
    rlm = RLM("local", model_name=args.model, log_dir=False, executor="local")
    rows = []
    started = time.perf_counter()
    for ref in refs:
        task = generate(ref)
        codes = asyncio.run(proposals(rlm, task.context, task.question, args.regenerates))
        distinct = len(set(codes))
        rows.append({"task": task.id, "family": task.family, "distinct": distinct, "asked": len(codes)})
        print(f"{task.id}: {len(set(codes))} distinct of {len(codes)}", flush=True)
    met = sum(r["distinct"] >= 2 for r in rows)
    summary = {
        "model": args.model,
        "split": "dev",
        "families": list(FAMILIES),
        "regenerates": args.regenerates,
        "tasks": rows,
        "tasks_with_2_or_more_distinct": met,
        "target": f"every task: >= 2 distinct of {args.regenerates + 1}",
        "passed": met == len(rows),
        "seconds": round(time.perf_counter() - started, 1),
    }
    OUT.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"{met}/{len(rows)} tasks gave at least 2 distinct proposals; {OUT}")
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
