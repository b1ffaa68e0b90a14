"""The %%rlm cell's own view in notebook mode is a compact summary (the step cells hold code and
output); without the extension the kernel keeps the full view. A real RLM Python kernel; the tests
play the extension's part (tests/frontend.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from frontend import FrontEnd
from kernel_session import KernelSession, scripted_env
from scripted_server import Reply, Script, ScriptedServer

STEP_1 = "chunks = [context[:10], context[10:]]\nsizes = llm_query_batched([f'size of {c}' for c in chunks])"
STEP_2 = "print('sizes seen', sizes)\nFINAL(len(context))"


def repl(code: str) -> str:
    return f"Next step.\n```repl\n{code}\n```"


@pytest.fixture
def kernel(server: ScriptedServer, tmp_path) -> Iterator[KernelSession]:
    env = scripted_env(server, tmp_path)
    server.requests.clear()
    server.responder = Script(root=[repl(STEP_1), repl(STEP_2)], sub=Reply(text="ten"))
    with KernelSession("rlm-python", env) as session:
        assert session.execute("doc = 'abcdefg' * 3")["status"] == "ok"
        yield session


def views(kernel: KernelSession, msg_type: str) -> list[str]:
    return [m["content"]["data"]["text/html"] for _, m in kernel.messages if m["msg_type"] == msg_type]


def test_the_rlm_cell_shows_a_compact_summary_in_notebook_mode(kernel: KernelSession) -> None:
    front = FrontEnd(kernel)
    rlm_cell = front.run_cell("%%rlm -c doc\nHow long is the text, in characters?")
    assert front.drive()["answer"] == "21"
    final = views(kernel, "update_display_data")[-1]
    assert "rlm-run-compact" in final and "<b>RLM</b> · gpt-4o-mini · done" in final
    assert "4 LM call(s) · " in final  # 2 root turns and 2 sub-calls
    assert "Question:</b> How long is" in final
    assert ">step 1 · root · done · 2 sub-call(s) · root LM " in final
    assert ">step 2 · root · done · root LM " in final
    assert "<b>Answer:</b>" in final and ">21</pre>" in final
    # The cells hold the code and its output; the summary holds neither.
    assert "llm_query_batched" not in final and "sizes seen" not in final and "chunks" not in final
    assert "<details" not in final and "<table" not in final
    # Every view the cell showed, from the first, was the compact one. The root's reply streams into
    # it while being written ("root ▸"), code and all, until it becomes a step's cell.
    shown = views(kernel, "update_display_data") + [
        m["content"]["data"]["text/html"] for m in kernel.of(rlm_cell, "display_data")
    ]
    assert shown and all("rlm-run-compact" in html for html in shown)
    assert all("llm_query_batched" not in html for html in shown if "root ▸" not in html)


def test_without_the_extension_the_cell_keeps_the_full_view(kernel: KernelSession) -> None:
    msg_id = kernel.start("%%rlm -c doc\nHow long?")
    kernel.wait_idle(msg_id)
    html = "".join(
        m["content"]["data"].get("text/html", "")
        for m in kernel.of(msg_id, "display_data") + kernel.of(msg_id, "update_display_data")
    )
    assert "llm_query_batched" in html and "sizes seen" in html  # each step's code and output
    assert "rlm-run-compact" not in html
