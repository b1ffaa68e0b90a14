"""The confirm-risky rung's scan: what makes a step wait for a human, and what does not."""

from __future__ import annotations

import pytest

from rlm_kernel.risk import capped, risk_of


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("import os\nos.listdir('.')", "it imports os"),
        ("import subprocess as sp", "it imports subprocess"),
        ("from shutil import rmtree", "it imports from shutil"),
        ("import urllib.request", "it imports urllib.request"),
        ("import socket", "it imports socket"),
        ("open('out.txt', 'w').write('x')", "it opens a file for writing"),
        ("open('log', mode='a+')", "it opens a file for writing"),
        ("open(path, m)", "it opens a file for writing"),  # a computed mode: fail closed
        ("p.write_text('x')", "it calls .write_text()"),
        ("p.unlink()", "it calls .unlink()"),
        ("exec('print(1)')", "it calls exec()"),
        ("eval(text)", "it calls eval()"),
        ("__import__('os')", "it calls __import__()"),
        ("().__class__.__base__.__subclasses__()", "it reaches __subclasses__"),
        ("__builtins__['open']", "it reaches __builtins__"),
        ("def f(:\n  pass", "it could not be read (SyntaxError)"),
    ],
)
def test_steps_a_human_should_see_first(code: str, why: str) -> None:
    assert risk_of(code) == why


@pytest.mark.parametrize(
    "code",
    [
        "print(len(context))",
        "import re, json, collections\nhits = re.findall(r'\\d+', context)",
        "lines = context.splitlines()\nprint(lines[:5])",
        "parts = [context[i:i + 1000] for i in range(0, len(context), 1000)]\nout = llm_query_batched(parts)",
        "with open('notes.txt') as f:\n    print(f.read()[:100])",  # reading is not writing
        "answer['content'] = str(sum(x.__len__() for x in parts))\nanswer['ready'] = True",
        "FINAL_VAR('result')",
    ],
)
def test_ordinary_steps_run_at_once(code: str) -> None:
    assert risk_of(code) is None


def test_a_cap_keeps_the_ladder_below_it() -> None:
    assert capped("auto", "confirm-risky") == "confirm-risky"
    assert capped("auto", "step") == "step"
    assert capped("step", "confirm-risky") == "step"  # less autonomous than the cap: as asked
    assert capped("confirm-risky", "auto") == "confirm-risky"
