"""HTML for a run: the live widget's body and the static summary left in the notebook are the same
markup, so a saved notebook shows the run on GitHub and nbviewer without widget state."""

from __future__ import annotations

from html import escape

from .state import CallRow, RunState, StepView

__all__ = ["render_run", "highlight"]

MAX_ROWS = 300
STATUS = {"running": "⏳ running", "done": "✓ done", "error": "✗ error", "cancelled": "⊘ cancelled"}
_STYLE = (
    "font-family: var(--jp-ui-font-family, sans-serif); font-size: 12.5px; line-height: 1.45;"
    " border-left: 3px solid #7c4dff; padding: 4px 10px; margin: 2px 0"
)
_PRE = (
    "white-space: pre-wrap; margin: 4px 0; padding: 6px 8px; max-height: 24em; overflow: auto;"
    " background: var(--jp-layout-color2, #f5f5f5); border-radius: 3px; font-size: 12px"
)


def highlight(code: str) -> str:
    """Python code as HTML with inline colours (pygments), or escaped text without it."""
    try:
        from pygments import highlight as pyg_highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return f'<pre style="{_PRE}">{escape(code)}</pre>'
    formatter = HtmlFormatter(noclasses=True, nobackground=True, cssstyles=_PRE)
    return pyg_highlight(code, PythonLexer(), formatter)


def _money(cost: float | None) -> str:
    return "—" if cost is None else f"${cost:.4f}"


def _tokens(n_in: int, n_out: int) -> str:
    return f"{n_in:,} in / {n_out:,} out"


def _header(state: RunState) -> str:
    total = state.usage.total
    if not state.ended:
        status = f"running · {state.running_calls()} call(s) in flight"
    elif state.error:
        status = f"ended: {escape(state.error)}"
    else:
        status = "done"
    cost = "unknown" if total.cost is None else f"${total.cost:.4f}"
    return (
        f"<div><b>RLM</b> · {escape(state.model)} (sub-calls: {escape(state.sub_model)}) · {status}</div>"
        f'<div style="color: var(--jp-ui-font-color2, #555)">{total.calls} LM call(s) · '
        f"{_tokens(total.input_tokens, total.output_tokens)} tokens · {total.cached_tokens:,} cached · "
        f"cost {cost} · {state.elapsed_s:.1f} s</div>"
    )


def _row(row: CallRow) -> str:
    latency = "" if row.latency_s is None else f"{row.latency_s:.2f} s"
    prompt = escape(row.prompt)
    short = prompt if len(prompt) <= 60 else prompt[:60] + "…"
    error = (
        f'<div style="color:#c62828">{escape(row.error)}</div>'
        if row.error and row.error != "cancelled"
        else ""
    )
    return (
        f"<tr><td>{STATUS.get(row.status, row.status)}</td><td>{escape(row.kind)}</td>"
        f"<td>{escape(row.model)}</td><td>{row.depth}</td>"
        f"<td>{_tokens(row.input_tokens, row.output_tokens)}</td>"
        f"<td>{latency}</td><td>{_money(row.cost)}</td>"
        f"<td><details><summary>{short}</summary><div style='white-space:pre-wrap'>{prompt}</div></details>"
        f"{error}</td></tr>"
    )


def _calls(view: StepView) -> str:
    if not view.calls:
        return ""
    parts = []
    for batch_id, (done, size) in view.batches().items():
        parts.append(
            f"<div>batch {escape(batch_id)}: "
            f'<progress value="{done}" max="{size}"></progress> {done}/{size}</div>'
        )
    rows = list(view.calls.values())
    shown = "".join(_row(r) for r in rows[:MAX_ROWS])
    more = f"<div>… {len(rows) - MAX_ROWS} more</div>" if len(rows) > MAX_ROWS else ""
    head = "".join(
        f"<th style='text-align:left'>{h}</th>"
        for h in ("status", "kind", "model", "depth", "tokens", "latency", "cost", "prompt")
    )
    running = sum(r.status == "running" for r in rows)
    open_ = " open" if running else ""
    return (
        "".join(parts)
        + f"<details{open_}><summary>{len(rows)} sub-call(s)</summary>"
        + f"<table style='border-collapse: collapse; font-size: 12px'><tr>{head}</tr>{shown}</table>{more}"
        + "</details>"
    )


def _step(view: StepView, is_last: bool) -> str:
    bits = []
    if view.calls:
        bits.append(f"{len(view.calls)} sub-call(s)")
    if view.elapsed_s is not None:
        bits.append(f"{view.elapsed_s:.2f} s")
    if view.error:
        bits.append("error")
    if view.edited:
        bits.append("edited by a human")
    summary = f"Step {view.step}" + (" · " + " · ".join(bits) if bits else "")
    output = ""
    if view.output is None:
        output = "<div><i>running…</i></div>"
    elif view.output.strip():
        output = f'<pre style="{_PRE}">{escape(view.output)}</pre>'
    return (
        f"<details{' open' if is_last else ''}><summary>{summary}</summary>"
        f"{highlight(view.code)}{output}{_calls(view)}</details>"
    )


def render_run(state: RunState) -> str:
    """The whole run as one HTML fragment."""
    parts = [_header(state)]
    last = state.current_step
    parts.extend(
        _step(view, view.step == last) for view in sorted(state.steps.values(), key=lambda v: v.step)
    )
    if state.streaming and not state.ended:
        parts.append(f'<div style="{_PRE}">root ▸ {escape(state.streaming)}</div>')
    if state.answer is not None and state.ended:
        parts.append(f"<div><b>Answer:</b> {escape(state.answer[:2000])}</div>")
    return f'<div class="rlm-run" style="{_STYLE}">' + "".join(parts) + "</div>"
