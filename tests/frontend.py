"""The JupyterLab extension's side of the comm protocol (docs/protocol.md), played over jupyter_client."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable
from typing import Any

from kernel_session import KernelSession

from rlm_kernel.messages import PROTOCOL_VERSION, CellInserted, Message

_cells = itertools.count(1)


class FrontEnd:
    """Opens the ``rlm_kernel`` comm and answers proposals like the extension would.

    ``on_propose(data) -> code | None``: in auto mode the proposal's code is run as is; a test
    may return other code (a human edit) or None (leave the cell waiting).
    """

    def __init__(
        self,
        kernel: KernelSession,
        on_propose: Callable[[dict], str | None] | None = None,
        version: int = PROTOCOL_VERSION,
    ) -> None:
        self.kernel = kernel
        self.comm_id = uuid.uuid4().hex
        self.on_propose = on_propose or (lambda data: data["code"])
        self.cells: dict[int, str] = {}  # step -> cell id
        self.waiting: dict[str, Any] | None = None
        self._cursor = 0
        kernel.kc.shell_channel.send(
            kernel.kc.session.msg(
                "comm_open",
                {
                    "comm_id": self.comm_id,
                    "target_name": "rlm_kernel",
                    "data": {"frontend": "tests", "version": version},
                },
            )
        )
        assert self.next("welcome")["version"] == PROTOCOL_VERSION

    def received(self, kind: str | None = None) -> list[dict]:
        return [
            m["content"]["data"]
            for _, m in self.kernel.messages
            if m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == self.comm_id
            and (kind is None or m["content"]["data"]["type"] == kind)
        ]

    def next(self, *kinds: str, timeout: float = 20) -> dict:
        """The next message of one of ``kinds`` after the last one returned (waiting for it if need be)."""
        deadline = time.monotonic() + timeout
        while True:
            received = self.received()
            for i in range(self._cursor, len(received)):
                if received[i]["type"] in kinds:
                    self._cursor = i + 1
                    return received[i]
            left = deadline - time.monotonic()
            assert left > 0, f"no {kinds} within {timeout} s; got {[d['type'] for d in received]}"
            self.kernel.pump(lambda m: m["msg_type"] == "comm_msg", min(left, 0.5))

    def send(self, message: Message) -> None:
        self.kernel.comm_send(self.comm_id, message.to_dict())

    def run_cell(
        self, code: str, cell_id: str | None = None, timeout: float = 30, rlm: dict | None = None
    ) -> str:
        """Run a cell as JupyterLab does: the request's metadata holds the cell's id and its own
        metadata (``rlm``, for a cell of the extension's)."""
        cell_id = cell_id or f"cell-{next(_cells)}"
        msg = self.kernel.kc.session.msg(
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
            metadata={"cellId": cell_id, **({"rlm": rlm} if rlm is not None else {})},
        )
        self.kernel.kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        assert self.kernel.wait_idle(msg_id, timeout) is not None
        return msg_id

    def accept(self, proposal: dict) -> str | None:
        """Insert the proposed cell; run it unless the test holds it back. Returns the cell's msg id."""
        cell_id = f"step-{proposal['run_id']}-{proposal['step']}"
        self.cells[proposal["step"]] = cell_id
        self.send(CellInserted(run_id=proposal["run_id"], step=proposal["step"], cell_id=cell_id))
        code = self.on_propose(proposal)
        if code is None:
            self.waiting = proposal
            return None
        meta = {
            "run_id": proposal["run_id"],
            "step": proposal["step"],
            "author": "root",
            "proposed": proposal["code"],
        }
        return self.run_cell(code, cell_id, rlm=meta)

    def drive(self, timeout: float = 30) -> dict:
        """Play auto mode until the run finishes; returns run_finished."""
        while True:
            data = self.next("propose_step", "run_finished", timeout=timeout)
            if data["type"] == "run_finished":
                return data
            if self.accept(data) is None:
                return data
