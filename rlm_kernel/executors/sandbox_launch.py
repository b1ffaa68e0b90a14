"""One kernel of a server's ``rlm-sandbox`` kernelspec: its folder, its sandbox, and the sockets
this process holds for the server to connect to."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import seccomp
from .leftovers import private_folder, remove, sweep
from .sandbox_command import CONNECTION_FILE, command, environment, identity
from .sandbox_limits import ENDED, Limits
from .sandbox_sockets import first_pid, hold_sockets, inside, link_sockets

__all__ = ["Launch", "START_S"]

START_S = 120.0


class Launch:
    """One sandboxed kernel of a server: its folder, its sandbox, the sockets it holds."""

    def __init__(self, info: Mapping[str, Any], limits: Limits) -> None:
        self.info, self.limits = info, limits
        self.uid = identity()
        sweep(tempfile.gettempdir())
        self.folder = private_folder()
        copy = os.path.join(self.folder, "kernel.json")  # for the sandbox's uid to read
        Path(copy).write_text(json.dumps(inside(info)))
        if self.uid is not None:
            os.chown(copy, self.uid, self.uid)
        self.alive, self.held = os.pipe()  # this process holds the writing end until it ends
        self.info_r, info_w = os.pipe()
        self.filter = seccomp.open_program()
        argv = command(
            [sys.executable, "-m", "ipykernel_launcher", "-f", CONNECTION_FILE],
            connection_file=copy,
            uid=self.uid,
            alive=self.alive,
            info=info_w,
            seccomp=self.filter,
            env=environment(sys.executable),
            limits=limits,
        )
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(self.alive, info_w, self.filter),
        )
        for fd in (self.alive, info_w, self.filter):
            os.close(fd)
        self.sockets: dict[str, int] = {}
        self.links: list[str] = []
        self.errors = _Tail(self.process.stderr)

    def run(self, ip: str) -> int:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts reach the kernel as messages
        signal.signal(signal.SIGTERM, lambda signum, frame: self.process.kill())
        try:
            pid = first_pid(self.info_r, START_S)
            self.sockets = hold_sockets(pid, self.info, START_S, lambda: self.process.poll() is None)
            self.links = link_sockets(self.sockets, self.info, ip)
        except OSError as exc:
            self.process.kill()
            self.process.wait()
            print(f"rlm-sandbox: the kernel did not start: {exc}{self.errors.last()}", file=sys.stderr)
            return 1
        status = self.process.wait()
        if status in ENDED:
            print(f"rlm-sandbox: {ENDED[status]}", file=sys.stderr)
        elif status != 0:
            print(f"rlm-sandbox: the kernel ended with status {status}{self.errors.last()}", file=sys.stderr)
        return status

    def __enter__(self) -> Launch:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for fd in (self.held, self.info_r, *self.sockets.values()):
            os.close(fd)
        for link in self.links:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(link)
        remove(self.folder)


class _Tail:
    """The last few kilobytes a stream wrote, read on a thread of its own; never more."""

    def __init__(self, stream: Any, keep: int = 4096) -> None:
        self._data = b""
        self._keep = keep
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := stream.read1(65536):
                self._data = (self._data + chunk)[-self._keep :]

    def last(self) -> str:
        """Its last line, as printable text, after ``: ``; empty when there is none."""
        self._thread.join(timeout=1.0)
        lines = self._data.decode("utf-8", "replace").splitlines()
        line = "".join(c for c in (lines[-1] if lines else "") if c.isprintable())[:300]
        return f": {line}" if line else ""
