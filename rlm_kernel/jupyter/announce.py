"""A run of the magics told to the lab extension's runs panel as it goes, on a kernel without
notebook mode (the stock ``python3`` kernel with ``%load_ext rlm_kernel``).

The comm is notebook mode's (its target and its declared messages, ``messages.py``), opened by the
kernel this time, and says only ``run_started``, ``events`` and ``run_finished``: the run stays in
its cell. A front end with no such target closes the comm, and the run goes on as before.
"""

from __future__ import annotations

import threading
from typing import Any

from ..events import Event, RootToken, RunEnded, RunStarted
from ..messages import COMM_TARGET, EventsMsg, Message, RunFinished, RunStartedMsg
from .throttle import Throttle

__all__ = ["Announce"]


class Announce:
    """A subscriber: events come from any thread; they are sent at most five times a second."""

    def __init__(self, *, mode: str, cell_id: str | None) -> None:
        self.mode, self.cell_id = mode, cell_id
        self.comm: Any = None
        self.run_id: str | None = None
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._throttle = Throttle(self._flush, 0.2)

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted) and self.run_id is None and event.parent_id is None:
            self._open(event)
        if isinstance(event, RootToken) or self.run_id is None:
            return
        with self._lock:
            self._events.append(event.to_dict())
        self._throttle.poke()
        if isinstance(event, RunEnded) and event.run_id == self.run_id:
            self._flush()
            self._send(
                RunFinished(
                    run_id=self.run_id,
                    answer=event.response,
                    error=event.error,
                    stop=event.stop,
                )
            )

    def _open(self, event: RunStarted) -> None:
        from comm import create_comm

        self.run_id = event.run_id
        started = RunStartedMsg(
            run_id=event.run_id,
            cell_id=self.cell_id,
            mode=self.mode,  # type: ignore[arg-type]
            question=event.question,
            model=event.model,
        )
        self.comm = create_comm(target_name=COMM_TARGET, data=started.to_dict())

    def _send(self, message: Message) -> None:
        if self.comm is not None:
            self.comm.send(message.to_dict())

    def _flush(self) -> None:
        with self._lock:
            events, self._events = self._events, []
            if events and self.run_id is not None:
                self._send(EventsMsg(run_id=self.run_id, events=events))

    def close(self) -> None:
        self._throttle.close()
        self._flush()
        if self.comm is not None:
            self.comm.close()
            self.comm = None
