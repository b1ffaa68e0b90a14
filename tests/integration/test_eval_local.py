"""A small sweep of rlm_kernel.eval with the real bundled model (Qwen2.5-Coder-0.5B in llama.cpp).

Short lengths and few tasks, to keep to a few minutes on two cores: what it shows is that the
harness runs the real model end to end, records what happened, and scores a plain model whose
window the context overflows as a failure with llama.cpp's own error (not a cut prompt).
The sweeps whose figures docs/evaluation.md publishes are in benchmarks/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rlm_kernel import eval as rlm_eval

pytestmark = [pytest.mark.local_model, pytest.mark.sandbox]  # its rollouts run in sandboxed kernels


def test_a_small_sweep_with_the_bundled_model(tmp_path: Path) -> None:
    settings = rlm_eval.Settings(backend="local", max_iterations=4, max_timeout=300)
    results = rlm_eval.run(
        ["sniah"],
        ["1k", "12k"],
        ["rlm", "base"],
        split="test",
        n=1,
        out=tmp_path,
        settings=settings,
        progress=False,
    )
    rows = {(r.length, r.task_id, r.method): r for r in results.rows}
    assert len(rows) == 4  # each length with each method
    for (length, _, method), row in rows.items():
        assert 0.0 <= row.score <= 1.0 and not row.crashed
        assert row.model == "qwen2.5-coder-0.5b" and row.context_chars > 0.8 * length * 4
        if method == "rlm":
            assert row.root_input_tokens > 0 and row.iterations >= 1 and Path(row.trajectory).exists()
        elif length > 8192:  # past the 8,192-token window: the provider's refusal, scored 0
            assert row.score == 0.0 and row.answer is None and row.root_input_tokens == 0
            assert "local model (llama.cpp) error (HTTP 400)" in row.error and "context" in row.error
        else:
            assert row.error is None and row.answer and row.root_input_tokens > 1000
