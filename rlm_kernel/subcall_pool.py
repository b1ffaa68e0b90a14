"""The pool of a run tree's sub-calls: every LM call of the tree goes through the runtime's asyncio loop.

``llm_query`` and friends are plain blocking functions for the REPL's code, but they submit
coroutines to this loop, so a batch of 64 prompts is 64 concurrent requests (bounded by
``max_concurrency``), and the calling thread (the kernel's main thread, say) only waits. Cancelling
the pool cancels every call in flight.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from .budget import Budget
from .errors import RunCancelled
from .runtime import Runtime, StopSignal, default_runtime, wait_any

__all__ = ["SubcallPool"]

T = TypeVar("T")


class SubcallPool:
    """One run tree's calls on the runtime's loop: a concurrency bound, and a cancel switch (the
    tree's :class:`~rlm_kernel.runtime.StopSignal`) that ends every call in flight."""

    def __init__(
        self, max_concurrency: int = 32, *, runtime: Runtime | None = None, stop: StopSignal | None = None
    ) -> None:
        self.max_concurrency = max_concurrency
        self.runtime = runtime or default_runtime()
        self.stop = stop or StopSignal(runtime=self.runtime)
        self._futures: set[concurrent.futures.Future[Any]] = set()
        self._lock = threading.Lock()
        self._loop = self.runtime.loop
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._running = 0
        self._idle = threading.Condition()
        self.runtime._opened(self)
        self.stop.on_set(self._cancel_futures)

    @property
    def cancelled(self) -> bool:
        return self.stop.cancelled

    async def _tracked(self, coro: Coroutine[Any, Any, T], bounded: bool) -> T:
        with self._idle:
            self._running += 1
        try:
            if not bounded:
                return await coro
            async with self._semaphore:
                if self.stop.cancelled:  # queued behind calls that were just cancelled: never start
                    coro.close()
                    raise asyncio.CancelledError
                return await coro
        finally:
            with self._idle:
                self._running -= 1
                self._idle.notify_all()

    def submit(self, coro: Coroutine[Any, Any, T], *, bounded: bool = True) -> concurrent.futures.Future[T]:
        with self._lock:  # a cancel either comes first and refuses it, or finds it and cancels it
            if self.stop.cancelled:
                coro.close()
                raise RunCancelled()
            future = asyncio.run_coroutine_threadsafe(self._tracked(coro, bounded), self._loop)
            self._futures.add(future)
        future.add_done_callback(self._forget)
        return future

    def _forget(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._futures.discard(future)

    def wait(self, future: concurrent.futures.Future[T], budget: Budget | None = None) -> T:
        """Block until ``future`` is done; raise RunCancelled if the tree is cancelled or runs out of
        time. A cancel wakes the wait at once, as does Ctrl-C in this thread."""
        stopped: concurrent.futures.Future[None] = concurrent.futures.Future()
        unlisten = self.stop.on_set(lambda: stopped.set_result(None))
        try:
            left = budget.time_left() if budget is not None else None
            wait_any([future, stopped], None if left is None else max(left, 0.0))
        finally:
            unlisten()
        if future.done():
            try:
                return future.result()
            except concurrent.futures.CancelledError:
                raise RunCancelled() from None
        future.cancel()
        if self.stop.cancelled:
            raise RunCancelled()
        # only time ends a call in flight; money and tokens stop new ones
        assert budget is not None
        raise budget.exceeded() or RunCancelled("max_timeout reached")

    def run(self, coro: Coroutine[Any, Any, T], budget: Budget | None = None) -> T:
        return self.wait(self.submit(coro, bounded=False), budget)

    def cleanup(self, coro: Coroutine[Any, Any, T], timeout: float = 2.0) -> T:
        """Run a closing coroutine on the loop even after a cancel (closing clients, say)."""
        return self.runtime.submit(coro).result(timeout)

    def cancel_all(self) -> None:
        """Stop every call in flight and refuse new ones."""
        self.stop.set()

    def _cancel_futures(self) -> None:
        with self._lock:
            futures = list(self._futures)
        for future in futures:
            future.cancel()

    def drain(self, timeout: float = 1.0) -> bool:
        """Wait until every submitted coroutine has ended (cancelled ones included), so their last
        events are emitted before the run's end."""
        with self._idle:
            return self._idle.wait_for(lambda: self._running == 0, timeout)

    def close(self) -> None:
        """Cancel what is left and let it record its end; the runtime's loop goes on for others."""
        self.cancel_all()
        self.drain()
        self.runtime._closed_pool(self)
