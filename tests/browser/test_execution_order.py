"""A step-mode run with human cells before, between and after its steps reads in the order it ran,
in a real JupyterLab in Chromium with the RLM Python kernel.

- A cell the human runs while a step waits ran before that step: it takes the waiting step's
  number, and the waiting step (its cell, its code, edited or not) takes the next one and moves
  below the cell that ran, never above a cell of the run already there.
- Regenerate of the renumbered step offers the new proposal for the same cell; one that brings
  the same code says so.
- The numbers in the cells' metadata, their badges, their execution order and the trajectory the
  run saves in the notebook agree, and they still do after save and reopen.

Needs Chromium at /usr/bin/chromium and the ``playwright`` package (see test_lab.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pages import (
    PANEL,
    answered,
    cells,
    index_of,
    open_notebook,
    repl,
    run_cell,
    runs_view,
    show_runs,
    status_text,
    wait_until,
    write_notebook,
)
from scripted_server import Reply, Script, ScriptedServer

LOG_CELL = 'doc = "\\n".join(f"{i:03d} " + ("ERROR" if i % 7 == 3 else "ok") for i in range(40))'
QUESTION = "%%rlm -c doc --mode step\nHow many ERROR lines?"
ONE = 'lines = context.splitlines()\nprint("lines:", len(lines))'
TWO = 'errors = [l for l in lines if "ERROR" in l]\nprint("errors:", len(errors))'
THREE = 'print("first:", errors[0])'
THREE_AGAIN = 'print("last:", errors[-1])'
FOUR = 'n = len(errors)\nprint("n:", n)'
FINAL = "FINAL(n)"
AFTER = 'print("after: mine")'
BETWEEN = 'print("between: mine")'
BEFORE = 'print("before: mine")'
REGENERATE = f"{PANEL} [data-rlm-control='regenerate'] button"


def insert(page: Any, index: int, source: str) -> None:
    page.evaluate(
        """([index, source]) => {
          const nb = window.jupyterapp.shell.currentWidget.content;
          nb.model.sharedModel.insertCell(index, {cell_type: 'code', source, metadata: {}});
        }""",
        [index, source],
    )


def of_run(view: list[dict], run_id: str) -> list[dict]:
    return [c for c in view if (c["rlm"] or {}).get("run_id") == run_id and "step" in c["rlm"]]


def proposed(page: Any, step: int, code: str, what: str) -> list[dict]:
    """Wait until ``code`` waits as ``step`` (its cell's metadata and badge) and the toolbar says so."""
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: any(
            c["source"].strip() == code and (c["rlm"] or {}).get("step") == step and c["step"] == str(step)
            for c in cs
        ),
        what,
        timeout=60,
    )
    wait_until(
        page, lambda: status_text(page), lambda s: f"waiting for step {step}" in s, f"waiting for {step}"
    )
    return view


def run_mine(page: Any, index: int, source: str, step: int) -> list[dict]:
    """Insert the human's cell at ``index``, run it, and wait for its badge: step ``step``, human."""
    insert(page, index, source)
    wait_until(page, lambda: cells(page), lambda cs: cs[index]["source"] == source, "the human's cell")
    run_cell(page, index)
    return wait_until(
        page,
        lambda: cells(page),
        lambda cs: any(c["source"] == source and c["badge"] == f"RLM step {step} · human" for c in cs),
        f"the human's cell ran as step {step}",
    )


def check_order(view: list[dict], run_id: str) -> None:
    """Numbers in execution order; the root's steps placed in their order; badges as metadata."""
    mine = of_run(view, run_id)
    by_count = sorted(mine, key=lambda c: c["count"] or 0)
    assert [c["rlm"]["step"] for c in by_count] == list(range(1, len(mine) + 1)), [
        (c["count"], c["rlm"]["step"], c["source"][:20]) for c in by_count
    ]
    roots = [c["rlm"]["step"] for c in mine if c["rlm"]["author"] != "human"]
    assert roots == sorted(roots), roots
    for c in mine:
        assert c["step"] == str(c["rlm"]["step"]), (c["step"], c["rlm"])
        assert (c["badge"] or "").startswith(f"RLM step {c['rlm']['step']}"), (c["badge"], c["rlm"])


def saved_steps(path: Path, run_id: str) -> list[tuple[int, str, str]]:
    """The run's steps as the trajectory saved in the notebook tells them, in the order they ran:
    (number, author, code)."""
    nb = json.loads(path.read_text())
    events = [
        e
        for cell in nb["cells"]
        for out in cell.get("outputs", [])
        for e in (out.get("metadata", {}).get("rlm_kernel") or {}).get("events", [])
        if e["run_id"] == run_id and e["depth"] == 0
    ]
    started: dict[int, dict] = {}
    edits = {e["step"]: e["executed"] for e in events if e["kind"] == "human_edit"}
    ran = []
    for e in events:
        if e["kind"] == "step_started":
            started[e["step"]] = e
        elif e["kind"] == "step_finished":
            s = started[e["step"]]
            ran.append((e["step"], s["author"], edits.get(e["step"], s["code"]).strip()))
    return ran


def test_human_cells_before_between_and_after_steps_read_in_the_order_they_ran(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(
        root=[
            Reply(text=repl("Split.", ONE), delay=0.1),
            Reply(text=repl("Filter.", TWO), delay=0.1),
            Reply(text=repl("Look at one.", THREE), delay=0.1),
            Reply(text=repl("Look at another.", THREE_AGAIN), delay=0.1),
            Reply(text=repl("Count.", FOUR), delay=0.1),
            Reply(text=repl("Count, again.", FOUR), delay=0.1),
            Reply(text=repl("Done.", FINAL), delay=0.1),
        ]
    )
    name = write_notebook(lab, "order.ipynb", LOG_CELL, QUESTION)
    open_notebook(page, lab, name)
    run_cell(page, 0)
    run_cell(page, 1)

    # Steps 1 and 2 accepted as proposed.
    view = proposed(page, 1, ONE, "step 1 proposed")
    run_id = view[2]["rlm"]["run_id"]
    run_cell(page, index_of(page, ONE))
    proposed(page, 2, TWO, "step 2 proposed")
    run_cell(page, index_of(page, TWO))
    proposed(page, 3, THREE, "step 3 proposed")

    # After: the human's cell at the end runs while step 3 waits. It ran third: it is step 3, and
    # the proposal, now step 4, moves below it.
    view = run_mine(page, len(cells(page)), AFTER, 3)
    view = proposed(page, 4, THREE, "the waiting proposal numbered 4")
    assert index_of(page, THREE) == index_of(page, AFTER) + 1, [c["source"][:20] for c in view]
    assert [c["source"].strip() for c in cells(page)].count(THREE) == 1

    # Regenerate the renumbered step: the new proposal is for the same cell, step 4.
    regenerate = page.locator(REGENERATE)
    wait_until(page, lambda: regenerate.is_enabled(), bool, "Regenerate enabled for step 4")
    regenerate.click()
    review = f"{PANEL} .jp-Cell[data-rlm-step='4'] .rlm-review"
    page.wait_for_selector(review)
    page.locator(f"{review} [data-rlm-review='accept']").click()
    proposed(page, 4, THREE_AGAIN, "the new proposal accepted in step 4's cell")

    # Between: a cell between steps 1 and 2, run while step 4 waits: step 4; the proposal is 5 and
    # stays below the run's last cell.
    run_mine(page, index_of(page, ONE) + 1, BETWEEN, 4)
    proposed(page, 5, THREE_AGAIN, "the waiting proposal numbered 5")
    assert index_of(page, THREE_AGAIN) == len(cells(page)) - 1
    run_cell(page, index_of(page, THREE_AGAIN))
    proposed(page, 6, FOUR, "step 6 proposed")
    assert index_of(page, FOUR) == index_of(page, THREE_AGAIN) + 1

    # Regenerate brings the same code: nothing in the cell changes, and the notebook says so.
    wait_until(page, lambda: regenerate.is_enabled(), bool, "Regenerate enabled for step 6")
    regenerate.click()
    page.get_by_text("the root proposed the same code for step 6 again").wait_for()
    proposed(page, 6, FOUR, "step 6 still waiting, its code the same")

    # Before: a cell above the run's %%rlm cell, run while step 6 waits: step 6; the proposal is 7.
    run_mine(page, 0, BEFORE, 6)
    proposed(page, 7, FOUR, "the waiting proposal numbered 7")
    assert index_of(page, FOUR) == index_of(page, THREE_AGAIN) + 1
    run_cell(page, index_of(page, FOUR))
    proposed(page, 8, FINAL, "step 8 proposed")
    run_cell(page, index_of(page, FINAL))
    view = wait_until(page, lambda: cells(page), lambda cs: answered(cs[-1]), "the answer, last")
    assert "6" in view[-1]["markdown"]
    check_order(view, run_id)
    assert [c["source"].strip() for c in of_run(view, run_id) if c["rlm"]["author"] != "human"] == [
        ONE,
        TWO,
        THREE_AGAIN,
        FOUR,
        FINAL,
    ]

    # The trajectory saved in the notebook tells the same steps, in the same order.
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    path = lab.root_dir / name
    wait_until(page, lambda: saved_steps(path, run_id), lambda s: len(s) == 8, "the saved trajectory")
    steps = saved_steps(path, run_id)
    assert [s[0] for s in steps] == list(range(1, 9)), steps
    by_number = {c["rlm"]["step"]: c for c in of_run(view, run_id)}
    for number, author, code in steps:
        cell = by_number[number]
        assert (cell["rlm"]["author"] == "human") == (author == "human"), (number, author, cell["rlm"])
        assert cell["source"].strip() == code, (number, code, cell["source"])

    # Reopened, the notebook reads the same.
    open_notebook(page, lab, name)
    again = wait_until(
        page, lambda: cells(page), lambda cs: len(cs) == len(view) and answered(cs[-1]), "the notebook again"
    )
    assert [(c["source"], c["badge"]) for c in again] == [(c["source"], c["badge"]) for c in view]

    # Undo: the run's own cells go; the human's stay, with no mark of the run left, and the runs
    # panel forgets the run.
    show_runs(page)
    wait_until(
        page, lambda: runs_view(page), lambda v: [r["id"] for r in v["runs"]] == [run_id], "the run listed"
    )
    page.evaluate("() => { void window.jupyterapp.commands.execute('rlm-kernel:undo-run'); }")
    page.wait_for_selector(".jp-Dialog")
    body = page.locator(".jp-Dialog .jp-Dialog-body").inner_text()
    assert "6 cells" in body and "edited by you" not in body, body  # 5 steps and the answer
    page.locator(".jp-Dialog .jp-mod-accept").click()
    kept = wait_until(page, lambda: cells(page), lambda cs: len(cs) == 5, "the run's cells removed")
    assert [c["source"] for c in kept] == [BEFORE, LOG_CELL, QUESTION, BETWEEN, AFTER]
    assert all(c["rlm"] is None and c["badge"] is None for c in kept), [
        (c["source"][:20], c["badge"]) for c in kept
    ]
    wait_until(page, lambda: runs_view(page), lambda v: v["runs"] == [], "the run gone from the runs panel")
