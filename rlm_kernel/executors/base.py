"""The executor port: runs one step of code in a namespace and reports what happened."""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["ExecResult", "Executor"]


@dataclass(frozen=True)
class ExecResult:
    stdout: str = ""
    stderr: str = ""
    value: str | None = None  # repr of a last bare expression, as IPython would display it
    error: str | None = None  # compact traceback, no colour
    elapsed_s: float = 0.0

    def text(self) -> str:
        """Everything the root should see, in reading order."""
        parts = [p for p in (self.stdout, self.stderr) if p]
        if self.value is not None:
            parts.append(self.value + "\n")
        if self.error:
            parts.append(self.error)
        return "".join(parts)


@runtime_checkable
class Executor(Protocol):
    namespace: MutableMapping[str, Any]

    def execute(self, code: str, *, step: int) -> ExecResult: ...
