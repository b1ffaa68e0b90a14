"""The scorers of rlm_kernel.eval, as tables of answers and the scores they must get."""

from __future__ import annotations

import pytest

from rlm_kernel.errors import ConfigError
from rlm_kernel.eval.scoring import f1, parse_number, parse_pairs, resolve, score


@pytest.mark.parametrize(
    ("scorer", "answer", "expected", "want"),
    [
        ("contains", "The code is 4821.", "4821", 1.0),
        ("contains", "the lead is  Ilse   VARGA", "Ilse Varga", 1.0),
        ("contains", "The code is 4812.", "4821", 0.0),
        ("contains", None, "4821", 0.0),
        ("exact", "71", 71, 1.0),
        ("exact", "There are 71 cancelled orders.", 71, 1.0),
        ("exact", "Out of 200 orders, 71.", 71, 1.0),  # the last number counts
        ("exact", "1,234.50", 1234.5, 1.0),
        ("exact", "70", 71, 0.0),
        ("exact", "no idea", 71, 0.0),
        ("exact", "  'Ada Park'. ", "ada park", 1.0),
        ("exact", "```\nAda Park\n```", "Ada Park", 1.0),
        ("exact", "Ada Parks", "Ada Park", 0.0),
        ("numeric", "42", 42, 1.0),
        ("numeric", "40", 42, 0.5625),
        ("numeric", "about 45 of them", 42, 0.421875),
        ("numeric", "none", 42, 0.0),
        ("oolong", "41", 42, 0.75),
        ("oolong", "The most common label is entity.", "entity", 1.0),
        ("oolong", "entity or location", "entity", 0.0),  # two candidates named: no single answer
        ("oolong", "human being", "entity", 0.0),
        ("oolong", "description and abstract concept", "description and abstract concept", 1.0),
        ("oolong", "It is more common than the other.", "more common than", 1.0),
        ("oolong", "Less common than label 'entity'.", "less common than", 1.0),
        ("oolong", "same frequency as", "more common than", 0.0),
        ("f1_pairs", "(1, 2)\n(1, 3)", [[1, 2], [1, 3]], 1.0),
        ("f1_pairs", "(2, 1)\n(3,1)\n(1, 2)", [[1, 2], [1, 3]], 1.0),  # order and repeats do not matter
        ("f1_pairs", "(1, 2)\n(2, 4)", [[1, 2], [1, 3]], 0.5),  # P = 1/2, R = 1/2
        ("f1_pairs", "(1, 2)", [[1, 2], [1, 3], [2, 3], [3, 4]], 0.4),  # P = 1, R = 1/4: 2PR/(P+R) = 0.4
        ("f1_pairs", "No pairs.", [], 1.0),  # empty gold, empty answer
        ("f1_pairs", "(5, 6)", [], 0.0),
        ("f1_pairs", "No pairs.", [[1, 2]], 0.0),
        ("verbatim", "a,b\n1,2", "a,b\n1,2", 1.0),
        ("verbatim", "```csv\na,b\n1,2\n```", "a,b\n1,2", 1.0),
        ("verbatim", "a,b\n1,2\n", "a,b\n1,2", 1.0),
        ("verbatim", "a,b\n1,3", "a,b\n1,2", 0.0),
        ("verbatim", "Here it is:\na,b\n1,2", "a,b\n1,2", 0.0),
    ],
)
def test_scores(scorer: str, answer: str | None, expected: object, want: float) -> None:
    assert score(scorer, answer, expected) == pytest.approx(want)


def test_parsers() -> None:
    assert parse_number("between 3 and -4.5") == -4.5
    assert parse_number("12,345 rows") == 12345
    assert parse_number("none") is None
    assert parse_number("6.77706027e+08") == 677706027  # as Prometheus and numpy write it
    assert parse_number("1.5E-3 s") == 0.0015
    assert score("exact", "6.77706027e+08", 677706027) == 1.0
    assert parse_pairs("(10, 2) (3;4) 5, 6 (7, 7)") == {(2, 10), (3, 4), (5, 6)}
    assert f1(set(), set()) == 1.0 and f1({(1, 2)}, set()) == 0.0


def in_range(answer: str, expected: object) -> float:
    return 0.5


def out_of_range(answer: str, expected: object) -> float:
    return 2.0


def test_own_scorers_by_path() -> None:
    assert score(f"{__name__}:in_range", "x", 1) == 0.5
    assert score(f"{__name__}.in_range", "x", 1) == 0.5
    with pytest.raises(ConfigError, match="scores must be from 0 to 1"):
        score(f"{__name__}:out_of_range", "x", 1)
    with pytest.raises(ConfigError, match="Cannot load the scorer"):
        resolve("no_such_module:fn")
    with pytest.raises(ConfigError, match="Unknown scorer 'fuzzy'"):
        resolve("fuzzy")
