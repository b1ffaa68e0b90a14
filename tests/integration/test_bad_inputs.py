"""Bad input from the root's code, the user and the disk: each run still ends as an RLMResult with
its trajectory closed by ``run_ended``, the user's names put back, and the host fine."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Script, ScriptedServer

from rlm_kernel import RLM
from rlm_kernel.errors import ConfigError
from rlm_kernel.lm.openai import OpenAILM
from rlm_kernel.trajectory import TrajectoryWriter, load


@pytest.fixture(scope="module")
def server() -> ScriptedServer:
    with ScriptedServer() as srv:
        yield srv


def make_rlm(server: ScriptedServer, **settings: Any) -> RLM:
    server.requests.clear()  # each test reads the requests of its own run
    kwargs = {
        "model_name": "gpt-4o-mini",
        "base_url": server.openai_base_url,
        "api_key": "sk-test",
        "max_retries": 0,
    }
    return RLM("openai", kwargs, **{"log_dir": False, **settings})


def step_outputs(result: Any) -> list[str]:
    return [e.output for e in result.trajectory if e.kind == "step_finished"]


@pytest.mark.parametrize(
    "raise_it",
    [
        "class Stop(BaseException):\n    pass\nraise Stop('from the code')",
        "import asyncio\nraise asyncio.CancelledError()",
        "raise SystemExit(3)",
        "raise GeneratorExit()",
    ],
    ids=["own BaseException", "CancelledError", "SystemExit", "GeneratorExit"],
)
def test_a_base_exception_from_the_code_is_a_failed_step(server: ScriptedServer, raise_it: str) -> None:
    server.responder = Script(root=[f"```repl\n{raise_it}\n```", "FINAL(went on)"])
    namespace = {"context": "the user's own"}
    result = make_rlm(server).completion("ctx", "q", namespace=namespace)
    assert result.response == "went on"
    assert "Traceback" in step_outputs(result)[0]
    assert result.trajectory[-1].kind == "run_ended"
    assert namespace["context"] == "the user's own"


def test_printing_a_lone_surrogate_reaches_the_root_and_the_file(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.responder = Script(
        root=["```repl\nprint('\\udcff')\nprint(llm_query('ask \\udcff'))\n```", "FINAL(fine)"], sub="fine"
    )
    result = make_rlm(server, log_dir=tmp_path).completion("ctx \udcff", "q \udcff")
    assert result.ok and result.response == "fine"  # what the code printed
    assert step_outputs(result) == ["\udcff\nfine\n"]
    assert [e.kind for e in load(result.log_path)] == [e.kind for e in result.trajectory]
    assert load(result.log_path)[-1].kind == "run_ended"
    assert any("\\udcff" in r.last_user for r in server.requests)  # sent as an escape


def test_a_full_disk_is_reported_once_and_the_answer_kept(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    monkeypatch.setattr(TrajectoryWriter, "in_dir", classmethod(lambda cls, d, run_id: cls("/dev/full")))
    server.responder = Script(root=["```repl\nprint(1)\n```", "FINAL(42)"])
    result = make_rlm(server, log_dir="anywhere").completion("ctx", "q")
    assert result.response == "42"
    assert result.error.count("could not be written") == 1 and "No space left" in result.error
    assert result.trajectory[-1].kind == "run_ended"


class Unsizable:
    def __len__(self) -> int:
        raise ValueError("no length")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_a_context_whose_len_and_repr_raise_still_runs(server: ScriptedServer) -> None:
    server.responder = Script(root=["```repl\nprint(type(context).__name__)\n```", "FINAL(ran)"])
    result = make_rlm(server).completion(Unsizable(), "q")
    assert result.response == "ran" and step_outputs(result) == ["Unsizable\n"]
    meta = result.trajectory[0].context_meta
    assert meta["type"] == "Unsizable" and "raised" in meta["problem"]
    assert "not shown" in server.requests[0].last_user


def test_an_unclosed_final_is_named_to_the_root(server: ScriptedServer) -> None:
    server.responder = Script(root=["I am sure.\nFINAL(the answer", "FINAL(the answer)"])
    result = make_rlm(server).completion("ctx", "q")
    assert result.response == "the answer"
    assert "FINAL( has no closing parenthesis" in server.requests[1].last_user


def test_the_whole_observation_of_a_turn_is_capped(server: ScriptedServer) -> None:
    blocks = "\n".join(f"```repl\nprint('x' * 900, {i})\n```" for i in range(300))
    server.responder = Script(root=[blocks, "FINAL(done)"])
    result = make_rlm(server, max_output_chars=1000).completion("ctx", "q")
    assert result.response == "done"
    observation = server.requests[1].last_user
    assert len(observation) < 4 * 1000 + 500 and "were not shown" in observation


def test_what_a_step_leaves_behind_does_not_harm_the_host(server: ScriptedServer) -> None:
    code = (
        "import io, os, sys, threading, time\n"
        "sys.stdout = io.StringIO()\n"
        "sys.setrecursionlimit(10**6)\n"
        "threading.Thread(target=time.sleep, args=(3600,), name='left-behind').start()\n"
        "pid = os.fork()\n"
    )
    server.responder = Script(root=[f"```repl\n{code}```", "FINAL(done)"])
    stdout, limit = sys.stdout, sys.getrecursionlimit()
    result = make_rlm(server).completion("ctx", "q")
    assert result.response == "done"
    assert sys.stdout is stdout and sys.getrecursionlimit() == limit
    left = [t for t in threading.enumerate() if t.name == "left-behind"]
    assert left and all(t.daemon for t in left)  # it will not keep the process from exiting
    assert [e.kind for e in result.trajectory].count("run_ended") == 1  # the fork's copy wrote nothing


def test_a_missing_sub_backend_key_is_found_at_rlm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match=r"No Anthropic API key.*sub_backend_kwargs"):
        RLM("openai", {"api_key": "sk-test"}, sub_backend="anthropic")


def test_default_timeouts_end_within_a_minute_or_two() -> None:
    lm = OpenAILM("gpt-4o-mini", api_key="sk-test")
    assert lm.timeout * (lm.max_retries + 1) <= 120
