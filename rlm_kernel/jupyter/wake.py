"""While a magic's run is awaited, a signal wakes the kernel's event loop at once.

ipykernel turns an interrupt of an async cell into a callback on that loop without waking it, so an
idle loop would hear it late; the signal's byte on a socket the loop reads
(``signal.set_wakeup_fd``) wakes it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket

__all__ = ["SignalWake"]


class SignalWake:
    """Wakes the running loop on a signal until ``cancel()``; a no-op off the main thread, or where
    the loop already wakes on signals."""

    def __init__(self) -> None:
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(False)
        self._writer.setblocking(False)
        self._old: int | None = None
        try:
            old = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        except ValueError:  # not the main thread, where signals arrive: nothing to wake here
            return
        if old != -1:  # the loop already wakes on signals (asyncio's own handlers): leave it so
            signal.set_wakeup_fd(old)
            return
        self._old = old
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._reader.fileno(), self._drain)

    def _drain(self) -> None:
        with contextlib.suppress(OSError):
            while self._reader.recv(4096):
                pass

    def cancel(self) -> None:
        if self._old is not None:
            self._loop.remove_reader(self._reader.fileno())
            signal.set_wakeup_fd(self._old)
            self._old = None
        self._reader.close()
        self._writer.close()
