"""Screenshots for the README, from a real JupyterLab in headless Chromium.

    python docs/screenshots.py                       # all of them
    python docs/screenshots.py --only notebook-mode  # docs/images/notebook-mode-light.png, -dark.png
    python docs/screenshots.py --only widget         # docs/images/widget-live.png, widget-done.png
    python docs/screenshots.py --only widget --theme dark   # the widget's with a -dark suffix

Everything runs on 127.0.0.1 and needs no API key: the scripted LM server from the tests answers
the root and the sub-calls, JupyterLab (tests/lab_server.py, as the browser tests start it, with
this checkout's extension build) serves notebooks written to a temporary folder, and Chromium
(``apt-get install chromium``; never downloaded by Playwright) drives it. Needs
``pip install jupyterlab playwright`` in the environment that has rlm_kernel.

The widget run: the root splits a 256,000-character report into 64 parts and asks a sub-model
about each with one ``llm_query_batched`` (latencies spread over 3-8 s, 32 in flight at once),
merges the hits with one ``llm_query``, then answers. ``widget-live.png`` is taken while the batch
is in flight; ``widget-done.png`` after the run, when the widget has become static HTML followed
by the Markdown answer.

The notebook-mode run, on the RLM Python kernel with ``--mode step``: step 1 (a batch of
sub-calls) has run as a cell, step 2 waits for the human in a cell of its own, and the RLM runs
panel is open. The page (1280x800) is taken in JupyterLab's light theme, then in its dark one
(``apputils:change-theme``), with the run still waiting.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "browser")]

from lab_server import CHROMIUM, CHROMIUM_ARGS, running_lab  # noqa: E402
from pages import (  # noqa: E402
    cells,
    open_notebook,
    repl,
    run_cell,
    runs_view,
    show_runs,
    wait_until,
    widen_runs_panel,
    write_notebook,
)
from scripted_server import Reply, Request, Script, ScriptedServer  # noqa: E402

PARTS = 64
PART_CHARS = 4000
NOTEBOOK = "supplier-report.ipynb"

# ------------------------------------------------------------------ the data and the scripted LM

SUPPLIERS = [
    "Acme Logistics",
    "Borealis Paper",
    "Cobalt Fasteners",
    "Delta Resins",
    "Evergreen Textiles",
    "Fjord Glassworks",
    "Granite Tooling",
    "Harbor Freight Co",
]
LATE = {  # part number -> (supplier, order, due, arrived)
    9: ("Northwind Metals", 4471, "3 March", "19 March"),
    23: ("Cobalt Fasteners", 5120, "14 April", "2 May"),
    41: ("Northwind Metals", 6033, "28 May", "11 June"),
    58: ("Delta Resins", 7304, "9 July", "30 July"),
}
LATE_RE = re.compile(r"Order #(\d+) from ([A-Z][\w ]+?) was due (\d+ \w+) and arrived (\d+ \w+)")


def make_report() -> str:
    """64 parts of exactly PART_CHARS characters; four of them mention a late delivery."""
    parts = []
    for p in range(1, PARTS + 1):
        lines = []
        if p in LATE:
            who, order, due, arrived = LATE[p]
            lines.append(
                f"Order #{order} from {who} was due {due} and arrived {arrived}; the line stood idle."
            )
        n = 0
        while sum(len(x) + 1 for x in lines) < PART_CHARS:
            n += 1
            who = SUPPLIERS[(p * 7 + n) % len(SUPPLIERS)]
            lines.append(f"Week {p:02d}, entry {n:02d}: {who} delivered order #{1000 + p * 40 + n} on time.")
        parts.append("\n".join(lines)[: PART_CHARS - 1] + "\n")
    return "".join(parts)


ROOT_REPLIES = [
    repl(
        "The report is long, so I'll split it into parts and ask a sub-model about each one at once.",
        """
parts = [context[i:i + 4000] for i in range(0, len(context), 4000)]
print(len(parts), "parts of", len(parts[0]), "characters")
findings = llm_query_batched([
    f"Part {n} of {len(parts)} of a supplier report. Name each supplier that missed a delivery "
    f"deadline in this part, with the dates, or answer 'none'.\\n\\n{part}"
    for n, part in enumerate(parts, 1)
])
hits = [f for f in findings if f.strip().lower() != "none"]
print(len(hits), "parts mention a missed deadline")
""",
    ),
    repl(
        "Four parts mention late deliveries. Let me merge them into one table.",
        """
summary = llm_query(
    "Merge these findings into a Markdown table (supplier, order, due, arrived, days late), "
    "then one line naming the suppliers:\\n" + "\\n".join(hits)
)
print(summary)
""",
    ),
    repl(
        "The table answers the question.",
        """
answer["content"] = summary
answer["ready"] = True
""",
    ),
]


def _days(due: str, arrived: str) -> int:
    import datetime as dt

    parse = lambda s: dt.datetime.strptime(f"{s} 2026", "%d %B %Y")  # noqa: E731
    return (parse(arrived) - parse(due)).days


def sub_responder(request: Request) -> Reply:
    prompt = request.last_user
    if prompt.startswith("Merge"):
        rows = LATE_RE.findall(prompt)
        table = ["| supplier | order | due | arrived | days late |", "|---|---|---|---|---|"]
        table += [
            f"| {who} | #{order} | {due} | {arr} | {_days(due, arr)} |" for order, who, due, arr in rows
        ]
        names = sorted({who for _, who, _, _ in rows})
        text = (
            f"**{len(names)} suppliers missed a delivery deadline**, in {len(rows)} orders:\n\n"
            + "\n".join(table)
            + f"\n\nLate: {', '.join(names)}."
        )
        return Reply(text=text, delay=1.5)
    m = re.match(r"Part (\d+) of", prompt)
    n = int(m.group(1)) if m else 1
    delay = 3.0 + 5.0 * ((n * 29) % PARTS) / (PARTS - 1)  # spread over 3-8 s, in no simple order
    found = LATE_RE.search(prompt)
    if found:
        order, who, due, arrived = found.groups()
        return Reply(text=f"Order #{order} from {who} was due {due} and arrived {arrived}.", delay=delay)
    return Reply(text="none", delay=delay)


def make_script() -> Script:
    return Script(root=[Reply(text=t, delay=1.0, token_delay=0.01) for t in ROOT_REPLIES], sub=sub_responder)


# ------------------------------------------------------------------ the notebook and JupyterLab


def cell(kind: str, source: str) -> dict:
    c: dict = {"cell_type": kind, "metadata": {}, "source": source.strip("\n").splitlines(keepends=True)}
    if kind == "code":
        c.update(execution_count=None, outputs=[])
    return c


def write_widget_notebook(folder: Path) -> None:
    (folder / "report.txt").write_text(make_report())
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
            "language_info": {"name": "python"},
        },
        "cells": [
            cell("code", "%load_ext rlm_kernel"),
            cell("code", 'doc = open("report.txt").read()\nprint(f"{len(doc):,} characters")'),
            cell("code", "%%rlm -c doc\nWhich suppliers missed a delivery deadline, and by how many days?"),
        ],
    }
    for i, c in enumerate(nb["cells"]):
        c["id"] = f"cell-{i}"
    (folder / NOTEBOOK).write_text(json.dumps(nb, indent=1))


# ------------------------------------------------------------------ the browser

RUN_ALL = """async () => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  await panel.context.ready;
  await panel.sessionContext.ready;
  for (let i = 0; i < 600 && panel.sessionContext.session?.kernel?.status !== 'idle'; i++)
    await new Promise(r => setTimeout(r, 100));
  app.commands.execute('notebook:run-all-cells');   // not awaited: the run is watched from outside
  return panel.sessionContext.session.kernel.status;
}"""

LIVE = """() => {
  const p = document.querySelector('.jp-NotebookPanel .rlm-run progress');
  return p !== null && p.value >= 20 && p.value <= 40;
}"""

DONE = """() => {
  const outs = document.querySelectorAll('.jp-NotebookPanel .jp-Cell:last-child .jp-OutputArea-output');
  const text = Array.from(outs).map(o => o.innerText).join('\\n');
  return outs.length > 0 && !document.querySelector('.jp-NotebookPanel .widget-button')
    && text.includes('suppliers missed a delivery deadline') && /RLM .*done/.test(text);
}"""

BOX = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const cells = panel.querySelectorAll('.jp-Cell');
  const first = cells[0].getBoundingClientRect(), last = cells[cells.length - 1].getBoundingClientRect();
  const nb = panel.querySelector('.jp-Notebook').getBoundingClientRect();
  const scroller = panel.querySelector('.jp-WindowedPanel-outer') || panel.querySelector('.jp-Notebook');
  return {x: nb.left, y: first.top, width: nb.width, height: last.bottom - first.top,
          overflow: scroller.scrollHeight - scroller.clientHeight};
}"""


def shoot(page, path: Path, width: int) -> None:
    """The notebook's cells, grown to fit: the viewport is made tall enough that nothing scrolls."""
    box = page.evaluate(BOX)
    for _ in range(5):  # a live run keeps adding rows while the viewport grows
        if box["overflow"] <= 0:
            break
        page.set_viewport_size(
            {"width": width, "height": page.viewport_size["height"] + box["overflow"] + 200}
        )
        page.wait_for_timeout(300)
        box = page.evaluate(BOX)
    pad = 8
    page.mouse.move(0, 0)
    page.screenshot(
        path=str(path),
        clip={
            "x": box["x"],
            "y": max(box["y"] - pad, 0),
            "width": box["width"],
            "height": box["height"] + 2 * pad,
        },
    )
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    print(f"wrote {shown} ({path.stat().st_size // 1024} KiB)")


def drive(url: str, out: Path, suffix: str, width: int, height: int, scale: float) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=scale)
            page.goto(url)
            page.wait_for_function(
                "() => window.jupyterapp && window.jupyterapp.shell.currentWidget", timeout=90_000
            )
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
            page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
            print("kernel:", page.evaluate(RUN_ALL))
            page.wait_for_function(LIVE, timeout=60_000, polling=100)
            page.wait_for_timeout(150)  # let the last update paint
            shoot(page, out / f"widget-live{suffix}.png", width)
            page.set_viewport_size({"width": width, "height": height})
            page.wait_for_function(DONE, timeout=90_000, polling=200)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:enter-command-mode')")
            page.wait_for_timeout(500)
            shoot(page, out / f"widget-done{suffix}.png", width)
        finally:
            browser.close()


# ------------------------------------------------------------------ notebook mode

NB_MODE = "notebook-mode.ipynb"
NB_CONTEXT = """\
kinds = ["disk full", "timeout", "bad checksum"]
lines = [f"{i:03d} " + (f"ERROR {kinds[i % 3]}" if i % 7 == 3 else "INFO ok") for i in range(400)]
log = "\\n".join(lines)
print(len(lines), "lines,", len(log), "characters")"""
NB_QUESTION = "%%rlm -c log --mode step\nWhich kinds of error are in the log, and how many of each?"
NB_ROOT = [
    repl(
        "The log is long: I'll split it into chunks and ask a sub-model to tally the errors in each.",
        """
lines = context.splitlines()
chunks = ["\\n".join(lines[i : i + 50]) for i in range(0, len(lines), 50)]
tallies = llm_query_batched([f"Count the ERROR lines by kind, as `kind: count` lines.\\n{c}" for c in chunks])
print(len(chunks), "chunks; first tally:", tallies[0].replace("\\n", ", "))
""",
    ),
    repl(
        "Now merge the tallies into one count per kind.",
        """
from collections import Counter

total = Counter()
for tally in tallies:
    for line in tally.splitlines():
        kind, count = line.rsplit(":", 1)
        total[kind.strip()] += int(count)
FINAL(", ".join(f"{kind}: {n}" for kind, n in total.most_common()))
""",
    ),
]


def nb_tally(request: Request) -> Reply:
    found = re.findall(r"^\d{3} ERROR (.+)$", request.last_user, re.MULTILINE)
    counts = {kind: found.count(kind) for kind in dict.fromkeys(found)}
    return Reply(text="\n".join(f"{k}: {n}" for k, n in counts.items()), delay=0.5)


def notebook_mode_script() -> Script:
    return Script(root=[Reply(text=t, delay=0.5, token_delay=0.005) for t in NB_ROOT], sub=nb_tally)


SCROLL_TO_RLM_CELL = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const outer = panel.querySelector('.jp-WindowedPanel-outer');
  const cell = panel.querySelectorAll('.jp-Cell')[1];
  outer.scrollTop += cell.getBoundingClientRect().top - outer.getBoundingClientRect().top - 6;
}"""
AT_RLM_CELL = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const outer = panel.querySelector('.jp-WindowedPanel-outer').getBoundingClientRect();
  const cell = panel.querySelectorAll('.jp-Cell')[1].getBoundingClientRect();
  return Math.abs(cell.top - outer.top - 6) < 2;
}"""
# The theme applied, and the splash screen JupyterLab shows while it switches gone.
THEME = """(name) => document.body.dataset.jpThemeName === name
  && getComputedStyle(document.body).getPropertyValue('--jp-layout-color0').trim() !== ''
  && document.querySelector('#jupyterlab-splash') === null"""


def notebook_mode(browser, lab, out: Path) -> None:
    """Step 1 run as a cell, step 2 waiting, the runs panel open: in the light theme, then the dark."""
    page = browser.new_page(viewport={"width": 1280, "height": 800}, device_scale_factor=1)
    write_notebook(lab, NB_MODE, NB_CONTEXT, NB_QUESTION)
    open_notebook(page, lab, NB_MODE)
    show_runs(page)
    widen_runs_panel(page, 60)
    run_cell(page, 0)
    run_cell(page, 1)
    wait_until(page, lambda: cells(page), lambda cs: len(cs) > 2 and cs[2]["step"] == "1", "step 1", 60)
    run_cell(page, 2)  # the human runs the proposed step 1 as it is
    wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) > 3 and cs[2]["status"] == "done" and cs[3]["step"] == "2",
        "step 1 done and step 2 proposed",
        60,
    )
    wait_until(
        page,
        lambda: runs_view(page),
        lambda v: [s["status"] for s in v["runs"][0]["steps"]] == ["done", "waiting"],
        "the runs panel with step 2 waiting",
    )
    # The waiting cell selected, as the extension leaves it, without a blinking caret; the view
    # scrolled to start at the %%rlm cell, so its summary shows whole above the step cells.
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:enter-command-mode')")
    for theme, name in (("light", "JupyterLab Light"), ("dark", "JupyterLab Dark")):
        page.evaluate("(theme) => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", name)
        page.wait_for_function(THEME, arg=name)
        page.evaluate(SCROLL_TO_RLM_CELL)  # again: a theme change lays the page out anew
        page.wait_for_function(AT_RLM_CELL)
        page.wait_for_function("() => document.fonts.status === 'loaded'")
        page.mouse.move(0, 0)
        path = out / f"notebook-mode-{theme}.png"
        page.screenshot(path=str(path))
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    page.close()


# ------------------------------------------------------------------ main


def extension_args(tmp: Path) -> list[str]:
    """This checkout's extension build ahead of any installed copy, as tests/browser/conftest.py does."""
    build = ROOT / "rlm_kernel" / "labextension"
    if not (build / "package.json").exists():
        raise SystemExit("the extension is not built: cd labextension && jlpm build")
    (tmp / "labextensions").mkdir()
    (tmp / "labextensions" / "rlm-kernel-labextension").symlink_to(build, target_is_directory=True)
    return [f"--LabApp.extra_labextensions_path={tmp / 'labextensions'}"]


def shoot_notebook_mode(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="rlm-screens-"))
    server = ScriptedServer(notebook_mode_script()).start()
    try:
        with running_lab(tmp, server, extra_args=extension_args(tmp)) as lab, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                notebook_mode(browser, lab, out)
            finally:
                browser.close()
    except BaseException:
        log = tmp / "lab.log"
        if log.exists():
            sys.stderr.write("--- jupyter lab log (tail) ---\n" + log.read_text()[-4000:])
        raise
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def shoot_widget(args: argparse.Namespace) -> None:
    suffix = "" if args.theme == "light" else f"-{args.theme}"
    tmp = Path(tempfile.mkdtemp(prefix="rlm-screens-"))
    server = ScriptedServer(make_script()).start()
    try:
        with running_lab(tmp, server, theme=args.theme) as lab:
            write_widget_notebook(lab.root_dir)
            drive(lab.url(NOTEBOOK), args.out, suffix, args.width, args.height, args.scale)
        print(f"{len(server.requests)} LM requests answered, at most {server.max_in_flight} at once")
    except BaseException:
        log = tmp / "lab.log"
        if log.exists():
            sys.stderr.write("--- jupyter lab log (tail) ---\n" + log.read_text()[-4000:])
        raise
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["widget", "notebook-mode"], help="one set of screenshots")
    parser.add_argument("--theme", choices=["light", "dark"], default="light", help="the widget's theme")
    parser.add_argument("--width", type=int, default=1100, help="the widget's viewport")
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--scale", type=float, default=1.5, help="device pixels per CSS pixel (the widget)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} not found: apt-get install chromium")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.only in (None, "widget"):
        shoot_widget(args)
    if args.only in (None, "notebook-mode"):
        shoot_notebook_mode(args.out)


if __name__ == "__main__":
    main()
