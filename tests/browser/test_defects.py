"""Notebook mode in the browser: where the cells of a run go, what they say, and what a second view
of the notebook, a reopened notebook or a renamed one keep. Same setup as test_lab.py: a real
JupyterLab in Chromium, the RLM Python kernel, the scripted LM server.
"""

from __future__ import annotations

import json
from typing import Any

from pages import (
    PANEL,
    RUNS,
    answered,
    cells,
    index_of,
    open_notebook,
    repl,
    roots,
    run_cell,
    runs_view,
    show_runs,
    status_text,
    wait_connected,
    wait_until,
    write_notebook,
)
from scripted_server import Reply, Script, ScriptedServer

STOP = f"{PANEL} [data-rlm-control='stop'] button"
STEP = 'print("the first step")'


def badges(view: list[dict]) -> list[str | None]:
    return [c["badge"] for c in view]


def step_cell(view: list[dict], step: int) -> dict:
    return next(c for c in view if c["step"] == str(step))


def save(page: Any) -> None:
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")


def reopen(page: Any, name: str) -> None:
    """Close the notebook's tab and open it again."""
    page.evaluate("() => window.jupyterapp.shell.currentWidget.close()")
    page.wait_for_selector(".jp-NotebookPanel", state="detached")
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", name)
    page.wait_for_function(
        "(name) => window.jupyterapp.shell.currentWidget?.context?.path === name", arg=name
    )
    wait_connected(page)


# ------------------------------------------------------------------ where the cells of a run go


def test_stop_puts_the_ended_cell_after_the_step_that_never_ran(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(root=[repl("A first look.", STEP)])
    name = write_notebook(lab, "stop-waiting.ipynb", "doc = 'abc'", "%%rlm -c doc --mode step\nq")
    open_notebook(page, lab, name)
    run_cell(page, 0)
    run_cell(page, 1)
    wait_until(
        page, lambda: status_text(page), lambda s: "waiting for step 1" in s, "step 1 waiting for the human"
    )
    page.locator(STOP).click()
    view = wait_until(
        page, lambda: cells(page), lambda cs: len(cs) == 4 and answered(cs[3], error=True), "the ended cell"
    )
    # The proposal that never ran stays where it was, above the cell that ends the run, and says so.
    assert view[2]["source"].strip() == STEP and view[2]["count"] is None
    assert view[2]["badge"] == "RLM step 1 · not run" and view[2]["status"] == "stopped"
    assert view[3]["badge"] == "RLM ended"


HUMAN = "answer['content'] = 'the human knew'\nanswer['ready'] = True"


def test_a_human_answer_lands_after_the_human_cell_which_has_a_badge(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(root=[repl("A first look.", STEP)])
    name = write_notebook(lab, "takeover.ipynb", "doc = 'abc'", "%%rlm -c doc --mode step\nq", HUMAN)
    open_notebook(page, lab, name)
    show_runs(page)
    run_cell(page, 0)
    run_cell(page, 1)
    wait_until(page, lambda: cells(page), lambda cs: len(cs) == 4 and cs[2]["step"] == "1", "step 1 proposed")
    # The human takes over: their own cell (below the waiting step) sets the answer.
    run_cell(page, index_of(page, "answer['content']"))
    view = wait_until(
        page, lambda: cells(page), lambda cs: len(cs) == 5 and answered(cs[4]), "the answer cell"
    )
    # It ran before the waiting step: it is step 1, and the step that never ran, numbered 2, below it.
    human, waiting = view[2], view[3]
    assert human["source"] == HUMAN and "the human knew" in view[4]["markdown"]
    run_id = waiting["rlm"]["run_id"]
    assert human["rlm"] == {"run_id": run_id, "step": 1, "author": "human"}
    assert human["badge"] == "RLM step 1 · human" and "rlm-step-cell" in human["classes"]
    assert waiting["badge"] == "RLM step 2 · not run"
    panel = wait_until(
        page, lambda: runs_view(page), lambda v: v["runs"][0]["status"] == "done", "the run done in the panel"
    )
    assert [(s["step"], s["author"]) for s in panel["runs"][0]["steps"]] == [(1, "human"), (2, "root")]
    # The badge is the cell's metadata: it is saved, and comes back with the notebook.
    save(page)
    saved = json.loads((lab.root_dir / name).read_text())["cells"]
    assert saved[2]["metadata"]["rlm"] == {"run_id": run_id, "step": 1, "author": "human"}
    reopen(page, name)
    wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 5 and cs[2]["badge"] == "RLM step 1 · human",
        "the human step's badge after reopening",
    )


OLD_RUN = [
    repl("First.", 'old = "from the first run"\nprint(old)'),
    repl("Done.", 'FINAL("from the first run")'),
]
NEW_RUN = [
    Reply(text=repl("First, again.", 'new = "from the second run"\nprint(new)'), delay=1.5),
    repl("Done again.", 'FINAL("from the second run")'),
]


def test_run_all_keeps_the_cells_of_a_finished_run_out_of_the_new_one(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(root=[*OLD_RUN, *NEW_RUN])
    name = write_notebook(lab, "run-all.ipynb", "doc = 'abc'", "%%rlm -c doc\nq")
    open_notebook(page, lab, name)
    run_cell(page, 0)
    run_cell(page, 1)
    first = wait_until(
        page, lambda: cells(page), lambda cs: len(cs) == 5 and answered(cs[4]), "the first run's answer"
    )
    old_run = first[2]["rlm"]["run_id"]
    # Run All: the %%rlm cell starts a new run, and the old run's step cells run again after it.
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: sum(answered(c) for c in cs) == 2,
        "the second run's answer",
        timeout=60,
    )
    new_answer = next(c for c in view if answered(c) and c["rlm"]["run_id"] != old_run)
    assert "from the second run" in new_answer["markdown"]
    assert len(roots(lm_server)) == 4  # the old FINAL did not end the new run
    # The old step cells ran as ordinary cells: they kept their metadata and joined no run.
    assert [
        c["rlm"]["run_id"] for c in view if c["source"].startswith(("old =", 'FINAL("from the first'))
    ] == [old_run] * 2
    assert "from the first run" in next(c for c in view if c["source"].startswith("old ="))["output"]
    assert "The human ran a cell of their own" not in roots(lm_server)[3].last_user
    show_runs(page)
    panel = wait_until(page, lambda: runs_view(page), lambda v: len(v["runs"]) == 2, "both runs in the panel")
    newest = panel["runs"][0]
    assert newest["status"] == "done" and [s["author"] for s in newest["steps"]] == ["root", "root"]


# ------------------------------------------------------------------ a second view of the notebook

VIEWS = """(name) => Array.from(window.jupyterapp.shell.widgets('main'))
  .filter(w => w.context?.path === name)
  .map(w => ({
    id: w.id,
    status: w.toolbar.node.querySelector("[data-rlm-control='status']")?.textContent ?? null,
    connected: !!w.toolbar.node.querySelector("[data-rlm-control='status']:not(.lm-mod-hidden)"),
  }))"""


def views(page: Any, name: str) -> list[dict]:
    return page.evaluate(VIEWS, name)


def open_second_view(page: Any, name: str) -> str:
    """File → New View for Notebook, as a tab beside the first (a split view would squeeze the
    toolbar's items into its overflow menu); returns the new view's widget id once its comm is open."""
    first = page.evaluate("() => window.jupyterapp.shell.currentWidget.id")
    page.evaluate(
        "() => window.jupyterapp.commands.execute('docmanager:clone', {options: {mode: 'tab-after'}})"
    )
    both = wait_until(
        page,
        lambda: views(page, name),
        lambda vs: len(vs) == 2 and all(v["connected"] for v in vs),
        "the second view connected",
    )
    return next(v["id"] for v in both if v["id"] != first)


def close_view(page: Any, name: str, widget_id: str) -> None:
    page.evaluate(
        "(id) => Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.id === id).close()",
        widget_id,
    )
    wait_until(page, lambda: views(page, name), lambda vs: len(vs) == 1, "the second view closed")
    page.evaluate("(id) => window.jupyterapp.shell.activateById(id)", views(page, name)[0]["id"])


def test_notebook_mode_outlives_a_second_view_closed_before_a_run(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(
        root=[Reply(text=repl("A first look.", STEP), delay=0.5), repl("Done.", "print(42)\nFINAL(42)")]
    )
    name = write_notebook(lab, "two-views.ipynb", "doc = 'abc'", "%%rlm -c doc\nq")
    open_notebook(page, lab, name)
    show_runs(page)
    close_view(page, name, open_second_view(page, name))
    run_cell(page, 0)
    run_cell(page, 1)
    wait_until(page, lambda: status_text(page), lambda s: s.startswith("RLM: running"), "the toolbar running")
    view = wait_until(
        page, lambda: cells(page), lambda cs: len(cs) == 5 and answered(cs[4]), "two steps and the answer"
    )
    assert [c["step"] for c in view[2:4]] == ["1", "2"] and "42" in view[4]["markdown"]
    assert "open the notebook in JupyterLab" not in view[1]["output"]
    panel = wait_until(page, lambda: runs_view(page), lambda v: len(v["runs"]) == 1, "the run in the panel")
    assert panel["runs"][0]["status"] == "done"


def test_a_second_view_during_a_run_neither_duplicates_nor_strands_its_steps(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(root=[repl("A first look.", STEP), repl("Done.", "print(42)\nFINAL(42)")])
    name = write_notebook(lab, "two-views-run.ipynb", "doc = 'abc'", "%%rlm -c doc --mode step\nq")
    open_notebook(page, lab, name)
    run_cell(page, 0)
    run_cell(page, 1)
    wait_until(page, lambda: cells(page), lambda cs: len(cs) == 3 and cs[2]["step"] == "1", "step 1 proposed")
    # The new view is told where the run stands; it finds step 1's cell rather than adding another.
    second = open_second_view(page, name)
    wait_until(
        page,
        lambda: views(page, name),
        lambda vs: any(v["id"] == second and "waiting for step 1" in (v["status"] or "") for v in vs),
        "the second view waiting for step 1",
    )
    assert [c["step"] for c in cells(page)].count("1") == 1
    # Closed again: the first view takes the run over, and carries it to the end.
    close_view(page, name, second)
    run_cell(page, 2)
    wait_until(page, lambda: cells(page), lambda cs: len(cs) == 4 and cs[3]["step"] == "2", "step 2 proposed")
    run_cell(page, 3)
    view = wait_until(
        page, lambda: cells(page), lambda cs: len(cs) == 5 and answered(cs[4]), "the answer after step 2"
    )
    assert [c["step"] for c in view[2:4]] == ["1", "2"]
    assert "42" in view[4]["markdown"]


# ------------------------------------------------------- what docs/kernel.md promises


def test_a_step_badge_tooltip_shows_its_root_reply_and_sub_calls(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(
        root=[
            Reply(text=repl("Ask.", 'x = llm_query("hi")\nprint(x)'), input_tokens=1234, output_tokens=56),
            Reply(text=repl("Done.", "FINAL(x)"), input_tokens=2345, output_tokens=21),
        ],
        sub=Reply(text="hello", input_tokens=17, output_tokens=3),
    )
    name = write_notebook(lab, "tooltip.ipynb", "doc = 'abc'", "%%rlm -c doc\nq")
    open_notebook(page, lab, name)
    run_cell(page, 0)
    run_cell(page, 1)
    wait_until(page, lambda: cells(page), lambda cs: len(cs) == 5 and answered(cs[4]), "the answer")
    title = lambda step: page.locator(f"{PANEL} .jp-Cell[data-rlm-step='{step}'] .rlm-badge").get_attribute(  # noqa: E731
        "title"
    )
    first = wait_until(
        page, lambda: title(1), lambda t: "17 in / 3 out" in t, "step 1's sub-call in its tooltip"
    )
    assert "root LM reply: 1,234 in / 56 out tokens" in first
    second = wait_until(page, lambda: title(2), lambda t: "root LM reply" in t, "step 2's root reply")
    assert "2,345 in / 21 out tokens" in second and "latency" in second and "$" in second


RUN_META = f"() => Array.from(document.querySelectorAll('{RUNS} .rlm-run-meta')).map(n => n.textContent)"


def test_a_step_mode_run_keeps_its_mode_when_reopened(page: Any, lab: Any, lm_server: ScriptedServer) -> None:
    lm_server.responder = Script(root=[repl("Done.", "FINAL(42)")])
    name = write_notebook(lab, "mode.ipynb", "doc = 'abc'", "%%rlm -c doc --mode step\nq")
    open_notebook(page, lab, name)
    show_runs(page)
    run_cell(page, 0)
    run_cell(page, 1)
    wait_until(page, lambda: cells(page), lambda cs: len(cs) == 3 and cs[2]["step"] == "1", "step 1 proposed")
    run_cell(page, 2)
    wait_until(page, lambda: cells(page), lambda cs: len(cs) == 4 and answered(cs[3]), "the answer")
    assert any("mode: step" in m for m in page.evaluate(RUN_META))
    save(page)
    reopen(page, name)
    show_runs(page)
    meta = wait_until(
        page, lambda: page.evaluate(RUN_META), lambda ms: len(ms) == 1, "the saved run in the panel"
    )
    assert "mode: step" in meta[0], meta


def test_the_runs_panel_follows_a_rename(page: Any, lab: Any) -> None:
    name = write_notebook(lab, "before-rename.ipynb", "x = 1")
    open_notebook(page, lab, name)
    show_runs(page)
    shown = f"() => document.querySelector('{RUNS} .rlm-runs-notebook')?.textContent"
    assert page.evaluate(shown) == name
    page.evaluate(
        "() => window.jupyterapp.serviceManager.contents.rename('before-rename.ipynb', 'after-rename.ipynb')"
    )
    wait_until(
        page, lambda: page.evaluate(shown), lambda t: t == "after-rename.ipynb", "the panel's new name"
    )
