"""Tokens and cost, derived from events: one source of truth, children included.

Prices are US dollars per million tokens. A model missing from every table has an
unknown cost (``None``), never zero. A client's own prices (``prices=`` in
``backend_kwargs``) come first; :data:`PRICES` is the process-wide table behind
them, which :func:`set_price` changes for every client of the process.

This module imports no other part of rlm_kernel at import time, so that the LM
port and the events can share :class:`UsageRecord` and :class:`Price`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from .events import Event, RootReply, SubcallFinished

__all__ = [
    "Price",
    "Prices",
    "PRICES",
    "set_price",
    "as_price",
    "as_prices",
    "price_for",
    "cost_of",
    "UsageRecord",
    "Tally",
    "Usage",
    "is_lm_call",
    "percent",
    "summarize",
]


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cached_input: float | None = None  # None: cached tokens cost the same as input
    cache_write: float | None = None  # None: tokens written to the cache cost the same as input

    def cost(
        self, input_tokens: int, output_tokens: int, cached_tokens: int = 0, written_tokens: int = 0
    ) -> float:
        """Dollars for one call; ``input_tokens`` includes ``cached_tokens`` and ``written_tokens``
        (those the provider wrote to its prompt cache, which Anthropic charges above input)."""
        cached_rate = self.input if self.cached_input is None else self.cached_input
        write_rate = self.input if self.cache_write is None else self.cache_write
        fresh = max(input_tokens - cached_tokens - written_tokens, 0)
        return (
            fresh * self.input
            + cached_tokens * cached_rate
            + written_tokens * write_rate
            + output_tokens * self.output
        ) / 1e6


Prices = Mapping[str, Price]

# Public list prices, USD per 1M tokens: input, output, cached input, and (Anthropic) a write to the
# five-minute prompt cache, 1.25 times input. Matched by longest prefix of the model name.
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
    "claude-opus-4-1": Price(15.0, 75.0, 1.5, 18.75),
    "claude-opus-4-5": Price(5.0, 25.0, 0.5, 6.25),
    "claude-sonnet-4": Price(3.0, 15.0, 0.3, 3.75),
    "claude-haiku-4-5": Price(1.0, 5.0, 0.1, 1.25),
    "claude-3-5-haiku": Price(0.8, 4.0, 0.08, 1.0),
}


def set_price(
    model: str,
    input: float,
    output: float,
    cached_input: float | None = None,
    cache_write: float | None = None,
) -> None:
    """Register or override the price of a model (or of every model starting with ``model``) in the
    process-wide table, for every client. To price one client only, pass ``prices=`` to it instead."""
    PRICES[model] = Price(input, output, cached_input, cache_write)


def as_price(value: Any) -> Price:
    """A :class:`Price` from the forms ``backend_kwargs`` can hold (they may come from JSON or a
    profile): a ``Price``, ``(input, output[, cached_input[, cache_write]])`` or ``{"input":,
    "output":, "cached_input":, "cache_write":}``."""
    from .errors import ConfigError

    try:
        if isinstance(value, Price):
            return value
        if isinstance(value, Mapping):
            return Price(
                float(value["input"]),
                float(value["output"]),
                _rate(value.get("cached_input")),
                _rate(value.get("cache_write")),
            )
        if isinstance(value, (list, tuple)) and 2 <= len(value) <= 4:
            rates = [_rate(v) for v in value[2:]] + [None, None]
            return Price(float(value[0]), float(value[1]), rates[0], rates[1])
    except (KeyError, TypeError, ValueError):
        pass
    raise ConfigError(
        f"Bad price {value!r}: give (input, output[, cached_input[, cache_write]]) in US dollars per "
        "million tokens."
    )


def _rate(value: Any) -> float | None:
    return None if value is None else float(value)


def as_prices(value: Mapping[str, Any] | None) -> dict[str, Price]:
    """A client's ``prices=`` argument, model name (or prefix) to price, checked once at construction."""
    from .errors import ConfigError

    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"prices must map model names to prices, got {type(value).__name__}.")
    return {str(model): as_price(price) for model, price in value.items()}


def _longest(table: Prices, model: str) -> Price | None:
    best = max((k for k in table if model == k or model.startswith(k)), key=len, default=None)
    return table[best] if best is not None else None


def price_for(model: str, prices: Prices | None = None) -> Price | None:
    """The price of ``model``: from ``prices`` (a client's own) by longest prefix, else from the table."""
    return (_longest(prices, model) if prices else None) or _longest(PRICES, model)


def cost_of(
    model: str,
    input_tokens: int,
    output_tokens: int,
    cached_tokens: int = 0,
    *,
    price: Price | None = None,
) -> float | None:
    """Dollars for one call at ``price``, else at the table's price for ``model``; None when unknown."""
    price = price or price_for(model)
    return None if price is None else price.cost(input_tokens, output_tokens, cached_tokens)


@dataclass(frozen=True)
class UsageRecord:
    """What one LM call used. The field names are those of :class:`~rlm_kernel.events.RootReply` and
    :class:`~rlm_kernel.events.SubcallFinished`, so a record goes into an event (``**record.fields()``)
    and comes out of one (:meth:`of`) without changing the events' JSON form."""

    input_tokens: int = 0  # the whole prompt, cached tokens included
    output_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None  # None: the model has no known price

    @classmethod
    def of(cls, source: Any) -> UsageRecord:
        """The record of anything that carries the four fields: an event, or a ``Completion``."""
        return cls(source.input_tokens, source.output_tokens, source.cached_tokens, source.cost)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def fields(self) -> dict[str, Any]:
        """Keyword arguments for an event."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "cost": self.cost,
        }


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

    def add_record(self, record: UsageRecord) -> None:
        self.add(record.input_tokens, record.output_tokens, record.cached_tokens, record.cost)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def cached_share(self) -> float | None:
        """The share of input tokens the providers read from their prompt caches; None without input."""
        return self.cached_tokens / self.input_tokens if self.input_tokens else None


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
        from .events import RootReply

        record = UsageRecord.of(event)
        is_root = isinstance(event, RootReply) and event.depth == 0
        for tally in (
            self.total,
            self.root if is_root else self.sub,
            self.by_model.setdefault(event.model, Tally()),
            self.by_depth.setdefault(event.depth, Tally()),
        ):
            tally.add_record(record)

    def __str__(self) -> str:
        """``7 LM calls (2 root, 5 sub), 2,067 in / 232 out tokens (1,650 cached, 80% of input), cost
        $0.0004``: the share says how much of what was sent the prompt caches saved."""
        total = self.total
        cost = "unknown" if total.cost is None else f"${total.cost:.4f}"
        share = (
            f", {percent(total.cached_tokens, total.input_tokens)} of input" if total.cached_tokens else ""
        )
        return (
            f"{total.calls} LM calls ({self.root.calls} root, {self.sub.calls} sub), "
            f"{total.input_tokens:,} in / {total.output_tokens:,} out tokens "
            f"({total.cached_tokens:,} cached{share}), cost {cost}"
        )


def percent(part: float, whole: float) -> str:
    """``part`` of ``whole`` in whole percent, never rounded to 0% or 100% when it is neither none nor
    all of it (a reader takes "100% cached" to mean that nothing was read afresh)."""
    if whole <= 0:
        return "0%"
    value = round(100 * part / whole)
    if part > 0 and value == 0:
        return "<1%"
    if part < whole and value == 100:
        return ">99%"
    return f"{value}%"


def is_lm_call(event: Event) -> TypeGuard[RootReply | SubcallFinished]:
    """Whether ``event`` ends one LM call. Sub-calls that produced a child run (``rlm``) are counted
    through that child's own LM events, not twice; a branch's replayed sub-calls called no LM."""
    from .events import RootReply, SubcallFinished

    return isinstance(event, RootReply) or (
        isinstance(event, SubcallFinished) and event.call_kind == "llm" and not event.replayed
    )


def summarize(events: Iterable[Event]) -> Usage:
    """Usage from a run's events, children included."""
    usage = Usage()
    for event in events:
        if is_lm_call(event):
            usage.add(event)
    return usage
