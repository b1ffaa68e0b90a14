"""The sub-call pre-flight in whole runs: through the real SDKs over HTTP to the scripted server, whose
sub-model has a window of ``WINDOW`` tokens and refuses a request past it, as a provider does.

The scripted server has no tokenizer (it answers 404 to ``/tokenize`` and to Anthropic's
``count_tokens``), so the pre-flight counts by its conservative estimate, and the server's model is
taken to count tokens that same way: the worst the pre-flight lets through. The last tests count
with llama.cpp's own tokenizer, on the bundled model."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from scripted_server import Reply, Request, Script, ScriptedServer

from rlm_kernel import RLM
from rlm_kernel.lm.base import Message
from rlm_kernel.lm.tokens import conservative_tokens, preflight, prompt_limit, template_tokens
from rlm_kernel.subcalls import ERROR_PREFIX

KEY = "sk-test-preflight"
WINDOW = 1000
LIMIT = prompt_limit(WINDOW)  # 750: the rest is room for the reply
NEEDLE = "PURPLE-ELEPHANT-7731"
CONTEXT = ("lorem ipsum dolor sit amet. " * 250) + f"The magic word is {NEEDLE}. " + ("filler text. " * 300)


def tokens_of(request: Request) -> int:
    """The sub-model's count of a request: the most the pre-flight lets through."""
    return conservative_tokens(request.text) + template_tokens(len(request.messages))


def make_rlm(server: ScriptedServer, api: str = "openai", **settings: Any) -> RLM:
    """A root with a large window; sub-calls to a sub-model whose window is ``WINDOW``."""
    if api == "openai":
        sub = {"model_name": "gpt-4o-mini", "base_url": server.openai_base_url}
    else:
        sub = {"model_name": "claude-haiku-4-5", "base_url": server.anthropic_base_url}
    return RLM(
        "openai",
        {"model_name": "gpt-4o-mini", "base_url": server.openai_base_url, "api_key": KEY, "max_retries": 0},
        sub_backend=api,
        sub_backend_kwargs={**sub, "api_key": KEY, "max_retries": 0, "context_window": WINDOW},
        log_dir=False,
        **settings,
    )


class SubModel:
    """The sub-model: it answers with the needle where its prompt holds it, else ``miss``, and refuses
    (HTTP 400) a prompt past its window, remembering it."""

    def __init__(self, miss: str = "none") -> None:
        self.miss = miss
        self.past_window: list[int] = []

    def __call__(self, request: Request) -> Reply:
        if (tokens := tokens_of(request)) > WINDOW:
            self.past_window.append(tokens)
            return Reply(status=400, error_message=f"{tokens} tokens is past the window of {WINDOW}")
        return Reply(text=NEEDLE if NEEDLE in request.last_user else self.miss)


@pytest.fixture
def sub_model(scripted_server: ScriptedServer) -> Iterator[SubModel]:
    model = SubModel()
    yield model
    subs = [r for r in scripted_server.requests if not r.is_root]
    assert model.past_window == [] and all(tokens_of(r) <= LIMIT for r in subs)
    assert not any(CONTEXT in r.last_user for r in subs)  # the oversized prompt itself never went


def repl(code: str) -> str:
    return f"```repl\n{code}\n```"


CATCH_AND_SPLIT = repl(
    "try:\n"
    "    found = llm_query(context)\n"
    "except SubcallTooLarge as too_large:\n"
    "    print(f'too large: {too_large.prompt_tokens} > {too_large.limit} of {too_large.window}')\n"
    "    size = len(context) * too_large.limit // too_large.prompt_tokens // 2\n"
    "    parts = [context[i:i + size] for i in range(0, len(context), size)]\n"
    "    found = [r for r in llm_query_batched(parts) if r != 'none']\n"
    "FINAL(found)"
)


def step_output(result: Any) -> str:
    return next(e for e in result.trajectory if e.kind == "step_finished").output


def errors_of(result: Any) -> list[str]:
    return [e.error for e in result.trajectory if e.kind == "subcall_finished" and e.error]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_roots_code_catches_subcall_too_large_and_splits(
    scripted_server: ScriptedServer, sub_model: SubModel, api: str
) -> None:
    scripted_server.responder = Script(root=[CATCH_AND_SPLIT], sub=sub_model)
    result = make_rlm(scripted_server, api).completion(CONTEXT)
    assert result.error is None and result.response == str([NEEDLE])
    assert (
        f"too large: {conservative_tokens(CONTEXT) + template_tokens(1)} > {LIMIT} of {WINDOW}"
        in step_output(result)
    )
    (error,) = errors_of(result)  # the refused call is recorded with why
    assert error.startswith("SubcallTooLarge: a prompt of about") and f"window of {WINDOW:,} tokens" in error
    assert sum(not r.is_root for r in scripted_server.requests) >= 3


def test_an_uncaught_one_is_the_steps_error_for_the_root_to_read(
    scripted_server: ScriptedServer, sub_model: SubModel
) -> None:
    scripted_server.responder = Script(root=[repl("r = llm_query(context)"), repl("FINAL('gave up')")])
    result = make_rlm(scripted_server).completion(CONTEXT)
    assert result.response == "gave up"
    output = step_output(result)
    assert "SubcallTooLarge: a prompt of about" in output and "oversize='split'" in output
    assert "llm_query(context)" in output  # the traceback points at the root's own line


def test_oversize_split_asks_in_parts_and_joins_the_answers(
    scripted_server: ScriptedServer, sub_model: SubModel
) -> None:
    scripted_server.responder = Script(
        root=[
            repl("r = llm_query('Find the magic word and say it. ' + context)\nprint(r)"),
            repl("FINAL(1)"),
        ],
        sub=sub_model,
    )
    result = make_rlm(scripted_server, oversize="split").completion(CONTEXT)
    output = step_output(result)
    parts = [r for r in scripted_server.requests if not r.is_root]
    n = len(parts)
    assert n >= 3 and output.startswith("[oversize='split': this prompt, of about")
    assert f"asked in {n} parts" in output and f"[part {n} of {n}]" in output and NEEDLE in output
    # Each part is framed with the request's beginning (its question) and end.
    assert all(r.last_user.startswith(f"[Part {i} of {n} ") for i, r in enumerate(sorted_parts(parts), 1))
    assert all("Find the magic word and say it." in r.last_user for r in parts)
    (warning,) = [e for e in result.trajectory if e.kind == "warning"]
    assert warning.code == "subcall_split" and f"asked in {n} parts" in warning.text
    started = [e for e in result.trajectory if e.kind == "subcall_started" and e.batch_id]
    assert len(started) == n and {e.batch_size for e in started} == {n}


def sorted_parts(requests: list[Request]) -> list[Request]:
    return sorted(requests, key=lambda r: int(r.last_user.split()[1]))


def test_batched_reports_the_oversized_indices_and_runs_the_rest(
    scripted_server: ScriptedServer, sub_model: SubModel
) -> None:
    sub_model.miss = "answered"
    scripted_server.responder = Script(
        root=[
            repl(
                "out = llm_query_batched(['first', context, 'third', context])\nfor o in out: print(o[:160])"
            ),
            repl("FINAL(1)"),
        ],
        sub=sub_model,
    )
    result = make_rlm(scripted_server).completion(CONTEXT)
    lines = step_output(result).splitlines()
    assert lines[0] == lines[2] == "answered"
    for i in (1, 3):
        assert lines[i].startswith(f"{ERROR_PREFIX} SubcallTooLarge: prompts[{i}]: a prompt of about")
    assert sorted(r.last_user for r in scripted_server.requests if not r.is_root) == ["first", "third"]
    assert sorted(e.split(": ")[1] for e in errors_of(result)) == ["prompts[1]", "prompts[3]"]


def test_batched_with_split_answers_every_slot(scripted_server: ScriptedServer, sub_model: SubModel) -> None:
    scripted_server.responder = Script(
        root=[
            repl(
                f"out = llm_query_batched(['short', context])\nFINAL([out[0], out[1][:18], '{NEEDLE}' in out[1]])"
            )
        ],
        sub=sub_model,
    )
    result = make_rlm(scripted_server, oversize="split").completion(CONTEXT)
    assert result.response == str(["none", "[oversize='split':", True])


@pytest.mark.parametrize(
    "isolation",
    [
        pytest.param({}, marks=pytest.mark.sandbox, id="sandboxed"),
        pytest.param({"isolation": "none"}, id="bare"),
    ],
)
def test_a_kernels_code_catches_it_by_name(
    scripted_server: ScriptedServer, sub_model: SubModel, isolation: dict[str, str]
) -> None:
    """The error crosses the kernel's stdin channel with its fields and is raised there as itself."""
    scripted_server.responder = Script(root=[CATCH_AND_SPLIT], sub=sub_model)
    rlm = make_rlm(scripted_server, executor="kernel", executor_kwargs=isolation)
    result = rlm.completion(CONTEXT)
    assert result.error is None and result.response == str([NEEDLE])
    assert f"> {LIMIT} of {WINDOW}" in step_output(result)


# -- llama.cpp's own count, on the bundled model ------------------------------------------------------


@pytest.fixture(scope="module")
def llama() -> Any:
    from rlm_kernel import models
    from rlm_kernel.lm.llama_server import shared_server

    return shared_server(models.fetch(progress=False), n_ctx=2048)  # test_local_model's server too


@pytest.mark.local_model
def test_llama_cpp_counts_what_its_server_reads(llama: Any) -> None:
    from rlm_kernel.lm.openai import OpenAILM

    lm = OpenAILM(llama.model_name, base_url=llama.base_url, api_key="x", context_window=2048, max_retries=0)
    fits: list[Message] = [{"role": "user", "content": "lorem ipsum dolor sit amet. " * 200}]
    over: list[Message] = [{"role": "user", "content": "lorem ipsum dolor sit amet. " * 400}]

    async def measure() -> tuple[Any, Any, int]:
        try:
            fit, too_big = await preflight(lm, fits), await preflight(lm, over)
            return fit, too_big, (await lm.complete(fits, max_tokens=4)).input_tokens
        finally:
            await lm.aclose()

    fit, too_big, read = asyncio.run(measure())
    # The estimate alone would refuse it (2,000 > 1,536); llama.cpp's count lets it through.
    assert conservative_tokens(fits[0]["content"]) > fit.limit
    assert fit.counted_by == "llama.cpp" and fit.fits and read <= fit.tokens <= read + 16
    assert too_big.counted_by == "llama.cpp" and not too_big.fits


@pytest.mark.local_model
def test_a_run_on_llama_cpp_is_refused_by_its_count(scripted_server: ScriptedServer, llama: Any) -> None:
    scripted_server.responder = Script(
        root=[
            repl(
                "try:\n    llm_query(context)\nexcept SubcallTooLarge as e:\n"
                "    print(e.counted_by, e.prompt_tokens > e.limit)"
            ),
            repl("FINAL(1)"),
        ]
    )
    rlm = RLM(
        "openai",
        {"model_name": "gpt-4o-mini", "base_url": scripted_server.openai_base_url, "api_key": KEY},
        sub_backend_kwargs={
            "model_name": llama.model_name,
            "base_url": llama.base_url,
            "context_window": 2048,
        },
        log_dir=False,
    )
    result = rlm.completion("lorem ipsum dolor sit amet. " * 400)
    assert step_output(result).strip() == "llama.cpp True"
