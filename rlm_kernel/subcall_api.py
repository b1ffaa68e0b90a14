"""The sub-call functions as the REPL's code sees them, declared once, and the value a failed one returns.

:class:`SubcallAPI` (and :class:`AskAPI` for the helpers) holds each function's signature and
docstring. The host's :class:`~rlm_kernel.subcalls.Subcalls` and the kernel's bridge
(:mod:`rlm_kernel.executors.inkernel`) implement them under :func:`declared`, which gives each the
declared docstring, and :class:`~rlm_kernel.repl.Scaffold` binds :data:`REPL_FUNCTIONS` into the
namespace; a unit test holds the three to the declaration.

A sub-call that failed does not raise in the code: it returns a :class:`SubcallError`, a ``str``
whose text is what the code has always read (``[llm_query error] why``), with the fields host code
and tests read instead of that text. In a kernel's code it is the same: its fields cross the bridge
beside the text (:func:`errors_out`, :func:`errors_in`).

This module imports only the standard library and :mod:`rlm_kernel.errors`, so that it stays cheap
to import in a kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, TypeVar

from .errors import BudgetExceeded, ProviderError, RLMError, SubcallTooLarge, one_line

__all__ = [
    "SubcallAPI",
    "AskAPI",
    "REPL_FUNCTIONS",
    "FUNCTIONS",
    "declaration",
    "declared",
    "ERROR_PREFIX",
    "Kind",
    "SubcallError",
    "errors_out",
    "errors_in",
    "prompt_list",
    "batch_images",
]

F = TypeVar("F", bound=Callable[..., Any])

ERROR_PREFIX = "[llm_query error]"
# What failed: a prompt over the window (not sent), a limit of the run tree, the provider's refusal,
# an empty reply, any other failure of the call, a child run's failure; "unknown" for one a kernel
# knows only by its text.
Kind = Literal["too_large", "budget", "provider", "empty_reply", "failed", "child", "unknown"]


class SubcallAPI(Protocol):
    """The sub-call functions the REPL's code calls, in the order they are bound."""

    def llm_query(self, prompt: str, model: str | None = None, images: Any = None) -> str:
        """Ask the sub-model one prompt; returns its reply (or a string starting with [llm_query error]).
        A prompt over the sub-model's window raises SubcallTooLarge (oversize="split": is asked in parts).
        ``model``: another of the run's models (the root's, or one of the sub_models setting); any
        other name raises ValueError. ``images``: an image (PIL image, PNG/JPEG/GIF/WebP bytes, a
        path), a list of them, or a folder; a model that takes none raises ValueError before
        anything is sent."""
        ...

    def llm_query_batched(
        self, prompts: Sequence[str], model: str | None = None, images: Sequence[Any] | None = None
    ) -> list[str]:
        """Ask many prompts at once, concurrently; replies come back in the prompts' order. A prompt over
        the window is not sent: its slot says so, with its index (oversize="split": asked in parts).
        ``images``: one entry per prompt (an image, a list of them, a folder, or None)."""
        ...

    def rlm_query(self, prompt: str, context: Any = None) -> str:
        """Hand a sub-task to a child run with its own REPL (a plain llm_query at max depth)."""
        ...

    def rlm_query_batched(self, prompts: Sequence[str], contexts: Sequence[Any] | None = None) -> list[str]:
        """Hand many sub-tasks to child runs at once; answers come back in the prompts' order (a failed
        one is a string starting with [rlm_query error]; at max depth, plain llm_query_batched calls)."""
        ...


class AskAPI(Protocol):
    """What the helpers of the small profile call: whole conversations, not one prompt."""

    def ask_batched(self, conversations: Sequence[list[Any]], max_tokens: int | None = None) -> list[str]:
        """For helpers: many conversations (few-shot turns and all) at once; replies in order."""
        ...


REPL_FUNCTIONS = ("llm_query", "llm_query_batched", "rlm_query", "rlm_query_batched")
FUNCTIONS = (*REPL_FUNCTIONS, "ask_batched")


def declaration(name: str) -> Callable[..., Any]:
    """The declared function ``name`` (of :class:`SubcallAPI` or :class:`AskAPI`)."""
    if name not in FUNCTIONS:
        raise KeyError(f"no sub-call function named {name!r}: one of {', '.join(FUNCTIONS)}")
    return getattr(SubcallAPI if name in REPL_FUNCTIONS else AskAPI, name)  # type: ignore[no-any-return]


def declared(method: F) -> F:
    """An implementation of a declared function, with the declared docstring (``help()`` shows it)."""
    method.__doc__ = declaration(method.__name__).__doc__
    return method


class SubcallError(str):
    """A sub-call that failed, as it comes back in the reply's place: the text the code and the root
    read (``[llm_query error] why``, ``[rlm_query error] why``), carrying ``fn`` (the family whose
    name the text gives), ``kind`` (:data:`Kind`), ``message`` (the why) and ``call_id`` (the
    sub-call's id in the events; None where unknown)."""

    fn: str
    kind: Kind
    message: str
    call_id: str | None

    def __new__(cls, fn: str, kind: Kind, message: str, call_id: str | None = None) -> SubcallError:
        self = super().__new__(cls, f"[{fn} error] {message}")
        self.fn, self.kind, self.message, self.call_id = fn, kind, message, call_id
        return self

    @classmethod
    def failed(cls, exc: BaseException, call_id: str | None = None) -> SubcallError:
        """An ``llm_query`` family call that raised ``exc``: why, in one line."""
        if isinstance(exc, SubcallTooLarge):
            return cls("llm_query", "too_large", one_line(exc), call_id)
        reason = str(exc) if isinstance(exc, RLMError) else f"{type(exc).__name__}: {exc}"
        reason = reason.splitlines()[0] if reason else type(exc).__name__
        return cls("llm_query", _kind(exc), reason, call_id)

    @classmethod
    def child(cls, exc: RLMError, call_id: str | None = None) -> SubcallError:
        """A child run (``rlm_query``) that ended on ``exc``."""
        return cls("rlm_query", "child", str(exc), call_id)

    def fields(self) -> dict[str, Any]:
        """What it is made from: it crosses a kernel's bridge as these."""
        return {"fn": self.fn, "kind": self.kind, "message": self.message, "call_id": self.call_id}

    def redacted(self, redact: Callable[[str], str]) -> SubcallError:
        """The same error with its message redacted (itself when nothing changed)."""
        clean = redact(self.message)
        return self if clean == self.message else type(self)(self.fn, self.kind, clean, self.call_id)

    def __reduce__(self) -> tuple[type[SubcallError], tuple[Any, ...]]:
        return type(self), (self.fn, self.kind, self.message, self.call_id)


def _kind(exc: BaseException) -> Kind:
    if isinstance(exc, BudgetExceeded):
        return "budget"
    if isinstance(exc, ProviderError):
        return "provider"
    return "failed"


def errors_out(value: Any) -> list[dict[str, Any]] | None:
    """On the host: the fields of the errors in a call's value (a reply, or a list of them), each with
    its ``index`` in the list (None for a single reply); None when there are none."""
    if isinstance(value, SubcallError):
        return [{"index": None, **value.fields()}]
    if isinstance(value, list):
        found = [{"index": i, **v.fields()} for i, v in enumerate(value) if isinstance(v, SubcallError)]
        return found or None
    return None


def errors_in(value: Any, errors: list[dict[str, Any]] | None = None) -> Any:
    """In the kernel: a call's value with its errors made :class:`SubcallError` again, from the
    fields the host sent (:func:`errors_out`); a value that came with none is as it came (a tool's
    string that looks like an error stays a string)."""
    if errors is None:
        return value
    for error in errors:
        fields = {k: v for k, v in error.items() if k != "index"}
        if error["index"] is None:
            return SubcallError(**fields)
        value[error["index"]] = SubcallError(**fields)
    return value


def prompt_list(prompts: Any, name: str) -> list[Any]:
    """A batch is a list of prompts: one string would be one call per character."""
    if isinstance(prompts, (str, bytes)):
        raise TypeError(
            f"{name} takes a list of prompts, not one string: {name}([prompt]) or llm_query(prompt)"
        )
    return list(prompts)


def batch_images(images: Any, n: int) -> list[Any]:
    """``llm_query_batched``'s ``images``: one entry per prompt (an image, a list of them, a folder, or
    None), so that each prompt sends its own; None for none at all."""
    if images is None:
        return [None] * n
    if isinstance(images, (str, bytes)) or not isinstance(images, Sequence):
        raise TypeError(
            "llm_query_batched takes images=[images of prompt 1, images of prompt 2, ...], one entry "
            "per prompt (the same for all: images=[imgs] * len(prompts))"
        )
    if len(images) != n:
        raise ValueError(f"images= has {len(images)} entries for {n} prompts: give one per prompt")
    return list(images)
