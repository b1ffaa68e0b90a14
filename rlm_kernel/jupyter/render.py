"""HTML for a run. The live widget and the static summary left in the notebook share this markup, so
a saved notebook shows the run on GitHub and nbviewer without widget state.

Live views are redrawn up to ten times a second, which would reset any ``<details>`` the user
opened; so the live form has none: finished steps shrink to one line, the step in progress is
shown whole, and its running calls come first. The final form is fully collapsible.

The compact form is for notebook mode, where each step is a cell of its own that holds its code and
output: the run's figures, one line per step, and the answer; no step's code or output.

Every string that comes from a run (code, output, prompts, replies, models, errors, the answer) is
untrusted and goes through :func:`safe.text`; nothing from a run is ever markup here.
"""

from __future__ import annotations

import re
from typing import Any

from ..view import (
    TOOL_ERROR_SHOWN,
    CallRow,
    RunState,
    StepView,
    ToolRow,
    format_seconds,
    format_tokens,
    reply_parts,
    step_bits,
    tool_call_text,
    tool_names,
    totals_line,
)
from . import safe

__all__ = ["render_run", "render_pieces", "highlight", "tool_call_text", "tool_names"]

LIVE_ROWS = 12  # calls listed while running; the final summary lists them all (scrolling)
_BRAND = "var(--jp-brand-color1, #7c4dff)"
_MUTED = "var(--jp-ui-font-color2, #666)"
_STYLE = (
    "font-family: var(--jp-ui-font-family, sans-serif); font-size: 12.5px; line-height: 1.45;"
    f" border-left: 3px solid {_BRAND}; padding: 4px 10px; margin: 2px 0"
)
_PIECE = _STYLE.replace("padding: 4px 10px; margin: 2px 0", "padding: 1px 10px; margin: 0")
_PRE = (
    "white-space: pre-wrap; margin: 4px 0; padding: 6px 8px; max-height: 24em; overflow: auto;"
    " background: var(--jp-layout-color2, #f5f5f5); border-radius: 3px; font-size: 12px;"
    " font-family: var(--jp-code-font-family, monospace); text-align: left"
)
_TD = "text-align: left; padding: 1px 12px 1px 0; white-space: nowrap; vertical-align: top"
_NUM = "text-align: right; padding: 1px 12px 1px 0; white-space: nowrap; font-variant-numeric: tabular-nums"
_STATUS = {
    "running": f'<span style="color:{_BRAND}">●</span> running',
    "done": '<span style="color:var(--jp-success-color1, #2e7d32)">✓</span> done',
    "error": '<span style="color:var(--jp-error-color1, #c62828)">✗</span> error',
    "cancelled": f'<span style="color:{_MUTED}">⊘</span> cancelled',
}
# Prompt and reply: a readable share of the row (not squeezed to a few characters by the others),
# cut with an ellipsis; the final view opens them whole on a click.
_CUT = (
    "min-width: 16em; max-width: 32em; overflow: hidden; text-overflow: ellipsis;"
    " white-space: nowrap; text-align: left; padding: 1px 12px 1px 0"
)
# A long model name is cut too, so it never runs into the numbers beside it.
_MODEL = _TD + "; max-width: 14em; overflow: hidden; text-overflow: ellipsis"
_NUMERIC = frozenset({"depth", "tokens", "latency", "cost"})
_ORDER = {"running": 0, "error": 1, "cancelled": 2, "done": 3}
_ERROR = "var(--jp-error-color1, #c62828)"


def _token_colours() -> list[tuple[object, str]]:
    from pygments.token import Comment, Keyword, Name, Number, Operator, String

    return [
        (Comment, "var(--jp-mirror-editor-comment-color, #408080)"),
        (Keyword, "var(--jp-mirror-editor-keyword-color, #008000)"),
        (Name.Builtin, "var(--jp-mirror-editor-builtin-color, #008000)"),
        (Name.Function, "var(--jp-mirror-editor-def-color, #0000ff)"),
        (Name.Class, "var(--jp-mirror-editor-def-color, #0000ff)"),
        (String, "var(--jp-mirror-editor-string-color, #ba2121)"),
        (Number, "var(--jp-mirror-editor-number-color, #080)"),
        (Operator, "var(--jp-mirror-editor-operator-color, #aa22ff)"),
    ]


def highlight(code: str) -> str:
    """Python code as HTML coloured with JupyterLab's editor colours, so it reads in light and dark
    themes (plain escaped text where pygments is missing)."""
    try:
        from pygments import lex
        from pygments.lexers import PythonLexer
    except ImportError:
        return f'<pre style="{_PRE}">{safe.text(code)}</pre>'
    colours = _token_colours()
    spans = []
    for token, text in lex(code, PythonLexer()):
        colour = next((c for t, c in colours if token in t), None)  # type: ignore[operator]
        spans.append(f'<span style="color:{colour}">{safe.text(text)}</span>' if colour else safe.text(text))
    return f'<pre style="{_PRE}">{"".join(spans).rstrip()}</pre>'


def _money(cost: float | None) -> str:
    return "" if cost is None else f"${cost:.4f}"


def _header(state: RunState, *, warnings: bool = True) -> str:
    if not state.ended and state.stopping:
        status = "stopping…"
    elif not state.ended and state.paused:
        status = "paused"
    elif not state.ended and state.waiting_for is not None:
        status = f"waiting for you to run step {state.waiting_for}"
    elif not state.ended:
        status = f"running · {state.running_calls()} call(s) in flight"
    elif state.error:
        status = f'<span style="color:var(--jp-error-color1, #c62828)">ended: {safe.text(state.error)}</span>'
    else:
        status = "done"
    models = safe.text(state.model)
    if state.sub_model and state.sub_model not in (state.model, "-"):
        models += f" (sub-calls: {safe.text(state.sub_model)})"
    writing = (
        f" · root LM writing: {state.streamed_tokens:,} token(s)"
        if state.streamed_tokens and not state.ended
        else ""
    )
    return (
        f"<div><b>RLM</b> · {models} · {status}</div>"
        f'<div style="color:{_MUTED}">{safe.text(totals_line(state))} · '
        f"{state.elapsed_s:.1f} s{writing}</div>"
        f"{_vote(state)}"
        f"{_warnings(state) if warnings else ''}"
    )


def _vote(state: RunState) -> str:
    return f'<div style="color:{_MUTED}">🗳 {safe.text(state.vote)}</div>' if state.vote else ""


def _warnings(state: RunState) -> str:
    back = "".join(
        f'<div style="color:{_MUTED}">↩ answer sent back to the root: {safe.text(s)}</div>'
        for s in state.sent_back
    )
    return back + "".join(
        f'<div style="color:var(--jp-warn-color1, #e65100)">⚠ {safe.text(w)}</div>' for w in state.warnings
    )


def _expandable(text: str, live: bool) -> str:
    """A table cell's text: cut with an ellipsis (whole in the tooltip); in the final view, a click
    opens it whole."""
    if live or len(text) <= 80:
        return f'<td style="{_CUT}" title="{safe.text(text)}">{safe.text(text[:300])}</td>'
    return (
        f'<td style="text-align: left; min-width: 16em"><details><summary>{safe.text(text[:80])}…</summary>'
        f'<div style="white-space: pre-wrap">{safe.text(text)}</div></details></td>'
    )


def _tool(row: ToolRow) -> str:
    """One tool call's line: what was called, and what it gave (size, time) or its error."""
    # tool_outcome's text, with the error in red.
    if row.error is not None:
        outcome = f'<span style="color:{_ERROR}">✗ {safe.text(row.error[:TOOL_ERROR_SHOWN])}</span>'
    else:
        outcome = f"{format_tokens(row.result_chars)} chars"
    gave = row.error if row.error is not None else row.result_preview
    tip = f"{row.tool} {row.arguments}" + (f"\n→ {gave}" if gave else "")
    return (
        f'<span style="font-family: var(--jp-code-font-family, monospace)" title="{safe.text(tip)}">'
        f"{safe.text(tool_call_text(row))}</span> · {outcome} · {format_seconds(row.latency_s)}"
    )


def _tool_rows(row: CallRow, columns: int) -> str:
    """A sub-call's tool calls, as rows under its own."""
    return "".join(
        f'<tr class="rlm-tool"><td></td><td colspan="{columns - 1}" style="{_TD}; color:{_MUTED}">'
        f"↳ {_tool(t)}</td></tr>"
        for t in row.tools
    )


def _under(row: CallRow, columns: int) -> str:
    """What goes under a sub-call's row: the images it sent, then its tool calls."""
    return _image_row(row, columns) + _tool_rows(row, columns)


def _code_tools(view: StepView, live: bool) -> str:
    """The tool calls the step's code made (and a child run's code, under the step that started it)."""
    if not view.tools:
        return ""
    shown = view.tools[:LIVE_ROWS] if live else view.tools
    lines = "".join(f'<div class="rlm-tool">↳ {_tool(t)}</div>' for t in shown)
    if len(shown) < len(view.tools):
        lines += f'<div style="color:{_MUTED}">… and {len(view.tools) - len(shown)} more</div>'
    if live:
        return f'<div style="color:{_MUTED}">tool calls of the code:</div>{lines}'
    return f"<details><summary>{len(view.tools)} tool call(s) of the code</summary>{lines}</details>"


# A thumbnail is shown only as a small PNG data URL of plain base64: an address from a run (a restored
# notebook's, say) could otherwise load a remote image, or be something other than an image.
_THUMBNAIL = re.compile(r"data:image/png;base64,[A-Za-z0-9+/]+={0,2}")
_THUMBNAIL_CHARS = 64_000
_IMAGES_SHOWN = 8


def _images(images: list[dict[str, Any]]) -> str:
    """A sub-call's images: each a thumbnail where the record holds one, else its size as text."""
    if not images:
        return ""
    parts = []
    for image in images[:_IMAGES_SHOWN]:
        size = f"{image.get('width', '?')}×{image.get('height', '?')}"
        kind = str(image.get("media_type", "image")).split("/")[-1].upper()
        about = safe.text(f"{kind} {size}, {int(image.get('bytes', 0) or 0):,} bytes")
        thumb = image.get("thumbnail")
        if isinstance(thumb, str) and len(thumb) <= _THUMBNAIL_CHARS and _THUMBNAIL.fullmatch(thumb):
            parts.append(
                f'<img src="{thumb}" alt="{about}" title="{about}" '
                'style="max-width: 48px; max-height: 48px; vertical-align: middle; margin-right: 2px">'
            )
        else:
            parts.append(f'<span style="color:{_MUTED}; margin-right: 4px">[{about}]</span>')
    more = len(images) - _IMAGES_SHOWN
    if more > 0:
        parts.append(f'<span style="color:{_MUTED}">+{more} more</span>')
    return "".join(parts)


def _image_row(row: CallRow, columns: int) -> str:
    """The images a sub-call sent, as a row under its own."""
    if not row.images:
        return ""
    return (
        f'<tr class="rlm-images"><td></td><td colspan="{columns - 1}" style="{_TD}; color:{_MUTED}">'
        f"↳ {len(row.images)} image(s): {_images(row.images)}</td></tr>"
    )


def _row(row: CallRow, show_depth: bool, live: bool) -> str:
    done = row.status != "running"
    tokens = f"{row.input_tokens:,} in / {row.output_tokens:,} out" if done else ""
    latency = f"{row.latency_s:.2f} s" if done and row.latency_s is not None else ""
    reply = row.error if row.error and row.status != "cancelled" else row.reply
    depth = f'<td style="{_NUM}">{row.depth}</td>' if show_depth else ""
    return (
        f'<tr><td style="{_TD}">{_STATUS.get(row.status, safe.text(row.status))}</td>'
        f'<td style="{_MODEL}" title="{safe.text(row.model)}">{safe.text(row.model)}</td>{depth}'
        f'<td style="{_NUM}">{tokens}</td><td style="{_NUM}">{latency}</td>'
        f'<td style="{_NUM}">{_money(row.cost)}</td>'
        f"{_expandable(row.prompt, live)}{_expandable(reply or '', live)}</tr>"
    )


def _calls(view: StepView, live: bool) -> str:
    if not view.calls:
        return ""
    parts = []
    for batch_id, (done, size) in view.batches().items():
        model = next(r.model for r in view.calls.values() if r.batch_id == batch_id)
        parts.append(
            f"<div>llm_query_batched × {size} · {safe.text(model)} "
            f'<progress value="{done}" max="{size}" style="width: 16em; accent-color: {_BRAND}"></progress> '
            f"{done}/{size} finished{f' · {size - done} running' if done < size else ''}</div>"
        )
    rows = (
        sorted(view.calls.values(), key=lambda r: _ORDER.get(r.status, 9))
        if live
        else list(view.calls.values())
    )
    shown = rows[:LIVE_ROWS] if live else rows
    show_depth = any(r.depth for r in rows)
    head = [
        "status",
        "model",
        *(["depth"] if show_depth else []),
        "tokens",
        "latency",
        "cost",
        "prompt",
        "reply",
    ]
    th = "".join(
        f'<th style="{_NUM if h in _NUMERIC else _TD}; position: sticky; top: 0; '
        f'background: var(--jp-layout-color1, #fff)">{h}</th>'
        for h in head
    )
    table = (
        '<div style="max-height: 22em; overflow-y: auto">'
        '<table style="border-collapse: collapse; font-size: 12px; width: 100%">'
        f"<tr>{th}</tr>"
        f"{''.join(_row(r, show_depth, live) + _under(r, len(head)) for r in shown)}</table></div>"
    )
    more = (
        f'<div style="color:{_MUTED}">… and {len(rows) - len(shown)} more</div>'
        if len(shown) < len(rows)
        else ""
    )
    if live:
        return "".join(parts) + table + more
    tools = sum(len(r.tools) for r in rows)
    called = f", {tools} tool call(s)" if tools else ""
    return "".join(parts) + f"<details><summary>{len(rows)} sub-call(s){called}</summary>{table}</details>"


def _tally(view: StepView) -> str:
    """A step's sub-calls with what each figure is: "6 sub-call(s) · 6,414 in / 12 out tokens · $0.0012"."""
    rows = view.calls.values()
    tokens_in, tokens_out = sum(r.input_tokens for r in rows), sum(r.output_tokens for r in rows)
    costs = [r.cost for r in rows if r.cost is not None]
    tokens = f" · {tokens_in:,} in / {tokens_out:,} out tokens" if tokens_in or tokens_out else ""
    cost = f" · ${sum(costs):.4f}" if costs else ""
    return f"{len(view.calls)} sub-call(s){tokens}{cost}"


def _summary(view: StepView) -> str:
    bits = [f"Step {view.step}"]
    if view.calls:
        bits.append(_tally(view))
    if tools := view.tool_calls():
        bits.append(f"{tools} tool call(s)")
    if view.lm_s is not None:
        bits.append(f"root LM {view.lm_s:.2f} s")
    if view.elapsed_s is not None:
        bits.append(f"code {view.elapsed_s:.2f} s")
    if view.error:
        bits.append('<span style="color:var(--jp-error-color1, #c62828)">error</span>')
    if view.edited:
        bits.append("edited by a human")
    return " · ".join(bits)


def _output(view: StepView, state: RunState) -> str:
    if view.output is None:
        if state.waiting_for == view.step:
            doing = "waiting for you to run it"
        elif state.stopping or state.ended:
            doing = "stopped before it ran" if state.ended else "stopping…"
        elif state.step_status(view) == "paused":
            doing = "paused: it runs after Resume"
        else:
            doing = "running…"
        return f'<div style="color:{_MUTED}"><i>{doing}</i></div>'
    return f'<pre style="{_PRE}">{safe.text(view.output)}</pre>' if view.output.strip() else ""


def _step(view: StepView, state: RunState, current: bool, live: bool) -> str:
    body = (
        highlight(view.code) + _output(view, state) + _code_tools(view, live) + _calls(view, live and current)
    )
    if live:
        return f"<div><b>▾ {_summary(view)}</b>{body}</div>" if current else f"<div>▸ {_summary(view)}</div>"
    return f"<details{' open' if current else ''}><summary>{_summary(view)}</summary>{body}</details>"


def _step_line(view: StepView, state: RunState) -> str:
    """:func:`rlm_kernel.view.step_line`, escaped, with an error in red."""
    bits = [safe.text(b) for b in step_bits(view, state)]
    if state.step_status(view) == "error":
        bits[2] = '<span style="color:var(--jp-error-color1, #c62828)">error</span>'
    return f'<div class="rlm-run-step">{" · ".join(bits)}</div>'


_PYTHON = frozenset({"repl", "python", "py", "python3"})


def _part(lang: str | None, body: str) -> str:
    if lang is None:
        return f'<div style="white-space: pre-wrap">{safe.text(body)}</div>'
    return highlight(body) if lang in _PYTHON else f'<pre style="{_PRE}">{safe.text(body)}</pre>'


def _reply(text: str) -> str:
    """A root reply as HTML, never its fences: prose as text, each block as code (Python coloured),
    an open one included."""
    return "".join(_part(lang, body) for lang, body in reply_parts(text))


def _tail(state: RunState, answer: bool) -> str:
    """The root's reply as it is written (until it becomes a step), or the answer once the run ended."""
    if state.streaming and not state.ended:
        writing = _reply(state.streaming)
        return f'<div class="rlm-streaming"><div style="color:{_MUTED}">root ▸</div>{writing}</div>'
    if answer and state.answer is not None and state.ended:
        return f'<div><b>Answer:</b></div><pre style="{_PRE}">{safe.text(state.answer[:4000])}</pre>'
    return ""


def _compact(state: RunState, answer: bool) -> str:
    parts = [_header(state, warnings=False)]
    if state.question:
        parts.append(f"<div><b>Question:</b> {safe.text(state.question[:600])}</div>")
    steps = sorted(state.steps.values(), key=lambda v: v.step)
    if steps:
        parts.append(
            f'<div style="color:{_MUTED}">Each step is a cell below, with its code and output.</div>'
        )
    parts.extend(_step_line(v, state) for v in steps)
    parts.append(_tail(state, answer))
    parts.append(_warnings(state))
    return f'<div class="rlm-run rlm-run-compact" style="{_STYLE}">' + "".join(parts) + "</div>"


def render_run(
    state: RunState, *, live: bool | None = None, answer: bool = True, compact: bool = False
) -> str:
    """The whole run as one HTML fragment: live (no collapsible parts) while it runs, else final.
    ``compact``: a summary without the steps' code and output, for notebook mode, whose cells hold them."""
    if compact:
        return _compact(state, answer)
    parts = _parts(state, not state.ended if live is None else live, answer)
    return f'<div class="rlm-run" style="{_STYLE}">' + "".join(parts) + "</div>"


def render_pieces(state: RunState) -> list[str]:
    """The live run as :func:`render_run` draws it, in pieces (its head, each step, the reply being
    written) that a widget keeps one by one, so an update sends only the pieces that changed."""
    parts = _parts(state, not state.ended, True)
    return [f'<div class="rlm-run" style="{_PIECE}">{part}</div>' if part else "" for part in parts]


def _parts(state: RunState, live: bool, answer: bool) -> list[str]:
    """The run's head, each step (the current one open), and its tail."""
    last = state.current_step
    steps = sorted(state.steps.values(), key=lambda v: v.step)
    return [_header(state), *(_step(v, state, v.step == last, live) for v in steps), _tail(state, answer)]
