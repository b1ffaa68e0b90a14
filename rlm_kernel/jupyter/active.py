"""The kernel's one run in progress, whichever view shows it.

A ``%rlm`` / ``%%rlm`` run in its cell and a notebook-mode run are claimed here; ``%rlm stop``,
``%rlm hint``, the widget's Stop button and the front end's controls reach the run through it. The
RLM Python kernel owns one and hands it to the magics and to notebook mode; in a plain IPython the
magics make their own.
"""

from __future__ import annotations

from typing import Protocol

from IPython.core.error import UsageError

__all__ = ["Active", "ActiveRun"]


class Active(Protocol):
    """A run in progress, as ``%rlm stop`` and ``%rlm hint`` see it."""

    def stop(self) -> None: ...
    def hint(self, text: str) -> None: ...


class ActiveRun:
    """Holds at most one run; a second is refused in one line."""

    def __init__(self) -> None:
        self.run: Active | None = None

    def check_free(self) -> None:
        """A one-line error while a run is in progress (before a new one opens its trajectory)."""
        if self.run is not None:
            raise UsageError("An RLM run is active in this notebook: finish it, or %rlm stop, first.")

    def claim(self, run: Active) -> None:
        self.check_free()
        self.run = run

    def release(self, run: Active) -> None:
        if self.run is run:
            self.run = None

    def stop(self) -> bool:
        """Stop the run in progress; False when there is none."""
        if self.run is None:
            return False
        self.run.stop()
        return True

    def hint(self, text: str) -> bool:
        """Guidance for the run's next root turn; False when there is no run."""
        if self.run is None:
            return False
        self.run.hint(text)
        return True
