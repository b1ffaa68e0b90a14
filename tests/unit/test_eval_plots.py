"""The eval's plots: an axis whose values are all the same says so instead of spanning ±0.04."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rlm_kernel.eval.plots import figures, plot
from rlm_kernel.eval.results import Results, Row

pytest.importorskip("matplotlib")


def row(task: str, method: str, *, score: float, cost: float | None, sub_tokens: int = 0) -> Row:
    return Row(
        task_id=task, family="sniah", split="test", length=1024, method=method, model="qwen2.5-coder-0.5b",
        sub_model="qwen2.5-coder-0.5b", profile="small", score=score, answer="a", expected="a", error=None,
        root_input_tokens=900, root_output_tokens=100, sub_input_tokens=sub_tokens, cost=cost,
    )  # fmt: skip


def drawn(results: Results) -> dict[str, Any]:
    import matplotlib.pyplot as plt

    out = figures(results)
    axes = {name: fig.axes[0] for name, fig in out.items()}
    for fig in out.values():
        plt.close(fig)
    return axes


def test_a_free_models_cost_axis_says_free() -> None:
    axes = drawn(
        Results([row("a", "rlm", score=1.0, cost=0.0, sub_tokens=50), row("a", "base", score=0.0, cost=0.0)])
    )
    cost = axes["cost_vs_score.png"]
    assert cost.get_xlabel() == "free: $0 for every rollout"
    assert [t.get_text() for t in cost.get_xticklabels()] == ["$0"]
    assert cost.get_xlim() == (-1.0, 1.0)  # not -0.04…0.04
    assert cost.get_ylim() == (-3.0, 108.0)


def test_an_axis_with_one_value_names_it_and_others_are_left_alone() -> None:
    axes = drawn(Results([row("a", "base", score=1.0, cost=0.002), row("b", "base", score=1.0, cost=0.002)]))
    assert axes["cost_vs_score.png"].get_xlabel() == "mean cost per task: $0.0020 everywhere"
    tokens = axes["tokens.png"]
    assert tokens.get_ylabel() == "sub-call tokens: none in any rollout"
    assert tokens.get_ylim() == (-1.0, 1.0)
    assert tokens.get_xlabel() == "root LM tokens: 1,000 in every rollout"

    axes = drawn(
        Results(
            [row("a", "rlm", score=1.0, cost=0.01, sub_tokens=10), row("a", "base", score=0.5, cost=0.03)]
        )
    )
    assert axes["cost_vs_score.png"].get_xlabel() == "mean cost per task (US$)"
    assert axes["tokens.png"].get_ylabel() == "sub-call tokens (in + out)"


def test_plot_saves_the_three_figures(tmp_path: Path) -> None:
    paths = plot(Results([row("a", "rlm", score=1.0, cost=0.0)]), tmp_path)
    assert [p.name for p in paths] == ["figure1.png", "cost_vs_score.png", "tokens.png"]
    assert all(p.stat().st_size > 1000 for p in paths)
