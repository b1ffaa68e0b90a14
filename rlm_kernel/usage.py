"""Tokens and cost, derived from events: one source of truth, children included.

Prices are US dollars per million tokens. A model missing from the table has an
unknown cost (``None``), never zero. Add your own with :func:`set_price`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .events import Event, RootReply, SubcallFinished

__all__ = ["Price", "PRICES", "set_price", "price_for", "cost_of", "Tally", "Usage", "summarize"]


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cached_input: float | None = None  # None: cached tokens cost the same as input


# Public list prices, USD per 1M tokens. Matched by longest prefix of the model name.
PRICES: dict[str, Price] = {
    "gpt-5": Price(1.25, 10.0, 0.125),
    "gpt-5-mini": Price(0.25, 2.0, 0.025),
    "gpt-5-nano": Price(0.05, 0.40, 0.005),
    "gpt-4.1": Price(2.0, 8.0, 0.5),
    "gpt-4.1-mini": Price(0.4, 1.6, 0.1),
    "gpt-4.1-nano": Price(0.1, 0.4, 0.025),
    "gpt-4o": Price(2.5, 10.0, 1.25),
    "gpt-4o-mini": Price(0.15, 0.6, 0.075),
    "o3": Price(2.0, 8.0, 0.5),
    "o4-mini": Price(1.1, 4.4, 0.275),
    "claude-opus-4-1": Price(15.0, 75.0, 1.5),
    "claude-opus-4-5": Price(5.0, 25.0, 0.5),
    "claude-sonnet-4": Price(3.0, 15.0, 0.3),
    "claude-haiku-4-5": Price(1.0, 5.0, 0.1),
    "claude-3-5-haiku": Price(0.8, 4.0, 0.08),
}


def set_price(model: str, input: float, output: float, cached_input: float | None = None) -> None:
    """Register or override the price of a model (or of every model starting with ``model``)."""
    PRICES[model] = Price(input, output, cached_input)


def price_for(model: str) -> Price | None:
    best = max((k for k in PRICES if model == k or model.startswith(k)), key=len, default=None)
    return PRICES[best] if best is not None else None


def cost_of(model: str, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float | None:
    price = price_for(model)
    if price is None:
        return None
    cached_rate = price.input if price.cached_input is None else price.cached_input
    fresh = max(input_tokens - cached_tokens, 0)
    return (fresh * price.input + cached_tokens * cached_rate + output_tokens * price.output) / 1e6


@dataclass
class Tally:
    """Calls, tokens and cost of a group of LM calls. ``cost`` is None if any call's cost is unknown."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = 0.0

    def add(self, input_tokens: int, output_tokens: int, cached_tokens: int, cost: float | None) -> None:
        self.calls += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.cached_tokens += cached_tokens
        self.cost = None if cost is None or self.cost is None else self.cost + cost

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class Usage:
    """Usage of a whole run tree. ``root`` is the top-level root LM; ``sub`` is everything else
    (``llm_query`` calls at any depth and the root LMs of child runs)."""

    total: Tally = field(default_factory=Tally)
    root: Tally = field(default_factory=Tally)
    sub: Tally = field(default_factory=Tally)
    by_model: dict[str, Tally] = field(default_factory=dict)
    by_depth: dict[int, Tally] = field(default_factory=dict)

    def add(self, event: RootReply | SubcallFinished) -> None:
        args = (event.input_tokens, event.output_tokens, event.cached_tokens, event.cost)
        is_root = isinstance(event, RootReply) and event.depth == 0
        for tally in (
            self.total,
            self.root if is_root else self.sub,
            self.by_model.setdefault(event.model, Tally()),
            self.by_depth.setdefault(event.depth, Tally()),
        ):
            tally.add(*args)

    def __str__(self) -> str:
        cost = "unknown" if self.total.cost is None else f"${self.total.cost:.4f}"
        return (
            f"{self.total.calls} LM calls ({self.root.calls} root, {self.sub.calls} sub), "
            f"{self.total.input_tokens:,} in / {self.total.output_tokens:,} out tokens "
            f"({self.total.cached_tokens:,} cached), cost {cost}"
        )


def summarize(events: Iterable[Event]) -> Usage:
    """Usage from a run's events. Sub-calls that produced a child run (``rlm``) are counted
    through that child's own LM events, not twice."""
    usage = Usage()
    for event in events:
        if isinstance(event, RootReply) or (isinstance(event, SubcallFinished) and event.call_kind == "llm"):
            usage.add(event)
    return usage
