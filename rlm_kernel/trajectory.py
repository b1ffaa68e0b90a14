"""Trajectories on disk: a JSONL file with one event a line, appended and flushed as it happens.

The file never holds the context's value (events carry only its metadata) nor an
API key. Streamed token deltas are not written: the reply event that follows
carries the whole text.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .events import Event, RootToken, event_from_dict

__all__ = ["TrajectoryWriter", "load", "iter_events", "default_log_dir"]


def default_log_dir() -> Path:
    """``$RLM_LOG_DIR``, else ``~/.rlm_kernel/runs``."""
    env = os.environ.get("RLM_LOG_DIR")
    return Path(env) if env else Path.home() / ".rlm_kernel" / "runs"


class TrajectoryWriter:
    """A bus subscriber that appends each event to ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    @classmethod
    def in_dir(cls, log_dir: str | os.PathLike[str], run_id: str) -> TrajectoryWriter:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        return cls(Path(log_dir) / f"rlm-{stamp}-{run_id}.jsonl")

    def __call__(self, event: Event) -> None:
        if isinstance(event, RootToken):
            return
        line = json.dumps(event.to_dict(), ensure_ascii=False, default=str)
        with self._lock:
            if self._file is None:
                return
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def iter_events(path: str | os.PathLike[str]) -> Iterator[Event]:
    """Events of a trajectory file; a half-written last line (a crash mid-write) is skipped."""
    with Path(path).open(encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue
            yield event_from_dict(data)


def load(path: str | os.PathLike[str]) -> list[Event]:
    """Read a run back from its JSONL trajectory."""
    return list(iter_events(path))
