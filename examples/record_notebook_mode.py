"""Record ``notebook_mode.ipynb`` from a real notebook-mode run in JupyterLab, then check it as CI does.

    python examples/record_notebook_mode.py

Notebook mode needs a front end: the extension inserts each step as a cell, and nbclient (what
``record.py`` uses for the other examples) has none. So this script does what a user does, in a
real JupyterLab (this checkout's extension build, ``rlm_kernel/labextension``) driven by headless
Chromium, on the RLM Python kernel: it runs the context cell and the ``%%rlm --mode step`` cell,
runs each step cell as the root proposes it, waits for the answer cell, saves, runs the cells
that check the saved notebook, saves again, and copies the notebook here. The root and sub-model
are the test suite's scripted LM server (tests/scripted_server.py) standing in for
``gpt-4o-mini``, so the run is the same each time and needs no key. The only change made to the
saved file is nbval's ``nbval-skip`` tag on the cells that need a front end (the ``%%rlm`` cell
and its step cells). Finally ``pytest`` runs the notebook under nbval, as CI does.

Needs Chromium at /usr/bin/chromium, ``playwright`` and ``jupyterlab``, and the extension built
(``pip install -e .`` or ``cd labextension && jlpm build``).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "browser")]

from lab_server import CHROMIUM, CHROMIUM_ARGS, running_lab  # noqa: E402
from pages import (  # noqa: E402
    RLM_PYTHON,
    answered,
    cells,
    index_of,
    open_notebook,
    repl,
    run_cell,
    show_runs,
    wait_until,
)
from scripted_server import Reply, Request, Script, ScriptedServer  # noqa: E402

NAME = "notebook_mode.ipynb"
EXTENSION = ROOT / "rlm_kernel" / "labextension"

INTRO = """\
# Notebook mode: each root step is a cell

In the **RLM Python** kernel with the JupyterLab extension, the notebook *is* the REPL. A `%%rlm`
cell starts a run; each step the root model proposes is inserted below it as a real code cell, run
in this kernel's namespace, and keeps its output here; the answer lands in a Markdown cell after
the last step. The `%%rlm` cell's own output is a short summary of the run.

This notebook is what such a run leaves behind, saved from a real one (recorded by
`examples/record_notebook_mode.py`, with the test suite's scripted LM server standing in for
`gpt-4o-mini`, so it needs no key).

**To run it yourself:** `pip install rlm-kernel` installs the kernel and the extension. Start
`jupyter lab`, open a notebook on the **RLM Python** kernel (`rlm-python`), and run a `%%rlm`
cell. With `--mode step` (below) each proposed cell waits for you: read it, edit it if you like,
and run it (Shift+Enter); the root's next turn sees what you changed. The notebook toolbar has
the mode (auto, confirm-risky, step), Regenerate, pause/resume and stop; the **RLM runs** panel
(right side bar, or *RLM: Show Runs Panel* in the command palette) lists each step and its
sub-calls with tokens, latency and cost. Without the extension (Notebook 7, VS Code, nbclient) the
same cell shows its steps in its own output instead."""

CONTEXT = """\
kinds = ["disk full", "timeout", "bad checksum"]
lines = [f"{i:03d} " + (f"ERROR {kinds[i % 3]}" if i % 7 == 3 else "INFO ok") for i in range(300)]
log = "\\n".join(lines)
print(len(lines), "lines,", len(log), "characters")"""

QUESTION = "%%rlm -c log --mode step\nWhich kinds of error are in the log, and how many of each?"

AFTER = """\
## What the run left in the notebook

- the `%%rlm` cell, whose output is the run's summary (status, question, totals, one line per
  step, the answer) and keeps the run's whole trajectory in its output metadata;
- one code cell per step, with `metadata.rlm` naming the run, the step, its author (`root`,
  `human-edited`, or `human` for a cell of yours run during the run) and the code the root
  proposed; the extension marks them with a left border and an "RLM step N" badge;
- the answer cell, with `metadata.rlm.answer`.

Reopened, the notebook shows the run again in the runs panel, from that saved trajectory.

## What CI checks here

nbval re-runs the example notebooks, but it has no front end to insert step cells, so it skips
the `%%rlm` cell and the step cells (tagged `nbval-skip`) and runs the cells below, which check
what the run saved: the step cells' metadata, and the trajectory, read back with
`rlm_kernel.trajectory.from_notebook`. The extension's jest tests read the same cells with the
extension's own schema and restore the run in its runs panel model
(`labextension/src/__tests__/example.spec.ts`)."""

CHECK_CELLS = """\
import json

notebook = json.load(open("notebook_mode.ipynb"))
for cell in notebook["cells"]:
    meta = cell["metadata"].get("rlm")
    if meta:
        shown = {k: meta[k] for k in ("step", "author", "answer", "error") if k in meta}
        print(cell["cell_type"], shown, "".join(cell["source"]).splitlines()[0][:60])"""

CHECK_TRAJECTORY = """\
from collections import Counter

from rlm_kernel.trajectory import from_notebook

events = from_notebook("notebook_mode.ipynb")
print(Counter(e.kind for e in events))
print("answer:", next(e.response for e in events if e.kind == "run_ended"))"""

# ------------------------------------------------------------------ the scripted LM

ROOT_REPLIES = [
    repl(
        "The log is long, so I'll split it into chunks and ask a sub-model to tally the errors in each.",
        """
lines = context.splitlines()
chunks = ["\\n".join(lines[i : i + 60]) for i in range(0, len(lines), 60)]
tallies = llm_query_batched(
    [f"Count the ERROR lines by kind. Answer as `kind: count` lines.\\n{c}" for c in chunks]
)
print(len(chunks), "chunks; first tally:", tallies[0].replace("\\n", ", "))
""",
    ),
    repl(
        "Now merge the tallies.",
        """
from collections import Counter

total = Counter()
for tally in tallies:
    for line in tally.splitlines():
        kind, count = line.rsplit(":", 1)
        total[kind.strip()] += int(count)
print(dict(total))
FINAL(", ".join(f"{kind}: {n}" for kind, n in total.most_common()))
""",
    ),
]


def tally(request: Request) -> Reply:
    """A sub-call: the chunk's errors by kind, as ``kind: count`` lines."""
    found = re.findall(r"^\d{3} ERROR (.+)$", request.last_user, re.MULTILINE)
    counts = {kind: found.count(kind) for kind in dict.fromkeys(found)}
    return Reply(text="\n".join(f"{k}: {n}" for k, n in counts.items()), delay=0.6)


# ------------------------------------------------------------------ the notebook and the browser


def source_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": RLM_PYTHON, "language_info": {"name": "python"}}
    nb.cells = [
        nbformat.v4.new_markdown_cell(INTRO),
        nbformat.v4.new_code_cell(CONTEXT),
        nbformat.v4.new_code_cell(QUESTION),
        nbformat.v4.new_markdown_cell(AFTER),
        nbformat.v4.new_code_cell(CHECK_CELLS),
        nbformat.v4.new_code_cell(CHECK_TRAJECTORY),
    ]
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i}"
    return nb


CHECKS = ("cell-4", "cell-5")  # the cells that check the saved notebook, run after the run


def run_in_lab(page, lab) -> None:
    """Run the notebook as a user would in step mode, then save it and run the checks on the file."""
    open_notebook(page, lab, NAME)
    show_runs(page)
    run_cell(page, index_of(page, "kinds = "))
    run_cell(page, index_of(page, "%%rlm"))
    for step in range(1, len(ROOT_REPLIES) + 1):
        view = wait_until(
            page,
            lambda: cells(page),
            lambda cs, step=step: any(c["step"] == str(step) for c in cs),
            f"the proposed step {step}",
            timeout=60,
        )
        index = next(i for i, c in enumerate(view) if c["step"] == str(step))
        run_cell(page, index)  # the human reads the proposal and runs it unchanged
        wait_until(
            page,
            lambda index=index: cells(page)[index],
            lambda c: c["status"] == "done",
            f"step {step} run",
            timeout=60,
        )
    wait_until(page, lambda: cells(page), lambda cs: any(answered(c) for c in cs), "the answer cell", 60)
    wait_until(
        page, lambda: cells(page)[index_of(page, "%%rlm")], lambda c: "Answer:" in c["output"], "the summary"
    )
    save(page)
    for check in CHECKS:
        index = next(i for i, c in enumerate(cells(page)) if c["id"] == check)
        run_cell(page, index)
        wait_until(page, lambda index=index: cells(page)[index], lambda c: c["count"] is not None, "a check")
    save(page)


def save(page) -> None:
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")


def tag_front_end_cells(nb: nbformat.NotebookNode) -> None:
    """nbval cannot insert step cells: the %%rlm cell and its step cells are skipped under it."""
    for cell in nb.cells:
        if cell.cell_type == "code" and (cell.source.startswith("%%rlm") or "rlm" in cell.metadata):
            tags = cell.metadata.setdefault("tags", [])
            if "nbval-skip" not in tags:
                tags.append("nbval-skip")
        elif cell.get("id") in ("cell-1", *CHECKS):  # the context and the checks of the saved file
            cell.metadata.setdefault("tags", ["nbval-check-output"])


def record(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    if not (EXTENSION / "package.json").exists():
        raise SystemExit("the extension is not built: cd labextension && jlpm build")
    with tempfile.TemporaryDirectory(prefix="rlm-record-") as tmp_name:
        tmp = Path(tmp_name)
        # This checkout's build ahead of any installed copy, as tests/browser/conftest.py does.
        (tmp / "labextensions").mkdir()
        (tmp / "labextensions" / "rlm-kernel-labextension").symlink_to(EXTENSION, target_is_directory=True)
        extra = [f"--LabApp.extra_labextensions_path={tmp / 'labextensions'}"]
        with ScriptedServer(Script(root=ROOT_REPLIES, sub=tally)) as server:
            with running_lab(tmp, server, extra_args=extra) as lab:
                nbformat.write(source_notebook(), lab.root_dir / NAME)
                with sync_playwright() as pw:
                    browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                    try:
                        page = browser.new_page(viewport={"width": 1400, "height": 900})
                        run_in_lab(page, lab)
                    finally:
                        browser.close()
                nb = nbformat.read(lab.root_dir / NAME, as_version=4)
    tag_front_end_cells(nb)
    nbformat.validate(nb)
    nbformat.write(nb, out)
    print(f"{out.name}: {len(nb.cells)} cells, {len(server.requests)} LM requests answered")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--no-check", action="store_true", help="skip the run under nbval")
    args = parser.parse_args(argv)
    out = HERE / NAME
    record(out)
    if args.no_check:
        return 0
    return subprocess.call([sys.executable, "-m", "pytest", "-q", str(out)], cwd=ROOT)


if __name__ == "__main__":
    raise SystemExit(main())
