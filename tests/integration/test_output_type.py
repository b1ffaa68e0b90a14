"""Typed answers (``output_type=``): the root is told the type, a committed answer is parsed and
validated, a wrong one goes back with why, and after ``output_retries`` the run ends in a clear
error that keeps the answer. Real runs through the OpenAI SDK against the scripted server."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel
from scripted_server import Script
from typing_extensions import TypedDict

from rlm_kernel import RLM
from rlm_kernel.errors import ConfigError
from rlm_kernel.trajectory import load
from rlm_kernel.typed import OutputTypeError

PRINT = "print(context)"


class Invoice(BaseModel):
    supplier: str
    total: float


@dataclass
class Count:
    word: str
    times: int


class Pair(TypedDict):
    left: str
    right: str


def answer(value: str) -> str:
    """A step that prints the context and the value it then commits (so that what it commits is seen)."""
    return f"```repl\n{PRINT}\nvalue = {value}\nprint(value)\nanswer['content'] = value\nanswer['ready'] = True\n```"


def run(server, tmp_path, output_type, *replies: str, **settings):
    server.responder = Script(root=[r if r.startswith(("FINAL", "```")) else answer(r) for r in replies])
    kwargs = {"model_name": "gpt-4o-mini", "base_url": server.openai_base_url, "api_key": "sk-test"}
    rlm = RLM("openai", kwargs, output_type=output_type, log_dir=tmp_path, **settings)
    return rlm.completion("acme 12.5 widget widget bolt", "Read the context.")


CASES = [
    # (type, the root's answers in order, the typed response; None: the run fails)
    (list[str], ["['acme', 'bolt']"], ["acme", "bolt"]),
    ("list[str]", ['\'["acme", "bolt"]\''], ["acme", "bolt"]),  # JSON text
    (list[str], ["'acme, bolt'", "['acme', 'bolt']"], ["acme", "bolt"]),  # malformed, then right
    (list[str], ["[1, 2]", "['1', '2']"], ["1", "2"]),  # wrong-typed items
    (int, ["'twelve'", "12"], 12),
    (
        Invoice,
        ["{'supplier': 'acme'}", "{'supplier': 'acme', 'total': '12.5'}"],
        Invoice(supplier="acme", total=12.5),
    ),
    (Count, ["{'word': 'widget', 'times': 'two'}", "{'word': 'widget', 'times': 2}"], Count("widget", 2)),
    (Pair, ["[{'left': 'a'}]", "{'left': 'acme', 'right': 'bolt'}"], {"left": "acme", "right": "bolt"}),
    ({"type": "array", "items": {"type": "integer"}}, ["['x']", "[12, 5]"], [12, 5]),
    (str, ["'anything at all'"], "anything at all"),
    (list[str], ["'a'", "'b'", "'c'"], None),  # never right: an error after output_retries (2)
    (Invoice, ["{'supplier': 'acme', 'total': 12.5, 'extra': 1}"], Invoice(supplier="acme", total=12.5)),
]


@pytest.mark.parametrize(("output_type", "answers", "expected"), CASES)
def test_a_typed_answer_is_valid_or_a_clear_error(
    scripted_server, tmp_path, output_type, answers, expected
) -> None:
    result = run(scripted_server, tmp_path, output_type, *answers)
    roots = [r for r in scripted_server.requests if r.is_root]
    assert len(roots) == len(answers)
    if output_type is not str:
        assert "JSON schema" in roots[0].last_user  # the root is told the type
    for request in roots[1:]:
        assert "not of the type the task asks for" in request.last_user
    if expected is None:
        assert not result.ok and isinstance(result.exception, OutputTypeError)
        assert "3 answers were tried" in result.error and "\n" not in result.error
        assert result.response == "c"  # the last answer, as committed
        with pytest.raises(OutputTypeError):
            result.raise_for_error()
        return
    assert result.ok, result.error
    assert result.response == expected
    events = load(result.log_path)
    sets = [e for e in events if e.kind == "answer_set"]
    doubted = [e for e in events if e.kind == "answer_doubted"]
    assert len(sets) == 1 and len(doubted) == len(answers) - 1 and all(d.by == "type" for d in doubted)
    if output_type is not str:  # the trajectory keeps the JSON
        import json

        assert json.loads(sets[0].content) is not None


def test_final_text_is_checked_too(scripted_server, tmp_path) -> None:
    result = run(
        scripted_server,
        tmp_path,
        list[int],
        f"```repl\n{PRINT}\nprint([12, 5])\n```",
        "FINAL([12, 5])",
    )
    assert result.ok and result.response == [12, 5]


def test_no_retries_fails_at_once(scripted_server, tmp_path) -> None:
    result = run(scripted_server, tmp_path, int, "'twelve'", output_retries=0)
    assert isinstance(result.exception, OutputTypeError) and result.response == "twelve"
    assert sum(r.is_root for r in scripted_server.requests) == 1


def test_a_child_run_answers_in_text(scripted_server, tmp_path) -> None:
    def respond(request):
        if not request.is_root:
            return "ok"
        if "Read the context." in request.text:  # the top run
            n = sum(m["role"] == "assistant" for m in request.messages)
            return answer("[rlm_query('Name one supplier.')]") if n == 0 else "no more"
        return answer("'acme'")  # the child: plain text, though the top run's answer is typed

    scripted_server.responder = respond
    kwargs = {"model_name": "gpt-4o-mini", "base_url": scripted_server.openai_base_url, "api_key": "sk-test"}
    rlm = RLM("openai", kwargs, output_type=list[str], max_depth=2, log_dir=tmp_path)
    result = rlm.completion("acme 12.5 widget widget bolt", "Read the context.")
    assert result.ok and result.response == ["acme"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("os.system", "is not a type"),
        ("list[Foo]", "unknown name 'Foo'"),
        ("{bad", "not valid JSON"),
        ({"type": "nonsense"}, "not a valid JSON schema"),
        (object(), "has no JSON schema"),
    ],
)
def test_a_type_that_cannot_be_checked_is_a_one_line_error(spec, message) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        RLM("openai", {"api_key": "sk-test"}, output_type=spec)
    assert "\n" not in str(caught.value)


def test_the_magics_take_a_type_by_text_or_by_the_notebooks_name(shell, scripted_server) -> None:
    scripted_server.responder = Script(
        root=[answer("['acme', 'bolt']"), answer("{'supplier': 'acme', 'total': 12.5}")]
    )
    shell.user_ns.update(report="acme 12.5 widget widget bolt", Invoice=Invoice)
    shell.run_cell("%%rlm -c report --output-type list[str] -o names --no-widget\nWhich suppliers?")
    assert shell.user_ns["names"].response == ["acme", "bolt"]
    shell.run_cell("%%rlm -c report --output-type Invoice -o invoice --no-widget\nThe invoice?")
    assert shell.user_ns["invoice"].response == Invoice(supplier="acme", total=12.5)
