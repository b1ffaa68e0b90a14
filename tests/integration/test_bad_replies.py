"""Replies no provider should give, from a real HTTP server through the real SDK: the root's end
the run as the provider's error, in one line; a sub-call's fails its own slot of the batch, which
goes on, and every call records its end."""

from __future__ import annotations

import json

import pytest
from scripted_server import Reply, Request, Script, ScriptedServer

from rlm_kernel import RLM


def sse(*events: dict | bytes) -> bytes:
    return b"".join(
        b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events
    )


BASE = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m"}


def chunk(content: str, finish: str | None = None) -> dict:
    return {**BASE, "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]}


WHOLE = {
    "id": "x",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
}
BAD_UTF8 = json.dumps(chunk("a")).encode().replace(b'"a"', b'"\xff\xfe"')

ROOT_REPLIES = {  # the root's replies are streamed
    "an HTML page": (
        Reply(raw=b"<!doctype html><html><body>Gateway</body></html>"),
        "without a finish reason",
    ),
    "cut JSON": (Reply(raw=b'data: {"id": "x", "choi\n\n'), "JSONDecodeError"),
    "invalid UTF-8": (Reply(raw=sse(chunk("a"), BAD_UTF8)), "UnicodeDecodeError"),
    "no finish reason": (
        Reply(raw=sse(chunk("```repl\nprint(1)\n```"), b"[DONE]")),
        "without a finish reason",
    ),
    "no choices": (Reply(raw=sse({**BASE, "choices": []}, b"[DONE]")), "without a finish reason"),
}
SUB_REPLIES = {  # sub-calls are not
    "not JSON": (Reply(raw=b"<html>oops</html>"), "JSONDecodeError"),
    "cut JSON": (Reply(raw=b'{"id": "x", "choi'), "JSONDecodeError"),
    "invalid UTF-8": (
        Reply(raw=json.dumps(WHOLE).encode().replace(b'"hi"', b'"\xff\xfe"')),
        "UnicodeDecodeError",
    ),
    "no choices": (Reply(raw=json.dumps({**WHOLE, "choices": []}).encode()), "without a finish reason"),
    "an empty reply": (Reply(text=""), "gave an empty reply"),
    "a 500": (Reply(status=500, error_message="upstream down"), "upstream down"),
}


@pytest.fixture(scope="module")
def server() -> ScriptedServer:
    with ScriptedServer() as srv:
        yield srv


def make_rlm(server: ScriptedServer) -> RLM:
    kwargs = {
        "model_name": "gpt-4o-mini",
        "base_url": server.openai_base_url,
        "api_key": "sk-test",
        "max_retries": 0,
    }
    return RLM("openai", kwargs, log_dir=False, max_iterations=3)


@pytest.mark.parametrize("case", list(ROOT_REPLIES))
def test_a_broken_root_reply_is_the_providers_error(server: ScriptedServer, case: str) -> None:
    reply, why = ROOT_REPLIES[case]
    server.responder = Script(root=[reply, "FINAL(made up)"])
    result = make_rlm(server).completion("ctx", "q")
    assert result.response is None and not result.ok
    assert result.error.startswith("OpenAI error: the reply could not be read") and why in result.error
    assert "\n" not in result.error
    assert result.trajectory[-1].kind == "run_ended"


@pytest.mark.parametrize("case", list(SUB_REPLIES))
def test_a_broken_sub_reply_fails_its_slot_alone(server: ScriptedServer, case: str) -> None:
    reply, why = SUB_REPLIES[case]

    def sub(request: Request) -> Reply:
        return reply if "bad" in request.last_user else Reply(text="fine")

    server.responder = Script(
        root=["```repl\nout = llm_query_batched(['good', 'bad', 'good'])\nprint(out)\n```", "FINAL(done)"],
        sub=sub,
    )
    result = make_rlm(server).completion("ctx", "q")
    assert result.response == "done"
    step = next(e for e in result.trajectory if e.kind == "step_finished")
    replies = eval(step.output)
    assert replies[0] == replies[2] == "fine"
    assert replies[1].startswith("[llm_query error] ") and why in replies[1] and "\n" not in replies[1]
    ends = [e for e in result.trajectory if e.kind == "subcall_finished"]
    assert len(ends) == 3 and sum(e.error is not None for e in ends) == 1
