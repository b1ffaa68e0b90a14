"""A sandboxed kernel's channels: IPC sockets it binds in a folder of its own, which the host takes
by descriptor as they appear, through the sandbox's first process, before any code runs there."""

from __future__ import annotations

import contextlib
import json
import os
import select
import stat
import time
from collections.abc import Callable, Mapping
from typing import Any

from .sandbox_command import SOCKETS

__all__ = ["PORTS", "inside", "first_pid", "hold_sockets", "link_sockets"]

PORTS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")


def inside(connection: Mapping[str, Any]) -> dict[str, Any]:
    """A kernel's connection info as its sandbox sees it: its sockets in the sandbox's own folder."""
    return {**connection, "transport": "ipc", "ip": f"{SOCKETS}/k"}


def first_pid(info: int, timeout: float) -> int:
    """The pid of a sandbox's first process, read from the pipe bubblewrap's ``--info-fd`` wrote."""
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(b"}") and (left := deadline - time.monotonic()) > 0:
        if not select.select([info], [], [], left)[0]:
            break
        chunk = os.read(info, 4096)
        if not chunk:
            break
        data += chunk.strip()
    try:
        return int(json.loads(data)["child-pid"])
    except (ValueError, KeyError, TypeError) as exc:
        raise OSError(f"bubblewrap said no pid ({data[:200]!r})") from exc


def hold_sockets(
    pid: int, connection: Mapping[str, Any], timeout: float, running: Callable[[], bool]
) -> dict[str, int]:
    """The sockets of the sandbox whose first process is ``pid``, each held by an ``O_PATH``
    descriptor once it is there, by port name. They are taken as the kernel binds them, before
    any code runs in it, so the host never connects through a name the kernel made afterwards."""
    folder = f"/proc/{pid}/root{SOCKETS}"
    names = {port: f"k-{connection[port]}" for port in PORTS}
    held: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    with contextlib.ExitStack() as undo:  # until every socket is held, whatever ends this closes them
        undo.callback(_close_all, held)
        while len(held) < len(names):
            _take(folder, names, held)
            if len(held) < len(names):
                if time.monotonic() > deadline or not running():
                    raise OSError("the kernel did not open its sockets")
                time.sleep(0.005)
        undo.pop_all()
    return held


def _take(folder: str, names: Mapping[str, str], held: dict[str, int]) -> None:
    """Hold each socket of ``names`` that is there now and not yet held; one that is not a socket
    (a file the kernel put in its place) is an OSError."""
    for port, name in names.items():
        if port in held:
            continue
        try:
            fd = os.open(os.path.join(folder, name), os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        held[port] = fd
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            raise OSError(f"the kernel's {name} is not a socket")


def _close_all(held: Mapping[str, int]) -> None:
    for fd in held.values():
        os.close(fd)


def link_sockets(held: Mapping[str, int], connection: Mapping[str, Any], ip: str) -> list[str]:
    """Links ``<ip>-<port>`` (the names a Jupyter client connects to) to the sockets this process
    holds: whatever the kernel later does to its folder, a connection reaches the socket it bound."""
    links = []
    for port, fd in held.items():
        link = f"{ip}-{connection[port]}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(link)
        os.symlink(f"/proc/{os.getpid()}/fd/{fd}", link)
        links.append(link)
    return links
