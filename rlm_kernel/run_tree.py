"""What every run of one completion shares, and the pieces one run's driver needs.

:class:`RunTree` is built once for a completion and handed down to its child runs: the sub-call
pool, the budget, the event bus (whose redactor knows the keys given), the LM clients, and the stop
signal that ends the tree's calls and steps. :class:`RunParts` is one run of that tree: the engine's
:class:`~rlm_kernel.engine.RLMRun`, its executor, its sub-calls and its root's client.
"""

from __future__ import annotations

import functools
import logging
import queue
import uuid
from dataclasses import dataclass, field
from typing import Any

from .budget import Budget
from .config import RLMConfig
from .engine import RLMRun
from .events import EventBus
from .executors.base import Executor
from .lm import make_lm
from .lm.base import LMClient, price_of
from .lm.replay import Recording, RecordingLM
from .runtime import Runtime, StopSignal, close_quietly, default_runtime
from .secrets import Redactor, secrets_of
from .subcalls import SubcallPool, Subcalls

__all__ = ["new_run_id", "RunTree", "RunParts"]

log = logging.getLogger("rlm_kernel")


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


class RunTree:
    """Shared by the root run and all its children: pool, budget, bus, LMs, cancel switch."""

    def __init__(
        self,
        config: RLMConfig,
        bus: EventBus,
        runtime: Runtime | None = None,
        *,
        budget: Budget | None = None,
    ) -> None:
        """``budget``: one that other trees share (the roots of one vote), else the tree's own."""
        self.config = config
        self.bus = bus
        self.runtime = runtime or default_runtime()
        self.redactor = Redactor(
            secrets_of(config.backend_kwargs, config.sub_backend_kwargs, config.executor_kwargs)
        )
        bus.redact = self.redactor.event  # before the writer, the views and the budget see any event
        self.budget = budget or Budget(config.max_budget, config.max_tokens, config.max_timeout)
        deadline = None if config.max_timeout is None else self.budget.started + config.max_timeout
        # Cancelled, or out of time: what ends the tree's calls in flight and its running steps.
        self.stop = StopSignal(deadline, runtime=self.runtime)
        self.pool = SubcallPool(config.max_concurrency, runtime=self.runtime, stop=self.stop)
        self._unsubscribe = bus.subscribe(self.budget.observe)
        self._recording = Recording(config.record) if config.record else None
        self._lms: dict[tuple[str, str | None], LMClient] = {}

    def _make(self, role: str, model: str | None) -> LMClient:
        key = (role, model)
        if key not in self._lms:
            backend, kwargs, default = self.config.lm_kwargs(role)
            lm = make_lm(backend, kwargs, model=model or default)
            # A key the client found itself (the machine's model server, the environment) is secret too.
            self.redactor.add(getattr(lm, "api_key", None))
            self.budget.require_prices([lm.model_name], functools.partial(price_of, lm))
            self._lms[key] = RecordingLM(lm, self._recording) if self._recording else lm
        return self._lms[key]

    def root_lm(self) -> LMClient:
        return self._make("root", None)

    def sub_lm(self, model: str | None = None) -> LMClient:
        return self._make("sub", model)

    def sub_models(self) -> tuple[str, ...]:
        """The models the code's sub-calls may name: the sub-model first, the root model, and those
        of the ``sub_models`` setting. A client is made for each only when the code first names it."""
        names = (self.sub_lm().model_name, self.root_lm().model_name, *(self.config.sub_models or ()))
        return tuple(dict.fromkeys(names))

    def cancel(self) -> None:
        """Cancel every call in flight and wait (briefly) for them to record their end."""
        self.pool.cancel_all()
        self.pool.drain()

    @property
    def cancelled(self) -> bool:
        return self.stop.cancelled

    def should_stop(self) -> bool:
        """Whether a running step must end now: the run was stopped, or is out of time."""
        return self.stop()

    def close(self) -> None:
        """Close the clients (the run's result matters more than one that fails to) and the pool."""
        for lm in self._lms.values():
            close_quietly(functools.partial(self._close_lm, lm), lm.model_name, log=log)
        self._unsubscribe()
        self.pool.close()

    def _close_lm(self, lm: LMClient) -> None:
        self.pool.cleanup(lm.aclose())


@dataclass
class RunParts:
    """One run and the pieces its driver needs."""

    run: RLMRun
    tree: RunTree
    executor: Executor
    subcalls: Subcalls
    lm: LMClient
    hints: queue.SimpleQueue[str] = field(default_factory=queue.SimpleQueue)
    # The root's sampling (temperature, seed) for every turn: a sampled root of a vote's. None: the
    # model's own settings.
    sampling: dict[str, Any] | None = None

    def hint(self, text: str) -> None:
        """Guidance for the root's next turn, from any thread: the loop gives it to the run at its
        next step boundary, so it never lands while the engine is inside a call."""
        self.hints.put(text)
