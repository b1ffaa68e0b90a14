"""Prices per client before the process-wide table, and the usage record shared with the events."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rlm_kernel import usage
from rlm_kernel.errors import ConfigError
from rlm_kernel.events import RootReply, SubcallFinished
from rlm_kernel.usage import PRICES, Price, UsageRecord, as_price, as_prices, cost_of, price_for, summarize


def test_a_clients_prices_come_before_the_table_by_longest_prefix() -> None:
    own = {"gpt-4o": Price(9.0, 9.0), "gpt-4o-mini-2024": Price(1.0, 1.0)}
    assert price_for("gpt-4o-mini-2024-07-18", own) == Price(1.0, 1.0)
    assert price_for("gpt-4o-mini", own) == Price(9.0, 9.0)  # the client's own prefix wins over the table
    assert price_for("gpt-5-mini", own) == PRICES["gpt-5-mini"]  # not the client's: the table's
    assert price_for("nobody", own) is None
    assert price_for("gpt-4o", {}) == price_for("gpt-4o", None) == PRICES["gpt-4o"]


def test_cost_at_a_given_price() -> None:
    price = Price(2.0, 4.0, 0.5)
    assert price.cost(1_000_000, 1_000_000, 1_000_000) == 4.5
    assert cost_of("nobody", 1_000_000, 0, price=price) == 2.0
    assert cost_of("nobody", 1_000_000, 0) is None
    assert cost_of("gpt-4o-mini", 1_000_000, 0, price=None) == 0.15


def test_tokens_written_to_the_cache_cost_their_own_rate() -> None:
    price = Price(2.0, 4.0, 0.5, 2.5)
    # 1M input: 0.25M read from the cache, 0.5M written to it, 0.25M neither
    assert price.cost(1_000_000, 0, 250_000, 500_000) == pytest.approx(0.5 + 0.125 + 1.25)
    assert Price(2.0, 4.0).cost(1_000_000, 0, 0, 500_000) == 2.0  # no write rate: input's
    assert PRICES["claude-sonnet-4"].cache_write == 1.25 * PRICES["claude-sonnet-4"].input


@pytest.mark.parametrize(
    ("value", "price"),
    [
        (Price(1.0, 2.0), Price(1.0, 2.0)),
        ((1, 2), Price(1.0, 2.0)),
        ([1, 2, 0.5], Price(1.0, 2.0, 0.5)),
        ([1, 2, None], Price(1.0, 2.0)),
        ({"input": "1.5", "output": 2}, Price(1.5, 2.0)),
        ({"input": 1, "output": 2, "cached_input": 0.1}, Price(1.0, 2.0, 0.1)),
        ((1, 2, 0.1, 1.25), Price(1.0, 2.0, 0.1, 1.25)),
        ({"input": 1, "output": 2, "cache_write": 1.25}, Price(1.0, 2.0, None, 1.25)),
    ],
)
def test_prices_in_every_form_backend_kwargs_can_hold(value: object, price: Price) -> None:
    assert as_price(value) == price


@pytest.mark.parametrize("value", [1.0, (1,), (1, 2, 3, 4, 5), {"input": 1}, ("a", "b"), None])
def test_a_bad_price_is_a_config_error(value: object) -> None:
    with pytest.raises(ConfigError, match="Bad price"):
        as_price(value)


def test_prices_must_be_a_mapping() -> None:
    assert as_prices(None) == {}
    assert as_prices({"m": (1, 2)}) == {"m": Price(1.0, 2.0)}
    with pytest.raises(ConfigError, match="prices must map model names"):
        as_prices([("m", (1, 2))])  # type: ignore[arg-type]


def test_a_usage_record_goes_into_an_event_and_comes_out_unchanged() -> None:
    record = UsageRecord(input_tokens=120, output_tokens=6, cached_tokens=100, cost=0.25)
    reply = RootReply(run_id="r", turn=1, text="t", model="m", **record.fields())
    finished = SubcallFinished(run_id="r", call_id="c", step=1, model="m", **record.fields())

    assert UsageRecord.of(reply) == UsageRecord.of(finished) == record
    assert record.tokens == 126
    data = reply.to_dict()
    assert {k: data[k] for k in record.fields()} == record.fields()  # the events' JSON form is flat as before
    assert summarize([reply, finished]).total.cost == 0.5


def test_usage_imports_no_other_part_of_the_package_at_import_time() -> None:
    """So that the events (and the LM port) can import the usage record without an import cycle."""
    tree = ast.parse(Path(usage.__file__).read_text())
    relative = [
        node.module
        for node in tree.body  # module level only: imports inside functions and TYPE_CHECKING are fine
        if isinstance(node, ast.ImportFrom)
        and (node.level > 0 or (node.module or "").startswith("rlm_kernel"))
    ]
    assert relative == []
