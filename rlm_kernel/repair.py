"""Repairs of the template mistakes the RLM paper fixed before fine-tuning RLM-Qwen3-8B.

The paper found that telling a final answer from a thought by ``FINAL(...)`` text is brittle: in
its distilled trajectories 16% of turns misused ``FINAL`` and 13% ``FINAL_VAR``. It rewrote those
turns before training, so the model learns the right form. Here each repair rewrites the target of
a sample (the root's reply at the turn that ended the run), never the recorded trajectory, and only
where the trajectory shows what the run actually did, so the repaired target means what happened:

- ``final-var``: ``FINAL(name)`` outside code where ``name`` is a variable the run's code bound, and
  the engine answered with that variable's value (``protocol.resolve_final`` reads it so) rather
  than with the name: becomes ``FINAL_VAR(name)``.
- ``final-literal``: ``FINAL_VAR("literal text")`` (a literal where a variable name belongs), in code
  (where ``FINAL_VAR`` of a non-name answers with the literal) or on the final turn, when the run's
  answer is that literal or, on the final turn, the whole reply (the engine could not read the
  directive): becomes ``FINAL("literal text")``.
- ``prose-final``: the final turn (after ``max_iterations``) answered in prose, with no ``FINAL`` and
  no code, and the run's answer is that text: the reply becomes ``FINAL(text)``, the form the turn
  asked for. Under the ``answer`` protocol the final turn asks for plain text, so prose is right
  there and is left alone.

Every rewrite is checked by reading it back the way the engine would (``find_final`` and
``resolve_final``): a repair whose target would not give the recorded answer is not made.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

# The engine's own patterns, so a repair sees code and FINAL lines exactly where the engine does.
from .protocol import _FENCE, _FINAL, _FINAL_VAR, _IDENT, code_blocks, find_final, resolve_final

if TYPE_CHECKING:
    from .export import Conversation

__all__ = ["REPAIRS", "bound_names", "repair_target", "repair"]

REPAIRS = ("final-var", "final-literal", "prose-final")

_OPEN_START = re.compile(r"^[ \t]*```[ \t]*(repl|python|py|python3)[ \t]*\n", re.M | re.I)
_LITERAL = r"""("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|-?\d+(?:\.\d+)?)"""
_CODE_FINAL_VAR = re.compile(r"\bFINAL_VAR(\s*\(\s*)" + _LITERAL + r"(\s*\))")
_ANSWER_DICT = re.compile(r"""\banswer\[\s*["'](content|ready)["']\s*\]""")


def bound_names(code: Iterable[str]) -> set[str]:
    """Names the code binds at the REPL's top level (assignments, loops, imports, definitions)."""
    names: set[str] = set()
    for source in code:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue  # a step that did not run binds nothing
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Where the runnable code blocks are: each closed fence, and a last one left open to the end."""
    spans = [m.span() for m in _FENCE.finditer(text)]
    start = 0
    for begin, end in [*spans, (len(text), len(text))]:
        if m := _OPEN_START.search(text, start, begin):
            spans.append((m.start(), len(text)))
            break
        start = end
    return sorted(spans)


def _in(spans: list[tuple[int, int]], pos: int) -> bool:
    return any(a <= pos < b for a, b in spans)


def _respell_outside_code(target: str, pattern: re.Pattern[str], old: str, new: str) -> str | None:
    """``target`` with ``old`` spelled ``new`` in the first ``pattern`` match outside code, if any."""
    spans = _code_spans(target)
    for m in pattern.finditer(target):
        if not _in(spans, m.start()):
            at = m.start() + m.group(0).index(old)
            return target[:at] + new + target[at + len(old) :]
    return None


def _literal_text(argument: str) -> str:
    """What ``FINAL(argument)`` answers with: a Python literal's value, else the text itself."""
    try:
        return str(ast.literal_eval(argument))
    except (ValueError, SyntaxError):
        return argument


def _reads_back(target: str, answer: str, namespace: dict[str, str] | None = None) -> bool:
    """Whether the engine, reading ``target``'s FINAL line, answers with ``answer``."""
    directive = find_final(target)
    return directive is not None and resolve_final(directive, namespace or {})[0] == answer


def _final_var(target: str, answer: str, source: str, bound: set[str]) -> str | None:
    directive = find_final(target)
    if source != "FINAL" or directive is None or directive.kind != "FINAL":
        return None
    name = directive.argument
    if not _IDENT.match(name) or name not in bound or answer == name:
        return None  # not a name the code made, or the run answered with the name itself
    fixed = _respell_outside_code(target, _FINAL, "FINAL(", "FINAL_VAR(")
    return fixed if fixed is not None and _reads_back(fixed, answer, {name: answer}) else None


def _final_literal_in_prose(target: str, reply: str, answer: str, source: str) -> str | None:
    directive = find_final(target)
    if directive is None or directive.kind != "FINAL_VAR":
        return None
    value = _literal_text(directive.argument)
    if _IDENT.match(value.strip("'\" ")):
        return None  # a variable's name (quoted or not): FINAL_VAR is the right form
    if source != "final_turn" or answer not in (value, reply.strip()):
        return None  # elsewhere the engine refused it and the run went on
    fixed = _respell_outside_code(target, _FINAL_VAR, "FINAL_VAR(", "FINAL(")
    return fixed if fixed is not None and _reads_back(fixed, value) else None


def _final_literal_in_code(target: str, answer: str, source: str) -> str | None:
    if source != "answer":
        return None
    spans = _code_spans(target)
    for m in _CODE_FINAL_VAR.finditer(target):
        value = _literal_text(m.group(2))
        if _in(spans, m.start()) and not _IDENT.match(value) and value == answer:
            return target[: m.start()] + "FINAL" + target[m.start() + len("FINAL_VAR") :]
    return None


def _prose_final(target: str, reply: str, answer: str, source: str, protocol: str) -> str | None:
    if source != "final_turn" or protocol == "answer" or target != reply:
        return None
    text = reply.strip()
    if answer != text or not text or code_blocks(reply) or find_final(reply) or _ANSWER_DICT.search(text):
        return None
    for fixed in (f"FINAL({text})", f"FINAL({text!r})"):
        if _reads_back(fixed, answer):
            return fixed
    return None  # no FINAL line the engine would read back as this text


def repair_target(
    target: str,
    *,
    reply: str,
    answer: str | None,
    source: str | None,
    protocol: str = "both",
    bound: Collection[str] = (),
    enabled: Collection[str] = REPAIRS,
) -> tuple[str, list[str]]:
    """The target of the turn that ended a run, repaired; and the kinds of repair made.

    ``reply`` is what the root wrote (``target`` may hold a human's edits of its code), ``answer``
    and ``source`` the run's ``answer_set``, ``bound`` the names its code bound."""
    if answer is None or source is None:
        return target, []
    made: list[str] = []
    if "final-var" in enabled and (fixed := _final_var(target, answer, source, set(bound))):
        target = fixed
        made.append("final-var")
    if "final-literal" in enabled:
        fixed = _final_literal_in_prose(target, reply, answer, source) or _final_literal_in_code(
            target, answer, source
        )
        if fixed:
            target = fixed
            made.append("final-literal")
    if "prose-final" in enabled and (fixed := _prose_final(target, reply, answer, source, protocol)):
        target = fixed
        made.append("prose-final")
    return target, made


def repair(conversation: Conversation, enabled: Collection[str] = REPAIRS) -> list[str]:
    """Repair the target of ``conversation``'s answering turn in place; the kinds of repair made."""
    if not conversation.turns or conversation.answer_source is None:
        return []
    turn = conversation.turns[-1]
    target, made = repair_target(
        turn.target,
        reply=turn.reply,
        answer=conversation.answer,
        source=conversation.answer_source,
        protocol=conversation.protocol,
        bound=bound_names(conversation.code),
        enabled=enabled,
    )
    turn.target = target
    turn.repairs.extend(made)
    return made
