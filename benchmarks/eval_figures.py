"""Figure 1 across sweeps: S-NIAH, OOLONG and OOLONG-Pairs with every method measured on each, from
the committed sweep folders in ``benchmarks/eval/`` (each sweep keeps its own figures too).

    python benchmarks/eval_figures.py        # writes benchmarks/eval/figure1/*.png

A method that failed at a length (the context past the window) is drawn at 0, as the paper draws it.
"""

from __future__ import annotations

from pathlib import Path

from rlm_kernel.eval import load
from rlm_kernel.eval.plots import plot
from rlm_kernel.eval.results import Results

HERE = Path(__file__).resolve().parent / "eval"
OUT = HERE / "figure1"

# the figure -> the sweeps whose rows it draws, and the families it keeps
FIGURES = {
    "sniah": (["sniah-0.5b", "sniah-1m-0.5b"], {"sniah"}),
    "oolong": (
        ["oolong-1.5b", "oolong-4k-baselines-1.5b", "oolong-32k-1.5b", "oolong-32k-baselines-1.5b"],
        {"oolong"},
    ),
    "pairs": (["pairs-1.5b", "pairs-4k-baselines-1.5b", "pairs-4k-compaction-1.5b"], {"pairs"}),
}


def main() -> None:
    for name, (sweeps, families) in FIGURES.items():
        rows = [row for sweep in sweeps if (HERE / sweep).exists() for row in load(HERE / sweep).rows]
        rows = [row for row in rows if row.family in families]
        if not rows:
            continue
        drawn = plot(Results(rows), OUT / name, window=8192, title=f"{name}: {', '.join(sweeps)}")
        print("\n".join(str(path) for path in drawn))


if __name__ == "__main__":
    main()
