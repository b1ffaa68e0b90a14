"""Regenerate's review and Undo a run, in a real JupyterLab in Chromium with the RLM Python kernel.

- In step mode, Regenerate's new proposal for the waiting step shows as a diff under the step's
  cell, with Accept (the cell takes the new code) and Reject (the cell keeps its code, which the
  kernel then records as the human's edit of the new proposal).
- "RLM: Undo Run" removes the cells a run inserted (its steps and its answer) after a confirmation
  that says how many and that variables are not restored; the human's cells and the ``%%rlm`` cell
  stay.

Needs Chromium at /usr/bin/chromium and the ``playwright`` package (see test_lab.py).
"""

from __future__ import annotations

from typing import Any

from pages import (
    ARTIFACTS,
    PANEL,
    answered,
    cells,
    open_notebook,
    repl,
    roots,
    run_cell,
    shoot,
    status_text,
    wait_until,
    write_notebook,
)
from scripted_server import Reply, Script, ScriptedServer

LOG_CELL = 'doc = "\\n".join(f"{i:03d} " + ("ERROR" if i % 7 == 3 else "ok") for i in range(40))'
QUESTION = "%%rlm -c doc --mode step\nHow many lines?"
OLD = 'n = len(context)\nprint("characters:", n)'
NEW = 'n = len(context.splitlines())\nprint("lines:", n)'
REGENERATE = f"{PANEL} [data-rlm-control='regenerate'] button"
REVIEW = f"{PANEL} .jp-Cell[data-rlm-step='1'] .rlm-review"

# The review under step 1's cell: its heading, its diff lines and its buttons' tooltips.
REVIEW_VIEW = """(selector) => {
  const review = document.querySelector(selector);
  if (!review) return null;
  return {
    title: review.querySelector('.rlm-review-title')?.textContent ?? '',
    lines: Array.from(review.querySelectorAll('.rlm-diff-line')).map(l => [l.dataset.op, l.textContent]),
    accept: review.querySelector("[data-rlm-review='accept']")?.title ?? null,
    reject: review.querySelector("[data-rlm-review='reject']")?.title ?? null,
  };
}"""


def review_view(page: Any) -> dict | None:
    return page.evaluate(REVIEW_VIEW, REVIEW)


def regenerated_step(page: Any, lab: Any, lm_server: ScriptedServer, name: str) -> dict:
    """A step-mode run whose step 1 waits with OLD; Regenerate brings NEW, shown as a diff."""
    lm_server.responder = Script(
        root=[
            Reply(text=repl("The size first.", OLD), delay=0.2),
            Reply(text=repl("Count lines instead.", NEW), delay=0.2),
            Reply(text=repl("Done.", "FINAL(n)"), delay=0.2),
        ]
    )
    write_notebook(lab, name, LOG_CELL, QUESTION)
    open_notebook(page, lab, name)
    run_cell(page, 0)
    run_cell(page, 1)
    wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 3 and cs[2]["step"] == "1" and cs[2]["source"].strip() == OLD,
        "step 1 proposed, waiting",
        timeout=60,
    )
    wait_until(
        page, lambda: status_text(page), lambda s: "waiting for step 1" in s, "the run waiting for step 1"
    )
    regenerate = page.locator(REGENERATE)
    wait_until(page, lambda: regenerate.is_enabled(), bool, "Regenerate enabled for the waiting step")
    regenerate.click()
    review = wait_until(page, lambda: review_view(page), bool, "the new proposal's diff under step 1's cell")
    assert review["lines"] == [
        ["removed", "- n = len(context)"],
        ["removed", '- print("characters:", n)'],
        ["added", "+ n = len(context.splitlines())"],
        ["added", '+ print("lines:", n)'],
    ]
    assert review["title"] == "New proposal for step 1 · 2 lines removed, 2 lines added"
    assert "recorded as your edit of the new proposal" in review["reject"]
    # Until the human chooses, the cell keeps its code; its metadata names the kernel's proposal.
    view = cells(page)
    assert len(view) == 3 and view[2]["source"].strip() == OLD and view[2]["rlm"]["proposed"].strip() == NEW
    assert len(roots(lm_server)) == 2
    return review


def test_regenerate_shows_a_diff_and_accept_takes_the_new_code(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    regenerated_step(page, lab, lm_server, "review-accept.ipynb")
    shoot(page, "regenerate-review.png")
    page.locator(f"{REVIEW} [data-rlm-review='accept']").click()
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: cs[2]["source"].strip() == NEW and review_view(page) is None,
        "the new code in step 1's cell, the diff gone",
    )
    assert view[2]["rlm"]["proposed"] == view[2]["source"] and view[2]["rlm"]["author"] == "root"
    assert view[2]["badge"] == "RLM step 1" and len(view) == 3
    # Run as proposed: the root is told of no edit, and the run goes on.
    run_cell(page, 2)
    request = wait_until(page, lambda: roots(lm_server), lambda rs: len(rs) == 3, "the root's third request")
    assert "A human edited" not in request[2].last_user and "lines: 40" in request[2].last_user
    wait_until(page, lambda: cells(page), lambda cs: len(cs) == 4 and cs[3]["step"] == "2", "step 2 proposed")
    run_cell(page, 3)
    view = wait_until(page, lambda: cells(page), lambda cs: len(cs) == 5 and answered(cs[4]), "the answer")
    assert "40" in view[4]["markdown"] and "rlm-step-human-edited" not in view[2]["classes"]


def test_regenerate_shows_a_diff_and_reject_keeps_the_old_code(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    regenerated_step(page, lab, lm_server, "review-reject.ipynb")
    page.locator(f"{REVIEW} [data-rlm-review='reject']").click()
    wait_until(page, lambda: review_view(page) is None, bool, "the diff gone", timeout=10)
    view = cells(page)
    assert len(view) == 3 and view[2]["source"].strip() == OLD and view[2]["rlm"]["proposed"].strip() == NEW
    # The kernel waits with the new proposal: running the old code is the human's edit of it.
    run_cell(page, 2)
    request = wait_until(page, lambda: roots(lm_server), lambda rs: len(rs) == 3, "the root's third request")
    told = request[2].last_user
    assert "A human edited your step 1" in told and NEW in told and OLD in told
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 4 and "rlm-step-human-edited" in cs[2]["classes"],
        "step 1 marked edited, step 2 proposed",
    )
    assert view[2]["badge"] == "RLM step 1 · edited" and view[2]["output"].strip().startswith("characters:")
    run_cell(page, 3)
    wait_until(page, lambda: cells(page), lambda cs: len(cs) == 5 and answered(cs[4]), "the answer")


# ------------------------------------------------------------------ Undo a run

DIALOG = """() => {
  const dialog = document.querySelector('.jp-Dialog');
  if (!dialog) return null;
  return {
    title: dialog.querySelector('.jp-Dialog-header')?.textContent ?? '',
    body: dialog.querySelector('.jp-Dialog-body')?.textContent ?? '',
    buttons: Array.from(dialog.querySelectorAll('.jp-Dialog-footer button')).map(b => b.textContent.trim()),
  };
}"""


def test_undo_removes_the_cells_a_run_inserted(page: Any, lab: Any, lm_server: ScriptedServer) -> None:
    lm_server.responder = Script(
        root=[
            Reply(text=repl("Count them.", 'n = doc.count("ERROR")\nprint("errors:", n)'), delay=0.2),
            Reply(text=repl("Done.", "FINAL(n)"), delay=0.2),
        ]
    )
    name = write_notebook(lab, "undo.ipynb", LOG_CELL, "%%rlm -c doc\nHow many errors?")
    open_notebook(page, lab, name)
    assert page.evaluate("() => window.jupyterapp.commands.hasCommand('rlm-kernel:undo-run')"), (
        "no Undo RLM run command"
    )
    assert page.evaluate("() => window.jupyterapp.commands.label('rlm-kernel:undo-run')") == "RLM: Undo Run"
    run_cell(page, 0)
    run_cell(page, 1)
    wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 5 and answered(cs[4]) and status_text(page) == "RLM: idle",
        "two step cells and the answer cell",
        timeout=60,
    )
    # A cell of the human's, below the answer, selected.
    page.evaluate(
        """() => {
          const nb = window.jupyterapp.shell.currentWidget.content;
          nb.model.sharedModel.insertCell(5, {cell_type: 'code', source: 'print("still", n)', metadata: {}});
          nb.activeCellIndex = 5;
        }"""
    )
    wait_until(page, lambda: cells(page), lambda cs: len(cs) == 6, "the human's cell")
    enabled = "() => window.jupyterapp.commands.isEnabled('rlm-kernel:undo-run')"
    assert page.evaluate(enabled)
    # From a cell's context menu.
    page.locator(f"{PANEL} .jp-Cell").nth(5).click(button="right")
    page.locator(".lm-Menu-itemLabel", has_text="RLM: Undo Run").click()
    dialog = wait_until(page, lambda: page.evaluate(DIALOG), bool, "the confirmation dialog")
    assert dialog["title"] == "Undo RLM run"
    assert "3 cells" in dialog["body"] and "Variables are not restored" in dialog["body"], dialog
    assert dialog["buttons"] == ["Cancel", "Remove 3 cells"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "undo-dialog.png"))
    # Cancel removes nothing.
    page.locator(".jp-Dialog .jp-mod-reject").click()
    page.wait_for_selector(".jp-Dialog", state="detached")
    assert len(cells(page)) == 6
    # Again, from the command palette's command, and confirm.
    page.evaluate("() => { void window.jupyterapp.commands.execute('rlm-kernel:undo-run'); }")
    wait_until(page, lambda: page.evaluate(DIALOG), bool, "the confirmation dialog again")
    page.locator(".jp-Dialog .jp-mod-accept").click()
    view = wait_until(page, lambda: cells(page), lambda cs: len(cs) == 3, "the run's cells removed")
    assert [c["source"] for c in view] == [LOG_CELL, "%%rlm -c doc\nHow many errors?", 'print("still", n)']
    assert all(c["rlm"] is None for c in view)
    # Variables are not restored: what the run set is still there.
    run_cell(page, 2)
    wait_until(page, lambda: cells(page)[2]["output"], lambda o: o.strip() == "still 6", "the run's n, kept")
    # Nothing is left to undo.
    wait_until(page, lambda: page.evaluate(enabled), lambda on: not on, "Undo disabled")
    shoot(page, "undo-run.png")
