"""Several roots that vote: how answers are compared and counted (pure, no runs)."""

from __future__ import annotations

import pytest

from rlm_kernel.config import RLMConfig
from rlm_kernel.votes import answer_key, sampling_of, tally


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Paris", " paris. "),
        ('"Paris"', "'PARIS'."),
        ("`Paris`", "“Paris”"),
        ("42", "42.0"),
        ("1,234", "1234"),
        ("3.50", "3.5"),
        ("New  York", "new york!"),
    ],
)
def test_answers_that_count_as_one(a, b):
    assert answer_key(a) == answer_key(b)


@pytest.mark.parametrize(("a", "b"), [("Paris", "Lyon"), ("42", "43"), ("0.5", "5"), ("S08", "S8")])
def test_answers_that_differ(a, b):
    assert answer_key(a) != answer_key(b)


def test_typed_answers_compare_as_json():
    assert answer_key('{"b": 1.0, "a": ["x"]}', typed=True) == answer_key('{"a":["x"],"b":1}', typed=True)
    assert answer_key('["x", "y"]', typed=True) != answer_key('["y", "x"]', typed=True)


def test_no_answer_votes_for_none():
    assert answer_key(None) is None and answer_key("  ") is None


@pytest.mark.parametrize(
    ("answers", "winner", "clear", "top"),
    [
        (["a", "A", "a."], 0, True, 3),
        (["a", "b", "b"], 1, True, 2),  # the greedy root outvoted
        (["a", "b", "c"], 0, False, 1),  # a tie: the greedy root's
        (["a", None, "b"], 0, False, 1),
        (["x", "b", "b", "c", "d"], 1, False, 2),  # a plurality, not a majority
        (["a", "a", None], 0, True, 2),
    ],
)
def test_the_count(answers, winner, clear, top):
    vote = tally(answers)
    assert (vote.winner, vote.clear, vote.top.count) == (winner, clear, top)


def test_no_root_answered():
    vote = tally([None, None, None])
    assert vote.top is None and not vote.clear and "None of the 3 roots" in vote.text()


def test_the_warning_gives_the_candidates_and_their_counts():
    text = tally(["Paris", "Lyon", "lyon.", None, "Nice"]).text()
    assert "'Lyon' ×2" in text and "'Paris' ×1" in text and "'Nice' ×1" in text
    assert "no answer ×1" in text and "(2 of 5)" in text


def test_the_first_root_is_greedy_and_the_others_sampled_each_with_its_seed():
    assert sampling_of(0) is None
    assert sampling_of(1) == {"temperature": 0.8, "seed": 1} and sampling_of(2)["seed"] == 2


def test_votes_are_off_unless_asked():
    assert RLMConfig(backend="local").vote_count == 1
    assert RLMConfig(backend="openai").vote_count == 1
    assert RLMConfig(backend="openai", votes=5).vote_count == 5
    assert RLMConfig(backend="local", votes=3).vote_count == 3


def test_short_answers_that_give_one_number_agree_however_worded() -> None:
    assert (
        answer_key("2168.03 dollars") == answer_key("amount 2168.03") == answer_key("$2168.03") == "2168.03"
    )
    assert answer_key("Room 12, floor 3") != answer_key("Room 12")  # two numbers: compared as text
    assert answer_key("S08") == "s08"  # a code is no number
