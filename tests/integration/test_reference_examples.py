"""The reference ``rlms`` package's own examples, with only their imports changed, run against the
scripted server through the real OpenAI SDK, each in a Python process of its own.

The examples (tests/fixtures/rlms_examples, from github.com/alexzhang13/rlm at 72d6940, MIT) are kept
byte for byte; the test rewrites their ``from rlm ... import`` lines and checks that nothing else
changed. The server plays a model that follows each example's instructions.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from scripted_server import Reply, Request, ScriptedServer

EXAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "rlms_examples"
IMPORTS = {
    "from rlm import RLM": "from rlm_kernel import RLM",
    "from rlm.logger import RLMLogger": "from rlm_kernel import RLMLogger",
}


def ported(name: str, folder: Path) -> Path:
    """The example with its imports changed, and only them: every other line is the original's."""
    original = (EXAMPLES / f"{name}.py").read_text()
    text = original
    for old, new in IMPORTS.items():
        text = text.replace(old + "\n", new + "\n")
    before, after = original.splitlines(), text.splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed and all(a in IMPORTS and IMPORTS[a] == b for a, b in changed)
    path = folder / f"{name}.py"
    path.write_text(text)
    return path


def repl(*lines: str, prose: str = "") -> str:
    return f"{prose}\n```repl\n" + "\n".join(lines) + "\n```\n"


def opening(request: Request) -> tuple[str, int]:
    """The run's first request (the context's description and the question), and which turn this is."""
    users = [i for i, m in enumerate(request.messages) if m["role"] == "user" and "Question:" in m["content"]]
    first = users[-1] if users else 1
    turn = 1 + sum(1 for m in request.messages[first + 1 :] if m["role"] == "assistant")
    return request.messages[first]["content"], turn


def child(question: str, turn: int) -> str:
    """A child run's root: it answers its small question in one step."""
    numbers = {"prime": "2, 3, 5, 7, 11", "even": "2, 4, 6, 8, 10", "square": "1, 4, 9, 16, 25"}
    kind = next(k for k in numbers if k in question)
    return repl(
        f"print({numbers[kind]!r})", f"answer['content'] = {numbers[kind]!r}", "answer['ready'] = True"
    )


class Turns:
    """A single root run's replies in order, on the server's loop (requests of one run come one at a time)."""

    def __init__(
        self, *replies: str | Reply | Callable[[Request], str], sub: Callable[[Request], str] | None = None
    ) -> None:
        self.replies = list(replies)
        self.sub = sub
        self.lock = threading.Lock()
        self.roots = 0

    def __call__(self, request: Request) -> Reply | str:
        if not request.is_root:
            return self.sub(request) if self.sub else "ok"
        with self.lock:
            self.roots += 1
            if self.roots > len(self.replies):
                return Reply(status=500, error_message="script exhausted")
            reply = self.replies[self.roots - 1]
        return reply(request) if callable(reply) else reply


def run_example(name: str, server: ScriptedServer, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = ported(name, tmp_path)
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": server.openai_base_url,
        "PORTKEY_API_KEY": "pk-test",
        "PORTKEY_BASE_URL": server.openai_base_url,
        "RLM_LOG_DIR": str(tmp_path / "runs"),
        "PYTHONUNBUFFERED": "1",
    }
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def events(tmp_path: Path) -> list[dict]:
    files = sorted((tmp_path / "runs").glob("*.jsonl")) + sorted((tmp_path / "logs").glob("*.jsonl"))
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]


@pytest.fixture
def server() -> ScriptedServer:  # type: ignore[misc]
    with ScriptedServer() as srv:
        yield srv


def test_quickstart(server: ScriptedServer, tmp_path: Path) -> None:
    server.responder = Turns(
        repl("import re", "m = re.search(r'SECRET_NUMBER=(\\d+)', context)", "print(m.group(1))"),
        repl("answer['content'] = m.group(1)", "answer['ready'] = True"),
    )
    out = run_example("quickstart", server, tmp_path).stdout
    assert re.search(r"Model found: \d{9}", out)
    assert "Correct: True" in out
    assert "── run" in out  # verbose=True: the console's progress
    started = next(e for e in events(tmp_path) if e["kind"] == "run_started")  # logger's log_dir: ./logs
    assert started["settings"]["max_iterations"] == 10 and started["settings"]["executor"] == "local"
    assert list((tmp_path / "logs").glob("*.jsonl"))


def test_custom_tools(server: ScriptedServer, tmp_path: Path) -> None:
    described = []

    def first(request: Request) -> str:
        described.append("Fetch current stock price data for a symbol" in (request.system or ""))
        return repl(
            "a, g = fetch_stock_price('AAPL'), fetch_stock_price('GOOGL')",
            "total = calculate_portfolio_value({'AAPL': 100, 'GOOGL': 100})",
            "print(a['price'], g['price'], format_currency(total), MARKET_CONFIG['exchange'])",
        )

    server.responder = Turns(
        first, repl("answer['content'] = format_currency(total)", "answer['ready'] = True")
    )
    out = run_example("custom_tools_example", server, tmp_path).stdout
    assert described == [True]
    assert "Final Answer: $31,975.00" in out
    called = [e for e in events(tmp_path) if e["kind"] == "tool_call"]
    assert [e["tool"] for e in called][:2] == ["fetch_stock_price", "fetch_stock_price"]


def test_compaction(server: ScriptedServer, tmp_path: Path) -> None:
    words = "step value list mean median keep print random seed data later name store compute".split()
    pick = random.Random(7)
    prose = " ".join(pick.choice(words) + str(pick.randint(0, 999)) for _ in range(300))  # no loop in it
    steps = [
        [
            "import random, statistics",
            "random.seed(42)",
            "data_a = [random.randint(1, 1000) for _ in range(50)]",
            "print(data_a)",
        ],
        ["data_b = [random.randint(1, 1000) for _ in range(50)]", "print(data_b)"],
        [
            "mean_a = statistics.mean(data_a)",
            "print(mean_a, statistics.median(data_a), min(data_a), max(data_a))",
        ],
        [
            "mean_b = statistics.mean(data_b)",
            "print(mean_b, statistics.median(data_b), min(data_b), max(data_b))",
        ],
        [
            "final_value = round(mean_a + mean_b, 2)",
            "print(final_value)",
            "answer['content'] = final_value",
            "answer['ready'] = True",
        ],
    ]
    # From the third turn on the provider counts a long conversation: past 2% of gpt-5-nano's window.
    replies = [
        Reply(text=repl(*s, prose=prose), input_tokens=9_000 if i >= 2 else None) for i, s in enumerate(steps)
    ]
    summaries = []

    def sub(request: Request) -> str:
        summaries.append(request.last_user)
        return "data_a and data_b hold the two lists; mean_a and mean_b their means."

    server.responder = Turns(*replies, sub=sub)
    out = run_example("compaction_example", server, tmp_path).stdout
    recorded = events(tmp_path)
    answer = next(e for e in recorded if e["kind"] == "run_ended")
    assert answer["error"] is None and f"Response: {answer['response']}" in out
    compacted = [e for e in recorded if e["kind"] == "compacted"]
    assert compacted and summaries
    assert {"data_a", "data_b", "mean_a"} <= set(compacted[-1]["names"])
    settings = next(e for e in recorded if e["kind"] == "run_started")["settings"]
    assert settings["compaction"] is True and settings["compaction_threshold"] == 0.02


def depth_server(server: ScriptedServer, parent: list[str]) -> None:
    def respond(request: Request) -> Reply | str:
        if not request.is_root:
            return "ok"
        task, turn = opening(request)
        if "Use rlm_query" not in task:  # a child run, whose context is its parent's prompt
            return child(task, turn)
        return parent[turn - 1] if turn <= len(parent) else Reply(status=500, error_message="exhausted")

    server.responder = respond


def test_rlm_query_batched(server: ScriptedServer, tmp_path: Path) -> None:
    questions = [
        "What are the first 5 prime numbers? Reply with just the numbers.",
        "What are the first 5 even numbers? Reply with just the numbers.",
        "What are the first 5 square numbers? Reply with just the numbers.",
    ]
    depth_server(
        server,
        [
            repl(f"responses = rlm_query_batched({questions!r})", "print(responses)"),
            repl("answer['content'] = responses", "answer['ready'] = True"),
        ],
    )
    out = run_example("rlm_query_batched_example", server, tmp_path).stdout
    assert "2, 3, 5, 7, 11" in out and "1, 4, 9, 16, 25" in out
    assert "Total sub-calls found: 3" in out
    assert out.count("^ has nested metadata: 1 iteration(s)") == 3
    assert "tokens: in=" in out and "calls=" in out  # usage_summary by model


def test_depth_metadata(server: ScriptedServer, tmp_path: Path) -> None:
    question = "What are the first 5 prime numbers? Reply with just the numbers separated by commas."
    depth_server(
        server,
        [
            repl(f"primes = rlm_query({question!r})", "print(primes)"),
            repl("answer['content'] = primes", "answer['ready'] = True"),
        ],
    )
    out = run_example("depth_metadata_example", server, tmp_path).stdout
    assert "Response: 2, 3, 5, 7, 11" in out
    assert "^ has nested metadata: 1 iteration(s)" in out
    assert '"run_metadata"' in out and '"iterations"' in out
    assert "Trajectory: 1 iterations" in out


def test_logger(server: ScriptedServer, tmp_path: Path) -> None:
    server.responder = Turns(
        repl("s = 1 + 2 + 3 + 4 + 5", "print(s)"),
        repl("answer['content'] = s", "answer['ready'] = True"),
    )
    out = run_example("logger_example", server, tmp_path).stdout
    assert "Response: 15" in out
    assert "Trajectory: run_metadata + 2 iterations" in out
    assert (
        "First iteration keys: ['prompt', 'response', 'code_blocks', 'final_answer', 'iteration_time']" in out
    )
