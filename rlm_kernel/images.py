"""Images for sub-calls: whatever the code holds (a PIL image, a file's bytes, a path, a folder),
made one :class:`Image` of known type and size.

The type is sniffed from the bytes' magic and the size read from the header, so that describing a
folder of photographs reads a few bytes of each and needs no Pillow. Pillow is used only where it is
installed and needed: to encode a PIL image (as PNG) and to draw a small thumbnail for the record.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "Image",
    "MEDIA_TYPES",
    "THUMBNAIL_PX",
    "load_image",
    "load_images",
    "image_files",
    "sniff",
    "peek",
    "is_image_like",
    "describe_images",
]

MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp"}
THUMBNAIL_PX = 96  # the longest side of the thumbnail kept in a run's record
HEADER_BYTES = 64 << 10  # enough of a file to find a JPEG's size past its EXIF block, most of the time


@dataclass(frozen=True)
class Image:
    """One image as providers take it: its media type, bytes and size in pixels (0 where unknown)."""

    media_type: str
    data: bytes
    width: int
    height: int

    def data_url(self) -> str:
        """``data:<type>;base64,...`` (OpenAI's ``image_url``)."""
        return f"data:{self.media_type};base64,{self.b64()}"

    def b64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()[:16]

    def record(self) -> dict[str, Any]:
        """What a run's events keep of it: never its bytes, at most a thumbnail of ``THUMBNAIL_PX``."""
        out: dict[str, Any] = {
            "media_type": self.media_type,
            "width": self.width,
            "height": self.height,
            "bytes": len(self.data),
        }
        if (thumb := _thumbnail(self.data)) is not None:
            out["thumbnail"] = thumb
        return out


def sniff(data: bytes) -> str | None:
    """The media type of an image's bytes by their magic number; None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _size(data: bytes, media_type: str) -> tuple[int, int]:
    """Width and height from the header alone; (0, 0) where the header does not say (a cut file)."""
    try:
        if media_type == "image/png":
            return struct.unpack(">II", data[16:24])
        if media_type == "image/gif":
            return struct.unpack("<HH", data[6:10])
        if media_type == "image/webp":
            return _webp_size(data)
        return _jpeg_size(data)
    except struct.error:
        return 0, 0


def _webp_size(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    if chunk == b"VP8 ":
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return 0, 0


def _jpeg_size(data: bytes) -> tuple[int, int]:
    """The size in the first start-of-frame marker (SOF0 to SOF15, less DHT, JPG and DAC)."""
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return 0, 0
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        length = struct.unpack(">H", data[i + 2 : i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return w, h
        i += 2 + length
    return 0, 0


def peek(data: bytes) -> tuple[str, int, int] | None:
    """(media type, width, height) of an image's bytes, or of its first bytes; None if not an image."""
    media_type = sniff(data)
    if media_type is None:
        return None
    return (media_type, *_size(data, media_type))


def _is_pil(value: Any) -> bool:
    # Pillow is imported only where a PIL image can exist: when its module is loaded already.
    import sys

    pil = sys.modules.get("PIL.Image")
    return pil is not None and isinstance(value, pil.Image)


def image_files(folder: str | os.PathLike[str]) -> list[Path]:
    """A folder's image files (by suffix), sorted by name; not its subfolders'."""
    return sorted(p for p in Path(folder).iterdir() if p.suffix.lower() in SUFFIXES and p.is_file())


def load_image(value: Any) -> Image:
    """One image: a PIL image (encoded as PNG), bytes of a PNG/JPEG/GIF/WebP, or a file's path.
    Anything else is a TypeError, and bytes or a file of another kind a ValueError, raised in the
    code that passed it."""
    if isinstance(value, Image):
        return value
    if _is_pil(value):
        buffer = io.BytesIO()
        frame = value if value.mode in ("RGB", "RGBA", "L", "LA", "P", "1") else value.convert("RGBA")
        frame.save(buffer, format="PNG")
        return Image("image/png", buffer.getvalue(), value.width, value.height)
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        found = peek(data)
        if found is None:
            raise ValueError(
                f"these {len(data):,} bytes are not a PNG, JPEG, GIF or WebP image (by their first bytes)"
            )
        return Image(found[0], data, found[1], found[2])
    if isinstance(value, (str, os.PathLike)):
        path = Path(value)
        if path.is_dir():
            raise ValueError(f"{str(path)!r} is a folder: pass images=[...] or the folder as images=")
        data = path.read_bytes()
        found = peek(data)
        if found is None:
            raise ValueError(f"{str(path)!r} is not a PNG, JPEG, GIF or WebP image")
        return Image(found[0], data, found[1], found[2])
    raise TypeError(
        f"an image is a PIL image, bytes of a PNG/JPEG/GIF/WebP, or a path; not {type(value).__name__}"
    )


def load_images(images: Any) -> list[Image]:
    """A call's images: one image, a folder (its image files), or a list of any of them; [] for None."""
    if images is None:
        return []
    if isinstance(images, (str, os.PathLike)) and Path(images).is_dir():
        return [load_image(p) for p in image_files(images)]
    if isinstance(images, (str, os.PathLike, bytes, bytearray, memoryview, Image)) or _is_pil(images):
        return [load_image(images)]
    if not isinstance(images, Iterable):
        raise TypeError(f"images= takes an image or a list of images, not {type(images).__name__}")
    return [image for item in images for image in load_images(item)]


def _thumbnail(data: bytes) -> str | None:
    """A PNG data URL of at most ``THUMBNAIL_PX`` a side, where Pillow is installed; None otherwise."""
    try:
        from PIL import Image as PILImage
    except ImportError:
        return None
    try:
        with PILImage.open(io.BytesIO(data)) as opened:
            opened.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX))
            small = opened.convert("RGBA") if opened.mode not in ("RGB", "RGBA", "L") else opened
            buffer = io.BytesIO()
            small.save(buffer, format="PNG")
    except (OSError, ValueError):  # a file Pillow cannot read: the record goes without a thumbnail
        return None
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


# -- describing a context of images, for the root ------------------------------------------------
SIZES_SHOWN = 20


def _peek_any(value: Any) -> tuple[str, int, int, int] | None:
    """(media type, width, height, bytes) of an image-like value, reading only a file's header."""
    if isinstance(value, Image):
        return value.media_type, value.width, value.height, len(value.data)
    if _is_pil(value):  # a PIL image read from a file knows its format; one drawn in memory does not
        return f"image/{(value.format or 'pil').lower()}", value.width, value.height, 0
    if isinstance(value, (bytes, bytearray)):
        found = peek(bytes(value[:HEADER_BYTES]))
        return None if found is None else (*found, len(value))
    if isinstance(value, os.PathLike) and Path(value).is_file():
        with open(value, "rb") as f:
            found = peek(f.read(HEADER_BYTES))
        return None if found is None else (*found, Path(value).stat().st_size)
    return None


def is_image_like(value: Any) -> bool:
    """Whether the value is an image the REPL can pass to ``llm_query(images=)`` (not a str path:
    a string context is text)."""
    try:
        return _peek_any(value) is not None
    except OSError:
        return False


def describe_images(context: Any) -> dict[str, Any] | None:
    """The images of a context that is an image, a list of them, or a folder (a ``Path``) holding
    them: their count, formats, total bytes and first sizes; None for any other context. Only
    headers are read, and no bytes are kept."""
    items: Sequence[Any]
    if isinstance(context, os.PathLike) and Path(context).is_dir():
        items = image_files(context)
        if not items:
            return None
    elif is_image_like(context):
        items = [context]
    elif isinstance(context, (list, tuple)) and context and all(map(is_image_like, context[:SIZES_SHOWN])):
        items = context
    else:
        return None
    formats: dict[str, int] = {}
    sizes: list[str] = []
    total = 0
    for i, item in enumerate(items):
        found = _peek_any(item) if i < 1000 else None  # a huge list: the first thousand are counted
        if found is None:
            continue
        kind = found[0].split("/")[-1].upper()
        formats[kind] = formats.get(kind, 0) + 1
        total += found[3]
        if len(sizes) < SIZES_SHOWN:
            sizes.append(f"{found[1]}x{found[2]}")
    return {"count": len(items), "formats": formats, "sizes": sizes, "bytes": total}
