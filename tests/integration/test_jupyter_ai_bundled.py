"""The RLM persona with no key and no backend set: the notebook's kernel runs the bundled model, the
chat says so in one line, and the run reaches the chat as a scripted one does."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("jupyter_ai_persona_manager")

from kernel_session import KernelSession
from test_jupyter_ai_persona import Chat

pytestmark = pytest.mark.local_model

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "RLM_BACKEND", "RLM_MODEL", "RLM_SUB_MODEL")


def test_with_no_key_the_chat_runs_the_bundled_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in KEYS:
        monkeypatch.delenv(var, raising=False)
    shipments = [
        {"supplier": "Acme", "days_late": 3},
        {"supplier": "Birch", "days_late": 0},
        {"supplier": "Cobalt", "days_late": 5},
        {"supplier": "Dune", "days_late": 0},
    ] * 50
    env = {"RLM_LOG_DIR": str(tmp_path)}
    with KernelSession("python3", env) as kernel:
        assert kernel.execute(f"shipments = {json.dumps(shipments)}")["status"] == "ok"
        chat = Chat(kernel)
        asyncio.run(chat.say("@RLM how many shipments have days_late above 0? @shipments"))
    [reply] = chat.replies()
    head, notice = (re.sub(r"\\(.)", r"\1", line) for line in reply.split("\n\n")[:2])  # as read
    assert head.startswith("RLM over `shipments` · qwen2.5-coder-0.5b"), reply
    assert notice == (
        "No API key found (OPENAI_API_KEY or ANTHROPIC_API_KEY): using the bundled model, "
        "qwen2.5-coder-0.5b, on this machine."
    )
    assert "**Step 1**" in reply, reply
    assert "**Answer**" in reply or "**Error:**" in reply, reply  # a run that ended, said either way
    [trajectory] = tmp_path.glob("*.jsonl")
    events = [json.loads(line) for line in trajectory.read_text().splitlines()]
    assert events[0]["kind"] == "run_started" and events[-1]["kind"] == "run_ended"
    if events[-1]["error"] is None:  # an answer is in the chat as the run gave it
        assert "**Answer**" in reply and "**Error:**" not in reply, reply
    else:
        assert "**Error:**" in reply, reply
