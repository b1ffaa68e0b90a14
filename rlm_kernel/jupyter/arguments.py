"""The words of a ``%rlm`` line and a ``%%rlm`` cell: its options, the context's variable and the
question, read before anything runs.

A ``%rlm`` line's options come first and the question after them as written (it may hold quotes,
so only the options are split); a ``%%rlm`` line is options and at most one bare word, the
variable, and the question is the cell's body. ``{name}`` in a question is the notebook's variable.
"""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
from collections.abc import Mapping
from typing import Any, NoReturn

from IPython.core.error import UsageError

from ..config import add_arguments
from ..risk import LADDER

__all__ = [
    "SUBCOMMANDS",
    "MagicParser",
    "fill_placeholders",
    "magic_parser",
    "parse_cell",
    "parse_line",
    "split_line",
    "subcommand",
]

SUBCOMMANDS = ("config", "hint", "stop", "end")


class MagicParser(argparse.ArgumentParser):
    """argparse for the magics: an error is one line for the user, not a usage dump and SystemExit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"%rlm: {message}{self._did_you_mean(message)} (%rlm? lists the options)")

    def _did_you_mean(self, message: str) -> str:
        """For an option argparse does not know, the known one closest to it: "; did you mean --x?"."""
        if not message.startswith("unrecognized arguments: "):
            return ""
        known = list(self._option_string_actions)
        guesses = []
        for word in message.removeprefix("unrecognized arguments: ").split():
            if word.startswith("-"):
                guesses += difflib.get_close_matches(word.partition("=")[0], known, n=1, cutoff=0.6)
        return f"; did you mean {' or '.join(dict.fromkeys(guesses))}?" if guesses else ""


def magic_parser() -> MagicParser:
    """The options of ``%rlm`` and ``%%rlm``: the magics' own, then RLMConfig's run settings."""
    p = MagicParser(prog="%rlm", add_help=False)
    p.add_argument("-c", "--context", help="the variable that holds the context")
    p.add_argument("-o", "--out", default="_rlm", help="where the RLMResult goes")
    p.add_argument("--mode", choices=list(LADDER))
    p.add_argument("--answer", choices=["markdown", "text"], help="how the answer is shown")
    p.add_argument("--no-widget", action="store_true")
    p.add_argument(
        "--session",
        metavar="NAME",
        help="ask in the session NAME: one REPL and one conversation with its earlier questions "
        "(%%rlm end NAME ends it)",
    )
    # RLMConfig's run settings and the executors', one flag each
    add_arguments(p, functions="NAME,...", executor_settings=True)
    p.add_argument(
        "--continue-from",
        metavar="RUN:STEP",
        help="rewind: continue a recorded run from one of its root steps; RUN is the variable holding "
        "its result, its run id, or its trajectory file",
    )
    return p


# The options that take the next word as their value (`-c doc`), not those that stand alone.
TAKES_VALUE = {
    a
    for action in magic_parser()._actions
    if action.nargs is None and action.const is None
    for a in action.option_strings
}


def split_line(line: str) -> tuple[list[str], str]:
    """Leading options of a ``%rlm`` line, and the rest as written (a question may hold quotes)."""
    options: list[str] = []
    rest = line.strip()
    while rest.startswith("-"):
        token, _, rest = rest.partition(" ")
        rest = rest.lstrip()
        options.append(token)
        if token in TAKES_VALUE and "=" not in token:
            value, _, rest = rest.partition(" ")
            options.append(value)
            rest = rest.lstrip()
    return options, rest


def subcommand(line: str) -> tuple[str, str] | None:
    """``%rlm config``, ``%rlm hint TEXT``, ``%rlm stop``, ``%rlm end NAME``: the command and the
    rest of the line; None for a question."""
    words = line.strip().split(maxsplit=1)
    if not words or words[0] not in SUBCOMMANDS:
        return None
    return words[0], words[1] if len(words) > 1 else ""


def parse_line(line: str) -> tuple[argparse.Namespace, str]:
    """``%rlm [options] VAR question``: the options, with the context's variable, and the question."""
    options, rest = split_line(line)
    opts = magic_parser().parse_args(options)
    name, _, question = rest.partition(" ")
    if not name:
        raise UsageError("%rlm needs a variable and a question: %rlm VAR question")
    opts.context = opts.context or name
    return opts, question


def parse_cell(line: str, cell: str) -> tuple[argparse.Namespace, str]:
    """``%%rlm [options] [VAR]`` over a cell: the options, with the context's variable, and the
    cell as the question."""
    parser = magic_parser()
    # `%%rlm VAR`, as `%rlm VAR question`: a bare word names the context's variable.
    parser.add_argument("variable", nargs="?", help=argparse.SUPPRESS)
    opts = parser.parse_args(shlex.split(line))
    if opts.variable is not None:
        if opts.context is not None and opts.context != opts.variable:
            raise UsageError(f"%%rlm got two contexts, {opts.variable} and -c {opts.context}: give one.")
        opts.context = opts.variable
    return opts, cell


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fill_placeholders(question: str, namespace: Mapping[str, Any]) -> str:
    """``{name}`` in a question becomes the variable's value; ``{{`` and ``}}`` are braces. Other
    braces (``{"a": 1}``, ``{x + 1}``) stay as they are."""

    def value(m: re.Match[str]) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0]
        name = m.group(1)
        if name not in namespace:
            raise UsageError(
                f"No variable named {name!r} for {{{name}}} in the question: define it, "
                f"or write {{{{{name}}}}} for the braces themselves."
            )
        return str(namespace[name])

    return _PLACEHOLDER.sub(value, question)
