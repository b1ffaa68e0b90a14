"""The notebook-mode comm protocol: every message as a frozen dataclass, beside the events.

This module is the protocol's one declaration. The extension's types and validators
(``labextension/src/schema.ts``) are generated from it and from :mod:`rlm_kernel.events`:

    python -m rlm_kernel.messages > labextension/src/schema.ts

and a test fails when the generated file or ``docs/protocol.md`` disagrees with it. A field with a
default is optional on the wire: a reader fills in the default when an older peer leaves it out.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from . import events as ev
from .trajectory import SAVED_RUN_KEY, SAVED_RUN_VERSION

__all__ = [
    "PROTOCOL_VERSION",
    "COMM_TARGET",
    "Message",
    "Welcome",
    "RunStartedMsg",
    "ProposeStep",
    "StepExecuted",
    "RunStateMsg",
    "EventsMsg",
    "RootProgress",
    "RunFinished",
    "Hello",
    "CellInserted",
    "CellOfRun",
    "SetMode",
    "Pause",
    "Resume",
    "Stop",
    "HintMsg",
    "RegenerateMsg",
    "KERNEL_MESSAGES",
    "FRONTEND_MESSAGES",
    "EVENTS",
    "fields_of",
    "parse_frontend",
    "version_problem",
    "typescript",
]

PROTOCOL_VERSION = 3
COMM_TARGET = "rlm_kernel"

Mode = Literal["auto", "confirm-risky", "step"]  # the permission ladder, most autonomous first
StopReason = ev.StopReason  # declared beside RunEnded, the event that carries it


@dataclass(frozen=True, kw_only=True)
class Message:
    type: ClassVar[str] = "message"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)}}


# -- kernel → front end ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Welcome(Message):
    """The comm opened: the kernel's protocol, and the run in progress."""

    type: ClassVar[str] = "welcome"
    version: int
    active: str | None = None


@dataclass(frozen=True, kw_only=True)
class RunStartedMsg(Message):
    type: ClassVar[str] = "run_started"
    run_id: str
    cell_id: str | None = None  # the %%rlm cell
    mode: Mode = "auto"
    question: str | None = None
    model: str = ""


@dataclass(frozen=True, kw_only=True)
class ProposeStep(Message):
    """One code block of the root's reply, to become a cell."""

    type: ClassVar[str] = "propose_step"
    run_id: str
    step: int
    code: str
    reply: str = ""  # the root's whole reply
    after_cell_id: str | None = None
    mode: Mode = "auto"  # for this step: "auto" runs it, "step" waits for the human
    reason: str = ""  # why it waits, under confirm-risky ("it imports subprocess")
    can_regenerate: bool = False  # whether it may be proposed again (none of its reply has run)


@dataclass(frozen=True, kw_only=True)
class StepExecuted(Message):
    type: ClassVar[str] = "step_executed"
    run_id: str
    step: int
    cell_id: str = ""
    edited: bool = False
    error: bool = False


@dataclass(frozen=True, kw_only=True)
class RunStateMsg(Message):
    """After set_mode, pause and resume."""

    type: ClassVar[str] = "run_state"
    run_id: str
    mode: Mode
    paused: bool
    waiting_for: int | None = None  # the step whose cell the run waits for
    can_regenerate: bool = False  # whether that step may be proposed again (none of its reply ran)


@dataclass(frozen=True, kw_only=True)
class EventsMsg(Message):
    """A batch of events (their JSON form), at most ten a second."""

    type: ClassVar[str] = "events"
    run_id: str
    events: list[dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class RootProgress(Message):
    """The root LM is writing: how many pieces (about tokens) of its reply have come."""

    type: ClassVar[str] = "root_progress"
    run_id: str
    turn: int
    tokens: int


@dataclass(frozen=True, kw_only=True)
class RunFinished(Message):
    type: ClassVar[str] = "run_finished"
    run_id: str
    answer: str | None = None
    answer_markdown: str | None = None  # the answer as safe Markdown for a cell (jupyter/safe.py)
    error: str | None = None
    stop: StopReason = "answer"  # why it ended: read this, never the error's text
    after_cell_id: str | None = None
    usage: str = ""


# -- front end → kernel ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Hello(Message):
    """The data of the front end's comm_open."""

    type: ClassVar[str] = "hello"
    frontend: str
    version: int


@dataclass(frozen=True, kw_only=True)
class CellInserted(Message):
    type: ClassVar[str] = "cell_inserted"
    run_id: str
    step: int
    cell_id: str


@dataclass(frozen=True, kw_only=True)
class CellOfRun(Message):
    """Sent before a cell with ``rlm`` metadata runs: the run its metadata names. A cell of another
    run than the active one (a finished run's, under Run All) runs as an ordinary cell."""

    type: ClassVar[str] = "cell_of_run"
    cell_id: str
    cell_run_id: str


@dataclass(frozen=True, kw_only=True)
class SetMode(Message):
    """For the active run; with no run active (``run_id`` null), for the next one."""

    type: ClassVar[str] = "set_mode"
    run_id: str | None = None
    mode: Mode


@dataclass(frozen=True, kw_only=True)
class Pause(Message):
    type: ClassVar[str] = "pause"
    run_id: str


@dataclass(frozen=True, kw_only=True)
class Resume(Message):
    type: ClassVar[str] = "resume"
    run_id: str


@dataclass(frozen=True, kw_only=True)
class Stop(Message):
    type: ClassVar[str] = "stop"
    run_id: str


@dataclass(frozen=True, kw_only=True)
class RegenerateMsg(Message):
    """Step mode: ask the root for another proposal for the waiting step, which has not run."""

    type: ClassVar[str] = "regenerate"
    run_id: str
    step: int


@dataclass(frozen=True, kw_only=True)
class HintMsg(Message):
    type: ClassVar[str] = "hint"
    run_id: str
    text: str


KERNEL_MESSAGES: tuple[type[Message], ...] = (
    Welcome,
    RunStartedMsg,
    ProposeStep,
    StepExecuted,
    RunStateMsg,
    EventsMsg,
    RootProgress,
    RunFinished,
)
FRONTEND_MESSAGES: tuple[type[Message], ...] = (
    Hello,
    CellInserted,
    CellOfRun,
    SetMode,
    Pause,
    Resume,
    Stop,
    HintMsg,
    RegenerateMsg,
)

# -- reading ---------------------------------------------------------------------------------------

# A field's type as the wire sees it: JSON types (string, number, boolean, null, object, array) and,
# for a Literal, the values it may take.
Wire = tuple[tuple[str, ...], tuple[Any, ...]]


def _wire(tp: Any) -> Wire:
    origin = typing.get_origin(tp)
    if origin is Literal:
        values = typing.get_args(tp)
        return tuple(sorted({_json_type(v) for v in values})), values
    if origin in (typing.Union, types.UnionType):
        kinds: list[str] = []
        values: tuple[Any, ...] = ()
        for arg in typing.get_args(tp):
            k, v = _wire(arg)
            kinds += [x for x in k if x not in kinds]
            values += v
        return tuple(kinds), values
    base = origin or tp
    if base is type(None):
        return ("null",), ()
    for py, name in ((bool, "boolean"), (str, "string"), (int, "number"), (float, "number")):
        if base is py:
            return (name,), ()
    if base in (list, tuple):
        return ("array",), ()
    if base is dict:
        return ("object",), ()
    raise TypeError(f"no wire type for {tp!r}")


def _json_type(value: Any) -> str:
    return {str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}[type(value)]


_NOTHING = object()


def fields_of(cls: type) -> list[tuple[str, Wire, Any]]:
    """(name, wire type, default or _NOTHING) of each field of an event or message class."""
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    out = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = _NOTHING
        if f.name == "ts":
            default = _NOTHING  # every event has its time
        out.append((f.name, _wire(hints[f.name]), default))
    return out


def _fits(value: Any, wire: Wire) -> bool:
    kinds, values = wire
    if values:
        return value in values or (value is None and "null" in kinds)
    if isinstance(value, bool):
        return "boolean" in kinds
    if isinstance(value, (int, float)):
        return "number" in kinds
    for kind, py in (("string", str), ("null", type(None)), ("object", dict), ("array", (list, tuple))):
        if isinstance(value, py):
            return kind in kinds
    return False


_FRONTEND = {cls.type: cls for cls in FRONTEND_MESSAGES}


def parse_frontend(data: Any) -> Message | None:
    """The front end's message, if it is one this kernel knows with every field well typed; else
    None (unknown types are ignored, as the protocol's versioning says)."""
    if not isinstance(data, dict) or (cls := _FRONTEND.get(data.get("type"))) is None:
        return None
    values = {}
    for name, wire, default in fields_of(cls):
        if name not in data:
            if default is _NOTHING:
                return None
            continue
        if not _fits(data[name], wire):
            return None
        values[name] = data[name]
    return cls(**values)


def version_problem(theirs: Any) -> str | None:
    """One line for the notebook when the extension speaks another protocol, else None."""
    if theirs == PROTOCOL_VERSION:
        return None
    spoken = "sent no protocol version" if theirs is None else f"speaks protocol {theirs}"
    return (
        f"the extension {spoken}, the kernel {PROTOCOL_VERSION}: reinstall rlm-kernel "
        "(pip install -U rlm-kernel), then restart the kernel and reload the page."
    )


# -- the TypeScript side ---------------------------------------------------------------------------

EVENTS: tuple[type[ev.Event], ...] = tuple(
    cls
    for cls in ev._KINDS.values()
    if cls is not ev.RootToken  # tokens never cross the comm
)


def _ts_type(wire: Wire) -> str:
    kinds, values = wire
    if values:
        parts = [f"'{v}'" if isinstance(v, str) else json.dumps(v) for v in values]
        if "null" in kinds and None not in values:
            parts.append("null")
        return " | ".join(parts)
    names = {
        "string": "string",
        "number": "number",
        "boolean": "boolean",
        "null": "null",
        "object": "Record<string, unknown>",
        "array": "unknown[]",
    }
    return " | ".join(names[k] for k in kinds)


def _interface(name: str, tag: str, tag_value: str, cls: type, base: str | None) -> list[str]:
    own = fields_of(cls)
    if base is not None:
        common = {f.name for f in dataclasses.fields(ev.Event)}
        own = [f for f in own if f[0] not in common]
    head = f"export interface {name} extends {base} {{" if base else f"export interface {name} {{"
    lines = [head, f"  {tag}: '{tag_value}';"]
    lines += [f"  {n}: {_ts_type(w)};" for n, w, _ in own]
    return [*lines, "}", ""]


def _schema_entry(cls: type, skip: frozenset[str] = frozenset(), indent: str = "  ") -> str:
    parts = []
    for name, (kinds, values), default in fields_of(cls):
        if name in skip:
            continue
        spec = {"types": list(kinds)}
        if values:
            spec["values"] = list(values)
        if default is not _NOTHING:
            spec["default"] = list(default) if isinstance(default, tuple) else default
        parts.append(f"{indent}  {name}: {json.dumps(spec)}")
    return "{\n" + ",\n".join(parts) + f"\n{indent}}}"


def _event_name(cls: type) -> str:
    return "WarningEvent" if cls is ev.RunWarning else f"{cls.__name__}Event"


def _message_name(cls: type) -> str:
    """The TypeScript name: every message type ends in ``Msg`` there."""
    return cls.__name__ if cls.__name__.endswith("Msg") else f"{cls.__name__}Msg"


def _ts_tuple(literal: Any) -> str:
    """A ``Literal``'s values as a TypeScript array, in their declared order."""
    return "[" + ", ".join(f"'{v}'" for v in typing.get_args(literal)) + "]"


def typescript() -> str:
    """``labextension/src/schema.ts``: the protocol's types and field tables, for the extension."""
    out = [
        "/**",
        " * The notebook-mode protocol, generated from rlm_kernel/messages.py and rlm_kernel/events.py:",
        " *",
        " *     python -m rlm_kernel.messages > labextension/src/schema.ts",
        " *",
        " * Do not edit: tests/unit/test_messages.py fails when this file and the Python disagree.",
        " */",
        "",
        f"export const PROTOCOL_VERSION = {PROTOCOL_VERSION};",
        f"export const COMM_TARGET = '{COMM_TARGET}';",
        "",
        "/** A finished run kept in its cell's output metadata: the key, and the record's version. */",
        f"export const SAVED_RUN_KEY = '{SAVED_RUN_KEY}';",
        f"export const SAVED_RUN_VERSION = {SAVED_RUN_VERSION};",
        "",
        "/** The permission ladder, most autonomous first (a run's mode). */",
        f"export const MODES = {_ts_tuple(Mode)} as const;",
        "export type Mode = (typeof MODES)[number];",
        "",
        "/** Why a run ended (RunEnded.stop): read this, never the error's text. */",
        f"export const STOP_REASONS = {_ts_tuple(StopReason)} as const;",
        "export type StopReason = (typeof STOP_REASONS)[number];",
        "",
        "/** A field on the wire: its JSON types, the values a literal may take, and its default",
        " * (a field with a default may be missing, from an older peer). */",
        "export interface FieldSpec {",
        "  types: string[];",
        "  values?: unknown[];",
        "  default?: unknown;",
        "}",
        "",
        "/** Fields every event carries. */",
        "export interface EventBase {",
    ]
    out += [f"  {n}: {_ts_type(w)};" for n, w, _ in fields_of(ev.Event)]
    out += ["}", ""]
    for cls in EVENTS:
        out += _interface(_event_name(cls), "kind", cls.kind, cls, "EventBase")
    out += ["export type RLMEvent =", *[f"  | {_event_name(c)}" for c in EVENTS]]
    out[-1] += ";"
    out += ["", "export type EventKind = RLMEvent['kind'];", ""]
    for cls in (*KERNEL_MESSAGES, *FRONTEND_MESSAGES):
        if cls is EventsMsg:
            out += [
                "export interface EventsMsg {",
                "  type: 'events';",
                "  run_id: string;",
                "  events: RLMEvent[];",
                "}",
                "",
            ]
            continue
        out += _interface(_message_name(cls), "type", cls.type, cls, None)
    out += ["export type KernelMsg =", *[f"  | {_message_name(c)}" for c in KERNEL_MESSAGES]]
    out[-1] += ";"
    front = [c for c in FRONTEND_MESSAGES if c is not Hello]
    out += ["", "export type FrontendMsg =", *[f"  | {_message_name(c)}" for c in front]]
    out[-1] += ";"
    out += [
        "",
        f"export const EVENT_BASE: Record<string, FieldSpec> = {_schema_entry(ev.Event, indent='')};",
        "",
    ]
    out += ["export const EVENT_FIELDS: Record<EventKind, Record<string, FieldSpec>> = {"]
    common = frozenset(f.name for f in dataclasses.fields(ev.Event))
    for cls in EVENTS:
        out.append(f"  {cls.kind}: {_schema_entry(cls, common)},")
    out[-1] = out[-1].rstrip(",")
    out += ["};", ""]
    out += ["export const KERNEL_FIELDS: Record<KernelMsg['type'], Record<string, FieldSpec>> = {"]
    for cls in KERNEL_MESSAGES:
        out.append(f"  {cls.type}: {_schema_entry(cls)},")
    out[-1] = out[-1].rstrip(",")
    out += ["};", ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(typescript())
