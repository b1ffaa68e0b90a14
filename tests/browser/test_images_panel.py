"""Images in a real JupyterLab: a `%%rlm` step sends a notebook's image to the sub-model
(``llm_query(images=)``); the runs panel shows a thumbnail of it under the sub-call, with its size
and format, and the request the sub-model got carried the image itself."""

from __future__ import annotations

from typing import Any

from pages import answered, cells, open_notebook, repl, run_cell, show_runs, subs, wait_until, write_notebook
from scripted_server import Script, ScriptedServer

IMAGE_CELL = """\
import io
from PIL import Image
chart = Image.new("RGB", (120, 80), (200, 30, 30))
doc = "One chart, red."
"""

ROOT = [
    repl("Ask about the chart.", 'r = llm_query("What colour is the chart?", images=[chart])\nprint(r)'),
    repl("It answered.", "FINAL(r)"),
]

IMAGES_VIEW = """() => Array.from(document.querySelectorAll('#rlm-runs-panel .rlm-call')).map(c => ({
  id: c.dataset.callId,
  text: (c.querySelector('.rlm-call-images') || {}).textContent || '',
  images: Array.from(c.querySelectorAll('img.rlm-call-image')).map(i => ({
    src: i.getAttribute('src'), title: i.title, width: i.getBoundingClientRect().width,
  })),
}))"""


def test_the_panel_shows_a_thumbnail_of_each_image_a_sub_call_sent(
    page: Any, lab: Any, lm_server: ScriptedServer
) -> None:
    lm_server.responder = Script(root=ROOT, sub="Red.")
    name = write_notebook(lab, "images.ipynb", IMAGE_CELL, "%%rlm -c doc\nWhat colour is the chart?")
    open_notebook(page, lab, name)
    show_runs(page)
    run_cell(page, 0)
    run_cell(page, 1)

    view = wait_until(
        page, lambda: cells(page), lambda cs: len(cs) == 5 and answered(cs[4]), "two steps and the answer"
    )
    assert "Red." in view[4]["markdown"]
    (sub,) = subs(lm_server)
    parts = sub.body["messages"][-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")

    (call,) = wait_until(
        page,
        lambda: page.evaluate(IMAGES_VIEW),
        lambda calls: len(calls) == 1 and len(calls[0]["images"]) == 1,
        "the sub-call's thumbnail in the panel",
    )
    (thumbnail,) = call["images"]
    assert call["text"].startswith("↳ 1 image(s): ")
    assert thumbnail["src"].startswith("data:image/png;base64,")
    assert thumbnail["title"].startswith("PNG 120×80, ")
    assert 0 < thumbnail["width"] <= 48
