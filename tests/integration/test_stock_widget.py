"""The ``%%rlm`` widget in a stock ``python3`` kernel, driven as a front end would: what it shows while
a step the human edited runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_session import KernelSession, scripted_env
from scripted_server import Script, ScriptedServer


def repl(code: str) -> str:
    return f"```repl\n{code}\n```"


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def kernel(server: ScriptedServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelSession]:
    with KernelSession("python3", scripted_env(server, tmp_path_factory.mktemp("runs"))) as session:
        assert session.execute("%load_ext rlm_kernel\ndoc = 'abcdefghij' * 100")["status"] == "ok"
        yield session


def shown(m: dict, *texts: str) -> bool:
    """Whether ``m`` updates the run's HTML to a value holding every one of ``texts``."""
    value = str(m["content"].get("data", {}).get("state", {}).get("value", ""))
    return m["msg_type"] == "comm_msg" and 'class="rlm-run"' in value and all(t in value for t in texts)


def test_an_edited_step_shows_the_code_that_runs_while_it_runs(
    kernel: KernelSession, server: ScriptedServer, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    server.responder = Script(root=[repl("proposed_here = 1\nprint(proposed_here)"), repl("FINAL(x)")])
    msg_id = kernel.start("%%rlm -c doc --mode step\nq")
    kernel.pump(
        lambda m: (
            m["msg_type"] == "comm_open" and m["content"]["data"]["state"].get("description") == "Run step"
        ),
        timeout=20,
    )
    editor = kernel.widget("TextareaModel")
    assert kernel.pump(lambda m: shown(m, "proposed_here", "waiting for you"), timeout=20) is not None
    # The human's step runs until the test lets it go: long enough to look at the widget meanwhile.
    edited = (
        f"import os, time\nwhile not os.path.exists({str(go)!r}):\n    time.sleep(0.01)\nx = 'the_human_s'\n"
    )
    kernel.set_value(editor, edited)
    kernel.click(kernel.widget("ButtonModel", "Run step"))
    running = kernel.pump(lambda m: shown(m, "the_human_s", "running…"), timeout=20)
    go.touch()
    assert running is not None, "the widget did not show the edited code while the step ran"
    assert "proposed_here" not in running["content"]["data"]["state"]["value"]
    assert kernel.pump(lambda m: shown(m, "FINAL", "waiting for you"), timeout=20) is not None
    kernel.click(kernel.widget("ButtonModel", "Run step"))
    assert kernel.wait_idle(msg_id, timeout=20) is not None
    assert kernel.of(msg_id, "display_data")[-1]["content"]["data"]["text/plain"] == "the_human_s"
