"""Co-piloting a step-mode run, in a real JupyterLab in Chromium with the RLM Python kernel.

- A cell the human runs while step 1 waits ran first: it is the run's step 1 (a human step),
  and the waiting proposal becomes step 2, its cell moved below the human's. Regenerate then
  asks the root again with that cell in the request, and the new proposal is offered for the
  same cell, still step 2, as a diff to accept: no step numbered twice, and the runs panel shows
  no step done that never ran.
- The export of that run (``python -m rlm_kernel.export`` on its trajectory) teaches only what
  ran: no target is the proposal set aside, and no ``rejected`` is its sample's target.
- With no API key and no backend set, the magics use the bundled model and say so in one line
  (``%rlm config`` and the run's first line), without starting llama.cpp to the end.

Needs Chromium at /usr/bin/chromium and the ``playwright`` package (see test_lab.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from export_invariants import check_files, plain
from pages import (
    PANEL,
    answered,
    cells,
    open_notebook,
    repl,
    roots,
    run_cell,
    runs_view,
    show_runs,
    status_text,
    wait_until,
    write_notebook,
)
from scripted_server import Reply, Script, ScriptedServer

LOG_CELL = 'doc = "\\n".join(f"{i:03d} " + ("ERROR" if i % 7 == 3 else "ok") for i in range(40))'
DOC_LEN = len("\n".join(f"{i:03d} " + ("ERROR" if i % 7 == 3 else "ok") for i in range(40)))
QUESTION = "%%rlm -c doc --mode step\nHow many lines?"
OLD = 'n = len(context)\nprint("characters:", n)'
NEW = 'n = len(context.splitlines())\nprint("lines:", n)'
FINAL = "FINAL(n)"
MINE = "print('mine', len(doc))"
REGENERATE = f"{PANEL} [data-rlm-control='regenerate'] button"
REVIEW = f"{PANEL} .jp-Cell[data-rlm-step='2'] .rlm-review"

# What test_a_human_cell_then_regenerate left for the export test: the run's id and notebook.
RUN: dict[str, Any] = {}


def review_lines(page: Any) -> list[list[str]] | None:
    return page.evaluate(
        """(selector) => {
          const review = document.querySelector(selector);
          if (!review) return null;
          return Array.from(review.querySelectorAll('.rlm-diff-line')).map(l => [l.dataset.op, l.textContent]);
        }""",
        REVIEW,
    )


def step_numbers(view: list[dict], run_id: str) -> list[int]:
    return [c["rlm"]["step"] for c in view if (c["rlm"] or {}).get("run_id") == run_id and "step" in c["rlm"]]


def test_a_human_cell_then_regenerate(page: Any, lab: Any, lm_server: ScriptedServer) -> None:
    lm_server.responder = Script(
        root=[
            Reply(text=repl("The size first.", OLD), delay=0.2),
            Reply(text=repl("Count lines instead.", NEW), delay=0.2),
            Reply(text=repl("Done.", FINAL), delay=0.2),
        ]
    )
    name = write_notebook(lab, "copilot.ipynb", LOG_CELL, QUESTION)
    open_notebook(page, lab, name)
    show_runs(page)
    run_cell(page, 0)
    run_cell(page, 1)
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 3 and cs[2]["step"] == "1" and cs[2]["source"].strip() == OLD,
        "step 1 proposed, waiting",
        timeout=60,
    )
    run_id = view[2]["rlm"]["run_id"]
    wait_until(
        page, lambda: status_text(page), lambda s: "waiting for step 1" in s, "the run waiting for step 1"
    )

    # The human adds a cell of their own below the waiting step, and runs it: it ran first, so it is
    # the run's step 1, and the waiting proposal, now step 2, moves below it.
    page.evaluate(
        """(source) => {
          const nb = window.jupyterapp.shell.currentWidget.content;
          nb.model.sharedModel.insertCell(3, {cell_type: 'code', source, metadata: {}});
        }""",
        MINE,
    )
    wait_until(page, lambda: cells(page), lambda cs: len(cs) == 4, "the human's cell")
    run_cell(page, 3)
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: (
            cs[2]["output"].strip() == f"mine {DOC_LEN}"
            and cs[2]["rlm"] is not None
            and cs[3]["source"].strip() == OLD
            and cs[3]["step"] == "2"
        ),
        "the human's cell ran, as a step of the run, above the waiting step",
    )
    mine = view[2]["rlm"]
    assert mine["author"] == "human" and mine["step"] == 1 and mine["run_id"] == run_id, mine
    assert view[3]["rlm"]["step"] == 2 and view[3]["rlm"]["proposed"].strip() == OLD, view[3]["rlm"]
    wait_until(page, lambda: status_text(page), lambda s: "waiting for step 2" in s, "waiting for step 2")
    assert len(roots(lm_server)) == 1  # a human step asks the root nothing while a step waits

    # Regenerate: asked again with the human's cell; the new proposal is for step 2's cell, as a diff.
    regenerate = page.locator(REGENERATE)
    wait_until(page, lambda: regenerate.is_enabled(), bool, "Regenerate enabled for the waiting step")
    regenerate.click()
    lines = wait_until(
        page, lambda: review_lines(page), bool, "the new proposal's diff under step 2's cell", timeout=20
    )
    assert ["added", "+ n = len(context.splitlines())"] in lines, lines
    first, again = roots(lm_server)[:2]
    assert again.last_user.startswith(first.last_user)
    told = again.last_user[len(first.last_user) :]
    assert "The human ran a cell of their own (step 1)" in told, told
    assert MINE in told and f"mine {DOC_LEN}" in told, told
    view = cells(page)
    assert len(view) == 4, [c["source"][:30] for c in view]
    assert view[3]["rlm"]["proposed"].strip() == NEW and view[3]["step"] == "2"
    page.locator(f"{REVIEW} [data-rlm-review='accept']").click()
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: cs[3]["source"].strip() == NEW and review_lines(page) is None,
        "the new code in step 2's cell, the diff gone",
    )
    assert view[3]["badge"] == "RLM step 2" and view[3]["rlm"]["step"] == 2
    assert view[2]["badge"] == "RLM step 1 · human" and "rlm-step-human" in view[2]["classes"]
    assert sorted(step_numbers(view, run_id)) == [1, 2], step_numbers(view, run_id)

    # Run the accepted step: the next proposal is step 3 (its cell goes below step 2's, the cell
    # that ran last); run it, and the run ends.
    run_cell(page, 3)
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 5 and [c["step"] for c in cs].count("3") == 1,
        "step 3 proposed after step 2",
        timeout=30,
    )
    third = next(i for i, c in enumerate(view) if c["step"] == "3")
    assert view[3]["output"].strip() == "lines: 40" and third == 4
    assert view[third]["source"].strip() == FINAL and view[third]["rlm"]["author"] == "root"
    assert "The human ran" not in roots(lm_server)[2].last_user  # told once, with the regenerate
    run_cell(page, third)
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 6 and any(answered(c) for c in cs),
        "the answer cell",
        timeout=30,
    )
    assert "40" in next(c for c in view if answered(c))["markdown"]
    numbers = step_numbers(view, run_id)
    assert sorted(numbers) == [1, 2, 3], numbers  # no second step 1, no number twice
    by_step = {c["rlm"]["step"]: c for c in view if (c["rlm"] or {}).get("step")}
    assert [by_step[n]["rlm"]["author"] for n in (1, 2, 3)] == ["human", "root", "root"]
    assert all(c["count"] is not None for c in by_step.values())  # every step cell ran

    panel = wait_until(
        page,
        lambda: runs_view(page),
        lambda v: len(v["runs"]) == 1 and v["runs"][0]["status"] == "done",
        "the runs panel showing the finished run",
    )
    steps = [(s["step"], s["author"], s["status"]) for s in panel["runs"][0]["steps"]]
    assert steps == [(1, "human", "done"), (2, "root", "done"), (3, "root", "done")], steps
    wait_until(page, lambda: status_text(page), lambda s: s == "RLM: idle", "the toolbar idle again")

    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    saved = lab.root_dir / name
    wait_until(
        page,
        lambda: saved.read_text(),
        lambda text: (
            sum(
                c.get("metadata", {}).get("rlm", {}).get("run_id") == run_id
                for c in json.loads(text)["cells"]
            )
            >= 4
        ),
        "the notebook saved with the run's cells",
    )
    RUN.update(run_id=run_id, notebook=saved)


def export(out: Path, *paths: Path) -> list[dict]:
    """``python -m rlm_kernel.export PATHS -o OUT`` with no run filtered out: the samples written."""
    args = [*map(str, paths), "-o", str(out), "--min-turns", "0"]
    done = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.export", *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_the_export_of_that_run_teaches_only_what_ran(tmp_path: Path, lab: Any) -> None:
    if not RUN:
        pytest.skip("needs test_a_human_cell_then_regenerate's run")
    logs = sorted((lab.root_dir.parent / "runs").glob(f"*{RUN['run_id']}*.jsonl"))
    assert len(logs) == 1, logs
    written = export(tmp_path / "sft.jsonl", logs[0])
    targets = [s["messages"][-1]["content"] for s in written]
    rejected = [(s["messages"][-1]["content"], r["content"]) for s in written for r in s.get("rejected", [])]
    # The proposal set aside is never taught; it is the rejected alternative of step 1's sample.
    assert not any(OLD in t for t in targets), targets
    assert any(NEW in t for t in targets) and any(FINAL in t for t in targets), targets
    assert rejected and all(plain(target) != plain(r) for target, r in rejected), rejected
    assert any(OLD in r and NEW in target for target, r in rejected), rejected
    # The human's cell is context, never a target.
    assert not any(MINE in t for t in targets), targets
    # The same checks the export's own tests make, on this trajectory and on the saved notebook.
    assert check_files([logs[0]], tmp_path / "jsonl") == len(written)
    check_files([RUN["notebook"]], tmp_path / "notebook")
    # The log and the notebook it was saved in, exported together: the run once, as from its log.
    both = export(tmp_path / "both.jsonl", logs[0], RUN["notebook"])
    assert [s["messages"][-1]["content"] for s in both] == targets


# ------------------------------------------------------------------ no key: the bundled model

NO_KEY = (
    "No API key found (OPENAI_API_KEY or ANTHROPIC_API_KEY): using the bundled model, "
    "qwen2.5-coder-0.5b, on this machine."
)
FORGET_KEYS = """\
import os
for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RLM_BACKEND", "RLM_MODEL", "RLM_SUB_MODEL"):
    os.environ.pop(var, None)"""


def test_no_key_and_no_backend_is_the_bundled_model_said_in_one_line(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(root=[])  # nothing may reach the scripted provider
    name = write_notebook(
        lab,
        "no-key.ipynb",
        FORGET_KEYS,
        "%rlm config",
        "_ = __rlm_magics__.make_rlm()",
        'doc = "abc"',
        "%%rlm -c doc\nHow long is it?",
    )
    open_notebook(page, lab, name)
    for i in range(4):
        run_cell(page, i)
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: all(c["count"] is not None for c in cs[:4]) and cs[1]["output"] and cs[2]["output"],
        "the four cells run",
    )
    backend = next(line for line in view[1]["output"].splitlines() if line.split()[:1] == ["backend"])
    assert "'local'" in backend and "no API key found" in backend, view[1]["output"]
    assert view[2]["output"].strip() == NO_KEY
    # A run says it first, in its cell's output; stopped at once, before the local model answers.
    run_cell(page, 4)
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: cs[4]["output"].startswith(NO_KEY) and "RLM: running" in status_text(page),
        "the run's first line",
    )
    assert view[4]["output"].splitlines()[0] == NO_KEY
    page.locator(f"{PANEL} [data-rlm-control='stop'] button").click()
    wait_until(page, lambda: status_text(page), lambda s: s == "RLM: idle", "the run stopped", timeout=30)
    assert not lm_server.requests
