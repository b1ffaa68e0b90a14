"""Notebook mode in a real JupyterLab 4, in a real headless Chromium, with the RLM Python kernel.

The extension (labextension/) and the kernel (rlm_kernel/jupyter/notebook.py) are exercised
together, as a user would: each test writes a fresh notebook on the ``rlm-python`` kernel, opens
it with ``?reset``, runs cells, clicks toolbar buttons, edits a proposed step, saves and reopens.
The root LM and its sub-calls are the scripted server (tests/scripted_server.py). Assertions go
through the DOM hooks listed in labextension/README.md ("Browser tests: hooks") and through
the requests the server recorded. Screenshots land in test-artifacts/browser/.

Needs Chromium at /usr/bin/chromium (never downloaded by Playwright) and the ``playwright``
package: ``apt-get install chromium`` and ``pip install playwright jupyterlab``.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from pages import (
    PANEL,
    answered,
    cells,
    index_of,
    open_notebook,
    repl,
    roots,
    run_cell,
    runs_view,
    shoot,
    show_runs,
    status_text,
    subs,
    wait_connected,
    wait_until,
    widen_runs_panel,
    write_notebook,
)
from scripted_server import Reply, Request, Script, ScriptedServer

# ------------------------------------------------------------------ the notebook and the scripted LM

LOG_CELL = """\
lines = [f"{i:03d} " + ("ERROR disk full" if i % 7 == 3 else "INFO ok") for i in range(400)]
doc = "\\n".join(lines)
print(len(lines), "lines,", len(doc), "characters")"""

ALIVE_CELL = 'print("still here", 6 * 7)'


def count_errors(request: Request) -> Reply:
    """A sub-call: how many error lines in the chunk it was given."""
    return Reply(text=str(request.last_user.count("ERROR")), delay=0.4)


# ------------------------------------------------------------------ 1. auto mode

AUTO_ROOT = [
    repl(
        "The log is long: I'll split it into chunks and ask a sub-model to count the errors in each.",
        """
lines = context.splitlines()
chunks = ["\\n".join(lines[i:i + 50]) for i in range(0, len(lines), 50)]
counts = llm_query_batched([f"How many of these lines are errors?\\n{c}" for c in chunks])
print(len(chunks), "chunks; errors per chunk:", counts)
""",
    ),
    repl(
        "Now add them up.",
        """
total = sum(int(c) for c in counts)
print("errors in the log:", total)
FINAL(f"The log has {total} error lines.")
""",
    ),
]
ERRORS = sum(1 for i in range(400) if i % 7 == 3)  # 57


def test_auto_mode_runs_each_step_as_a_cell(page: Any, lab: Any, lm_server: ScriptedServer) -> None:
    lm_server.responder = Script(
        root=[Reply(text=t, delay=0.3, token_delay=0.005) for t in AUTO_ROOT], sub=count_errors
    )
    name = write_notebook(lab, "auto.ipynb", LOG_CELL, "%%rlm -c doc\nHow many error lines are in the log?")
    open_notebook(page, lab, name)
    assert status_text(page) == "RLM: idle"
    page.set_viewport_size({"width": 1400, "height": 1000})
    show_runs(page)
    widen_runs_panel(page, 170)
    run_cell(page, 0)
    run_cell(page, 1)

    # Both steps become cells right after the %%rlm cell, run, and the answer follows them.
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 5 and answered(cs[4]),
        "two step cells and the answer cell",
        timeout=60,
    )
    rlm_cell, step1, step2, answer = view[1:]
    assert [c["step"] for c in (step1, step2)] == ["1", "2"]
    for c, n in ((step1, 1), (step2, 2)):
        assert "rlm-step-cell" in c["classes"] and "rlm-step-human-edited" not in c["classes"]
        assert c["rlm"]["step"] == n and c["rlm"]["author"] == "root" and c["run"] == c["rlm"]["run_id"]
        assert c["source"] == c["rlm"]["proposed"]
        assert c["badge"] == f"RLM step {n}"
        assert c["count"] is not None  # it ran
    assert step1["source"].strip() == re.search(r"```repl\n(.*)\n```", AUTO_ROOT[0], re.S).group(1)
    run_id = step1["rlm"]["run_id"]
    assert step2["rlm"]["run_id"] == run_id and answer["rlm"] == {"run_id": run_id, "answer": True}
    assert "rlm-answer-error" not in answer["classes"] and answer["type"] == "markdown"
    assert f"The log has {ERRORS} error lines." in answer["markdown"]
    assert "10 LM calls (2 root, 8 sub)" in answer["markdown"]
    # The steps' outputs are in their cells.
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: all(c["status"] == "done" for c in cs[2:4]),
        "both step cells done",
    )
    assert "8 chunks; errors per chunk: ['7', '7'," in view[2]["output"]
    assert f"errors in the log: {ERRORS}" in view[3]["output"]
    # The %%rlm cell's view ends as the run's summary, with the kernel's own count of LM calls.
    assert rlm_cell["output"].startswith("RLM · gpt-4o-mini · done\n10 LM call(s) · ")
    assert f"Answer:\nThe log has {ERRORS} error lines." in rlm_cell["output"]

    # The side panel: the run, its two steps, step 1's eight sub-calls, totals = the LM calls made.
    assert len(roots(lm_server)) == 2 and len(subs(lm_server)) == 8
    assert "Output of step 1:\n8 chunks; errors per chunk: ['7'," in roots(lm_server)[1].last_user
    panel = wait_until(
        page,
        lambda: runs_view(page),
        lambda v: len(v["runs"]) == 1 and v["runs"][0]["status"] == "done",
        "the runs panel showing the finished run",
    )
    run = panel["runs"][0]
    assert run["id"] == run_id and run["pill"] == "done"
    assert [s["step"] for s in run["steps"]] == [1, 2]
    assert [s["status"] for s in run["steps"]] == ["done", "done"]
    assert run["steps"][0]["calls"] == ["done"] * 8 and run["steps"][1]["calls"] == []
    assert run["end"] == f"Answer: The log has {ERRORS} error lines."
    calls = len(lm_server.requests)  # 2 root replies + 8 sub-calls
    assert panel["totals"].startswith(f"Total: {calls} calls · ")
    assert run["totals"].startswith(f"{calls} calls · ")
    assert status_text(page) == "RLM: idle"
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:enter-command-mode')")
    shoot(page, "auto-done.png")


# ------------------------------------------------------------------ 2. step mode, with an edit

PROPOSED = 'n = len(context)\nprint("n =", n)'
EDITED = 'n = len(context.splitlines())\nprint("n =", n)'


def test_step_mode_with_an_edit_in_the_browser(page: Any, lab: Any, lm_server: ScriptedServer) -> None:
    def root(request: Request) -> Reply:
        if len(roots(lm_server)) == 1:
            return Reply(text=repl("First, the size of the context.", PROPOSED), delay=0.2)
        seen = re.search(r"n = (\d+)", request.last_user)  # the second turn answers what it saw
        n = seen.group(1) if seen else "nothing"
        return Reply(
            text=repl(f"The step printed {n}.", f'print("the context has", {n}, "lines")\nFINAL({n})')
        )

    lm_server.responder = lambda request: root(request) if request.is_root else Reply(text="unused")
    name = write_notebook(
        lab, "step.ipynb", LOG_CELL, "%%rlm -c doc --mode step\nHow many lines?", ALIVE_CELL
    )
    open_notebook(page, lab, name)
    show_runs(page)
    run_cell(page, 0)
    run_cell(page, 1)

    # The proposal is inserted after the %%rlm cell, selected, and left for the human.
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 4 and cs[2]["step"] == "1",
        "the proposed step 1 cell",
    )
    step1 = view[2]
    assert step1["source"].strip() == PROPOSED and step1["rlm"]["proposed"] == step1["source"]
    assert step1["count"] is None and step1["output"] == ""
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex === 2"
        " && window.jupyterapp.shell.currentWidget.content.mode === 'edit'"
    )
    wait_until(
        page, lambda: status_text(page), lambda s: "waiting for step 1" in s, "the toolbar waiting for step 1"
    )
    page.wait_for_timeout(500)
    assert len(roots(lm_server)) == 1  # nothing happens until the human runs it
    assert cells(page)[2]["count"] is None

    # Edit it in the editor, as a human would: select all, type the new code.
    editor = page.locator(f"{PANEL} .jp-Cell[data-rlm-step='1'] .cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(EDITED)
    wait_until(page, lambda: cells(page)[2]["source"], lambda s: s == EDITED, "the edit in the cell's model")
    page.keyboard.press("Control+Enter")

    # The root's next turn is told about the edit and sees its output; the cell is marked edited.
    request = wait_until(
        page, lambda: roots(lm_server), lambda rs: len(rs) == 2, "the root's second request"
    )[1].last_user
    assert "A human edited your step 1" in request
    assert PROPOSED in request and EDITED in request and "Output of step 1:\nn = 400" in request
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 5 and cs[3]["step"] == "2" and "rlm-step-human-edited" in cs[2]["classes"],
        "step 1 marked edited and step 2 proposed",
    )
    step1, step2 = view[2], view[3]
    assert step1["rlm"]["author"] == "human-edited" and step1["rlm"]["proposed"].strip() == PROPOSED
    assert step1["badge"] == "RLM step 1 · edited" and step1["output"].strip() == "n = 400"
    # The next step answers the edit: it uses the edited step's output.
    assert step2["source"].strip() == 'print("the context has", 400, "lines")\nFINAL(400)'
    assert step2["count"] is None and "rlm-step-human-edited" not in step2["classes"]
    wait_until(
        page, lambda: status_text(page), lambda s: "waiting for step 2" in s, "the toolbar waiting for step 2"
    )
    panel = wait_until(
        page,
        lambda: runs_view(page),
        lambda v: len(v["runs"]) == 1 and [s["step"] for s in v["runs"][0]["steps"]] == [1, 2],
        "the runs panel with both steps",
    )
    assert panel["runs"][0]["steps"][0]["author"] == "root, edited"
    assert panel["runs"][0]["steps"][0]["status"] == "done"
    assert panel["runs"][0]["steps"][1]["status"] == "waiting"
    shoot(page, "step-edited.png")

    # Running step 2 (it is selected, in edit mode) finishes the run with the edited value.
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.content.activeCellIndex === 3")
    page.keyboard.press("Control+Enter")
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 6 and answered(cs[4]),
        "the answer cell after step 2",
    )
    assert "the context has 400 lines" in view[3]["output"]
    assert view[4]["markdown"].startswith("RLM answer\n\n400\n")
    assert view[5]["source"] == ALIVE_CELL


# ------------------------------------------------------------------ 3. stop in the middle

SLOW_BATCH = repl(
    "I'll ask about four parts at once.",
    'answers = llm_query_batched([f"Summarise part {i}" for i in range(4)])\nprint(answers)',
)
STOP = f"{PANEL} [data-rlm-control='stop'] button"
INTERRUPT = f"{PANEL} .jp-Toolbar [data-command='notebook:interrupt-kernel']"


def start_run_to_stop(page: Any, lab: Any, name: str) -> None:
    write_notebook(lab, name, LOG_CELL, "%%rlm -c doc\nSummarise the log.", ALIVE_CELL)
    open_notebook(page, lab, name)
    show_runs(page)
    run_cell(page, 0)
    run_cell(page, 1)


def press_and_wait_for_the_end(page: Any, button: str) -> list[dict]:
    """Click ``button`` during a run: within seconds the run ends with an error answer cell."""
    assert "RLM: running" in status_text(page)
    assert page.locator(STOP).is_enabled()
    page.locator(button).click()
    clicked = time.monotonic()
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: any(answered(c, error=True) for c in cs),
        "the answer cell with the error",
        timeout=8,
    )
    took = time.monotonic() - clicked
    assert took < 6, f"the run took {took:.1f} s to stop"
    return view


def check_stopped(page: Any, view: list[dict], why: str, shot: str) -> tuple[dict, dict]:
    """The run ended for ``why``: its answer cell, the panel, the toolbar; and the kernel still works.
    Returns the answer cell and the run as the panel shows it."""
    answer = next(c for c in view if "rlm-answer-cell" in c["classes"])
    assert answer["rlm"]["error"] is True and answer["type"] == "markdown"
    assert f"Run cancelled: {why}." in answer["markdown"]
    assert answer["badge"] == "RLM ended"
    panel = wait_until(
        page,
        lambda: runs_view(page),
        lambda v: v["runs"][0]["status"] != "running",
        "the run ended in the panel",
    )
    run = panel["runs"][0]
    assert run["status"] == "stopped" and run["end"] == f"Run cancelled: {why}.", run
    assert all(c != "running" for s in run["steps"] for c in s["calls"]), run
    wait_until(page, lambda: status_text(page), lambda s: s == "RLM: idle", "the toolbar idle again")
    assert not page.locator(STOP).is_enabled()
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:enter-command-mode')")
    shoot(page, shot)

    # The kernel is still usable.
    alive = index_of(page, ALIVE_CELL)
    run_cell(page, alive)
    wait_until(
        page,
        lambda: cells(page)[alive],
        lambda c: "still here 42" in c["output"],
        "the kernel to run another cell",
        timeout=20,
    )
    return answer, run


def test_stop_while_the_root_is_thinking(page: Any, lab: Any, lm_server: ScriptedServer) -> None:
    """Stop between steps: step 1's batch is done, the root's next turn takes 20 s."""
    lm_server.responder = Script(
        root=[SLOW_BATCH, Reply(text=repl("More.", "print(1)"), delay=20)],
        sub=Reply(text="a summary", delay=0.2),
    )
    start_run_to_stop(page, lab, "stop-root.ipynb")
    wait_until(page, lambda: roots(lm_server), lambda r: len(r) == 2, "the root's second turn in flight")
    view = wait_until(  # done, and its output shown: the stream can land just after the count
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 4 and cs[2]["status"] == "done" and cs[2]["output"].strip(),
        "step 1 done, with its output",
    )
    assert view[2]["output"].strip() == str(["a summary"] * 4)
    view = press_and_wait_for_the_end(page, STOP)
    answer, run = check_stopped(page, view, "stopped by the user", "stopped.png")
    assert view.index(answer) == 3  # after the %%rlm cell and its step
    assert [s["status"] for s in run["steps"]] == ["done"]
    assert len(roots(lm_server)) == 2 and len(subs(lm_server)) == 4
    assert cells(page)[2]["status"] == "done"


def test_stop_in_the_middle_of_a_slow_batch(page: Any, lab: Any, lm_server: ScriptedServer) -> None:
    """Stop during a step: its four sub-calls take 20 s each, and are cancelled."""
    lm_server.responder = Script(root=[SLOW_BATCH], sub=Reply(text="a summary", delay=20))
    start_run_to_stop(page, lab, "stop-batch.ipynb")
    wait_until(page, lambda: subs(lm_server), lambda s: len(s) == 4, "four sub-calls in flight")
    wait_until(
        page,
        lambda: runs_view(page),
        lambda v: len(v["runs"]) == 1 and [s["status"] for s in v["runs"][0]["steps"]] == ["running"],
        "the panel showing step 1 running",
    )
    wait_until(
        page,
        lambda: runs_view(page),
        lambda v: v["runs"][0]["steps"][0]["calls"] == ["running"] * 4,
        "the panel showing the four sub-calls running (events flow while the step's cell runs)",
        timeout=5,
    )
    # Stop while the kernel is busy in the step's cell: the extension also interrupts the kernel.
    view = press_and_wait_for_the_end(page, STOP)
    answer, run = check_stopped(page, view, "interrupted", "stopped-batch.png")
    assert view.index(answer) == 3
    assert run["steps"][0]["calls"] == ["cancelled"] * 4
    assert len(roots(lm_server)) == 1  # the root was not asked again


def test_interrupting_the_kernel_stops_a_step_in_the_middle(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    """What works during a step today: JupyterLab's own Interrupt button (SIGINT) ends the run."""
    lm_server.responder = Script(root=[SLOW_BATCH], sub=Reply(text="a summary", delay=20))
    start_run_to_stop(page, lab, "interrupt.ipynb")
    wait_until(page, lambda: subs(lm_server), lambda s: len(s) == 4, "four sub-calls in flight")
    view = press_and_wait_for_the_end(page, INTERRUPT)
    answer, run = check_stopped(page, view, "interrupted", "interrupted.png")
    assert [s["status"] for s in run["steps"]] == ["error"]  # it ended in KeyboardInterrupt
    assert run["steps"][0]["calls"] == ["cancelled"] * 4
    step = next(c for c in view if c["step"] == "1")
    assert "KeyboardInterrupt" in cells(page)[view.index(step)]["output"]
    assert len(roots(lm_server)) == 1
    assert view.index(answer) == view.index(step) + 1, [c["source"][:30] for c in view]


# ------------------------------------------------------------------ 4. save and reopen

REOPEN_ROOT = [
    repl(
        "Three questions at once.",
        'replies = llm_query_batched([f"Question {i}?" for i in range(3)])\nprint(replies)',
    ),
    repl("Done.", 'print("answering")\nFINAL(" / ".join(replies))'),
]


def test_a_saved_run_survives_closing_and_reopening(page: Any, lab: Any, lm_server: ScriptedServer) -> None:
    lm_server.responder = Script(
        root=REOPEN_ROOT, sub=lambda r: Reply(text="reply to " + r.last_user.rstrip("?"), delay=0.2)
    )
    name = write_notebook(lab, "reopen.ipynb", LOG_CELL, "%%rlm -c doc\nAsk three questions.")
    open_notebook(page, lab, name)
    run_cell(page, 0)
    run_cell(page, 1)
    before = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 5 and answered(cs[4]) and cs[3]["status"] == "done",
        "the finished run",
        timeout=60,
    )
    run_id = before[2]["rlm"]["run_id"]

    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    saved = json.loads((lab.root_dir / name).read_text())
    cs = saved["cells"]
    assert [c["cell_type"] for c in cs] == ["code", "code", "code", "code", "markdown"]
    assert [c["metadata"]["rlm"]["step"] for c in cs[2:4]] == [1, 2]
    assert {c["metadata"]["rlm"]["run_id"] for c in cs[2:]} == {run_id}
    assert cs[4]["metadata"]["rlm"] == {"run_id": run_id, "answer": True}
    assert "reply to Question 0 / reply to Question 1 / reply to Question 2" in "".join(cs[4]["source"])
    assert "".join(cs[2]["outputs"][0]["text"]).startswith("['reply to Question 0'")
    trajectories = [
        o["metadata"]["rlm_kernel"]["events"]
        for o in cs[1]["outputs"]
        if "rlm_kernel" in o.get("metadata", {})
    ]
    assert len(trajectories) == 1, cs[1]["outputs"]
    kinds = [e["kind"] for e in trajectories[0]]
    assert kinds[0] == "run_started" and kinds[-1] == "run_ended"
    assert kinds.count("subcall_finished") == 3 and kinds.count("step_finished") == 2
    assert {e["run_id"] for e in trajectories[0]} == {run_id}

    # Close the tab, open it again: the cells, their outputs and styles, and the run in the panel.
    page.evaluate("() => window.jupyterapp.shell.currentWidget.close()")
    page.wait_for_selector(".jp-NotebookPanel", state="detached")
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", name)
    page.wait_for_function(
        "(name) => window.jupyterapp.shell.currentWidget?.context?.path === name", arg=name
    )
    wait_connected(page)
    show_runs(page)
    after = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 5 and cs[3]["step"] == "2" and answered(cs[4]),
        "the reopened notebook's RLM cells",
    )
    for b, a in zip(before, after, strict=True):
        assert (a["id"], a["source"], a["rlm"], a["step"], a["badge"]) == (
            b["id"],
            b["source"],
            b["rlm"],
            b["step"],
            b["badge"],
        )
        assert [x for x in a["classes"] if x.startswith("rlm-")] == [
            x for x in b["classes"] if x.startswith("rlm-")
        ]
    assert after[2]["output"] == before[2]["output"] and "reply to Question 2" in after[2]["output"]
    assert after[3]["output"].strip() == "answering"
    assert after[4]["markdown"] == before[4]["markdown"] and "reply to Question 1" in after[4]["markdown"]
    panel = wait_until(
        page,
        lambda: runs_view(page),
        lambda v: len(v["runs"]) == 1 and len(v["runs"][0]["steps"]) == 2,
        "the saved run in the panel",
    )
    run = panel["runs"][0]
    assert run["id"] == run_id and run["status"] == "done" and "saved" in run["pill"]
    assert [s["status"] for s in run["steps"]] == ["done", "done"]
    assert run["steps"][0]["calls"] == ["done"] * 3
    assert panel["totals"].startswith(f"Total: {len(lm_server.requests)} calls")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:enter-command-mode')")
    shoot(page, "reopened.png")


# ------------------------------------------------------------------ the permission ladder, Regenerate
MODE = f"{PANEL} [data-rlm-control='mode'] button"
REGENERATE = f"{PANEL} [data-rlm-control='regenerate'] button"


def test_the_ladder_and_regenerate_in_the_browser(page: Any, lab: Any, lm_server: ScriptedServer) -> None:
    """Between runs the Mode button sets the next run's rung; under confirm-risky only a flagged
    step waits, with the reason on its badge; Regenerate puts the root's new code in its cell."""
    replies = iter(
        [
            repl("First, the size.", "n = len(context)"),
            repl("Look at the disk.", "import shutil\nprint(shutil.disk_usage('/'))"),
            repl("Without the disk, then.", 'print("n =", n)\nFINAL(n)'),
        ]
    )
    lm_server.responder = lambda request: (
        Reply(text=next(replies), delay=0.2) if request.is_root else Reply(text="-")
    )
    name = write_notebook(lab, "ladder.ipynb", LOG_CELL, "%%rlm -c doc\nHow long is it?")
    open_notebook(page, lab, name)
    # Idle: the Mode button works, and says it is for the next run.
    mode = page.locator(MODE)
    assert mode.is_enabled() and mode.inner_text() == "Mode: auto"
    mode.click()
    wait_until(page, lambda: mode.inner_text(), lambda t: t == "Mode: confirm-risky", "the next run's mode")
    assert "the next run" in mode.get_attribute("title")
    run_cell(page, 0)
    run_cell(page, 1)
    # Step 1 is harmless and runs at once; step 2 imports shutil and waits, saying why.
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) >= 4 and cs[3]["step"] == "2" and cs[2]["count"] is not None,
        "step 1 run and step 2 proposed",
        timeout=60,
    )
    step2 = view[3]
    assert step2["badge"] == "RLM step 2 · check: it imports shutil" and step2["count"] is None
    assert step2["rlm"]["reason"] == "it imports shutil"
    regenerate = page.locator(REGENERATE)
    wait_until(page, lambda: regenerate.is_enabled(), bool, "Regenerate enabled for the waiting step")
    regenerate.click()
    # The same cell takes the new proposal (the human had not edited it); nothing else is added.
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: cs[3]["source"].strip() == 'print("n =", n)\nFINAL(n)' and cs[3]["badge"] == "RLM step 2",
        "the new proposal in step 2's cell, its badge without the scan's reason",
    )
    assert [c["step"] for c in view].count("2") == 1  # no second cell for the step
    assert view[3]["step"] == "2" and view[3]["rlm"]["proposed"] == view[3]["source"]
    assert "reason" not in view[3]["rlm"]
    assert len(roots(lm_server)) == 3 and roots(lm_server)[1].messages == roots(lm_server)[2].messages
    # The new proposal is harmless: it runs by itself and the run ends.
    view = wait_until(page, lambda: cells(page), lambda cs: len(cs) == 5 and answered(cs[4]), "the answer")
    assert view[3]["output"].strip() == "n = 5255" and "5255" in view[4]["markdown"]
    shoot(page, "ladder-regenerate.png")
