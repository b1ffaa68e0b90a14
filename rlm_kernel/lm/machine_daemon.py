"""The daemon side of :mod:`rlm_kernel.lm.machine_server`: serve one model to the leases of this user.

``python -m rlm_kernel.models serve`` runs :func:`serve` in the foreground; a client that finds no
server spawns it as a daemon with the socket it bound (``--listen-fd``). The theory of operation is in
:mod:`~rlm_kernel.lm.machine_server`'s docstring.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import selectors
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from rlm_kernel.errors import ConfigError, LocalServerError

__all__ = ["serve"]

from rlm_kernel.lm.machine_server import (
    _PROTOCOL,
    ServerKey,
    _bind,
    _connect,
    _locked,
    _log,
    _read_hello,
    private_dir,
)


class _LeaseLoop:
    """Accepts leases, counts them, and returns from :meth:`run` after ``idle_timeout`` with none."""

    def __init__(self, listener: socket.socket, hello: bytes, idle_timeout: float | None) -> None:
        self._listener = listener
        self._hello = hello
        self._idle_timeout = idle_timeout  # None: never
        self._selector = selectors.DefaultSelector()
        self._leases: set[socket.socket] = set()
        self._idle_since: float | None = time.monotonic()

    def run(self) -> None:
        self._listener.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ)
        try:
            while True:
                remaining = self._remaining()
                events = self._selector.select(None if remaining is None else max(remaining, 0.0))
                for key, _ in events:
                    if key.fileobj is self._listener:
                        self._accept()
                    else:
                        self._read(key.fileobj)  # type: ignore[arg-type]
                # Stop only after a last look found nobody waiting: a client queued on the socket
                # (the one that started this daemon, or one that came as the timer fired) is served.
                remaining = self._remaining()
                if not events and remaining is not None and remaining <= 0:
                    _log(f"no lease for {self._idle_timeout:g} s: stopping")
                    return
        finally:
            for conn in self._leases:
                conn.close()
            self._selector.close()

    def _remaining(self) -> float | None:
        """Seconds until the idle timer fires; None while a lease is held or with no timeout."""
        if self._idle_since is None or self._idle_timeout is None:
            return None
        return self._idle_since + self._idle_timeout - time.monotonic()

    def _accept(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        except OSError as exc:  # out of file descriptors: the pending ones wait, the others go on
            _log(f"cannot accept a lease: {exc}")
            return
        if not _same_user(conn):
            conn.close()
            return
        try:
            conn.setblocking(False)
            conn.send(self._hello)  # a few hundred bytes into an empty buffer: sent whole
        except OSError:  # it left already
            conn.close()
            return
        self._selector.register(conn, selectors.EVENT_READ)
        self._leases.add(conn)
        self._idle_since = None
        _log(f"lease opened ({len(self._leases)} held)")

    def _read(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if data:  # a client has nothing to say: whatever it sends is dropped
            return
        self._selector.unregister(conn)
        self._leases.discard(conn)
        conn.close()
        _log(f"lease closed ({len(self._leases)} held)")
        if not self._leases:
            self._idle_since = time.monotonic()


def _same_user(conn: socket.socket) -> bool:
    """The peer runs as this user (the folder's mode already says so; this says it again)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    import struct

    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()


def serve(
    key: ServerKey,
    *,
    idle_timeout: float | None = None,
    port: int | None = None,
    listen_fd: int | None = None,
    socket_path: str | os.PathLike | None = None,
) -> int:
    """Serve ``key``'s model until Ctrl-C, SIGTERM or ``idle_timeout`` seconds with no lease; return
    the exit status. ``listen_fd`` is the socket a client bound for a daemon it started; without it
    the socket is bound here (the foreground ``serve`` command), unless a server already has it.
    """
    from .llama_server import LlamaServer

    os.umask(0o077)
    if listen_fd is not None:
        if socket_path is None:
            raise ConfigError("--listen-fd needs --socket, the path the socket is bound at.")
        sock_path = Path(socket_path)
        listener = socket.socket(fileno=listen_fd)
        if listener.family != socket.AF_UNIX:
            raise ConfigError(f"--listen-fd {listen_fd} is not a UNIX socket.")
    else:
        sock_path, lock_path, log_path = key.paths(private_dir())
        with _locked(lock_path):
            other = _connect(sock_path)
            if other is not None:
                hello = _read_hello(other, 10.0, log_path)
                other.close()
                where = f" (pid {hello['pid']}, {hello['base_url']})" if hello else ""
                print(f"error: a server for this model and these settings is already running{where}.",
                      file=sys.stderr)  # fmt: skip
                return 1
            listener = _bind(sock_path)
    bound_inode = os.stat(sock_path).st_ino
    _stop_on_sigterm()
    api_key = secrets.token_urlsafe(32)
    server: LlamaServer | None = None
    try:
        try:
            server = LlamaServer(
                key.model_path,
                n_ctx=key.n_ctx,
                n_parallel=key.n_parallel,
                n_threads=key.n_threads,
                port=port,
                api_key=api_key,
            )
            server.start()
        except (ConfigError, LocalServerError) as exc:
            _log(f"error: {exc}")  # the last line of the log: the clients waiting show it
            return 1
        hello = {
            "protocol": _PROTOCOL,
            "base_url": server.base_url,
            "api_key": api_key,
            "model": server.model_name,
            "n_ctx": server.n_ctx,
            "n_parallel": server.n_parallel,
            "pid": os.getpid(),
        }
        idle = "never" if idle_timeout is None else f"{idle_timeout:g} s"
        _log(f"serving {server.model_name} at {server.base_url} on {sock_path} (idle timeout: {idle})")
        if listen_fd is None:
            print(server.base_url, flush=True)
            print("Ctrl-C to stop; rlm_kernel's local backend finds it on its own.", file=sys.stderr)
        _LeaseLoop(listener, json.dumps(hello).encode() + b"\n", idle_timeout).run()
        return 0
    except KeyboardInterrupt:
        _log("interrupted: stopping")
        return 0
    finally:
        # Take the socket away first, so that a client arriving now starts another server.
        with contextlib.suppress(OSError):
            if os.stat(sock_path).st_ino == bound_inode:
                sock_path.unlink()
        listener.close()
        if server is not None:
            server.stop()


def _stop_on_sigterm() -> None:
    """SIGTERM stops the server as Ctrl-C does: its socket is removed and the model freed."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    with contextlib.suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGTERM, handler)
