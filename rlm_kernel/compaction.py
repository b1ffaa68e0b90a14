"""Root-history compaction: when the root's conversation nears its model's window, its older turns
are summarised and the summary takes their place.

The REPL is not touched: every variable the summarised turns made is still there, and the root is
told their names. The fixed start of the conversation (the system prompt, the worked example, the
first request) stays, so a provider's prefix cache still holds; the summary is added to the first
request, and the latest reply and what it printed stay as they were.

The engine decides when (:func:`tokens_of`, with the provider's own count of the last request) and
the driver makes the call (a sub-call of the run on the root's model, recorded and charged like
``llm_query``'s). A summary that fails or comes back empty is a ``compaction_failed`` warning, and the
code of the summarised turns stands in for it.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from .lm.base import Message
from .lm.tokens import CHARS_PER_TOKEN, estimate_tokens
from .protocol import code_blocks
from .repl import RESERVED, truncate

__all__ = ["CHARS_PER_TOKEN", "SUMMARY_TOKENS", "tokens_of", "request", "names_made", "note", "fallback"]

SUMMARY_TOKENS = 400  # the longest summary


def tokens_of(messages: Sequence[Message], counted: tuple[int, int] = (0, 0)) -> int:
    """The tokens ``messages`` hold: ``counted`` is (tokens, messages) the provider counted for a prefix
    of them; the rest is estimated from its characters."""
    tokens, upto = counted
    rest = sum(len(m["content"]) for m in messages[upto:])
    return tokens + estimate_tokens(rest)


def request(
    turns: Sequence[Message], *, question: str | None, first: int, last: int, earlier: str | None, room: int
) -> str:
    """The prompt that asks for the summary of ``turns`` (replies and what they printed), cut to
    ``room`` characters; ``earlier`` is the summary an earlier compaction left."""
    span = f"turn {first}" if first == last else f"turns {first} to {last}"
    task = f"The question: {question}" if question else "The question is in your first message."
    parts = [
        "You are answering a question by writing Python in a REPL. Your conversation is too long for "
        f"your window, so {span} will be replaced by your own notes. {task}",
    ]
    if earlier:
        parts.append(f"Your notes from before {span}:\n{earlier}")
    transcript = "\n\n".join(
        f"{'You wrote' if m['role'] == 'assistant' else 'The REPL and the user answered'}:\n{m['content']}"
        for m in turns
    )
    head = "\n\n".join(parts)
    # The notes replace every turn so far: an earlier compaction's notes are kept in the new ones.
    covered = span
    if earlier:
        covered = f"turns 1 to {last}, keeping what your earlier notes say that still matters"
    ask = (
        f"Write your notes on {covered}, in at most 200 words of plain text, no code: what you found, "
        "with the exact values; which variables hold what; what failed and why; what is left to do."
    )
    room = max(room - len(head) - len(ask) - 200, 1_000)
    transcript, _ = truncate(transcript, room)
    return f"{head}\n\n{span.capitalize()}, as they were:\n\n{transcript}\n\n{ask}"


def names_made(turns: Sequence[Message]) -> list[str]:
    """The names the code of ``turns``' replies binds at the top level, in order: what the REPL holds."""
    names: dict[str, None] = {}
    for message in turns:
        if message["role"] != "assistant":
            continue
        for code in code_blocks(message["content"]):
            try:
                tree = ast.parse(code)
            except SyntaxError:
                continue
            for node in tree.body:
                for name in _bound(node):
                    if not name.startswith("_") and name not in RESERVED:
                        names.setdefault(name)
    return list(names)


def _bound(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def fallback(turns: Sequence[Message], limit: int = 2_000) -> str:
    """What stands in for a summary that failed: the code the summarised turns ran."""
    code = "\n\n".join(c for m in turns if m["role"] == "assistant" for c in code_blocks(m["content"]))
    return "The code you ran (its output is not kept):\n" + truncate(code, limit)[0]


def note(summary: str, names: Sequence[str], *, first: int, last: int) -> str:
    """What the first request gains in place of the summarised turns."""
    span = f"turn {first}" if first == last else f"turns {first} to {last}"
    made = ", ".join(names) if names else "none that the notes name"
    return (
        f"[Your conversation grew past your window, so {span} were replaced by your notes. The REPL "
        f"still holds everything they made. Variables from them: {made}.]\n\nYour notes:\n{summary}"
    )
