"""A failed sub-call is a SubcallError in a kernel's code as in the host's: the same text, read as a
str (SHOW_VARS says so), with the family it failed in."""

from __future__ import annotations

from typing import Any

import pytest

from rlm_kernel.executors.kernel import KernelExecutor
from rlm_kernel.subcall_api import SubcallError

pytestmark = [pytest.mark.timeout(180), pytest.mark.sandbox]


class Failing:
    """Sub-calls answered here: the second prompt of a batch fails, as does every child."""

    def llm_query(self, prompt: str, model: str | None = None) -> str:
        return SubcallError("llm_query", "provider", f"refused {prompt}", "c1")

    def llm_query_batched(self, prompts: list[str], model: str | None = None) -> list[str]:
        return ["echo " + prompts[0], SubcallError("llm_query", "too_large", "too long", "c2")]

    def rlm_query_batched(self, prompts: list[str], contexts: Any = None) -> list[str]:
        return [SubcallError("rlm_query", "child", "no answer", "c3") for _ in prompts]

    def ask_batched(self, conversations: list[Any], max_tokens: int | None = None) -> list[str]:
        return ["label" for _ in conversations]


def test_the_code_in_a_kernel_gets_a_failed_call_as_a_subcall_error() -> None:
    executor = KernelExecutor()
    try:
        executor.bind("ctx", Failing(), None)
        code = (
            "one = llm_query('p')\n"
            "fine, failed = llm_query_batched(['a', 'b'])\n"
            "child = rlm_query('q')\n"
            "for r in (one, fine, failed, child):\n"
            "    print(type(r).__name__, getattr(r, 'fn', '-'), getattr(r, 'kind', '-'), repr(r))\n"
            "SHOW_VARS()\n"
        )
        result = executor.execute(code, step=1).result
    finally:
        executor.close()
    assert result.error is None, result.error
    lines = result.stdout.splitlines()
    # The fields cross the bridge beside the text: the kind is the host's.
    assert lines[:4] == [
        "SubcallError llm_query provider '[llm_query error] refused p'",
        "str - - 'echo a'",
        "SubcallError llm_query too_large '[llm_query error] too long'",
        "SubcallError rlm_query child '[rlm_query error] no answer'",
    ]
    assert lines[4:] == ["one: str", "fine: str", "failed: str", "child: str", "r: str"]
