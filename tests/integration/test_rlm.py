"""Whole runs through the real OpenAI and Anthropic SDKs, over HTTP, against the scripted server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from itertools import pairwise

import pytest
from scripted_server import Reply, Script
from waiting import wait_until

from rlm_kernel import RLM
from rlm_kernel.errors import MissingAPIKey
from rlm_kernel.subcalls import ERROR_PREFIX
from rlm_kernel.trajectory import load

KEY = "sk-test-SECRET-KEY-123"
NEEDLE = "PURPLE-ELEPHANT-7731"
CONTEXT = ("lorem ipsum dolor sit amet. " * 4000) + f"The magic word is {NEEDLE}. " + ("filler text. " * 2000)


def make_rlm(server, api="openai", tmp_path=None, **kw):
    if api == "openai":
        backend_kwargs = {
            "model_name": "gpt-4o-mini",
            "base_url": server.openai_base_url,
            "api_key": KEY,
            "max_retries": 0,
        }
    else:
        backend_kwargs = {
            "model_name": "claude-haiku-4-5",
            "base_url": server.anthropic_base_url,
            "api_key": KEY,
            "max_retries": 0,
        }
    backend_kwargs.update(kw.pop("backend_kwargs", {}))
    kw.setdefault("log_dir", tmp_path if tmp_path is not None else False)
    return RLM(api, backend_kwargs, **kw)


def repl(code: str) -> str:
    return f"Let me look.\n```repl\n{code}\n```"


def sub_calls_received(server) -> int:
    return sum(not r.is_root for r in server.requests)


def once_in_flight(server, n: int, action) -> threading.Event:
    """In another thread: once ``n`` sub-calls have reached the server (each held there by its
    reply's delay), do ``action``. Set the returned event when the run is over, so that a run
    that ended early never gets the action late."""
    over = threading.Event()

    def watch() -> None:
        if wait_until(lambda: over.is_set() or sub_calls_received(server) >= n) and not over.is_set():
            action()

    threading.Thread(target=watch, daemon=True).start()
    return over


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_answer_dict_protocol(scripted_server, tmp_path, api):
    scripted_server.responder = Script(
        root=[
            repl("idx = context.find('magic word')\nprint(context[idx:idx+40])"),
            repl(
                "word = context[idx:idx+40].split()[3].rstrip('.')\n"
                "answer['content'] = word\nanswer['ready'] = True"
            ),
        ]
    )
    result = make_rlm(scripted_server, api, tmp_path).completion(
        CONTEXT, root_prompt="What is the magic word?"
    )
    assert result.response == NEEDLE and result.error is None
    assert result.iterations == 2
    second_root_request = [r for r in scripted_server.requests if r.is_root][1]
    assert f"magic word is {NEEDLE}" in second_root_request.last_user
    # The root never received the context itself.
    assert all(len(r.text) < 5000 for r in scripted_server.requests)
    assert result.usage.root.calls == 2 and result.usage.total.cost is not None


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_final_text_protocol_and_misuse(scripted_server, api):
    scripted_server.responder = Script(
        root=[
            repl("found = context.count('lorem')") + "\nFINAL(found)",  # FINAL(variable) means its value
        ]
    )
    result = make_rlm(scripted_server, api).completion(CONTEXT, root_prompt="How many lorems?")
    assert result.response == "4000"


def test_final_var_and_functions(scripted_server):
    scripted_server.responder = Script(root=[repl("total = 6 * 7\nFINAL_VAR('total')")])
    assert make_rlm(scripted_server).completion("x").response == "42"


def test_anthropic_prefix_is_cached(scripted_server):
    scripted_server.responder = Script(root=[repl("FINAL('done')")])
    make_rlm(scripted_server, "anthropic").completion("x", root_prompt="q")
    body = scripted_server.requests[0].body
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}


def test_batched_subcalls_are_concurrent(scripted_server):
    scripted_server.responder = Script(
        root=[repl("out = llm_query_batched([f'part {i}' for i in range(64)])\nFINAL(len(set(out)))")],
        sub=lambda req: Reply(text="seen " + req.last_user, delay=0.25),
    )
    result = make_rlm(scripted_server, max_concurrency=64).completion("x")
    assert result.response == "64"
    assert scripted_server.max_in_flight == 64  # the server held all 64 at once: none waited for another
    assert result.usage.sub.calls == 64


def test_concurrency_bound_is_respected(scripted_server):
    scripted_server.responder = Script(
        root=[repl("out = llm_query_batched(['p'] * 20)\nFINAL(len(out))")],
        sub=Reply(text="ok", delay=0.05),
    )
    assert make_rlm(scripted_server, max_concurrency=5).completion("x").response == "20"
    assert scripted_server.max_in_flight == 5


def test_a_failed_prompt_yields_an_error_string_and_the_batch_goes_on(scripted_server):
    def sub(req):
        return Reply(status=400, error_message="bad prompt") if "bad" in req.last_user else "fine"

    scripted_server.responder = Script(
        root=[repl("out = llm_query_batched(['good', 'bad', 'good'])\nprint(out)"), repl("FINAL('x')")],
        sub=sub,
    )
    result = make_rlm(scripted_server).completion("x")
    step_output = next(e for e in result.trajectory if e.kind == "step_finished").output
    assert step_output.count("'fine'") == 2 and ERROR_PREFIX in step_output and "bad prompt" in step_output


def test_sub_prompt_larger_than_the_window_returns_a_clear_error(scripted_server):
    scripted_server.responder = Script(root=[repl("r = llm_query(context)\nprint(r)"), repl("FINAL(1)")])
    rlm = make_rlm(scripted_server, backend_kwargs={"context_window": 1000})
    result = rlm.completion(CONTEXT)
    output = next(e for e in result.trajectory if e.kind == "step_finished").output
    assert "does not fit gpt-4o-mini's window of 1,000 tokens" in output
    assert not any(not r.is_root for r in scripted_server.requests)  # never sent


def test_depth_two_child_runs_share_usage(scripted_server):
    def responder(req):
        if "sub-task for another model" in (req.system or ""):
            return repl("FINAL(context.upper())")  # the child's root
        if req.is_root:
            done = any("Output of step" in m["content"] for m in req.messages)
            return repl("FINAL(r)") if done else repl("r = rlm_query_batched(['abc', 'xyz'])\nprint(r)")
        return "unused"

    scripted_server.responder = responder
    result = make_rlm(scripted_server, max_depth=2).completion("root context")
    assert result.response == "['ABC', 'XYZ']"
    started = [e for e in result.trajectory if e.kind == "run_started"]
    assert len(started) == 3
    children = [e for e in started if e.depth == 1]
    assert {c.parent_id for c in children} == {started[0].run_id}
    assert result.usage.by_depth[1].calls == 2 and result.usage.root.calls == 2


def test_at_max_depth_rlm_query_is_llm_query(scripted_server):
    scripted_server.responder = Script(root=[repl("FINAL(rlm_query('hi'))")], sub="plain")
    assert make_rlm(scripted_server, max_depth=1).completion("x").response == "plain"


def test_root_retries_on_500(scripted_server):
    calls = []

    def responder(req):
        calls.append(req)
        if len(calls) == 1:
            return Reply(status=500, error_message="overloaded")
        return repl("FINAL('recovered')")

    scripted_server.responder = responder
    rlm = make_rlm(scripted_server, backend_kwargs={"max_retries": 2})
    assert rlm.completion("x").response == "recovered"
    assert len(calls) == 2


def test_provider_errors_surface_with_their_message(scripted_server):
    scripted_server.responder = lambda req: Reply(status=404, error_message="The model `nope` does not exist")
    result = make_rlm(scripted_server).completion("x")
    assert result.response is None
    assert "The model `nope` does not exist" in result.error and "404" in result.error


def test_long_output_is_truncated_with_a_marker(scripted_server):
    scripted_server.responder = Script(root=[repl("print('A' * 50000)"), repl("FINAL(1)")])
    make_rlm(scripted_server, max_output_chars=1000).completion("x")
    seen = [r for r in scripted_server.requests if r.is_root][1].last_user
    assert "[49,001 characters cut]" in seen and len(seen) < 1500


def test_reserved_names_are_restored(scripted_server):
    scripted_server.responder = Script(
        root=[
            repl("llm_query = 'oops'\ncontext = None"),
            repl("FINAL(llm_query('still works') + ' ' + str(len(context)))"),
        ],
        sub="yes",
    )
    result = make_rlm(scripted_server).completion("12345")
    assert result.response == "yes 5"
    assert "put back" in [r for r in scripted_server.requests if r.is_root][1].last_user


def test_no_code_reply_gets_a_corrective_turn_and_iterations_end_alternating(scripted_server):
    scripted_server.responder = Script(root=["I refuse to write code.", repl("x = 1"), "FINAL(my guess)"])
    result = make_rlm(scripted_server, max_iterations=2).completion("x")
    assert result.response == "my guess"
    assert "max_iterations (2)" in result.error
    last = [r for r in scripted_server.requests if r.is_root][-1]
    roles = [m["role"] for m in last.messages]
    assert roles[-1] == "user" and all(a != b for a, b in pairwise(roles[1:]))


def test_trajectory_has_no_context_and_no_key(scripted_server, tmp_path):
    scripted_server.responder = Script(root=[repl("n = len(context)\nprint(n)"), repl("FINAL(n)")])
    result = make_rlm(scripted_server, tmp_path=tmp_path).completion(CONTEXT, root_prompt="How long?")
    text = result.log_path.read_text()
    assert NEEDLE not in text and KEY not in text
    assert len(text) < 20_000
    events = load(result.log_path)
    assert [e.kind for e in events] == [e.kind for e in result.trajectory]
    assert events[-1].kind == "run_ended" and events[-1].response == str(len(CONTEXT))
    assert all(json.loads(line) for line in text.splitlines())


def test_trajectory_is_on_disk_while_the_run_goes(scripted_server, tmp_path):
    seen = {}

    def responder(req):
        if req.is_root and len([m for m in req.messages if m["role"] == "assistant"]) == 1:
            files = list(tmp_path.glob("*.jsonl"))
            seen["kinds"] = [json.loads(line)["kind"] for line in files[0].read_text().splitlines()]
            return repl("FINAL(2)")
        return repl("x = 1") if req.is_root else "sub"

    scripted_server.responder = responder
    make_rlm(scripted_server, tmp_path=tmp_path).completion("x")
    assert seen["kinds"][-3:] == ["step_started", "step_finished", "root_request"]


def test_record_then_replay_offline(scripted_server, tmp_path):
    scripted_server.responder = Script(
        root=[repl("r = llm_query_batched(['a', 'b', 'c'])\nprint(r)"), repl("FINAL('-'.join(r))")],
        sub=lambda req: req.last_user.upper(),
    )
    recording = tmp_path / "rec.jsonl"
    live = make_rlm(scripted_server, record=recording).completion("ctx", root_prompt="q")
    scripted_server.stop()
    replayed = RLM("replay", {"path": recording}, log_dir=False).completion("ctx", root_prompt="q")
    assert replayed.response == live.response == "A-B-C"
    assert replayed.usage.total.calls == live.usage.total.calls == 5
    diverged = RLM("replay", {"path": recording}, log_dir=False).completion("ctx", root_prompt="another q")
    assert diverged.response is None and "Replay diverged at call 1" in diverged.error


def test_missing_key_is_one_clear_line(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(MissingAPIKey) as info:
        RLM("openai", {"model_name": "gpt-4o"})
    assert str(info.value).count("\n") == 0 and "OPENAI_API_KEY" in str(info.value)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(MissingAPIKey, match="ANTHROPIC_API_KEY"):
        RLM("anthropic")


def test_openai_base_url_from_the_environment(scripted_server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    scripted_server.responder = Script(root=[repl("FINAL('env')")])
    assert RLM("openai", {"model_name": "gpt-4o"}, log_dir=False).completion("x").response == "env"


def test_budget_max_tokens_stops_the_tree(scripted_server):
    scripted_server.responder = Script(
        root=[repl("r = llm_query_batched(['p'] * 10)")] * 5,
        sub=Reply(text="ok", input_tokens=1000, output_tokens=10),
    )
    result = make_rlm(scripted_server, max_tokens=5000).completion("x")
    assert result.response is None and "max_tokens exceeded" in result.error
    assert result.iterations == 1


def test_budget_max_dollars(scripted_server):
    scripted_server.responder = Script(root=[repl("x = 1")] * 5, sub="ok")
    # gpt-4o-mini: 1M input tokens cost $0.15
    scripted_server.responder = Script(root=[Reply(text=repl("x = 1"), input_tokens=2_000_000)] * 5)
    result = make_rlm(scripted_server, max_budget=0.2).completion("x")
    assert "max_budget ($) exceeded" in result.error and result.iterations == 1


def test_budget_max_timeout_cancels_calls_in_flight(scripted_server):
    scripted_server.responder = Script(root=[repl("r = llm_query('slow')")], sub=Reply(text="late", delay=30))
    result = make_rlm(scripted_server, max_timeout=1.0).completion("x")
    assert result.response is None and "max_timeout" in result.error
    finished = [e for e in result.trajectory if e.kind == "subcall_finished"]
    assert len(finished) == 1 and finished[0].error == "cancelled"  # not answered "late" after 30 s


def test_cancel_from_another_thread_keeps_the_partial_run(scripted_server, tmp_path):
    scripted_server.responder = Script(
        root=[repl("step1 = 'kept'"), repl("r = llm_query_batched(['slow'] * 64)")],
        sub=Reply(text="late", delay=30),
    )
    rlm = make_rlm(scripted_server, tmp_path=tmp_path, max_concurrency=64)
    namespace = {}
    over = once_in_flight(scripted_server, 64, rlm.cancel)
    result = rlm.completion("x", namespace=namespace)
    over.set()
    assert result.response is None and "cancelled" in result.error.lower()
    assert namespace["step1"] == "kept"
    finished = [e for e in result.trajectory if e.kind == "subcall_finished"]
    assert len(finished) == 64 and all(e.error == "cancelled" for e in finished)
    assert load(result.log_path)[-1].kind == "run_ended"


def test_keyboard_interrupt_during_a_batch_cancels_every_call(scripted_server):
    scripted_server.responder = Script(
        root=[repl("r = llm_query_batched(['slow'] * 64)")], sub=Reply(text="late", delay=30)
    )
    rlm = make_rlm(scripted_server, max_concurrency=64)
    over = once_in_flight(scripted_server, 64, lambda: os.kill(os.getpid(), signal.SIGINT))
    result = rlm.completion("x")
    over.set()
    assert result.response is None and "interrupted" in result.error
    finished = [e for e in result.trajectory if e.kind == "subcall_finished"]
    assert len(finished) == 64 and all(e.error == "cancelled" for e in finished)


def test_async_and_sync_runs_behave_alike(scripted_server):
    script = [repl("r = llm_query_batched(['a', 'b'])\nprint(r)"), repl("FINAL(' '.join(r))")]
    scripted_server.responder = Script(root=script, sub=lambda req: req.last_user * 2)
    sync = make_rlm(scripted_server).completion("ctx", root_prompt="q")
    scripted_server.responder = Script(root=script, sub=lambda req: req.last_user * 2)
    async_ = asyncio.run(make_rlm(scripted_server).acompletion("ctx", root_prompt="q"))
    assert sync.response == async_.response == "aa bb"
    assert [e.kind for e in sync.trajectory] == [e.kind for e in async_.trajectory]
    assert sync.usage.total.calls == async_.usage.total.calls == 4


# -- limits, loops and helpers, over the real SDKs ---------------------------------------------


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_root_turns_carry_their_limit_and_the_small_profiles_stop(scripted_server, api):
    scripted_server.responder = Script(root=[repl("FINAL(len(context))")] * 2)
    make_rlm(scripted_server, api, prompt_profile="small").completion(CONTEXT, "How long?")
    make_rlm(scripted_server, api).completion(CONTEXT, "How long?")
    small, default = (r.body for r in scripted_server.requests if r.is_root)
    if api == "openai":
        assert (small["max_tokens"], small["stop"]) == (1024, ["\n```\n"])
        assert default["max_tokens"] == 16384 and "stop" not in default
    else:
        assert (small["max_tokens"], small["stop_sequences"]) == (1024, ["\n```\n"])
        assert default["max_tokens"] == 16384 and "stop_sequences" not in default


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_root_reply_that_loops_is_stopped_and_the_run_goes_on(scripted_server, api):
    loop = "The license grants every patent right. " * 400  # 16,000 characters if it were read whole
    scripted_server.responder = Script(root=[Reply(text=loop, token_delay=0.0005), repl("FINAL('done')")])
    rlm = make_rlm(scripted_server, api)
    tokens = []
    result = rlm.completion(CONTEXT, "Summarize the patents part.", subscribers=(tokens.append,))
    assert result.response == "done" and result.error is None
    first = next(e for e in result.trajectory if e.kind == "root_reply")
    assert 300 < len(first.text) < 2000 and first.output_tokens > 0
    assert result.warnings[0] == "Root reply 1 repeated itself and was stopped."
    second = [r for r in scripted_server.requests if r.is_root][1]
    assert "kept repeating itself, so it was stopped" in second.last_user


def test_classify_labels_items_with_few_shot_sub_calls(scripted_server):
    lines = ["The train was late again.", "Lovely staff, thanks!", "When does the museum open?"] * 4

    def sub(request):
        if request.system is not None and request.system.startswith("Label the text."):
            text = request.last_user.lower()
            return "complaint" if "late" in text else "praise" if "thanks" in text else "question"
        if "Write three new items" in request.last_user:
            label = request.last_user.split("label is '")[1].split("'")[0]
            return f"1. an example of {label}\n2. another {label} one\n3. a third {label}"
        return "?"

    code = 'labels = classify(context.splitlines(), ["praise", "complaint", "question"])\nprint(labels)\nFINAL(labels.count("complaint"))'
    scripted_server.responder = lambda r: repl(code) if "Question:" in r.last_user else sub(r)
    result = make_rlm(scripted_server, prompt_profile="small").completion(
        "\n".join(lines), "How many complaints?"
    )
    assert result.response == "4" and result.error is None
    labelled = [r for r in scripted_server.requests if r.system and r.system.startswith("Label the text.")]
    assert len(labelled) == 12  # one sub-call an item
    shots = labelled[0].messages[1:-1]
    assert [m["role"] for m in shots[:2]] == ["user", "assistant"] and len(shots) == 18  # 3 per label
    assert shots[1]["content"] == "praise" and shots[0]["content"] == "an example of praise"
    started = [e for e in result.trajectory if e.kind == "subcall_started"]
    assert len(started) == 15 and started[-1].prompt_preview == lines[-1]
