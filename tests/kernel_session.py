"""A real kernel driven through jupyter_client, playing the front end's part (widgets included)."""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Callable
from typing import Any

from jupyter_client.manager import start_new_kernel


def scripted_env(server: Any, log_dir: Any) -> dict[str, str]:
    """A kernel's environment for runs against the scripted server (tests/scripted_server.py)."""
    return {
        "OPENAI_BASE_URL": server.openai_base_url,
        "OPENAI_API_KEY": "sk-test",
        "RLM_MODEL": "gpt-4o-mini",
        "RLM_LOG_DIR": str(log_dir),
    }


class KernelSession:
    """Starts ``kernel_name`` with ``env``; runs cells; records every IOPub message with its arrival time."""

    def __init__(self, kernel_name: str = "python3", env: dict[str, str] | None = None) -> None:
        self.km, self.kc = start_new_kernel(kernel_name=kernel_name, env={**os.environ, **(env or {})})
        self.messages: list[tuple[float, dict]] = []

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def __enter__(self) -> KernelSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def execute(self, code: str, timeout: float = 60) -> dict:
        """Run a cell to completion; returns the execute reply's content."""
        reply = self.kc.execute_interactive(
            code, timeout=timeout, output_hook=lambda m: self.messages.append((time.monotonic(), m))
        )
        return reply["content"]

    def start(self, code: str) -> str:
        """Send a cell without waiting for it; returns its msg_id."""
        return self.kc.execute(code)

    def pump(self, until: Callable[[dict], bool] | None = None, timeout: float = 30) -> dict | None:
        """Read IOPub until ``until(msg)`` holds (returns that message) or the time is up."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = self.kc.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                continue
            self.messages.append((time.monotonic(), msg))
            if until is not None and until(msg):
                return msg
        return None

    def wait_idle(self, msg_id: str, timeout: float = 30) -> dict | None:
        return self.pump(
            lambda m: (
                m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"
                and m["parent_header"].get("msg_id") == msg_id
            ),
            timeout,
        )

    def of(self, msg_id: str, msg_type: str | None = None) -> list[dict]:
        return [
            m
            for _, m in self.messages
            if m["parent_header"].get("msg_id") == msg_id and (msg_type is None or m["msg_type"] == msg_type)
        ]

    def text(self, msg_id: str) -> str:
        return "".join(m["content"]["text"] for m in self.of(msg_id, "stream"))

    def widget(self, model_name: str, description: str | None = None) -> str | None:
        """The comm id of the most recent widget of that model (and button description)."""
        for _, m in reversed(self.messages):
            if m["msg_type"] != "comm_open":
                continue
            state = m["content"]["data"].get("state", {})
            if state.get("_model_name") == model_name and description in (None, state.get("description")):
                return m["content"]["comm_id"]
        return None

    def comm_send(self, comm_id: str, data: dict[str, Any]) -> None:
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.kc.shell_channel.send(msg)

    def click(self, comm_id: str) -> None:
        self.comm_send(comm_id, {"method": "custom", "content": {"event": "click"}})

    def set_value(self, comm_id: str, value: Any) -> None:
        self.comm_send(comm_id, {"method": "update", "state": {"value": value}, "buffer_paths": []})
