"""A kernel on this machine for the ``kernel`` executor: started by jupyter_client, in a bubblewrap
sandbox (:mod:`.sandbox`) unless told ``isolation="none"``, its channels IPC sockets in a folder of
its own, which also holds its connection file and the contexts written for it. Nothing of it is in
the Jupyter runtime folder. Its sockets take messages of bounded size from it."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from . import bridge, sandbox, seccomp
from .errors import KernelError
from .pool import START_S

__all__ = ["LocalKernel", "protect_host"]

# The largest message and the most messages waiting, per channel, that a kernel's sockets take from
# it: a larger message ends the connection (dropped), and past the count the kernel's side waits.
CHANNEL_LIMITS = {
    "stdin": (bridge.MAX_MESSAGE, 1),
    "iopub": (1 << 20, 8),
    "shell": (1 << 20, 8),
    "control": (1 << 20, 8),
    "hb": (1 << 10, 8),
}


@functools.cache
def _jupyter_classes() -> tuple[type, type]:
    """jupyter_client's manager and client, with sockets of bounded size and the sandbox's command."""
    import zmq
    from jupyter_client.asynchronous.client import AsyncKernelClient
    from jupyter_client.manager import AsyncKernelManager

    def bounded(context: Any, channel: str) -> None:
        size, waiting = CHANNEL_LIMITS[channel]
        context.setsockopt(zmq.MAXMSGSIZE, size)
        context.setsockopt(zmq.RCVHWM, waiting)

    class Client(AsyncKernelClient):
        def _create_connected_socket(self, channel: str, identity: bytes | None = None) -> Any:
            bounded(self.context, channel)
            return super()._create_connected_socket(channel, identity)

    class Manager(AsyncKernelManager):
        wrap: Callable[[list[str]], list[str]] | None = None  # the sandbox around the kernel's command

        def _create_connected_socket(self, channel: str, identity: bytes | None = None) -> Any:
            bounded(self.context, channel)
            return super()._create_connected_socket(channel, identity)

        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            cmd = super().format_kernel_cmd(extra_arguments)
            return cmd if self.wrap is None else self.wrap(cmd)

    Manager.client_factory = Client  # type: ignore[assignment]
    return Manager, Client


def _drop_capabilities() -> None:
    """In an unsandboxed kernel's process before it starts (as root): no capabilities, so it cannot
    read another process's memory or environment, and no way to gain them back."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, pr_set_no_new_privs = 24, 38
    for cap in range(64):
        if libc.prctl(pr_capbset_drop, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0)


def protect_host() -> None:
    """Make this process's environment and memory unreadable to processes without capabilities,
    kernels of the same user included (``/proc/<pid>/environ``, ``/proc/<pid>/mem``)."""
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


# What a kernel that does not start raises, besides ZeroMQ's own error: turned into a KernelError.
_START_ERRORS = (OSError, RuntimeError, ValueError, LookupError, ImportError, asyncio.TimeoutError)


class LocalKernel:
    """A kernel on this machine, started by jupyter_client in a sandbox (or, with ``isolation="none"``,
    as this user with an allowlisted environment and no capabilities). Its folder, which only this
    user reaches, holds its connection file, the links this host connects through and the contexts
    written for it; nothing of it is in the Jupyter runtime folder. A sandboxed kernel binds its
    sockets in its sandbox's own folder, and the host holds each one once it is bound, before any
    code runs there (:func:`.sandbox.hold_sockets`)."""

    shares_files = True

    def __init__(
        self,
        kernel_name: str = "python3",
        *,
        isolation: str = "sandbox",
        limits: sandbox.Limits | None = None,
    ) -> None:
        _sweep_once()
        self.kernel_name = kernel_name
        self.isolation = isolation
        self.limits = limits or sandbox.Limits()
        self.uid = sandbox.identity() if isolation == "sandbox" else None
        self.workdir = sandbox.private_folder()
        self.sockets = os.path.join(self.workdir, "sockets")
        self.scratch = os.path.join(self.workdir, "scratch")  # an unsandboxed kernel's working folder
        transfer = [os.path.join(self.workdir, "in")]
        for path in (self.sockets, self.scratch, transfer[0]):
            os.mkdir(path, 0o700)
        with contextlib.suppress(OSError):  # contexts pass through memory where there is a /dev/shm
            transfer.insert(0, sandbox.private_folder("/dev/shm"))  # noqa: S108 - private, 0700
        self.transfer_dirs = tuple(transfer)
        for path in self.transfer_dirs:
            self.give(path)
        # The sandbox lives while this process holds the writing end of this pipe, and no longer.
        self._alive, self._held = os.pipe() if isolation == "sandbox" else (-1, -1)
        self._info_r, self._info_w = os.pipe() if isolation == "sandbox" else (-1, -1)
        self._filter = -1
        self._socket_fds: dict[str, int] = {}
        self._first: int | None = None  # the pid of its sandbox's first process
        self._tasks: list[asyncio.Task[None]] = []

    def give(self, path: str | int) -> None:
        """A file or folder of the host's that the kernel must reach: its own, when it has a uid."""
        if self.uid is not None:
            (os.fchown if isinstance(path, int) else os.chown)(path, self.uid, self.uid)

    def _sandboxed(self, cmd: list[str]) -> list[str]:
        connection_file = os.path.realpath(self.km.connection_file)
        mine = os.path.join(self.workdir, "inside.json")
        with open(connection_file) as f:
            info = json.load(f)
        with open(mine, "w") as f:
            json.dump(sandbox.inside(info), f)
        self.give(mine)
        kernel = [sandbox.CONNECTION_FILE if arg == connection_file else arg for arg in cmd]
        return sandbox.command(
            kernel,
            connection_file=mine,
            uid=self.uid,
            alive=self._alive,
            info=self._info_w,
            seccomp=self._filter,
            read_only=self.transfer_dirs,
            env=sandbox.environment(kernel[0]),
            limits=self.limits,
        )

    async def start(self, on_message: Callable[[dict[str, Any]], None]) -> None:
        manager, _ = _jupyter_classes()
        self.km = manager(
            kernel_name=self.kernel_name,
            transport="ipc",
            ip=os.path.join(self.sockets, "k"),
            connection_file=os.path.join(self.workdir, "kernel.json"),
        )
        launch: dict[str, Any] = {
            "stdin": subprocess.DEVNULL,
            "stdout": subprocess.DEVNULL,
            "stderr": subprocess.DEVNULL,
        }
        python = (
            sys.executable
            if self.km.kernel_spec.argv[0].startswith("python")
            else self.km.kernel_spec.argv[0]
        )
        if self.isolation == "sandbox":
            self._filter = seccomp.open_program()
            self.km.wrap = self._sandboxed
            self.km.kernel_spec.interrupt_mode = "message"  # no signal crosses into the sandbox
            launch.update(
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                cwd=self.workdir,
                pass_fds=(self._alive, self._info_w, self._filter),
            )
        else:
            protect_host()
            launch.update(env=sandbox.environment(python), cwd=self.scratch)
            if sys.platform == "linux" and os.geteuid() == 0:
                launch["preexec_fn"] = _drop_capabilities
        async with contextlib.AsyncExitStack() as undo:  # a kernel that did not start is shut down
            undo.push_async_callback(self.shutdown)
            try:
                await self._launch(launch)
            except (*_START_ERRORS, _zmq_error()) as exc:
                raise KernelError(f"the {self.kernel_name!r} kernel did not start: {exc}") from exc
            undo.pop_all()
        for name in ("shell", "iopub", "stdin"):
            task = asyncio.ensure_future(self._pump(name, on_message))
            task.add_done_callback(functools.partial(_pump_ended, name, on_message))
            self._tasks.append(task)

    async def _launch(self, launch: dict[str, Any]) -> None:
        """Start the kernel's process, take its sockets (in a sandbox), and wait until it answers."""
        await self.km.start_kernel(**launch)
        for name in ("_alive", "_info_w", "_filter"):  # the sandbox has them
            self._close_fd(name)
        if self.isolation == "sandbox":
            await asyncio.to_thread(self._hold_sockets)
        self.kc = self.km.client()
        self.kc.start_channels()
        await self.kc.wait_for_ready(timeout=START_S)

    def _hold_sockets(self) -> None:
        """Take the sandbox's sockets as the kernel binds them, and link this host's names to them."""
        process = self.km.provisioner.process
        pid = sandbox.first_pid(self._info_r, START_S)
        info = self.km.get_connection_info()
        running = lambda: process.poll() is None  # noqa: E731
        self._first = pid
        self._socket_fds = sandbox.hold_sockets(pid, info, START_S, running)
        sandbox.link_sockets(self._socket_fds, info, os.path.join(self.sockets, "k"))

    def cpu_time(self) -> float | None:
        """CPU seconds of every process of its sandbox, where it has one."""
        return None if self._first is None else sandbox.cpu_seconds(self._first)

    def why_ended(self) -> str | None:
        """Why the sandbox ended its kernel, when it did: over its memory or its CPU limit."""
        process = getattr(getattr(getattr(self, "km", None), "provisioner", None), "process", None)
        return None if process is None else sandbox.ENDED.get(process.poll())

    async def _pump(self, name: str, on_message: Callable[[dict[str, Any]], None]) -> None:
        channel = getattr(self.kc, f"{name}_channel")
        while True:
            try:
                msg = await channel.get_msg()
            except (ValueError, TypeError, LookupError) as exc:  # it does not deserialize, or a bad signature
                on_message(_unreadable(name, exc))
                continue
            msg["channel"] = name
            on_message(msg)

    def execute(self, code: str) -> str:
        return self.kc.execute(code, silent=False, store_history=False, allow_stdin=True)

    def input_reply(self, value: str) -> None:
        self.kc.input(value)

    async def interrupt(self) -> None:
        await self.km.interrupt_kernel()

    async def is_alive(self) -> bool:
        return await self.km.is_alive()

    async def exited(self) -> None:
        """Return when the kernel's process (its sandbox, when it has one) is gone: a pidfd that
        becomes readable on Linux, else a thread that waits for the process."""
        process = getattr(self.km.provisioner, "process", None)
        if process is None:
            return
        loop = asyncio.get_running_loop()
        try:
            fd = os.pidfd_open(process.pid)
        except (AttributeError, OSError):  # no pidfd here, or the process is already gone
            await asyncio.to_thread(process.wait)
            return
        gone = loop.create_future()
        loop.add_reader(fd, lambda: gone.done() or gone.set_result(None))
        try:
            await gone
        finally:
            loop.remove_reader(fd)
            os.close(fd)

    def _close_fd(self, name: str) -> None:
        fd = getattr(self, name)
        setattr(self, name, -1)
        if fd >= 0:
            os.close(fd)

    async def shutdown(self) -> None:
        for task in self._tasks:
            task.cancel()
        for name in ("_alive", "_info_w", "_info_r", "_filter"):
            self._close_fd(name)
        self._close_fd("_held")  # its sandbox ends now, whatever happens below
        for fd in self._socket_fds.values():
            os.close(fd)
        self._socket_fds = {}
        km = getattr(self, "km", None)
        if km is not None:
            if getattr(self, "kc", None) is not None:
                self.kc.stop_channels()
            with contextlib.suppress(Exception):  # already gone
                await km.shutdown_kernel(now=True)
        for folder in (self.workdir, *self.transfer_dirs):
            sandbox.remove(folder)


def _unreadable(channel: str, exc: BaseException) -> dict[str, Any]:
    return {"channel": channel, "error": f"a message on {channel} that could not be read ({exc})"}


def _pump_ended(channel: str, on_message: Callable[[dict[str, Any]], None], task: asyncio.Task[None]) -> None:
    """A channel's reader that failed otherwise: the bridge hears of it as of a message it could
    not read, and ends the kernel (no message of that channel would reach it again)."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        on_message(_unreadable(channel, exc))


def _zmq_error() -> type[Exception]:
    import zmq

    return zmq.ZMQError


@functools.cache
def _sweep_once() -> None:
    """The folders of hosts killed outright, removed by the first kernel of this process."""
    sandbox.sweep(tempfile.gettempdir(), "/dev/shm")  # noqa: S108 - only this user's, of dead hosts
