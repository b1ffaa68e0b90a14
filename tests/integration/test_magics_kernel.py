"""The magics in a stock ``python3`` kernel, driven through jupyter_client as a front end would."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

import pytest
from kernel_session import KernelSession
from scripted_server import Reply, Script, ScriptedServer
from waiting import wait_until

IN_FLIGHT = 32  # --max-concurrency of the runs stopped mid-batch: the calls of a batch in flight at once


def repl(code: str) -> str:
    return f"```repl\n{code}\n```"


def sub_calls_since(server: ScriptedServer, before: int) -> int:
    """Sub-calls that reached the server after its first ``before`` requests."""
    return sum(not r.is_root for r in server.requests[before:])


def cancelled_calls(kernel: KernelSession) -> tuple[str, str, str]:
    """The last run's error, and how many of its sub-calls started and ended cancelled."""
    check = kernel.start(
        "started = sum(e.kind == 'subcall_started' for e in _rlm.trajectory)\n"
        "cancelled = sum(e.kind == 'subcall_finished' and e.error == 'cancelled' for e in _rlm.trajectory)\n"
        "print(_rlm.error, started, cancelled, sep='|')"
    )
    kernel.wait_idle(check)
    error, started, cancelled = kernel.text(check).strip().split("|")
    return error, started, cancelled


def proposed(kernel: KernelSession, editor: str | None, code: str, timeout: float = 20) -> bool:
    """Whether the kernel put ``code`` into the step editor, which it does once the step awaits Run."""

    def shows(m: dict) -> bool:
        return (
            m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == editor
            and code in str(m["content"]["data"].get("state", {}).get("value", ""))
        )

    return any(shows(m) for _, m in kernel.messages) or kernel.pump(shows, timeout) is not None


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def kernel(server: ScriptedServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelSession]:
    env = {
        "OPENAI_BASE_URL": server.openai_base_url,
        "OPENAI_API_KEY": "sk-test",
        "RLM_MODEL": "gpt-4o-mini",
        "RLM_LOG_DIR": str(tmp_path_factory.mktemp("runs")),
    }
    with KernelSession("python3", env) as session:
        assert session.execute("%load_ext rlm_kernel\ndoc = 'abcdefghij' * 100")["status"] == "ok"
        yield session


def test_a_cell_runs_in_the_users_namespace(kernel: KernelSession, server: ScriptedServer) -> None:
    server.responder = Script(
        root=[
            repl(
                "parts = [context[i:i+100] for i in range(0, len(context), 100)]\nr = llm_query_batched(parts)"
            ),
            repl("answer['content'] = f'{len(r)} parts'\nanswer['ready'] = True"),
        ],
        sub="ok",
    )
    kernel.execute("context = 'my own context'")
    msg_id = kernel.start("%%rlm -c doc\nHow many parts?")
    kernel.wait_idle(msg_id)
    shown = kernel.of(msg_id, "display_data")
    assert "application/vnd.jupyter.widget-view+json" in shown[0]["content"]["data"]
    assert shown[-1]["content"]["data"] == {"text/plain": "10 parts", "text/html": "<p>10 parts</p>\n"}
    # The live widget was replaced by static HTML of the same run.
    update = kernel.of(msg_id, "update_display_data")[-1]["content"]["data"]["text/html"]
    assert "Step 1" in update and "10 sub-call(s)" in update and "<details" in update
    assert "Answer:" not in update  # the Markdown answer follows it instead
    assert "put back" in kernel.text(msg_id)
    check = kernel.start("print(context, len(parts), len(r), answer['content'], _rlm.usage.sub.calls)")
    kernel.wait_idle(check)
    assert kernel.text(check).strip() == "my own context 10 10 10 parts 10"


def test_follow_up_runs_build_on_earlier_variables(kernel: KernelSession, server: ScriptedServer) -> None:
    server.responder = Script(root=[repl("FINAL(len(parts) * 2)")])
    msg_id = kernel.start("%rlm doc Double the number of parts you found before.")
    kernel.wait_idle(msg_id)
    assert kernel.of(msg_id, "display_data")[-1]["content"]["data"]["text/plain"] == "20"


def test_the_answer_is_safe_markdown_or_plain_text(kernel: KernelSession, server: ScriptedServer) -> None:
    """An answer never goes out as Markdown the front end would render with its raw HTML live."""
    answer = '**Late:** <img src=x onerror="alert(1)"> ![c](https://example.org/c.png)'
    server.responder = Script(root=[repl(f"FINAL({answer!r})")] * 2)
    msg_id = kernel.start("%rlm doc Which suppliers were late?")
    kernel.wait_idle(msg_id)
    data = kernel.of(msg_id, "display_data")[-1]["content"]["data"]
    assert set(data) == {"text/plain", "text/html"} and data["text/plain"] == answer
    assert data["text/html"] == (
        '<p><strong>Late:</strong> &lt;img src=x onerror="alert(1)"&gt; '
        '<a href="https://example.org/c.png" rel="noopener noreferrer nofollow">🖼 c</a> '
        "<code>https://example.org/c.png</code></p>\n"
    )
    msg_id = kernel.start("%rlm --answer text doc Which suppliers were late?")
    kernel.wait_idle(msg_id)
    assert kernel.of(msg_id, "display_data")[-1]["content"]["data"] == {"text/plain": answer}


def test_user_mistakes_are_one_line(kernel: KernelSession) -> None:
    for code, words in [
        ("%rlm nosuchvar what?", "No variable named 'nosuchvar'"),
        ("%%rlm -c doc --max-iterations x\nq", "invalid int value"),
        ("%%rlm --backend anthropic -c doc\nq", "ANTHROPIC_API_KEY"),
    ]:
        kernel.execute("import os; os.environ.pop('ANTHROPIC_API_KEY', None)")
        reply = kernel.execute(code)
        assert reply["status"] == "error"
        assert reply["ename"] == "UsageError" and words in reply["evalue"], reply["evalue"]
        assert "\n" not in reply["evalue"]


def test_stop_button_cancels_the_calls_in_flight_and_keeps_the_partial_run(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    server.responder = Script(
        root=[repl("kept = 'yes'"), repl("r = llm_query_batched(['slow'] * 64)")],
        sub=Reply(text="late", delay=30),
    )
    before = len(server.requests)
    msg_id = kernel.start(f"%%rlm -c doc --max-concurrency {IN_FLIGHT}\nq")
    kernel.pump(
        lambda m: m["msg_type"] == "comm_open" and m["content"]["data"]["state"].get("description") == "Stop",
        timeout=10,
    )
    stop = kernel.widget("ButtonModel", "Stop")
    assert wait_until(lambda: sub_calls_since(server, before) >= IN_FLIGHT)  # the batch is in flight
    kernel.click(stop)
    assert kernel.wait_idle(msg_id, timeout=25) is not None  # well before the 30-s replies
    error, started, cancelled = cancelled_calls(kernel)
    assert error == "Run cancelled: stopped by the user."
    assert started == cancelled == str(IN_FLIGHT)
    check = kernel.start("print(kept)")
    kernel.wait_idle(check)
    assert kernel.text(check).strip() == "yes"


def test_interrupt_during_a_64_way_batch(kernel: KernelSession, server: ScriptedServer) -> None:
    server.responder = Script(
        root=[repl("r = llm_query_batched(['slow'] * 64)")], sub=Reply(text="late", delay=30)
    )
    before = len(server.requests)
    msg_id = kernel.start(f"%%rlm -c doc --max-concurrency {IN_FLIGHT}\nq")
    assert wait_until(lambda: sub_calls_since(server, before) >= IN_FLIGHT)  # the batch is in flight
    kernel.km.interrupt_kernel()
    assert kernel.wait_idle(msg_id, timeout=25) is not None  # well before the 30-s replies
    error, started, cancelled = cancelled_calls(kernel)
    assert "interrupted" in error
    assert started == cancelled == str(IN_FLIGHT)  # every call in flight cancelled
    check = kernel.start("print(1 + 1)")
    kernel.wait_idle(check)
    assert kernel.text(check).strip() == "2"  # the kernel goes on


def test_widget_messages_are_throttled_under_a_256_way_batch(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    server.responder = Script(
        root=[repl("r = llm_query_batched([f'p{i}' for i in range(256)])"), repl("FINAL(len(r))")],
        sub=lambda req: Reply(text="ok", delay=0.2 + (int(req.last_user[1:]) % 16) * 0.1),
    )
    msg_id = kernel.start("%%rlm -c doc\nq")
    assert kernel.wait_idle(msg_id, timeout=60) is not None
    # When the kernel sent each update (its own clock, in the header), not when this busy test read it.
    updates = [
        m["header"]["date"].timestamp()
        for _, m in kernel.messages
        if m["msg_type"] == "comm_msg"
        and m["parent_header"].get("msg_id") == msg_id
        and m["content"]["data"].get("method") == "update"
    ]
    # A redraw sends the pieces that changed (the head, the running step, the reply being written)
    # one right after another: a gap of 20 ms starts the next redraw.
    redraws = [updates[0], *(t for before, t in pairwise(updates) if t - before > 0.02)]
    span = updates[-1] - updates[0]
    assert len(redraws) >= 5
    assert len(redraws) / max(span, 1.0) <= 12, (len(redraws), span)
    assert len(updates) <= 4 * len(redraws), (len(updates), len(redraws))


def test_step_mode_waits_for_the_human_and_records_the_edit(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    server.responder = Script(root=[repl("x = 1\nprint(x)"), repl("FINAL(x)")])
    msg_id = kernel.start("%%rlm -c doc --mode step\nq")
    kernel.pump(
        lambda m: (
            m["msg_type"] == "comm_open" and m["content"]["data"]["state"].get("description") == "Run step"
        ),
        timeout=10,
    )
    editor = kernel.widget("TextareaModel")
    assert proposed(kernel, editor, "print(x)")  # step 1 waits in the editor
    kernel.set_value(editor, "x = 41 + 1\nprint(x)\n")
    kernel.click(kernel.widget("ButtonModel", "Run step"))
    assert proposed(kernel, editor, "FINAL(x)")  # step 2 waits in the editor
    kernel.click(kernel.widget("ButtonModel", "Run step"))  # the second step, as proposed
    assert kernel.wait_idle(msg_id, timeout=20) is not None
    assert kernel.of(msg_id, "display_data")[-1]["content"]["data"]["text/plain"] == "42"
    second = [r for r in server.requests if r.is_root][-1].last_user
    assert "A human edited your step 1" in second and "x = 41 + 1" in second


def test_with_no_key_the_bundled_model_is_said_before_its_first_fetch(tmp_path) -> None:
    """The one line that says why 491 MB are coming arrives before the fetch's own line and bar, in a
    real kernel, whose stdout and stderr are sent on their own timers. The fetch here fails at once
    (an empty cache, no index to reach): the line must have been sent all the same."""
    (tmp_path / "wheels").mkdir()
    env = {
        "OPENAI_API_KEY": "",
        "ANTHROPIC_API_KEY": "",
        "RLM_MODEL": "",
        "RLM_KERNEL_CACHE": str(tmp_path / "cache"),
        "RLM_KERNEL_FIND_LINKS": str(tmp_path / "wheels"),
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_FIND_LINKS": "",
        "PIP_RETRIES": "0",
        "PIP_TIMEOUT": "1",
    }
    with KernelSession("python3", env) as kernel:
        assert kernel.execute("%load_ext rlm_kernel\ndoc = 'abc'")["status"] == "ok"
        msg_id = kernel.start("%rlm doc How long is it?")
        kernel.wait_idle(msg_id, timeout=60)
        said = [m["content"]["text"] for m in kernel.of(msg_id, "stream")]
        assert said and said[0].startswith("No API key found"), said
        assert "Fetching qwen2.5-coder-0.5b" in "".join(said[1:]), said
        assert "UsageError: pip could not download" in "".join(said), said  # one line, and no run
        assert "\x1b" not in "".join(said), said  # pip's colours kept out of it
