"""LM text made safe for the browser (rlm_kernel/jupyter/safe.py), against a corpus of payloads.

Every payload goes through each form (plain text, Markdown as HTML, Markdown source) and through the
run view with the payload in every field a run can fill. The HTML that comes out is parsed and
checked by rules written here, independent of the code under test: no element that runs script or
loads a resource, no event handler, no ``url()`` in a style, no link outside http, https, mailto
and relative addresses. The Markdown source is also rendered by a second, independent parser
(mistune, with raw HTML on) and checked by the same rules.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import mistune
import pytest
from markdown_it import MarkdownIt

from rlm_kernel.events import (
    AnswerSet,
    RootReply,
    RunEnded,
    RunStarted,
    StepFinished,
    StepStarted,
    SubcallFinished,
    SubcallStarted,
    ToolCalled,
)
from rlm_kernel.jupyter import safe
from rlm_kernel.jupyter.render import render_run
from rlm_kernel.view import RunState

ATTACKER = "http://attacker.test:8000"
CORPUS = json.loads((Path(__file__).parents[1] / "data" / "payloads.json").read_text())["payloads"]
PAYLOADS = {name: text.replace("ATTACKER", ATTACKER) for name, text in CORPUS.items()}
ALL = "\n\n".join(PAYLOADS.values())  # every payload in one text, as one answer might hold them

LIVE_TAGS = {
    "script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "img", "image",
    "svg", "math", "video", "audio", "source", "track", "picture", "link", "meta", "base", "input",
    "form", "button", "template", "noscript", "portal",
}  # fmt: skip
LOADING_ATTRS = {
    "src",
    "srcset",
    "srcdoc",
    "poster",
    "background",
    "data",
    "formaction",
    "action",
    "xlink:href",
}


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    handle_startendtag = handle_starttag


def problems(html: str) -> list[str]:
    """What in this HTML could run script or fetch something without a click."""
    parser = _Collect()
    parser.feed(html)
    parser.close()
    found = []
    for tag, attrs in parser.elements:
        if tag in LIVE_TAGS:
            found.append(f"<{tag}>")
        for name, value in attrs.items():
            if name.startswith("on") or name in LOADING_ATTRS:
                found.append(f"<{tag} {name}>")
            if name == "style" and re.search(r"url\s*\(|expression\s*\(|@import", value, re.I):
                found.append(f"<{tag} style={value!r}>")
            if name == "href":
                scheme = urlsplit(re.sub(r"[\x00-\x20]", "", value)).scheme.lower()
                if scheme not in ("", "http", "https", "mailto"):
                    found.append(f"<{tag} href={value!r}>")
    return found


def test_the_checker_sees_each_kind_of_problem() -> None:
    assert problems('<img src="x">') == ["<img>", "<img src>"]
    assert problems("<p onclick=x>a</p>") == ["<p onclick>"]
    assert problems('<div style="background: URL(x)">') == ["<div style='background: URL(x)'>"]
    assert problems('<a href="jav&#x09;ascript:x">a</a>') == ["<a href='jav\\tascript:x'>"]
    assert problems('<a href="https://example.org">a</a> <p style="color: red">b</p>') == []


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_text_is_inert(name: str) -> None:
    out = safe.text(PAYLOADS[name])
    assert "<" not in out and ">" not in out and '"' not in out
    assert problems(f'<p title="{out}">{out}</p>') == []


@pytest.mark.parametrize("name", [*sorted(PAYLOADS), "all"])
def test_markdown_html_is_inert(name: str) -> None:
    value = PAYLOADS.get(name, ALL)
    assert problems(safe.markdown_html(value)) == []


@pytest.mark.parametrize("name", [*sorted(PAYLOADS), "all"])
def test_markdown_source_is_inert_in_two_parsers(name: str) -> None:
    source = safe.markdown_source(PAYLOADS.get(name, ALL))
    with_html = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    assert problems(with_html.render(source)) == []
    assert problems(mistune.html(source)) == []  # mistune keeps raw HTML by default


def test_no_attacker_address_is_left_to_load() -> None:
    """The attacker's addresses survive only as link targets and as shown text, never as a source."""
    html = safe.markdown_html(ALL)
    parser = _Collect()
    parser.feed(html)
    for tag, attrs in parser.elements:
        for name, value in attrs.items():
            assert ATTACKER not in value or (tag, name) == ("a", "href")


def test_images_become_links_with_their_address_shown() -> None:
    html = safe.markdown_html("See ![the chart](https://example.org/c.png?d=SECRET).")
    assert (
        '<a href="https://example.org/c.png?d=SECRET" rel="noopener noreferrer nofollow">🖼 the chart</a> '
        "<code>https://example.org/c.png?d=SECRET</code>"
    ) in html
    source = safe.markdown_source("See ![the chart](https://example.org/c.png?d=SECRET).")
    assert (
        source
        == "See [🖼 the chart](https://example.org/c.png?d=SECRET) `https://example.org/c.png?d=SECRET`.\n"
    )


def test_a_long_image_address_is_shown_cut() -> None:
    address = "https://example.org/" + "x" * 500
    html = safe.markdown_html(f"![a]({address})")
    assert f'href="{address}"' in html
    assert f"<code>{address[:120]}…</code>" in html


def test_unsafe_links_keep_only_their_text() -> None:
    for link in (
        "javascript:alert(1)",
        "JAVASCRIPT:alert(1)",
        "data:text/html,x",
        "vbscript:x",
        "file:///etc/passwd",
    ):
        html = safe.markdown_html(f"[click]({link})")
        assert "<a" not in html and "click" in html, link
    assert '<a href="mailto:a@example.org"' in safe.markdown_html("[mail](mailto:a@example.org)")
    assert '<a href="../other.ipynb"' in safe.markdown_html("[next](../other.ipynb)")


def test_formatting_survives() -> None:
    answer = (
        "# Findings\n\nThree suppliers were **late**, one *badly*:\n\n"
        "- Acme: 3 days\n- Globex: `12` days\n\n"
        "| supplier | days |\n| --- | ---: |\n| Acme | 3 |\n\n"
        "```python\nprint('<b>')\n```\n\n~~draft~~ [report](https://example.org/r)"
    )
    html = safe.markdown_html(answer)
    for fragment in (
        "<h1>Findings</h1>",
        "<strong>late</strong>",
        "<em>badly</em>",
        "<li>Acme: 3 days</li>",
        "<code>12</code>",
        '<td style="text-align:right">3</td>',
        "<pre><code>print('&lt;b&gt;')",
        "<s>draft</s>",
        '<a href="https://example.org/r"',
    ):
        assert fragment in html, fragment
    source = safe.markdown_source(answer)
    assert MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(source).count("<li>") == 2
    assert "print('<b>')" in source  # code stays as written
    assert "| Acme     |    3 |" in source


def test_raw_html_shows_as_its_text() -> None:
    html = safe.markdown_html('Summary <img src=x onerror="alert(1)"> done')
    assert 'Summary &lt;img src=x onerror="alert(1)"&gt; done' in html
    source = safe.markdown_source("Summary <b>bold</b>")
    assert source == "Summary \\<b>bold\\</b>\n"


def test_long_answers_are_plain_text() -> None:
    value = "<b>x</b> " * (safe.MAX_MARKDOWN_CHARS // 9 + 1)
    assert safe.markdown_html(value).startswith("<pre>&lt;b&gt;x&lt;/b&gt;")
    source = safe.markdown_source(value)
    assert source.startswith("\\<b\\>x\\<\\/b\\>") and problems(mistune.html(source)) == []


def _run_with(payload: str, error: str | None) -> RunState:
    """A finished run whose every text field is the payload."""
    state = RunState()
    base = {"run_id": "r1"}
    for event in (
        RunStarted(**base, question=payload, context_meta={}, model=payload, sub_model=payload),
        RootReply(**base, turn=1, text=payload, model=payload),
        StepStarted(**base, step=1, code=payload),
        SubcallStarted(**base, call_id="c1", step=1, model=payload, prompt_preview=payload, prompt_chars=9),
        ToolCalled(**base, call_id="c1", step=1, tool=payload, arguments=payload, result_preview=payload),
        ToolCalled(**base, call_id="c1", step=1, tool=payload, arguments='{"a": 1}', error=payload),
        ToolCalled(**base, call_id=None, step=1, tool=payload, arguments=payload, error=payload),
        SubcallFinished(**base, call_id="c1", step=1, model=payload, response_preview=payload),
        SubcallStarted(**base, call_id="c2", step=1, model=payload, prompt_preview=payload, prompt_chars=9),
        SubcallFinished(**base, call_id="c2", step=1, model=payload, error=payload),
        SubcallStarted(
            **base, call_id="c3", step=1, model=payload, prompt_preview=payload * 9, prompt_chars=9
        ),
        StepFinished(**base, step=1, output=payload, error=payload),
        AnswerSet(**base, content=payload, source="answer"),
        RunEnded(**base, response=payload, error=error, iterations=1, elapsed_s=1.0),
    ):
        state.apply(event)
    return state


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_the_run_view_is_inert_with_the_payload_everywhere(name: str) -> None:
    payload = PAYLOADS[name]
    for error in (None, payload):
        state = _run_with(payload, error)
        views = (render_run(state), render_run(state, live=True), render_run(state, answer=False))
        for html in (*views, render_run(state, compact=True)):
            assert problems(html) == []
            assert payload not in html or not re.search(r"[<>\"&']", payload)
