"""The words of ``%rlm`` lines and ``%%rlm`` cells, and the input transformer, as tables: no shell."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from rlm_kernel.jupyter.arguments import parse_cell, parse_line, split_line, subcommand
from rlm_kernel.jupyter.transform import await_rlm_magics


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("config", ("config", "")),
        ("  hint look at chapter 3 ", ("hint", "look at chapter 3")),
        ("end notes", ("end", "notes")),
        ("stop", ("stop", "")),
        ("doc what is in it?", None),
        ("", None),
        ("-c config q", None),
    ],
)
def test_a_subcommand_is_its_first_word(line: str, expected: tuple[str, str] | None) -> None:
    assert subcommand(line) == expected


@pytest.mark.parametrize(
    ("line", "options", "rest"),
    [
        ("doc what's 'this'?", [], "doc what's 'this'?"),
        ("-c doc --max-iterations 3 why?", ["-c", "doc", "--max-iterations", "3"], "why?"),
        ("--max-iterations=3 --no-widget doc q", ["--max-iterations=3", "--no-widget"], "doc q"),
    ],
)
def test_only_the_leading_options_of_a_line_are_split(line: str, options: list[str], rest: str) -> None:
    assert split_line(line) == (options, rest)


def test_a_line_names_its_variable_before_the_question() -> None:
    opts, question = parse_line("--mode auto doc how many {n}?")
    assert (opts.context, opts.mode, question) == ("doc", "auto", "how many {n}?")
    with pytest.raises(UsageError, match="needs a variable and a question"):
        parse_line("--mode auto")


def test_a_cell_takes_its_variable_as_a_bare_word_or_by_c() -> None:
    assert parse_cell("doc", "q\n")[0].context == "doc"
    assert parse_cell("-c doc --out r", "q\n")[0].out == "r"
    assert parse_cell("doc -c doc", "q")[1] == "q"
    with pytest.raises(UsageError, match="two contexts, doc and -c other"):
        parse_cell("doc -c other", "q")


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["%%rlm -c doc\n", "why?\n"], ["await __rlm_magics__.arun('-c doc', 'why?\\n')\n"]),
        (["%%rlmx\n"], ["%%rlmx\n"]),
        (["x = 1\n", "%rlm doc why?\n"], ["x = 1\n", "await __rlm_magics__.arun('doc why?')\n"]),
        (["r = %rlm doc why?\n"], ["r = await __rlm_magics__.arun_result('doc why?')\n"]),
        (["  %rlm doc indented\n"], ["  %rlm doc indented\n"]),
        ([], []),
    ],
)
def test_the_transformer_awaits_each_rlm_magic(lines: list[str], expected: list[str]) -> None:
    assert await_rlm_magics(lines) == expected
