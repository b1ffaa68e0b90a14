"""How a context crosses from the host to a kernel, written once for both sides.

A kernel on this machine (:attr:`.session.Kernel.shares_files`) reads a file the host writes in its
folder, in memory where there is room (:func:`transfer_dir`, :func:`write_file`); a remote one gets
parts over its channel (:func:`blob`, :data:`PART_BYTES`). A ``str`` goes as UTF-8, or, on CPython,
as CPython lays it out (``str-raw``): encoding 200 MB to UTF-8 and decoding it again costs a second
copy in each process and most of the time, so the host's string is copied into the file as it is,
and from the file into a new string of the kernel's (:func:`new_str`). ``bytes`` go as they are, any
other object as a pickle. The kernel reads each back with :func:`read`.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import pickle
import sys
import uuid
from typing import Any

from ..errors import ConfigError
from ..foreign import attempt

__all__ = [
    "PART_BYTES",
    "WRITE_CHARS",
    "format_of",
    "transfer_dir",
    "write_file",
    "blob",
    "read",
    "str_layout",
]

PART_BYTES = 4 << 20  # a context crosses a remote kernel's channel in parts of this size
WRITE_CHARS = 8 << 20  # and is written for a local kernel this many characters at a time


# -- the host's side ----------------------------------------------------------------------------
def format_of(context: Any) -> str:
    if isinstance(context, str):
        return "str"
    if isinstance(context, (bytes, bytearray, memoryview)):
        return "bytes"
    return "pickle"


def transfer_dir(dirs: tuple[str, ...], context: Any) -> str:
    """Where a context passes to a kernel on this machine: memory when it has room, else disk."""
    need = 2 * len(context) if isinstance(context, (str, bytes, bytearray)) else 0
    for path in dirs[:-1]:
        with contextlib.suppress(OSError):
            stat = os.statvfs(path)
            if stat.f_bavail * stat.f_frsize > need + (64 << 20):
                return path
    return dirs[-1]


def write_file(folder: str, context: Any, uid: int | None) -> tuple[str, str, dict[str, Any]]:
    """Write ``context`` to a new file in ``folder``, readable by ``uid`` (a sandbox's own) where
    given: its path, format and what the kernel needs besides to read it back."""
    fmt = format_of(context)
    path = os.path.join(folder, f"rlm-{uuid.uuid4().hex}.ctx")
    layout = str_layout(context) if fmt == "str" else None
    extra: dict[str, Any] = {}
    with os.fdopen(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600), "wb", buffering=0) as f:
        if uid is not None:
            os.fchown(f.fileno(), uid, uid)
        if layout is not None:  # as CPython holds it: no copy, no encoding
            kind, address, size = layout
            view = memoryview((ctypes.c_char * size).from_address(address)).cast("B")
            for i in range(0, size, WRITE_CHARS):
                f.write(view[i : i + WRITE_CHARS])
            fmt, extra = "str-raw", {"length": len(context), "kind": kind}
        elif fmt == "str":
            for i in range(0, len(context), WRITE_CHARS):
                f.write(context[i : i + WRITE_CHARS].encode("utf-8", "surrogatepass"))
        elif fmt == "bytes":
            f.write(context)
        else:
            _pickle(context, f)
    return path, fmt, extra


def blob(context: Any) -> tuple[str, bytes]:
    """``context`` as one run of bytes, and its format: for a kernel that reads no file of the host's."""
    fmt = format_of(context)
    if fmt == "str":
        return fmt, context.encode("utf-8", "surrogatepass")
    if fmt == "bytes":
        return fmt, bytes(context)
    buffer = io.BytesIO()
    _pickle(context, buffer)
    return fmt, buffer.getvalue()


def _pickle(context: Any, f: Any) -> None:
    # Pickling runs the object's own code: any error means it cannot cross.
    _, exc = attempt(lambda: pickle.dump(context, f, protocol=pickle.HIGHEST_PROTOCOL))
    if exc is not None:
        raise ConfigError(
            f"The context ({type(context).__name__}) cannot be sent to a kernel: {exc}. "
            "Give a str, bytes or picklable object, or use executor='local'."
        )


# -- the kernel's side, and the layout both share ------------------------------------------------
# Encoding 200 MB to UTF-8 and decoding it again costs a second copy in each process and most of the
# time; CPython's own layout (one, two or four bytes a character) is copied as it is instead, from
# the host's string into a file and from the file into a new string of the kernel's.
_MAXCHAR = {1: 0xFF, 2: 0xFFFF, 4: 0x10FFFF}


def str_layout(text: str) -> tuple[int, int, int] | None:
    """(bytes per character, address, size in bytes) of a compact CPython string; None elsewhere."""
    if sys.implementation.name != "cpython" or type(text) is not str or not text:
        return None
    if text.isascii():
        kind, header = 0, sys.getsizeof("") - 1
    else:
        header = sys.getsizeof("\xff") - 2
        kind = (sys.getsizeof(text) - header) // (len(text) + 1)
        if kind not in (1, 2, 4) or header + (len(text) + 1) * kind != sys.getsizeof(text):
            return None
    size = len(text) * max(kind, 1)
    return kind, id(text) + header, size


def new_str(f: Any, length: int, kind: int) -> str:
    """A new string of ``length`` characters of ``kind`` (0: ASCII), filled from ``f``."""
    new = ctypes.pythonapi.PyUnicode_New
    new.restype, new.argtypes = ctypes.py_object, (ctypes.c_ssize_t, ctypes.c_uint32)
    text = new(length, _MAXCHAR.get(kind, 0x7F))
    layout = str_layout(text)
    if layout is None or layout[0] != kind:
        raise ValueError("this interpreter lays strings out differently from the host's")
    view = memoryview((ctypes.c_char * layout[2]).from_address(layout[1])).cast("B")
    done = 0
    while done < layout[2]:
        n = f.readinto(view[done : done + (8 << 20)])
        if not n:
            raise ValueError(f"the context file ended after {done:,} of {layout[2]:,} bytes")
        done += n
    return text


def read(f: Any, format: str, length: int = 0, kind: int = 0) -> Any:
    if format == "pickle":
        return pickle.load(f)  # noqa: S301 - the host pickled it, for this kernel
    if format == "str-raw":
        return new_str(f, length, kind)
    data = f.read()
    if format == "bytes":
        return data
    text = data.decode("utf-8", "surrogatepass")
    del data
    return text
