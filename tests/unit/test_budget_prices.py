"""A dollar limit needs a price for every model it meets: a call of unknown cost would count nothing."""

from __future__ import annotations

import functools

import pytest

from rlm_kernel.budget import Budget
from rlm_kernel.errors import ConfigError
from rlm_kernel.events import RootReply, SubcallFinished
from rlm_kernel.lm import make_lm, price_of
from rlm_kernel.usage import Price


def test_without_a_dollar_limit_any_model_will_do() -> None:
    Budget(max_tokens=10).require_prices(["nobody-prices-this"])


def test_a_dollar_limit_names_the_model_without_a_price() -> None:
    with pytest.raises(ConfigError) as caught:
        Budget(max_cost=1.0).require_prices(["gpt-4o-mini", "my-finetune-x"])
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("max_budget needs a price for model 'my-finetune-x': pass prices=")
    assert "backend_kwargs" in message and "rlm_kernel.usage.set_price('my-finetune-x'" in message


def test_a_clients_own_price_satisfies_the_limit() -> None:
    lm = make_lm("openai", {"api_key": "k", "prices": {"my-finetune": (1, 2)}}, model="my-finetune-y")
    budget = Budget(max_cost=1.0)
    budget.require_prices([lm.model_name], functools.partial(price_of, lm))
    with pytest.raises(ConfigError):
        budget.require_prices([lm.model_name])  # the process-wide table does not know it
    budget.require_prices(["anything"], lambda model: Price(0.0, 0.0))


def test_the_budget_charges_lm_calls_only() -> None:
    budget = Budget(max_cost=1.0)
    budget.observe(
        RootReply(run_id="r", turn=1, text="", model="m", input_tokens=3, output_tokens=1, cost=0.5)
    )
    budget.observe(SubcallFinished(run_id="r", call_id="c", step=1, model="m", input_tokens=2, cost=None))
    budget.observe(SubcallFinished(run_id="r", call_id="d", step=1, model="rlm", call_kind="rlm", cost=9.0))
    assert (budget.tokens, budget.cost) == (6, 0.5)
    assert budget.exceeded() is None
    budget.observe(SubcallFinished(run_id="r", call_id="e", step=1, model="m", cost=0.5))
    assert "max_budget ($) exceeded" in str(budget.exceeded())
