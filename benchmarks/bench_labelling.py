"""Labelling throughput with a bundled model: ``classify()`` inside an RLM run against llama.cpp's
own batched limit on this machine, and accuracy with one item or several items a request.

The items are questions of the TREC ``dev`` half (OOLONG's data; its ``test`` half is what the
sweeps score), with their coarse labels as the gold answers. For each number of llama.cpp slots:

* ``limit``: the same labelling requests ``classify`` makes (the few-shot turns, then one item),
  sent straight to the llama.cpp server by ``openai.AsyncOpenAI`` with twice as many in flight as
  slots, so every slot stays busy: labels per second with continuous batching, and the server's
  tokens per second (prompt tokens read plus tokens written, from its usage counts);
* ``classify``: one RLM run whose root (the scripted server) makes one ``classify(items, labels,
  examples)`` call, its sub-calls on the bundled model: labels per second over the step that
  labels, and the share of the limit it reaches (target: at least 0.8).

Then accuracy and labels per second with ``k`` items a request (``k`` = 1, 4, 8), sent the same
way as the limit: whether batching items keeps the labels right.

    python benchmarks/bench_labelling.py [--model qwen2.5-coder-1.5b] [--items 60] [--slots 1,2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

TARGET = 0.8
KEY = [""]  # the local server's API key, from its client


def dataset(n: int, seed: int = 7) -> tuple[list[str], list[str], list[tuple[str, str]], list[str]]:
    """``n`` dev questions and their labels, the label names, and one example of each label."""
    from rlm_kernel.eval.oolong import LABELS, trec

    pool = list(trec("dev"))
    rng = random.Random(seed)
    rng.shuffle(pool)
    labels = list(LABELS.values())
    examples = [next((q, lab) for lab, q in pool[-400:] if lab == label) for label in labels]
    chosen = pool[:n]
    return [q for _, q in chosen], [lab for lab, _ in chosen], examples, labels


def shots(labels: list[str], examples: list[tuple[str, str]]) -> list[dict[str, str]]:
    system = f"Label the text. Answer with one of these labels only: {', '.join(labels)}."
    out = [{"role": "system", "content": system}]
    for text, label in examples:
        out += [{"role": "user", "content": text}, {"role": "assistant", "content": label}]
    return out


def batched_shots(labels: list[str], examples: list[tuple[str, str]], k: int) -> list[dict[str, str]]:
    system = (
        f"Label each numbered text. Answer with one line per text, '<number>. <label>', using only "
        f"these labels: {', '.join(labels)}."
    )
    shown = examples[:k] if len(examples) >= k else examples
    asked = "\n".join(f"{i}. {text}" for i, (text, _) in enumerate(shown, 1))
    answered = "\n".join(f"{i}. {label}" for i, (_, label) in enumerate(shown, 1))
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": asked},
        {"role": "assistant", "content": answered},
    ]


async def send_all(client, model: str, conversations: list[list[dict]], in_flight: int, max_tokens: int):
    gate = asyncio.Semaphore(in_flight)
    tokens = [0]

    async def one(messages):
        async with gate:
            reply = await client.chat.completions.create(
                model=model, messages=messages, max_tokens=max_tokens, temperature=0.0
            )
            tokens[0] += reply.usage.prompt_tokens + reply.usage.completion_tokens
            return reply.choices[0].message.content or ""

    started = time.perf_counter()
    replies = await asyncio.gather(*(one(m) for m in conversations))
    return replies, time.perf_counter() - started, tokens[0]


def limit(base_url: str, model: str, items, labels, examples, slots: int) -> dict:
    import openai

    from rlm_kernel.helpers import _label_of

    async def go():
        client = openai.AsyncOpenAI(base_url=base_url, api_key=KEY[0], max_retries=0, timeout=600)
        prefix = shots(labels, examples)
        await send_all(client, model, [[*prefix, {"role": "user", "content": items[0]}]], 1, 12)  # warm cache
        convs = [[*prefix, {"role": "user", "content": t}] for t in items]
        replies, seconds, tokens = await send_all(client, model, convs, 2 * slots, 12)
        await client.close()
        return [_label_of(r, labels) for r in replies], seconds, tokens

    got, seconds, tokens = asyncio.run(go())
    return {"labels_per_s": len(items) / seconds, "tokens_per_s": tokens / seconds, "labels": got}


def batched(base_url: str, model: str, items, labels, examples, slots: int, k: int) -> dict:
    import re

    import openai

    from rlm_kernel.helpers import _label_of

    prefix = batched_shots(labels, examples, k)
    chunks = [items[i : i + k] for i in range(0, len(items), k)]

    async def go():
        client = openai.AsyncOpenAI(base_url=base_url, api_key=KEY[0], max_retries=0, timeout=600)
        convs = [
            [*prefix, {"role": "user", "content": "\n".join(f"{i}. {t}" for i, t in enumerate(c, 1))}]
            for c in chunks
        ]
        replies, seconds, _ = await send_all(client, model, convs, 2 * slots, 12 * k)
        await client.close()
        return replies, seconds

    replies, seconds = asyncio.run(go())
    got: list[str] = []
    for chunk, reply in zip(chunks, replies, strict=True):
        lines = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\s*(\d+)[.):]\s*(.+)$", reply, re.M)}
        got += [_label_of(lines.get(i, ""), labels) for i in range(1, len(chunk) + 1)]
    return {"labels_per_s": len(items) / seconds, "labels": got}


def through_classify(model: str, items, labels, examples, slots: int) -> dict:
    from scripted_server import Script, ScriptedServer

    from rlm_kernel import RLM

    code = (
        "```repl\nlabels = classify(context, LABELS, EXAMPLES)\nn = labels.count(LABELS[0])\nprint(n)\n"
        "answer['content'] = str(n)\nanswer['ready'] = True\n```"
    )
    setup = f"```repl\nLABELS = {labels!r}\nEXAMPLES = {examples!r}\nprint(len(context))\n```"
    with ScriptedServer(Script(root=[setup, code])) as server:
        rlm = RLM(
            "openai",
            {"model_name": "scripted", "base_url": server.openai_base_url, "api_key": "test"},
            sub_backend="local",
            sub_model_name=model,
            sub_backend_kwargs={"n_parallel": slots},
            prompt_profile="small",
            max_concurrency=2 * slots,
            log_dir=False,
        )
        result = rlm.completion(list(items), "How many are of the first label?")
    steps = [e for e in result.trajectory if e.kind == "step_finished"]
    if result.error or len(steps) < 2:
        return {"error": result.error or "the run did not label"}
    calls = [e for e in result.trajectory if e.kind == "subcall_finished" and e.step == steps[-1].step]
    return {"labels_per_s": len(items) / steps[-1].elapsed_s, "calls": len(calls)}


def accuracy(got: list[str], gold: list[str]) -> float:
    return sum(a == b for a, b in zip(got, gold, strict=True)) / len(gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--items", type=int, default=60)
    parser.add_argument("--slots", default="1,2")
    parser.add_argument("--batch", default="4,8")
    parser.add_argument("--out", default=str(Path(__file__).with_name("labelling.json")))
    args = parser.parse_args()

    from rlm_kernel.lm import make_lm

    items, gold, examples, labels = dataset(args.items)
    report: dict = {"model": args.model, "items": len(items), "split": "dev", "target": TARGET, "slots": {}}
    for slots in [int(s) for s in args.slots.split(",")]:
        lm = make_lm("local", {"model_name": args.model, "n_parallel": slots})
        base_url, served = str(lm.base_url), lm.model_name
        KEY[0] = lm._api_key
        row: dict = {}
        raw = limit(base_url, served, items, labels, examples, slots)
        row["limit"] = {
            "labels_per_s": round(raw["labels_per_s"], 3),
            "tokens_per_s": round(raw["tokens_per_s"], 1),
            "accuracy": round(accuracy(raw["labels"], gold), 3),
        }
        ours = through_classify(args.model, items, labels, examples, slots)
        if "labels_per_s" in ours:
            ours["labels_per_s"] = round(ours["labels_per_s"], 3)
            ours["of_limit"] = round(ours["labels_per_s"] / raw["labels_per_s"], 3)
            ours["passed"] = ours["of_limit"] >= TARGET
        row["classify"] = ours
        for k in [int(b) for b in args.batch.split(",") if b]:
            got = batched(base_url, served, items, labels, examples, slots, k)
            row[f"batch_{k}"] = {
                "labels_per_s": round(got["labels_per_s"], 3),
                "accuracy": round(accuracy(got["labels"], gold), 3),
            }
        report["slots"][str(slots)] = row
        print(json.dumps({"slots": slots, **row}), flush=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
