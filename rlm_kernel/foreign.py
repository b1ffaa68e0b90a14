"""Calls into code rlm_kernel does not own, whose failure is a value for the caller to turn into data.

A model's client, a user's tool, the REPL's own objects (their ``__str__``, an exception type's
``__init__``) and a kernel's command may raise anything. Where such a failure must become data
(a sub-call's error text, a tool's result, a ``Failed`` result, an exception redacted for the
code) and not end the run, the call goes through :func:`attempt` or :func:`settled`, which hand
back ``(value, None)`` or ``(None, exception)``; the caller decides what the exception becomes.
These two are where a foreign failure becomes a value; the few other broad ``except`` clauses are
boundaries of their own (a provider's SDK, a view, a thread's end), each with its reason beside it.
``BaseException`` (a cancel, Ctrl-C, ``SystemExit``) always goes through these two.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["attempt", "settled"]

T = TypeVar("T")


def attempt(call: Callable[[], T]) -> tuple[T, None] | tuple[None, Exception]:
    """``call()``'s value, or the exception it raised, as ``(value, None)`` or ``(None, exc)``."""
    try:
        return call(), None
    except Exception as exc:  # noqa: BLE001 - code we do not own may raise anything; its caller makes it data
        return None, exc


async def settled(work: Awaitable[T]) -> tuple[T, None] | tuple[None, Exception]:
    """``work``'s value, or the exception it raised, as ``(value, None)`` or ``(None, exc)``."""
    try:
        return await work, None
    except Exception as exc:  # noqa: BLE001 - a model's client or a tool may raise anything; its caller makes it data
        return None, exc
