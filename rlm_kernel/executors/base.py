"""The executor port: where the root's code runs and the REPL's names live.

The driver core talks to an executor only through this port, so the code may run in a dict of this
process (:class:`~rlm_kernel.executors.local.LocalExecutor`) or in a kernel elsewhere, whose
sub-calls come back as requests. An executor binds the scaffold's names, runs one step, and reports
the step's output together with what it did to the answer and to the reserved names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..protocol import FinalDirective

__all__ = ["ExecResult", "StepOutcome", "Executor", "RemoteContext"]


@dataclass(frozen=True)
class ExecResult:
    stdout: str = ""
    stderr: str = ""
    value: str | None = None  # repr of a last bare expression, as IPython would display it
    error: str | None = None  # compact traceback, no colour
    elapsed_s: float = 0.0

    def text(self) -> str:
        """Everything the root should see, in reading order."""
        return self.printed() + (self.error or "")

    def printed(self) -> str:
        """What the code itself wrote (its error aside): what can support an answer."""
        parts = [p for p in (self.stdout, self.stderr) if p]
        if self.value is not None:
            parts.append(self.value + "\n")
        return "".join(parts)


@dataclass(frozen=True)
class StepOutcome:
    """A step's result and the state of the REPL after it: the answer, and names put back."""

    result: ExecResult
    answer_ready: bool = False
    answer: str = ""
    restored: tuple[str, ...] = ()


@dataclass(frozen=True)
class RemoteContext:
    """A context that lives in the executor (a child's, made by the code in a kernel): the host
    holds its name there and the description the root is shown."""

    ref: str
    meta: Mapping[str, Any]

    @property
    def __rlm_metadata__(self) -> Mapping[str, Any]:
        return self.meta


@runtime_checkable
class Executor(Protocol):
    def bind(
        self,
        context: Any,
        subcalls: Any | None,
        helpers: Mapping[str, Callable[..., Any]] | None,
        stop_when: Callable[[], bool] | None = None,
    ) -> None:
        """Put the run's names (``context``, the sub-call functions, ``answer``, ...) in place; a
        step still running when ``stop_when()`` holds (Stop, ``cancel()``, ``max_timeout``) is ended."""

    def execute(self, code: str, *, step: int) -> StepOutcome:
        """Run one step and settle the REPL after it."""

    def resolve(self, directive: FinalDirective) -> tuple[str | None, str | None]:
        """The value a FINAL or FINAL_VAR names: (content, problem)."""

    def close(self) -> list[str]:
        """Give the user's own values back under the reserved names; returns the names restored."""

    def child(self, tag: str) -> Executor:
        """The executor of a child run (``rlm_query``): a namespace of its own, in the same place."""

    def describe(self) -> dict[str, Any]:
        """Where the code runs and which limits hold it there, for the run's settings event."""
