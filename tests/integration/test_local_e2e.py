"""End to end with the real small model: needles in haystacks far larger than its window.

Qwen2.5-Coder-0.5B runs in llama.cpp with an 8,192-token window; each haystack is
about 120,000 characters (roughly 30,000 tokens). The model never sees it: it writes
search code from the ``small`` profile's worked example and answers from the output.
"""

from __future__ import annotations

import random

import pytest

from rlm_kernel import RLM

pytestmark = pytest.mark.local_model

WORDS = "the of and a to in is was for on that with as by at from his her it an were which be this".split()
PLACES = ["vault", "garden shed", "harbor office", "library annex", "server room", "boathouse"]


def haystack(seed: int, n_chars: int = 120_000) -> tuple[str, str, str]:
    rng = random.Random(seed)
    lines, total = [], 0
    while total < n_chars:
        line = " ".join(rng.choice(WORDS) for _ in range(12)) + "."
        lines.append(line)
        total += len(line) + 1
    code = str(rng.randint(1000, 9999))
    place = PLACES[seed % len(PLACES)]
    lines.insert(rng.randrange(len(lines) // 4, len(lines)), f"The secret code for the {place} is {code}.")
    return "\n".join(lines), place, code


@pytest.fixture(scope="module")
def rlm() -> RLM:
    return RLM("local", backend_kwargs={"n_ctx": 8192}, max_iterations=6, log_dir=False)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_small_model_finds_the_needle(rlm: RLM, seed: int) -> None:
    context, place, code = haystack(seed)
    assert len(context) > 3.5 * 8192 * 4  # several times the window, at ~4 characters a token
    result = rlm.completion(context, root_prompt=f"What is the secret code for the {place}?")
    assert result.error is None, result.error
    assert code in result.response
    steps = [e for e in result.trajectory if e.kind == "step_finished"]
    assert steps and code in steps[0].output  # found by its own code, not guessed
    assert max(e.chars for e in result.trajectory if e.kind == "root_request") < 4000
    assert result.usage.total.cost == 0.0
