"""One root loop, three drivers: the same scripted runs give the same events through the blocking
driver, the async driver and notebook mode (a real RLM Python kernel, the tests playing the
extension's part)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from frontend import FrontEnd
from kernel_session import KernelSession
from scripted_server import Reply, Script, ScriptedServer

from rlm_kernel import RLM
from rlm_kernel.trajectory import load

CONTEXT = "abcdefg" * 3

# name -> the root's replies; each run ends by itself (answer, FINAL, the limit, a provider error)
SCENARIOS = {
    "answer": [
        "Look first.\n```repl\nn = len(context)\nprint(n)\n```",
        "```repl\nanswer['content'] = str(n * 2)\nanswer['ready'] = True\n```",
    ],
    "error_then_final": [
        "```repl\nx = context[100]\n```",
        "```repl\nx = context[:3]\nprint(x)\n```\nFINAL_VAR(x)",
    ],
    "two_blocks_and_a_nudge": [
        "No code in this reply.",
        "```repl\na = 1\n```\n```repl\nprint(a + 1)\n```",
        "FINAL(2)",
    ],
    "iteration_limit": ["```repl\nprint(1)\n```", "```repl\nprint(2)\n```", "Out of turns: 3"],
    "provider_error": ["```repl\nprint(len(context))\n```", Reply(status=400, error_message="bad request")],
}
SETTINGS = {"iteration_limit": {"max_iterations": 2}}

# Fields that differ from run to run whatever the driver: ids, clocks, latencies.
VOLATILE = {
    "run_id",
    "parent_id",
    "ts",
    "elapsed_s",
    "latency_s",
    "settings",
    "prompt",
    "batch_id",
    "call_id",
}
# A notebook cell's traceback names the cell, not the step: a few characters (and tokens) more.
VOLATILE |= {"chars", "input_tokens", "cost"}


def normalized(events: list) -> list[dict]:
    out = []
    for event in events:
        data = {k: v for k, v in event.to_dict().items() if k not in VOLATILE}
        if data["kind"] == "step_finished":  # a notebook cell's traceback names the cell, not the step
            data["error"] = None if data["error"] is None else data["error"].strip().splitlines()[-1]
            data["output"] = data["output"].strip().splitlines()[-1] if data["output"].strip() else ""
        if data["kind"] == "root_request":  # what the root saw of a traceback: the same last line
            data["content"] = [line for line in data["content"].splitlines() if "File" not in line][-3:]
        if data["kind"] == "run_ended" and data["error"]:
            data["error"] = data["error"].split(":")[0]
        out.append(data)
    return out


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


def python_api(server: ScriptedServer, name: str, driver: str) -> list:
    server.responder = Script(root=SCENARIOS[name])
    rlm = RLM(
        "openai",
        {
            "model_name": "gpt-4o-mini",
            "base_url": server.openai_base_url,
            "api_key": "sk-test",
            "max_retries": 0,
        },
        log_dir=False,
        **SETTINGS.get(name, {}),
    )
    if driver == "drive":
        return rlm.completion(CONTEXT, "q").trajectory
    return asyncio.run(rlm.acompletion(CONTEXT, "q")).trajectory


@pytest.fixture(scope="module")
def notebook_runs(server: ScriptedServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    """Every scenario once in notebook mode, in one kernel: name -> its events."""
    runs = {}
    env = {
        "OPENAI_BASE_URL": server.openai_base_url,
        "OPENAI_API_KEY": "sk-test",
        "RLM_MODEL": "gpt-4o-mini",
    }
    with KernelSession("rlm-python", env) as kernel:
        front = FrontEnd(kernel)
        front.run_cell(f"doc = {CONTEXT!r}")
        for name in SCENARIOS:
            logs = Path(tmp_path_factory.mktemp(name))
            server.responder = Script(root=SCENARIOS[name])
            limit = SETTINGS.get(name, {}).get("max_iterations", 30)
            front.run_cell(
                f"%config RLMMagics.log_dir = {str(logs)!r}\n%config RLMMagics.max_iterations = {limit}"
            )
            front.run_cell("%%rlm -c doc\nq")
            assert front.drive()["type"] == "run_finished"
            (path,) = logs.glob("*.jsonl")
            runs[name] = load(path)
    return runs


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_driver_gives_the_same_events(server: ScriptedServer, notebook_runs: dict, name: str) -> None:
    blocking = normalized(python_api(server, name, "drive"))
    asynchronous = normalized(python_api(server, name, "adrive"))
    notebook = normalized(notebook_runs[name])
    assert blocking == asynchronous
    assert blocking == notebook
    assert blocking[-1]["kind"] == "run_ended"
