"""Limits that hold across a whole run tree: dollars, tokens and wall-clock time.

The budget subscribes to the event bus, so it counts exactly what the usage
summary counts, children included.
"""

from __future__ import annotations

import threading
import time

from .errors import BudgetExceeded
from .events import Event, RootReply, SubcallFinished

__all__ = ["Budget"]


class Budget:
    def __init__(
        self, max_cost: float | None = None, max_tokens: int | None = None, max_timeout: float | None = None
    ) -> None:
        self.max_cost = max_cost
        self.max_tokens = max_tokens
        self.max_timeout = max_timeout
        self.started = time.monotonic()
        self.cost = 0.0
        self.tokens = 0
        self.unpriced_calls = 0
        self._lock = threading.Lock()

    def observe(self, event: Event) -> None:
        """Bus subscriber: charge every LM call that finished."""
        if isinstance(event, RootReply) or (isinstance(event, SubcallFinished) and event.call_kind == "llm"):
            with self._lock:
                self.tokens += event.input_tokens + event.output_tokens
                if event.cost is None:
                    self.unpriced_calls += 1
                else:
                    self.cost += event.cost

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def time_left(self) -> float | None:
        return None if self.max_timeout is None else self.max_timeout - self.elapsed

    def exceeded(self) -> BudgetExceeded | None:
        with self._lock:
            if self.max_cost is not None and self.cost >= self.max_cost:
                return BudgetExceeded("max_budget ($)", round(self.cost, 6), self.max_cost)
            if self.max_tokens is not None and self.tokens >= self.max_tokens:
                return BudgetExceeded("max_tokens", self.tokens, self.max_tokens)
        if self.max_timeout is not None and self.elapsed >= self.max_timeout:
            return BudgetExceeded("max_timeout (s)", round(self.elapsed, 2), self.max_timeout)
        return None

    def check(self) -> None:
        if (error := self.exceeded()) is not None:
            raise error
