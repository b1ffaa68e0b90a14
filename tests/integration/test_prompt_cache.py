"""Prompt caching: a long root run keeps its prefix where the providers' caches find it.

Anthropic caches by mark: every root request must mark the stable prefix (the system prompt and
the first request, with the context's description) and the conversation so far, four marks at most,
with the prefix's bytes the same on every turn. OpenAI caches by itself: every root request must
begin with the bytes of the one before, whatever the turns between said (hints, warnings, errors).
Both run through the real SDKs over HTTP to the scripted server, whose :class:`PromptCache` counts
the cached tokens as the provider would, so the usage line's cached share is the one the marks earn.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from scripted_server import PromptCache, Reply, Request, Script, ScriptedServer

from rlm_kernel import RLM, prompts
from rlm_kernel.config import RLMConfig
from rlm_kernel.engine import AskRoot, RLMRun
from rlm_kernel.eval.results import Results, Row
from rlm_kernel.events import Event
from rlm_kernel.executors.base import ExecResult
from rlm_kernel.lm.base import Completion
from rlm_kernel.lm.llama_server import LlamaServer
from rlm_kernel.lm.openai import OpenAILM, cache_key
from rlm_kernel.prompts import context_metadata
from rlm_kernel.usage import Tally, Usage, percent, price_for

KEY = "sk-test-prompt-cache-0123456789"
HINT = "HINT-THE-TOTAL-IS-IN-PART-THREE"
TURNS = 20
CONTEXT = "\n".join(f"part {i}: " + "lorem ipsum dolor sit amet " * 40 for i in range(12))
EPHEMERAL = {"type": "ephemeral"}


def repl(code: str) -> str:
    return f"Let me look.\n```repl\n{code}\n```"


def twenty_turns() -> Script:
    """Twenty root replies whose turns bring every kind of later message: output, sub-calls, a reply
    without code, a traceback, a cut output, a FINAL_VAR of a missing name, a human's hint (given
    by the test), the turns-left warning, and at last the answer."""
    replies = [
        repl("print(len(context))"),
        repl("summary = llm_query('Summarise: ' + context[:200])\nprint(summary)"),
        "I will think about it before writing code.",  # no code: the nudge
        repl("1 / 0"),  # a traceback
        repl("print('x' * 20000)"),  # cut to max_output_chars
        repl("seen = 1") + "\nFINAL_VAR('missing_name')",  # a FINAL that cannot be read
        repl("parts = llm_query_batched([f'part {i}' for i in range(3)])\nprint(parts)"),
    ]
    replies += [repl(f"print('looking at part {i}')") for i in range(len(replies), TURNS - 1)]
    replies.append(repl("print('the total is 42')\nanswer['content'] = '42'\nanswer['ready'] = True"))
    assert len(replies) == TURNS
    return Script(root=replies, sub=Reply(text="a summary"))


def run_twenty_turns(server: ScriptedServer, api: str) -> Any:
    server.prompt_cache = PromptCache()
    server.responder = twenty_turns()
    if api == "anthropic":
        backend = {"model_name": "claude-haiku-4-5", "base_url": server.anthropic_base_url}
    else:
        backend = {"model_name": "gpt-4o-mini", "base_url": server.openai_base_url}
    # One turn more than the script: the turns-left warning comes, the forced last turn does not.
    rlm = RLM(api, {**backend, "api_key": KEY, "max_retries": 0}, max_iterations=TURNS + 1, log_dir=False)

    def hint_after_step_8(event: Event) -> None:
        if event.kind == "step_finished" and event.depth == 0 and event.step == 8:
            rlm.hint(HINT)

    result = rlm.completion(CONTEXT, "What is the total?", subscribers=(hint_after_step_8,))
    assert result.response == "42", result.error
    roots = [r for r in server.requests if r.is_root]
    assert len(roots) == TURNS
    said = "\n".join(r.last_user for r in roots)
    for later in (HINT, prompts.NO_CODE_NUDGE, "ZeroDivisionError", "missing_name", "turn(s) left"):
        assert later in said, f"no root turn brought {later!r}: the test no longer covers it"
    return result, roots


def dumps(value: Any) -> str:
    """The received JSON serialised again, keys in the order they came."""
    return json.dumps(value, ensure_ascii=False)


def marks(body: dict) -> int:
    blocks = [*body.get("system", [])]
    for message in body["messages"]:
        if isinstance(message["content"], list):
            blocks += message["content"]
    return sum("cache_control" in b for b in blocks)


def as_sent_unmarked(message: dict) -> dict:
    """The message as the prompt holds it: no breakpoint's mark, one text block as a string."""
    content = message["content"]
    if isinstance(content, list):
        content = [{k: v for k, v in block.items() if k != "cache_control"} for block in content]
        if len(content) == 1 and content[0]["type"] == "text":
            content = content[0]["text"]
    return {**message, "content": content}


def assert_usage_line_shows_the_share(result: Any) -> None:
    total = result.usage.total
    assert total.cached_tokens > 0
    share = percent(total.cached_tokens, total.input_tokens)
    assert f"({total.cached_tokens:,} cached, {share} of input)" in str(result.usage)
    assert total.cached_share is not None and total.cached_share > 0.5  # most of each turn is its prefix


def test_anthropic_root_requests_mark_the_stable_prefix_and_the_conversation_on_every_turn(
    scripted_server: ScriptedServer,
) -> None:
    result, roots = run_twenty_turns(scripted_server, "anthropic")
    bodies = [r.body for r in roots]
    for turn, body in enumerate(bodies, 1):
        assert body["system"][-1]["cache_control"] == EPHEMERAL, f"turn {turn}: the system prompt"
        first = body["messages"][0]["content"]
        assert first[-1]["cache_control"] == EPHEMERAL, f"turn {turn}: the context's description"
        assert "Question: What is the total?" in first[-1]["text"]
        last = body["messages"][-1]["content"]
        assert last[-1]["cache_control"] == EPHEMERAL, f"turn {turn}: the conversation so far"
        assert marks(body) == (2 if turn == 1 else 3) <= 4
    # The stable prefix is the same bytes, marks included, on every turn.
    assert len({dumps(b["system"]) for b in bodies}) == 1
    assert len({dumps(b["messages"][0]) for b in bodies}) == 1
    # Each request begins with the one before: byte for byte, but for the moved mark of its end.
    for before, after in pairwise(bodies):
        n = len(before["messages"])
        assert len(after["messages"]) == n + 2  # the reply, and the next request
        assert dumps(after["messages"][: n - 1]) == dumps(before["messages"][: n - 1])
        assert as_sent_unmarked(after["messages"][n - 1]) == as_sent_unmarked(before["messages"][-1])
    # Sub-calls are asked once: marking them would only pay for cache writes.
    subs = [r for r in scripted_server.requests if not r.is_root]
    assert len(subs) == 4 and all(marks(r.body) == 0 for r in subs)
    # Every turn after the first reads the conversation before it from the cache.
    replies = [e for e in result.trajectory if e.kind == "root_reply"]
    assert replies[0].cached_tokens == 0 and all(e.cached_tokens > 0 for e in replies[1:])
    assert_usage_line_shows_the_share(result)


def test_anthropic_cache_writes_are_charged_at_their_own_rate(scripted_server: ScriptedServer) -> None:
    """Anthropic charges a write to its prompt cache 1.25 times input: each root reply's cost counts
    the tokens its request wrote, as the provider reported them."""
    result, roots = run_twenty_turns(scripted_server, "anthropic")
    cache = PromptCache()  # the server's cache, replayed: sub-calls carry no marks and write nothing
    written = [cache.use(r)[1] for r in roots]
    assert sum(written) > 0
    replies = [e for e in result.trajectory if e.kind == "root_reply"]
    price = price_for("claude-haiku-4-5")
    assert price is not None and price.cache_write == 1.25 * price.input
    for reply, wrote in zip(replies, written, strict=True):
        assert reply.cost == pytest.approx(
            price.cost(reply.input_tokens, reply.output_tokens, reply.cached_tokens, wrote)
        )
    first = replies[0]  # all of it written or fresh: at least what input alone would cost
    assert first.cost > price.cost(first.input_tokens, first.output_tokens, first.cached_tokens)


def test_openai_root_requests_begin_with_the_bytes_of_the_one_before(scripted_server: ScriptedServer) -> None:
    result, roots = run_twenty_turns(scripted_server, "openai")
    bodies = [r.body for r in roots]
    for before, after in pairwise(bodies):
        n = len(before["messages"])
        assert dumps(after["messages"][:n]) == dumps(before["messages"])
    for body in bodies:
        assert all(set(m) == {"role", "content"} for m in body["messages"])  # no mark of ours is sent
        assert "prompt_cache_key" not in body  # only OpenAI's own endpoint routes by key
    assert_usage_line_shows_the_share(result)


def test_prompt_cache_key_is_the_fixed_start_of_a_marked_conversation() -> None:
    """On OpenAI's own endpoint a root request carries the digest of its fixed start, the same on
    every turn and different for another context; a sub-call, unmarked, carries none."""
    lm = OpenAILM("gpt-4o-mini", api_key=KEY, base_url="https://api.openai.com/v1")
    assert lm.is_official
    opening: list[dict] = [
        {"role": "system", "content": "You are the root.", "cache": True},
        {"role": "user", "content": "The context is a str of 9 chars.\n\nQuestion: q", "cache": True},
    ]
    later = [
        {**opening[0]},
        {**opening[1]},
        {"role": "assistant", "content": "```repl\nprint(1)\n```"},
        {"role": "user", "content": "Output of step 1:\n1", "cache": True},
    ]
    key = lm._request(opening, 100)["prompt_cache_key"]  # type: ignore[arg-type]
    assert key.startswith("rlm-") and lm._request(later, 100)["prompt_cache_key"] == key  # type: ignore[arg-type]
    other = [opening[0], {**opening[1], "content": "The context is a list of 3 items.\n\nQuestion: q"}]
    assert cache_key(other) != key  # type: ignore[arg-type]
    assert "prompt_cache_key" not in lm._request([{"role": "user", "content": "a sub-call"}], 100)
    theirs = OpenAILM(
        "gpt-4o-mini", api_key=KEY, base_url=lm.base_url, extra_body={"prompt_cache_key": "mine"}
    )
    assert theirs._request(later, 100)["prompt_cache_key"] == "mine"  # type: ignore[arg-type]
    local = OpenAILM("local", base_url="http://127.0.0.1:1/v1")
    assert "prompt_cache_key" not in local._request(later, 100)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("cached", "line"),
    [
        (
            434,
            "2 LM calls (2 root, 0 sub), 1,003 in / 42 out tokens (434 cached, 43% of input), cost $0.0000",
        ),
        (0, "2 LM calls (2 root, 0 sub), 1,003 in / 42 out tokens (0 cached), cost $0.0000"),
        (
            1_000,
            "2 LM calls (2 root, 0 sub), 1,003 in / 42 out tokens (1,000 cached, >99% of input), cost $0.0000",
        ),
    ],
)
def test_usage_line_wording(cached: int, line: str) -> None:
    usage = Usage(total=Tally(2, 1003, 42, cached, 0.0), root=Tally(calls=2))
    assert str(usage) == line


def test_percent_is_never_rounded_to_none_or_all() -> None:
    assert [percent(p, 1000) for p in (0, 1, 5, 430, 996, 1000)] == [
        "0%",
        "<1%",
        "<1%",
        "43%",
        ">99%",
        "100%",
    ]
    assert percent(0, 0) == "0%"


def test_eval_rows_and_table_show_the_cached_share() -> None:
    def row(method: str, cached: int) -> Row:
        return Row(
            task_id="t1", family="sniah", split="test", length=1000, method=method, model="m", sub_model="m",
            profile="", score=1.0, answer="a", expected="a", error=None, root_input_tokens=800,
            sub_input_tokens=200, cost=0.01, cached_tokens=cached,
        )  # fmt: skip

    cached, plain = row("rlm", 800), row("base", 0)
    assert cached.cached_share == 0.8 and plain.cached_share == 0.0
    assert Row.from_dict(cached.to_dict()) == cached  # a column of results.jsonl and results.csv
    old = {k: v for k, v in plain.to_dict().items() if k != "cached_tokens"}
    assert Row.from_dict(old).cached_tokens == 0  # rows written before the column read as uncached
    table = Results([cached, plain]).paper_table()
    assert "| rlm | m | 100.0 ($0.01, 1.0k tok, 80% cached, n=1) |" in table
    assert "| base | m | 100.0 ($0.01, 1.0k tok, n=1) |" in table
    assert "x% cached: the share of the input tokens" in table


def test_the_scripted_cache_counts_only_what_a_mark_wrote() -> None:
    """The server's model of Anthropic's cache: without marks nothing is read back, however alike
    the requests; it is what makes the run's test above a test of the marks."""
    cache = PromptCache()
    body = {"system": "s" * 400, "messages": [{"role": "user", "content": "u" * 400}]}
    request = Request(
        "anthropic", "m", [{"role": "system", "content": "s" * 400}, body["messages"][0]], False, body, {}
    )
    assert cache.use(request) == (0, 0) and cache.use(request) == (0, 0)
    marked = {**body, "system": [{"type": "text", "text": "s" * 400, "cache_control": EPHEMERAL}]}
    request = Request("anthropic", "m", request.messages, False, marked, {})
    assert cache.use(request) == (0, 100)  # written: the system prompt's 400 characters
    assert cache.use(request) == (100, 0)  # then read


def test_local_server_keeps_llama_cpp_prompt_cache_on(tmp_path: Path) -> None:
    """The local backend relies on llama.cpp's defaults to keep a root's conversation cached across
    the sub-calls that take its slot: reuse of a slot's prefix, and idle slots' prompts kept in
    memory. The settings our server starts with (no model is loaded here) must keep them."""
    xllamacpp = pytest.importorskip("xllamacpp")
    params = LlamaServer(tmp_path / "model.gguf")._params(xllamacpp)
    assert params.cache_prompt and params.cache_idle_slots and params.cache_ram_mib > 0
    assert params.n_parallel == 1  # one slot by default: what the measurement in the docs used


def test_engine_marks_the_fixed_start_and_the_end_of_each_request_but_the_last() -> None:
    """Pure: the root's requests as the engine makes them, before any backend. The marks on the
    default and small profiles' fixed starts, each later turn's end, and none at the end of the
    forced last turn, which no turn follows."""
    for profile in ("default", "small"):
        config = RLMConfig(backend="replay", max_iterations=2, prompt_profile=profile)
        meta = context_metadata("abc" * 100)
        run = RLMRun(config, question="Q?", context_meta=meta, model="m", sub_model="m", emit=lambda e: None, run_id="r1", started=1.0)  # fmt: skip
        asks = [run.start()]
        for n in (1, 2):
            run.receive_reply(Completion(text=f"```repl\nx = {n}\n```", model="m"))
            asks.append(run.receive_execution(ExecResult(stdout=""), answer_ready=False))
        fixed = run._fixed
        for turn, ask in enumerate(asks, 1):
            assert isinstance(ask, AskRoot) and ask.final_turn == (turn == 3)
            marked = [i for i, m in enumerate(ask.messages) if m.get("cache")]
            end = [] if ask.final_turn else [len(ask.messages) - 1]
            assert marked == sorted({fixed - 2, fixed - 1, *end}), (profile, turn)
            assert ask.messages[fixed - 1]["content"].endswith("Question: Q?")
            assert len(marked) <= 4  # Anthropic's most
        assert not any(m.get("cache") for m in run.messages[fixed:])  # the marks are the request's alone
