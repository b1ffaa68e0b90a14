"""Error text, tool banners and the counts tools print about themselves support no answer; the
data they quote still does."""

from __future__ import annotations

import pytest

from rlm_kernel.grounding import unsupported

REPORT = (
    "search('status of the ferry'): 535 passages match; the best 2:\n"
    "[1] context, line 9: the ferry to Linz runs on port 70\n"
    "[2] context, line 40: ferry status: delayed"
)
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "<rlm-step-3>", line 12, in <module>\n'
    "    rows[12]\n"
    "IndexError: index 12 is out of bounds for axis 0 with size 3"
)
FROM_SEARCH = "a number read from search matches, not computed"
FROM_NOISE = "it is read from an error message or a tool's report, not from the data"
IS_NOISE = "it is an error message or a tool's report, not an answer"


@pytest.mark.parametrize(
    ("question", "answer", "outputs", "written", "reason"),
    [
        # a search report's count, for a question that is not a count
        ("What is the ferry's status code?", "535", [REPORT], True, FROM_SEARCH),
        ("How much did the ferry earn?", "535", [REPORT], True, FROM_SEARCH),
        # a number off a traceback the code printed (traceback.print_exc())
        ("Which row holds the largest value?", "12", [TRACEBACK], True, FROM_NOISE),
        # the REPL's own note on a cut output
        ("What is the total?", "1,234", ["12\n... [1,234 characters cut] ...\n9"], True, FROM_NOISE),
        # an error message as the answer: printed by the code, or computed by it
        (
            "Which region sold most?",
            "'Rows' object has no attribute 'first'",
            ["'Rows' object has no attribute 'first'\n"],
            True,
            IS_NOISE,
        ),
        (
            "Which region sold most?",
            "AttributeError: 'Rows' object has no attribute 'first'",
            ["AttributeError: 'Rows' object has no attribute 'first'"],
            False,
            IS_NOISE,
        ),
        ("Which region sold most?", "[llm_query error] the call timed out", ["North 12"], False, IS_NOISE),
        ("Which region sold most?", "KeyError: 'region'", ["North 12"], False, IS_NOISE),
        (
            "Who runs the ferry?",
            "No match for 'ferry', 'runs'. Try other words from the question.",
            ["No match for 'ferry', 'runs'. Try other words from the question."],
            True,
            IS_NOISE,
        ),
        ("Who runs the ferry?", "search('ferry'): 535 passages match", [REPORT], True, IS_NOISE),
        # the REPL's hint on a filter that matched nothing, copied without its "Hint: "
        (
            "Add up the restarts of the otel-collector pods.",
            "No row of df['NAME'] is 'otel-collector'; 167 values, such as 'web-1', 'web-2'.",
            ["\nHint: No row of df['NAME'] is 'otel-collector'; 167 values, such as 'web-1', 'web-2'.\n"],
            True,
            IS_NOISE,
        ),
        (
            "Which region sold most?",
            "index 12 is out of bounds for axis 0 with size 3",
            [TRACEBACK],
            False,
            IS_NOISE,
        ),
    ],
)
def test_answers_supported_only_by_errors_or_banners_are_flagged(question, answer, outputs, written, reason):
    assert unsupported(question, answer, outputs, written=written) == reason


@pytest.mark.parametrize(
    ("question", "answer", "outputs"),
    [
        ("What port does the ferry to Linz use?", "70", [REPORT]),  # a hit quotes the data
        ("What is the ferry's status?", "delayed", [REPORT]),
        ("Which machine ran out of disk?", "node7", ["2024-03-01 12:00 ERROR disk full on node7"]),
        ("What does parse() raise on bad input?", "ValueError", ["    raise ValueError('bad input')"]),
        ("What does parse() raise on bad input?", "ValueError", ["Raises:\n    ValueError: if bad"]),
        ("How many rows are there?", "3", [TRACEBACK, "rows: 3"]),  # printed again after the error
        ("Which region sold most?", "North", ["KeyError: 'North'\nNorth 12\nSouth 3"]),
        # a sentence the data holds as well as an error
        (
            "What did the log say?",
            "disk full on node seven",
            ["Error: disk full on node seven\ndisk full on node seven"],
        ),
    ],
)
def test_what_the_data_says_still_supports_an_answer(question, answer, outputs):
    assert unsupported(question, answer, outputs) is None
