"""The host's boundary with the code, as tables: what a sub-call hands back is redacted, only the run's
models may be named, and what is written is strict JSON (the attacks themselves, through real
providers and kernels, are in tests/redteam/test_what_reaches_the_kernel.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rlm_kernel.budget import Budget
from rlm_kernel.config import RLMConfig
from rlm_kernel.errors import ConfigError, SubcallTooLarge
from rlm_kernel.events import Hint, RunStarted
from rlm_kernel.executors import bridge
from rlm_kernel.secrets import REDACTED, Redactor
from rlm_kernel.subcalls import SubcallPool, Subcalls
from rlm_kernel.trajectory import TrajectoryWriter, finite, notebook_metadata, strict_json
from rlm_kernel.typed import OutputTypeError, output_type

KEY = "sk-live-0123456789abcdefABCDEF"


@pytest.fixture
def subcalls() -> Iterator[tuple[Subcalls, list[str | None]]]:
    """A run's sub-calls that know ``KEY`` and may name two models; the names it made clients for."""
    asked: list[str | None] = []

    def lm_for(model: str | None) -> Any:
        asked.append(model)
        return None

    pool = SubcallPool(2)
    yield (
        Subcalls(
            pool=pool,
            budget=Budget(),
            emit=lambda event: None,
            lm_for=lm_for,
            run_id="r",
            parent_id=None,
            depth=0,
            redact=Redactor([KEY]).text,
            models=["small", "big"],
        ),
        asked,
    )
    pool.close()


class Holder:
    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return f"Holder({self.text})"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (f"key {KEY}", f"key {REDACTED}"),
        (f"key {KEY}".encode(), f"key {REDACTED}".encode()),
        ([f"a {KEY}", 1, None], [f"a {REDACTED}", 1, None]),
        ((KEY, 2.5), (REDACTED, 2.5)),
        ({KEY: [KEY]}, {REDACTED: [REDACTED]}),
        ({frozenset({KEY})}, {frozenset({REDACTED})}),
        (Holder(KEY), f"Holder({REDACTED})"),  # an object whose text shows the key is that text
    ],
)
def test_what_is_handed_back_holds_no_key(subcalls: Any, value: Any, expected: Any) -> None:
    assert subcalls[0].handed_back(value) == expected


def test_what_holds_no_key_is_handed_back_as_it_is(subcalls: Any) -> None:
    for value in (["a", {"b": ("c", 1)}], Holder("nothing"), b"bytes", {"x"}):
        assert subcalls[0].handed_back(value) is value


def test_an_exception_with_a_key_is_raised_without_it_or_its_chain(subcalls: Any) -> None:
    clean = KeyError("nothing here")
    assert subcalls[0].raised_in_code(clean) is clean
    too_large = SubcallTooLarge(10, 5, "small", 4, "estimate", None)
    assert subcalls[0].raised_in_code(too_large) is too_large  # the code may catch it by its class
    try:
        try:
            raise OSError(f"Incorrect API key provided: {KEY}")
        except OSError as inner:
            raise LookupError("the service said no") from inner
    except LookupError as exc:
        raised = subcalls[0].raised_in_code(exc)
    assert type(raised) is LookupError and str(raised) == "the service said no"
    assert raised.__cause__ is None and raised.__context__ is None
    raised = subcalls[0].raised_in_code(KeyError(f"id {KEY}"))
    assert type(raised) is KeyError and str(raised) == repr(f"id {REDACTED}")
    raised = subcalls[0].raised_in_code(UnicodeDecodeError("utf-8", KEY.encode(), 0, 1, "bad"))
    assert type(raised) is UnicodeDecodeError and raised.args[1] == REDACTED.encode()  # its bytes, redacted

    class Status(Exception):  # a type that cannot be made from its arguments alone
        def __init__(self, message: str, *, status: int) -> None:
            super().__init__(message)
            self.status = status

    raised = subcalls[0].raised_in_code(Status(f"401: {KEY}", status=401))
    assert type(raised) is RuntimeError and str(raised) == f"Status: 401: {REDACTED}"


def test_the_code_names_only_the_runs_models(subcalls: Any) -> None:
    calls, asked = subcalls
    calls._lm("big", "llm_query")
    calls._lm("small", "llm_query")  # the sub-model: its one client
    calls._lm(None, "llm_query")
    for name in (f"made-up-{i}" for i in range(100)):
        with pytest.raises(
            ValueError, match=r"may not call the model 'made-up-\d+'; it may call 'small', 'big'"
        ):
            calls._lm(name, "llm_query")
    with pytest.raises(TypeError, match="model= takes a model's name"):
        calls._lm(["big"], "llm_query")
    assert asked == ["big", None, None]  # nothing asked for the names refused


def test_sub_models_is_a_setting_of_names() -> None:
    assert RLMConfig().sub_models is None
    assert RLMConfig(sub_models="gpt-4o, claude-x,,gpt-4o").sub_models == ("gpt-4o", "claude-x")
    assert RLMConfig(sub_models=["a"]).public()["sub_models"] == ("a",)
    with pytest.raises(ConfigError, match="sub_models takes names"):
        RLMConfig(sub_models=[1])


def strict(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(constant)

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"a": float("inf"), "b": [float("nan"), (1.5, float("-inf"))]},
            {"a": None, "b": [None, [1.5, None]]},
        ),
        ({float("nan"): 1}, {"nan": 1}),
        ({"ok": [1, 2.5, "Infinity"]}, {"ok": [1, 2.5, "Infinity"]}),
    ],
)
def test_strict_json_writes_non_finite_floats_as_null(value: Any, expected: Any) -> None:
    assert strict(strict_json(value)) == expected == finite(value)


def test_strict_json_refuses_what_it_cannot_mend() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        strict_json(loop)


def test_a_trajectory_and_a_notebooks_copy_are_strict(tmp_path: Path) -> None:
    event = RunStarted(run_id="r", question="q", context_meta={"x": float("nan")}, model="m", sub_model="s")
    writer = TrajectoryWriter(tmp_path / "run.jsonl")
    writer(event)
    writer(Hint(run_id="r", text="NaN"))
    writer.close()
    lines = [strict(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    assert lines[0]["context_meta"] == {"x": None} and lines[1]["text"] == "NaN"
    assert strict(json.dumps(notebook_metadata([event])))["rlm_kernel"]["events"][0]["context_meta"] == {
        "x": None
    }


def test_a_typed_answer_with_inf_or_nan_is_not_of_its_type() -> None:
    for declared in (output_type(list[float]), output_type({"type": "array", "items": {"type": "number"}})):
        for raw in ("[Infinity, 1]", "[NaN]", '["inf"]'):
            if raw == '["inf"]' and declared.adapter is None:
                continue  # a JSON schema takes a string for no number
            with pytest.raises(OutputTypeError, match="no form for"):
                declared.check(raw)
        assert declared.check("[1.5]") == ([1.5], "[1.5]")


def test_the_bridge_takes_no_time_of_inf() -> None:
    executed = {"stdout": "", "stderr": "", "value": None, "error": None, "answer_ready": False}
    executed |= {"answer": "", "restored": []}
    for elapsed in ("Infinity", "NaN", "1e999"):
        text = (
            json.dumps({"op": "result", "id": 1, "result": executed})[:-2] + f', "elapsed_s": {elapsed}}}}}'
        )
        with pytest.raises(bridge.ProtocolError):
            bridge.parse_request(text)
    ok = json.dumps({"op": "result", "id": 1, "result": {**executed, "elapsed_s": 0.5}})
    assert bridge.parse_request(ok).result.elapsed_s == 0.5
