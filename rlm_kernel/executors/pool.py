"""A runtime's kernels: warm pools keyed by kind and limits, and every kernel it started.

A kernel takes a second or more to start, so each pool keeps ``size`` started ahead, and a run gets
one in milliseconds; each kernel serves one run and goes. :class:`Kernels` is what a
:class:`~rlm_kernel.runtime.Runtime` owns of them (:func:`kernels_of`): its pools, and every session
started from them, warm or in use, from the moment it starts. Closing it (with the runtime, or
:meth:`Kernels.close` alone) shuts every one down, removes its folders and joins its threads; a
later run on a runtime still open starts new pools.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Callable, Hashable
from typing import Protocol

from ..runtime import Runtime, wait_future
from .errors import KernelError

__all__ = ["START_S", "Kernels", "KernelPool", "Startable", "kernels_of"]

START_S = 120.0  # for a kernel to start and load rlm_kernel, many starting at once on 2 cores
CLOSE_S = 30.0  # for the kernels of a runtime to shut down and their threads to end


class Startable(Protocol):
    """What a pool holds: a kernel's session (:class:`.kernel.KernelSession`)."""

    dead: str | None
    when_closed: list[Callable[[], None]]

    async def start(self) -> None: ...
    async def close(self) -> None: ...
    def join_threads(self, timeout: float) -> None: ...


class KernelPool:
    """Kernels of one kind and limits, ``size`` of them started ahead."""

    def __init__(self, kernels: Kernels, factory: Callable[[], Startable], size: int = 1) -> None:
        self.kernels = kernels
        self.factory = factory
        self.size = size
        self._warm: collections.deque[concurrent.futures.Future[Startable]] = collections.deque()
        self._lock = threading.Lock()

    def fill(self) -> None:
        with self._lock:
            while len(self._warm) < self.size:
                self._warm.append(self.kernels.start(self.factory()))

    def acquire(self) -> Startable:
        """A warm kernel, or a new one when none is warm or the warm one died while it waited."""
        with self._lock:
            warm = self._warm.popleft() if self._warm else None
        self.fill()
        session = None if warm is None else _ready(warm)
        if session is None or session.dead is not None:
            if session is not None:
                self.kernels.runtime.submit(session.close())
            session = _ready(self.kernels.start(self.factory()))
        return session

    def starting(self) -> list[concurrent.futures.Future[Startable]]:
        """The warm kernels, forgotten by the pool (the runtime's :class:`Kernels` closes them)."""
        with self._lock:
            warm, self._warm = list(self._warm), collections.deque()
        return warm


def _ready(future: concurrent.futures.Future[Startable]) -> Startable:
    try:
        return future.result(timeout=START_S)
    except concurrent.futures.TimeoutError:
        raise KernelError(f"no kernel was ready within {START_S:g} s") from None


class Kernels:
    """Every kernel a runtime started, warm or in use, and its warm pools."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._pools: dict[Hashable, KernelPool] = {}
        self._live: set[Startable] = set()
        self._lock = threading.Lock()

    def pool(self, key: Hashable, factory: Callable[[], Startable], size: int) -> KernelPool:
        """The pool for kernels of one kind and limits (``key``)."""
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                pool = self._pools[key] = KernelPool(self, factory, size)
        return pool

    def start(self, session: Startable) -> concurrent.futures.Future[Startable]:
        """Start ``session`` on the runtime's loop; from now until it closes, it is the runtime's."""

        async def start() -> Startable:
            with self._lock:
                self._live.add(session)
            session.when_closed.append(lambda: self.forget(session))
            with contextlib.ExitStack() as undo:  # a kernel that failed to start has cleaned up after itself
                undo.callback(self.forget, session)
                await session.start()
                undo.pop_all()
            return session

        return self.runtime.submit(start())

    def forget(self, session: Startable) -> None:
        """``session`` closed: called by the session itself."""
        with self._lock:
            self._live.discard(session)

    def close(self, timeout: float = CLOSE_S) -> None:
        """Shut down every kernel, warm or in use, remove their folders and join their threads;
        kernels still starting are waited for first, so none starts after its close."""
        deadline = time.monotonic() + timeout
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        starting = [future for pool in pools for future in pool.starting()]
        concurrent.futures.wait(starting, timeout=min(START_S, timeout))
        with self._lock:
            live, self._live = list(self._live), set()
        if not live:
            return

        async def close() -> None:
            await asyncio.gather(*(session.close() for session in live), return_exceptions=True)

        wait_future(self.runtime.submit(close()), max(deadline - time.monotonic(), 0.0))
        for session in live:
            session.join_threads(max(deadline - time.monotonic(), 0.0))


def kernels_of(runtime: Runtime) -> Kernels:
    """The kernels ``runtime`` owns, closed with it."""
    return runtime.own(Kernels, lambda: Kernels(runtime))
