"""Rewind in a real JupyterLab: the runs panel's "Continue from here" on a finished run's step
writes a `%%rlm ... --continue-from RUN:STEP` cell below the run and runs it; the branch replays
the steps before that one in the kernel (no sub-call asked again), the root proposes the step
again as a new cell, and the panel shows the branch with the run it continues."""

from __future__ import annotations

from typing import Any

from pages import (
    PANEL,
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
from scripted_server import Reply, Script, ScriptedServer

DATA = "doc = \"\\n\".join(f\"{i} {'red' if i % 4 == 0 else 'blue'}\" for i in range(120))"
FIRST = repl(
    "Count the red lines in two halves.",
    "half = len(context) // 2\nreds = llm_query_batched([context[:half], context[half:]])\nprint(reds)",
)
SECOND = repl("Add them.", "total = sum(int(r) for r in reds)\nprint(total)\nFINAL(f'{total} red lines')")
AGAIN = repl(
    "Add them, and say so in words.",
    "total = sum(int(r) for r in reds)\nFINAL(f'there are {total} red lines')",
)


def reds(request) -> Reply:
    return Reply(text=str(request.last_user.count("red")))


def test_continue_from_a_step_in_the_runs_panel(page: Any, lab: Any, lm_server: ScriptedServer) -> None:
    lm_server.responder = Script(root=[FIRST, SECOND, AGAIN], sub=reds)
    name = write_notebook(
        lab, "rewind.ipynb", DATA, "%%rlm -c doc\nHow many lines are red?", "print('after')"
    )
    open_notebook(page, lab, name)
    page.set_viewport_size({"width": 1400, "height": 1000})
    show_runs(page)
    run_cell(page, 0)
    run_cell(page, 1)
    view = wait_until(
        page, lambda: cells(page), lambda cs: len(cs) == 6 and answered(cs[4]), "the run's cells"
    )
    parent = view[2]["rlm"]["run_id"]
    asked = len(subs(lm_server))
    assert asked == 2

    button = f"#rlm-runs-panel .rlm-run[data-run-id='{parent}'] .rlm-step[data-step='2'] [data-rlm-control='continue']"
    page.locator(button).click()

    # The branch's %%rlm cell sits below the run's answer, and its new step 2 below it.
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 9 and answered(cs[7]),
        "the branch cell, its step and its answer",
        timeout=60,
    )
    branch_cell, step, answer = view[5], view[6], view[7]
    assert branch_cell["source"] == f"%%rlm -c doc --continue-from {parent}:2\nHow many lines are red?"
    assert step["rlm"]["step"] == 2 and step["rlm"]["run_id"] != parent
    assert "there are 30 red lines" in answer["markdown"]
    assert view[8]["source"] == "print('after')"  # the cell below the run stays below the branch
    assert len(subs(lm_server)) == asked  # replayed step 1 asked no sub-call again
    assert roots(lm_server)[2].messages == roots(lm_server)[1].messages  # the same turn, asked again

    panel = wait_until(
        page,
        lambda: runs_view(page),
        lambda v: len(v["runs"]) == 2 and all(r["status"] == "done" for r in v["runs"]),
        "both runs in the panel",
    )
    branch = next(r for r in panel["runs"] if r["id"] != parent)
    assert [s["author"] for s in branch["steps"]] == ["root, replayed", "root"]
    note = page.locator(
        f"#rlm-runs-panel .rlm-run[data-run-id='{branch['id']}'] .rlm-run-branch"
    ).inner_text()
    assert note == "↳ continues “How many lines are red?” from step 2"
    shoot(page, "rewind.png")
    assert page.locator(f"{PANEL} .rlm-step-cell").count() == 3  # the parent's two, the branch's one
