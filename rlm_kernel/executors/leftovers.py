"""The host's folders for its kernels: private to this user, named for the host's process, and
swept once that process is gone, however deep or hostile what a kernel left in them."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Iterator

from .sandbox_command import OWN_UIDS

__all__ = ["PREFIX", "private_folder", "remove", "sweep"]

PREFIX = "rlm-kernel-"  # the folders a host makes: rlm-kernel-<host pid>-<random>


def private_folder(parent: str | None = None) -> str:
    """A new folder only this user can enter, named for this process so that a later host can tell
    it was left behind (:func:`sweep`)."""
    return tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ours(st: os.stat_result) -> bool:
    """Whether a folder is this user's: its own, or, as root, a sandbox's uid it gave it to."""
    first, count = OWN_UIDS
    return st.st_uid == os.geteuid() or (os.geteuid() == 0 and first <= st.st_uid < first + count)


def _left_behind(parent: str) -> Iterator[str]:
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for entry in entries:
            pid = entry.name[len(PREFIX) :].split("-", 1)[0]
            with contextlib.suppress(OSError):
                if (
                    entry.name.startswith(PREFIX)
                    and pid.isdigit()
                    and entry.is_dir(follow_symlinks=False)
                    and _ours(entry.stat(follow_symlinks=False))
                    and not _alive(int(pid))
                ):
                    yield entry.path


def remove(path: str) -> None:
    """Remove a folder and all it holds, however deep, never following a link out of it and never
    raising: a tree is flattened into its top folder (a rename), one level at a time, so neither the
    stack nor a path grows with its depth."""
    try:
        top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)
        return
    try:
        for _ in range(1 << 24):  # each round removes or lifts at least one entry
            with os.scandir(top) as entries:
                names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
            if not names:
                break
            for name, is_dir in names:
                if is_dir:
                    _lift(top, name)
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=top)
    except OSError:
        pass
    finally:
        os.close(top)
    with contextlib.suppress(OSError):
        os.rmdir(path)


def _lift(top: int, name: str) -> None:
    """Empty the folder ``name`` of ``top`` into ``top`` (its folders moved up, the rest removed),
    then remove it."""
    try:
        sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=top)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=top)
        return
    try:
        with os.scandir(sub) as entries:
            children = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
        for child, is_dir in children:
            with contextlib.suppress(OSError):
                if is_dir:
                    os.rename(child, secrets.token_hex(8), src_dir_fd=sub, dst_dir_fd=top)
                else:
                    os.unlink(child, dir_fd=sub)
    finally:
        os.close(sub)
    with contextlib.suppress(OSError):
        os.rmdir(name, dir_fd=top)


def sweep(*parents: str) -> None:
    """Remove the folders of hosts that ended without removing theirs (killed outright)."""
    for parent in parents:
        for path in _left_behind(parent):
            remove(path)
