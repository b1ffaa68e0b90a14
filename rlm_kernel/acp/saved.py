"""ACP sessions kept on disk, for ``session/load`` in this process or a later one.

A session's record is one JSON file, ``<folder>/<session id>.json``, rewritten whole (and atomically)
after each prompt. It holds what the chat showed (each prompt's text and attachments, as links,
and the answer), the session's mode, its working folder, its context as the last prompt left it,
and for each prompt the id and trajectory file of its run. It holds no conversation of its own:
the conversation the root goes on from is rebuilt from the runs' trajectories, the project's own
record of a run (:mod:`rlm_kernel.trajectory`), as :mod:`rlm_kernel.rewind` rebuilds a branch's.

Every text a record holds passes the agent's redactor first (the context too): a key is never
written. Trajectories are already redacted by the run that writes them.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from acp.schema import (
    EmbeddedResourceContentBlock,
    ResourceContentBlock,
    TextContentBlock,
)

from ..engine import Followup
from ..errors import RLMError
from ..events import Compacted, Event, ProposalRejected, RootReply, RootRequest, RunStarted
from ..secrets import Redactor
from ..trajectory import iter_events
from .blocks import file_path

__all__ = [
    "RECORD_VERSION",
    "Record",
    "SavedTurn",
    "SessionStore",
    "followup_of",
    "shown_blocks",
    "saved_context",
    "context_of",
]

RECORD_VERSION = 1
# The ids the agent makes (``rlm-`` and 12 hex digits): nothing else names a file in the folder.
_ID = re.compile(r"rlm-[0-9a-f]{12}")


@dataclass
class SavedTurn:
    """One prompt as the chat showed it, and the run that answered it (None: no run began)."""

    user: list[dict[str, Any]]  # the prompt's content blocks, as JSON; attachments as links
    answer: str  # the agent message the chat was sent
    run_id: str | None = None
    trajectory: str | None = None


@dataclass
class Record:
    session_id: str
    cwd: str
    mode: str
    context: Any = None  # saved_context(): None until a prompt gave the session one
    turns: list[SavedTurn] = field(default_factory=list)
    version: int = RECORD_VERSION


class RecordError(RLMError):
    """A saved session that cannot be read back: not JSON, another shape, a newer version."""


class SessionStore:
    """The folder of saved sessions."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def path(self, session_id: str) -> Path | None:
        """The record's file; None for an id the agent never makes (no path outside the folder)."""
        return self.folder / f"{session_id}.json" if _ID.fullmatch(session_id) else None

    def save(self, record: Record) -> None:
        self.write(record.session_id, asdict(record))

    def write(self, session_id: str, data: dict[str, Any]) -> None:
        """Write a record (``asdict`` of it, taken where it is changed) whole: a new file renamed
        over the old, readable by its owner alone."""
        path = self.path(session_id)
        if path is None:
            raise ValueError(f"not a session id of this agent: {session_id!r}")
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=self.folder, prefix=f".{session_id}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, ensure_ascii=False)
            os.replace(temp, path)
        finally:  # written: the name is gone already; else the half-written file goes
            with contextlib.suppress(OSError):
                os.unlink(temp)

    def load(self, session_id: str) -> Record | None:
        """The saved session; None when there is none. A record that cannot be read: RecordError."""
        path = self.path(session_id)
        if path is None or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise TypeError(f"a JSON {type(data).__name__}, not an object")
            version = data.get("version", RECORD_VERSION)
            if not isinstance(version, int) or version > RECORD_VERSION:
                raise RecordError(
                    f"{path} was saved by a newer rlm-kernel (record version {version}; this one "
                    f"reads up to {RECORD_VERSION})"
                )
            turns = [SavedTurn(**turn) for turn in data.pop("turns", [])]
            return Record(**data, turns=turns)
        except RecordError:
            raise
        except (OSError, UnicodeDecodeError, ValueError, TypeError) as exc:
            raise RecordError(f"{path} is not a saved session ({exc})") from None


# -- what the record holds -------------------------------------------------------------------------
def shown_blocks(blocks: list[Any], redact: Redactor) -> list[dict[str, Any]]:
    """A prompt's blocks as the record keeps them for the replay: text (redacted) as it was, and
    each attachment as a link to it (its text is in the context, not twice); others left out."""
    kept: list[Any] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            kept.append(TextContentBlock(type="text", text=redact.text(block.text)))
        elif isinstance(block, EmbeddedResourceContentBlock):
            uri = block.resource.uri
            name = Path(file_path(uri) or uri).name or uri
            kept.append(ResourceContentBlock(type="resource_link", name=name, uri=uri))
        elif isinstance(block, ResourceContentBlock):
            kept.append(ResourceContentBlock(type="resource_link", name=block.name, uri=block.uri))
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in kept]


def saved_context(context: Any, redact: Redactor) -> Any:
    """The context as JSON, redacted: a text, bytes (``{"base64": ...}``), or a dict of them."""
    if isinstance(context, dict):
        return {"files": {str(k): saved_context(v, redact) for k, v in context.items()}}
    if isinstance(context, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(context)).decode("ascii")}
    if context is None:
        return None
    return redact.text(context if isinstance(context, str) else str(context))


def context_of(saved: Any) -> Any:
    """The context :func:`saved_context` wrote, back."""
    if isinstance(saved, dict) and "files" in saved:
        return {k: context_of(v) for k, v in saved["files"].items()}
    if isinstance(saved, dict) and "base64" in saved:
        return base64.b64decode(saved["base64"])
    return saved


# -- the conversation, from the trajectories ---------------------------------------------------------
def followup_of(trajectories: list[tuple[str, str]]) -> Followup | None:
    """Where the session's next question starts, as its last run left it: the conversation rebuilt
    from that run's trajectory, as :func:`rlm_kernel.rewind.branch_at` rebuilds a branch's, and the
    notes of the session's last compaction, from whichever run made it. ``trajectories`` are the
    session's runs in order, (run id, file). None when the last run's file cannot be read."""
    compacted: Compacted | None = None
    own: list[Event] = []
    for n, (run_id, path) in enumerate(trajectories):
        try:
            events = [e for e in iter_events(path) if e.run_id == run_id]
        except (OSError, RLMError):
            events = []
        if n == len(trajectories) - 1:
            own = events
        compacted = next((e for e in reversed(events) if isinstance(e, Compacted)), compacted)
    started = next((e for e in own if isinstance(e, RunStarted)), None)
    if started is None:
        return None
    fixed = started.fixed or len(started.prompt) + 1
    opening = started.opening or next((e.content for e in own if isinstance(e, RootRequest)), "")
    return Followup(
        started.session or "",
        started.run_id,
        tuple(_conversation(started, own, fixed)),  # type: ignore[arg-type]
        fixed,
        opening,
        compacted.summary if compacted is not None else None,
        tuple(compacted.names) if compacted is not None else (),
    )


def _conversation(started: RunStarted, own: list[Event], fixed: int) -> list[dict[str, Any]]:
    """The root's conversation as the run ended: its start, then each request and reply; a
    compaction's notes in place of older turns; a reply set aside taken out."""
    messages: list[dict[str, Any]] = [dict(m) for m in started.prompt]
    for event in own:
        if isinstance(event, RootRequest):
            messages.append({"role": "user", "content": event.content})
        elif isinstance(event, RootReply):
            messages.append({"role": "assistant", "content": event.text})
        elif isinstance(event, Compacted):
            messages = [*messages[: fixed - 1], *(dict(m) for m in event.messages)]
        elif isinstance(event, ProposalRejected) and messages and messages[-1]["role"] == "assistant":
            del messages[-3 if event.rewound else -1 :]
            if event.added:
                messages[-1] = {**messages[-1], "content": f"{messages[-1]['content']}\n\n{event.added}"}
    return messages
