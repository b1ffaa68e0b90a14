"""A prompt's content blocks as a question and a context, as ``%%rlm`` takes them.

Text blocks are the question. The files and texts the client attaches (embedded resources, and
links to files, read through the client where it offers to) are the context: one is its text,
several are a dict of them by file name, as ``%%rlm`` makes a dict of several variables. A prompt
with nothing attached is a question about the context the session already has; the session's
first prompt with nothing attached is itself the context (the reference API's ``completion(prompt)``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

from acp import RequestError
from acp.schema import (
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ResourceContentBlock,
    TextContentBlock,
)

__all__ = ["Prompt", "read_prompt", "file_path"]

# Reads a file through the client (fs/read_text_file); None where the client does not offer it.
ReadFile = Callable[[str], Awaitable[str]] | None


@dataclass(frozen=True)
class Prompt:
    question: str | None
    context: Any  # None: nothing attached
    attached: tuple[str, ...] = ()  # the names the context's parts have
    skipped: tuple[str, ...] = ()  # blocks not taken (images, audio, unreadable links), said once


def file_path(uri: str) -> str | None:
    """The local path a ``file://`` URI names; None for any other scheme."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


def _name(uri: str) -> str:
    path = file_path(uri) or urlparse(uri).path or uri
    return PurePosixPath(path).name or uri


async def read_prompt(blocks: Sequence[Any], read_file: ReadFile = None) -> Prompt:
    """The question and the context in ``blocks``; a link to a file is read with ``read_file``
    (the client's copy, with the user's unsaved edits) where given, else from disk."""
    words: list[str] = []
    parts: list[tuple[str, Any]] = []
    skipped: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            words.append(block.text)
        elif isinstance(block, EmbeddedResourceContentBlock):
            _embedded(block.resource, parts, skipped)
        elif isinstance(block, ResourceContentBlock):
            await _linked(block, read_file, parts, skipped)
        else:
            skipped.append(f"a {getattr(block, 'type', 'content')} block")
    question = "\n".join(w for w in words if w.strip()) or None
    if not parts:
        return Prompt(question, None, skipped=tuple(skipped))
    if len(parts) == 1:
        return Prompt(question, parts[0][1], (parts[0][0],), tuple(skipped))
    context: dict[str, Any] = {}
    for name, value in parts:
        key, n = name, 2
        while key in context:  # two files of one name in different folders
            key, n = f"{name} ({n})", n + 1
        context[key] = value
    return Prompt(question, context, tuple(context), tuple(skipped))


def _embedded(resource: Any, parts: list[tuple[str, Any]], skipped: list[str]) -> None:
    """A file the client sent whole: text, or bytes in base64."""
    if not isinstance(resource, BlobResourceContents):
        parts.append((_name(resource.uri), resource.text))
        return
    try:
        parts.append((_name(resource.uri), base64.b64decode(resource.blob, validate=True)))
    except (binascii.Error, ValueError):
        skipped.append(f"{_name(resource.uri)} (not base64)")


async def _linked(
    block: ResourceContentBlock, read_file: ReadFile, parts: list[tuple[str, Any]], skipped: list[str]
) -> None:
    """A link to a file: read through the client where it can, else from disk; only file:// links."""
    path = file_path(block.uri)
    if path is None:
        skipped.append(f"{block.uri} (only file:// links are read)")
        return
    try:
        text = await read_file(path) if read_file is not None else Path(path).read_text()
    except (OSError, UnicodeDecodeError, RequestError) as exc:
        skipped.append(f"{block.name} ({type(exc).__name__})")
        return
    parts.append((block.name or _name(block.uri), text))
