"""The run view's fold, held to the fixtures that hold the lab extension's too (``fold.spec.ts``).

Each file of ``tests/fixtures/fold`` is events in (their JSON form) and the view out: the run's
tallies, its step tree and the lines every view prints. ``commands.json`` is the table of cell
sources that are commands of ours. The projection below reads the fold and writes it in the
fixtures' shape; ``fold.spec.ts`` writes the TypeScript fold in the same shape.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from rlm_kernel.console import ConsoleView
from rlm_kernel.events import event_from_dict
from rlm_kernel.jupyter import safe
from rlm_kernel.jupyter.render import render_run
from rlm_kernel.view import CallRow, RunState, StepView, rlm_command, step_line, tool_line, totals_line

FIXTURES = Path(__file__).parent.parent / "fixtures" / "fold"
RUNS = sorted(p for p in FIXTURES.glob("*.json") if p.name != "commands.json")
_OPEN = {"waiting": "open", "running": "open"}  # whether the human is asked is not the events'


def _cost(cost: float | None) -> float | None:
    return None if cost is None else round(cost, 6)


def _call(row: CallRow) -> dict[str, Any]:
    return {
        "id": row.call_id,
        "kind": row.kind,
        "depth": row.depth,
        "model": row.model,
        "prompt": row.prompt,
        "reply": row.reply,
        "status": row.status,
        "batch": row.batch_id,
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "cost": _cost(row.cost),
        "error": row.error,
        "lm_call": row.lm_call,
        "tools": [tool_line(t) for t in row.tools],
    }


def _step(view: StepView, state: RunState) -> dict[str, Any]:
    status = state.step_status(view)
    return {
        "step": view.step,
        "author": view.author,
        "edited": view.edited,
        "replayed": view.replayed,
        "code": view.code,
        "reply": view.reply,
        "output": view.output,
        "elapsed_s": view.elapsed_s,
        "status": _OPEN.get(status, status),
        "error": view.error,
        "lm_s": view.lm_s,
        "calls": [_call(r) for r in view.calls.values()],
        "tools": [tool_line(t) for t in view.tools],
    }


def snapshot(state: RunState) -> dict[str, Any]:
    """The fold in the fixtures' shape."""
    usage = state.usage
    calls = [r for v in state.steps.values() for r in v.calls.values()]
    steps = sorted(state.steps.values(), key=lambda v: v.step)
    return {
        "view": {
            "run_id": state.run_id,
            "status": state.status,
            "question": state.question,
            "parent_run": state.parent_run,
            "branched_at": state.branched_at,
            "answer": state.answer,
            "error": state.error,
            "warnings": state.warnings,
            "sent_back": state.sent_back,
            "tallies": {
                "lm_calls": usage.total.calls,
                "root_calls": usage.root.calls,
                "sub_calls": usage.sub.calls,
                "input_tokens": usage.total.input_tokens,
                "output_tokens": usage.total.output_tokens,
                "cached_tokens": usage.total.cached_tokens,
                "cost": _cost(usage.total.cost),
                "tool_calls": state.tool_calls,
                "running": state.running_calls(),
                "failed_calls": sum(r.status == "error" for r in calls),
            },
            "steps": [_step(v, state) for v in steps],
        },
        "lines": {"steps": [step_line(v, state) for v in steps], "totals": totals_line(state)},
    }


def fold(events: list[dict[str, Any]], front: dict[str, Any] | None = None) -> RunState:
    """The events folded, then what the front end knows that no event says (``front``: whether
    the run is paused, the step that waits for the human)."""
    state = RunState()
    for data in events:
        state.apply(event_from_dict(data))
    front = front or {}
    state.paused = front.get("paused", False)
    state.waiting_for = front.get("waiting_for")
    return state


@pytest.mark.parametrize("path", RUNS, ids=[p.stem for p in RUNS])
def test_the_fold_gives_the_fixtures_view(path: Path) -> None:
    fixture = json.loads(path.read_text())
    got = snapshot(fold(fixture["events"], fixture.get("front")))
    assert got["view"] == fixture["view"]
    assert got["lines"] == fixture["lines"]


def test_the_fixtures_cover_every_event_kind() -> None:
    kinds = {e["kind"] for p in RUNS for e in json.loads(p.read_text())["events"]}
    assert kinds >= {
        "run_started",
        "root_reply",
        "step_started",
        "step_finished",
        "subcall_started",
        "subcall_finished",
        "tool_call",
        "answer_set",
        "answer_doubted",
        "human_edit",
        "warning",
        "run_ended",
    }


@pytest.mark.parametrize("path", RUNS, ids=[p.stem for p in RUNS])
def test_the_html_and_the_console_print_the_same_lines(path: Path) -> None:
    fixture = json.loads(path.read_text())
    state = fold(fixture["events"], fixture.get("front"))
    html = render_run(state, compact=True)
    assert safe.text(fixture["lines"]["totals"]) in html
    steps = sorted(state.steps.values(), key=lambda v: v.step)
    for view, line in zip(steps, fixture["lines"]["steps"], strict=True):
        if state.step_status(view) != "error":  # the HTML colours that word
            assert f'<div class="rlm-run-step">{safe.text(line)}</div>' in html
    console = ConsoleView(io.StringIO())
    for data in fixture["events"]:
        console(event_from_dict(data))
    out = console.stream.getvalue()
    if state.ended:
        assert out.rstrip().endswith(fixture["lines"]["totals"])
    if path.stem == "plain_run":  # no step's calls end after it: its line when it ended is its last
        assert [line.strip() for line in out.splitlines() if line.strip().startswith("step ")] == fixture[
            "lines"
        ]["steps"]


COMMANDS = json.loads((FIXTURES / "commands.json").read_text())["cases"]


@pytest.mark.parametrize(("source", "command"), COMMANDS, ids=[repr(s) for s, _ in COMMANDS])
def test_a_cell_is_a_command_of_ours_or_not(source: str, command: str | None) -> None:
    assert rlm_command(source) == command
