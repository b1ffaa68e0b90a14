"""The run view's state and HTML, without widgets."""

from rlm_kernel.events import (
    AnswerDoubted,
    HumanEdit,
    RootReply,
    RunEnded,
    RunStarted,
    RunWarning,
    StepFinished,
    StepStarted,
    SubcallFinished,
    SubcallStarted,
    ToolCalled,
)
from rlm_kernel.jupyter.render import LIVE_ROWS, render_run, tool_call_text
from rlm_kernel.view import RunState, ToolRow


def state_with_batch(finished: int, size: int = 20) -> RunState:
    state = RunState()
    state.apply(RunStarted(run_id="r", question="q", context_meta={}, model="root-m", sub_model="sub-m"))
    state.apply(
        RootReply(run_id="r", turn=1, text="t", model="root-m", input_tokens=10, output_tokens=2, cost=0.5)
    )
    state.apply(StepStarted(run_id="r", step=1, code="out = llm_query_batched(parts)"))
    for i in range(size):
        state.apply(
            SubcallStarted(
                run_id="r",
                call_id=f"c{i}",
                step=1,
                model="sub-m",
                prompt_preview=f"<part {i}>",
                prompt_chars=8,
                batch_id="b1",
                batch_size=size,
            )
        )
    for i in range(finished):
        state.apply(
            SubcallFinished(
                run_id="r",
                call_id=f"c{i}",
                step=1,
                model="sub-m",
                input_tokens=5,
                output_tokens=1,
                cost=0.25,
                response_preview=f"reply {i}",
                batch_id="b1",
            )
        )
    return state


def test_state_folds_calls_under_their_step_with_totals():
    state = state_with_batch(finished=5)
    view = state.steps[1]
    assert view.batches() == {"b1": (5, 20)}
    assert state.running_calls() == 15
    assert state.usage.total.calls == 6 and state.usage.total.cost == 0.5 + 5 * 0.25


def test_a_child_runs_calls_attach_to_the_parents_step():
    state = state_with_batch(finished=0, size=1)
    state.apply(
        RunStarted(
            run_id="child", parent_id="r", depth=1, question=None, context_meta={}, model="m", sub_model="m"
        )
    )
    state.apply(
        SubcallStarted(
            run_id="child",
            parent_id="r",
            depth=1,
            call_id="k1",
            step=1,
            model="m",
            prompt_preview="deep",
            prompt_chars=4,
        )
    )
    assert state.steps[1].calls["k1"].depth == 1


def test_live_view_has_nothing_to_collapse_and_lists_running_calls_first():
    html = render_run(state_with_batch(finished=15))
    assert "<details" not in html  # a redraw would reset what the user opened
    assert "15/20 finished · 5 running" in html
    assert html.index("running</td>") < html.index("done</td>")
    assert html.count("<tr>") == 1 + LIVE_ROWS and f"and {20 - LIVE_ROWS} more" in html
    assert "&lt;part 0&gt;" in html and "<part 0>" not in html  # escaped


def test_final_view_is_collapsible_and_complete():
    state = state_with_batch(finished=20)
    state.apply(StepFinished(run_id="r", step=1, output="done\n"))
    state.apply(RunEnded(run_id="r", response="42", error=None, iterations=1, elapsed_s=2.0))
    html = render_run(state)
    assert "<details open><summary>Step 1 · 20 sub-call(s)" in html
    assert html.count("<tr>") == 21 and "reply 19" in html
    assert "<b>Answer:</b>" in html and "Answer" not in render_run(state, answer=False)


def test_the_status_says_what_the_run_waits_for():
    state = RunState()
    state.apply(RunStarted(run_id="r", question="q", context_meta={}, model="m", sub_model="m"))
    state.apply(RootReply(run_id="r", turn=1, text="t", model="m", latency_s=14.2))
    state.apply(StepStarted(run_id="r", step=1, code="print(1)"))
    assert "running" in render_run(state)
    state.waiting_for = 1  # step mode: the step waits for the human
    html = render_run(state)
    assert (
        "waiting for you to run step 1" in html
        and "waiting for you to run it" in html
        and "running" not in html
    )
    state.waiting_for, state.stopping = None, True  # Stop pressed
    html = render_run(state)
    assert "stopping…" in html and "running" not in html
    state.apply(RunEnded(run_id="r", response=None, error="stopped by the user", iterations=1, elapsed_s=1.0))
    html = render_run(state)
    assert "stopped before it ran" in html and "running" not in html


def test_a_step_shows_the_root_lm_time_beside_its_own():
    state = RunState()
    state.apply(RunStarted(run_id="r", question="q", context_meta={}, model="m", sub_model="m"))
    state.apply(RootReply(run_id="r", turn=1, text="t", model="m", latency_s=14.2))
    state.apply(StepStarted(run_id="r", step=1, code="a = 1"))
    state.apply(StepFinished(run_id="r", step=1, output="", elapsed_s=0.001))
    state.apply(StepStarted(run_id="r", step=2, code="b = 2"))  # the same reply's second block
    html = render_run(state)
    assert "root LM 14.20 s · code 0.00 s" in html
    assert state.steps[2].lm_s is None


def test_the_call_table_aligns_its_numbers_and_gives_text_room():
    html = render_run(state_with_batch(3, size=4))
    header = html[html.index("<tr><th") : html.index("</tr>", html.index("<tr><th"))]
    for name in ("tokens", "latency", "cost"):
        cell = header[: header.index(f">{name}</th>")]
        assert cell[cell.rindex("<th") :].startswith('<th style="text-align: right')
    assert 'title="sub-m">sub-m</td>' in html and "max-width: 14em" in html  # a long name is cut, not spilled
    assert "min-width: 16em" in html  # prompts and replies are not squeezed to a few characters


def notebook_run() -> RunState:
    """Two root steps and a human cell, as notebook mode folds them; the run ended with an answer."""
    state = state_with_batch(finished=3, size=3)
    state.apply(StepFinished(run_id="r", step=1, output="SECRET-OUTPUT-1\n", elapsed_s=0.12))
    state.apply(
        RootReply(run_id="r", turn=2, text="t", model="root-m", output_tokens=4, latency_s=1.25, cost=0.25)
    )
    state.apply(StepStarted(run_id="r", step=2, code="total_from_step_two = 2"))
    state.apply(HumanEdit(run_id="r", step=2, proposed="total_from_step_two = 2", executed="edited_code = 3"))
    state.apply(StepFinished(run_id="r", step=2, output="SECRET-OUTPUT-2\n", elapsed_s=0.5))
    state.apply(StepStarted(run_id="r", step=3, code="mine = 1", author="human"))
    state.apply(StepFinished(run_id="r", step=3, output="", elapsed_s=0.01))
    state.apply(RunWarning(run_id="r", code="after_error", text="the answer came from a step that raised"))
    state.apply(RunEnded(run_id="r", response="The answer is 42.", error=None, iterations=2, elapsed_s=3.5))
    return state


def test_the_compact_view_has_the_figures_and_no_step_code_or_output():
    state = notebook_run()
    state.question = "How many {kind} lines? for x in y"
    html = render_run(state, compact=True)
    assert "<b>RLM</b> · root-m (sub-calls: sub-m) · done" in html
    assert "Question:</b> How many {kind} lines? for x in y" in html
    assert "5 LM call(s) · 25 in / 9 out tokens · $1.5000 · 3.5 s" in html  # totals, children included
    assert ">step 1 · root · done · 3 sub-call(s) · root LM 0.00 s · code 0.12 s</div>" in html
    assert ">step 2 · root, edited · done · root LM 1.25 s · code 0.50 s</div>" in html
    assert ">step 3 · human · done · code 0.01 s</div>" in html
    assert "The answer is 42.</pre>" in html and "<b>Answer:</b>" in html
    assert "⚠ the answer came from a step that raised" in html
    assert html.index("<b>Answer:</b>") < html.index("⚠")
    for hidden in ("llm_query_batched", "total_from_step_two", "edited_code", "mine = 1", "SECRET-OUTPUT"):
        assert hidden not in html  # the step cells hold code and output
    assert "<details" not in html and "<table" not in html and "<progress" not in html
    full = render_run(state)  # the in-cell view keeps everything
    assert "SECRET-OUTPUT-1" in full and "edited_code" in full


def test_the_compact_view_says_what_each_step_waits_for_and_how_a_run_ended():
    state = state_with_batch(finished=1, size=3)
    html = render_run(state, compact=True)
    assert ">step 1 · root · running · 3 sub-call(s), 2 running · root LM 0.00 s</div>" in html
    assert "running · 2 call(s) in flight" in html
    state.waiting_for, state.paused = 1, True  # its code started sub-calls: it runs, whatever else holds
    assert ">step 1 · root · running · 3 sub-call(s)" in render_run(state, compact=True)
    state.waiting_for, state.paused = None, False
    state.apply(RunEnded(run_id="r", response=None, error="stopped by the user", iterations=1, elapsed_s=1.0))
    html = render_run(state, compact=True)
    assert "ended: stopped by the user" in html and "<b>Answer:</b>" not in html
    assert ">step 1 · root · stopped before it ran" in html
    state.apply(StepFinished(run_id="r", step=1, output="", error="ValueError: no"))
    assert "step 1 · root · <span" in render_run(state, compact=True)  # the error, in red


def test_a_step_not_yet_run_waits_for_the_human_or_is_paused_but_does_not_say_running():
    state = RunState()
    state.apply(RunStarted(run_id="r", question="q", context_meta={}, model="root-m", sub_model="sub-m"))
    state.apply(StepStarted(run_id="r", step=1, code="x = 1"))
    assert ">step 1 · root · running</div>" in render_run(state, compact=True)
    state.waiting_for = 1
    assert ">step 1 · root · waiting for you to run its cell</div>" in render_run(state, compact=True)
    state.paused = True  # step mode, paused: the step still waits for the human
    assert ">step 1 · root · waiting for you to run its cell</div>" in render_run(state, compact=True)
    state.waiting_for = None  # held back by the pause: nothing runs
    html = render_run(state, compact=True)
    assert "· paused</div>" in html and ">step 1 · root · paused</div>" in html and "running" not in html
    assert "paused: it runs after Resume" in render_run(state)
    state.executing = 1  # its cell runs (it was run before the pause took hold)
    assert ">step 1 · root · running</div>" in render_run(state, compact=True)
    assert "running…" in render_run(state)


def test_the_compact_view_escapes_what_the_run_says():
    state = notebook_run()
    state.question = "<img src=x onerror=alert(1)>"
    state.answer = "<script>alert(1)</script>"
    html = render_run(state, compact=True)
    assert "<img" not in html and "<script" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "&lt;script&gt;" in html


def tool(call_id: str | None, name: str, arguments: str, *, run_id: str = "r", **kw) -> ToolCalled:
    return ToolCalled(run_id=run_id, call_id=call_id, step=1, tool=name, arguments=arguments, **kw)


def run_with_tools() -> RunState:
    """Step 1: the code called list_files itself, and one sub-call's model asked for three tools."""
    state = state_with_batch(finished=0, size=2)
    state.apply(tool(None, "list_files", '{"args": ["a"], "kwargs": {}}', result_chars=9, latency_s=0.01))
    state.apply(tool("c0", "list_files", "{}", result_chars=18, result_preview='["a.txt", "b.txt"]'))
    state.apply(tool("c0", "open_file", '{"name": "a.txt"}', result_chars=24, latency_s=0.25))
    state.apply(tool("c0", "open_file", '{"name": "<b>nope</b>"}', error="KeyError: '<b>nope</b>'"))
    return state


def test_tool_calls_fold_under_their_sub_call_or_the_steps_code():
    state = run_with_tools()
    view = state.steps[1]
    assert [t.tool for t in view.calls["c0"].tools] == ["list_files", "open_file", "open_file"]
    assert view.calls["c1"].tools == []
    assert [(t.tool, t.positional) for t in view.tools] == [("list_files", True)]
    assert view.tool_calls() == 4 and state.tool_calls == 4
    assert view.calls["c0"].tools[2].error == "KeyError: '<b>nope</b>'"


def test_a_child_runs_tool_calls_attach_to_the_parents_step():
    state = state_with_batch(finished=0, size=1)
    ids = {"run_id": "child", "parent_id": "r", "depth": 1}
    state.apply(RunStarted(**ids, question=None, context_meta={}, model="m", sub_model="m"))
    state.apply(SubcallStarted(**ids, call_id="k1", step=1, model="m", prompt_preview="p", prompt_chars=1))
    state.apply(ToolCalled(**ids, call_id="k1", step=1, tool="open_file", arguments="{}"))
    state.apply(ToolCalled(**ids, call_id=None, step=1, tool="list_files", arguments="{}"))
    view = state.steps[1]
    assert [t.tool for t in view.calls["k1"].tools] == ["open_file"]
    assert [(t.tool, t.depth) for t in view.tools] == [("list_files", 1)]


def test_a_tool_call_reads_in_short():
    assert (
        tool_call_text(ToolRow("open_file", '{"name": "b.txt", "start": 8}'))
        == 'open_file(name="b.txt", start=8)'
    )
    assert tool_call_text(ToolRow("f", '{"args": ["a", 2], "kwargs": {"k": null}}', positional=True)) == (
        'f("a", 2, k=null)'
    )
    assert (
        tool_call_text(ToolRow("f", '{"args": 1, "kwargs": {}}')) == "f(args=1, kwargs={})"
    )  # a model's own
    assert tool_call_text(ToolRow("g", "")) == "g()"
    long = tool_call_text(ToolRow("q", '{"text": "' + "x" * 500))  # cut by the event: not JSON
    assert long.startswith('q({"text": "xxx') and long.endswith("…)") and len(long) == len("q()") + 60


def test_each_sub_call_row_lists_its_tool_calls_escaped():
    html = render_run(run_with_tools())  # live: the running step shows whole
    table = html[html.index("<table") :]
    c0 = table.index("&lt;part 0&gt;")
    rows = [table.index(t) for t in ("list_files()", "open_file(name=&quot;a.txt&quot;)", "KeyError")]
    assert c0 < rows[0] < rows[1] < rows[2] < table.index("&lt;part 1&gt;")  # under their sub-call
    assert html.count('<tr class="rlm-tool">') == 3
    assert "18 chars · 0.00 s" in html and "24 chars · 0.25 s" in html
    assert "✗ KeyError: &#x27;&lt;b&gt;nope&lt;/b&gt;&#x27;" in html and "<b>nope" not in html
    assert 'title="list_files {}\n→ [&quot;a.txt&quot;, &quot;b.txt&quot;]"' in html  # the result's start
    code = html[: html.index("<table")]
    assert (
        'tool calls of the code:</div><div class="rlm-tool">' in code and "list_files(&quot;a&quot;)" in code
    )
    assert "Step 1 · 2 sub-call(s) · 4 tool call(s)" in html
    assert "1 LM call(s) · 4 tool call(s) · " in html  # the run's totals (no sub-call has finished)


def test_the_final_view_counts_tool_calls_where_they_fold():
    state = run_with_tools()
    for i in range(2):
        state.apply(
            SubcallFinished(run_id="r", call_id=f"c{i}", step=1, model="sub-m", response_preview="ok")
        )
    state.apply(StepFinished(run_id="r", step=1, output=""))
    state.apply(RunEnded(run_id="r", response="42", error=None, iterations=1, elapsed_s=1.0))
    html = render_run(state)
    assert "<summary>2 sub-call(s), 3 tool call(s)</summary>" in html
    assert "<summary>1 tool call(s) of the code</summary>" in html
    assert html.count('<tr class="rlm-tool">') == 3


def test_the_compact_view_names_each_steps_tool_calls():
    state = run_with_tools()
    state.apply(tool("c1", "<img src=x>", "{}", error="no tool named '<img src=x>'"))
    html = render_run(state, compact=True)
    assert (
        ">step 1 · root · running · 2 sub-call(s), 2 running · 5 tool call(s): list_files × 2, "
        "open_file × 2, &lt;img src=x&gt;, 2 failed · root LM 0.00 s</div>"
    ) in html
    assert "<img" not in html and "<table" not in html
    assert "1 LM call(s) · 5 tool call(s) · " in html


def test_an_answer_sent_back_and_the_unsupported_warning_are_shown():
    state = RunState()
    state.apply(RunStarted(run_id="r", question="How many?", context_meta={}, model="m", sub_model="m"))
    state.apply(AnswerDoubted(run_id="r", content="7", source="answer", reason="not in <anything> printed"))
    state.apply(RunWarning(run_id="r", code="unsupported", text="The answer is not supported: <why>."))
    state.apply(RunEnded(run_id="r", response="7", error=None, iterations=3, elapsed_s=1.0))
    for html in (render_run(state), render_run(state, compact=True)):
        assert "↩ answer sent back to the root: &quot;7&quot;: not in &lt;anything&gt; printed" in html
        assert "⚠ The answer is not supported: &lt;why&gt;." in html
    assert state.answer == "7"


def streaming(*pieces: str) -> RunState:
    """A run whose root reply is still being written: ``pieces`` streamed so far."""
    from rlm_kernel.events import RootToken

    state = RunState()
    state.apply(RunStarted(run_id="r", question="q", context_meta={}, model="root-m", sub_model="sub-m"))
    for piece in pieces:
        state.apply(RootToken(run_id="r", turn=1, text=piece))
    return state


def test_a_streamed_reply_whose_fence_is_still_open_shows_as_a_code_block() -> None:
    """The closing fence has not come yet, or never will (a stop sequence dropped it): the reply's
    code is a code block all the same, with no raw backticks."""
    html = render_run(streaming("Let me look.\n", "```repl\nprint(len(", "context))\n"))
    assert "```" not in html
    assert "Let me look." in html
    assert '<span style="color:var(--jp-mirror-editor-builtin-color, #008000)">print</span>' in html


def test_a_streamed_reply_shows_prose_and_closed_blocks_and_hides_a_fence_being_written() -> None:
    html = render_run(streaming("First:\n```repl\nx = 1\n```\nThen more.\n``", "`re"))
    assert "`" not in html  # neither the closed fence nor the next one, half written
    assert "First:" in html and "Then more." in html
    assert '<span style="color:var(--jp-mirror-editor-number-color, #080)">1</span>' in html
    closing = render_run(streaming("```repl\nx = 1\n`", "`"))  # the closing fence, half written
    assert "`" not in closing


def test_a_streamed_reply_escapes_its_prose_and_its_code() -> None:
    html = render_run(streaming("<b>bold</b>\n```repl\nprint('<script>')"))
    assert "<b>bold</b>" not in html and "<script>" not in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html


def test_a_steps_summary_says_what_its_numbers_are() -> None:
    """Not "6 calls · 6,414/12 · $0": its sub-calls, their tokens in and out, their cost."""
    html = render_run(state_with_batch(finished=5), live=True)
    assert "▾ Step 1 · 20 sub-call(s) · 25 in / 5 out tokens · $1.2500" in html
