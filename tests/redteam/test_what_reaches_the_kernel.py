"""What the host hands back to the root's code: the replies, errors and tool results of its calls,
the models it may make the host pay for, and the numbers it may put into the record.

- A provider (or a proxy) that echoes the request's ``Authorization`` header in its reply or its
  error hands the key to whatever reads that text. The code is such a reader: it encodes what it
  got (base64, reversed), which no redaction of the record recognizes, and prints it and answers
  with it. Nothing may reach it unredacted.
- ``llm_query(p, model="any-name")`` makes the host call whatever model the code names, and keep a
  client for each name. Only the run's models may be named.
- Code can make floats that JSON has no words for (``inf``, ``nan``); a trajectory is strict JSON
  all the same.
"""

from __future__ import annotations

import ast
import base64
import binascii
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from redteam import CONFIG_KEY, attacker, outputs
from scripted_server import Reply, Request, ScriptedServer

from rlm_kernel import RLM
from rlm_kernel.secrets import REDACTED

pytestmark = pytest.mark.timeout(300)

EXECUTORS = ["local", "kernel"]


def echoing_the_key(root: Any) -> Any:
    """Root requests play the attacker's script; any other request (a sub-call, a tool's call to
    the same service) is answered with the Authorization header it came with: in the reply's
    text, or, when its prompt says "fail", in an HTTP 401's error message."""

    def respond(request: Request) -> Reply:
        if request.is_root:
            return root(request)
        header = request.headers.get("authorization", "")
        if "fail" in request.last_user:
            return Reply(status=401, error_message=f"Incorrect API key provided: {header}")
        return Reply(text=f"You sent {header}")

    return respond


def upstream_tool(server: ScriptedServer) -> Any:
    def upstream(query: str) -> str:
        """Ask the upstream service, with this host's credentials.

        Args:
            query: what to ask
        """
        body = json.dumps({"model": "svc", "messages": [{"role": "user", "content": query}]}).encode()
        request = urllib.request.Request(
            server.openai_base_url + "/chat/completions",
            data=body,
            headers={"Authorization": f"Bearer {CONFIG_KEY}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                return json.loads(reply.read())["choices"][0]["message"]["content"]
        except urllib.error.HTTPError as exc:  # the service's own words, as a tool passes them on
            raise RuntimeError(exc.read().decode()) from None

    return upstream


GRAB_EVERYTHING = """
import base64
got = []
def grab(name, call):
    try:
        got.append(f"{name}: {call()!r}")
    except Exception as e:
        got.append(f"{name} raised {type(e).__name__}: {e}")
grab("reply", lambda: llm_query("echo please"))
grab("error", lambda: llm_query("fail please"))
grab("batch", lambda: llm_query_batched(["echo please", "fail please"]))
grab("child", lambda: rlm_query("echo please"))
grab("tool", lambda: upstream("echo please"))
grab("tool error", lambda: upstream("fail please"))
blob = "\\n".join(got)
print(base64.b64encode(blob.encode()).decode())
print(blob[::-1])
answer["content"] = blob[::-1]
answer["ready"] = True
"""


def encodings(secret: str) -> list[str]:
    """The key as the code may have written it: itself, reversed, and in base64 at each of the
    three alignments it can have inside a longer text."""
    forms = [secret, secret[::-1]]
    for pad in range(3):
        encoded = base64.b64encode(b"x" * pad + secret.encode()).decode()
        forms.append(encoded[4 if pad else 0 : -4])  # the characters that depend on the key alone
    return forms


def decoded(text: str) -> list[str]:
    """Each line of ``text`` that is base64, decoded."""
    out = []
    for line in text.splitlines():
        try:
            out.append(base64.b64decode(line.strip(), validate=True).decode("utf-8", "replace"))
        except (binascii.Error, ValueError):
            continue
    return out


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_key_that_a_provider_echoes_never_reaches_the_code(
    server: ScriptedServer, tmp_path: Path, executor: str
) -> None:
    rlm = attacker(
        server,
        GRAB_EVERYTHING,
        executor=executor,
        log_dir=tmp_path,
        max_depth=2,
        tools=[upstream_tool(server)],
    )
    server.responder = echoing_the_key(server.responder)
    result = rlm.completion("doc", "q")
    assert result.log_path is not None
    printed = outputs(result)
    everywhere = [
        str(result.response or ""),
        str(result.error or ""),
        *printed,
        *(json.dumps(e.to_dict(), default=str) for e in result.trajectory),
        result.log_path.read_text(),
    ]
    for text in everywhere:
        for form in encodings(CONFIG_KEY):
            assert form not in text
        for plain in decoded(text):
            assert CONFIG_KEY not in plain and CONFIG_KEY not in plain[::-1]
    # Every path was taken, and each handed back the provider's words with the key's place redacted
    # (the child's answer is its code's text reversed).
    top = next(e.output for e in result.trajectory if e.kind == "step_finished" and e.depth == 0)
    got = decoded(top)[0].splitlines()
    assert [line.split(":")[0] for line in got] == [
        "reply",
        "error",
        "batch",
        "child",
        "tool",
        "tool error raised RuntimeError",
    ]
    marked = f"Bearer {REDACTED}"
    assert all(marked in line or marked[::-1] in line for line in got), got


LOOP_OVER_NAMES = """
allowed = [llm_query("hi", model=name) for name in ("sub-small", "gpt-4o-mini", "vision-big")]
allowed.append(llm_query("hi"))
before = host_clients()
refused, messages = 0, set()
for i in range(1000):
    name = f"made-up-model-{i}"
    try:
        llm_query("hi", model=name)
    except ValueError as e:
        refused += 1
        messages.add(str(e).replace(repr(name), "NAME"))
try:
    llm_query_batched(["a", "b"], model="made-up-batch")
except ValueError as e:
    refused += 1
after = host_clients()
print(repr((allowed, refused, sorted(messages), before, after)))
"""


@pytest.mark.parametrize("executor", EXECUTORS)
def test_the_code_names_only_the_models_the_run_allows(server: ScriptedServer, executor: str) -> None:
    held: dict[str, RLM] = {}

    def host_clients() -> int:
        """How many LM clients the host holds for this run."""
        parts = held["rlm"]._active_run
        assert parts is not None
        return len(parts.tree._lms)

    rlm = attacker(
        server,
        LOOP_OVER_NAMES,
        executor=executor,
        sub_model_name="sub-small",
        sub_models=["vision-big"],
        tools=[host_clients],
    )
    held["rlm"] = rlm
    root = server.responder
    server.responder = lambda r: root(r) if r.is_root else Reply(text=f"I am {r.model}")
    server.requests.clear()
    result = rlm.completion("doc", "q")
    allowed, refused, messages, before, after = ast.literal_eval(outputs(result)[0])
    assert allowed == ["I am sub-small", "I am gpt-4o-mini", "I am vision-big", "I am sub-small"]
    assert refused == 1001
    assert len(messages) == 1
    (message,) = messages
    assert "\n" not in message
    assert "NAME" in message and all(m in message for m in ("sub-small", "gpt-4o-mini", "vision-big"))
    assert "sub_models" in message  # what to set to allow another
    asked = {r.model for r in server.requests}
    assert not [m for m in asked if m.startswith("made-up")]
    # Nothing kept for the names refused: the root's client, and one per model the code named.
    assert after == before <= 4


def strict(line: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(line, parse_constant=refuse)


ODD_NUMBERS = """
import json
class Odd:
    # how a context describes itself to a child's root: here with numbers JSON has no words for
    __rlm_metadata__ = {"type": "Odd", "shape": "text", "preview": "odd", "score": float("nan"),
                        "bounds": [float("-inf"), float("inf")]}
print(rlm_query("look at it", context=Odd()))
print(float("inf"), float("nan"), {"x": float("nan")}, double(float("nan")), double(x=float("-inf")))
answer["content"] = json.dumps([float("inf"), float("nan"), 1.5])
answer["ready"] = True
"""


def double(x: float) -> float:
    """Twice ``x``.

    Args:
        x: a number
    """
    return 2 * x


# In the kernel the code may also change the clock that the kernel's half of the bridge reads, so
# that its step reports an elapsed time of infinity.
CLOCK = """
import time
time.perf_counter = lambda: float("inf")
"""


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_trajectory_is_strict_json_whatever_numbers_the_code_makes(
    server: ScriptedServer, tmp_path: Path, executor: str
) -> None:
    steps = [ODD_NUMBERS] if executor == "local" else [CLOCK, ODD_NUMBERS]
    rlm = attacker(server, *steps, executor=executor, log_dir=tmp_path, max_depth=2, tools=[double])
    result = rlm.completion("doc", "q")
    assert result.ok, result.error
    assert result.log_path is not None
    records = [strict(line) for line in result.log_path.read_text().splitlines()]  # no Infinity, no NaN
    child = next(r for r in records if r["kind"] == "run_started" and r["depth"] == 1)
    assert child["context_meta"]["score"] is None and child["context_meta"]["bounds"] == [None, None]
    assert all(r["elapsed_s"] >= 0 for r in records if r["kind"] == "step_finished")  # a time, not null
    called = [r["arguments"] for r in records if r["kind"] == "tool_call"]
    assert '{"args": [NaN], "kwargs": {}}' in called and '{"x": -Infinity}' in called  # text, as written


TYPED = [
    'import json\nanswer["content"] = json.dumps([float("inf"), float("nan"), 1.5])\nanswer["ready"] = True',
    'answer["content"] = "[2.5, 1.5]"\nanswer["ready"] = True',
]


def test_a_typed_answer_holds_only_numbers_that_json_can_write(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """A typed answer is kept as its JSON: one with inf or nan is not of the type, and the root is
    told why; the answer it gives next is taken."""
    rlm = attacker(server, *TYPED, executor="local", log_dir=tmp_path, output_type=list[float])
    result = rlm.completion("doc", "q")
    assert result.ok, result.error
    assert result.response == [2.5, 1.5]
    assert result.log_path is not None
    records = [strict(line) for line in result.log_path.read_text().splitlines()]
    doubted = [r for r in records if r["kind"] == "answer_doubted"]
    assert [r["by"] for r in doubted] == ["type"]
    assert "inf" in doubted[0]["reason"] and "nan" in doubted[0]["reason"]
    assert [strict(r["content"]) for r in records if r["kind"] == "answer_set"] == [[2.5, 1.5]]
