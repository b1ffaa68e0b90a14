"""The driver core: the root loop, written once, and the drivers that wait on it.

``RunTree`` owns what every run of one completion shares: the sub-call pool, the budget, the event
bus and the LM clients. :class:`Loop` is the root loop itself, a generator over the engine's
actions that does everything but wait: it checks the budget, records human edits, settles each step,
resolves FINAL, reopens the REPL's answer when the engine sends one back, and aborts with the drain.
It yields what must be waited for, an ``AskRoot`` (send back the ``Completion``), a ``Verify``
(send back the sub-model's reply; :func:`call_lm` makes both calls) or an ``Execute`` (send back a
:class:`Ran`); to stop the run, a driver throws an ``RLMError`` into it. The drivers differ only in
how they wait:

    drive      a thread: LM calls block on the pool, code runs here      (the Python API, children)
    adrive     a coroutine: LM calls are awaited, code runs in a thread  (``acompletion``, the magics)
               (its loop is made with ``offload``: blocking work is yielded as :class:`Blocking`)
    notebook   a cell that finishes when a human runs it                 (``jupyter/notebook.py``)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import queue
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from .budget import Budget
from .config import RLMConfig
from .engine import (
    LM_CALLS,
    Action,
    AskRoot,
    Compact,
    Execute,
    Finish,
    Followup,
    ResolveFinal,
    RLMRun,
    Verify,
)
from .errors import RLMError, RunCancelled, one_line
from .events import EventBus, RootToken
from .executors.base import Executor, StepOutcome
from .executors.local import LocalExecutor
from .helpers import Helpers
from .lm import make_lm
from .lm.base import Completion, LMClient, price_of
from .lm.replay import Recording, RecordingLM
from .prompts import context_metadata
from .rewind import Branch
from .runtime import Runtime, StopSignal, default_runtime
from .secrets import Redactor, secrets_of
from .subcalls import SubcallPool, Subcalls

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
    "prepare",
    "drive",
    "adrive",
    "ask_root",
    "call_lm",
]

T = TypeVar("T")

# What the loop runs when the engine sent an answer back: the root's code must set it again.
REOPEN = 'answer["ready"] = False\n'


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
        parent_call_id=parent_call_id,
        started=time.perf_counter(),
        redact=tree.redactor.text,
        branch=branch,
        window=lm.context_window,
        follows=follows,
        session=session,
        sandbox=executor.describe(),
    )
    subcalls = Subcalls(
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
    if branch is not None:
        subcalls.recorded = branch.recorded()
    helpers = {
        **(Helpers(context, subcalls).bound() if config.profile == "small" else {}),
        **subcalls.repl_tools(),  # reserved like the helpers; with a kernel, they run here
    }
    executor.bind(
        context,
        None if config.profile == "no_subcalls" else subcalls,
        helpers or None,
        stop_when=tree.stop,
    )
    return RunParts(run, tree, executor, subcalls, lm, sampling=sampling)


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


HELD_CHARS = 512  # a word longer than any key is let out whole at this length


class _Words:
    """The root's tokens as RootToken events, let out a word at a time: a provider streams a key as
    several tokens, none of them the key, and redaction (on the bus) sees only whole events."""

    def __init__(self, parts: RunParts, turn: int) -> None:
        self._parts, self._turn, self._held = parts, turn, ""

    def __call__(self, text: str) -> None:
        held = self._held + text
        cut = len(held)
        while cut and not held[cut - 1].isspace():
            cut -= 1
        if not cut and len(held) >= HELD_CHARS:
            cut = len(held)
        self._held = held[cut:]
        if cut:
            self._emit(held[:cut])

    def flush(self) -> None:
        """The last word, once the reply has ended (or failed)."""
        held, self._held = self._held, ""
        if held:
            self._emit(held)

    def _emit(self, text: str) -> None:
        run = self._parts.run
        self._parts.tree.bus.emit(
            RootToken(run_id=run.run_id, parent_id=run.parent_id, depth=run.depth, turn=self._turn, text=text)
        )


async def ask_root(parts: RunParts, action: AskRoot) -> Completion:
    """The root LM's reply to ``action``, streamed into RootToken events, within ``max_timeout``.
    Where the backend continues a reply, the action's ``prefill`` starts it, and is part of the reply
    returned."""
    on_token = _Words(parts, action.turn)
    messages, prefill, stop = action.messages, None, action.stop
    if action.prefill and parts.lm.continues_reply:
        prefill = action.prefill
        messages = [*messages, {"role": "assistant", "content": prefill}]
        stop = (action.closing, *stop) if action.closing else stop
        on_token(prefill)
    budget = parts.tree.budget
    # A regenerated proposal's sampling, else the run's own (a sampled root of a vote).
    sampling = action.sampling or parts.sampling
    sampled = {"sampling": sampling} if sampling else {}
    call = parts.lm.complete(
        messages, on_token=on_token, max_tokens=action.max_tokens, stop=stop or None, **sampled
    )
    try:
        completion = await asyncio.wait_for(call, budget.time_left())
    except asyncio.TimeoutError:
        raise budget.exceeded() or RunCancelled("max_timeout reached", stop="budget") from None
    finally:
        on_token.flush()
    return replace(completion, text=prefill + completion.text) if prefill else completion


async def verify(parts: RunParts, action: Verify) -> str:
    """The sub-model's verdict on the committed answer: a sub-call of the run like ``llm_query``'s
    (recorded, counted in usage and budget), within ``max_timeout``; "" when the call failed."""
    budget = parts.tree.budget
    try:
        return await asyncio.wait_for(
            parts.subcalls.verdict(action.prompt, action.max_tokens), budget.time_left()
        )
    except asyncio.TimeoutError:
        raise budget.exceeded() or RunCancelled("max_timeout reached", stop="budget") from None


async def summarise(parts: RunParts, action: Compact) -> str:
    """The root model's notes on its older turns: a sub-call of the run, within ``max_timeout``."""
    budget = parts.tree.budget
    try:
        return await asyncio.wait_for(
            parts.subcalls.summary(action.prompt, parts.lm, action.max_tokens), budget.time_left()
        )
    except asyncio.TimeoutError:
        raise budget.exceeded() or RunCancelled("max_timeout reached", stop="budget") from None


async def call_lm(parts: RunParts, action: AskRoot | Verify | Compact) -> Completion | str:
    """The LM call the loop waits on: the root's reply, the sub-model's verdict, or the root's notes."""
    if isinstance(action, Verify):
        return await verify(parts, action)
    if isinstance(action, Compact):
        return await summarise(parts, action)
    return await ask_root(parts, action)


@dataclass(frozen=True)
class Ran:
    """What a driver sends back for an ``Execute``: the code that ran (a human may have edited it)
    and its outcome."""

    code: str
    outcome: StepOutcome


@dataclass(frozen=True)
class Regenerate:
    """What a driver sends back for an ``Execute`` a human wants proposed again, instead of a
    :class:`Ran`."""


@dataclass(frozen=True)
class Blocking:
    """Work that blocks (reading FINAL's variable, clearing the answer, waiting for cancelled calls
    to end), handed to a driver that must not block: it calls ``call()`` off its event loop and
    sends back the return value. Only a :class:`Loop` made with ``offload=True`` yields these."""

    call: Callable[[], Any]


Wait = AskRoot | Verify | Compact | Execute | Blocking


class Loop:
    """The root loop of one run. ``start``, ``send`` and ``throw`` return the next thing to wait
    for, or the run's ``Finish``. The loop is the engine's only caller: hints queued on
    :class:`RunParts` from other threads reach the run here, between calls, and each call's time
    is read here (``clock``), never by the engine."""

    def __init__(
        self, parts: RunParts, *, offload: bool = False, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.parts = parts
        self.offload = offload
        self.clock = clock
        self.finish: Finish | None = None
        self.waiting: Execute | None = None  # the step the loop waits on, as it stands now
        self._steps = self._loop()

    def start(self) -> Wait | Finish:
        return self._advance(lambda: next(self._steps))

    def send(self, value: Completion | str | Ran | Regenerate | Any) -> Wait | Finish:
        return self._advance(lambda: self._steps.send(value))

    def throw(self, error: RLMError) -> Wait | Finish:
        """Stop the run where it waits (cancel, interrupt, a provider's error), keeping what it has."""
        return self._advance(lambda: self._steps.throw(error))

    def end(self, finish: Finish) -> Finish:
        """The run ended outside the loop."""
        self._steps.close()
        self.finish = self.finish or finish
        return self.finish

    def human_step(self, code: str, output: str, error: str | None, elapsed_s: float) -> Execute | None:
        """A cell of the human's own ran while the loop waits: a step of the run, which the root
        sees next turn (notebook mode).

        Steps are numbered in the order they ran. A step the root proposed that has not run yet
        (waiting for its cell, or being proposed again) ran after the human's cell: the human's
        cell takes its number and it takes the next. Returns the waiting step so numbered again,
        or None when no proposed step waits."""
        if self.finish is not None:
            return None
        self._boundary()
        run = self.parts.run
        waiting = self.waiting
        if waiting is not None and (waiting.replay or waiting.step != run.steps):
            waiting = None
        number = run.human_step(code, output, error, elapsed_s, waiting=waiting.code if waiting else None)
        if waiting is None:
            return None
        self.waiting = replace(waiting, step=number + 1)
        return self.waiting

    def human_answer(self, answer: Any) -> Finish:
        """A cell of the human's own set the answer: the run ends with it."""
        if self.finish is None:
            self._boundary()
            return self.end(self.parts.run.human_answer(answer))
        return self.finish

    def _advance(self, step: Callable[[], Wait]) -> Wait | Finish:
        if self.finish is not None:
            return self.finish
        try:
            return step()
        except StopIteration as stop:
            self.finish = stop.value
            return stop.value
        except Exception as exc:  # the loop itself failed (a bug): the run ends with what it had
            log.exception("rlm_kernel: the root loop failed")
            self._boundary()
            self.finish = self.parts.run.abort(_unexpected(exc))
            return self.finish

    def _boundary(self) -> None:
        """Before each call into the engine: the time now, and the hints that came meanwhile."""
        run, hints = self.parts.run, self.parts.hints
        run.now = self.clock()
        while not hints.empty() and not run.done:
            run.hint(hints.get_nowait())

    def _blocking(self, call: Callable[[], Any]) -> Generator[Wait, Any, Any]:
        """``call()``'s value: made here, or, with ``offload``, by the driver off its event loop."""
        if self.offload:
            return (yield Blocking(call))
        return call()

    def _loop(self) -> Generator[Wait, Any, Finish]:
        parts = self.parts
        run, tree = parts.run, parts.tree
        self._boundary()
        action: Action = run.start()
        while not isinstance(action, Finish):
            try:
                if tree.cancelled:
                    raise RunCancelled()
                tree.budget.check()
                if isinstance(action, AskRoot):
                    if action.reopen:
                        yield from self._blocking(self._reopen)
                    reply = yield action
                    self._boundary()
                    action = run.receive_reply(reply)
                elif isinstance(action, Verify):
                    verdict = yield action
                    self._boundary()
                    action = run.receive_verdict(verdict)
                elif isinstance(action, Compact):
                    summary = yield action
                    self._boundary()
                    action = run.receive_summary(summary)
                elif isinstance(action, Execute):
                    parts.subcalls.step, parts.subcalls.replaying = action.step, action.replay
                    self.waiting = action
                    ran: Ran | Regenerate = yield action
                    action, self.waiting = self.waiting, None  # numbered again if a human step came first
                    parts.subcalls.replaying = False
                    if tree.cancelled:
                        raise RunCancelled()
                    self._boundary()
                    if isinstance(ran, Regenerate):
                        if run.can_regenerate:
                            action = run.regenerate()
                        continue  # else the same step waits again
                    if ran.code.strip() != action.code.strip():
                        run.human_edit(action.step, action.code, ran.code)
                    o = ran.outcome
                    action = run.receive_execution(
                        o.result, answer_ready=o.answer_ready, answer=o.answer, restored=o.restored
                    )
                elif isinstance(action, ResolveFinal):
                    resolve = functools.partial(parts.executor.resolve, action.directive)
                    content, problem = yield from self._blocking(resolve)
                    self._boundary()
                    action = run.receive_final(content, problem)
            except RLMError as exc:
                self.waiting = None
                if run.depth == 0:  # let cancelled calls record their end before the run's
                    yield from self._blocking(tree.pool.drain)
                self._boundary()
                action = run.abort(exc)
        return action

    def _reopen(self) -> None:
        """The engine sent the answer back: ``answer["ready"]``, still set in the REPL, is cleared,
        so the root's next step ends the run only when it sets the answer again."""
        try:
            self.parts.executor.execute(REOPEN, step=0)
        except Exception:  # then the next step ends the run, as it would have without the check
            log.warning("rlm_kernel: clearing the answer after it was sent back failed", exc_info=True)


def drive(parts: RunParts) -> Finish:
    """The blocking driver. Ctrl-C cancels every call in flight and keeps the partial run."""
    loop = Loop(parts)
    wait = loop.start()
    while not isinstance(wait, Finish):
        try:
            if isinstance(wait, LM_CALLS):
                value: Any = parts.tree.pool.run(call_lm(parts, wait))
            elif isinstance(wait, Blocking):
                value = wait.call()
            else:
                value = Ran(wait.code, parts.executor.execute(wait.code, step=wait.step))
        except KeyboardInterrupt:
            parts.tree.cancel()
            wait = loop.throw(RunCancelled.interrupted())
        except RLMError as exc:
            wait = loop.throw(exc)
        except Exception as exc:  # an executor's or a client's failure: the run ends, recorded
            log.exception("rlm_kernel: a run's step or LM call failed")
            wait = loop.throw(_unexpected(exc))
        else:
            wait = loop.send(value)
    return wait


def _unexpected(exc: Exception) -> RLMError:
    return RLMError(one_line(exc))


Approve = Callable[[int, str], Awaitable["str | Regenerate"]]


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
        except BaseException as exc:  # the awaiting driver gets it, as from to_thread
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the caller's loop closed meanwhile
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name="rlm-step", daemon=True).start()
    return future


async def adrive(parts: RunParts, approve: Approve | None = None) -> Finish:
    """The async driver: LM calls are awaited, each step's code runs in a thread of its own and other
    blocking work in worker threads, so the caller's event loop never blocks. Cancelling the task
    cancels every call in flight and keeps the partial run.

    ``approve(step, code)``, if given, is awaited before each step and returns the code to run
    (a human's edit of it is recorded, and the root is told what changed), or ``Regenerate()`` to
    have the root propose the step again."""
    tree = parts.tree
    loop = Loop(parts, offload=True)
    wait = loop.start()
    step: asyncio.Future[StepOutcome] | None = None
    while not isinstance(wait, Finish):
        try:
            if isinstance(wait, LM_CALLS):
                future = asyncio.wrap_future(tree.pool.submit(call_lm(parts, wait), bounded=False))
                value: Any = await future
            elif isinstance(wait, Blocking):
                value = await asyncio.to_thread(wait.call)
            else:
                code = wait.code if approve is None or wait.replay else await approve(wait.step, wait.code)
                if isinstance(code, Regenerate):
                    wait = loop.send(code)
                    continue
                step = _in_thread(parts.executor.execute, code, step=wait.step)
                value = Ran(code, await asyncio.shield(step))
        except asyncio.CancelledError:
            stopped = tree.cancelled
            tree.pool.cancel_all()
            await asyncio.to_thread(tree.pool.drain)
            if step is not None and not step.done():
                # The executor ends a busy step at once; one blocked in C keeps its thread until the
                # call returns, and the run does not wait for it past a second.
                await asyncio.wait({step}, timeout=1.0)
            wait = loop.throw(RunCancelled() if stopped else RunCancelled.interrupted())
        except RLMError as exc:
            wait = loop.throw(exc)
        except Exception as exc:  # an executor's or a client's failure: the run ends, recorded
            log.exception("rlm_kernel: a run's step or LM call failed")
            wait = loop.throw(_unexpected(exc))
        else:
            wait = loop.send(value)
    return wait
