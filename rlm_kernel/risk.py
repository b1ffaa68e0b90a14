"""Which steps a human should see before they run: the ``confirm-risky`` rung of the permission ladder.

The ladder, from most to least autonomous: ``auto`` runs every step, ``confirm-risky`` waits only
for the steps :func:`risk_of` flags, ``step`` waits for every step. The scan reads the code's
syntax tree, so it sees what the code names, not what it computes: it flags a step that imports a
module able to reach the system or the network, writes or removes files, runs code from a string,
or reaches for the interpreter's own machinery. Code it cannot parse is flagged too (it fails
closed). It is a tripwire for a reader, not a sandbox: run untrusted documents in the ``kernel``
or ``gateway`` executor.
"""

from __future__ import annotations

import ast
import typing
from collections.abc import Callable
from typing import Any

from .messages import Mode

__all__ = ["LADDER", "risk_of", "capped"]

LADDER: tuple[str, ...] = typing.get_args(Mode)  # most autonomous first

# Top-level modules whose import alone makes a step worth a look.
RISKY_MODULES = frozenset(
    {
        "os", "subprocess", "shutil", "socket", "pathlib", "tempfile", "glob", "signal", "ctypes",
        "multiprocessing", "threading", "importlib", "builtins", "sys", "pty", "fcntl",
        "resource", "mmap", "pickle", "marshal", "shelve", "sqlite3", "webbrowser", "code",
        "urllib", "http", "ftplib", "smtplib", "poplib", "imaplib", "telnetlib", "socketserver",
        "ssl", "asyncio", "requests", "httpx", "aiohttp", "urllib3", "paramiko",
    }
)  # fmt: skip
RISKY_CALLS = frozenset({"exec", "eval", "compile", "__import__", "breakpoint", "input", "globals", "vars"})
# Methods that change files, whatever object they are called on (Path, os, shutil, a handle).
WRITING_METHODS = frozenset(
    {
        "write_text", "write_bytes", "unlink", "rmdir", "rmtree", "remove", "rename", "replace",
        "mkdir", "makedirs", "touch", "chmod", "chown", "symlink_to", "hardlink_to", "truncate",
    }
)  # fmt: skip


def risk_of(code: str) -> str | None:
    """Why a step should wait for a human, in a few words; None when the scan finds nothing."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as exc:  # fail closed
        return f"it could not be read ({type(exc).__name__})"
    for node in ast.walk(tree):
        reason = _reason(node)
        if reason is not None:
            return reason
    return None


def _reason(node: ast.AST) -> str | None:
    reason = _REASONS.get(type(node))
    return reason(node) if reason is not None else None


def _import(node: ast.Import) -> str | None:
    for alias in node.names:
        if alias.name.split(".")[0] in RISKY_MODULES:
            return f"it imports {alias.name}"
    return None


def _import_from(node: ast.ImportFrom) -> str | None:
    if node.level == 0 and (node.module or "").split(".")[0] in RISKY_MODULES:
        return f"it imports from {node.module}"
    return None


def _call(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name) and func.id in RISKY_CALLS:
        return f"it calls {func.id}()"
    if isinstance(func, ast.Name) and func.id == "open" and _writes(node):
        return "it opens a file for writing"
    if isinstance(func, ast.Attribute) and func.attr in WRITING_METHODS:
        return f"it calls .{func.attr}()"
    if isinstance(func, ast.Attribute) and func.attr == "open" and _writes(node):
        return "it opens a file for writing"
    return None


def _attribute(node: ast.Attribute) -> str | None:
    if node.attr.startswith("__") and node.attr.endswith("__"):
        if node.attr not in ("__name__", "__doc__", "__len__", "__class__"):
            return f"it reaches {node.attr}"
    return None


def _name(node: ast.Name) -> str | None:
    return f"it reaches {node.id}" if node.id in ("__builtins__", "__loader__", "__spec__") else None


_REASONS: dict[type[ast.AST], Callable[[Any], str | None]] = {
    ast.Import: _import,
    ast.ImportFrom: _import_from,
    ast.Call: _call,
    ast.Attribute: _attribute,
    ast.Name: _name,
}


def _writes(call: ast.Call) -> bool:
    """Whether an ``open(...)`` may write: a mode with w, a, x or +, or one the scan cannot read."""
    mode: ast.expr | None = call.args[1] if len(call.args) > 1 else None
    for keyword in call.keywords:
        if keyword.arg == "mode":
            mode = keyword.value
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return True  # computed: fail closed


def capped(mode: str, cap: str) -> str:
    """``mode``, or the ladder's rung ``cap`` where ``mode`` would be more autonomous."""
    return mode if LADDER.index(mode) >= LADDER.index(cap) else cap
