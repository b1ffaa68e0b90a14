"""What a picky JupyterLab user sees in notebook mode, in a real JupyterLab in Chromium: a ``%%rlm``
cell's question is highlighted as prose, not Python, and the cell's own output is a compact summary
of the run whose steps are cells below it.

Needs Chromium at /usr/bin/chromium and the ``playwright`` package (see test_lab.py).
"""

from __future__ import annotations

from typing import Any

from pages import answered, cells, open_notebook, repl, run_cell, wait_until, write_notebook
from scripted_server import Reply, Script, ScriptedServer

QUESTION = "%%rlm -c doc\nFor each {kind} in the log, is it an error? If so, for which line is it in?"
CODE = "for i in range(3):\n    print(i, 'in' if i else 'out')"

# The editor's highlighted pieces of cell ``i``: each span inside a line, with its text and classes.
TOKENS = """(i) => {
  const cell = window.jupyterapp.shell.currentWidget.content.widgets[i];
  return Array.from(cell.node.querySelectorAll('.cm-content .cm-line span')).map(s => ({
    text: s.textContent, cls: s.className, weight: getComputedStyle(s).fontWeight,
  }));
}"""


def tokens(page: Any, index: int) -> list[dict]:
    return page.evaluate(TOKENS, index)


def keyword_classes(page: Any, index: int) -> set[str]:
    """The classes JupyterLab's Python highlighting gives the keywords ``for`` and ``in`` in a cell."""
    return {t["cls"] for t in tokens(page, index) if t["text"] in ("for", "in") and t["cls"]}


def test_a_rlm_cells_question_is_not_highlighted_as_python(page: Any, lab: Any) -> None:
    name = write_notebook(lab, "highlight.ipynb", QUESTION, CODE)
    open_notebook(page, lab, name)
    # The code cell: `for` and `in` are keywords, bold, with the keyword style's class.
    keyword = wait_until(
        page, lambda: keyword_classes(page, 1), lambda k: len(k) == 1, "Python keywords in the code cell"
    )
    assert {t["weight"] for t in tokens(page, 1) if t["text"] == "for"} == {"700"}
    # The %%rlm cell: the same words in the question carry no keyword class, and nothing is bold.
    words = tokens(page, 0)
    assert not {t["cls"] for t in words} & keyword, words
    assert all(t["weight"] != "700" for t in words if t["text"].strip() in ("for", "in", "if", "is")), words

    # Editing follows the first line: without the magic the cell is Python again, and back.
    def set_source(source: str) -> None:
        page.evaluate(
            "([i, s]) => window.jupyterapp.shell.currentWidget.content.widgets[i].model.sharedModel.setSource(s)",
            [0, source],
        )

    set_source(CODE)
    wait_until(page, lambda: keyword_classes(page, 0), lambda k: k == keyword, "Python again in cell 0")
    set_source(QUESTION)
    wait_until(
        page,
        lambda: {t["cls"] for t in tokens(page, 0)},
        lambda classes: not classes & keyword,
        "prose again in cell 0",
    )


def test_the_rlm_cells_output_is_a_compact_summary_in_notebook_mode(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(
        root=[
            Reply(text=repl("Count them.", 'n = doc.count("ERROR")\nprint("errors:", n)'), delay=0.2),
            Reply(text=repl("Done.", "FINAL(n)"), delay=0.2),
        ]
    )
    name = write_notebook(lab, "summary.ipynb", 'doc = "ok ERROR ok ERROR"', "%%rlm -c doc\nHow many errors?")
    open_notebook(page, lab, name)
    run_cell(page, 0)
    run_cell(page, 1)
    view = wait_until(
        page,
        lambda: cells(page),
        lambda cs: len(cs) == 5 and answered(cs[4]) and "Answer:" in cs[1]["output"],
        "two step cells, the answer cell and the final summary",
        timeout=60,
    )
    summary = view[1]["output"]
    assert summary.startswith("RLM · gpt-4o-mini · done\n2 LM call(s) · "), summary
    assert "Question: How many errors?" in summary
    assert "step 1 · root · done · root LM " in summary and "step 2 · root · done · root LM " in summary
    assert "Answer:\n2" in summary
    # The step cells hold the code and output; the summary repeats neither.
    assert 'doc.count("ERROR")' in view[2]["source"] and "errors: 2" in view[2]["output"]
    assert "doc.count" not in summary and "errors: 2" not in summary and "FINAL" not in summary
