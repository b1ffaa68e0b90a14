"""Answers of a declared type (``output_type=``): what the root is told, and the check of what it commits.

A type is a pydantic model, a dataclass, a ``TypedDict``, a plain or generic type (``int``,
``list[str]``), a JSON schema (a dict), or the text of either (``"list[str]"``, ``'{"type": ...}'``),
as a command line gives it. The committed answer (a value the code put in ``answer["content"]``,
whose text is its ``str()``, or JSON) is parsed and validated: pydantic for types, ``jsonschema`` for
schemas. A valid answer is kept as JSON in the trajectory, and as the typed value in the result.
JSON has no form for the floats inf, -inf and nan: an answer that holds one is not of any type.
"""

from __future__ import annotations

import ast
import functools
import json
import math
import typing
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError, RLMError

__all__ = ["OutputType", "OutputTypeError", "output_type"]

# The names a type given as text may use: builtins and typing's, nothing that runs code.
_TYPE_NAMES: dict[str, Any] = {
    **{t.__name__: t for t in (str, int, float, bool, bytes, list, dict, tuple, set, frozenset)},
    "None": None,
    **{name: getattr(typing, name) for name in ("Any", "Literal", "Optional", "Union")},
}


_TYPE_NODES = (
    ast.Expression,
    ast.Name,
    ast.Subscript,
    ast.Tuple,
    ast.Load,
    ast.Constant,
    ast.BinOp,
    ast.BitOr,
)


class OutputTypeError(RLMError):
    """The committed answer does not have the declared type; ``raw`` is the answer as committed."""

    def __init__(self, problem: str, raw: str) -> None:
        self.problem = problem
        self.raw = raw
        super().__init__(f"The answer does not have the declared type: {problem}")


@dataclass(frozen=True)
class OutputType:
    """A declared answer type, ready to describe and to check."""

    name: str  # as the root is told it: list[str], Invoice, a schema's title
    schema: dict[str, Any]  # its JSON schema
    adapter: Any  # a pydantic TypeAdapter, or None for a bare JSON schema
    text: bool  # a plain string: the answer is taken as written, not parsed

    def describe(self) -> str:
        """For the root's prompt: the type, its JSON schema, and how to give a value of it."""
        if self.text:
            return "The answer is plain text."
        schema = json.dumps(self.schema, separators=(",", ":"))
        return (
            f"The answer must be a value of type {self.name}, with this JSON schema: {schema}. Put the "
            'value itself (lists, dicts, strings, numbers) or its JSON in answer["content"].'
        )

    def check(self, raw: str) -> tuple[Any, str]:
        """The value ``raw`` holds and its JSON text; :class:`OutputTypeError` when it has none."""
        if self.text:
            return raw, raw
        try:
            data = _parse(raw)
        except ValueError as exc:
            raise OutputTypeError(str(exc), raw) from None
        if self.adapter is None:
            import jsonschema

            errors = sorted(jsonschema.Draft202012Validator(self.schema).iter_errors(data), key=str)
            if errors:
                where = "/".join(map(str, errors[0].absolute_path)) or "the value"
                raise OutputTypeError(f"{where}: {errors[0].message}", raw)
            _finite(data, raw)
            return data, json.dumps(data, ensure_ascii=False, allow_nan=False)
        from pydantic import ValidationError

        try:
            value = self.adapter.validate_python(data)
        except ValidationError as exc:
            raise OutputTypeError(_first_errors(exc), raw) from None
        _finite(self.adapter.dump_python(value), raw)  # "inf" as text is a float once validated
        return value, self.adapter.dump_json(value).decode()

    def load(self, text: str) -> Any:
        """The typed value of an answer :meth:`check` accepted, from its JSON (a trajectory's)."""
        if self.text:
            return text
        data = json.loads(text)
        return data if self.adapter is None else self.adapter.validate_python(data)


def _finite(data: Any, raw: str) -> None:
    """An :class:`OutputTypeError` for a value that holds inf, -inf or nan: its JSON would hold
    ``Infinity`` or ``NaN``, which JSON does not have (or pydantic's ``null``, which is not of the type)."""

    def walk(value: Any) -> bool:
        if isinstance(value, float):
            return not math.isfinite(value)
        if isinstance(value, (list, tuple, set, frozenset)):
            return any(walk(v) for v in value)
        if isinstance(value, dict):
            return any(walk(k) or walk(v) for k, v in value.items())
        return False

    if walk(data):
        raise OutputTypeError(
            "it holds a number JSON has no form for (inf, -inf or nan): give finite numbers", raw
        )


def _parse(raw: str) -> Any:
    """JSON, else a Python literal (the ``str()`` of a list or dict the code built)."""
    text = raw.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError(f"it is neither JSON nor a Python literal: {text[:80]!r}") from None


def _first_errors(exc: Any, most: int = 3) -> str:
    parts = []
    for error in exc.errors()[:most]:
        where = ".".join(map(str, error["loc"])) or "the value"
        parts.append(f"{where}: {error['msg']}")
    more = exc.error_count() - most
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _from_text(text: str) -> Any:
    """A type written as text: a JSON schema, or a type expression of builtin and typing names."""
    text = text.strip()
    if text.startswith("{"):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"output_type {text[:60]!r} is not valid JSON: {exc}") from None
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ConfigError(f"output_type {text!r} is not a type: write one like list[str] or int.") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in _TYPE_NAMES:
            raise ConfigError(
                f"output_type {text!r}: unknown name {node.id!r}; as text, use builtin and typing names "
                "(a class of your own is passed as itself)."
            )
        if not isinstance(node, _TYPE_NODES):
            raise ConfigError(f"output_type {text!r} is not a type: write one like list[str] or int.")
    return eval(compile(tree, "<output_type>", "eval"), {"__builtins__": {}}, dict(_TYPE_NAMES))  # noqa: S307


@functools.lru_cache(maxsize=64)
def _cached(spec: Any) -> OutputType:
    return _build(spec)


def output_type(spec: Any) -> OutputType | None:
    """The :class:`OutputType` of a setting's value (None: answers are plain text, unchecked)."""
    if spec is None:
        return None
    if isinstance(spec, OutputType):
        return spec
    try:
        return _cached(spec)
    except TypeError:  # unhashable: a JSON schema given as a dict
        return _build(spec)


def _build(spec: Any) -> OutputType:
    if isinstance(spec, str):
        spec = _from_text(spec)
    if isinstance(spec, dict):
        import jsonschema

        try:
            jsonschema.Draft202012Validator.check_schema(spec)
        except jsonschema.SchemaError as exc:
            raise ConfigError(f"output_type is not a valid JSON schema: {exc.message}") from None
        return OutputType(str(spec.get("title", "the schema")), spec, None, spec.get("type") == "string")
    from pydantic import PydanticUserError, TypeAdapter

    try:
        adapter = TypeAdapter(spec)
        schema = adapter.json_schema()
    except (PydanticUserError, TypeError, ValueError) as exc:  # a type pydantic cannot check or describe
        raise ConfigError(f"output_type {spec!r} has no JSON schema: {str(exc).splitlines()[0]}") from None
    plain = isinstance(spec, type) and typing.get_origin(spec) is None  # a class, not list[str]
    name = spec.__name__ if plain else repr(spec).replace("typing.", "")
    return OutputType(name, schema, adapter, spec is str)
