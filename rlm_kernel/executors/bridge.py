"""The bridge between a host and its kernel (``kernel`` and ``gateway`` executors), declared once.

It travels over the kernel's own stdin channel. The one cell the host runs (:func:`inkernel.serve`)
asks with ``input(MARK + json)``; the host's ``input_reply`` is the answer::

    kernel -> host   Ready                 the serve cell started and waits for a command
                     Result(id, result)    a command is done: its result, or Failed(error)
                     a call (tag, ...)     the code asks the host: LlmQuery, LlmQueryBatched,
                                           AskBatched, RlmQueryBatched, HostCall, Part
    host -> kernel   a command (id, ...)   Bind, Load, Exec, Resolve, Close, Forget
                     Value / Quit          the answer to a call; end the serve cell

A command may arrive while the kernel waits for a call's value (a child run's step runs inside its
parent's ``rlm_query``), so waits nest; the host keeps them as a stack.

The host trusts nothing the kernel sends. :func:`parse_request` checks each request's shape,
types and size (at most ``MAX_REQUEST`` characters of JSON) and :func:`check_result` each result
against its command; the session checks that it comes when it may (a ``Ready`` only when the serve
cell starts, a result only for the command that is running, a call only under the name of the
namespace whose command is running). Anything else is a :class:`ProtocolError`: the host ends the
step and the kernel. The kernel trusts its host, and builds its commands from the same classes.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from annotated_types import Ge, MaxLen

from ..errors import RLMError, SubcallTooLarge

__all__ = [
    "MARK",
    "MAX_REQUEST",
    "ProtocolError",
    "TooLarge",
    "Ready",
    "Result",
    "Failed",
    "Executed",
    "Loaded",
    "Resolved",
    "Done",
    "LlmQuery",
    "LlmQueryBatched",
    "AskBatched",
    "RlmQueryBatched",
    "HostCall",
    "Part",
    "Bind",
    "Load",
    "Exec",
    "Resolve",
    "Close",
    "Forget",
    "Command",
    "COMMANDS",
    "encode",
    "parse_request",
    "check_result",
    "failure",
    "raised",
]

MARK = "\x1frlm:"  # starts every request of the bridge; the code's own input() prompts do not
MAX_REQUEST = 4 << 20  # characters of one request's JSON (ASCII): a step's result, a batch of prompts
# What the stdin channel may carry in one message: a request, JSON-encoded again by the kernel's
# input_request (a quote or backslash becomes two characters, \\u escapes grow by one), and its envelope.
MAX_MESSAGE = 2 * MAX_REQUEST + (1 << 20)
# pydantic's settings for every declared message; a number field is finite (a trajectory is strict
# JSON, and a time of inf or nan is no time).
_CHECKED = {"strict": True, "extra": "forbid", "allow_inf_nan": False}

Tag = Annotated[str, MaxLen(64)]
Name = Annotated[str, MaxLen(256)]
# A call's images, each a file's bytes in base64 (a PIL image is made a PNG in the kernel); the host
# sniffs each again, and the request's size limit bounds them all.
Images = Annotated[list[str], MaxLen(1000)]


class ProtocolError(RLMError):
    """A kernel's message that the bridge does not allow: the host ends the step and the kernel."""


class TooLarge(RLMError):
    """A request larger than the bridge carries (``MAX_REQUEST``): the code is told to send less."""


def images_out(images: Any) -> list[str] | None:
    """In the kernel: a call's images as they cross (base64 of each file's bytes); None for none."""
    from ..images import load_images

    return [image.b64() for image in load_images(images)] or None


def images_in(images: list[str] | None) -> list[bytes] | None:
    """On the host: the bytes of the images a call sent; not base64 is a ValueError for the code."""
    import base64
    import binascii

    if images is None:
        return None
    try:
        return [base64.b64decode(image, validate=True) for image in images]
    except binascii.Error:
        raise ValueError("an image that crossed from the kernel is not base64") from None


def encode(message: Any) -> str:
    """A message's JSON; a request larger than ``MAX_REQUEST`` raises :class:`TooLarge`."""
    text = json.dumps(dataclasses.asdict(message), default=str)
    if len(text) > MAX_REQUEST:
        raise TooLarge(
            f"this request is too large for the bridge to the host ({len(text) / 1e6:.1f} MB of JSON, "
            f"at most {MAX_REQUEST / 1e6:.1f} MB): send less at once"
        )
    return text


# -- kernel -> host: requests ------------------------------------------------------------------
@dataclass(frozen=True)
class Ready:
    __pydantic_config__ = _CHECKED
    op: Literal["ready"] = "ready"


@dataclass(frozen=True)
class LlmQuery:
    __pydantic_config__ = _CHECKED
    tag: Tag
    prompt: str
    model: Name | None = None
    images: Images | None = None
    op: Literal["call"] = "call"
    fn: Literal["llm_query"] = "llm_query"


@dataclass(frozen=True)
class LlmQueryBatched:
    __pydantic_config__ = _CHECKED
    tag: Tag
    prompts: Annotated[list[str], MaxLen(100_000)]
    model: Name | None = None
    images: Annotated[list[Images | None], MaxLen(100_000)] | None = None  # one entry per prompt
    op: Literal["call"] = "call"
    fn: Literal["llm_query_batched"] = "llm_query_batched"


@dataclass(frozen=True)
class AskBatched:
    """The small profile's labelling helpers: conversations of a few messages each."""

    __pydantic_config__ = _CHECKED
    tag: Tag
    conversations: Annotated[list[list[dict[str, Any]]], MaxLen(100_000)]
    max_tokens: Annotated[int, Ge(1)] | None = None
    op: Literal["call"] = "call"
    fn: Literal["ask_batched"] = "ask_batched"


@dataclass(frozen=True)
class ContextRef:
    """A child's context, kept in the kernel: its name there and how the child's root sees it."""

    __pydantic_config__ = _CHECKED
    ref: Tag
    meta: dict[str, Any]


@dataclass(frozen=True)
class RlmQueryBatched:
    __pydantic_config__ = _CHECKED
    tag: Tag
    prompts: Annotated[list[str], MaxLen(100_000)]
    contexts: Annotated[list[ContextRef], MaxLen(100_000)] | None = None
    op: Literal["call"] = "call"
    fn: Literal["rlm_query_batched"] = "rlm_query_batched"


@dataclass(frozen=True)
class HostCall:
    """A tool that runs on the host: arguments and result cross as JSON."""

    __pydantic_config__ = _CHECKED
    tag: Tag
    name: Name
    args: list[Any]
    kwargs: dict[str, Any]
    op: Literal["call"] = "call"
    fn: Literal["host"] = "host"


@dataclass(frozen=True)
class Part:
    """A part of a context that crosses a remote kernel's channel in parts."""

    __pydantic_config__ = _CHECKED
    tag: Tag
    ref: Tag
    index: Annotated[int, Ge(0)]
    op: Literal["call"] = "call"
    fn: Literal["part"] = "part"


# -- kernel -> host: what a command returns ------------------------------------------------------
@dataclass(frozen=True)
class Failed:
    __pydantic_config__ = _CHECKED
    error: str


@dataclass(frozen=True)
class Executed:
    __pydantic_config__ = _CHECKED
    stdout: str
    stderr: str
    value: str | None
    error: str | None
    elapsed_s: Annotated[float, Ge(0)]
    answer_ready: bool
    answer: str
    restored: Annotated[list[Tag], MaxLen(64)]


@dataclass(frozen=True)
class Loaded:
    __pydantic_config__ = _CHECKED
    load_s: Annotated[float, Ge(0)]


@dataclass(frozen=True)
class Resolved:
    __pydantic_config__ = _CHECKED
    content: str | None
    problem: str | None


@dataclass(frozen=True)
class Done:
    __pydantic_config__ = _CHECKED


@dataclass(frozen=True)
class Result:
    """A command is done: what it returns, or how it failed (checked against the command by
    :func:`check_result`)."""

    __pydantic_config__ = _CHECKED
    id: int
    result: Failed | Executed | Loaded | Resolved | Done
    op: Literal["result"] = "result"


CALLS = (LlmQuery, LlmQueryBatched, AskBatched, RlmQueryBatched, HostCall, Part)
Call = LlmQuery | LlmQueryBatched | AskBatched | RlmQueryBatched | HostCall | Part
Request = Ready | Result | Call


# -- host -> kernel: commands, and the answer to a call -------------------------------------------
@dataclass(frozen=True)
class Bind:
    """Make a namespace: its context (a value, or a context loaded before), sub-calls, helpers."""

    tag: str
    context: dict[str, Any]
    subcalls: bool
    helpers: list[str]
    host: list[dict[str, str]]
    output_cap: int
    op: Literal["bind"] = "bind"
    returns = (Done,)


@dataclass(frozen=True)
class Load:
    """Load a context once: from a file the host wrote, or in ``parts`` over the channel."""

    tag: str
    ref: str
    format: str
    path: str | None = None
    parts: int = 0
    length: int = 0
    kind: int = 0
    op: Literal["load"] = "load"
    returns = (Loaded,)


@dataclass(frozen=True)
class Exec:
    tag: str
    code: str
    step: int
    op: Literal["exec"] = "exec"
    returns = (Executed,)


@dataclass(frozen=True)
class Resolve:
    tag: str
    kind: str
    argument: str
    op: Literal["resolve"] = "resolve"
    returns = (Resolved,)


@dataclass(frozen=True)
class Close:
    tag: str
    op: Literal["close"] = "close"
    returns = (Done,)


@dataclass(frozen=True)
class Forget:
    tag: str
    refs: list[str]
    op: Literal["forget"] = "forget"
    returns = (Done,)


Command = Bind | Load | Exec | Resolve | Close | Forget
COMMANDS: dict[str, type[Any]] = {cls.op: cls for cls in (Bind, Load, Exec, Resolve, Close, Forget)}


@dataclass(frozen=True)
class Value:
    value: Any = None
    error: str | None = None
    # An error the code gets as its own class, by the fields it is built from (SubcallTooLarge, which
    # the code may catch and split; a ValueError or TypeError of a bad argument, such as images for a
    # model that takes none); any other is a RuntimeError of ``error``.
    raised: dict[str, Any] | None = None
    # The failed sub-calls in ``value``, each by its fields and its index in a batch (None: the value is
    # the error): the kernel gives them to the code as SubcallError, as the local executor does.
    subcall_errors: list[dict[str, Any]] | None = None
    op: Literal["value"] = "value"


def failure(exc: Exception) -> Value:
    """The answer to a call that failed on the host, for the kernel to raise in the code."""
    if isinstance(exc, SubcallTooLarge):
        return Value(error=str(exc), raised={"type": "SubcallTooLarge", "fields": exc.fields()})
    if type(exc) in (ValueError, TypeError):
        return Value(error=str(exc), raised={"type": type(exc).__name__, "fields": {}})
    return Value(error=f"{type(exc).__name__}: {exc}")


def raised(reply: dict[str, Any]) -> Exception:
    """In the kernel: the exception a failed call's answer (:func:`failure`) raises in the code."""
    kept = reply.get("raised")
    if kept and kept.get("type") == "SubcallTooLarge":
        return SubcallTooLarge(**kept["fields"])
    if kept and kept.get("type") in ("ValueError", "TypeError"):
        return (ValueError if kept["type"] == "ValueError" else TypeError)(reply["error"])
    return RuntimeError(reply["error"])


@dataclass(frozen=True)
class Quit:
    op: Literal["quit"] = "quit"


def command_json(command: Any, id: int) -> str:
    return json.dumps({**dataclasses.asdict(command), "id": id}, default=str)


# -- the host's checks ---------------------------------------------------------------------------
@functools.cache
def _adapter(tp: Any) -> Any:
    from pydantic import Field, TypeAdapter

    if tp is Request:  # the requests, told apart by "op" and the calls by "fn"
        calls = Annotated[Call, Field(discriminator="fn")]
        tp = Annotated[Ready | Result | calls, Field(discriminator="op")]  # type: ignore[valid-type]
    return TypeAdapter(tp)


def _checked(tp: Any, data: str) -> Any:
    from pydantic import ValidationError

    try:
        return _adapter(tp).validate_json(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise ProtocolError(f"{where + ': ' if where else ''}{error['msg'].lower()}") from None


def parse_request(text: str) -> Request:
    """A request of the kernel, checked: its size, shape and types."""
    if len(text) > MAX_REQUEST:
        raise ProtocolError(f"a request of {len(text):,} characters, over the bridge's {MAX_REQUEST:,}")
    return _checked(Request, text)


def check_result(command: Any, result: Any) -> None:
    """That a command's result is of the kind the command returns (or a failure)."""
    if not isinstance(result, (Failed, *type(command).returns)):
        raise ProtocolError(f"a result of the wrong kind for {command.op}: {type(result).__name__}")
