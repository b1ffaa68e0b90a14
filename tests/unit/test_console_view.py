"""The console view prints each root reply whole: what streamed, and what the reply holds past it."""

from __future__ import annotations

import io

from rlm_kernel.console import ConsoleView
from rlm_kernel.events import RootReply, RootToken, RunEnded, RunStarted, StepFinished, StepStarted

RUN = {"run_id": "r1", "ts": 0.0}


def printed(*events: object) -> str:
    view = ConsoleView(io.StringIO())
    view(RunStarted(**RUN, question="q", context_meta={}, model="qwen", sub_model="qwen"))
    for event in events:
        view(event)  # type: ignore[arg-type]
    return view.stream.getvalue()  # type: ignore[attr-defined]


def test_the_closing_that_the_server_never_streamed_is_printed_before_the_reply_line() -> None:
    """The small profile starts the reply (`search("`) and stops the server at the call's end: the
    engine adds `")`, which no RootToken carried. The console printed the reply without it."""
    start, written = '```repl\nhits = search("', "secret code"
    code = f'hits = search("{written}")'
    out = printed(
        RootToken(**RUN, turn=1, text=start),  # the prefill, streamed first
        RootToken(**RUN, turn=1, text="secret "),
        RootToken(**RUN, turn=1, text="code"),
        RootReply(**RUN, turn=1, text=f'{start}{written}")', model="qwen", input_tokens=10, output_tokens=3),
        StepStarted(**RUN, step=1, code=code),
        StepFinished(**RUN, step=1, output="1 hit"),
    )
    lines = out.splitlines()
    reply_line = lines.index("   (10 in / 3 out tokens, 0.0 s)")
    # The reply's last line, whole, then the closing fence the stop sequence dropped, then its usage.
    assert lines[reply_line - 2 : reply_line] == [code, "```"]
    assert lines[reply_line + 1] == "▶ step 1"


def test_a_reply_that_streamed_whole_is_printed_once_and_the_next_one_starts_afresh() -> None:
    out = printed(
        RootToken(**RUN, turn=1, text="Looking "),
        RootToken(**RUN, turn=1, text="first."),
        RootReply(**RUN, turn=1, text="Looking first.", model="qwen"),
        RootToken(**RUN, turn=2, text="Done."),
        RootReply(**RUN, turn=2, text="Done.", model="qwen"),
        RunEnded(**RUN, response="42", error=None, iterations=2, elapsed_s=1.0),
    )
    lines = out.splitlines()
    assert lines[1:5] == [
        "root ▸ Looking first.",
        "   (0 in / 0 out tokens, 0.0 s)",
        "root ▸ Done.",
        "   (0 in / 0 out tokens, 0.0 s)",
    ]


def test_a_reply_whose_stop_sequence_dropped_the_closing_fence_is_printed_as_a_whole_block() -> None:
    """The small profile's stop sequence ends the reply at its closing fence, which never arrives:
    the printed reply closed its code block all the same, before its usage line."""
    out = printed(
        RootToken(**RUN, turn=1, text="Counting.\n```repl\n"),
        RootToken(**RUN, turn=1, text="print(len(context))\n"),
        RootReply(**RUN, turn=1, text="Counting.\n```repl\nprint(len(context))\n", model="qwen"),
        RootReply(**{**RUN, "run_id": "c1"}, depth=1, turn=1, text="```python\nx = 1", model="qwen"),
    )
    assert out.splitlines()[1:] == [
        "root ▸ Counting.",
        "```repl",
        "print(len(context))",
        "```",
        "   (0 in / 0 out tokens, 0.0 s)",
        "  root ▸ ```python",
        "  x = 1",
        "  ```",
        "     (0 in / 0 out tokens, 0.0 s)",
    ]


def test_a_reply_with_its_fences_closed_is_printed_as_it_is() -> None:
    text = "```repl\nx = 1\n```\nFINAL(x)"
    out = printed(RootToken(**RUN, turn=1, text=text), RootReply(**RUN, turn=1, text=text, model="qwen"))
    assert out.splitlines()[1:] == [
        "root ▸ ```repl",
        "x = 1",
        "```",
        "FINAL(x)",
        "   (0 in / 0 out tokens, 0.0 s)",
    ]
