"""The runs panel on the stock ``python3`` kernel with ``%load_ext rlm_kernel``: the magics' runs
show there as they go, in the mode they ran in, not only once the notebook is reopened.

Needs Chromium at /usr/bin/chromium and the ``playwright`` package (see test_lab.py).
"""

from __future__ import annotations

from typing import Any

from pages import (
    PANEL,
    RUNS,
    STOCK_PYTHON,
    cells,
    open_notebook,
    repl,
    run_cell,
    runs_view,
    show_runs,
    wait_until,
    write_notebook,
)
from scripted_server import Reply, Script, ScriptedServer

# Each run in the panel: its status, its meta line (model · mode) and its steps' statuses.
LISTED = f"""() => Array.from(document.querySelectorAll('{RUNS} .rlm-run')).map(r => ({{
  status: r.dataset.status,
  meta: r.querySelector('.rlm-run-meta')?.textContent ?? '',
  question: r.querySelector('.rlm-run-question')?.textContent ?? '',
  steps: Array.from(r.querySelectorAll('.rlm-step')).map(s => s.dataset.status),
}}))"""


def listed(page: Any) -> list[dict]:
    return page.evaluate(LISTED)


def run_step_button(page: Any) -> Any:
    return page.locator(".jp-OutputArea .widget-button", has_text="Run step")


def test_a_stock_kernel_run_is_listed_as_it_goes_with_its_mode(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(
        root=[
            Reply(text=repl("Look.", "print(doc[:5])")),
            Reply(text=repl("Done.", 'FINAL("hello")')),
        ]
    )
    name = write_notebook(
        lab,
        "stock-runs.ipynb",
        "%load_ext rlm_kernel",
        'doc = "hello world"',
        "%%rlm -c doc --mode step\nWhat does it say?",
        kernel=STOCK_PYTHON,
    )
    open_notebook(page, lab, name, connected=False)
    show_runs(page)
    # Not awaited: Run All ends only once the run does, and step mode waits for us.
    page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    # Step 1 waits in the cell's widget: the panel already lists the run, running, in step mode.
    run_step_button(page).wait_for()
    runs = wait_until(
        page,
        lambda: listed(page),
        lambda rs: len(rs) == 1 and rs[0]["status"] == "running" and len(rs[0]["steps"]) >= 1,
        "the running run in the panel, before the notebook is reopened",
    )
    assert "mode: step" in runs[0]["meta"], runs
    assert runs[0]["question"] == "What does it say?"

    run_step_button(page).click()  # step 1
    wait_until(page, lambda: listed(page), lambda rs: rs[0]["steps"][:1] == ["done"], "step 1 done, live")
    run_step_button(page).click()  # step 2: FINAL
    runs = wait_until(
        page,
        lambda: listed(page),
        lambda rs: len(rs) == 1 and rs[0]["status"] == "done",
        "the run done in the panel",
        timeout=60,
    )
    assert runs[0]["steps"] == ["done", "done"] and "mode: step" in runs[0]["meta"], runs

    # Reopened, the saved run is the same run, in the mode it ran in.
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    page.goto("about:blank")
    open_notebook(page, lab, name, connected=False)
    show_runs(page)
    runs = wait_until(page, lambda: listed(page), lambda rs: len(rs) == 1, "the saved run, once")
    assert "mode: step" in runs[0]["meta"], runs


# Where the status is: in the notebook's toolbar and fully inside it, or moved into its overflow.
STATUS_PLACE = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const status = panel.node.querySelector("[data-rlm-control='status']")
    ?? document.querySelector(".jp-Toolbar-responsive-popup [data-rlm-control='status']");
  if (!status) return null;
  const bar = panel.toolbar.node.getBoundingClientRect();
  const r = status.getBoundingClientRect();
  return {
    text: status.textContent,
    overflowed: status.closest('.jp-Toolbar-responsive-popup') !== null || !panel.toolbar.node.contains(status),
    shown: r.width > 0 && r.left >= bar.left - 1 && r.right <= bar.right + 1 && r.top >= bar.top - 1,
    inBar: Array.from(panel.toolbar.node.querySelectorAll('[data-rlm-control]')).map(n => n.dataset.rlmControl),
    titles: Array.from(document.querySelectorAll('[data-rlm-control]')).map(
      n => [n.dataset.rlmControl, n.title || n.querySelector('button')?.title || '']),
  };
}"""


def test_the_toolbar_keeps_the_run_status_in_sight_at_1280_px_with_both_side_panels(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(root=[Reply(text=repl("Look.", "print(doc[:5])"))])
    name = write_notebook(lab, "narrow.ipynb", 'doc = "hello world"', "%%rlm -c doc --mode step\nWhat is it?")
    page.set_viewport_size({"width": 1280, "height": 800})
    open_notebook(page, lab, name)
    page.evaluate("() => window.jupyterapp.shell.activateById('filebrowser')")
    page.wait_for_selector("#filebrowser:not(.lm-mod-hidden)")
    show_runs(page)
    page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    place = wait_until(
        page,
        lambda: page.evaluate(STATUS_PLACE),
        lambda p: "waiting for step 1" in p["text"],
        "the status of a run waiting for step 1",
    )
    assert not place["overflowed"] and place["shown"], place
    # The buttons that do not fit are in the toolbar's "…" menu, each with its tooltip.
    assert place["inBar"][0] == "status", place
    assert all(title.strip() for _, title in place["titles"]), place["titles"]


LONG = 'line = "' + "a long line " * 40 + '"\nprint(len(line))'
STOP = "[data-rlm-control='stop'] button"

# Step 1's Continue button and its step's link, and step 1's cell: its badge, its editor's scroller.
PLACES = """() => {
  const rect = el => { if (!el) return null; const r = el.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  const step = document.querySelector("#rlm-runs-panel .rlm-step[data-step='1']");
  const cell = window.jupyterapp.shell.currentWidget.content.widgets[2];
  const scroller = cell.node.querySelector('.cm-scroller');
  return {
    link: rect(step?.querySelector('.rlm-step-link')),
    button: rect(step?.querySelector("[data-rlm-control='continue']")),
    badge: rect(cell.node.querySelector('.rlm-badge')),
    scroller: rect(scroller),
    scrolls: scroller ? scroller.scrollWidth > scroller.clientWidth : false,
  };
}"""


def test_continue_is_offered_on_a_step_that_ran_in_its_row_and_badges_clear_the_scrollbar(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(
        root=[Reply(text=repl("A long line.", LONG)), Reply(text=repl("Then.", "print(line[:6])"))]
    )
    name = write_notebook(lab, "continue-ran.ipynb", 'doc = "abc"', "%%rlm -c doc --mode step\nq")
    open_notebook(page, lab, name)
    show_runs(page)
    run_cell(page, 0)
    run_cell(page, 1)
    wait_until(page, lambda: cells(page), lambda cs: len(cs) == 3 and cs[2]["step"] == "1", "step 1's cell")
    run_cell(page, 2)
    wait_until(page, lambda: cells(page), lambda cs: len(cs) == 4 and cs[3]["step"] == "2", "step 2's cell")
    page.locator(f"{PANEL} {STOP}").click()  # step 2 never runs
    wait_until(
        page,
        lambda: runs_view(page),
        lambda v: len(v["runs"]) == 1 and v["runs"][0]["status"] in ("stopped", "error"),
        "the stopped run in the panel",
    )

    continues = {
        n: page.locator(f"{RUNS} .rlm-step[data-step='{n}'] [data-rlm-control='continue']").count()
        for n in (1, 2)
    }
    assert continues == {1: 1, 2: 0}, continues  # step 2 never ran: nothing to continue from
    places = page.evaluate(PLACES)
    link, button = places["link"], places["button"]
    assert button["top"] < link["bottom"] and button["bottom"] > link["top"], places  # on step 1's row
    assert places["scrolls"], places  # the long line scrolls sideways
    badge, scroller = places["badge"], places["scroller"]
    assert badge["top"] >= scroller["bottom"] - 0.5, places  # below the editor and its scrollbar
