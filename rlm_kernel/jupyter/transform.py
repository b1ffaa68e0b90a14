"""The magics' input transformer: a ``%%rlm`` cell and each top-level ``%rlm`` line become awaited
calls, so the kernel runs them as async cells and its event loop stays free while a run waits on
LMs (the Stop and Run-step buttons are heard at once)."""

from __future__ import annotations

import re

__all__ = ["await_rlm_magics"]

_LINE_MAGIC = re.compile(r"^(?:(?P<target>[A-Za-z_]\w*)\s*=\s*)?%rlm(?:\s+(?P<rest>.*?))?\s*$")


def await_rlm_magics(lines: list[str]) -> list[str]:
    """Input transformer, run before IPython's own syntax: a ``%%rlm`` cell and each top-level
    ``%rlm`` line become awaited calls (so a question may end with ``?`` without asking for help)."""
    if not lines:
        return lines
    if lines[0].startswith("%%rlm") and (len(lines[0]) == 5 or lines[0][5].isspace()):
        line, body = lines[0][5:].strip(), "".join(lines[1:])
        return [f"await __rlm_magics__.arun({line!r}, {body!r})\n"]
    return [_awaited(line) for line in lines]


def _awaited(line: str) -> str:
    """A ``%rlm`` line (``x = %rlm ...`` too) as an awaited call; any other line as it is."""
    m = _LINE_MAGIC.match(line.rstrip("\n"))
    if m is None:
        return line
    rest = m.group("rest") or ""
    if m.group("target"):
        return f"{m.group('target')} = await __rlm_magics__.arun_result({rest!r})\n"
    return f"await __rlm_magics__.arun({rest!r})\n"
