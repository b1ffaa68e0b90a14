"""Drivers: short loops that perform the engine's actions.

``RunTree`` owns what every run of one completion shares: the sub-call pool, the
budget, the event bus and the LM clients. ``drive`` is the blocking loop (the
Python API, the magics, child runs); ``adrive`` is its async twin. Both hand the
same observations to the same :class:`~rlm_kernel.engine.RLMRun`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from .budget import Budget
from .config import RLMConfig
from .engine import Action, AskRoot, Execute, Finish, ResolveFinal, RLMRun, new_run_id
from .errors import RLMError, RunCancelled
from .events import EventBus, RootToken
from .executors.base import ExecResult, Executor
from .executors.local import LocalExecutor
from .helpers import Helpers
from .lm import make_lm
from .lm.base import Completion, LMClient
from .lm.replay import Recording, RecordingLM
from .prompts import context_metadata
from .repl import Scaffold
from .subcalls import SubcallPool, Subcalls

log = logging.getLogger("rlm_kernel")

__all__ = ["RunTree", "RunParts", "prepare", "drive", "adrive", "ask_root"]


class RunTree:
    """Shared by the root run and all its children: pool, budget, bus, LMs, cancel switch."""

    def __init__(self, config: RLMConfig, bus: EventBus) -> None:
        self.config = config
        self.bus = bus
        self.pool = SubcallPool(config.max_concurrency)
        self.budget = Budget(config.max_budget, config.max_tokens, config.max_timeout)
        self._unsubscribe = bus.subscribe(self.budget.observe)
        self._recording = Recording(config.record) if config.record else None
        self._lms: dict[tuple[str, str | None], LMClient] = {}

    def _make(self, role: str, model: str | None) -> LMClient:
        key = (role, model)
        if key not in self._lms:
            c = self.config
            if role == "root":
                lm = make_lm(c.backend, c.backend_kwargs)
            else:
                backend = c.sub_backend or c.backend
                kwargs = c.sub_backend_kwargs
                if kwargs is None:  # the root's settings, unless they are another provider's
                    kwargs = c.backend_kwargs if backend == c.backend else {}
                lm = make_lm(backend, kwargs, model=model)
            self._lms[key] = RecordingLM(lm, self._recording) if self._recording else lm
        return self._lms[key]

    def root_lm(self) -> LMClient:
        return self._make("root", None)

    def sub_lm(self, model: str | None = None) -> LMClient:
        return self._make("sub", model)

    def cancel(self) -> None:
        """Cancel every call in flight and wait (briefly) for them to record their end."""
        self.pool.cancel_all()
        self.pool.drain()

    @property
    def cancelled(self) -> bool:
        return self.pool.cancelled.is_set()

    def close(self) -> None:
        for lm in self._lms.values():
            try:
                self.pool.cleanup(lm.aclose())
            except Exception:  # the run's result matters more than a client that failed to close
                log.warning("rlm_kernel: closing %s failed", lm.model_name, exc_info=True)
        self._unsubscribe()
        self.pool.close()


@dataclass
class RunParts:
    """One run and the pieces its driver needs."""

    run: RLMRun
    tree: RunTree
    executor: Executor
    scaffold: Scaffold
    subcalls: Subcalls
    lm: LMClient


def prepare(
    tree: RunTree,
    config: RLMConfig,
    context: Any,
    question: str | None,
    *,
    executor: Executor | None = None,
    parent_id: str | None = None,
    run_id: str | None = None,
) -> RunParts:
    """Build a run, bind the REPL names into its executor's namespace, and wire sub-calls."""
    run_id = run_id or new_run_id()
    executor = executor or LocalExecutor(tag=run_id)
    lm = tree.root_lm() if config.depth == 0 else tree.sub_lm()
    sub_model = tree.sub_lm().model_name if config.profile != "no_subcalls" else "-"
    run = RLMRun(
        config,
        question=question,
        context_meta=context_metadata(context),
        model=lm.model_name,
        sub_model=sub_model,
        emit=tree.bus.emit,
        run_id=run_id,
        parent_id=parent_id,
    )
    subcalls = Subcalls(
        pool=tree.pool,
        budget=tree.budget,
        emit=tree.bus.emit,
        lm_for=tree.sub_lm,
        run_id=run_id,
        parent_id=parent_id,
        depth=config.depth,
        spawn_child=_spawner(tree, config, run_id) if config.can_recurse else None,
    )
    helpers = Helpers(context, subcalls).bound() if config.profile == "small" else None
    scaffold = Scaffold(
        executor.namespace, context, None if config.profile == "no_subcalls" else subcalls, helpers
    )
    return RunParts(run, tree, executor, scaffold, subcalls, lm)


def _spawner(tree: RunTree, config: RLMConfig, parent_id: str) -> Callable[[str, Any, str], str]:
    def spawn(prompt: str, context: Any, call_id: str) -> str:
        child_context, question = (prompt, None) if context is None else (context, prompt)
        parts = prepare(tree, config.child(), child_context, question, parent_id=parent_id)
        try:
            finish = drive(parts)
        finally:
            parts.scaffold.close()
        if finish.response is None:
            raise RLMError(finish.error or "the child run ended without an answer")
        return finish.response

    return spawn


def _token_sink(parts: RunParts, turn: int) -> Callable[[str], None]:
    run = parts.run

    def on_token(text: str) -> None:
        parts.tree.bus.emit(
            RootToken(run_id=run.run_id, parent_id=run.parent_id, depth=run.depth, turn=turn, text=text)
        )

    return on_token


async def ask_root(parts: RunParts, action: AskRoot) -> Completion:
    """The root LM's reply to ``action``, streamed into RootToken events. Where the backend
    continues a reply, the action's ``prefill`` starts it, and is part of the reply returned."""
    on_token = _token_sink(parts, action.turn)
    messages, prefill = action.messages, action.prefill if parts.lm.continues_reply else None
    if prefill:
        messages = [*messages, {"role": "assistant", "content": prefill}]
        on_token(prefill)
    completion = await parts.lm.complete(
        messages, on_token=on_token, max_tokens=action.max_tokens, stop=action.stop or None
    )
    return replace(completion, text=prefill + completion.text) if prefill else completion


def _after_execute(parts: RunParts, result: ExecResult) -> Action:
    restored = parts.scaffold.restore()
    return parts.run.receive_execution(
        result, answer_ready=parts.scaffold.ready, answer=parts.scaffold.content, restored=restored
    )


def _check(parts: RunParts) -> None:
    if parts.tree.cancelled:
        raise RunCancelled()
    parts.tree.budget.check()


def drive(parts: RunParts) -> Finish:
    """The blocking loop. Ctrl-C cancels every call in flight and keeps the partial run."""
    run, tree = parts.run, parts.tree
    action: Action = run.start()
    while not isinstance(action, Finish):
        try:
            _check(parts)
            if isinstance(action, AskRoot):
                coro = ask_root(parts, action)
                action = run.receive_reply(tree.pool.run(coro, tree.budget))
            elif isinstance(action, Execute):
                parts.subcalls.step = action.step
                result = parts.executor.execute(action.code, step=action.step)
                if tree.cancelled:
                    raise RunCancelled()
                action = _after_execute(parts, result)
            elif isinstance(action, ResolveFinal):
                action = run.receive_final(*parts.scaffold.resolve(action.directive))
        except KeyboardInterrupt:
            tree.cancel()
            action = run.abort(RunCancelled("interrupted"))
        except RLMError as exc:
            if run.depth == 0:
                tree.pool.drain()  # let cancelled calls record their end before the run's
            action = run.abort(exc)
    return action


Approve = Callable[[int, str], Awaitable[str]]


async def adrive(parts: RunParts, approve: Approve | None = None) -> Finish:
    """The async loop: LM calls are awaited, code runs in a worker thread. Cancelling the task
    cancels every call in flight and keeps the partial run.

    ``approve(step, code)``, if given, is awaited before each step and returns the code to run:
    a human's edit of it is recorded, and the root is told what changed."""
    run, tree = parts.run, parts.tree
    action: Action = run.start()
    while not isinstance(action, Finish):
        try:
            _check(parts)
            if isinstance(action, AskRoot):
                coro = ask_root(parts, action)
                future = asyncio.wrap_future(tree.pool.submit(coro, bounded=False))
                try:
                    completion: Completion = await asyncio.wait_for(future, tree.budget.time_left())
                except asyncio.TimeoutError:
                    raise tree.budget.exceeded() or RunCancelled("max_timeout") from None
                action = run.receive_reply(completion)
            elif isinstance(action, Execute):
                code = action.code
                if approve is not None:
                    code = await approve(action.step, code)
                    if code != action.code:
                        run.human_edit(action.step, action.code, code)
                parts.subcalls.step = action.step
                result = await asyncio.to_thread(parts.executor.execute, code, step=action.step)
                if tree.cancelled:
                    raise RunCancelled()
                action = _after_execute(parts, result)
            elif isinstance(action, ResolveFinal):
                action = run.receive_final(*parts.scaffold.resolve(action.directive))
        except asyncio.CancelledError:
            stopped = tree.cancelled
            tree.cancel()
            action = run.abort(RunCancelled() if stopped else RunCancelled("interrupted"))
        except RLMError as exc:
            if run.depth == 0:
                tree.pool.drain()  # let cancelled calls record their end before the run's
            action = run.abort(exc)
    return action
