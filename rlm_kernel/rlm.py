"""The Python API: ``RLM(...).completion(context, root_prompt)``, with the reference ``rlms`` names."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .budget import Budget
from .config import RLMConfig, normalize
from .driver import Approve, RunParts, RunTree, adrive, drive, new_run_id, prepare
from .engine import Finish, Followup
from .errors import ConfigError, MissingAPIKey, RLMError
from .events import Event, EventBus, RootToken, RunStarted, RunWarning, Voted
from .executors import check_executor, make_executor
from .executors.base import Executor
from .lm import backend as backend_of
from .lm import make_lm
from .reference import KEYWORDS as REFERENCE_KEYWORDS
from .reference import Translated, UsageSummary, trajectory_of, translate
from .rewind import Branch, branch_at
from .runtime import Runtime
from .session import Session
from .trajectory import TrajectoryWriter, default_log_dir, load
from .typed import output_type
from .usage import Usage, summarize
from .votes import Vote, sampling_of, tally

__all__ = ["RLM", "RLMResult", "OpenRun"]

log = logging.getLogger("rlm_kernel")


@dataclass
class RLMResult:
    """What a run produced. ``error`` is set when it ended without a clean answer (the partial
    response, if any, is kept in ``response``). With ``output_type``, ``response`` is the typed
    value (the trajectory keeps its JSON); where it failed validation, the answer as committed."""

    response: Any
    error: str | None
    iterations: int
    usage: Usage
    trajectory: list[Event] = field(repr=False)
    log_path: Path | None
    execution_time: float
    run_id: str
    restored_names: list[str] = field(default_factory=list)  # the caller's own values put back
    warnings: list[str] = field(default_factory=list)  # what a reader should know: see RunWarning
    exception: RLMError | None = field(default=None, repr=False)  # what ended the run, if an error did
    metadata: dict[str, Any] | None = field(default=None, repr=False)  # the reference's, with a logger
    # Several roots answered and voted (``votes``): their count. The run above is the winner's;
    # ``usage`` is all the roots' together.
    votes: Vote | None = field(default=None, repr=False)

    def __str__(self) -> str:
        return str(self.response) if self.response is not None else f"(no answer: {self.error})"

    @property
    def ok(self) -> bool:
        """An answer, with no error, and, where roots voted, a clear vote (a split is a
        ``low_confidence`` warning: the answer is the plurality's, and may be wrong)."""
        clear = self.votes is None or self.votes.clear
        return self.error is None and self.response is not None and clear

    def raise_for_error(self) -> RLMResult:
        """Raise what ended the run (``BudgetExceededError``, ``TimeoutExceededError``, ...: the
        reference's names), carrying the partial response as ``partial_answer``; else the result."""
        if self.exception is not None:
            self.exception.partial_answer = self.response
            raise self.exception
        if self.error is not None:
            raise RLMError(self.error)
        return self

    # The reference's names for the same figures.
    @property
    def usage_summary(self) -> UsageSummary:
        """Usage by model, as the reference gives it (``model_usage_summaries``)."""
        return UsageSummary.of(self.usage)

    @property
    def root_model(self) -> str:
        return next((e.model for e in self.trajectory if isinstance(e, RunStarted)), "unknown")


class RLM:
    """A Recursive Language Model: the context stays in a REPL, the root LM works on it with code.

    >>> rlm = RLM(backend="openai", backend_kwargs={"model_name": "gpt-5-mini"})   # doctest: +SKIP
    >>> rlm.completion(long_text, root_prompt="Who signed the contract?").response  # doctest: +SKIP
    """

    runtime: Runtime | None = None  # the process's shared runtime unless one is given

    def __init__(
        self,
        backend: str = "openai",
        backend_kwargs: dict[str, Any] | None = None,
        sub_backend: str | None = None,
        sub_backend_kwargs: dict[str, Any] | None = None,
        *,
        runtime: Runtime | None = None,
        **settings: Any,
    ) -> None:
        """``settings`` are :class:`~rlm_kernel.config.RLMConfig`'s fields (``max_iterations``,
        ``max_budget``, ``prompt_profile``, ``model_name``, ``log_dir``, ...): listed once, there.
        The reference ``rlms`` package's keywords are taken too (``environment``, ``verbose``,
        ``logger``, ``custom_tools``, ...: :mod:`rlm_kernel.reference`). ``runtime`` is the
        :class:`~rlm_kernel.runtime.Runtime` whose loop and watchdog the runs use; by default the
        process's shared one."""
        self.runtime = runtime
        settings = dict(settings)
        ref = translate(backend, backend_kwargs, settings)  # takes the reference's keywords out
        settings = normalize(settings, known=REFERENCE_KEYWORDS)  # those only name the closest
        own = {"sub_backend": sub_backend, "sub_backend_kwargs": sub_backend_kwargs}
        for name, value in ref.settings.items():
            if name in settings or own.get(name) is not None:
                raise ConfigError(f"RLM: {name!r} is given twice, by its name and by a reference keyword.")
            settings[name] = value
        backend_kwargs = settings.pop("backend_kwargs", backend_kwargs)
        sub_backend = settings.pop("sub_backend", sub_backend)
        sub_backend_kwargs = settings.pop("sub_backend_kwargs", sub_backend_kwargs)
        self._reference = ref
        if settings.get("log_dir") is True:
            settings["log_dir"] = None
        self._setup(
            RLMConfig(
                backend=backend,
                backend_kwargs=dict(backend_kwargs or {}),
                sub_backend=sub_backend,
                sub_backend_kwargs=None if sub_backend_kwargs is None else dict(sub_backend_kwargs),
                **settings,
            )
        )

    @classmethod
    def from_config(cls, config: RLMConfig) -> RLM:
        """An RLM with these settings (an eval's, a front end's): nothing copied by hand."""
        rlm = cls.__new__(cls)
        rlm._reference = Translated()
        rlm._setup(config)
        return rlm

    def _setup(self, config: RLMConfig) -> None:
        self.config = config
        # A missing key fails now, in one line, for the sub-calls' provider as for the root's.
        for role in ("root", "sub"):
            backend, kwargs, model = config.lm_kwargs(role)
            shared = role == "sub" and backend == config.backend and config.sub_backend_kwargs is None
            if not backend_of(backend).needs_key or shared:
                continue
            try:
                make_lm(backend, kwargs, model=model)
            except MissingAPIKey as exc:
                if role == "root":
                    raise
                raise ConfigError(str(exc).replace("backend_kwargs", "sub_backend_kwargs")) from None
        check_executor(self.config.executor, self.config.executor_kwargs)
        if self._reference.variables and config.executor != "local":
            raise ConfigError(
                f"custom_tools {sorted(self._reference.variables)} are values, not functions: put them in "
                "the context, or run with executor='local'."
            )
        self._active_runs: list[RunParts] = []  # the roots of a vote, or the one run
        self._session: Session | None = None  # persistent=True's
        self._lock = threading.Lock()

    # -- running -------------------------------------------------------------------------
    def open(
        self,
        context: Any,
        root_prompt: str | None = None,
        *,
        namespace: MutableMapping[str, Any] | None = None,
        executor: Executor | None = None,
        subscribers: tuple[Callable[[Event], None], ...] = (),
        branch: Branch | None = None,
        follows: Followup | None = None,
        session: str | None = None,
    ) -> OpenRun:
        """Prepare a run for a driver of your own (the notebook driver uses this); ``close`` it after.
        ``follows`` and ``session``: a question of a session (:meth:`session`). One root: votes
        are :meth:`completion`'s."""
        return self._open(
            context,
            root_prompt,
            namespace=namespace,
            executor=executor,
            subscribers=subscribers,
            branch=branch,
            follows=follows,
            session=session,
        )

    def _open(
        self,
        context: Any,
        root_prompt: str | None = None,
        *,
        namespace: MutableMapping[str, Any] | None = None,
        executor: Executor | None = None,
        subscribers: Sequence[Callable[[Event], None]] = (),
        branch: Branch | None = None,
        follows: Followup | None = None,
        session: str | None = None,
        config: RLMConfig | None = None,
        budget: Budget | None = None,
        sampling: dict[str, Any] | None = None,
        primary: bool = True,
    ) -> OpenRun:
        """:meth:`open`, and for a root of a vote: its ``config`` (the server's slots), the vote's
        shared ``budget``, the root's ``sampling``; ``primary`` is the greedy root, which the
        reference's own subscribers (``verbose``, ``logger``) follow."""
        config = config or self.config
        if branch is not None and root_prompt is None:
            root_prompt = branch.question
        bus = EventBus()
        events: list[Event] = []
        bus.subscribe(lambda e: None if isinstance(e, RootToken) else events.append(e))
        run_id = new_run_id()
        writer = None
        if config.log_dir is not False:
            writer = TrajectoryWriter.in_dir(config.log_dir or default_log_dir(), run_id)
            bus.subscribe(writer)
        for fn in (*(self._reference.subscribers if primary else ()), *subscribers):
            bus.subscribe(fn)
        if executor is None:
            namespace = self._with_variables(namespace)
        tree = RunTree(config, bus, self.runtime, budget=budget)
        try:
            if executor is None:
                c = config
                executor = make_executor(
                    c.executor, c.executor_kwargs, tag=run_id, namespace=namespace, runtime=self.runtime
                )
            parts = prepare(
                tree,
                config,
                context,
                root_prompt,
                executor=executor,
                run_id=run_id,
                branch=branch,
                follows=follows,
                session=session,
                sampling=sampling,
            )
        except BaseException:
            if executor is not None and session is None:  # a session's REPL outlives one question
                executor.close()
            tree.close()
            if writer:
                writer.close()
            raise
        with self._lock:
            self._active_runs.append(parts)
        return OpenRun(self, parts, events, writer, bus)

    def _with_variables(self, namespace: MutableMapping[str, Any] | None) -> MutableMapping[str, Any] | None:
        """``namespace`` with the reference's ``custom_tools`` that are values, not functions."""
        if not self._reference.variables:
            return namespace
        namespace = {} if namespace is None else namespace
        for name, value in self._reference.variables.items():
            namespace.setdefault(name, value)
        return namespace

    @property
    def _active_run(self) -> RunParts | None:
        """The run a front end steers: the one run, or a vote's greedy root."""
        with self._lock:
            return self._active_runs[0] if self._active_runs else None

    def _closed(self, parts: RunParts) -> None:
        with self._lock:
            if parts in self._active_runs:
                self._active_runs.remove(parts)

    def completion(
        self,
        context: Any,
        root_prompt: str | None = None,
        *,
        namespace: MutableMapping[str, Any] | None = None,
        executor: Executor | None = None,
        subscribers: tuple[Callable[[Event], None], ...] = (),
        branch: Branch | None = None,
    ) -> RLMResult:
        """Run the RLM over ``context`` (any Python object, held by reference) to answer ``root_prompt``.

        ``namespace`` lets the root's code run in a dict of yours (the variables it makes stay
        there); ``subscribers`` receive every event as it happens. ``branch`` continues a recorded
        run from one of its steps instead of starting anew: see :meth:`continue_from`.
        """
        if self._reference.persistent and branch is None:  # the reference's persistent=True
            if self._session is None:
                self._session = self.session(context, namespace=namespace, subscribers=subscribers)
            return self._session.ask(root_prompt, context=context)
        if executor is None and branch is None and self.config.vote_count > 1:
            return self._vote(context, root_prompt, namespace, subscribers)
        run = self.open(
            context,
            root_prompt,
            namespace=namespace,
            executor=executor,
            subscribers=subscribers,
            branch=branch,
        )
        return run.close(drive(run.parts))

    def session(
        self,
        context: Any,
        *,
        namespace: MutableMapping[str, Any] | None = None,
        subscribers: tuple[Callable[[Event], None], ...] = (),
    ) -> Session:
        """Questions over ``context`` that share one REPL and one conversation: ``ask`` each in
        turn, then ``close`` (or use it in a ``with``)."""
        return Session(self, context, namespace=namespace, subscribers=subscribers)

    def close(self) -> None:
        """End the session that ``persistent=True`` keeps, if any."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def __enter__(self) -> RLM:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def acompletion(
        self,
        context: Any,
        root_prompt: str | None = None,
        *,
        namespace: MutableMapping[str, Any] | None = None,
        subscribers: tuple[Callable[[Event], None], ...] = (),
        approve: Approve | None = None,
        branch: Branch | None = None,
    ) -> RLMResult:
        """The async twin of :meth:`completion`: LM calls are awaited and code runs in a worker thread.

        ``approve(step, code)`` is awaited before each step and returns the code to run (step mode)."""
        if self._reference.persistent and branch is None:  # one session, as completion() keeps it
            if self._session is None:
                self._session = self.session(context, namespace=namespace, subscribers=subscribers)
            return await self._session.aask(root_prompt, context=context, approve=approve)
        if approve is None and branch is None and self.config.vote_count > 1:  # no human in the loop
            return await self._avote(context, root_prompt, namespace, subscribers)
        run = self.open(context, root_prompt, namespace=namespace, subscribers=subscribers, branch=branch)
        return run.close(await adrive(run.parts, approve))

    def continue_from(
        self,
        recorded: RLMResult | Iterable[Event] | str | Path,
        step: int,
        context: Any,
        *,
        run_id: str | None = None,
        **kwargs: Any,
    ) -> RLMResult:
        """Rewind: a new run that has the root propose ``step`` of a recorded run again.

        ``recorded`` is that run's result, its events, or its trajectory file; ``context`` is the
        context it ran on. The steps before ``step`` run again in a fresh REPL, their sub-calls
        answered from the recording, and the conversation is the recorded one up to the turn that
        proposed ``step``. The result's trajectory names the run it continues (``parent_run``)
        and the step (``branched_at``). ``kwargs`` are :meth:`completion`'s."""
        if isinstance(recorded, RLMResult):
            events: Iterable[Event] = recorded.trajectory
        elif isinstance(recorded, (str, Path)):
            events = load(recorded)
        else:
            events = recorded
        return self.completion(context, branch=branch_at(events, step, run_id), **kwargs)

    # -- several roots that vote -------------------------------------------------------------
    def _open_roots(
        self,
        context: Any,
        root_prompt: str | None,
        namespace: MutableMapping[str, Any] | None,
        subscribers: Sequence[Callable[[Event], None]],
    ) -> list[OpenRun]:
        """The roots of a vote, ready to drive: the greedy one first, in ``namespace`` and followed
        by ``subscribers``; the others sampled, each in a REPL of its own. They share one budget and,
        on the local backend, the machine's one server (batched when it has slots for them)."""
        config, k = self.config, self.config.vote_count
        budget = Budget(config.max_budget, config.max_tokens, config.max_timeout)
        roots: list[OpenRun] = []
        try:
            for index in range(k):
                primary = index == 0
                roots.append(
                    self._open(
                        context,
                        root_prompt,
                        namespace=namespace if primary else None,
                        subscribers=subscribers if primary else (),
                        config=config,
                        budget=budget,
                        sampling=sampling_of(index),
                        primary=primary,
                    )
                )
        except BaseException:
            for root in roots:
                root.abandon()
            raise
        return roots

    def _vote(
        self,
        context: Any,
        root_prompt: str | None,
        namespace: MutableMapping[str, Any] | None,
        subscribers: Sequence[Callable[[Event], None]],
    ) -> RLMResult:
        """``completion`` by several roots at once, each driven in a thread of its own; this one
        waits for them, and hears Ctrl-C."""
        roots = self._open_roots(context, root_prompt, namespace, subscribers)
        finishes: list[Finish | None] = [None] * len(roots)
        ended: queue.SimpleQueue[int] = queue.SimpleQueue()

        def work(index: int) -> None:
            try:
                finishes[index] = drive(roots[index].parts)
            finally:
                ended.put(index)

        threads = [
            threading.Thread(target=work, args=(i,), name=f"rlm-root-{i}", daemon=True)
            for i in range(len(roots))
        ]
        for thread in threads:
            thread.start()
        cut: set[int] = set()
        interrupted = False
        try:
            waiting = len(roots)
            while waiting:
                try:
                    ended.get(timeout=0.5)  # a timeout, so that Ctrl-C is heard at once
                except queue.Empty:
                    continue
                waiting -= 1
                cut |= self._cut_decided(roots, finishes, cut)
        except KeyboardInterrupt:
            interrupted = True
            for root in roots:
                root.parts.tree.cancel()
        for thread in threads:
            thread.join()
        return self._count(roots, finishes, subscribers, stopped=interrupted or self._stopped(roots, cut))

    async def _avote(
        self,
        context: Any,
        root_prompt: str | None,
        namespace: MutableMapping[str, Any] | None,
        subscribers: Sequence[Callable[[Event], None]],
    ) -> RLMResult:
        """``acompletion`` by several roots at once, on this event loop. Cancelling the task
        cancels every root and keeps the partial run, as with one root."""
        roots = self._open_roots(context, root_prompt, namespace, subscribers)
        tasks = [asyncio.ensure_future(adrive(root.parts)) for root in roots]
        finishes: list[Finish | None] = [None] * len(roots)
        cut: set[int] = set()
        cancelled = False
        try:
            pending = set(tasks)
            while pending:
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                finishes = [_finish_of(task) for task in tasks]
                cut |= self._cut_decided(roots, finishes, cut)
        except asyncio.CancelledError:
            cancelled = True
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)  # each ends with its partial run
        finishes = [_finish_of(task) for task in tasks]
        return self._count(roots, finishes, subscribers, stopped=cancelled or self._stopped(roots, cut))

    def _cut_decided(self, roots: list[OpenRun], finishes: list[Finish | None], cut: set[int]) -> set[int]:
        """Once more than half of the roots gave one answer, the others cannot change the vote:
        those still running are stopped (they vote for none). The roots stopped so."""
        if cut:
            return set()
        typed = self.config.output_type is not None
        if not tally([f.response if f and not f.error else None for f in finishes], typed=typed).clear:
            return set()
        running = {i for i, f in enumerate(finishes) if f is None}
        for index in running:
            roots[index].parts.tree.cancel()
        return running

    @staticmethod
    def _stopped(roots: list[OpenRun], cut: set[int]) -> bool:
        """Whether a human stopped the vote (``cancel()``, Stop), not the count."""
        return any(root.parts.tree.cancelled for i, root in enumerate(roots) if i not in cut)

    def _count(
        self,
        roots: list[OpenRun],
        finishes: list[Finish | None],
        subscribers: Sequence[Callable[[Event], None]],
        *,
        stopped: bool,
    ) -> RLMResult:
        """The roots' vote, recorded in the winner's trajectory after its end, and the result:
        the winner's run, with every root's usage. A root with no clean answer votes for none;
        a vote a human stopped is not counted (the greedy root's partial run is the result)."""
        ended = [f or Finish(None, "the root's driver failed", stop="error") for f in finishes]
        typed = self.config.output_type is not None
        vote = tally([None if f.error else f.response for f in ended], typed=typed)
        winner = 0 if stopped else vote.winner
        if not stopped:
            self._record_vote(roots, ended, vote, subscribers)
        results = [root.close(finish) for root, finish in zip(roots, ended, strict=True)]
        result = results[winner]
        result.usage = summarize(e for r in results for e in r.trajectory)
        result.execution_time = max(r.execution_time for r in results)
        result.restored_names = results[0].restored_names  # the greedy root ran in the caller's names
        result.votes = None if stopped else vote
        return result

    def _record_vote(
        self,
        roots: list[OpenRun],
        ended: list[Finish],
        vote: Vote,
        subscribers: Sequence[Callable[[Event], None]],
    ) -> None:
        """The ``voted`` event (and a ``low_confidence`` warning on a split) on the winner's bus,
        so its trajectory holds them; views that followed the greedy root are first shown the
        winner's run when another root won."""
        won = roots[vote.winner]
        if vote.winner != 0 and subscribers:
            shown = EventBus()
            for fn in subscribers:
                shown.subscribe(fn)
            for event in list(won.events):
                shown.emit(event)
            for fn in subscribers:
                won.bus.subscribe(fn)
        run = won.parts.run
        usage = summarize(e for root in roots for e in root.events)
        won.bus.emit(
            Voted(
                run_id=run.run_id,
                answer=ended[vote.winner].response,
                clear=vote.clear,
                runs=[root.parts.run.run_id for root in roots],
                candidates=vote.counts(),
                input_tokens=usage.total.input_tokens,
                output_tokens=usage.total.output_tokens,
                cost=usage.total.cost,
            )
        )
        if not vote.clear:
            won.bus.emit(RunWarning(run_id=run.run_id, code="low_confidence", text=vote.text()))

    # -- steering a run from another thread -------------------------------------------------
    def cancel(self) -> None:
        """Stop the active run (every root of a vote): every call in flight is cancelled; the
        partial result is returned."""
        with self._lock:
            active = list(self._active_runs)
        for parts in active:
            parts.tree.cancel()

    def hint(self, text: str) -> None:
        """Add guidance to the root's next turn of the active run (of every root of a vote)."""
        with self._lock:
            active = list(self._active_runs)
        for parts in active:
            if not parts.run.done:
                parts.hint(text)  # queued: the run's loop gives it to the engine between its calls


class OpenRun:
    """A prepared run: its parts for a driver, and ``close(finish)`` to release them and get the result."""

    def __init__(
        self,
        rlm: RLM,
        parts: RunParts,
        events: list[Event],
        writer: TrajectoryWriter | None,
        bus: EventBus | None = None,
    ) -> None:
        self.rlm = rlm
        self.parts = parts
        self.events = events
        self.writer = writer
        self.bus = bus or parts.tree.bus
        self.started = time.perf_counter()

    def abandon(self) -> None:
        """Release a run that was never driven (another root of its vote failed to open)."""
        self.rlm._closed(self.parts)
        try:
            self.parts.executor.close()
        finally:
            self.parts.tree.close()
            if self.writer:
                self.writer.close()

    def close(self, finish: Finish, *, keep_executor: bool = False) -> RLMResult:
        """The result; the executor is closed unless ``keep_executor`` (a session's next question)."""
        self.rlm._closed(self.parts)
        restored: list[str] = []
        try:
            if not keep_executor:
                restored = self.parts.executor.close()
        except Exception:  # a kernel that will not shut down cleanly must not cost the result
            log.warning("rlm_kernel: closing the executor failed", exc_info=True)
        self.parts.tree.close()
        error, response = finish.error, finish.response
        declared = output_type(self.rlm.config.output_type)
        if declared is not None and response is not None and error is None:
            response = declared.load(response)
        if self.writer:
            self.writer.close()
            if self.writer.error:  # the answer stands; the record of it is incomplete
                error = f"{error}; {self.writer.error}" if error else self.writer.error
        return RLMResult(
            response=response,
            error=error,
            iterations=self.parts.run.iterations,
            usage=summarize(self.events),
            trajectory=self.events,
            log_path=self.writer.path if self.writer else None,
            execution_time=time.perf_counter() - self.started,
            run_id=self.parts.run.run_id,
            restored_names=restored,
            warnings=[e.text for e in self.events if isinstance(e, RunWarning) and e.depth == 0],
            exception=finish.cause,
            metadata=trajectory_of(self.events) if self.rlm._reference.logger is not None else None,
        )


def _finish_of(task: asyncio.Future[Finish]) -> Finish | None:
    """A root's end, once its task is done and did not fail."""
    if not task.done() or task.cancelled() or task.exception() is not None:
        return None
    return task.result()


def _signature() -> inspect.Signature:
    """``RLM(...)``'s signature as ``help()`` and editors show it, built from RLMConfig's fields."""
    own = list(inspect.signature(RLM.__init__).parameters.values())[:6]
    own_names = {p.name for p in own}
    fields = [f for f in dataclasses.fields(RLMConfig) if f.name not in own_names | {"depth"}]
    keyword = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=f.default if f.default is not dataclasses.MISSING else None,
            annotation=f.type,
        )
        for f in fields
    ]
    return inspect.Signature([*own, *keyword], return_annotation=None)


RLM.__init__.__signature__ = _signature()  # type: ignore[attr-defined]
