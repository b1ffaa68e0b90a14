"""A tool as a model is offered it, and the calls a model makes of it.

A :class:`Tool`'s JSON schema comes from its function's signature (pydantic) and the descriptions of
its arguments from its docstring (docstring_parser), so a function needs nothing but type hints and a
docstring. A model asks for a call as a :class:`ToolRequest` (or, a small local model, as JSON in its
reply's text: :func:`calls_in_text`); the arguments are read by :func:`arguments_of` and the result
given back as text by :func:`as_text`.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError

__all__ = ["Tool", "ToolRequest", "as_text", "arguments_of", "calls_in_text", "RESULT_PREVIEW"]

RESULT_PREVIEW = 200  # characters of a result an event keeps


@dataclass(frozen=True)
class ToolRequest:
    """One call a model asked for: its id (to answer it by), the tool, the arguments as JSON."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Tool:
    name: str
    fn: Callable[..., Any] = field(repr=False)
    summary: str  # the first line of its docstring
    signature: str  # as the root's prompt shows it: name(arg: type = default) -> type
    description: str  # the whole docstring, less the arguments' part, for function calling
    parameters: dict[str, Any] = field(repr=False)  # JSON schema of the arguments

    @classmethod
    def of(cls, fn: Callable[..., Any], name: str | None = None) -> Tool:
        import docstring_parser
        from pydantic import PydanticUndefinedAnnotation, PydanticUserError, TypeAdapter

        if not callable(fn):
            raise ConfigError(f"A tool must be a function, not {type(fn).__name__}.")
        name = name or getattr(fn, "__name__", "")
        if not name.isidentifier() or name.startswith("_"):
            raise ConfigError(
                f"A tool needs a name that code can call, not {name!r}: pass tools={{'name': fn}}."
            )
        doc = docstring_parser.parse(inspect.getdoc(fn) or "")
        try:
            schema = TypeAdapter(fn).json_schema()
            signature = f"{name}{_signature(fn)}"
        except (PydanticUserError, PydanticUndefinedAnnotation, TypeError, ValueError) as exc:
            # a signature pydantic cannot describe (or inspect cannot read): say which tool
            raise ConfigError(f"Tool {name!r}: its arguments have no JSON schema ({exc})") from None
        notes = {p.arg_name: p.description for p in doc.params if p.description}
        for arg, prop in schema.get("properties", {}).items():
            prop.pop("title", None)
            if arg in notes:
                prop["description"] = notes[arg]
        schema.pop("title", None)
        text = "\n\n".join(p for p in (doc.short_description, doc.long_description) if p)
        return cls(name, fn, doc.short_description or "", signature, text, schema)

    def spec(self) -> dict[str, Any]:
        """The provider-neutral declaration: name, description, parameters (each backend wraps it)."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    @functools.cached_property
    def _checked(self) -> Callable[..., Any]:
        """The function behind pydantic's check of its arguments, built once a tool."""
        from pydantic import validate_call

        return validate_call(self.fn)

    def call(self, arguments: str) -> str:
        """Run the tool with a model's JSON arguments, checked against the signature; its result as text."""
        return as_text(self._checked(**arguments_of(arguments)))


def arguments_of(arguments: str) -> dict[str, Any]:
    """A model's JSON arguments of a call as a dict; a ValueError, for the model to read, if they are not."""
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise ValueError(f"the arguments are not JSON: {exc}") from None
    if not isinstance(args, dict):
        raise ValueError("the arguments must be a JSON object")
    return args


_FENCE = re.compile(r"^\s*(?:<tool_call>|```(?:json)?)\s*(.*?)\s*(?:</tool_call>|```)?\s*$", re.DOTALL)


def calls_in_text(text: str, names: Iterable[str]) -> list[ToolRequest]:
    """Tool calls a model wrote as its reply's text instead of as calls: one JSON object (or a
    list of them) ``{"name": ..., "arguments": {...}}`` naming an offered tool, bare, fenced, or
    in ``<tool_call>`` tags. Small local models do this when their server's chat template does
    not parse their calls; anything else is no call."""
    match = _FENCE.match(text)
    body = (match.group(1) if match else text).strip()
    if body.startswith("{{") and body.endswith("}}"):  # braces doubled, as in a template's escape
        body = body[1:-1]
    try:  # the first JSON value: a small model may write the same call over and over
        value, _ = json.JSONDecoder().raw_decode(body)
    except (json.JSONDecodeError, TypeError):
        return []
    items = value if isinstance(value, list) else [value]
    known = set(names)
    calls = []
    for i, item in enumerate(items):
        args = item.get("arguments", item.get("parameters")) if isinstance(item, dict) else None
        if not isinstance(args, dict) or item.get("name") not in known:
            return []
        calls.append(ToolRequest(f"text-call-{i + 1}", item["name"], json.dumps(args, ensure_ascii=False)))
    return calls


def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    """With the annotations as types, not strings (a module with ``from __future__ import annotations``)."""
    try:
        return inspect.signature(fn, eval_str=True)
    except (NameError, AttributeError, SyntaxError, TypeError, ValueError):  # evaluating a string failed
        return inspect.signature(fn)


def as_text(value: Any) -> str:
    """A tool's result as a model reads it: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)
