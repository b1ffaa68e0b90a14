"""End to end with the real small model, on contexts far larger than its window.

Qwen2.5-Coder-0.5B runs in llama.cpp with an 8,192-token window. The tasks come from the
evaluation's generators (``test`` split, at indexes past those the published sweeps use): every
haystack shape and every kind of needle, each at 32,768 tokens (four times the window), and
counting over a few thousand records, as a list of dicts and as CSV text. The model never sees a
context: it writes code from the ``small`` profile's worked examples and answers from the output.
"""

from __future__ import annotations

import pytest

from rlm_kernel import RLM
from rlm_kernel.eval import TaskRef, generate, score

pytestmark = pytest.mark.local_model

WINDOW = 8192


@pytest.fixture(scope="module")
def rlm() -> RLM:
    return RLM("local", backend_kwargs={"n_ctx": WINDOW}, max_iterations=6, log_dir=False)


@pytest.mark.parametrize("index", range(100, 105))  # five in a row: every shape, every kind of needle
def test_the_small_model_finds_the_needle(rlm: RLM, index: int) -> None:
    task = generate(TaskRef("sniah", "test", 32768, index))
    assert task.context_chars > 3.5 * WINDOW * 4
    result = rlm.completion(task.context, root_prompt=task.question)
    assert result.error is None, (task.meta, result.error)
    assert score(task.scorer, result.response, task.answer) == 1.0, (
        task.meta,
        task.question,
        result.response,
    )
    outputs = [e.output for e in result.trajectory if e.kind == "step_finished"]
    assert any(task.answer in out for out in outputs)  # found by its own code, not guessed
    assert result.warnings == []
    assert max(e.chars for e in result.trajectory if e.kind == "root_request") < 12_000  # the context never
    assert result.usage.total.cost == 0.0


@pytest.mark.parametrize("index", [100])  # a count over a list of dicts; records' sweeps hold the rest
def test_the_small_model_counts_records(rlm: RLM, index: int) -> None:
    task = generate(TaskRef("records", "test", 32768, index))
    assert task.meta["records"] > 800
    result = rlm.completion(task.context, root_prompt=task.question)
    assert result.error is None, result.error
    assert score(task.scorer, result.response, task.answer) == 1.0, (
        task.meta,
        task.question,
        result.response,
    )
