import logging
import subprocess
import sys

from rlm_kernel.events import (
    EventBus,
    RootReply,
    RunStarted,
    StepFinished,
    SubcallFinished,
    event_from_dict,
)
from rlm_kernel.usage import cost_of, price_for, set_price, summarize


def test_cost_uses_the_longest_matching_prefix_and_cached_rate():
    assert price_for("gpt-4o-mini-2024-07-18").input == 0.15
    assert price_for("gpt-4o-2024-08-06").input == 2.5
    assert cost_of("gpt-4o-mini", 1_000_000, 0) == 0.15
    assert cost_of("gpt-4o-mini", 1_000_000, 0, cached_tokens=1_000_000) == 0.075


def test_unknown_model_costs_none_not_zero():
    assert cost_of("my-finetune", 100, 100) is None
    set_price("my-finetune", 1.0, 2.0)
    assert cost_of("my-finetune", 1_000_000, 1_000_000) == 3.0


def test_summary_splits_root_sub_model_and_depth():
    events = [
        RootReply(run_id="r", turn=1, text="", model="gpt-4o", input_tokens=100, output_tokens=10, cost=0.5),
        SubcallFinished(
            run_id="r", call_id="c1", step=1, model="gpt-4o", input_tokens=50, output_tokens=5, cost=0.25
        ),
        RootReply(
            run_id="child",
            parent_id="r",
            depth=1,
            turn=1,
            text="",
            model="gpt-4o-mini",
            input_tokens=7,
            output_tokens=3,
            cost=None,
        ),
        SubcallFinished(run_id="r", call_id="c2", step=1, model="rlm", call_kind="rlm"),
    ]
    usage = summarize(events)
    assert usage.total.calls == 3 and usage.total.input_tokens == 157
    assert usage.root.calls == 1 and usage.sub.calls == 2
    # same model name, root and sub kept apart (a known defect elsewhere)
    assert usage.by_model["gpt-4o"].calls == 2
    assert usage.by_depth[1].input_tokens == 7
    assert usage.total.cost is None  # one call of unknown price makes the total unknown
    assert usage.root.cost == 0.5


def test_events_round_trip_through_json():
    events = [
        RunStarted(run_id="r", question="q", context_meta={"type": "str"}, model="m", sub_model="s"),
        StepFinished(run_id="r", step=1, output="x", restored=("FINAL",)),
        SubcallFinished(run_id="r", parent_id="p", depth=2, call_id="c", step=None, model="m", error="e"),
    ]
    for event in events:
        data = event.to_dict()
        assert data["kind"] == event.kind
        assert event_from_dict(data) == event


def test_a_failing_subscriber_is_reported_and_kept(caplog):
    bus = EventBus()
    seen = []

    def broken(event):
        raise ValueError("view broke")

    bus.subscribe(broken)
    bus.subscribe(seen.append)
    event = RunStarted(run_id="r", question=None, context_meta={}, model="m", sub_model="m")
    with caplog.at_level(logging.ERROR, logger="rlm_kernel"):
        bus.emit(event)
        bus.emit(event)
    assert seen == [event, event]
    assert len(bus.failures) == 2
    assert "view broke" in caplog.text and "Traceback" in caplog.text


def test_the_engine_imports_nothing_from_jupyter():
    code = (
        "import sys, rlm_kernel, rlm_kernel.engine, rlm_kernel.driver, rlm_kernel.rlm\n"
        "bad = [m for m in ('IPython', 'ipykernel', 'ipywidgets', 'jupyter_client', 'openai', 'anthropic')"
        " if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""
