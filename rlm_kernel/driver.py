"""The drivers: how a run is built, and the loops that wait on its root loop.

:func:`prepare` builds a run of a :class:`~rlm_kernel.run_tree.RunTree` and binds the REPL's names
in its executor. The root loop itself is :class:`~rlm_kernel.root_loop.Loop`, which yields what must
be waited for; :func:`~rlm_kernel.lm_calls.call_lm` makes the LM calls. The drivers differ only in
how they wait:

    drive      a thread: LM calls block on the pool, code runs here      (the Python API, children)
    adrive     a coroutine: LM calls are awaited, code runs in a thread  (``acompletion``, the magics)
               (its loop is made with ``offload``: blocking work is yielded as :class:`Blocking`)
    notebook   a cell that finishes when a human runs it                 (``jupyter/notebook.py``)

Whatever a driver waited on is settled in one place (:func:`_outcome`): an ``RLMError`` stops the
run where it waits; any other exception is a bug in an executor or a client, logged with its
traceback, and the run still ends, recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from .config import RLMConfig
from .engine import LM_CALLS, Finish, Followup, RLMRun
from .errors import RLMError, RunCancelled, one_line
from .executors.base import Executor, StepOutcome
from .executors.local import LocalExecutor
from .helpers import Helpers
from .lm_calls import HELD_CHARS as HELD_CHARS
from .lm_calls import ask_root, call_lm
from .lm_calls import summarise as summarise
from .lm_calls import verify as verify
from .prompts import context_metadata
from .rewind import Branch
from .root_loop import REOPEN as REOPEN
from .root_loop import Blocking, Loop, Ran, Regenerate, Wait
from .run_tree import RunParts, RunTree, new_run_id
from .subcalls import Subcalls

log = logging.getLogger("rlm_kernel")

__all__ = [
    "new_run_id",
    "RunTree",
    "RunParts",
    "Ran",
    "Regenerate",
    "Blocking",
    "Loop",
    "Wait",
    "Approve",
    "prepare",
    "drive",
    "adrive",
    "ask_root",
    "call_lm",
]

T = TypeVar("T")

Approve = Callable[[int, str], Awaitable["str | Regenerate"]]


def prepare(
    tree: RunTree,
    config: RLMConfig,
    context: Any,
    question: str | None,
    *,
    executor: Executor | None = None,
    parent_id: str | None = None,
    parent_call_id: str | None = None,
    run_id: str | None = None,
    branch: Branch | None = None,
    follows: Followup | None = None,
    session: str | None = None,
    sampling: dict[str, Any] | None = None,
) -> RunParts:
    """Build a run, bind the REPL names into its executor's namespace, and wire sub-calls. A
    ``branch`` continues a recorded run; its replayed steps' sub-calls are answered from it. A
    session's question goes on from the conversation ``follows`` holds. ``sampling`` is the
    root's own for every turn (a sampled root of a vote)."""
    run_id = run_id or new_run_id()
    executor = executor or LocalExecutor(tag=run_id)
    lm = tree.root_lm() if config.depth == 0 else tree.sub_lm()
    subcalling = config.profile != "no_subcalls"
    run = RLMRun(
        config,
        question=question,
        context_meta=context_metadata(context),
        model=lm.model_name,
        sub_model=tree.sub_lm().model_name if subcalling else "-",
        emit=tree.bus.emit,
        run_id=run_id,
        parent_id=parent_id,
        parent_call_id=parent_call_id,
        started=time.perf_counter(),
        redact=tree.redactor.text,
        branch=branch,
        window=lm.context_window,
        follows=follows,
        session=session,
        sandbox=executor.describe(),
    )
    subcalls = _subcalls(tree, config, run_id, parent_id, executor)
    if branch is not None:
        subcalls.recorded = branch.recorded()
    helpers = {
        **(Helpers(context, subcalls).bound() if config.profile == "small" else {}),
        **subcalls.repl_tools(),  # reserved like the helpers; with a kernel, they run here
    }
    executor.bind(context, subcalls if subcalling else None, helpers or None, stop_when=tree.stop)
    return RunParts(run, tree, executor, subcalls, lm, sampling=sampling)


def _subcalls(
    tree: RunTree, config: RLMConfig, run_id: str, parent_id: str | None, executor: Executor
) -> Subcalls:
    """The run's sub-calls: on the tree's pool and budget, with its child runs where it may recurse."""
    return Subcalls(
        pool=tree.pool,
        budget=tree.budget,
        emit=tree.bus.emit,
        lm_for=tree.sub_lm,
        run_id=run_id,
        parent_id=parent_id,
        depth=config.depth,
        spawn_child=_spawner(tree, config, run_id, executor) if config.can_recurse else None,
        redact=tree.redactor.text,
        tools=config.tools,
        sub_tools=config.sub_tools,
        max_tool_rounds=config.max_tool_rounds,
        oversize=config.oversize,
        models=tree.sub_models() if config.profile != "no_subcalls" else (),
    )


def _spawner(
    tree: RunTree, config: RLMConfig, parent_id: str, executor: Executor
) -> Callable[[str, Any, str], str]:
    def spawn(prompt: str, context: Any, call_id: str) -> str:
        child_context, question = (prompt, None) if context is None else (context, prompt)
        run_id = new_run_id()
        parts = prepare(
            tree,
            config.child(),
            child_context,
            question,
            executor=executor.child(run_id),
            parent_id=parent_id,
            parent_call_id=call_id,
            run_id=run_id,
        )
        try:
            finish = drive(parts)
        finally:
            parts.executor.close()
        if finish.response is None:
            raise RLMError(finish.error or "the child run ended without an answer")
        return finish.response

    return spawn


@dataclass(frozen=True)
class _Failed:
    """What a driver waited on failed: the error to throw into the loop."""

    error: RLMError


def _outcome(work: Callable[[], T]) -> T | _Failed:
    """``work()``'s value, or how it failed: the one place the drivers settle what they waited on."""
    try:
        return work()
    except RLMError as exc:
        return _Failed(exc)
    except Exception as exc:  # a bug of an executor's or a client's ends the run recorded, not lost
        log.exception("rlm_kernel: a run's step or LM call failed")
        return _Failed(RLMError(one_line(exc)))


def _answer(loop: Loop, value: Any) -> Wait | Finish:
    """Give the loop what came of its wait."""
    return loop.throw(value.error) if isinstance(value, _Failed) else loop.send(value)


def _waited_here(parts: RunParts, wait: Wait) -> Any:
    """What the blocking driver sends back for ``wait``, done in this thread."""
    if isinstance(wait, LM_CALLS):
        return parts.tree.pool.run(call_lm(parts, wait))
    if isinstance(wait, Blocking):
        return wait.call()
    return Ran(wait.code, parts.executor.execute(wait.code, step=wait.step))


def drive(parts: RunParts) -> Finish:
    """The blocking driver. Ctrl-C cancels every call in flight and keeps the partial run."""
    loop = Loop(parts)
    wait = loop.start()
    while not isinstance(wait, Finish):
        try:
            value = _outcome(functools.partial(_waited_here, parts, wait))
        except KeyboardInterrupt:
            parts.tree.cancel()
            wait = loop.throw(RunCancelled.interrupted())
        else:
            wait = _answer(loop, value)
    return wait


def _in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> asyncio.Future[T]:
    """``fn(*args, **kwargs)`` in a thread of its own, which ends with it; its result on the running
    loop. A step's thread is not one of the loop's default executor's: a stopped step leaves no
    thread behind in the caller's process, and a step blocked in C (which only its call's return
    ends) holds no worker of the caller's ``to_thread`` calls, nor the loop's shutdown."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # cancelled: the driver no longer waits for it
            return
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)

    def work() -> None:
        try:
            value, error = context.run(fn, *args, **kwargs), None
        except BaseException as exc:  # noqa: BLE001 - the thread hands whatever ended it to the awaiting driver, as to_thread does
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the caller's loop closed meanwhile
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name="rlm-step", daemon=True).start()
    return future


class _Awaiting:
    """The async driver's waits: each is a task of its own, so that what it raised comes back as
    its future's state and is settled like the blocking driver's (:func:`_outcome`)."""

    def __init__(self, parts: RunParts, approve: Approve | None) -> None:
        self.parts = parts
        self.approve = approve
        self.step: asyncio.Future[StepOutcome] | None = None  # the last step's code, in its thread

    async def done(self, wait: Wait) -> asyncio.Future[Any]:
        """``wait``'s task once it has ended. Cancelling the caller cancels it; a call the pool
        cancelled (the run was stopped) is a cancel of the caller's too."""
        task = asyncio.ensure_future(self._perform(wait))
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            raise
        if task.cancelled():
            raise asyncio.CancelledError()
        return task

    async def _perform(self, wait: Wait) -> Any:
        parts = self.parts
        if isinstance(wait, LM_CALLS):
            return await asyncio.wrap_future(parts.tree.pool.submit(call_lm(parts, wait), bounded=False))
        if isinstance(wait, Blocking):
            return await asyncio.to_thread(wait.call)
        approve = self.approve
        code = wait.code if approve is None or wait.replay else await approve(wait.step, wait.code)
        if isinstance(code, Regenerate):
            return code
        self.step = _in_thread(parts.executor.execute, code, step=wait.step)
        return Ran(code, await asyncio.shield(self.step))

    async def cancelled(self, loop: Loop) -> Wait | Finish:
        """The driver's task was cancelled, or the run stopped: every call in flight is cancelled,
        and the run ends with what it has."""
        tree = self.parts.tree
        stopped = tree.cancelled
        tree.pool.cancel_all()
        await asyncio.to_thread(tree.pool.drain)
        if self.step is not None and not self.step.done():
            # The executor ends a busy step at once; one blocked in C keeps its thread until the
            # call returns, and the run does not wait for it past a second.
            await asyncio.wait({self.step}, timeout=1.0)
        return loop.throw(RunCancelled() if stopped else RunCancelled.interrupted())


async def adrive(parts: RunParts, approve: Approve | None = None) -> Finish:
    """The async driver: LM calls are awaited, each step's code runs in a thread of its own and other
    blocking work in worker threads, so the caller's event loop never blocks. Cancelling the task
    cancels every call in flight and keeps the partial run.

    ``approve(step, code)``, if given, is awaited before each step and returns the code to run
    (a human's edit of it is recorded, and the root is told what changed), or ``Regenerate()`` to
    have the root propose the step again."""
    loop = Loop(parts, offload=True)
    awaiting = _Awaiting(parts, approve)
    wait = loop.start()
    while not isinstance(wait, Finish):
        try:
            value = _outcome((await awaiting.done(wait)).result)
        except asyncio.CancelledError:
            wait = await awaiting.cancelled(loop)
        else:
            wait = _answer(loop, value)
    return wait
