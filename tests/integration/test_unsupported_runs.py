"""An answer that what the code printed does not support, through the real loop, over HTTP, against
the scripted server: sent back to the root once (by the cheap check, or by the sub-model's verdict
with ``verify=True``), the REPL's answer reopened, and the verdict paid for like any sub-call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from scripted_server import Reply, Script, ScriptedServer, sequence

from rlm_kernel import RLM
from rlm_kernel.usage import PRICES

pytestmark = pytest.mark.timeout(180)

PASSAGES = [
    "The gopher protocol serves menus over TCP port 70.",
    "A gopher is a small burrowing rodent; gopher tortoises dig too.",
    "Clients of the gopher protocol fetch documents by selector.",
    "The web replaced most menus in the nineties.",
]
CONTEXT = "\n\n".join(PASSAGES)
QUESTION = "How many passages mention the gopher protocol?"
COUNT_WORDS = "print(context.count('gopher'))"  # 4: the word, not the passages
COUNT_PASSAGES = "n = sum('gopher protocol' in p for p in context.split('\\n\\n'))\nprint(n)"


def repl(code: str) -> str:
    return f"Next step.\n```repl\n{code}\n```"


def make_rlm(server: ScriptedServer, **settings: Any) -> RLM:
    server.requests.clear()
    kwargs = {
        "model_name": "gpt-4o-mini",
        "base_url": server.openai_base_url,
        "api_key": "sk-test",
        "max_retries": 0,
    }
    return RLM("openai", kwargs, **{"log_dir": False, **settings})


def complete(rlm: RLM, driver: str) -> Any:
    if driver == "async":
        return asyncio.run(rlm.acompletion(CONTEXT, root_prompt=QUESTION))
    return rlm.completion(CONTEXT, root_prompt=QUESTION)


def kinds(result: Any, kind: str) -> list[Any]:
    return [e for e in result.trajectory if e.kind == kind]


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_verify_sends_an_unsupported_answer_back_once_and_counts_the_verdicts(scripted_server, driver):
    scripted_server.responder = Script(
        root=[
            repl(COUNT_WORDS),
            repl("answer['content'] = '4'\nanswer['ready'] = True"),  # printed, so the cheap check passes
            repl(COUNT_PASSAGES),  # runs to its end: the answer sent back is no longer ready
            repl("answer['content'] = str(n)\nanswer['ready'] = True"),
        ],
        sub=sequence(
            Reply(
                "UNSUPPORTED: 4 counts the word gopher, not the passages", input_tokens=300, output_tokens=12
            ),
            Reply("SUPPORTED", input_tokens=320, output_tokens=2),
        ),
    )
    result = complete(make_rlm(scripted_server, verify=True), driver)
    assert result.ok and result.response == "2" and result.warnings == []
    assert result.iterations == 4
    (doubted,) = kinds(result, "answer_doubted")
    assert (doubted.content, doubted.by) == ("4", "verify")
    assert "4 counts the word gopher" in doubted.reason
    roots = [r for r in scripted_server.requests if r.is_root]
    assert len(roots) == 4
    told = roots[2].last_user
    assert 'Your answer "4" is not supported by what your code printed' in told
    assert "a sub-model judged it unsupported (4 counts the word gopher, not the passages)" in told
    assert "Check it with code, then set the answer again" in told
    asked = [r for r in scripted_server.requests if not r.is_root]
    assert len(asked) == 2
    assert f"Question: {QUESTION}" in asked[0].last_user and "Answer: 4" in asked[0].last_user
    assert "Answer: 2" in asked[1].last_user and "\n2\n" in asked[1].last_user  # the latest output
    # the verdicts are sub-calls of the run: in its events, its usage and its cost
    finished = kinds(result, "subcall_finished")
    assert [e.response for e in finished] == [
        "UNSUPPORTED: 4 counts the word gopher, not the passages",
        "SUPPORTED",
    ]
    sub = result.usage.sub
    assert (sub.calls, sub.input_tokens, sub.output_tokens) == (2, 620, 14)
    price = PRICES["gpt-4o-mini"]
    assert sub.cost == pytest.approx((620 * price.input + 14 * price.output) / 1e6)
    assert result.usage.total.calls == 6


def test_a_second_unsupported_verdict_keeps_the_answer_with_a_warning(scripted_server):
    scripted_server.responder = Script(
        root=[
            repl(COUNT_WORDS),
            repl("answer['content'] = '4'\nanswer['ready'] = True"),
            repl("answer['content'] = '4'\nanswer['ready'] = True"),  # the same, and sure
        ],
        sub="UNSUPPORTED: that is the number of words",
    )
    result = complete(make_rlm(scripted_server, verify=True), "sync")
    assert result.response == "4" and result.error is None
    assert len(result.warnings) == 1 and "the number of words" in result.warnings[0]
    assert [w.code for w in kinds(result, "warning")] == ["unsupported"]
    assert len(kinds(result, "answer_doubted")) == 1


def test_a_failed_verdict_call_lets_the_answer_through(scripted_server):
    scripted_server.responder = Script(
        root=[repl(COUNT_PASSAGES), repl("answer['content'] = '2'\nanswer['ready'] = True")],
        sub=Reply(status=500, error_message="overloaded"),
    )
    result = complete(make_rlm(scripted_server, verify=True), "sync")
    assert result.ok and result.response == "2" and result.warnings == []
    (finished,) = kinds(result, "subcall_finished")
    assert finished.error


KINDS = ["local", pytest.param("kernel", marks=pytest.mark.sandbox)]


@pytest.mark.parametrize("executor", KINDS)
def test_the_cheap_check_sends_a_search_count_back_and_the_repl_waits_for_a_new_answer(
    scripted_server, executor
):
    report = "search('gopher protocol'): 3 passages match; the best 3:\n[1] context: gopher protocol"
    scripted_server.responder = Script(
        root=[
            repl(f"print({report!r})"),
            repl("answer['content'] = '3'\nanswer['ready'] = True"),  # the header's count
            repl(COUNT_PASSAGES),
            repl("answer['content'] = str(n)\nanswer['ready'] = True"),
        ]
    )
    settings = {"executor": executor} | ({"executor_kwargs": {}} if executor != "local" else {})
    result = complete(make_rlm(scripted_server, **settings), "sync")
    assert result.ok and result.response == "2" and result.warnings == []
    assert [r for r in scripted_server.requests if not r.is_root] == []  # no verdict asked: verify is off
    (doubted,) = kinds(result, "answer_doubted")
    assert doubted.by == "check" and doubted.reason == "a number read from search matches, not computed"
    assert [e.step for e in kinds(result, "step_finished")] == [1, 2, 3, 4]
