"""The ``gateway`` executor: the kernel executor over a remote Jupyter server's kernels API.

Jupyter Kernel Gateway, Enterprise Gateway (one kernel per pod on Kubernetes) or any Jupyter
server: a kernel is made with ``POST /api/kernels`` and spoken to over its websocket, with the
token in the ``Authorization`` header of both. This talks to the API with tornado's client rather
than jupyter_server's ``GatewayClient``, whose websocket carries no auth header and whose message
loop polls. The context crosses the websocket in parts, once; sub-calls come back as requests on
the kernel's stdin channel, as with a local kernel, and are checked the same way.

The kernel must be in a sandbox of its own, which it checks before any step runs: by default the
executor asks for the ``rlm-sandbox`` kernelspec (``python -m rlm_kernel.install --sandbox`` on the
gateway's machine, and the gateway started with ``--KernelManager.transport=ipc``). A server whose
kernels are isolated otherwise (a pod each) is used with ``isolation="none"``.

A kernel's process that ends (its sandbox ends it over its memory or CPU limit) is started again by
the server, behind the same kernel id and websocket: the server says so on iopub (a ``status`` of
``restarting``, or ``dead`` when it gave up), and the websocket closes when the server goes. Any of
these ends the kernel here at once (:meth:`GatewayKernel.exited`): the new process holds none of
the run's names and is not serving the step, which would otherwise wait for its timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from .bridge import MAX_MESSAGE
from .errors import KernelError
from .kernel import KernelExecutor
from .pool import START_S
from .session import Kernel
from .settings import ExecutorSettings

__all__ = ["GatewayExecutor", "GatewayKernel", "SANDBOX_KERNEL"]

SANDBOX_KERNEL = "rlm-sandbox"  # the kernelspec of python -m rlm_kernel.install --sandbox
# A busy gateway starting many kernels at once answers slowly; tornado's own connect timeout is 20 s.
TIMEOUT_S = START_S
# Why a gateway's kernel ended, by what the server said.
RESTARTED = (
    "its process ended, as its sandbox ends it over its memory or CPU limit, "
    "and the gateway started a new one"
)
DEAD = "its process ended, as its sandbox ends it over its memory or CPU limit, and the gateway gave up on it"
CLOSED = "the gateway closed the kernel's websocket: the kernel or the gateway went away"


class GatewayKernel:
    """One kernel of a remote server, over REST and a websocket."""

    shares_files = False
    transfer_dirs: tuple[str, ...] = ()
    uid = None

    def __init__(self, url: str, auth_token: str | None, kernel_name: str = "python3") -> None:
        self.url = url.rstrip("/")
        self.kernel_name = kernel_name
        self._headers = {"Authorization": f"token {auth_token}"} if auth_token else {}
        self._ws: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._ended: asyncio.Future[None] | None = None
        self._why: str | None = None
        self.kernel_id: str | None = None

    async def _http(self, method: str, path: str, body: Any = None) -> Any:
        from tornado.httpclient import AsyncHTTPClient, HTTPClientError

        try:
            response = await AsyncHTTPClient().fetch(
                self.url + path,
                method=method,
                headers={**self._headers, "Content-Type": "application/json"},
                body=None if body is None else json.dumps(body),
                allow_nonstandard_methods=True,
                connect_timeout=TIMEOUT_S,
                request_timeout=TIMEOUT_S,
            )
        except HTTPClientError as exc:
            raise KernelError(f"the gateway at {self.url} answered {method} {path} with {exc.code}") from None
        except OSError as exc:
            raise KernelError(f"the gateway at {self.url} cannot be reached: {exc}") from None
        return json.loads(response.body) if response.body else None

    async def start(self, on_message: Callable[[dict[str, Any]], None]) -> None:
        from jupyter_client.session import Session
        from tornado.httpclient import HTTPClientError, HTTPRequest
        from tornado.websocket import WebSocketError, websocket_connect

        self.session = Session(username="rlm_kernel")
        self._ended = asyncio.get_running_loop().create_future()
        kernel = await self._http("POST", "/api/kernels", {"name": self.kernel_name})
        self.kernel_id = kernel["id"]
        ws_url = "ws" + self.url[len("http") :] + f"/api/kernels/{self.kernel_id}/channels"
        async with contextlib.AsyncExitStack() as undo:  # a kernel whose websocket did not open is shut down
            undo.push_async_callback(self.shutdown)
            try:
                self._ws = await websocket_connect(
                    HTTPRequest(
                        ws_url, headers=self._headers, connect_timeout=TIMEOUT_S, request_timeout=TIMEOUT_S
                    ),
                    max_message_size=MAX_MESSAGE,
                )
            # refused, closed, timed out, TLS
            except (HTTPClientError, WebSocketError, OSError, asyncio.TimeoutError) as exc:
                raise KernelError(f"the gateway's kernel websocket did not open: {exc}") from None
            undo.pop_all()
        self._reader = asyncio.ensure_future(self._read(on_message))

    async def _read(self, on_message: Callable[[dict[str, Any]], None]) -> None:
        while True:
            text = await self._ws.read_message()
            if text is None:
                self._end(CLOSED)
                return
            try:
                msg = json.loads(text)
            except ValueError as exc:
                on_message({"channel": "websocket", "error": f"a message that is not JSON ({exc})"})
                continue
            if not isinstance(msg, dict):
                on_message({"channel": "websocket", "error": "a message that is not an object"})
                continue
            if (why := _ended_by(msg)) is not None:
                self._end(why)
                return  # what comes after is the new process's, which no command of the host is in
            on_message(msg)

    def _end(self, why: str) -> None:
        if self._ended is not None and not self._ended.done():
            self._why = why
            self._ended.set_result(None)

    async def exited(self) -> None:
        """Return when the kernel's process has ended: the server restarted it or gave up on it, or
        the websocket closed."""
        if self._ended is None:
            raise RuntimeError("GatewayKernel.exited() before start()")
        await asyncio.shield(self._ended)  # a watcher that is cancelled leaves the future to others

    def why_ended(self) -> str | None:
        """Why the kernel ended, once it has."""
        return self._why

    def _send(self, channel: str, msg_type: str, content: dict[str, Any]) -> str:
        from jupyter_client.jsonutil import json_default

        msg = self.session.msg(msg_type, content)
        msg["channel"] = channel
        self._ws.write_message(json.dumps(msg, default=json_default))
        return str(msg["header"]["msg_id"])

    def execute(self, code: str) -> str:
        content = {
            "code": code,
            "silent": False,
            "store_history": False,
            "user_expressions": {},
            "allow_stdin": True,
            "stop_on_error": False,
        }
        return self._send("shell", "execute_request", content)

    def input_reply(self, value: str) -> None:
        self._send("stdin", "input_reply", {"value": value})

    async def interrupt(self) -> None:
        await self._http("POST", f"/api/kernels/{self.kernel_id}/interrupt")

    async def is_alive(self) -> bool:
        ended = self._ended is not None and self._ended.done()
        return not ended and self._ws is not None and self._ws.close_code is None

    async def shutdown(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._ws is not None:
            self._ws.close()
            self._ws = None
        if self.kernel_id is not None:
            try:
                await self._http("DELETE", f"/api/kernels/{self.kernel_id}")
            except KernelError:
                pass
            self.kernel_id = None


def _ended_by(msg: dict[str, Any]) -> str | None:
    """Why ``msg`` says the kernel's process ended, if it does: the server's own status message when
    it restarts a kernel whose process died (``restarting``), or gives up on it (``dead``)."""
    header, content = msg.get("header"), msg.get("content")
    if msg.get("channel") != "iopub" or not isinstance(header, dict) or not isinstance(content, dict):
        return None
    if header.get("msg_type") != "status":
        return None
    return {"restarting": RESTARTED, "dead": DEAD}.get(str(content.get("execution_state")))


class GatewayExecutor(KernelExecutor):
    """A kernel of a remote server for each run. ``url`` and ``auth_token`` default to
    ``JUPYTER_GATEWAY_URL`` and ``JUPYTER_GATEWAY_AUTH_TOKEN``; the kernel's image needs
    rlm-kernel installed."""

    kind = "gateway"

    def __init__(
        self,
        settings: ExecutorSettings | None = None,
        *,
        _parent: KernelExecutor | None = None,
        **given: Any,
    ) -> None:
        super().__init__(settings, _parent=_parent, **given)
        s = self.settings
        if isinstance(_parent, GatewayExecutor):  # a child run's kernel is its parent's
            url, auth_token = _parent.url, _parent.auth_token
        else:
            url = s.url or os.environ.get("JUPYTER_GATEWAY_URL")
            auth_token = (
                s.auth_token if s.auth_token is not None else os.environ.get("JUPYTER_GATEWAY_AUTH_TOKEN")
            )
        if not url:
            raise ConfigError(
                "The gateway executor needs a url: executor_kwargs={'url': ...} or JUPYTER_GATEWAY_URL."
            )
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"The gateway url must start with http:// or https://, got {url!r}.")
        self.url: str = url
        self.auth_token = auth_token

    @staticmethod
    def default_kernel(isolation: str) -> str:
        return SANDBOX_KERNEL if isolation == "sandbox" else "python3"

    def describe(self) -> dict[str, Any]:
        held_by = "the gateway's rlm-sandbox kernelspec (--memory-mb, --cpu-s, ...)"
        if self.isolation == "none":
            held_by = "the gateway's own isolation"
        return {"executor": self.kind, "isolation": self.isolation, "limits": {"held_by": held_by}}

    def not_sandboxed(self, why: str) -> str:
        return (
            f"the gateway's {self.kernel_name!r} kernel is not sandboxed ({why}): run it with the "
            f"{SANDBOX_KERNEL} kernelspec (python -m rlm_kernel.install --sandbox on the gateway's machine, "
            "the gateway started with --KernelManager.transport=ipc), or pass "
            "executor_kwargs={'isolation': 'none'} if its kernels are isolated otherwise"
        )

    def new_kernel(self) -> Kernel:
        return GatewayKernel(self.url, self.auth_token, self.kernel_name)

    def _pool_key(self) -> tuple[Any, ...]:
        return (*super()._pool_key(), self.url, self.auth_token)

    @staticmethod
    def _child_of(parent: KernelExecutor, tag: str) -> KernelExecutor:
        return GatewayExecutor(tag=tag, _parent=parent)
