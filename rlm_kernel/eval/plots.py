"""The paper's plots for your own results (matplotlib, PNG).

- ``figure1.png``: score against context length (log scale), one line per method and model (every
  method of the results: the RLMs and the baselines), one panel per task family; a dashed line
  marks the model's window when it is known. A method and model keep one colour and marker in
  every panel and plot, and the legend names each one, whichever panels it is in.
- ``cost_vs_score.png``: mean cost against mean score, per family and method.
- ``tokens.png``: root-LM tokens against sub-call tokens, one point per rollout.

An axis whose values are all the same (a free model's costs, a sweep without sub-calls) says so
in its label and has one tick at that value, instead of a span of ±0.04 around it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .results import Results
from .tasks import format_length

__all__ = ["plot", "figures"]

_MARKERS = "osD^vP*X"


def _style(i: int) -> dict[str, str]:
    """The colour and marker of the ``i``-th series: fixed by its place among all the series, so a
    method looks the same in a panel where another method is missing (matplotlib's colour cycle
    would move on only for the lines drawn)."""
    return {"color": f"C{i % 10}", "marker": _MARKERS[i % len(_MARKERS)]}


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        from ..errors import ConfigError

        raise ConfigError('Plots need matplotlib: pip install "rlm-kernel[eval]".') from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(
    results: Results, out: str | Path, *, window: int | None = None, title: str | None = None
) -> list[Path]:
    """Draw the three plots into ``out``; returns their paths."""
    plt = _pyplot()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    drawn = figures(results, window=window, title=title)
    paths = []
    try:
        for name, fig in drawn.items():
            paths.append(out / name)
            fig.savefig(paths[-1], dpi=130)
    finally:
        for fig in drawn.values():
            plt.close(fig)
    return paths


def _flat_axis(
    ax: Any, axis: str, values: list[float], *, tick: Callable[[float], str], same: str, zero: str
) -> None:
    """When every value on ``axis`` ("x" or "y") is the same, say so: one tick at the value, a span
    around it, and a label that says it, ``zero`` when the value is 0, else ``same`` with ``{}`` for
    the value. matplotlib would draw ±0.04 around the value, as if the values differed."""
    if not values or min(values) != max(values):
        return
    value = values[0]
    span = abs(value) / 2 or 1.0
    (ax.set_xlim if axis == "x" else ax.set_ylim)(value - span, value + span)
    (ax.set_xticks if axis == "x" else ax.set_yticks)([value], [tick(value)])
    ax.minorticks_off()
    (ax.set_xlabel if axis == "x" else ax.set_ylabel)(zero if value == 0 else same.format(tick(value)))


def _dollars(cost: float) -> str:
    return "$0" if cost == 0 else f"${cost:.4f}"


def _count(tokens: float) -> str:
    return f"{tokens:,.0f}"


def figures(results: Results, *, window: int | None = None, title: str | None = None) -> dict[str, Any]:
    """The three figures by file name, drawn and not saved (:func:`plot` saves and closes them)."""
    plt = _pyplot()
    cells = results.summary()
    series = sorted({(c.label, c.model) for c in cells})
    return {
        "figure1.png": _score_by_length(plt, cells, series, window, title),
        "cost_vs_score.png": _cost_vs_score(plt, cells, series),
        "tokens.png": _tokens(plt, results),
    }


def _score_by_length(
    plt: Any, cells: list[Any], series: list[tuple[str, str]], window: int | None, title: str | None
) -> Any:
    """Figure 1 of the paper: a panel per family, score against context length, a line per method."""
    families = sorted({c.family for c in cells})
    cols = min(3, max(1, len(families)))
    rows = math.ceil(len(families) / cols) or 1
    fig, axes = plt.subplots(rows, cols, figsize=(max(6.4, 4.6 * cols), 3.6 * rows + 0.8), squeeze=False)
    for ax, fam in zip(axes.flat, families, strict=False):
        for i, (method, model) in enumerate(series):
            points = sorted(
                (c.length, 100 * c.score)
                for c in cells
                if (c.family, c.label, c.model) == (fam, method, model)
            )
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, **_style(i), label=f"{method} ({model})")
        _length_axes(ax, fam, sorted({c.length for c in cells if c.family == fam}), window)
    for ax in list(axes.flat)[len(families) :]:
        ax.axis("off")
    legend: dict[str, Any] = {}  # every series once, in order, though no one panel has them all
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    handles, labels = list(legend.values()), list(legend)
    fig.legend(handles, labels, loc="lower center", ncol=max(1, min(2 * cols, len(labels))), frameon=False)
    fig.suptitle(title or "Score against context length")
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    return fig


def _length_axes(ax: Any, family: str, lengths: list[int], window: int | None) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [format_length(x) for x in lengths])
    ax.minorticks_off()
    if window:
        ax.axvline(window, color="grey", linestyle="--", linewidth=1)
        ax.text(window, 102, " window", color="grey", fontsize=8, va="bottom")
    ax.set_ylim(-3, 108)
    ax.set_title(family)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("score (%)")
    ax.grid(alpha=0.3)


def _cost_vs_score(plt: Any, cells: list[Any], series: list[tuple[str, str]]) -> Any:
    fig, ax = plt.subplots(figsize=(5.5, 4))
    costs: list[float] = []
    for i, (method, model) in enumerate(series):
        points = [
            (c.cost, 100 * c.score)
            for c in cells
            if (c.label, c.model) == (method, model) and c.cost is not None
        ]
        if points:
            xs, ys = zip(*points, strict=True)
            costs.extend(xs)
            ax.scatter(xs, ys, **_style(i), label=f"{method} ({model})")
    ax.set_xlabel("mean cost per task (US$)")
    ax.set_ylabel("mean score (%)")
    ax.set_ylim(-3, 108)  # percent, as in figure 1: a sweep that scored the same everywhere is no range
    _flat_axis(
        ax,
        "x",
        costs,
        tick=_dollars,
        same="mean cost per task: {} everywhere",
        zero="free: $0 for every rollout",
    )
    ax.set_title("Cost against score (one point per family and length)")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _tokens(plt: Any, results: Results) -> Any:
    fig, ax = plt.subplots(figsize=(5.5, 4))
    by_method: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for row in results.rows:
        by_method[row.method].append(
            (row.root_input_tokens + row.root_output_tokens, row.sub_input_tokens + row.sub_output_tokens)
        )
    for i, (method, points) in enumerate(sorted(by_method.items())):
        xs, ys = zip(*points, strict=True)
        ax.scatter(xs, ys, marker=_MARKERS[i % len(_MARKERS)], alpha=0.7, label=method)
    ax.set_xscale("symlog")
    ax.set_yscale("symlog")
    ax.set_xlabel("root LM tokens (in + out)")
    ax.set_ylabel("sub-call tokens (in + out)")
    every = [p for points in by_method.values() for p in points]
    for axis, values, what in (
        ("x", [p[0] for p in every], "root LM"),
        ("y", [p[1] for p in every], "sub-call"),
    ):
        same, zero = f"{what} tokens: {{}} in every rollout", f"{what} tokens: none in any rollout"
        _flat_axis(ax, axis, values, tick=_count, same=same, zero=zero)
    ax.set_title("Where the tokens go (one point per rollout)")
    ax.grid(alpha=0.3)
    if by_method:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
