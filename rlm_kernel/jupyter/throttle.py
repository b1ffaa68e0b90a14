"""At most one view update per interval, whatever the rate of events: for the ``%rlm`` widget and
for notebook mode's cell view and side panel.

``poke()`` may be called from any thread, as events are; the update runs on a timer thread,
never more often than ``1 / interval`` times a second, and once more after the last poke. While a
step's cell runs, the kernel's event loop is busy, so a timer thread is what keeps views moving.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["Throttle"]


class Throttle:
    def __init__(self, update: Callable[[], None], interval: float = 0.1) -> None:
        self.update = update
        self.interval = interval
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._last = 0.0
        self._closed = False

    def poke(self) -> None:
        """Something changed: update within ``interval``, unless an update is already due."""
        with self._lock:
            if self._timer is not None or self._closed:
                return
            wait = max(0.0, self.interval - (time.monotonic() - self._last))
            self._timer = threading.Timer(wait, self._fire)
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            self._timer = None
            if self._closed:
                return
            self._last = time.monotonic()
        self.update()

    def close(self) -> None:
        """No more updates: a timer already started does nothing when it fires."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
