"""LM text made safe for a browser: the one rule every view of a run applies.

Whatever an LM or the context controls is untrusted where it reaches a browser: answers, step code
and output, sub-call prompts and replies, questions, errors, and runs restored from a saved
notebook. A document can carry a prompt injection, and the user's JupyterLab runs any script it is
given, so an answer must never become live HTML, and must not even load a remote image: an image
address that an LM wrote is the classic way to send data from the context to another host.

- :func:`text`: plain text as HTML (element content or attribute value): escaped, nothing more.
- :func:`markdown_html`: an answer rendered from Markdown with raw HTML off (it shows as text),
  then cleaned by nh3 with a short allowlist (no script, no event handler, no style, no ``url()``).
- :func:`markdown_source`: the same answer as Markdown source, for a notebook's Markdown cell;
  escaped so that no renderer can find raw HTML or an image in it.

In both Markdown forms no image is ever loaded: each becomes a link the user may click, with its
address shown as text. Links keep only ``http``, ``https`` and ``mailto`` (and relative
addresses); others (``javascript:``, ``data:``, …) are left as their text.

The front end's equivalent is ``labextension/src/safe.ts``; both are tested against one corpus of
payloads (``tests/data/payloads.json``).
"""

from __future__ import annotations

import html
import re
from typing import ClassVar

import mdformat
import mdformat.plugins
import nh3
from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from ..foreign import attempt

__all__ = ["text", "markdown_html", "markdown_source", "allowed_link", "MAX_MARKDOWN_CHARS"]

# Longer answers are shown as plain text: Markdown rendering would stall the view for seconds.
MAX_MARKDOWN_CHARS = 100_000
_SHOWN_ADDRESS = 120  # characters of an image's address shown beside its link

_LINK = re.compile(r"^\s*(?:(?:https?|mailto):|[^:/?#]*(?:[/?#]|$))", re.IGNORECASE)
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")

_TAGS = {
    "p", "br", "hr", "a", "em", "strong", "del", "s", "code", "pre", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td", "sub", "sup",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}


def text(value: str) -> str:
    """Plain text as HTML, for element content or a quoted attribute value."""
    return html.escape(value, quote=True)


def allowed_link(url: str) -> bool:
    """Whether a link may keep its address: http, https, mailto, or relative (no scheme at all)."""
    return bool(_LINK.match(url))


def _neutralize(state: StateCore) -> None:
    """A markdown-it core rule: images become links with their address as text; links to other
    schemes become their text (whichever rule or plugin made them)."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        out: list[Token] = []
        dropped = 0
        for token in block.children:
            if token.type == "link_open" and not allowed_link(str(token.attrGet("href") or "")):
                dropped += 1
            elif token.type == "link_close" and dropped:
                dropped -= 1
            elif token.type == "image":
                out.extend(_image_as_link(token))
            else:
                out.append(token)
        block.children = out


def _image_as_link(image: Token) -> list[Token]:
    src = str(image.attrGet("src") or "")
    shown = src if len(src) <= _SHOWN_ADDRESS else src[:_SHOWN_ADDRESS] + "…"
    label = Token("text", "", 0, content=f"🖼 {image.content or 'image'}")
    address = Token("code_inline", "code", 0, content=shown, markup="`")
    if not allowed_link(src):
        return [label, Token("text", "", 0, content=" "), address]
    return [
        Token("link_open", "a", 1, attrs={"href": src}),
        label,
        Token("link_close", "a", -1),
        Token("text", "", 0, content=" "),
        address,
    ]


class _SafePlugin:
    """The rule as an mdformat parser extension, so the Markdown source follows it too."""

    RENDERERS: ClassVar[dict] = {}
    POSTPROCESSORS: ClassVar[dict] = {}

    @staticmethod
    def update_mdit(md: MarkdownIt) -> None:
        md.disable(["html_block", "html_inline"], ignoreInvalid=True)
        md.validateLink = allowed_link  # type: ignore[method-assign]
        md.core.ruler.push("rlm_kernel_safe", _neutralize)


_PLUGIN = "rlm_kernel_safe"


def _registered() -> str:
    """The plugin's name in mdformat's registry (the only way ``mdformat.text`` takes a plugin),
    put there when an answer is first formatted, not when this module is imported."""
    mdformat.plugins.PARSER_EXTENSIONS.setdefault(_PLUGIN, _SafePlugin)  # type: ignore[arg-type]
    return _PLUGIN


_RENDER = MarkdownIt("commonmark").enable(["table", "strikethrough"])
_SafePlugin.update_mdit(_RENDER)
_CHECK = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def markdown_html(value: str) -> str:
    """An answer's Markdown as HTML that cannot run script or load anything by itself."""
    if len(value) > MAX_MARKDOWN_CHARS:
        return f"<pre>{text(value)}</pre>"
    return nh3.clean(
        _RENDER.render(value),
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        filter_style_properties={"text-align"},
        link_rel="noopener noreferrer nofollow",
    )


def markdown_source(value: str) -> str:
    """An answer as Markdown source for a notebook cell: its formatting kept, raw HTML escaped as
    text, images as links, links to other schemes as text. Where the answer is too long, or the
    result fails the check that it holds no HTML, image or unsafe link, every punctuation mark is
    escaped instead, so it renders as exactly its text."""
    if len(value) <= MAX_MARKDOWN_CHARS:
        # The formatter and its plugins run on LM text: whatever fails, the escaped form below is safe.
        source, _ = attempt(
            lambda: mdformat.text(value, extensions=["gfm", _registered()], options={"wrap": "keep"})
        )
        if source is not None and _inert(source):
            return source
    return _PUNCTUATION.sub(r"\\\1", value)


def _inert(source: str) -> bool:
    """Whether Markdown, parsed with raw HTML on, holds no HTML, no image and no unsafe link."""
    stack = list(_CHECK.parse(source))
    while stack:
        token = stack.pop()
        if token.type in ("html_block", "html_inline", "image"):
            return False
        if token.type == "link_open" and not allowed_link(str(token.attrGet("href") or "")):
            return False
        stack.extend(token.children or ())
    return True
