"""The OpenAI and Anthropic backends, through the official SDKs, over real HTTP to the scripted server."""

from __future__ import annotations

import asyncio
import gc
import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from scripted_server import Reply, Request, Script, ScriptedServer, sequence

from rlm_kernel.errors import MissingAPIKey, ProviderError
from rlm_kernel.lm.anthropic import AnthropicLM, to_anthropic
from rlm_kernel.lm.base import Completion, LMClient, Message
from rlm_kernel.lm.openai import OpenAILM

BACKENDS = ["openai", "anthropic"]
PROVIDER_NAMES = {"openai": "OpenAI", "anthropic": "Anthropic"}
MODEL = "scripted-model"

T = TypeVar("T")


def make_lm(kind: str, server: ScriptedServer, **kwargs: Any) -> OpenAILM | AnthropicLM:
    kwargs.setdefault("api_key", "test-key")
    if kind == "openai":
        return OpenAILM(MODEL, base_url=server.openai_base_url, **kwargs)
    return AnthropicLM(MODEL, base_url=server.anthropic_base_url, **kwargs)


def run(lm: LMClient, use: Callable[[LMClient], Awaitable[T]]) -> T:
    """Run ``use(lm)`` on a fresh event loop and close the client after."""

    async def go() -> T:
        try:
            return await use(lm)
        finally:
            await lm.aclose()

    return asyncio.run(go())


def complete(lm: LMClient, messages: list[Message], **kwargs: Any) -> Completion:
    return run(lm, lambda lm: lm.complete(messages, **kwargs))


def ask(text: str) -> list[Message]:
    return [{"role": "system", "content": "You are terse."}, {"role": "user", "content": text}]


# ---------------------------------------------------------------- completions


@pytest.mark.parametrize("kind", BACKENDS)
def test_plain_completion_reports_text_and_usage(kind: str, scripted_server: ScriptedServer) -> None:
    scripted_server.responder = lambda r: Reply(
        text="The answer is 42.", input_tokens=120, output_tokens=6, cached_tokens=100
    )
    lm = make_lm(kind, scripted_server)
    assert isinstance(lm, LMClient)

    result = complete(lm, ask("What is six times seven?"))

    assert result == Completion(
        text="The answer is 42.",
        model=MODEL,
        input_tokens=120,
        output_tokens=6,
        cached_tokens=100,
        latency_s=result.latency_s,
        extra=result.extra,
    )
    assert result.latency_s > 0
    assert result.extra["response_model"] == MODEL
    (request,) = scripted_server.requests
    assert (request.api, request.model, request.stream) == (kind, MODEL, False)
    assert request.last_user == "What is six times seven?"


@pytest.mark.parametrize("kind", BACKENDS)
def test_usage_defaults_to_the_servers_estimate(kind: str, scripted_server: ScriptedServer) -> None:
    scripted_server.responder = lambda r: "twelve chars"
    result = complete(make_lm(kind, scripted_server), ask("hello"))
    (request,) = scripted_server.requests
    assert (result.input_tokens, result.output_tokens, result.cached_tokens) == (
        len(request.text) // 4 + 1,
        len("twelve chars") // 4 + 1,
        0,
    )


@pytest.mark.parametrize("kind", BACKENDS)
def test_streamed_deltas_arrive_in_order_as_they_are_sent(kind: str, scripted_server: ScriptedServer) -> None:
    scripted_server.responder = lambda r: Reply(
        text="alpha beta gamma delta", token_delay=0.1, input_tokens=50, output_tokens=4, cached_tokens=5
    )
    seen: list[tuple[float, str]] = []

    result = complete(
        make_lm(kind, scripted_server),
        ask("Greek?"),
        on_token=lambda t: seen.append((time.perf_counter(), t)),
    )

    deltas = [delta for _, delta in seen]
    assert deltas == ["alpha ", "beta ", "gamma ", "delta"]
    assert "".join(deltas) == result.text == "alpha beta gamma delta"
    # Three 0.1 s token delays separate the first delta from the last: they were not buffered to the
    # end. (Only one delay's worth is required, so a briefly starved client still passes.)
    assert seen[-1][0] - seen[0][0] >= 0.1
    assert (result.input_tokens, result.output_tokens, result.cached_tokens) == (50, 4, 5)
    (request,) = scripted_server.requests
    assert request.stream
    if kind == "openai":
        assert request.body["stream_options"] == {"include_usage": True}


# ---------------------------------------------------------------- the request on the wire


def test_openai_request_carries_no_private_keys(scripted_server: ScriptedServer) -> None:
    lm = make_lm("openai", scripted_server, temperature=0.3, extra_body={"top_k": 5})
    messages: list[Message] = [
        {"role": "system", "content": "SYSTEM", "cache": True},
        {"role": "user", "content": "CONTEXT", "cache": True},
        {"role": "assistant", "content": "OK"},
        {"role": "user", "content": "QUESTION"},
    ]
    complete(lm, messages, max_tokens=77)

    (request,) = scripted_server.requests
    assert request.body["messages"] == [
        {"role": "system", "content": "SYSTEM"},
        {"role": "user", "content": "CONTEXT"},
        {"role": "assistant", "content": "OK"},
        {"role": "user", "content": "QUESTION"},
    ]
    assert request.body["temperature"] == 0.3
    assert request.body["top_k"] == 5
    # A local server (custom base URL) gets the classic `max_tokens`.
    assert request.body["max_tokens"] == 77
    assert "max_completion_tokens" not in request.body
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.system == "SYSTEM"
    assert request.is_root


def test_anthropic_request_puts_system_first_and_marks_breakpoints(scripted_server: ScriptedServer) -> None:
    lm = make_lm("anthropic", scripted_server, temperature=0.2)
    messages: list[Message] = [
        {"role": "system", "content": "SYSTEM", "cache": True},
        {"role": "user", "content": "CONTEXT", "cache": True},
        {"role": "assistant", "content": "OK"},
        {"role": "user", "content": "QUESTION"},
    ]
    complete(lm, messages)

    (request,) = scripted_server.requests
    ephemeral = {"type": "ephemeral"}
    assert request.body["system"] == [{"type": "text", "text": "SYSTEM", "cache_control": ephemeral}]
    assert request.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "CONTEXT", "cache_control": ephemeral}]},
        {"role": "assistant", "content": "OK"},
        {"role": "user", "content": "QUESTION"},
    ]
    assert request.body["temperature"] == 0.2
    assert request.body["max_tokens"] == 4096
    assert request.headers["authorization"] == "Bearer test-key"  # anthropic 2.x sends no x-api-key
    assert "anthropic-version" in request.headers
    assert request.messages[0] == {"role": "system", "content": "SYSTEM"}
    assert request.is_root


def test_anthropic_keeps_only_the_last_four_cache_breakpoints() -> None:
    messages: list[Message] = [{"role": "system", "content": "S", "cache": True}]
    messages += [
        {"role": "user" if i % 2 else "assistant", "content": f"m{i}", "cache": True} for i in range(1, 6)
    ]

    system, turns = to_anthropic(messages)

    assert system == [{"type": "text", "text": "S"}]
    assert [turn["content"] for turn in turns[:1]] == ["m1"]
    assert all(turn["content"][0]["cache_control"] == {"type": "ephemeral"} for turn in turns[1:])


# ---------------------------------------------------------------- retries, timeouts, errors


@pytest.mark.parametrize("kind", BACKENDS)
def test_sdk_retries_a_500_with_its_own_backoff(kind: str, scripted_server: ScriptedServer) -> None:
    scripted_server.responder = sequence(Reply(status=500), "recovered")
    started = time.perf_counter()

    result = complete(make_lm(kind, scripted_server, max_retries=2), ask("again?"))

    assert result.text == "recovered"
    _, second = scripted_server.requests
    assert second.headers["x-stainless-retry-count"] == "1"
    assert time.perf_counter() - started >= 0.3  # the SDK's backoff: 0.5 s less up to 25% jitter


@pytest.mark.parametrize("kind", BACKENDS)
def test_sdk_retries_a_429_after_the_servers_retry_after(kind: str, scripted_server: ScriptedServer) -> None:
    scripted_server.responder = sequence(Reply(status=429, headers={"retry-after-ms": "1"}), "let through")
    started = time.perf_counter()

    result = complete(make_lm(kind, scripted_server, max_retries=2), ask("now?"))

    assert result.text == "let through"
    assert len(scripted_server.requests) == 2
    assert time.perf_counter() - started < 0.3  # shorter than the SDK's own backoff


@pytest.mark.parametrize("kind", BACKENDS)
def test_retries_exhausted_raise_provider_error(kind: str, scripted_server: ScriptedServer) -> None:
    scripted_server.responder = lambda r: Reply(
        status=503, error_message="overloaded, try later", headers={"retry-after-ms": "1"}
    )
    with pytest.raises(ProviderError) as caught:
        complete(make_lm(kind, scripted_server, max_retries=1), ask("?"))

    assert (caught.value.status, caught.value.provider_message) == (503, "overloaded, try later")
    assert len(scripted_server.requests) == 2


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("stream", [False, True])
def test_hanging_reply_times_out_quickly(kind: str, stream: bool, scripted_server: ScriptedServer) -> None:
    scripted_server.responder = lambda r: Reply(hang=True)
    lm = make_lm(kind, scripted_server, timeout=0.5, max_retries=0)
    started = time.perf_counter()

    with pytest.raises(ProviderError) as caught:
        complete(lm, ask("hello?"), on_token=(lambda t: None) if stream else None)

    assert time.perf_counter() - started < 2.0
    assert (caught.value.provider, caught.value.status) == (PROVIDER_NAMES[kind], None)
    started = time.perf_counter()
    scripted_server.stop()  # the hanging handler must not hold the server up
    assert time.perf_counter() - started < 1.5


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize(
    ("status", "message"), [(401, "invalid x-api-key"), (404, "model: scripted-model not found")]
)
def test_client_errors_carry_the_providers_message(
    kind: str, status: int, message: str, scripted_server: ScriptedServer
) -> None:
    scripted_server.responder = lambda r: Reply(status=status, error_message=message)
    with pytest.raises(ProviderError) as caught:
        complete(make_lm(kind, scripted_server), ask("?"), on_token=lambda t: None)

    error = caught.value
    assert (error.provider, error.status, error.provider_message) == (PROVIDER_NAMES[kind], status, message)
    assert message in str(error)
    assert len(scripted_server.requests) == 1  # a 4xx other than 408/409/429 is not retried


@pytest.mark.parametrize("kind", BACKENDS)
def test_unreachable_server_is_a_provider_error(kind: str) -> None:
    with ScriptedServer() as server:
        url = server.url
    if kind == "openai":
        lm: OpenAILM | AnthropicLM = OpenAILM(MODEL, base_url=url + "/v1", max_retries=0)
    else:
        lm = AnthropicLM(MODEL, base_url=url, max_retries=0)
    with pytest.raises(
        ProviderError, match=r"(?i)connect"
    ) as caught:  # each SDK version words it its own way
        complete(lm, ask("anyone?"))
    assert caught.value.status is None


def test_the_local_models_errors_are_its_own_not_openais(
    scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The local backend speaks through the OpenAI SDK; its errors name llama.cpp, not OpenAI."""
    from rlm_kernel.lm import llama_server

    monkeypatch.setenv("RLM_LOCAL_SERVER", "process")  # the server in this process, which is stubbed
    from rlm_kernel.lm import make_lm as make_backend

    class Served:  # stands for the started llama.cpp server: the scripted one answers instead
        base_url = scripted_server.openai_base_url

    monkeypatch.setattr(llama_server, "shared_server", lambda path, **kw: Served())
    scripted_server.responder = lambda r: Reply(
        status=400, error_message="the request exceeds the context size"
    )
    model = tmp_path / "mine.gguf"
    model.write_bytes(b"GGUF")
    lm = make_backend("local", {"model_path": str(model)})
    for stream in (False, True):
        with pytest.raises(ProviderError) as caught:
            complete(lm, ask("?"), on_token=(lambda t: None) if stream else None)
        assert str(caught.value) == (
            "local model (llama.cpp) error (HTTP 400): the request exceeds the context size"
        )
        assert caught.value.provider == "local model (llama.cpp)"
    assert make_lm("openai", scripted_server).provider == "OpenAI"  # others keep their own name


# ---------------------------------------------------------------- keys and base URLs


@pytest.mark.parametrize(
    ("cls", "key_var", "url_var", "official"),
    [
        (OpenAILM, "OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1"),
        (AnthropicLM, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    ],
)
def test_missing_key_names_the_variable(
    cls: type[OpenAILM | AnthropicLM],
    key_var: str,
    url_var: str,
    official: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(key_var, raising=False)
    monkeypatch.delenv(url_var, raising=False)
    for base_url in (None, official):
        with pytest.raises(MissingAPIKey) as caught:
            cls("some-model", base_url=base_url)
        assert caught.value.env_var == key_var
        assert key_var in str(caught.value)
    monkeypatch.setenv(key_var, "from-env")
    assert cls("some-model")._api_key == "from-env"


@pytest.mark.parametrize(
    ("kind", "url_var"), [("openai", "OPENAI_BASE_URL"), ("anthropic", "ANTHROPIC_BASE_URL")]
)
def test_base_url_from_the_environment_needs_no_key(
    kind: str, url_var: str, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local server (vLLM, llama.cpp, Ollama) needs no key; the SDK gets a placeholder."""
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    if kind == "openai":
        monkeypatch.setenv(url_var, scripted_server.openai_base_url)
        lm: OpenAILM | AnthropicLM = OpenAILM("local-model")
    else:
        monkeypatch.setenv(url_var, scripted_server.anthropic_base_url)
        lm = AnthropicLM("local-model")

    assert complete(lm, ask("echo me")).text == "echo me"
    (request,) = scripted_server.requests
    assert request.model == "local-model"
    assert request.headers["authorization"] == "Bearer not-needed"


def test_context_window_from_argument_or_table() -> None:
    assert OpenAILM("gpt-4o-mini", api_key="k").context_window == 128_000
    assert OpenAILM("gpt-4.1-mini", api_key="k").context_window == 1_047_576
    assert OpenAILM("gpt-5-mini", api_key="k").context_window == 400_000
    assert OpenAILM("qwen2.5-coder", api_key="k").context_window is None
    assert OpenAILM("qwen2.5-coder", api_key="k", context_window=32_768).context_window == 32_768
    assert AnthropicLM("claude-sonnet-4-5", api_key="k").context_window == 200_000
    assert AnthropicLM("local", api_key="k").context_window is None


# ---------------------------------------------------------------- concurrency and event loops


@pytest.mark.parametrize("kind", BACKENDS)
def test_sixty_four_concurrent_calls_overlap(kind: str, scripted_server: ScriptedServer) -> None:
    # Each reply held 1 s: time enough for all 64 connections to open, on a loaded machine too.
    scripted_server.responder = Script(sub=lambda r: f"answer to {r.last_user}", latency=1.0)
    lm = make_lm(kind, scripted_server)

    async def fan_out(lm: LMClient) -> list[Completion]:
        prompts = [[Message(role="user", content=f"q{i}")] for i in range(64)]
        return await asyncio.gather(*(lm.complete(p) for p in prompts))

    results = run(lm, fan_out)

    assert [r.text for r in results] == [f"answer to q{i}" for i in range(64)]
    assert scripted_server.max_in_flight == 64  # none waited for another


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_one_client_serves_successive_event_loops(kind: str, scripted_server: ScriptedServer) -> None:
    """Sync wrappers run each call on a new loop; the backend must not reuse a dead loop's connections."""
    lm = make_lm(kind, scripted_server)
    assert asyncio.run(lm.complete(ask("one"))).text == "one"
    assert asyncio.run(lm.complete(ask("two"))).text == "two"
    asyncio.run(lm.aclose())
    gc.collect()  # the first loop's unclosed sockets are let go here, under this test's warning filter


# ---------------------------------------------------------------- the scripted server itself


def test_script_answers_root_in_order_then_fails_loudly(scripted_server: ScriptedServer) -> None:
    scripted_server.responder = Script(root=["first", Reply(text="second")], sub="from a sub-call")
    lm = make_lm("openai", scripted_server, max_retries=0)

    async def conversation(lm: LMClient) -> list[str]:
        sub = await lm.complete([{"role": "user", "content": "sub"}])
        first = await lm.complete(ask("root 1"))
        second = await lm.complete(ask("root 2"))
        return [sub.text, first.text, second.text]

    assert run(lm, conversation) == ["from a sub-call", "first", "second"]
    with pytest.raises(ProviderError, match="script exhausted"):
        complete(make_lm("openai", scripted_server, max_retries=0), ask("root 3"))


def test_responder_failure_is_an_http_500(scripted_server: ScriptedServer) -> None:
    def broken(request: Request) -> str:
        raise KeyError("no such step")

    scripted_server.responder = broken
    with pytest.raises(ProviderError, match="no such step") as caught:
        complete(make_lm("anthropic", scripted_server, max_retries=0), ask("?"))
    assert caught.value.status == 500


def test_health_and_models(scripted_server: ScriptedServer) -> None:
    with urllib.request.urlopen(scripted_server.url + "/health", timeout=5) as response:
        assert json.load(response) == {"status": "ok"}
    with urllib.request.urlopen(scripted_server.openai_base_url + "/models", timeout=5) as response:
        assert [m["id"] for m in json.load(response)["data"]] == ["scripted"]


def test_command_line_server_runs_a_script_until_sigterm(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        "from scripted_server import Reply\n"
        "def responder(request):\n"
        "    return Reply(text='scripted: ' + request.last_user, output_tokens=3)\n"
    )
    server_py = Path(__file__).resolve().parents[1] / "scripted_server.py"
    command = [sys.executable, str(server_py), "--latency", "0.05", "--script", str(script)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            ready = process.stdout.readline().split()
            assert ready[0] == "READY", ready
            lm = OpenAILM(MODEL, base_url=ready[1] + "/v1", api_key="k")
            result = complete(lm, [{"role": "user", "content": "hi"}])
            assert (result.text, result.output_tokens) == ("scripted: hi", 3)
            assert result.latency_s >= 0.05
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=10) == 0
