"""The reply parser against any text a root LM could send: it never raises, and a well-formed
block always comes back as written."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from rlm_kernel.protocol import (
    FinalDirective,
    code_blocks,
    find_final,
    resolve_final,
    strip_code,
    unclosed_final,
)

# Text rich in what the parser looks for: fences, FINAL, parentheses, quotes, newlines.
PIECES = [
    "```",
    "```repl\n",
    "```python\n",
    "\n```\n",
    "FINAL(",
    "FINAL_VAR(",
    ")",
    "(",
    "\n",
    '"',
    "'",
    "> ",
    "*",
]
reply_text = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=12)), max_size=40).map("".join)
code_line = st.text(alphabet=string.ascii_letters + string.digits + " =+-*/()[]{}:,.'\"#_", max_size=40)
code = st.lists(
    code_line.filter(lambda line: not line.lstrip().startswith("```")), min_size=1, max_size=6
).map("\n".join)


@settings(max_examples=400, deadline=None)
@given(reply_text)
def test_any_reply_is_read_without_raising(text: str) -> None:
    blocks = code_blocks(text)
    assert all(isinstance(b, str) and b.endswith("\n") and b.strip() for b in blocks)
    directive = find_final(text)
    assert directive is None or isinstance(directive.argument, str)
    assert unclosed_final(text) in ((None,) if directive else (None, "FINAL", "FINAL_VAR"))
    assert isinstance(strip_code(text), str)
    if directive is not None:
        content, problem = resolve_final(directive, {"x": 1})
        assert (content is None) != (problem is None)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30).filter(lambda t: "```" not in t), code, st.sampled_from(["repl", "python"]))
def test_a_fenced_block_comes_back_as_written(prose: str, body: str, fence: str) -> None:
    if not body.strip():
        return
    text = f"{prose}\n```{fence}\n{body}\n```\nthen"
    assert code_blocks(text) == [body.rstrip() + "\n"]
    assert code_blocks(text[: -len("\n```\nthen")]) == [body.rstrip() + "\n"]  # left open: the same code


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + " .,!?-", min_size=1, max_size=40))
def test_final_on_its_own_line_is_the_answer(answer: str) -> None:
    if answer != answer.strip() or not answer:
        return
    directive = find_final(f"Done.\nFINAL({answer})\n")
    assert directive == FinalDirective("FINAL", answer)
    assert unclosed_final(f"Done.\nFINAL({answer}\n") == "FINAL"
