"""The tasks the held-out families' checks read, generated once for all of them (the generic
checks and each set's own read the same tasks)."""

from __future__ import annotations

from functools import cache

from rlm_kernel.eval.tasks import TaskRef, generate

SIZE = 8192  # tokens, the harness's default length: about 32,000 characters
N = 12  # tasks per family and split: every kind at least twice


@cache
def tasks(family: str, split: str, n: int = N, length: int = SIZE) -> tuple:
    return tuple(generate(TaskRef(family, split, length, i)) for i in range(n))
