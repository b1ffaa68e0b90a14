"""A stateless responder for the scripted LM server, shared by every benchmark.

It is loaded by ``tests/scripted_server.py --script benchmarks/_responder.py`` in a
server subprocess (so the server's CPU work never competes with the measured
process for its GIL), and it can be imported for an in-process server too.

Root requests (those with a system message) are answered from the *question*:
the benchmark writes a plan into it, and the number of assistant messages already
in the conversation says which turn this is. Nothing depends on the order in
which requests arrive, so one server serves many runs, ours and the reference's.

Plans (a token anywhere in the conversation's text):

``FANOUT=N``      turn 1: one ``llm_query_batched`` of N prompts; turn 2: answer.
``ITERATIONS=K``  turns 1..K-1: trivial code; turn K: answer.
``NEEDLE``        turn 1: find the needle in ``context``; turn 2: answer with it.

Every answer is given the way both packages understand: code in a ```` ```repl ````
fence that sets ``answer["content"]`` and then ``answer["ready"] = True``.

Sub-calls (no system message) answer ``ok``. Latencies come from the environment:
``BENCH_SUB_LATENCY`` (seconds, default 0.25) and ``BENCH_ROOT_LATENCY`` (default 0).
"""

from __future__ import annotations

import os
import re
from typing import Any

try:  # under the server's CLI this is the server module itself
    from scripted_server import Reply
except ImportError:  # imported from a benchmark: make tests/ importable first
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from scripted_server import Reply

SUB_LATENCY = float(os.environ.get("BENCH_SUB_LATENCY", "0.25"))
ROOT_LATENCY = float(os.environ.get("BENCH_ROOT_LATENCY", "0"))

_FANOUT = re.compile(r"FANOUT=(\d+)")
_ITERATIONS = re.compile(r"ITERATIONS=(\d+)")

ANSWER = '```repl\nanswer["content"] = {value}\nanswer["ready"] = True\n```'


def fanout_code(n: int) -> str:
    return (
        f'```repl\nreplies = llm_query_batched([f"item {{i}}" for i in range({n})])\nprint(len(replies))\n```'
    )


def root_reply(messages: list[dict[str, Any]]) -> str:
    """The root's next reply for a conversation (a list of ``{"role", "content"}``)."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    turn = sum(1 for m in messages if m.get("role") == "assistant") + 1
    if m := _FANOUT.search(text):
        if turn == 1:
            return fanout_code(int(m.group(1)))
        return ANSWER.format(value='f"{len(replies)} replies"')
    if m := _ITERATIONS.search(text):
        if turn < int(m.group(1)):
            return f"```repl\nx = {turn}\nprint(x)\n```"
        return ANSWER.format(value="str(x)")
    if "NEEDLE" in text:
        if turn == 1:
            return (
                '```repl\nat = context.find("MAGIC NUMBER IS ")\n'
                'found = context[at + 16 : at + 24]\nprint("found", found)\n```'
            )
        return ANSWER.format(value="found")
    return ANSWER.format(value='"no plan"')


def responder(request: Any) -> Reply:
    if request.is_root:
        return Reply(text=root_reply(request.messages), delay=ROOT_LATENCY)
    return Reply(text="ok", delay=SUB_LATENCY)
