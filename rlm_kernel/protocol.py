"""Reading the root LM's replies: code blocks and the paper's ``FINAL`` / ``FINAL_VAR`` text.

Code runs from ```` ```repl ```` and ```` ```python ```` fences, every block in order. A last
fence left open (a reply cut by a stop sequence or by its token limit) runs to the reply's end.
A ``FINAL(...)`` or ``FINAL_VAR(...)`` line outside the code blocks ends the run
(when the protocol allows it), after the reply's code has run without error.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "code_blocks",
    "whole_code_blocks",
    "FinalDirective",
    "find_final",
    "unclosed_final",
    "resolve_final",
    "strip_code",
]

_FENCE = re.compile(r"^[ \t]*```[ \t]*(repl|python|py|python3)[ \t]*\n(.*?)^[ \t]*```", re.S | re.M | re.I)
_OPEN = re.compile(r"^[ \t]*```[ \t]*(repl|python|py|python3)[ \t]*\n(.*)\Z", re.S | re.M | re.I)
_FINAL_VAR = re.compile(r"^[ \t>*]*FINAL_VAR\((.*?)\)", re.M | re.S)
_FINAL = re.compile(r"^[ \t>*]*FINAL\((.*)\)", re.M | re.S)
_FINAL_OPEN = re.compile(r"^[ \t>*]*(FINAL(?:_VAR)?)\(", re.M)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FENCE_LINE = re.compile(r"^[ \t]*```(.*)$", re.M)


def code_blocks(text: str) -> list[str]:
    """The code of each runnable fenced block, in order, with a last one left open."""
    blocks = [m.group(2) for m in _FENCE.finditer(text)]
    if m := _OPEN.search(_FENCE.sub("", text)):
        blocks.append(m.group(2))
    return [b.rstrip() + "\n" for b in blocks if b.strip()]


def strip_code(text: str) -> str:
    """The reply without its runnable code blocks (so FINAL inside code is not read as text)."""
    return _OPEN.sub("", _FENCE.sub("", text))


def _ends_open(text: str) -> bool:
    """Whether ``text`` ends inside a fenced block, as Markdown reads it: a fence line opens a block,
    and a bare one closes it. (A runnable block the engine reads as open is open here too.)"""
    inside = False
    for m in _FENCE_LINE.finditer(text):
        inside = not inside or bool(m.group(1).strip())
    return inside


def whole_code_blocks(reply: str) -> str:
    """The reply with a block left open at its end closed by a fence (a stop sequence on the fence
    drops it), as a reader expects it; its blocks' code is the code the engine runs, unchanged."""
    if not _ends_open(reply):
        return reply
    whole = reply.rstrip() + "\n```"
    # Where fences are glued together on one line (six backticks), a closing fence can make the
    # engine read the blocks otherwise: then the reply stays as it ran.
    return whole if code_blocks(whole) == code_blocks(reply) else reply


@dataclass(frozen=True)
class FinalDirective:
    kind: Literal["FINAL", "FINAL_VAR"]
    argument: str


def find_final(text: str) -> FinalDirective | None:
    """The first FINAL_VAR(...) or FINAL(...) at the start of a line, outside code blocks."""
    prose = strip_code(text)
    if m := _FINAL_VAR.search(prose):
        return FinalDirective("FINAL_VAR", m.group(1).strip())
    if m := _FINAL.search(prose):
        return FinalDirective("FINAL", _balanced(m.group(1)).strip())
    return None


def unclosed_final(text: str) -> str | None:
    """``FINAL`` or ``FINAL_VAR`` when the reply opens one outside code and never closes it."""
    prose = strip_code(text)
    if (m := _FINAL_OPEN.search(prose)) and find_final(text) is None:
        return m.group(1)
    return None


def _balanced(argument: str) -> str:
    """Cut a greedy ``FINAL(...)`` match back to its own closing parenthesis."""
    depth = 1
    for i, ch in enumerate(argument + ")"):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return argument[:i]
    return argument


def resolve_final(directive: FinalDirective, namespace: dict[str, Any]) -> tuple[str | None, str | None]:
    """Turn a directive into answer text, or explain to the root why it could not.

    Handles the misuses the RLM paper reports: ``FINAL(variable_name)`` gives the
    variable's value, and ``FINAL_VAR("name")`` with quotes works like ``FINAL_VAR(name)``.
    """
    arg = directive.argument
    if directive.kind == "FINAL_VAR":
        name = arg.strip("'\" ")
        if not _IDENT.match(name):
            return None, f"FINAL_VAR needs a variable name, got {arg!r}."
        if name not in namespace:
            return None, f"FINAL_VAR({name}): there is no variable named {name!r} in the REPL."
        return str(namespace[name]), None
    if _IDENT.match(arg) and arg in namespace:
        return str(namespace[arg]), None
    try:
        value = ast.literal_eval(arg)
    except (ValueError, SyntaxError):
        return arg, None
    return str(value), None
