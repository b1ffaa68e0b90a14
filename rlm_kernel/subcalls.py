"""Sub-calls: the ``llm_query`` family of one run, on the host, for every executor.

The functions the code calls are declared in :mod:`rlm_kernel.subcall_api`; here they are made:
each call is a coroutine on the run tree's :class:`~rlm_kernel.subcall_pool.SubcallPool`, recorded
as ``SubcallStarted`` / ``SubcallFinished`` events and charged to the tree's budget. A call that
fails returns a :class:`~rlm_kernel.subcall_api.SubcallError` in its reply's place (a prompt over
the window is :mod:`rlm_kernel.oversize`'s; tools are :mod:`rlm_kernel.subcall_tools`'s).

They are also the host's boundary with the code, for every executor (a kernel's calls reach them
through the bridge):

- what they hand back is redacted: replies, error texts, a child run's answer, tool results and
  the exceptions raised in the code (:mod:`rlm_kernel.code_boundary`);
- the code may name only the run's models (``llm_query(p, model=...)``): the sub-model, the root
  model and those of the ``sub_models`` setting. Any other name is a ValueError in the code, and
  no request; the host keeps nothing for it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import hashlib
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .budget import Budget
from .code_boundary import CodeBoundary, to_the_code
from .errors import ConfigError, RLMError, SubcallTooLarge
from .events import Event, RunWarning, SubcallFinished, SubcallStarted
from .foreign import settled
from .images import Image, load_images
from .lm.base import Completion, LMClient, Message, SeesImages
from .lm.replay import RecordingLM, request_key
from .oversize import OVERSIZE, fits, joined, planned, split_note
from .rewind import RecordedReplies
from .subcall_api import ERROR_PREFIX, SubcallError, batch_images, declared, prompt_list
from .subcall_pool import SubcallPool
from .subcall_tools import ToolCalls
from .tools import Tool

__all__ = [
    "SubcallPool",
    "Subcalls",
    "SubcallError",
    "ERROR_PREFIX",
    "OVERSIZE",
    "prompt_list",
    "images_for",
    "batch_images",
]

T = TypeVar("T")
_ids = itertools.count(1)
SpawnChild = Callable[[str, Any, str], str]


def images_for(images: Any, lm: LMClient) -> list[Image]:
    """A call's images, loaded, for a model that takes them: a model that does not is a ValueError
    raised in the code before anything is sent (as is an image that cannot be read)."""
    loaded = load_images(images)
    if not loaded:
        return loaded
    inner = lm
    while isinstance(inner, RecordingLM):  # the recorded client is the one that sees
        inner = inner.inner
    if not (isinstance(inner, SeesImages) and inner.sees_images()):
        raise ValueError(
            f"{lm.model_name} does not take images: ask a vision model (llm_query(..., model='gpt-4o'), "
            "with the run's sub_models=['gpt-4o']), or, if this one does take them, say so with "
            "backend_kwargs={'vision': True} (sub_backend_kwargs for sub-calls)"
        )
    return loaded


class Subcalls:
    """The ``llm_query`` family for one run: where calls go and how they are recorded."""

    def __init__(
        self,
        *,
        pool: SubcallPool,
        budget: Budget,
        emit: Callable[[Event], None],
        lm_for: Callable[[str | None], LMClient],
        run_id: str,
        parent_id: str | None,
        depth: int,
        spawn_child: SpawnChild | None = None,
        redact: Callable[[str], str] = str,
        tools: Mapping[str, Tool] | None = None,
        sub_tools: Sequence[Tool] = (),
        max_tool_rounds: int = 8,
        oversize: str = "error",
        models: Sequence[str] | None = None,
    ) -> None:
        """``models``: the names the code may give ``model=``, the sub-model's first (None: any)."""
        if oversize not in OVERSIZE:
            raise ConfigError(f"Unknown oversize {oversize!r}: choose one of {', '.join(OVERSIZE)}.")
        self.oversize = oversize
        self.redact = redact  # a secret the code puts in a prompt goes to no sub-model
        self.boundary = CodeBoundary(redact)
        self.pool = pool
        self.budget = budget
        self.emit = emit
        self.lm_for = lm_for
        self.models = None if models is None else tuple(dict.fromkeys(models))
        self.run_id = run_id
        self.parent_id = parent_id
        self.depth = depth
        self.spawn_child = spawn_child
        self.step: int | None = None
        # A branch's replay of the steps it inherits: their sub-calls are answered from the run it
        # continues, so nothing is paid twice. Set by the loop while a replayed step runs.
        self.recorded: RecordedReplies | None = None
        self.replaying = False
        self.tool_calls = ToolCalls(
            tools=tools or {},
            sub_tools=sub_tools,
            max_tool_rounds=max_tool_rounds,
            emit=emit,
            ids=self._ids(),
            redact=redact,
        )

    def _ids(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "parent_id": self.parent_id, "depth": self.depth}

    # -- one call ------------------------------------------------------------------------
    async def _call(
        self,
        prompt: Any,
        lm: LMClient,
        batch_id: str | None,
        batch_size: int,
        max_tokens: int | None = None,
        *,
        tools: bool = True,
        index: int | None = None,
        raise_too_large: bool = False,
        images: Sequence[Image] = (),
    ) -> str:
        """One sub-call. ``prompt`` is the text of one user turn, or (for helpers) whole messages;
        ``images`` go after the text of that turn. A prompt over the window is not sent: its
        :class:`SubcallTooLarge` is raised where ``raise_too_large`` (``llm_query``'s, to be raised
        in the code), else it is the :class:`SubcallError` returned, as is any other failure."""
        messages = self._messages(prompt, images)
        call_id = f"c{next(_ids)}"
        step = self.step
        key = _key(messages, images)
        self.emit(
            SubcallStarted(
                **self._ids(),
                call_id=call_id,
                step=step,
                model=lm.model_name,
                prompt_preview=messages[-1]["content"][:200],
                prompt_chars=len("\n".join(m["content"] for m in messages)),
                batch_id=batch_id,
                batch_size=batch_size,
                prompt_key=key,
                images=[image.record() for image in images],
            )
        )
        started = time.perf_counter()
        finished = {"call_id": call_id, "step": step, "model": lm.model_name, "batch_id": batch_id}
        if (recorded := self._recorded(step, key)) is not None:
            self.emit(SubcallFinished(**self._ids(), **finished, **_replayed(recorded)))
            return recorded
        try:
            asked = self._asked(lm, messages, max_tokens, call_id, step, index, tools=tools)
            completion, failed = await settled(asked)  # a model's client may raise anything
        except asyncio.CancelledError:
            self._ended(finished, started, error="cancelled", cancelled=True)
            raise
        if completion is None or not completion.text.strip():
            error = (
                SubcallError.failed(failed, call_id)
                if failed is not None
                else SubcallError("llm_query", "empty_reply", f"{lm.model_name} gave an empty reply", call_id)
            )
            self._ended(finished, started, error=error.message)
            if raise_too_large and isinstance(failed, SubcallTooLarge):
                raise failed
            return error
        self._answered(finished, started, completion)
        return completion.text

    def _messages(self, prompt: Any, images: Sequence[Image]) -> list[Message]:
        """The request of a prompt (one user turn, or whole messages), redacted, with its images."""
        messages: list[Message] = [
            {**m, "content": self.redact(str(m["content"]))}  # type: ignore[typeddict-item]
            for m in (prompt if isinstance(prompt, list) else [{"role": "user", "content": str(prompt)}])
        ]
        if images:
            messages[-1] = {**messages[-1], "images": list(images)}
        return messages

    async def _asked(
        self,
        lm: LMClient,
        messages: list[Message],
        max_tokens: int | None,
        call_id: str,
        step: int | None,
        index: int | None,
        *,
        tools: bool,
    ) -> Completion:
        """The request sent, with the sub-tools where the run has them (unless ``tools`` is False)."""
        self.budget.check()
        if self.tool_calls.sub_tools and tools:
            return await self.tool_calls.rounds(lm, messages, max_tokens, call_id, step, index)
        await fits(lm, messages, max_tokens, index)
        return await lm.complete(messages, max_tokens=max_tokens)

    def _ended(self, finished: dict[str, Any], started: float, **fields: Any) -> None:
        """A call that got no reply (failed, never sent, or cancelled): its end, at no cost."""
        self.emit(
            SubcallFinished(
                **self._ids(), **finished, latency_s=time.perf_counter() - started, cost=0.0, **fields
            )
        )

    def _answered(self, finished: dict[str, Any], started: float, completion: Completion) -> None:
        self.emit(
            SubcallFinished(
                **self._ids(),
                **finished,
                input_tokens=completion.input_tokens,
                output_tokens=completion.output_tokens,
                cached_tokens=completion.cached_tokens,
                latency_s=completion.latency_s or time.perf_counter() - started,
                cost=completion.cost,
                response_preview=completion.text[:200],
                response=completion.text,
            )
        )

    def _recorded(self, step: int | None, key: str) -> str | None:
        """The reply the run this one continues got for the same request in the same step, while
        a replayed step runs; ``None`` for a request the recording lacks (it is asked again)."""
        if not self.replaying or self.recorded is None or step is None:
            return None
        return self.recorded.take(step, key)

    def _gather(self, futures: Sequence[concurrent.futures.Future[T]]) -> list[T]:
        try:
            return [self.pool.wait(f, self.budget) for f in futures]
        finally:  # on a failure, those still running; on success, none is left to cancel
            for f in futures:
                f.cancel()

    # -- the REPL functions --------------------------------------------------------
    @to_the_code
    @declared
    def llm_query(self, prompt: str, model: str | None = None, images: Any = None) -> str:
        lm = self._lm(model, "llm_query")
        loaded = images_for(images, lm)
        call = self._call(prompt, lm, None, 1, raise_too_large=True, images=loaded)
        try:
            return self._gather([self.pool.submit(call)])[0]
        except SubcallTooLarge as too_large:
            # A prompt with images is not split: each part would need the images again.
            if self.oversize == "split" and not isinstance(prompt, list) and not loaded:
                (split,) = self._split([(str(prompt), too_large)], lm)
                if split is not None:
                    return split
            raise too_large.with_traceback(None) from None  # the loop's frames are not the code's

    @to_the_code
    @declared
    def llm_query_batched(
        self, prompts: Sequence[str], model: str | None = None, images: Sequence[Any] | None = None
    ) -> list[str]:
        prompts = prompt_list(prompts, "llm_query_batched")
        lm = self._lm(model, "llm_query_batched")
        loaded = [images_for(each, lm) for each in batch_images(images, len(prompts))]
        batch_id = f"b{next(_ids)}"
        size = len(prompts)
        replies = self._gather(
            [self.pool.submit(self._slot(p, lm, batch_id, size, i, loaded[i])) for i, p in enumerate(prompts)]
        )
        over = {i: r for i, r in enumerate(replies) if isinstance(r, SubcallTooLarge) and not loaded[i]}
        if over and self.oversize == "split":
            split = self._split([(str(prompts[i]), too_large) for i, too_large in over.items()], lm)
            for i, answer in zip(over, split, strict=True):
                replies[i] = answer if answer is not None else replies[i]
        return [r if isinstance(r, str) else SubcallError.failed(r) for r in replies]

    async def _slot(
        self, prompt: Any, lm: LMClient, batch_id: str, size: int, index: int, images: Sequence[Image] = ()
    ) -> str | SubcallTooLarge:
        """One prompt of a batch: its reply, or why it was too large to send."""
        try:
            return await self._call(
                prompt, lm, batch_id, size, index=index, raise_too_large=True, images=images
            )
        except SubcallTooLarge as too_large:
            return too_large

    def _split(self, prompts: Sequence[tuple[str, SubcallTooLarge]], lm: LMClient) -> list[str | None]:
        """oversize="split": each prompt asked in parts that fit the window, all parts at once in one
        batch, and each prompt's answers joined in order (None for a prompt whose window holds no
        part worth asking). A warning records each split."""
        plans, parts = planned(prompts)
        for plan, (_, too_large) in zip(plans, prompts, strict=True):
            if plan is not None:
                text = split_note(too_large, lm.model_name, plan[1])
                self.emit(RunWarning(**self._ids(), code="subcall_split", text=text))
        if not parts:
            return [None] * len(prompts)
        batch_id = f"s{next(_ids)}"
        answers = self._gather([self.pool.submit(self._call(p, lm, batch_id, len(parts))) for p in parts])
        return [
            None if plan is None else joined(answers[plan[0] : plan[0] + plan[1]], too_large, lm.model_name)
            for plan, (_, too_large) in zip(plans, prompts, strict=True)
        ]

    @to_the_code
    @declared
    def ask_batched(self, conversations: Sequence[list[Any]], max_tokens: int | None = None) -> list[str]:
        lm = self.lm_for(None)
        batch_id = f"b{next(_ids)}"
        size = len(conversations)
        return self._gather(
            [self.pool.submit(self._call(c, lm, batch_id, size, max_tokens)) for c in conversations]
        )

    async def verdict(self, prompt: str, max_tokens: int) -> str:
        """The sub-model's reply to the engine's ``Verify``: one call of this run (``step``: the
        latest), recorded and charged like ``llm_query``'s; "" when it failed."""
        reply = await self._call(prompt, self.lm_for(None), None, 1, max_tokens, tools=False)
        return "" if isinstance(reply, SubcallError) else reply

    async def summary(self, prompt: str, lm: LMClient, max_tokens: int) -> str:
        """The root model's notes for a compaction of its history: one call of this run, recorded and
        charged like ``llm_query``'s; a :class:`SubcallError` (``ERROR_PREFIX`` and why) when it failed."""
        return await self._call(prompt, lm, None, 1, max_tokens, tools=False)

    @to_the_code
    @declared
    def rlm_query(self, prompt: str, context: Any = None) -> str:
        return self.rlm_query_batched([prompt], None if context is None else [context])[0]

    @to_the_code
    @declared
    def rlm_query_batched(self, prompts: Sequence[str], contexts: Sequence[Any] | None = None) -> list[str]:
        prompts = prompt_list(prompts, "rlm_query_batched")
        if self.spawn_child is None:
            if contexts is not None:
                prompts = [f"{p}\n\n{c}" for p, c in zip(prompts, contexts, strict=True)]
            return self.llm_query_batched(prompts)
        contexts = list(contexts) if contexts is not None else [None] * len(prompts)
        spawn = self.spawn_child
        if len(prompts) == 1:
            return [self._child(spawn, prompts[0], contexts[0])]
        workers = min(len(prompts), self.pool.max_concurrency)
        with (
            concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="rlm-child") as threads,
            contextlib.ExitStack() as on_failure,
        ):
            futures = [
                threads.submit(self._child, spawn, p, c) for p, c in zip(prompts, contexts, strict=True)
            ]
            on_failure.callback(self.pool.cancel_all)  # one child failed or was stopped: stop them all
            answers = [self.pool.wait(f) for f in futures]
            on_failure.pop_all()
            return answers

    def _child(self, spawn: SpawnChild, prompt: str, context: Any) -> str:
        call_id = f"c{next(_ids)}"
        step = self.step
        key = "rlm:" + request_key([{"role": "user", "content": str(prompt)}])
        self.emit(
            SubcallStarted(
                **self._ids(),
                call_id=call_id,
                step=step,
                model="rlm",
                prompt_preview=str(prompt)[:200],
                prompt_chars=len(str(prompt)),
                call_kind="rlm",
                prompt_key=key,
            )
        )
        finished = {"call_id": call_id, "step": step, "model": "rlm", "call_kind": "rlm"}
        if (recorded := self._recorded(step, key)) is not None:  # the child's answer, not a new child
            self.emit(SubcallFinished(**self._ids(), **finished, **_replayed(recorded)))
            return recorded
        started = time.perf_counter()
        error = None
        try:
            reply = spawn(prompt, context, call_id)
        except RLMError as exc:
            reply = error = SubcallError.child(exc, call_id)
        self.emit(
            SubcallFinished(
                **self._ids(),
                **finished,
                error=None if error is None else error.message,
                latency_s=time.perf_counter() - started,
                response_preview=reply[:200],
                response="" if error else reply,
            )
        )
        return reply

    # -- the root's tools ------------------------------------------------------------
    def repl_tools(self) -> dict[str, Callable[..., Any]]:
        """The tools as the root's code calls them: the functions themselves (their signature and
        docstring for ``help()``), each call recorded."""
        return {name: self._repl_tool(tool) for name, tool in self.tool_calls.tools.items()}

    def _repl_tool(self, tool: Tool) -> Callable[..., Any]:
        @functools.wraps(tool.fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            return self.call_tool(tool.name, args, kwargs)

        return call

    @to_the_code
    def call_tool(self, name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """A tool the root's code called (here, or in a kernel through the bridge): its result as
        the function returned it; its exception goes to the code, recorded."""
        return self.tool_calls.call(name, args, kwargs, self.step)

    # -- the boundary with the code -------------------------------------------------
    def _lm(self, model: Any, fn: str) -> LMClient:
        """The client of the model the code named (None: the sub-model). A name the run does not
        allow is a ValueError, before any client is made for it."""
        if model is None:
            return self.lm_for(None)
        if not isinstance(model, str):
            raise TypeError(f"{fn}: model= takes a model's name, not a {type(model).__name__}")
        if self.models is not None:
            if model not in self.models:
                allowed = ", ".join(repr(m) for m in self.models) or "none"
                raise ValueError(
                    f"{fn}: this run may not call the model {model[:80]!r}; it may call {allowed} "
                    "(to call another, name it in the run's sub_models setting)"
                )
            if model == self.models[0]:  # the sub-model: its one client
                return self.lm_for(None)
        return self.lm_for(model)

    def handed_back(self, value: Any) -> Any:
        """``value`` as the code gets it, redacted (:meth:`CodeBoundary.handed_back`)."""
        return self.boundary.handed_back(value)

    def raised_in_code(self, exc: Exception) -> Exception:
        """``exc`` as the code gets it, redacted (:meth:`CodeBoundary.raised_in_code`)."""
        return self.boundary.raised_in_code(exc)


def _key(messages: list[Message], images: Sequence[Image]) -> str:
    """The request's key in a recording: its messages, and its images, as the same text with other
    images is another request."""
    key = request_key(messages)
    if images:
        seen = ",".join(image.digest() for image in images)
        key = hashlib.sha256(f"{key}:{seen}".encode()).hexdigest()[:32]
    return key


def _replayed(reply: str) -> dict[str, Any]:
    """A replayed sub-call's end: the recorded reply, at no cost."""
    return {"response_preview": reply[:200], "response": reply, "replayed": True, "cost": 0.0}
