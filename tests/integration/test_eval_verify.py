"""The evaluation's ``--verify``: each rollout's answer goes to the sub-model's verdict, and an answer
it keeps doubting is marked ``unsupported`` in the results row."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_server import Reply, Request, ScriptedServer

from rlm_kernel import eval as rlm_eval

ANSWER = "```repl\nprint(4)\nanswer['content'] = '4'\nanswer['ready'] = True\n```"


def responder(request: Request) -> Reply:
    """The root prints its answer (so the cheap check passes); the sub-model never believes it."""
    return Reply(text=ANSWER if request.is_root else "UNSUPPORTED: 4 is a guess")


@pytest.mark.parametrize("verify", [True, False])
def test_verify_reaches_the_rollouts(tmp_path: Path, verify: bool) -> None:
    tasks = tmp_path / "count.jsonl"
    tasks.write_text(
        json.dumps({"id": "c", "context": "a b c d", "question": "How many?", "answer": "4"}) + "\n"
    )
    out = tmp_path / "out"
    with ScriptedServer(responder) as server:
        cmd = [
            sys.executable, "-m", "rlm_kernel.eval", "run", "--tasks", "", "--task-file", str(tasks),
            "--methods", "rlm", "--out", str(out), "--backend", "openai", "--model-name", "gpt-4o-mini",
            "--base-url", server.openai_base_url, "--executor", "local", "--no-progress",
            *(["--verify"] if verify else []),
        ]  # fmt: skip
        proc = subprocess.run(
            cmd, env={**os.environ, "OPENAI_API_KEY": "sk-test"}, capture_output=True, text=True, timeout=120
        )
        verdicts = [r for r in server.requests if not r.is_root]
    assert proc.returncode == 0, proc.stderr
    (row,) = rlm_eval.load(out).rows
    warnings = (row.meta or {}).get("warnings", [])
    assert row.answer == "4" and row.score == 1.0
    if verify:  # asked twice (the answer, then the same answer again), doubted both times
        assert len(verdicts) == 2 and row.iterations == 2
        assert any("4 is a guess" in w for w in warnings)
    else:
        assert verdicts == [] and row.iterations == 1 and warnings == []
