"""``rlm_kernel.eval``: does an RLM help my model at my lengths?

Generates the paper's long-context task families offline (S-NIAH, OOLONG ``trec_coarse``,
OOLONG-Pairs, counting over records, verbatim-copy), families shaped like the data notebook users
hold (real documents, a repository of code, DataFrames, chained facts, counting by meaning), and
your own from JSONL, with a ``dev`` and a ``test`` split that share no seed, phrasing or data;
runs the RLM and the paper's baselines (the plain model, CodeAct with and without sub-calls, the
summary agent, the RLM without sub-calls) side by side on them; scores them with the paper's
metrics; keeps every rollout (resumable); and prints the paper's Table 1 and draws its Figure 1.
``python -m rlm_kernel.eval --help``.
"""

from __future__ import annotations

from .methods import METHODS, Outcome, Settings
from .results import Results, Row, load
from .runners import LocalRunner, RayRunner
from .scoring import SCORERS, score
from .sweep import arun, run
from .tasks import Task, TaskRef, family_names, generate, generated_tasks, load_jsonl, parse_length

__all__ = [
    "run",
    "arun",
    "Settings",
    "Results",
    "Row",
    "load",
    "LocalRunner",
    "RayRunner",
    "Task",
    "TaskRef",
    "generate",
    "generated_tasks",
    "load_jsonl",
    "family_names",
    "parse_length",
    "score",
    "SCORERS",
    "METHODS",
    "Outcome",
    "plot",
]


def plot(results: Results, out: str, **kwargs: object) -> list:
    """Draw Figure 1, cost against score, and root against sub-call tokens (matplotlib)."""
    from .plots import plot as draw

    return draw(results, out, **kwargs)  # type: ignore[arg-type]
