"""The notebook's kernel as the persona uses it: the names it holds, a cell run with its messages,
and an interrupt, through a jupyter_client async client (the server's own kernel manager gives it).

The persona's client is one more front end on the kernel: its cells are silent to the notebook
(their outputs go to no cell), and the kernel's one shell queue orders them with the notebook's.
"""

from __future__ import annotations

import ast
import queue
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

__all__ = ["NotebookKernel"]

# Loads the magics (and their input transformer) into a stock kernel; the RLM Python kernel has them.
_LOAD = "get_ipython().extension_manager.load_extension('rlm_kernel')"
_NAMES = "sorted(get_ipython().user_ns)"


class NotebookKernel:
    """One kernel, reached through ``client`` (channels started here); ``interrupt`` is the kernel
    manager's, which signals the kernel process; ``path`` is its notebook's, where known (the run's
    live cell goes there)."""

    def __init__(
        self, client: Any, interrupt: Callable[[], Awaitable[Any]], *, path: str | None = None
    ) -> None:
        self.client = client
        self.path = path
        self._interrupt = interrupt
        self._started = False

    async def ready(self, timeout: float = 30) -> None:
        """Channels open and the magics loaded."""
        if not self._started:
            self.client.start_channels()
            await self.client.wait_for_ready(timeout=timeout)
            self._started = True
        await self._quiet(_LOAD)

    async def names(self) -> list[str]:
        """The names in the kernel's namespace."""
        reply = await self._quiet("pass", user_expressions={"names": _NAMES})
        found = reply["content"].get("user_expressions", {}).get("names", {})
        if found.get("status") != "ok":
            return []
        return list(ast.literal_eval(found["data"]["text/plain"]))

    async def bind(self, code: str) -> None:
        """Run a short statement for the run to come (several variables bound as one dict)."""
        await self._quiet(code)

    async def run(self, code: str, poll: float = 0.05) -> AsyncIterator[dict[str, Any]]:
        """Run ``code`` as a cell; yield the IOPub messages it causes until the kernel is idle.
        Comm messages are yielded whatever their parent: a run's subscribers send from threads."""
        msg_id = self.client.execute(code, store_history=False, allow_stdin=False)
        while True:
            try:
                msg = await self.client.get_iopub_msg(timeout=poll)
            except queue.Empty:
                continue
            mine = msg.get("parent_header", {}).get("msg_id") == msg_id
            if mine or msg["msg_type"].startswith("comm_"):
                yield msg
            if mine and msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
                return

    async def interrupt(self) -> None:
        """Interrupt the kernel: a ``%%rlm`` run ends, cancelled, and the kernel goes on."""
        await self._interrupt()

    def close(self) -> None:
        if self._started:
            self.client.stop_channels()
            self._started = False

    async def _quiet(self, code: str, **kwargs: Any) -> dict[str, Any]:
        return await self.client.execute(
            code, silent=True, store_history=False, reply=True, timeout=30, **kwargs
        )
