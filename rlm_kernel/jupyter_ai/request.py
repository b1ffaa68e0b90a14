"""A chat message as a question over notebook variables, and the ``%%rlm`` cell that asks it.

Jupyter AI 3.2 has no syntax of its own for a notebook variable: ``@name`` in a message is a
mention only where ``name`` is a chat user. So the persona reads every other ``@name`` (a Python
identifier) as a variable of the notebook's kernel: ``@RLM which suppliers missed a deadline?
@report``. Several variables become one dict context, keyed by their names.
"""

from __future__ import annotations

import difflib
import keyword
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from .transcript import name as shown

__all__ = ["CONTEXT_NAME", "SETTINGS", "ChatRequest", "cell", "missing_line", "parse", "setup_code"]

# The RLMConfig settings the persona offers in Jupyter AI's persona controls, each with the values
# it offers (a value's label); unset, a setting is the notebook's (``%config RLMMagics``, ``RLM_*``).
# Settings that would wait for a human in a cell (``mode``) or change the session's REPL are not here.
SETTINGS: dict[str, dict[str, str]] = {
    "max_iterations": {n: f"{n} root turns" for n in ("5", "10", "20", "40")},
    "max_timeout": {"60": "1 minute", "300": "5 minutes", "900": "15 minutes", "3600": "1 hour"},
    "max_concurrency": {n: f"{n} sub-calls at once" for n in ("4", "16", "64")},
}
# Where a dict of several variables is bound for the run (the run binds it as `context`).
CONTEXT_NAME = "_rlm_chat_context"
_AT_NAME = re.compile(r"(?<![\w@])@([A-Za-z_][A-Za-z0-9_]*)\b")
_TAIL = re.compile(r"(?:\s*(?<![\w@])@[A-Za-z_][A-Za-z0-9_]*\b)+\s*$")


@dataclass(frozen=True)
class ChatRequest:
    """What a message asks: the question, with the variables it names (in order, once each)."""

    question: str
    variables: tuple[str, ...]


def parse(body: str, users: Collection[str]) -> ChatRequest:
    """The question and variables of a message; ``users`` are the chat's mention names (the
    persona's own among them), which stay mentions and leave the question. Names at the end of
    the message leave the question too; one inside a sentence stays there as a word."""
    variables: list[str] = []

    def take(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in users:
            return ""
        if not keyword.iskeyword(name) and name not in variables:
            variables.append(name)
        return name

    tail = _TAIL.search(body)
    head, end = (body[: tail.start()], body[tail.start() :]) if tail else (body, "")
    question = _AT_NAME.sub(take, head)
    _AT_NAME.sub(take, end)
    return ChatRequest(" ".join(question.split()), tuple(variables))


def missing_line(missing: Iterable[str], names: Iterable[str]) -> str:
    """The one-line answer when a variable is not in the kernel: each with its closest names."""
    known = [n for n in names if not n.startswith("_")]
    parts = []
    for name in missing:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = f" (did you mean {', '.join('@' + shown(c).strip('`') for c in close)}?)" if close else ""
        parts.append(f"{shown(name)}{hint}")
    return f"No variable {' or '.join(parts)} in the notebook's kernel: define it, or check the name."


def setup_code(variables: tuple[str, ...]) -> str | None:
    """The code that binds several variables as one dict, before the cell; None for one."""
    if len(variables) < 2:
        return None
    items = ", ".join(f"{name!r}: {name}" for name in variables)
    return f"{CONTEXT_NAME} = {{{items}}}"


def cell(
    request: ChatRequest, *, session: str, out: str = "_rlm_chat", options: Mapping[str, str] | None = None
) -> str:
    """The ``%%rlm`` cell a notebook would run for this request: the same magic, the same settings;
    ``options`` (the persona's settings, checked against :data:`SETTINGS`) over the notebook's."""
    context = request.variables[0] if len(request.variables) == 1 else CONTEXT_NAME
    # Braces are the magic's placeholders; a chat question's braces are text.
    question = request.question.replace("{", "{{").replace("}", "}}")
    chosen = "".join(
        f" --{key.replace('_', '-')} {value}"
        for key, value in (options or {}).items()
        if value in SETTINGS.get(key, {})  # only a value the persona offers reaches the line
    )
    return f"%%rlm -c {context} --out {out} --session {session}{chosen}\n{question}"
