"""The sub-call functions declared once (subcall_api): the host's Subcalls, the kernel's bridge and
the REPL's names agree with the declaration; a failed call is a SubcallError, whose text is what the
code and the root have always read and whose fields say what failed."""

from __future__ import annotations

import copy
import inspect
import io
import json
import pickle
from collections.abc import Iterator
from contextlib import redirect_stdout
from typing import Any

import pytest

from rlm_kernel.budget import Budget
from rlm_kernel.errors import BudgetExceeded, ProviderError, RLMError, SubcallTooLarge
from rlm_kernel.events import Event, SubcallFinished
from rlm_kernel.executors.inkernel import _Bridge
from rlm_kernel.lm.base import Completion
from rlm_kernel.repl import RESERVED, Scaffold
from rlm_kernel.secrets import REDACTED, Redactor
from rlm_kernel.subcall_api import (
    ERROR_PREFIX,
    FUNCTIONS,
    REPL_FUNCTIONS,
    SubcallError,
    declaration,
    errors_in,
    errors_out,
)
from rlm_kernel.subcalls import SubcallPool, Subcalls

KEY = "sk-live-0123456789abcdefABCDEF"


# -- one declaration ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("implementation", [Subcalls, _Bridge], ids=["host", "kernel"])
def test_every_implementation_has_the_declared_signature_and_docstring(
    implementation: type, name: str
) -> None:
    declared = declaration(name)
    made = getattr(implementation, name)
    assert inspect.signature(made) == inspect.signature(declared)
    assert made.__doc__ == declared.__doc__ and inspect.getdoc(made)


def test_the_repl_binds_the_declared_functions() -> None:
    assert REPL_FUNCTIONS == ("llm_query", "llm_query_batched", "rlm_query", "rlm_query_batched")
    assert RESERVED[1:5] == REPL_FUNCTIONS
    namespace: dict[str, Any] = {}
    Scaffold(namespace, "ctx", _Bridge("t"), None)
    for name in REPL_FUNCTIONS:
        assert namespace[name].__doc__ == declaration(name).__doc__


# -- the value of a failed call -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("error", "text", "kind"),
    [
        (
            SubcallError.failed(ProviderError("openai", "bad prompt", 400)),
            "[llm_query error] openai error (HTTP 400): bad prompt",
            "provider",
        ),
        (SubcallError.failed(ValueError("no\nmore")), "[llm_query error] ValueError: no", "failed"),
        (SubcallError.failed(KeyError()), "[llm_query error] KeyError: ", "failed"),
        (
            SubcallError.failed(BudgetExceeded("max_tokens", 10, 5)),
            "[llm_query error] max_tokens exceeded: used 10 of 5; raise the limit to go further.",
            "budget",
        ),
        (
            SubcallError.failed(SubcallTooLarge(900, 100, "m", index=2)),
            f"{ERROR_PREFIX} SubcallTooLarge: prompts[2]: a prompt of about 900 tokens (estimated) does "
            "not fit m's window of 100 tokens: split it into smaller pieces and ask each, or set "
            "oversize='split'",
            "too_large",
        ),
        (SubcallError.child(RLMError("no answer")), "[rlm_query error] no answer", "child"),
    ],
)
def test_a_failed_call_reads_as_it_always_has(error: SubcallError, text: str, kind: str) -> None:
    assert isinstance(error, str) and error == text and str(error) == text and repr(error) == repr(text)
    assert error.kind == kind and text == f"[{error.fn} error] {error.message}"
    assert json.dumps([error]) == json.dumps([text])


def test_an_error_survives_a_copy_a_pickle_and_the_bridge() -> None:
    error = SubcallError("llm_query", "provider", "openai error (HTTP 500): down", "c7")
    for again in (copy.copy(error), copy.deepcopy(error), pickle.loads(pickle.dumps(error))):
        assert isinstance(again, SubcallError) and again.fields() == error.fields() and again == error
    replies = ["fine", error]
    sent = json.loads(json.dumps({"value": replies, "subcall_errors": errors_out(replies)}))
    back = errors_in(sent["value"], sent["subcall_errors"])
    assert back == replies and type(back[0]) is str and back[1].fields() == error.fields()
    assert errors_in(json.loads(json.dumps(error)), errors_out(error)).fields() == error.fields()
    assert errors_out("fine") is None and errors_out(["a"]) is None


def test_a_value_sent_with_no_error_fields_is_as_it_came() -> None:
    """A tool's string that looks like a failed sub-call is not taken for one: only fields say so."""
    sent = ["fine", "[llm_query error] ValueError: no", 3]
    back = errors_in(sent)
    assert back == sent and [type(v).__name__ for v in back] == ["str", "str", "int"]
    assert type(errors_in("[llm_query error] x")) is str


def test_show_vars_names_a_failed_reply_a_str() -> None:
    namespace: dict[str, Any] = {"r": SubcallError("llm_query", "failed", "x"), "n": 1}
    scaffold = Scaffold(namespace, "ctx", None, None)
    with redirect_stdout(io.StringIO()) as out:
        assert scaffold.show_vars() == {"r": "str", "n": "int"}
    assert out.getvalue() == "r: str\nn: int\n"


# -- the host's calls --------------------------------------------------------------------------------
class Scripted:
    """A sub-model that fails on "fail", answers "empty" with blanks, and echoes the rest."""

    model_name = "m"
    context_window = 4000
    continues_reply = False

    async def complete(self, messages: list[Any], **kwargs: Any) -> Completion:
        text = messages[-1]["content"]
        if "fail" in text:
            raise ProviderError("openai", f"refused {text}", 400)
        return Completion(text="  " if "empty" in text else f"ok {text}", model=self.model_name)

    async def aclose(self) -> None:
        pass


@pytest.fixture
def calls() -> Iterator[tuple[Subcalls, list[Event]]]:
    events: list[Event] = []
    pool = SubcallPool(4)
    lm = Scripted()
    yield (
        Subcalls(
            pool=pool,
            budget=Budget(),
            emit=events.append,
            lm_for=lambda model: lm,  # type: ignore[arg-type,return-value]
            run_id="r",
            parent_id=None,
            depth=0,
            redact=Redactor([KEY]).text,
        ),
        events,
    )
    pool.close()


def test_a_batch_gives_each_failure_as_an_error_with_its_call(calls: Any) -> None:
    subcalls, events = calls
    replies = subcalls.llm_query_batched(["a", f"fail {KEY}", "empty", "x" * 40_000])
    assert replies[0] == "ok a" and type(replies[0]) is str
    failed, empty, large = replies[1:]
    assert all(isinstance(r, SubcallError) for r in (failed, empty, large))
    assert (failed.kind, empty.kind, large.kind) == ("provider", "empty_reply", "too_large")
    assert failed == f"[llm_query error] openai error (HTTP 400): refused fail {REDACTED}"
    assert empty == "[llm_query error] m gave an empty reply"
    assert large.startswith(f"{ERROR_PREFIX} SubcallTooLarge: prompts[3]: ")
    ended = {e.call_id: e for e in events if isinstance(e, SubcallFinished)}
    assert ended[failed.call_id].error == failed.message
    assert ended[empty.call_id].error == empty.message


def test_a_verdict_that_failed_is_empty_and_a_summary_says_why(calls: Any) -> None:
    subcalls, _ = calls
    assert subcalls.pool.run(subcalls.verdict("fail", 10)) == ""
    summary = subcalls.pool.run(subcalls.summary("fail", Scripted(), 10))
    assert isinstance(summary, SubcallError) and summary.startswith(ERROR_PREFIX)


def test_an_error_handed_back_to_the_code_stays_one_with_its_secret_redacted(calls: Any) -> None:
    subcalls, _ = calls
    error = SubcallError("llm_query", "provider", f"echoed {KEY}", "c1")
    clean = subcalls.handed_back([error])[0]
    assert isinstance(clean, SubcallError) and clean == f"[llm_query error] echoed {REDACTED}"
    assert (clean.kind, clean.call_id) == ("provider", "c1")
    plain = SubcallError("llm_query", "failed", "nothing secret")
    assert subcalls.handed_back(plain) is plain
