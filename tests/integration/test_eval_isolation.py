"""The evaluation's command line runs its RLM rollouts in sandboxed kernels, or, where no sandbox can
be made and it is told ``--isolation none``, in kernels without one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_server import Reply, Request, ScriptedServer

from rlm_kernel import eval as rlm_eval
from rlm_kernel.executors.sandbox import problem


def in_a_sandbox(request: Request) -> Reply:
    """The root: whether its code runs in a sandbox (the kernel's parent is the sandbox's first process)."""
    return Reply(text="```repl\nimport os\nFINAL(str(os.getppid() == 1))\n```")


@pytest.mark.parametrize(("isolation", "answer"), [("sandbox", "True"), ("none", "False")])
def test_the_command_lines_isolation_reaches_the_rollouts_kernels(
    tmp_path: Path, isolation: str, answer: str
) -> None:
    if isolation == "sandbox" and problem() is not None:
        pytest.skip(problem())
    tasks = tmp_path / "where.jsonl"
    tasks.write_text(
        json.dumps({"id": "w", "context": "c", "question": "Sandboxed?", "answer": answer}) + "\n"
    )
    out = tmp_path / "out"
    with ScriptedServer(in_a_sandbox) as server:
        cmd = [
            sys.executable, "-m", "rlm_kernel.eval", "run", "--tasks", "", "--task-file", str(tasks),
            "--methods", "rlm", "--out", str(out), "--backend", "openai", "--model-name", "gpt-4o-mini",
            "--base-url", server.openai_base_url, "--isolation", isolation, "--no-progress",
        ]  # fmt: skip
        proc = subprocess.run(
            cmd, env={**os.environ, "OPENAI_API_KEY": "sk-test"}, capture_output=True, text=True, timeout=120
        )
    assert proc.returncode == 0, proc.stderr
    (row,) = rlm_eval.load(out).rows
    assert row.answer == answer and row.score == 1.0
