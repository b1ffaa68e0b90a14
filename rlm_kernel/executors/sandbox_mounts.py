"""What a sandbox sees of the host's files: the system read-only, and of the Python environment
only what imports need (never a home folder, nor a source checkout's other files)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["ETC", "SYSTEM", "python_paths", "system", "folders"]

ETC = (  # what Python and its libraries read in /etc; no secret, no host name
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "passwd",
    "group",
    "nsswitch.conf",
    "mime.types",
    "alternatives",
    "ssl",
    "fonts",
)
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def folders(paths: Sequence[str]) -> list[str]:
    """The folders above ``paths`` that the sandbox's root lacks, made passable by anyone (bubblewrap
    would make them for the mounts, readable by their owner only)."""
    made: list[str] = []
    for path in paths:
        for parent in reversed(Path(path).parents):
            folder = str(parent)
            if folder not in ("/", "/tmp", "/dev", "/dev/shm", "/proc") and folder not in made:  # noqa: S108
                made.append(folder)
    return [opt for folder in made for opt in ("--perms", "0755", "--dir", folder)]


def system() -> list[str]:
    """The system, read-only: /usr, the folders that are links into it, and a few files of /etc."""
    opts: list[str] = []
    for path in SYSTEM:
        if os.path.islink(path):
            opts += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            opts += ["--ro-bind", path, path]
    for name in ETC:
        path = os.path.join("/etc", name)
        if os.path.exists(path):
            opts += ["--ro-bind", path, path]
    return opts


_PATHS = (
    "import json, os, sys\n"
    "prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,"
    " os.path.dirname(os.path.realpath(sys.executable))}\n"
    "print(json.dumps([sorted(prefixes), [p for p in sys.path if p]]))\n"
)


@functools.cache
def python_paths(python: str) -> tuple[str, ...]:
    """The folders ``python`` imports from, as it sees them with no environment (the kernel's view):
    its prefixes, and the paths ``.pth`` files add. Of a source checkout installed in editable mode,
    only the package: not the rest of the checkout (a ``.env`` file, say)."""
    done = subprocess.run(
        [python, "-I", "-c", _PATHS],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    if done.returncode != 0:
        raise OSError(f"{python} could not list its paths: {done.stderr.strip()[-300:]}")
    prefixes, path = json.loads(done.stdout)
    prefixes = [os.path.realpath(p) for p in prefixes]
    found = list(prefixes)
    for entry in map(os.path.realpath, path):
        if not any(entry == p or entry.startswith(p + "/") for p in prefixes):
            found += _importable(entry)
    home = os.path.realpath(os.path.expanduser("~"))
    # Never a home folder or the root, whole: only what imports need.
    kept = [p for p in found if os.path.exists(p) and p != "/" and not (home + "/").startswith(p + "/")]
    return tuple(_outermost(kept))


def _importable(entry: str) -> list[str]:
    """What of a ``sys.path`` entry outside the environment the kernel needs: a site folder whole
    (one a ``.pth`` file adds, or a user's), and of any other folder (a source checkout installed
    in editable mode) its packages and modules only, never its other files (a ``.env``, say)."""
    if not os.path.isdir(entry):
        return [entry]  # a zip file, or nothing
    with os.scandir(entry) as entries:
        children = list(entries)
    site = os.path.basename(entry) in ("site-packages", "dist-packages") or any(
        c.name.endswith((".dist-info", ".egg-info")) for c in children
    )
    if site:
        return [entry]
    return [
        c.path
        for c in children
        if not c.name.startswith(".")
        and (
            (c.is_dir() and os.path.exists(os.path.join(c.path, "__init__.py")))
            or (c.is_file() and c.name.endswith((".py", ".so", ".pyd")))
        )
    ]


def _outermost(paths: Sequence[str]) -> list[str]:
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == k or path.startswith(k + "/") for k in kept):
            kept.append(path)
    return kept
