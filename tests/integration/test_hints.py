"""A hint given from another thread reaches the root, whenever it comes: the loop hands it to the
engine between its calls, so one that lands while the engine builds a turn is not lost."""

from __future__ import annotations

import asyncio
import threading

import pytest
from scripted_server import Script

from rlm_kernel import RLM, prompts

KEY = "sk-test-hints-0123456789"
HINT = "HINT-LOOK-AT-CHAPTER-7"


def repl(code: str) -> str:
    return f"Let me look.\n```repl\n{code}\n```"


@pytest.mark.parametrize("driver", ["completion", "acompletion"])
def test_a_hint_given_while_the_engine_builds_a_turn_reaches_the_next_one(
    scripted_server, monkeypatch, driver
):
    scripted_server.responder = Script(
        root=[
            repl("print('one')"),
            repl("print('two')"),
            repl("print('three')\nanswer['content'] = 'three'\nanswer['ready'] = True"),
        ]
    )
    backend = {"model_name": "gpt-4o-mini", "base_url": scripted_server.openai_base_url, "api_key": KEY}
    rlm = RLM("openai", backend, log_dir=False)
    real = prompts.observation
    given: list[str] = []

    def observation(*args, **kwargs):
        """The first turn's observation is built; a human's hint arrives from another thread before
        the engine has moved on."""
        text = real(*args, **kwargs)
        if not given:
            given.append(HINT)
            human = threading.Thread(target=rlm.hint, args=(HINT,))
            human.start()
            human.join()
        return text

    monkeypatch.setattr(prompts, "observation", observation)
    if driver == "completion":
        result = rlm.completion("a small context", "What is printed last?")
    else:
        result = asyncio.run(rlm.acompletion("a small context", "What is printed last?"))
    assert result.response == "three", result.error
    roots = [r for r in scripted_server.requests if r.is_root]
    assert [HINT in r.last_user for r in roots] == [False, False, True]  # the turn after it came
    assert [e.text for e in result.trajectory if e.kind == "hint"] == [HINT]
