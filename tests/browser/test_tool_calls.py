"""Tool calls in a real JupyterLab: a notebook defines two functions, a `%%rlm` cell offers them to
the root's code (``--tools``) and to its sub-calls (``--sub-tools``), and the scripted sub-model
asks for them through function calling. The runs panel shows each tool call under the sub-call
whose model asked for it (and the code's under its step); the `%%rlm` cell's summary counts
and names them."""

from __future__ import annotations

from typing import Any

from pages import (
    answered,
    cells,
    open_notebook,
    repl,
    roots,
    run_cell,
    runs_view,
    shoot,
    show_runs,
    subs,
    wait_until,
    write_notebook,
)
from scripted_server import Reply, Request, Script, ScriptedServer

TOOLS_CELL = '''\
FILES = {"a.txt": "The launch is on 12 May.", "b.txt": "Budget: 40,000 euros."}
doc = "Two files: a.txt and b.txt."

def list_files(prefix: str = "") -> list[str]:
    """The names of the files, those starting with ``prefix``."""
    return sorted(n for n in FILES if n.startswith(prefix))

def open_file(name: str) -> str:
    """A file's text.

    Args:
        name: the file's name, as list_files gives it
    """
    return FILES[name]'''

ROOT = [
    repl(
        "List the files, then ask a sub-model to read them.",
        'names = list_files()\nr = llm_query("When is the launch?")\nprint(names, r)',
    ),
    repl("It answered.", "FINAL(r)"),
]

# The tool calls of the panel's DOM (labextension/README.md, "Browser tests: hooks").
TOOLS_VIEW = """() => Array.from(document.querySelectorAll('#rlm-runs-panel .rlm-step')).map(s => {
  const read = t => ({tool: t.dataset.tool, status: t.dataset.status, text: t.textContent});
  return {
    step: Number(s.dataset.step),
    code: Array.from(s.querySelectorAll(':scope > .rlm-code-tools .rlm-tool')).map(read),
    calls: Array.from(s.querySelectorAll('.rlm-call')).map(c => ({
      id: c.dataset.callId,
      tools: Array.from(c.querySelectorAll('.rlm-tool')).map(read),
    })),
  };
})"""


def reader(request: Request) -> Reply:
    """The sub-model: asks for the files, one of them missing, then answers from what it read."""
    if not request.tool_results:
        return Reply(tool_calls=[("list_files", {}), ("open_file", {"name": "a.txt"})])
    if len(request.tool_results) == 2:
        return Reply(tool_calls=[("open_file", {"name": "c.txt"})])
    return Reply(text="The launch is on " + request.tool_results[1].split(" on ")[1])


def test_the_panel_and_the_summary_show_tool_calls_under_their_sub_call(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(root=ROOT, sub=reader)
    name = write_notebook(
        lab,
        "tools.ipynb",
        TOOLS_CELL,
        "%%rlm -c doc --tools list_files --sub-tools open_file,list_files\nWhen is the launch?",
    )
    open_notebook(page, lab, name)
    show_runs(page)
    run_cell(page, 0)
    run_cell(page, 1)

    view = wait_until(
        page, lambda: cells(page), lambda cs: len(cs) == 5 and answered(cs[4]), "two steps and the answer"
    )
    assert "The launch is on 12 May." in view[4]["markdown"]
    assert len(roots(lm_server)) == 2 and len(subs(lm_server)) == 3  # one sub-call, three rounds
    assert all(r.tools == ["open_file", "list_files"] for r in subs(lm_server))

    # The panel: the sub-call's three tool calls under it, the code's one under step 1.
    steps = wait_until(
        page,
        lambda: page.evaluate(TOOLS_VIEW),
        lambda ss: len(ss) == 2 and len(ss[0]["calls"]) == 1 and len(ss[0]["calls"][0]["tools"]) == 3,
        "step 1's sub-call with its tool calls in the panel",
    )
    (call,) = steps[0]["calls"]
    assert [(t["tool"], t["status"]) for t in call["tools"]] == [
        ("list_files", "done"),
        ("open_file", "done"),
        ("open_file", "error"),
    ]
    assert call["tools"][1]["text"].startswith('↳ open_file(name="a.txt")24 chars · ')
    assert "✗ KeyError: 'c.txt'" in call["tools"][2]["text"]
    assert [(t["tool"], t["status"]) for t in steps[0]["code"]] == [("list_files", "done")]
    assert steps[0]["code"][0]["text"].startswith("↳ list_files()")
    assert steps[1]["calls"] == [] and steps[1]["code"] == []
    run = wait_until(
        page, lambda: runs_view(page), lambda v: v["runs"][0]["status"] == "done", "the run done in the panel"
    )["runs"][0]
    assert " · 4 tool calls" in run["totals"]

    # The %%rlm cell's summary counts them in its totals and names them on step 1's line.
    summary = wait_until(
        page,
        lambda: cells(page)[1]["output"],
        lambda text: text.startswith("RLM · gpt-4o-mini · done"),
        "the %%rlm cell's final summary",
    )
    assert " LM call(s) · 4 tool call(s) · " in summary
    assert (
        "step 1 · root · done · 1 sub-call(s) · 4 tool call(s): list_files × 2, open_file × 2, 1 failed"
        in summary
    )
    shoot(page, "tool-calls.png")
