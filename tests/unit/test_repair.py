"""The paper's repairs of template mistakes: each kind, and the cases that must be left alone."""

from __future__ import annotations

import pytest

from rlm_kernel.events import AnswerSet, RootReply, RootRequest, RunEnded, RunStarted, StepStarted
from rlm_kernel.export import conversations, samples
from rlm_kernel.protocol import find_final, resolve_final
from rlm_kernel.repair import REPAIRS, bound_names, repair, repair_target


def fix(target, *, answer, source, bound=(), protocol="both", reply=None, enabled=REPAIRS):
    return repair_target(
        target,
        reply=target if reply is None else reply,
        answer=answer,
        source=source,
        protocol=protocol,
        bound=bound,
        enabled=enabled,
    )


def code(text: str) -> str:
    return f"```repl\n{text}\n```"


# -- final-var: FINAL(name) meant FINAL_VAR(name) ----------------------------------------------


@pytest.mark.parametrize(
    ("target", "fixed"),
    [
        ("FINAL(result)", "FINAL_VAR(result)"),
        ("I have it.\nFINAL(result)\n", "I have it.\nFINAL_VAR(result)\n"),
        ("**FINAL(result)**", "**FINAL_VAR(result)**"),
        (code("print(result)") + "\nFINAL(result)", code("print(result)") + "\nFINAL_VAR(result)"),
    ],
)
def test_final_of_a_bound_variable_becomes_final_var(target, fixed):
    assert fix(target, answer="42", source="FINAL", bound={"result"}) == (fixed, ["final-var"])
    directive = find_final(fixed)
    assert resolve_final(directive, {"result": 42}) == ("42", None)  # the engine reads the same answer


@pytest.mark.parametrize(
    ("target", "answer", "source", "bound"),
    [
        ("FINAL(result)", "result", "FINAL", set()),  # no such variable: the answer was the word itself
        ("FINAL(result)", "result", "final_turn", {"result"}),  # the final turn answers with the name
        ("FINAL(42)", "42", "FINAL", {"result"}),  # a literal is FINAL's right use
        ("FINAL(the answer is 42)", "the answer is 42", "FINAL", {"answer"}),
        (code("FINAL(result)"), "42", "answer", {"result"}),  # in code FINAL(x) passes x's value: right
        ("FINAL_VAR(result)", "42", "FINAL_VAR", {"result"}),  # already right
        ("FINAL(result)", "42", "answer", {"result"}),  # the run did not end on this FINAL
    ],
)
def test_final_that_is_not_a_misused_variable_is_left(target, answer, source, bound):
    assert fix(target, answer=answer, source=source, bound=bound) == (target, [])


def test_final_var_repair_can_be_turned_off():
    assert fix("FINAL(result)", answer="42", source="FINAL", bound={"result"}, enabled={"final-literal"}) == (
        "FINAL(result)",
        [],
    )


# -- final-literal: FINAL_VAR("text") meant FINAL("text") --------------------------------------


@pytest.mark.parametrize(
    ("target", "fixed", "answer"),
    [
        (code('FINAL_VAR("41 chars")'), code('FINAL("41 chars")'), "41 chars"),
        (code("x = 1\nFINAL_VAR('the end')"), code("x = 1\nFINAL('the end')"), "the end"),
        (code("FINAL_VAR(41)"), code("FINAL(41)"), "41"),
    ],
)
def test_final_var_of_a_literal_in_code_becomes_final(target, fixed, answer):
    assert fix(target, answer=answer, source="answer") == (fixed, ["final-literal"])


def test_final_var_of_a_literal_on_the_final_turn_becomes_final():
    # The engine could not read FINAL_VAR("41 chars") there, so the whole reply was the answer.
    reply = 'FINAL_VAR("41 chars")'
    fixed, made = fix(reply, answer=reply, source="final_turn")
    assert (fixed, made) == ('FINAL("41 chars")', ["final-literal"])
    assert resolve_final(find_final(fixed), {}) == ("41 chars", None)


@pytest.mark.parametrize(
    ("target", "answer", "source"),
    [
        (code('FINAL_VAR("result")'), "42", "answer"),  # a quoted name: the variable was meant
        (code('FINAL_VAR("41 chars")'), "something else", "answer"),  # not what the run answered
        ('FINAL_VAR("41 chars")', "41 chars", "answer"),  # in prose the engine refused it: the run went on
        ("FINAL_VAR('result')", "42", "FINAL_VAR"),  # a quoted name, resolved as a variable
        ("FINAL_VAR(result)", "42", "FINAL_VAR"),
        ("```text\nFINAL_VAR('41 chars')\n```", "41 chars", "answer"),  # not a runnable block
    ],
)
def test_final_var_that_names_a_variable_or_did_not_answer_is_left(target, answer, source):
    assert fix(target, answer=answer, source=source, bound={"result"}) == (target, [])


# -- prose-final: the final turn answered in prose -----------------------------------------------


def test_a_prose_answer_on_the_final_turn_gets_the_final_form():
    reply = "The context holds 41 characters.\n"
    fixed, made = fix(reply, answer=reply.strip(), source="final_turn")
    assert (fixed, made) == ("FINAL(The context holds 41 characters.)", ["prose-final"])
    assert resolve_final(find_final(fixed), {}) == ("The context holds 41 characters.", None)


def test_a_prose_answer_that_would_read_back_otherwise_is_quoted():
    reply = "'hello'"  # FINAL('hello') would answer hello, without the quotes the run answered with
    fixed, _ = fix(reply, answer=reply, source="final_turn")
    assert resolve_final(find_final(fixed), {})[0] == "'hello'"


@pytest.mark.parametrize(
    ("reply", "answer", "source", "protocol"),
    [
        ("41 characters", "41 characters", "final_turn", "answer"),  # plain text is what that turn asked
        ("41 characters", "41", "final_turn", "both"),  # not the recorded answer
        ("a) 41 and b) 42", "a) 41 and b) 42", "final_turn", "both"),  # no FINAL line reads it back
        ("FINAL(41)", "41", "final_turn", "both"),  # already has its FINAL
        (code("print(1)"), code("print(1)"), "final_turn", "both"),  # code, not prose
        ('answer["content"] = "41"', 'answer["content"] = "41"', "final_turn", "both"),  # an answer dict
        ("41 characters", "41 characters", "answer", "both"),  # not the final turn
    ],
)
def test_prose_that_is_not_a_missed_final_is_left(reply, answer, source, protocol):
    assert fix(reply, answer=answer, source=source, protocol=protocol) == (reply, [])


def test_nothing_is_repaired_without_an_answer():
    assert fix("FINAL(result)", answer=None, source=None, bound={"result"}) == ("FINAL(result)", [])


def test_bound_names_are_the_ones_code_binds():
    names = bound_names(
        [
            "a = 1\nb, (c, d) = 2, (3, 4)\nfor e in []: pass\nimport os.path\nfrom x import y as z",
            "def f(arg): local = 1\nclass K: pass\nif (w := 5): pass",
            "this is not python (",
        ]
    )
    assert {"a", "b", "c", "d", "e", "os", "z", "f", "K", "w"} <= names
    assert "arg" not in names and "print" not in names


# -- on a conversation: the target changes, the trajectory does not ---------------------------


def _events(final_reply: str, answer: str, source: str):
    yield RunStarted(run_id="r", question="q", context_meta={}, model="m", sub_model="m", prompt=[])
    yield RootRequest(run_id="r", turn=1, messages=1, chars=1, content="first")
    yield RootReply(run_id="r", turn=1, text=code("total = 6 * 7"), model="m")
    yield StepStarted(run_id="r", step=1, code="total = 6 * 7\n")
    yield RootRequest(run_id="r", turn=2, messages=3, chars=1, content="Step 1 ran.")
    yield RootReply(run_id="r", turn=2, text=final_reply, model="m")
    yield AnswerSet(run_id="r", content=answer, source=source)
    yield RunEnded(run_id="r", response=answer, error=None, iterations=2, elapsed_s=0.1)


def test_repair_rewrites_the_sample_target_only():
    (conv,) = conversations(_events("FINAL(total)", "42", "FINAL"))
    assert repair(conv) == ["final-var"]
    last = list(samples(conv))[-1]
    assert last["messages"][-1]["content"] == "FINAL_VAR(total)" and last["repaired"] == ["final-var"]
    assert conv.turns[-1].reply == "FINAL(total)"  # what the root wrote is kept
    (again,) = conversations(_events("FINAL(total)", "42", "FINAL"))
    assert repair(again, enabled=()) == [] and "repaired" not in list(samples(again))[-1]
