"""The sub-call pre-flight's cost per call: counting a prompt against the sub-model's window.

Each case times :func:`rlm_kernel.lm.tokens.preflight` (what ``llm_query`` runs before it sends)
many times on one event loop, and reports the median and 90th percentile in microseconds:

- ``bound``: a prompt whose UTF-8 size is under the limit, the common case, at 2 KB and 100 KB of
  ASCII (its length is its size, known without a pass) and 20 KB of other scripts (one encode);
- ``estimate``: past the bound but with a conservative estimate at most half the limit, 150 KB of
  English for a 128K window (two passes in C over the bytes);
- ``estimate decides``: near the window with no tokenizer to ask (an official OpenAI model without
  tiktoken's file), 300 KB;
- ``llama.cpp``: near an 8K window of the bundled model, counted by its server's ``/tokenize``
  (a local HTTP round trip); only where the model is in the cache and xllamacpp is installed.

Target: the common case (``bound``, 2 KB) at most 1 ms a call; the figure is the ratio to that.

    python benchmarks/bench_preflight.py [--quick] [--json benchmarks/preflight.json]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import main, target

LIMIT_US = 1000.0
SENTENCE = "The quick brown fox jumps over the lazy dog, and then it naps in the sun. "


def _text(chars: int, unit: str = SENTENCE) -> str:
    return (unit * (chars // len(unit) + 1))[:chars]


async def _time(lm: Any, text: str, calls: int) -> tuple[list[float], str]:
    from rlm_kernel.lm.tokens import preflight

    messages = [{"role": "user", "content": text}]
    fit = await preflight(lm, messages)  # the first call chooses the counter and opens its client
    times = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        await preflight(lm, messages)
        times.append((time.perf_counter_ns() - start) / 1000)
    return times, fit.counted_by if fit else "none"


def _row(case: str, text: str, window: int, times: list[float], counted_by: str) -> dict:
    times = sorted(times)
    return {
        "case": case,
        "prompt_chars": len(text),
        "window": window,
        "counted_by": counted_by,
        "calls": len(times),
        "median_us": round(statistics.median(times), 2),
        "p90_us": round(times[int(len(times) * 0.9)], 2),
    }


def _llama_rows(calls: int) -> tuple[list[dict], str | None]:
    """The llama.cpp case, or why it was not measured."""
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        return [], "xllamacpp is not installed"
    from rlm_kernel import models
    from rlm_kernel.lm.llama_server import LlamaServer
    from rlm_kernel.lm.openai import OpenAILM

    path = models.model_path()
    if path is None:
        return [], "the bundled model is not in the cache (python -m rlm_kernel.models fetch)"
    with LlamaServer(path, n_ctx=8192) as server:
        lm = OpenAILM(server.model_name, base_url=server.base_url, api_key="x", context_window=8192)
        text = _text(28_000)  # about 6,000 tokens of 8,192: past the bound and the estimate's half

        async def measure() -> tuple[list[float], str]:
            try:
                return await _time(lm, text, calls)
            finally:
                await lm.aclose()

        times, counted_by = asyncio.run(measure())
        return [_row("llama.cpp, near the window", text, 8192, times, counted_by)], None


def run(quick: bool) -> dict:
    from rlm_kernel.lm.openai import OpenAILM

    calls = 300 if quick else 3000
    # An official OpenAI model with an empty tiktoken cache: no count to be had, nothing fetched.
    os.environ["TIKTOKEN_CACHE_DIR"] = tempfile.mkdtemp()
    lm = OpenAILM("gpt-4o-mini", api_key="sk-bench")  # a 128,000-token window
    cases = [
        ("bound, 2 KB", _text(2_000)),
        ("bound, 100 KB", _text(100_000)),
        ("bound, 20 KB of other scripts", _text(20_000, "日本語のテキスト、そして Ελληνικά. ")),
        ("estimate, far below the window", _text(150_000)),
        ("estimate decides, near the window", _text(300_000)),
    ]
    rows = []
    for case, text in cases:
        times, counted_by = asyncio.run(_time(lm, text, calls if len(text) < 150_000 else calls // 10))
        rows.append(_row(case, text, 128_000, times, counted_by))
    llama, skipped = _llama_rows(30 if quick else 200)
    rows += llama
    common = rows[0]["median_us"]
    notes = [
        "median over calls on one event loop, the first call (which chooses the counter) left out",
        "the 1 ms limit applies to the common case; the others are for reference",
    ]
    if skipped:
        notes.append(f"llama.cpp's /tokenize not measured: {skipped}")
    return {
        "name": "preflight",
        "description": "the sub-call pre-flight's cost per call, by the measure that decides",
        "figures": rows,
        "targets": [
            target("pre-flight, common case (2 KB prompt), median", common, LIMIT_US, unit="us"),
            target("the same as a ratio of the 1 ms limit", round(common / LIMIT_US, 5), 1.0, unit="x"),
        ],
        "notes": notes,
    }


if __name__ == "__main__":
    main("preflight", run)
