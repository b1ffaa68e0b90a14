"""Limits that hold across a whole run tree: dollars, tokens and wall-clock time.

The budget subscribes to the event bus, so it counts exactly what the usage
summary counts, children included. A call of unknown cost counts no dollars, so a
dollar limit first checks that every model it will meet has a price
(:meth:`Budget.require_prices`): else ``max_budget`` would silently never stop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from .errors import (
    BudgetExceeded,
    BudgetExceededError,
    ConfigError,
    TimeoutExceededError,
    TokenLimitExceededError,
)
from .events import Event
from .usage import Price, is_lm_call, price_for

__all__ = ["Budget"]


class Budget:
    """The limits of one run tree, and what it has used of them so far."""

    def __init__(
        self, max_cost: float | None = None, max_tokens: int | None = None, max_timeout: float | None = None
    ) -> None:
        self.max_cost = max_cost
        self.max_tokens = max_tokens
        self.max_timeout = max_timeout
        self.started = time.monotonic()
        self.cost = 0.0
        self.tokens = 0
        self._lock = threading.Lock()

    def observe(self, event: Event) -> None:
        """Bus subscriber: charge every LM call that finished."""
        if is_lm_call(event):
            with self._lock:
                self.tokens += event.input_tokens + event.output_tokens
                if event.cost is not None:
                    self.cost += event.cost

    def require_prices(
        self, models: Iterable[str], price_of: Callable[[str], Price | None] = price_for
    ) -> None:
        """Raise :class:`~rlm_kernel.errors.ConfigError` when there is a dollar limit and one of
        ``models`` has no price (``price_of``: a client's, e.g. ``functools.partial(lm.base.price_of,
        lm)``; by default the process-wide table's). Call it before the first LM call of a run."""
        if self.max_cost is None:
            return
        for model in models:
            if price_of(model) is None:
                raise ConfigError(
                    f"max_budget needs a price for model {model!r}: pass "
                    f"prices={{{model!r}: (input, output)}} in backend_kwargs (US dollars per million "
                    f"tokens) or call rlm_kernel.usage.set_price({model!r}, input, output)."
                )

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def time_left(self) -> float | None:
        return None if self.max_timeout is None else self.max_timeout - self.elapsed

    def exceeded(self) -> BudgetExceeded | None:
        with self._lock:
            if self.max_cost is not None and self.cost >= self.max_cost:
                return BudgetExceededError(round(self.cost, 6), self.max_cost)
            if self.max_tokens is not None and self.tokens >= self.max_tokens:
                return TokenLimitExceededError(self.tokens, self.max_tokens)
        if self.max_timeout is not None and self.elapsed >= self.max_timeout:
            return TimeoutExceededError(round(self.elapsed, 2), self.max_timeout)
        return None

    def check(self) -> None:
        if (error := self.exceeded()) is not None:
            raise error
