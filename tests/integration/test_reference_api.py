"""The reference ``rlms`` package's keywords, errors and results on ``RLM``, and sessions: real runs
through the OpenAI SDK against the scripted server."""

from __future__ import annotations

import asyncio

import pytest
from scripted_server import Reply, Script

from rlm_kernel import RLM, RLMLogger
from rlm_kernel.errors import (
    BudgetExceeded,
    ConfigError,
    ErrorThresholdExceededError,
    TokenLimitExceededError,
)
from rlm_kernel.trajectory import load


def repl(*lines: str) -> str:
    return "```repl\n" + "\n".join(lines) + "\n```"


def kwargs(server) -> dict:
    return {"model_name": "gpt-4o-mini", "base_url": server.openai_base_url, "api_key": "sk-test"}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"environment": "docker"}, "executor='local'"),
        ({"environment_kwargs": {"image": "python"}}, "executor_kwargs"),
        ({"depth": 1}, "set max_depth"),
        ({"other_backends": ["openai", "anthropic"]}, "sub_backend"),
        ({"orchestrator": False}, "always writes code"),
        ({"logger": "logs"}, "RLMLogger"),
        ({"verbos": True}, "Did you mean 'verbose'"),
        ({"max_iteration": 3}, "Did you mean 'max_iterations'"),
        ({"custom_system_prompt": "x", "system_prompt": "y"}, "given twice"),
        (
            {
                "environment": "ipython",
                "custom_tools": {"LIMIT": 7},
                "executor_kwargs": {"isolation": "none"},
            },
            "are values, not functions",
        ),
    ],
)
def test_a_keyword_without_an_equivalent_is_a_one_line_error(scripted_server, given, message) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        RLM("openai", kwargs(scripted_server), **given)
    assert "\n" not in str(caught.value)


def test_the_reference_keywords_map_to_settings(scripted_server) -> None:
    def tool(x: int) -> int:
        """Double it."""
        return 2 * x

    rlm = RLM(
        "openai",
        kwargs(scripted_server),
        environment="ipython",
        custom_system_prompt="Be brief.",
        other_backends=["anthropic"],
        other_backend_kwargs=[{"model_name": "claude-haiku-4-5", "api_key": "sk-ant-test"}],
        compaction=True,
        compaction_threshold_pct=0.5,
        max_concurrent_subcalls=3,
        sampling_args={"temperature": 0.2, "top_p": 0.9, "max_tokens": 500},
        custom_tools={"double": {"tool": tool, "description": "Twice the number"}},
        custom_sub_tools={"double": tool},
        max_errors=2,
        executor_kwargs={"isolation": "none"},
    )
    c = rlm.config
    assert (c.executor, c.system_prompt, c.sub_backend, c.sub_model_name) == (
        "kernel",
        "Be brief.",
        "anthropic",
        "claude-haiku-4-5",
    )
    assert (c.compaction, c.compaction_threshold, c.max_concurrency, c.max_errors) == (True, 0.5, 3, 2)
    assert c.backend_kwargs["temperature"] == 0.2 and c.backend_kwargs["extra_body"] == {"top_p": 0.9}
    assert c.max_reply_tokens == 500
    assert c.tools["double"].summary == "Twice the number" and [t.name for t in c.sub_tools] == ["double"]


def test_values_among_custom_tools_are_variables_of_the_repl(scripted_server, tmp_path) -> None:
    scripted_server.responder = Script(
        root=[repl("print(LIMIT * 6)", "answer['content'] = str(LIMIT * 6)", "answer['ready'] = True")]
    )
    rlm = RLM(
        "openai",
        kwargs(scripted_server),
        custom_tools={"LIMIT": {"tool": 7, "description": "a cap"}},
        log_dir=tmp_path,
    )
    assert rlm.completion("ctx", "What is six times the limit?").response == "42"


def test_max_errors_stops_the_run_and_raises_the_references_error(scripted_server, tmp_path) -> None:
    scripted_server.responder = Script(root=[repl("1 / 0"), repl("undefined_name"), repl("print('never')")])
    result = RLM("openai", kwargs(scripted_server), max_errors=2, log_dir=tmp_path).completion("ctx", "q?")
    assert not result.ok and "max_errors reached: 2 steps in a row failed" in result.error
    assert "NameError" in result.error
    with pytest.raises(ErrorThresholdExceededError) as caught:
        result.raise_for_error()
    assert (caught.value.error_count, caught.value.threshold) == (2, 2)
    assert sum(r.is_root for r in scripted_server.requests) == 2


def test_a_failed_step_between_good_ones_resets_the_count(scripted_server, tmp_path) -> None:
    scripted_server.responder = Script(
        root=[
            repl("1 / 0"),
            repl("print('fine')"),
            repl("1 / 0"),
            repl("answer['content'] = 'fine'", "answer['ready'] = True"),
        ]
    )
    result = RLM("openai", kwargs(scripted_server), max_errors=2, log_dir=tmp_path).completion("ctx", "q?")
    assert result.ok and result.response == "fine"


def test_a_limit_raises_the_references_error_with_the_partial_answer(scripted_server, tmp_path) -> None:
    scripted_server.responder = Script(
        root=[Reply(text=repl("print('a')"), input_tokens=900, output_tokens=200), repl("print('b')")]
    )
    result = RLM("openai", kwargs(scripted_server), max_tokens=1000, log_dir=tmp_path).completion("ctx", "q?")
    assert isinstance(result.exception, TokenLimitExceededError)
    with pytest.raises(BudgetExceeded) as caught:  # ours, and the reference's by name
        result.raise_for_error()
    assert isinstance(caught.value, TokenLimitExceededError)
    assert (caught.value.tokens_used, caught.value.token_limit) == (1100, 1000)
    assert caught.value.partial_answer is None


def test_callbacks_logger_and_usage_summary(scripted_server, tmp_path) -> None:
    scripted_server.responder = Script(
        root=[
            repl("x = llm_query('hi')", "print(x)"),
            repl("answer['content'] = x", "answer['ready'] = True"),
        ],
        sub="hello",
    )
    seen: list[tuple] = []
    logger = RLMLogger()
    rlm = RLM(
        "openai",
        kwargs(scripted_server),
        logger=logger,
        log_dir=tmp_path,
        on_subcall_start=lambda d, m, p: seen.append(("sub", d, m, p)),
        on_subcall_complete=lambda d, m, t, e: seen.append(("sub done", d, m, e)),
        on_iteration_start=lambda d, i: seen.append(("turn", d, i)),
        on_iteration_complete=lambda d, i, t: seen.append(("turn done", d, i, t >= 0)),
    )
    result = rlm.completion("ctx", "What does the sub-model answer?")
    assert result.ok and result.response == "hello"
    assert seen == [
        ("turn", 0, 1),
        ("sub", 1, "gpt-4o-mini", "hi"),
        ("sub done", 1, "gpt-4o-mini", None),
        ("turn done", 0, 1, True),
        ("turn", 0, 2),
        ("turn done", 0, 2, True),
    ]
    usage = result.usage_summary.model_usage_summaries["gpt-4o-mini"]
    assert usage.total_calls == 3 == result.usage.total.calls
    assert result.usage_summary.total_input_tokens == result.usage.total.input_tokens
    assert result.root_model == "gpt-4o-mini"
    assert result.metadata == logger.get_trajectory()
    first = result.metadata["iterations"][0]["code_blocks"][0]["result"]
    assert first["stdout"] == "hello\n" and first["rlm_calls"][0]["response"] == "hello"


def test_a_session_keeps_its_repl_and_conversation(scripted_server, tmp_path) -> None:
    scripted_server.responder = Script(
        root=[
            repl("words = context.split()", "print(len(words))"),
            repl("answer['content'] = str(len(words))", "answer['ready'] = True"),
            repl("print(words[0])", "answer['content'] = words[0]", "answer['ready'] = True"),
        ]
    )
    rlm = RLM("openai", kwargs(scripted_server), log_dir=tmp_path)
    with rlm.session("alpha beta gamma") as session:
        first = session.ask("How many words?")
        second = session.ask("Which word comes first?")
    assert (first.response, second.response) == ("3", "alpha")
    roots = [r for r in scripted_server.requests if r.is_root]
    # The second question goes on from the first's conversation, in which `words` was made.
    assert roots[2].messages[: len(roots[1].messages)] == [*roots[1].messages[:-1], roots[1].messages[-1]]
    assert "A new question about the same context" in roots[2].last_user
    assert "Which word comes first?" in roots[2].last_user
    started = next(e for e in load(second.log_path) if e.kind == "run_started")
    assert started.session == session.session_id and started.follows == first.run_id
    assert next(e for e in load(first.log_path) if e.kind == "run_started").session == session.session_id
    with pytest.raises(ConfigError, match="closed"):
        session.ask("again?")


def test_persistent_runs_share_one_repl(scripted_server, tmp_path) -> None:
    scripted_server.responder = Script(
        root=[
            repl("seen = [context]", "answer['content'] = 'noted'", "answer['ready'] = True"),
            repl(
                "seen.append(context)",
                "print(seen)",
                "answer['content'] = ' '.join(seen)",
                "answer['ready'] = True",
            ),
        ]
    )
    with RLM("openai", kwargs(scripted_server), persistent=True, log_dir=tmp_path) as rlm:
        assert rlm.completion("one").response == "noted"
        assert rlm.completion("two").response == "one two"


def test_persistent_async_runs_share_one_repl_too(scripted_server, tmp_path) -> None:
    scripted_server.responder = Script(
        root=[
            repl("seen = [context]", "answer['content'] = 'noted'", "answer['ready'] = True"),
            repl("seen.append(context)", "answer['content'] = ' '.join(seen)", "answer['ready'] = True"),
        ]
    )

    async def ask_twice(rlm: RLM) -> list[str | None]:
        return [(await rlm.acompletion("one")).response, (await rlm.acompletion("two")).response]

    with RLM("openai", kwargs(scripted_server), persistent=True, log_dir=tmp_path) as rlm:
        assert asyncio.run(ask_twice(rlm)) == ["noted", "one two"]
    scripted_server.responder = Script(
        root=[
            repl("seen = [context]", "answer['content'] = 'noted'", "answer['ready'] = True"),
            repl("seen.append(context)", "answer['content'] = ' '.join(seen)", "answer['ready'] = True"),
        ]
    )
    with RLM("openai", kwargs(scripted_server), persistent=True, log_dir=tmp_path) as rlm:  # a loop each
        assert asyncio.run(rlm.acompletion("one")).response == "noted"
        assert asyncio.run(rlm.acompletion("two")).response == "one two"


def test_a_session_in_a_kernel_loads_the_context_once(scripted_server, tmp_path) -> None:
    context = "word " * 40_000  # past the size sent inline: loaded into the kernel by reference
    scripted_server.responder = Script(
        root=[
            repl("kept = context", "answer['content'] = str(len(kept))", "answer['ready'] = True"),
            repl(
                "print(context is kept)", "answer['content'] = str(context is kept)", "answer['ready'] = True"
            ),
        ]
    )
    rlm = RLM(
        "openai",
        kwargs(scripted_server),
        executor="kernel",
        executor_kwargs={"isolation": "none"},
        log_dir=tmp_path,
    )
    with rlm.session(context) as session:
        assert session.ask("How long is it?").response == "200000"
        assert session.ask("Is it the same object?").response == "True"


def test_services_by_name_use_their_own_key_and_endpoint(monkeypatch) -> None:
    from rlm_kernel.errors import MissingAPIKey
    from rlm_kernel.lm import make_lm

    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-never-sent-elsewhere")
    for var in ("PORTKEY_API_KEY", "PORTKEY_BASE_URL", "VLLM_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(MissingAPIKey, match="PORTKEY_API_KEY"):
        RLM("portkey", {"model_name": "@openai/gpt-5-nano"})
    monkeypatch.setenv("PORTKEY_API_KEY", "pk-test")
    lm = make_lm("portkey", {"model_name": "@openai/gpt-5-nano"})
    assert (lm.base_url, lm._api_key, lm.context_window) == ("https://api.portkey.ai/v1", "pk-test", 400_000)
    with pytest.raises(ConfigError, match="needs a model"):
        make_lm("openrouter", {"api_key": "k"})
    with pytest.raises(ConfigError, match="VLLM_BASE_URL"):
        make_lm("vllm", {"model_name": "m"})
    vllm = make_lm("vllm", {"model_name": "m", "base_url": "http://127.0.0.1:9/v1"})
    assert vllm._api_key != "sk-openai-never-sent-elsewhere"
