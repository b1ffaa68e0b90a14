"""The Python API: ``RLM(...).completion(context, root_prompt)``, with the reference ``rlms`` names."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import threading
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from .budget import Budget
from .config import RLMConfig, normalize
from .driver import Approve, RunParts, RunTree, adrive, drive, new_run_id, prepare
from .engine import Followup
from .errors import ConfigError, MissingAPIKey
from .events import Event, EventBus, RootToken
from .executors import check_executor, make_executor
from .executors.base import Executor
from .lm import backend as backend_of
from .lm import make_lm
from .reference import KEYWORDS as REFERENCE_KEYWORDS
from .reference import Translated, translate
from .rewind import Branch, branch_at
from .run_result import OpenRun, RLMResult
from .runtime import Runtime
from .session import Session
from .trajectory import TrajectoryWriter, default_log_dir, load
from .votes import sampling_of
from .voting import avote, vote

__all__ = ["RLM", "RLMResult", "OpenRun"]


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
        with contextlib.ExitStack() as undo:  # what was made is undone on any failure, Ctrl-C included
            writer = None
            if config.log_dir is not False:
                writer = TrajectoryWriter.in_dir(config.log_dir or default_log_dir(), run_id)
                undo.callback(writer.close)
                bus.subscribe(writer)
            for fn in (*(self._reference.subscribers if primary else ()), *subscribers):
                bus.subscribe(fn)
            tree = RunTree(config, bus, self.runtime, budget=budget)
            undo.callback(tree.close)
            if executor is None:
                namespace = self._with_variables(namespace)
                c = config
                executor = make_executor(
                    c.executor, c.executor_kwargs, tag=run_id, namespace=namespace, runtime=self.runtime
                )
            if session is None:  # a session's REPL outlives one question
                undo.callback(executor.close)
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
            undo.pop_all()
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
            roots = self._open_roots(context, root_prompt, namespace, subscribers)
            return vote(roots, subscribers, typed=self.config.output_type is not None)
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
            roots = self._open_roots(context, root_prompt, namespace, subscribers)
            return await avote(roots, subscribers, typed=self.config.output_type is not None)
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
        with contextlib.ExitStack() as undo:  # one that fails to open releases those opened before it
            for index in range(k):
                primary = index == 0
                root = self._open(
                    context,
                    root_prompt,
                    namespace=namespace if primary else None,
                    subscribers=subscribers if primary else (),
                    config=config,
                    budget=budget,
                    sampling=sampling_of(index),
                    primary=primary,
                )
                undo.callback(root.abandon)
                roots.append(root)
            undo.pop_all()
        return roots

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
