"""Trajectories on disk: a JSONL file with one event a line, appended and flushed as it happens.

The file never holds the context's value (events carry only its metadata) nor an
API key. Streamed token deltas are not written: the reply event that follows
carries the whole text.

Every line is strict JSON (RFC 8259), whatever numbers the code made: a float JSON has no form for
(``inf``, ``-inf``, ``nan``: in a context's description, an elapsed time a kernel reported) is
written as ``null``, as JavaScript's ``JSON.stringify`` writes it, so that any parser reads the file.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import RLMError
from .events import Event, RootToken, event_from_dict

__all__ = [
    "TrajectoryWriter",
    "load",
    "TrajectoryError",
    "iter_events",
    "default_log_dir",
    "notebook_metadata",
    "from_notebook",
    "NOTEBOOK_KEY",
    "SAVED_RUN_KEY",
    "SAVED_RUN_VERSION",
    "saved_run_problem",
    "strict_json",
    "finite",
]

# A finished run kept in its cell's output metadata (``trajectory.notebook_metadata``): the key, and
# the record's version. A reader reads its own version and older ones alike; a newer one it refuses.
SAVED_RUN_KEY = "rlm_kernel"
SAVED_RUN_VERSION = 1
NOTEBOOK_KEY = SAVED_RUN_KEY  # output metadata key under which a run's events are kept in a notebook


def default_log_dir() -> Path:
    """``$RLM_LOG_DIR``, else ``~/.rlm_kernel/runs``."""
    env = os.environ.get("RLM_LOG_DIR")
    return Path(env) if env else Path.home() / ".rlm_kernel" / "runs"


def finite(value: Any) -> Any:
    """``value`` with each float JSON has no form for (inf, -inf, nan), in it or in the lists,
    tuples and dicts it holds, made None (a dict key, its text: JSON's keys are strings)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, dict):
        return {
            (str(k) if isinstance(k, float) and not math.isfinite(k) else k): finite(v)
            for k, v in value.items()
        }
    return value


def strict_json(value: Any, **dumps: Any) -> str:
    """``json.dumps(value, **dumps)`` that a strict parser reads: non-finite floats as ``null``
    (:func:`finite`). Values without them are written as they are, in one pass."""
    try:
        return json.dumps(value, allow_nan=False, **dumps)
    except ValueError as exc:
        if "Out of range float" not in str(exc):  # a circular reference, say: not ours to mend
            raise
    return json.dumps(finite(value), allow_nan=False, **dumps)


class TrajectoryWriter:
    """A bus subscriber that appends each event to ``path``, a whole line at a time: a line that does
    not fit (a full disk) is taken back, so the file always ends with a whole event."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._lock = threading.Lock()
        self.error: str | None = None  # the first write that failed (a full disk), for the run's result

    @classmethod
    def in_dir(cls, log_dir: str | os.PathLike[str], run_id: str) -> TrajectoryWriter:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        return cls(Path(log_dir) / f"rlm-{stamp}-{run_id}.jsonl")

    def __call__(self, event: Event) -> None:
        if isinstance(event, RootToken):
            return
        line = strict_json(event.to_dict(), ensure_ascii=False, default=str) + "\n"
        # A lone surrogate (code printed "\udcff") is written as its JSON escape, and read back as it was.
        data = line.encode("utf-8", "backslashreplace")
        with self._lock:
            if self._fd is None or self.error is not None:
                return
            end = os.fstat(self._fd).st_size
            try:
                written = 0
                while written < len(data):
                    written += os.write(self._fd, data[written:])
            except OSError as exc:
                with contextlib.suppress(OSError):  # not a file (/dev/full, a pipe): nothing to take back
                    os.ftruncate(self._fd, end)  # no half line: the file ends with the last whole event
                self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        """Keep the first failure (a full disk fails every write after it): the run reports it once."""
        if self.error is None:
            self.error = f"the trajectory could not be written to {self.path}: {exc.strerror or exc}"

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class TrajectoryError(RLMError, ValueError):
    """A line of a trajectory file, other than a half-written last one, is not an event."""


def _event(raw: bytes) -> Event:
    data = json.loads(raw.decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"a JSON {type(data).__name__}, not an object")
    return event_from_dict(data)


def iter_events(path: str | os.PathLike[str]) -> Iterator[Event]:
    """Events of a trajectory file; a half-written last line (a crash mid-write) is skipped.

    Raises ``TrajectoryError`` (file and line number) for a bad line anywhere else."""
    bad: tuple[int, Exception] | None = None
    with Path(path).open("rb") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            if bad is not None:  # the bad line was not the last
                raise _error(path, *bad) from bad[1]
            try:
                event = _event(raw)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                bad = (number, exc)  # fine if it turns out to be the last line
                continue
            except (ValueError, KeyError, TypeError) as exc:
                raise _error(path, number, exc) from exc
            yield event


def _error(path: str | os.PathLike[str], number: int, exc: Exception) -> TrajectoryError:
    if isinstance(exc, json.JSONDecodeError):
        reason = f"invalid JSON: {exc.msg} at column {exc.colno}"
    elif isinstance(exc, UnicodeDecodeError):
        reason = "invalid UTF-8"
    elif isinstance(exc, KeyError):
        reason = f"unknown or missing kind {exc}"
    else:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return TrajectoryError(f"{path}, line {number}: not a trajectory event ({reason})")


def load(path: str | os.PathLike[str]) -> list[Event]:
    """Read a run back from its JSONL trajectory (see ``iter_events``)."""
    return list(iter_events(path))


def saved_run_problem(version: Any) -> str | None:
    """One line when a saved run's record is newer than this reader, else None (older: read as is)."""
    if isinstance(version, int) and version > SAVED_RUN_VERSION:
        return (
            f"This run was saved by a newer rlm-kernel (record version {version}; this one reads "
            f"up to {SAVED_RUN_VERSION}): upgrade rlm-kernel to read it."
        )
    return None


def notebook_metadata(events: list[Event]) -> dict[str, Any]:
    """Output metadata that keeps a run's trajectory inside the notebook itself."""
    kept = [finite(e.to_dict()) for e in events if not isinstance(e, RootToken)]
    return {NOTEBOOK_KEY: {"version": SAVED_RUN_VERSION, "events": kept}}


def from_notebook(path: str | os.PathLike[str]) -> list[Event]:
    """Rebuild the trajectories of every run saved in a notebook (``.ipynb``), in cell order.

    Each ``%%rlm`` cell's final output carries its run's events, human edits and human steps
    included, whether the steps ran as cells of their own (notebook mode) or in that cell.
    """
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    events: list[Event] = []
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            kept = (output.get("metadata") or {}).get(NOTEBOOK_KEY)
            if not isinstance(kept, dict):
                continue
            if (problem := saved_run_problem(kept.get("version"))) is not None:
                raise TrajectoryError(f"{path}: {problem}")
            events.extend(event_from_dict(e) for e in kept.get("events", []))
    return events
