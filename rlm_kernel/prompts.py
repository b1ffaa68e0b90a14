"""What the root LM is told: system prompts by profile, context metadata, and each turn's text.

Profiles:
  ``default``      frontier models: the full REPL contract in the system prompt.
  ``small``        small local models: a short system prompt plus a worked example
                   given as earlier turns, because small models follow demonstrations,
                   not instructions.
  ``no_subcalls``  the REPL without ``llm_query`` / ``rlm_query``.
A child run (depth > 0) gets a note that it answers a sub-question for a parent.

:func:`codeact_system` is the system prompt of the paper's CodeAct baseline (an eval method, not a
profile): the same REPL contract, with the whole context in the prompt itself.

The system prompt and the first turns never change during a run, so providers can
cache them as a prefix.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .errors import one_line
from .foreign import attempt
from .images import describe_images
from .lm.base import Message
from .structured import (
    describe_structured,
    files_metadata,
    frames_metadata,
    json_metadata,
    nested_metadata,
    table_metadata,
    xml_metadata,
)
from .text_records import records_metadata
from .tools import Tool
from .worked import answer_start, example_turns, reply_start, reply_starts, retry_start, shape_of

__all__ = [
    "answer_start",
    "context_metadata",
    "describe_context",
    "system_prompt",
    "codeact_system",
    "opening_messages",
    "observation",
    "NO_CODE_NUDGE",
    "final_turn",
    "reply_start",
    "reply_starts",
    "retry_start",
]

PREVIEW_CHARS = 200
PREVIEW_ITEMS = 5  # items of each container the preview shows at most
ITEM_LENGTHS_SHOWN = 20


def _length(obj: Any) -> int | None:
    length, _ = attempt(lambda: len(obj))  # the user's object: no length, or a __len__ that raises
    return length


def _opened(obj: Any) -> str | tuple[str, str, Iterator[Any]]:
    """A container's brackets and its items, or the whole repr of anything else (a set's ``set()``)."""
    kind = type(obj)
    if isinstance(obj, (str, bytes, bytearray)):
        return repr(obj)  # a subclass, with its own repr
    if isinstance(obj, Mapping):
        return "{", "}", iter(obj.items())
    if kind is tuple:
        return "(", ")", iter(obj)
    if kind in (set, frozenset):
        if not obj:
            return f"{kind.__name__}()"
        opening, closing = ("{", "}") if kind is set else ("frozenset({", "})")
        return opening, closing, iter(obj)
    if isinstance(obj, Sequence):
        return "[", "]", iter(obj)
    return repr(obj)


def _head(obj: Any, budget: int, seen: frozenset[int] = frozenset()) -> str:
    """About the first ``budget`` characters of ``repr(obj)``, walking at most ``PREVIEW_ITEMS`` items
    of each container and cutting long strings first, so the cost follows the preview, not the object."""
    kind = type(obj)
    if kind in (str, bytes, bytearray):
        return repr(obj[: max(budget, 0) + 1])
    opened = _opened(obj)
    if isinstance(opened, str):
        return opened
    opening, closing, items = opened
    if id(obj) in seen:
        return f"{opening}...{closing}"
    seen = seen | {id(obj)}
    parts: list[str] = []
    used = len(opening)
    more = False
    for item in itertools.islice(items, PREVIEW_ITEMS + 1):
        if len(parts) == PREVIEW_ITEMS or used >= budget:
            more = True
            break
        if isinstance(obj, Mapping):
            key = _head(item[0], budget - used, seen)
            text = f"{key}: {_head(item[1], budget - used - len(key) - 2, seen)}"
        else:
            text = _head(item, budget - used, seen)
        parts.append(text)
        used += len(text) + 2
    if more:
        parts.append("...")
    elif kind is tuple and len(parts) == 1:
        return f"({parts[0]},)"
    return opening + ", ".join(parts) + closing


def _preview(context: Any) -> str:
    """The start of the context's repr, built from its first items only (a 100 MB list is not
    turned into a 100 MB string for 200 characters)."""
    return _head(context, PREVIEW_CHARS)[:PREVIEW_CHARS]


def context_metadata(context: Any) -> dict[str, Any]:
    """Type, size, item sizes, shape and a short preview: all the root learns of the context up front.
    An object whose ``__len__`` or ``__repr__`` raises still gets a description, which says so."""
    meta, exc = attempt(lambda: _metadata(context))  # the user's object may raise anything while described
    if exc is None:
        return meta
    why = one_line(exc)
    return {
        "type": type(context).__name__,
        "shape": "unknown",
        "preview": f"(not shown: describing it raised {why})",
        "problem": why,
    }


def _metadata(context: Any) -> dict[str, Any]:
    known = getattr(context, "__rlm_metadata__", None)  # described where it lives (a kernel)
    if isinstance(known, Mapping):
        return dict(known)
    meta: dict[str, Any] = {"type": type(context).__name__, "shape": shape_of(context)}
    if (images := describe_images(context)) is not None:  # counts, sizes, formats: never their bytes
        meta["images"] = images
        if isinstance(context, Sequence):
            meta["items"] = len(context)
        meta["preview"] = f"({images['count']} image(s); pass them to llm_query(prompt, images=...))"
        return meta
    if meta["shape"] in ("frame", "array"):
        return {**meta, **_array_metadata(context)}
    if isinstance(context, str):
        meta["length"] = len(context)
        meta["lines"] = context.count("\n") + 1
        meta["preview"] = context[:PREVIEW_CHARS]
        parsed = (
            xml_metadata(context)
            or table_metadata(context)
            or json_metadata(context)
            or records_metadata(context)
        )
        return {**meta, **(parsed or {})}
    if isinstance(context, Mapping):
        keys = list(itertools.islice(context.keys(), ITEM_LENGTHS_SHOWN))
        meta["items"] = len(context)
        meta["keys"] = [str(k)[:60] for k in keys]
        meta["item_lengths"] = [_length(context[k]) for k in keys]
        meta.update(
            frames_metadata(context)
            or files_metadata(context)
            or table_metadata(context)
            or nested_metadata(context)
            or {}
        )
    elif isinstance(context, Sequence) and not isinstance(context, (bytes, bytearray)):
        meta["items"] = len(context)
        meta["item_lengths"] = [_length(item) for item in itertools.islice(context, ITEM_LENGTHS_SHOWN)]
        meta["item_types"] = sorted(
            {type(item).__name__ for item in itertools.islice(context, ITEM_LENGTHS_SHOWN)}
        )
        meta.update(table_metadata(context) or nested_metadata(context) or {})
    else:
        length = _length(context)
        if length is not None:
            meta["length"] = length
    preview, exc = attempt(lambda: _preview(context))  # the user's object: a __repr__ that raises
    if exc is None:
        meta["preview"] = preview
    else:
        meta["preview"] = f"(not shown: its repr raised {type(exc).__name__})"
        meta["problem"] = f"its repr raised {type(exc).__name__}"
    return meta


COLUMNS_SHOWN = 30
ROWS_SHOWN = 3


def _array_metadata(data: Any) -> dict[str, Any]:
    """A DataFrame, Series or array as a data scientist first looks at one: its shape, its
    columns and their dtypes, and its first rows."""
    meta: dict[str, Any] = {"dims": [int(n) for n in data.shape]}
    columns = getattr(data, "dtypes", None)
    if hasattr(data, "columns") and columns is not None:
        meta["columns"] = {str(k): str(v) for k, v in itertools.islice(columns.items(), COLUMNS_SHOWN)}
        meta["preview"] = data.head(ROWS_SHOWN).to_string(max_colwidth=40)
    else:
        meta["dtype"] = str(data.dtype)
        head = data.head(ROWS_SHOWN) if hasattr(data, "head") else data[:ROWS_SHOWN]
        meta["preview"] = repr(head)[: PREVIEW_CHARS * 2]
    return meta


def _describe_array(meta: Mapping[str, Any]) -> str:
    dims = " x ".join(f"{n:,}" for n in meta["dims"])
    lines = [f"The variable `context` holds a {meta['type']} of shape ({dims})."]
    if "columns" in meta:
        columns = ", ".join(f"{name} ({dtype})" for name, dtype in meta["columns"].items())
        lines.append(f"Columns and dtypes: {columns}")
        lines.append(f"First rows:\n{meta['preview']}")
    else:
        lines.append(f"dtype {meta['dtype']}; it begins: {meta['preview']}")
    return "\n".join(lines)


def _sizes(meta: Mapping[str, Any]) -> list[str]:
    parts = [f"type {meta['type']}"]
    if "length" in meta:
        parts.append(
            f"{meta['length']:,} characters" if meta["type"] == "str" else f"length {meta['length']:,}"
        )
    if "lines" in meta:
        parts.append(f"{meta['lines']:,} lines")
    if "items" in meta:
        parts.append(f"{meta['items']:,} items")
    return parts


def _describe_images(images: Mapping[str, Any]) -> str:
    formats = ", ".join(f"{n} {kind}" for kind, n in images["formats"].items())
    more = " ..." if images["count"] > len(images["sizes"]) else ""
    return (
        f"Images: {images['count']:,} ({formats}; {images['bytes']:,} bytes in all). "
        f"Sizes (width x height): {', '.join(images['sizes'])}{more}. "
        "A vision model reads them: llm_query(prompt, images=[...])."
    )


def describe_context(meta: Mapping[str, Any]) -> str:
    """The metadata as a few lines for the root's first turn."""
    if meta.get("shape") in ("frame", "array") and "dims" in meta:
        return _describe_array(meta)
    if any(k in meta for k in ("dims", "frames", "files", "records")) or meta.get("format") == "json":
        text = describe_structured(meta)
        if text is not None and "parsed_keys" in meta:  # JSON that is no table: its start too
            return f"{text}\nIt begins: {meta['preview']!r}"
        if text is not None:
            return text
    lines = ["The variable `context` holds: " + ", ".join(_sizes(meta)) + "."]
    if images := meta.get("images"):
        lines.append(_describe_images(images))
    if meta.get("keys"):
        lines.append(f"First keys: {meta['keys']}")
    if meta.get("item_lengths"):
        more = " ..." if meta.get("items", 0) > len(meta["item_lengths"]) else ""
        lines.append(f"Lengths of the first items: {meta['item_lengths']}{more}")
    lines.append(f"It begins: {meta['preview']!r}")
    if meta.get("load"):  # rows, without pandas: the lines that read them
        lines.append(f"Read its rows with:\n{meta['load']}")
    return "\n".join(lines)


_DEFAULT = """\
You answer a question about a context that is too large to read at once. The \
context is stored in a Python REPL as the variable `context`; you never see it \
directly, only what your code prints.

Write Python in ```repl blocks. Each block runs in the same persistent \
namespace, and you then see its printed output (long output is cut, so print \
summaries and slices, not everything). Available in the REPL:
- `context`: the data.
{subcalls}- `SHOW_VARS()`: list the variables you have made.
- `answer`: a dict `{{"content": "", "ready": False}}`. Set `answer["content"]` \
to your final answer and `answer["ready"] = True` to finish.
{final}
Work step by step: look at the structure of the context first, then search, \
slice, and delegate. Do not guess: base the answer on what your code found. \
When you are done, finish in code."""

_SUBCALLS = """\
- `llm_query(prompt)`: ask a language model (it can read about {window} of text) \
and get its reply as a string. `llm_query_batched(prompts)` sends a list of prompts \
at once, concurrently, and returns the replies in order: prefer it to a loop.
- `rlm_query(prompt, context=None)`: hand a sub-task to a child of yours with its \
own REPL (`rlm_query_batched` for many); use it for sub-tasks that need code.
"""

_FINAL = """\
You may also end with `FINAL(your answer)` or `FINAL_VAR(variable_name)`, in code \
or on a line of its own outside code blocks; only use them once you have the answer."""

_CHILD = """\

You are working on one sub-task for another model; answer it directly and briefly."""

_SMALL_SYSTEM = """\
You answer questions about data stored in the Python variable `context`. You cannot read it \
directly. Reply with Python code in a ```repl block; you will see what it prints. \
`search("words")` prints the passages of `context` that hold those words. `classify(items, labels)` \
labels each item by its meaning. When you know the answer, reply with code that sets \
answer["content"] and answer["ready"] = True."""


def system_prompt(
    profile: str,
    *,
    protocol: str = "both",
    depth: int = 0,
    window: str = "100k tokens",
    tools: Sequence[Tool] = (),
    sub_tools: Sequence[Tool] = (),
    tips: str | None = None,
) -> str:
    if profile == "small":
        text = _SMALL_SYSTEM
    else:
        subcalls = "" if profile == "no_subcalls" else _SUBCALLS.format(window=window)
        final = "" if protocol == "answer" else _FINAL + "\n"
        text = _DEFAULT.format(subcalls=subcalls, final=final)
    return text + task_notes(tools, sub_tools, tips) + (_CHILD if depth > 0 else "")


_CODEACT = """\
You answer a question about the context given in full at the end of this message. Work in \
steps: say what you will do next, then act with Python in a ```repl block. Each block runs in \
the same persistent namespace, and you then see its printed output (long output is cut). \
Available in the REPL:
- `context`: the same context, as a Python object.
{subcalls}- `SHOW_VARS()`: list the variables you have made.
- `answer`: a dict `{{"content": "", "ready": False}}`. Set `answer["content"]` \
to your final answer and `answer["ready"] = True` to finish.
{final}
Base the answer on the context, not on guesses. When you are done, finish in code.

The context:
"""

_CODEACT_SUBCALLS = """\
- `llm_query(prompt)`: ask a language model (it can read about {window} of text) \
and get its reply as a string. `llm_query_batched(prompts)` sends a list of prompts \
at once, concurrently, and returns the replies in order: prefer it to a loop.
"""


def codeact_system(
    context_text: str, *, subcalls: bool, protocol: str = "both", window: str = "100k tokens"
) -> str:
    """The system prompt of the paper's CodeAct baseline: a ReAct loop of code in the REPL with the
    whole context in the prompt (``context_text``, after the instructions), with or without the
    sub-call functions. A context past the model's window makes the first request fail."""
    text = _CODEACT.format(
        subcalls=_CODEACT_SUBCALLS.format(window=window) if subcalls else "",
        final="" if protocol == "answer" else _FINAL + "\n",
    )
    return text + context_text


def task_notes(tools: Sequence[Tool], sub_tools: Sequence[Tool], tips: str | None) -> str:
    """What the root is told of this task's tools (the REPL's by signature and summary, the
    sub-calls' by name, as theirs alone) and the tips, after the system prompt."""
    lines = []
    if tools:
        lines.append("Functions of this task, also in the REPL:")
        lines += [f"- `{t.signature}`" + (f": {t.summary}" if t.summary else "") for t in tools]
    if sub_tools:
        lines.append(
            "The sub-calls (`llm_query`) can call these tools themselves; your code cannot, so ask a "
            "sub-call for what they give:"
        )
        lines += [f"- `{t.name}`" + (f": {t.summary}" if t.summary else "") for t in sub_tools]
    notes = "\n".join(lines)
    if tips and tips.strip():
        notes = f"{notes}\n\n{tips.strip()}" if notes else tips.strip()
    return f"\n\n{notes}" if notes else ""


def opening_messages(
    *,
    profile: str,
    question: str | None,
    context_meta: Mapping[str, Any],
    protocol: str = "both",
    depth: int = 0,
    system: str | None = None,
    tools: Sequence[Tool] = (),
    sub_tools: Sequence[Tool] = (),
    tips: str | None = None,
    answer_type: str | None = None,
) -> list[Message]:
    """System prompt, worked example (small profile) and the first user turn; ``answer_type`` says
    what the answer must be (``output_type``), after the question.

    The stable prefix is marked ``cache`` for providers with explicit prompt caching. A system
    prompt of the caller's own still gets the tools and tips appended.
    """
    if system is None:
        text = system_prompt(
            profile, protocol=protocol, depth=depth, tools=tools, sub_tools=sub_tools, tips=tips
        )
    else:
        text = system + task_notes(tools, sub_tools, tips)
    messages: list[Message] = [{"role": "system", "content": text}]
    if profile == "small":
        messages.extend(example_turns(context_meta, question))
    messages[-1]["cache"] = True
    task = question or "Answer the request contained in the context."
    request = f"{describe_context(context_meta)}\n\nQuestion: {task}"
    if answer_type:
        request += f"\n\n{answer_type}"
    messages.append({"role": "user", "content": request})
    return messages


NO_CODE_NUDGE = (
    "Your reply had no ```repl code block, so nothing ran. Reply with Python code in a "
    '```repl block, or set answer["content"] and answer["ready"] = True in code when you know the answer.'
)


def observation(
    outputs: Sequence[tuple[int, str]],
    *,
    skipped: int = 0,
    notes: Sequence[str] = (),
    hints: Sequence[str] = (),
    edits: Sequence[tuple[int, str, str]] = (),
    human_steps: Sequence[tuple[int, str, str]] = (),
    remaining: int | None = None,
) -> str:
    """The user turn after code ran: each step's output, then what the human said or changed."""
    parts = []
    for step, code, output in human_steps:  # they ran before the root's latest steps finished
        shown = f"Output:\n{output}" if output.strip() else "It printed nothing."
        parts.append(f"The human ran a cell of their own (step {step}):\n```\n{code.rstrip()}\n```\n{shown}")
    for step, text in outputs:
        parts.append(
            f"Output of step {step}:\n{text}" if text.strip() else f"Step {step} ran and printed nothing."
        )
    if skipped:
        parts.append(f"{skipped} later code block(s) of your reply were not run because of the error above.")
    for step, proposed, executed in edits:
        parts.append(
            f"A human edited your step {step} before it ran. You proposed:\n```\n{proposed.rstrip()}\n```\n"
            f"What actually ran:\n```\n{executed.rstrip()}\n```"
        )
    parts.extend(notes)
    parts.extend(f"Hint from the human: {hint}" for hint in hints)
    if remaining is not None and remaining <= 2:
        parts.append(f"You have {remaining} turn(s) left: finish soon.")
    return "\n\n".join(parts)


def next_question(question: str | None, answer_type: str | None = None) -> str:
    """A session's next question, asked in the same conversation over the same REPL."""
    task = question or "Answer the request contained in the context."
    text = (
        "A new question about the same context. Every variable you made is still in the REPL, and "
        'answer["ready"] is False again: answer this question as you did the last.\n\n'
        f"Question: {task}"
    )
    return f"{text}\n\n{answer_type}" if answer_type else text


def final_turn(iterations: int, protocol: str) -> str:
    how = "FINAL(your answer)" if protocol != "answer" else "your answer as plain text"
    return (
        f"You have used all {iterations} turns. Do not write more code. "
        f"Reply now with your best final answer, as {how}."
    )
