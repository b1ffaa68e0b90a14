"""What a run gives its caller: :class:`RLMResult`, made by closing the :class:`OpenRun` it ran as."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .config import RLMConfig
from .engine import Finish
from .errors import RLMError
from .events import Event, EventBus, RunStarted, RunWarning
from .reference import Translated, UsageSummary, trajectory_of
from .run_tree import RunParts
from .runtime import close_quietly
from .trajectory import TrajectoryWriter
from .typed import output_type
from .usage import Usage, summarize
from .votes import Vote

__all__ = ["RLMResult", "OpenRun"]

log = logging.getLogger("rlm_kernel")


@dataclass
class RLMResult:
    """What a run produced. ``error`` is set when it ended without a clean answer (the partial
    response, if any, is kept in ``response``). With ``output_type``, ``response`` is the typed
    value (the trajectory keeps its JSON); where it failed validation, the answer as committed."""

    response: Any
    error: str | None
    iterations: int
    usage: Usage
    trajectory: list[Event] = field(repr=False)
    log_path: Path | None
    execution_time: float
    run_id: str
    restored_names: list[str] = field(default_factory=list)  # the caller's own values put back
    warnings: list[str] = field(default_factory=list)  # what a reader should know: see RunWarning
    exception: RLMError | None = field(default=None, repr=False)  # what ended the run, if an error did
    metadata: dict[str, Any] | None = field(default=None, repr=False)  # the reference's, with a logger
    # Several roots answered and voted (``votes``): their count. The run above is the winner's;
    # ``usage`` is all the roots' together.
    votes: Vote | None = field(default=None, repr=False)

    def __str__(self) -> str:
        return str(self.response) if self.response is not None else f"(no answer: {self.error})"

    @property
    def ok(self) -> bool:
        """An answer, with no error, and, where roots voted, a clear vote (a split is a
        ``low_confidence`` warning: the answer is the plurality's, and may be wrong)."""
        clear = self.votes is None or self.votes.clear
        return self.error is None and self.response is not None and clear

    def raise_for_error(self) -> RLMResult:
        """Raise what ended the run (``BudgetExceededError``, ``TimeoutExceededError``, ...: the
        reference's names), carrying the partial response as ``partial_answer``; else the result."""
        if self.exception is not None:
            self.exception.partial_answer = self.response
            raise self.exception
        if self.error is not None:
            raise RLMError(self.error)
        return self

    # The reference's names for the same figures.
    @property
    def usage_summary(self) -> UsageSummary:
        """Usage by model, as the reference gives it (``model_usage_summaries``)."""
        return UsageSummary.of(self.usage)

    @property
    def root_model(self) -> str:
        return next((e.model for e in self.trajectory if isinstance(e, RunStarted)), "unknown")


class Opener(Protocol):
    """What an open run asks of the :class:`~rlm_kernel.rlm.RLM` that opened it."""

    config: RLMConfig
    _reference: Translated

    def _closed(self, parts: RunParts) -> None: ...


class OpenRun:
    """A prepared run: its parts for a driver, and ``close(finish)`` to release them and get the result."""

    def __init__(
        self,
        rlm: Opener,
        parts: RunParts,
        events: list[Event],
        writer: TrajectoryWriter | None,
        bus: EventBus | None = None,
    ) -> None:
        self.rlm = rlm
        self.parts = parts
        self.events = events
        self.writer = writer
        self.bus = bus or parts.tree.bus
        self.started = time.perf_counter()

    def abandon(self) -> None:
        """Release a run that was never driven (another root of its vote failed to open)."""
        self.rlm._closed(self.parts)
        try:
            self.parts.executor.close()
        finally:
            self.parts.tree.close()
            if self.writer:
                self.writer.close()

    def close(self, finish: Finish, *, keep_executor: bool = False) -> RLMResult:
        """The result; the executor is closed unless ``keep_executor`` (a session's next question).
        A kernel that will not shut down cleanly does not cost the result."""
        self.rlm._closed(self.parts)
        restored: list[str] = []
        if not keep_executor:
            restored = close_quietly(self.parts.executor.close, "the executor", log=log) or []
        self.parts.tree.close()
        error, response = finish.error, finish.response
        declared = output_type(self.rlm.config.output_type)
        if declared is not None and response is not None and error is None:
            response = declared.load(response)
        if self.writer:
            self.writer.close()
            if self.writer.error:  # the answer stands; the record of it is incomplete
                error = f"{error}; {self.writer.error}" if error else self.writer.error
        return RLMResult(
            response=response,
            error=error,
            iterations=self.parts.run.iterations,
            usage=summarize(self.events),
            trajectory=self.events,
            log_path=self.writer.path if self.writer else None,
            execution_time=time.perf_counter() - self.started,
            run_id=self.parts.run.run_id,
            restored_names=restored,
            warnings=[e.text for e in self.events if isinstance(e, RunWarning) and e.depth == 0],
            exception=finish.cause,
            metadata=trajectory_of(self.events) if self.rlm._reference.logger is not None else None,
        )
