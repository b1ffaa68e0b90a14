"""What crosses from the host to the REPL's code, redacted: values a sub-call or a tool hands back,
and the exceptions they raise there.

A provider or a proxy may echo the request's key in its reply or its error, and code that encodes
what it got (base64, reversed) would take it past the redaction of the record; so every value and
exception the host's functions give the code goes through :class:`CodeBoundary` first.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from .foreign import attempt
from .subcall_api import SubcallError

__all__ = ["CodeBoundary", "ToTheCode", "to_the_code"]

F = TypeVar("F", bound=Callable[..., Any])
_DEEPEST = 64  # containers nested deeper than this are handed back as they are


class ToTheCode(Protocol):
    """An object whose methods the code calls, with the boundary's two conversions."""

    def handed_back(self, value: Any) -> Any: ...
    def raised_in_code(self, exc: Exception) -> Exception: ...


def to_the_code(method: F) -> F:
    """A method as the code calls it: what it returns, and the exception it raises, redacted
    (:meth:`CodeBoundary.handed_back`, :meth:`CodeBoundary.raised_in_code`)."""

    @functools.wraps(method)
    def handed_back(self: ToTheCode, *args: Any, **kwargs: Any) -> Any:
        value, exc = attempt(lambda: method(self, *args, **kwargs))
        if exc is None:
            return self.handed_back(value)
        # Raised outside any except block, so that an exception that held a secret is not the
        # context of its clean copy, where the code would find it.
        raise self.raised_in_code(exc)

    return handed_back  # type: ignore[return-value]


class CodeBoundary:
    """The redaction of what the code gets, by ``redact`` (the run's secrets taken out of a text)."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        self.redact = redact

    def handed_back(self, value: Any) -> Any:
        """``value`` as the code gets it: the text in it (strings, bytes, in lists, tuples, sets and
        dicts) redacted; another object as it is, unless its text holds a secret, when it is that
        text, redacted. The same object when nothing needed it."""
        return self._scrubbed(value, 0)[0]

    def _scrubbed(self, value: Any, depth: int) -> tuple[Any, bool]:
        """(``value`` redacted, whether that changed it)."""
        if isinstance(value, SubcallError):  # a failed call's reply stays one
            clean_error = value.redacted(self.redact)
            return clean_error, clean_error is not value
        if isinstance(value, str):
            clean = self.redact(value)
            return clean, clean != value
        if value is None or isinstance(value, (bool, int, float, complex)):
            return value, False
        if isinstance(value, (bytes, bytearray)):
            text = bytes(value).decode("latin-1")  # every byte a character, and back
            clean = self.redact(text)
            return (clean.encode("latin-1"), True) if clean != text else (value, False)
        if depth < _DEEPEST and type(value) in (list, tuple, set, frozenset, dict):
            return self._scrubbed_items(value, depth)
        text, failed = attempt(lambda: str(value))  # what a kernel's bridge would send of it
        if failed is not None:  # its own __str__ failed: it holds no text to hand back
            return value, False
        clean = self.redact(text)
        return (clean, True) if clean != text else (value, False)

    def _scrubbed_items(self, value: Any, depth: int) -> tuple[Any, bool]:
        """A list, tuple, set or dict, its items redacted."""
        if type(value) is dict:
            pairs = [(self._scrubbed(k, depth + 1), self._scrubbed(v, depth + 1)) for k, v in value.items()]
            if not any(k[1] or v[1] for k, v in pairs):
                return value, False
            return {k[0]: v[0] for k, v in pairs}, True
        items = [self._scrubbed(v, depth + 1) for v in value]
        if not any(changed for _, changed in items):
            return value, False
        return type(value)(v for v, _ in items), True

    def raised_in_code(self, exc: Exception) -> Exception:
        """``exc`` as the code gets it: itself when neither it nor the exceptions chained to it hold
        a secret (in their text or their arguments); else one of its type made from its redacted
        arguments, with no chain (or, where its type cannot be made so, a RuntimeError that names
        it). Other attributes are not searched: in a kernel the code gets only the text."""
        chain: list[BaseException] = []
        seen: BaseException | None = exc
        while seen is not None and len(chain) < 16:
            chain.append(seen)
            seen = seen.__cause__ or seen.__context__
        if all(self.redact(str(e)) == str(e) and not self._scrubbed(e.args, 0)[1] for e in chain):
            return exc
        clean, _ = attempt(lambda: self._rebuilt(exc))  # its type's own __init__ or __str__ may fail
        if clean is None:
            return RuntimeError(f"{type(exc).__name__}: {self.redact(str(exc))}")
        return clean

    def _rebuilt(self, exc: Exception) -> Exception | None:
        """One of ``exc``'s type made from its redacted arguments; None where its text, made by a
        ``__str__`` of its own from its attributes, still holds a secret."""
        clean = type(exc)(*(self.handed_back(a) for a in exc.args))
        return clean if self.redact(str(clean)) == str(clean) else None
