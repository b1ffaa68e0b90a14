"""``oversize="split"`` on a task whose sub-call cannot fit the sub-model's window.

S-NIAH tasks of the ``dev`` split at 16K tokens, on the bundled 0.5B model as the sub-model (an
8,192-token window). The root is scripted (the scripted server, in this process): it asks one
``llm_query`` with the whole context and the question, prints the reply, and commits it. So every
prompt is about twice the sub-model's window:

- with ``oversize="error"`` (the default) the prompt is refused before it is sent
  (``SubcallTooLarge``), and the run has no answer;
- with ``oversize="split"`` it goes in parts that fit, and the parts' answers come back joined.

Reported: the share of runs that end with an answer and no error, and the task's own score (the
needle is in the answer), which is the 0.5B model's reading of each part. Targets: every run
answered with ``split``, and no request past the window (the server would refuse one: HTTP 400).

    python benchmarks/bench_oversize_split.py [--quick] [--json benchmarks/oversize_split.json]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import main, target, timed


def run(quick: bool) -> dict:
    import tempfile

    from scripted_server import Script, ScriptedServer

    from rlm_kernel import RLM
    from rlm_kernel.eval.scoring import score
    from rlm_kernel.eval.tasks import generate, generated_tasks, parse_length

    n = 2 if quick else 5
    rows = []
    with ScriptedServer() as server, tempfile.TemporaryDirectory() as logs:
        root = {"model_name": "scripted-root", "base_url": server.openai_base_url, "api_key": "sk-bench"}
        for ref in generated_tasks(["sniah"], [parse_length("16k")], "dev", n):
            task = generate(ref)
            ask = f"{task.question} Answer with the value only, or say 'none' if this text does not have it."
            prompt = repr("\n\n" + ask)
            for oversize in ("error", "split"):
                server.responder = Script(
                    root=[
                        f"```repl\nreply = llm_query(str(context) + {prompt})\nprint(reply)\n```",
                        "```repl\nanswer['content'] = reply\nanswer['ready'] = True\n```",
                    ]
                )
                rlm = RLM(
                    "openai",
                    root,
                    sub_backend="local",
                    sub_model_name="qwen2.5-coder-0.5b",
                    oversize=oversize,
                    max_iterations=3,
                    log_dir=logs,
                )
                wall, result = timed(lambda r=rlm, t=task: r.completion(t.context, t.question))
                subcalls = [e for e in result.trajectory if e.kind == "subcall_finished"]
                rows.append(
                    {
                        "task": task.id,
                        "oversize": oversize,
                        "answered": result.ok,
                        "score": score(task.scorer, result.response, task.answer),
                        "context_chars": task.context_chars,
                        "subcalls": len(subcalls),
                        "refused": sum(1 for e in subcalls if e.error and "SubcallTooLarge" in e.error),
                        "provider_errors": sum(1 for e in subcalls if e.error and "HTTP 400" in e.error),
                        "error": (result.error or "")[:160] or None,
                        "wall_s": round(wall, 1),
                    }
                )
                print(rows[-1], flush=True)

    def mean(variant: str, key: str = "score") -> float:
        chosen = [float(r[key]) for r in rows if r["oversize"] == variant]
        return round(sum(chosen) / len(chosen), 3)

    return {
        "name": "oversize_split",
        "family": "sniah",
        "split": "dev",
        "length": "16k",
        "n": n,
        "figures": rows,
        "summary": {
            "answered_error": mean("error", "answered"),
            "answered_split": mean("split", "answered"),
            "mean_error": mean("error"),
            "mean_split": mean("split"),
        },
        "targets": [
            target("split: share of runs answered", mean("split", "answered"), 1.0, lower_is_better=False),
            target("requests past the window", sum(r["provider_errors"] for r in rows), 0),
        ],
        "notes": [
            "the root is scripted; the sub-model is the bundled 0.5B model (8,192-token window)",
            "S-NIAH is a family the small profile was developed on; oversize='split' was tuned on no family",
        ],
    }


if __name__ == "__main__":
    main("oversize_split", run)
