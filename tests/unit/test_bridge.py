"""The host–kernel bridge's declared messages: what the host accepts from a kernel, as a table."""

from __future__ import annotations

import json

import pytest

from rlm_kernel.executors import bridge
from rlm_kernel.executors.bridge import MARK, MAX_REQUEST, ProtocolError, TooLarge

EXECUTED = {
    "stdout": "hi\n",
    "stderr": "",
    "value": None,
    "error": None,
    "elapsed_s": 0.01,
    "answer_ready": False,
    "answer": "",
    "restored": ["context"],
}

ACCEPTED = [
    ({"op": "ready"}, bridge.Ready),
    ({"op": "result", "id": 3, "result": EXECUTED}, bridge.Result),
    ({"op": "result", "id": 3, "result": {"error": "boom"}}, bridge.Result),
    ({"op": "result", "id": 3, "result": {}}, bridge.Result),
    ({"op": "call", "fn": "llm_query", "tag": "t1", "prompt": "p"}, bridge.LlmQuery),
    (
        {"op": "call", "fn": "llm_query_batched", "tag": "t1", "prompts": ["a", "b"], "model": "m"},
        bridge.LlmQueryBatched,
    ),
    (
        {
            "op": "call",
            "fn": "ask_batched",
            "tag": "t1",
            "conversations": [[{"role": "user", "content": "x"}]],
        },
        bridge.AskBatched,
    ),
    (
        {
            "op": "call",
            "fn": "rlm_query_batched",
            "tag": "t1",
            "prompts": ["a"],
            "contexts": [{"ref": "k1", "meta": {}}],
        },
        bridge.RlmQueryBatched,
    ),
    (
        {"op": "call", "fn": "host", "tag": "t1", "name": "where", "args": [1], "kwargs": {"a": 2}},
        bridge.HostCall,
    ),
    ({"op": "call", "fn": "part", "tag": "t1", "ref": "c1", "index": 0}, bridge.Part),
]

REFUSED = {
    "not JSON": "{not json",
    "not an object": "[1, 2]",
    "no op": json.dumps({"id": 1}),
    "an unknown op": json.dumps({"op": "exec", "code": "x"}),
    "a field too many": json.dumps({"op": "ready", "pid": 1}),
    "a call without its fields": json.dumps({"op": "call", "fn": "llm_query"}),
    "an unknown call": json.dumps({"op": "call", "fn": "os.system", "tag": "t"}),
    "a number as a string": json.dumps({"op": "result", "id": "3", "result": {}}),
    "a negative part": json.dumps({"op": "call", "fn": "part", "tag": "t", "ref": "c", "index": -1}),
    "a tag too long": json.dumps({"op": "call", "fn": "llm_query", "tag": "t" * 65, "prompt": "p"}),
    "a result of no kind": json.dumps({"op": "result", "id": 1, "result": {"stdout": 1}}),
    "a prompt of numbers": json.dumps({"op": "call", "fn": "llm_query", "tag": "t", "prompt": 42}),
}


@pytest.mark.parametrize(("message", "kind"), ACCEPTED, ids=[type_.__name__ for _, type_ in ACCEPTED])
def test_what_the_host_accepts(message: dict, kind: type) -> None:
    assert isinstance(bridge.parse_request(json.dumps(message)), kind)


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_what_the_host_refuses(text: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        bridge.parse_request(text)
    assert "\n" not in str(refused.value)


def test_a_request_too_large_is_refused_by_both_ends() -> None:
    big = bridge.LlmQuery("t", "x" * MAX_REQUEST)
    with pytest.raises(TooLarge, match="too large"):
        bridge.encode(big)  # the kernel's end: the code is told to send less
    with pytest.raises(ProtocolError, match="over the bridge"):
        bridge.parse_request(
            json.dumps({"op": "call", "fn": "llm_query", "tag": "t", "prompt": "x" * MAX_REQUEST})
        )


def test_a_result_must_be_of_its_commands_kind() -> None:
    executed = bridge.parse_request(json.dumps({"op": "result", "id": 1, "result": EXECUTED})).result
    bridge.check_result(bridge.Exec(tag="t", code="x", step=1), executed)
    bridge.check_result(bridge.Exec(tag="t", code="x", step=1), bridge.Failed("stopped"))
    with pytest.raises(ProtocolError, match="wrong kind"):
        bridge.check_result(bridge.Close(tag="t"), executed)


def test_what_the_kernel_sends_the_host_reads_back() -> None:
    for message in (bridge.Ready(), bridge.LlmQuery("t", "p"), bridge.Result(2, bridge.Done())):
        assert bridge.parse_request(bridge.encode(message)) == message
    assert MARK.startswith("\x1f")  # no printable prompt of the code's own starts like a request
