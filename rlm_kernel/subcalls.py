"""Sub-calls: every LM call of a run tree goes through the runtime's asyncio loop, on its thread.

``llm_query`` and friends are plain blocking functions for the REPL's code, but
they submit coroutines to this loop, so a batch of 64 prompts is 64 concurrent
requests (bounded by ``max_concurrency``), and the calling thread (the kernel's
main thread, say) only waits. Cancelling the pool cancels every call in flight.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import itertools
import json
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from .budget import Budget
from .errors import RLMError, RunCancelled, one_line
from .events import Event, SubcallFinished, SubcallStarted, ToolCalled
from .lm.base import Completion, LMClient, Message, estimate_tokens
from .lm.replay import request_key
from .rewind import RecordedReplies
from .runtime import Runtime, StopSignal, default_runtime, wait_any
from .tools import RESULT_PREVIEW, Tool, ToolRequest, as_text, calls_in_text

__all__ = ["SubcallPool", "Subcalls", "ERROR_PREFIX", "prompt_list"]

T = TypeVar("T")
ERROR_PREFIX = "[llm_query error]"
_ids = itertools.count(1)
# A round offered tools writes at most this many tokens unless the call sets its own limit: a small
# model may write one call over and over, and a request with tools is not streamed, so no guard
# stops it early.
TOOL_ROUND_TOKENS = 512
LAST_ROUND = "You have used all your tool calls: answer now, in text, from what you have."


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


SpawnChild = Callable[[str, Any, str], str]


def prompt_list(prompts: Any, name: str) -> list[Any]:
    """A batch is a list of prompts: one string would be one call per character."""
    if isinstance(prompts, (str, bytes)):
        raise TypeError(
            f"{name} takes a list of prompts, not one string: {name}([prompt]) or llm_query(prompt)"
        )
    return list(prompts)


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
    ) -> None:
        self.redact = redact  # a secret the code puts in a prompt goes to no sub-model
        self.tools = dict(tools or {})  # the root's code calls these
        self.sub_tools = {t.name: t for t in sub_tools}  # only sub-calls' models call these
        self.max_tool_rounds = max_tool_rounds
        self.pool = pool
        self.budget = budget
        self.emit = emit
        self.lm_for = lm_for
        self.run_id = run_id
        self.parent_id = parent_id
        self.depth = depth
        self.spawn_child = spawn_child
        self.step: int | None = None
        # A branch's replay of the steps it inherits: their sub-calls are answered from the run it
        # continues, so nothing is paid twice. Set by the loop while a replayed step runs.
        self.recorded: RecordedReplies | None = None
        self.replaying = False

    def _ids(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "parent_id": self.parent_id, "depth": self.depth}

    async def _call(
        self,
        prompt: Any,
        lm: LMClient,
        batch_id: str | None,
        batch_size: int,
        max_tokens: int | None = None,
        *,
        tools: bool = True,
    ) -> str:
        """One sub-call. ``prompt`` is the text of one user turn, or (for helpers) whole messages."""
        messages: list[Message] = [
            {**m, "content": self.redact(str(m["content"]))}  # type: ignore[typeddict-item]
            for m in (prompt if isinstance(prompt, list) else [{"role": "user", "content": str(prompt)}])
        ]
        text = "\n".join(m["content"] for m in messages)
        call_id = f"c{next(_ids)}"
        step = self.step
        key = request_key(messages)
        self.emit(
            SubcallStarted(
                **self._ids(),
                call_id=call_id,
                step=step,
                model=lm.model_name,
                prompt_preview=messages[-1]["content"][:200],
                prompt_chars=len(text),
                batch_id=batch_id,
                batch_size=batch_size,
                prompt_key=key,
            )
        )
        started = time.perf_counter()
        finished = {"call_id": call_id, "step": step, "model": lm.model_name, "batch_id": batch_id}
        if (recorded := self._recorded(step, key)) is not None:
            self.emit(SubcallFinished(**self._ids(), **finished, **_replayed(recorded)))
            return recorded
        try:
            self.budget.check()
            window = lm.context_window
            if window is not None and (need := estimate_tokens(text)) > window:
                raise RLMError(
                    f"prompt of about {need:,} tokens does not fit {lm.model_name}'s window of {window:,} "
                    f"tokens; split it into smaller pieces"
                )
            if self.sub_tools and tools:
                completion = await self._with_tools(lm, messages, max_tokens, call_id, step)
            else:
                completion = await lm.complete(messages, max_tokens=max_tokens)
            if not completion.text.strip():
                raise RLMError(f"{lm.model_name} gave an empty reply")
        except asyncio.CancelledError:
            self.emit(
                SubcallFinished(
                    **self._ids(),
                    **finished,
                    error="cancelled",
                    cancelled=True,
                    latency_s=time.perf_counter() - started,
                    cost=0.0,
                )
            )
            raise
        except Exception as exc:  # the provider's error, or any other: this slot fails, the batch goes on
            reason = str(exc) if isinstance(exc, RLMError) else f"{type(exc).__name__}: {exc}"
            reason = reason.splitlines()[0] if reason else type(exc).__name__
            self.emit(
                SubcallFinished(
                    **self._ids(),
                    **finished,
                    error=reason,
                    latency_s=time.perf_counter() - started,
                    cost=0.0,
                )
            )
            return f"{ERROR_PREFIX} {reason}"
        cost = completion.cost
        self.emit(
            SubcallFinished(
                **self._ids(),
                **finished,
                input_tokens=completion.input_tokens,
                output_tokens=completion.output_tokens,
                cached_tokens=completion.cached_tokens,
                latency_s=completion.latency_s or time.perf_counter() - started,
                cost=cost,
                response_preview=completion.text[:200],
                response=completion.text,
            )
        )
        return completion.text

    async def _with_tools(
        self, lm: LMClient, messages: list[Message], max_tokens: int | None, call_id: str, step: int | None
    ) -> Completion:
        """The tool-calling loop of one sub-call: the model's tool calls run (in a thread, as they
        may block) and their results go back to it, until it answers in text; after
        ``max_tool_rounds`` rounds it is asked once more to answer without them. Only the text returns,
        with the tokens and cost of every round."""
        specs = [t.spec() for t in self.sub_tools.values()]
        conversation = list(messages)
        rounds: list[Completion] = []
        results: dict[tuple[str, str], str] = {}  # (tool, arguments) -> what it gave
        nudge = ""
        while True:
            last = len(rounds) == self.max_tool_rounds
            if (
                last or nudge
            ):  # the tools stay declared (a history of tool calls needs them), but not to be used
                conversation.append({"role": "user", "content": nudge or LAST_ROUND})
            completion = await lm.complete(
                conversation, max_tokens=max_tokens or TOOL_ROUND_TOKENS, tools=specs
            )
            if not completion.tool_calls and (written := calls_in_text(completion.text, self.sub_tools)):
                completion = replace(completion, text="", tool_calls=tuple(written))
            rounds.append(completion)
            if not completion.tool_calls or last or nudge:
                break
            asked = [(r.name, _canonical(r.arguments)) for r in completion.tool_calls]
            if all(key in results for key in asked):  # the same calls again: a loop, not new work
                nudge = _repeated(asked, results)
                continue
            conversation.append(
                {"role": "assistant", "content": completion.text, "tool_calls": list(completion.tool_calls)}
            )
            for request, key in zip(completion.tool_calls, asked, strict=True):
                result = await asyncio.to_thread(self._sub_tool, request, call_id, step)
                results[key] = result
                conversation.append({"role": "tool", "tool_call_id": request.id, "content": result})
        # One model, one price: the cost of the summed tokens is the sum of the rounds' costs.
        return replace(
            completion,
            input_tokens=sum(c.input_tokens for c in rounds),
            output_tokens=sum(c.output_tokens for c in rounds),
            cached_tokens=sum(c.cached_tokens for c in rounds),
            latency_s=sum(c.latency_s for c in rounds),
            extra={**completion.extra, "tool_rounds": len(rounds) - 1},
        )

    def _sub_tool(self, request: ToolRequest, call_id: str, step: int | None) -> str:
        """One tool call a sub-model asked for; a failure is its result, for the model to read."""
        tool = self.sub_tools.get(request.name)
        if tool is None:
            return self._ran(
                call_id, step, request.name, request.arguments, error=f"no tool named {request.name!r}"
            )
        started = time.perf_counter()
        try:
            result = tool.call(request.arguments)
        except Exception as exc:
            return self._ran(
                call_id, step, tool.name, request.arguments, started=started, error=one_line(exc)
            )
        return self._ran(call_id, step, tool.name, request.arguments, started=started, result=result)

    def _ran(
        self,
        call_id: str | None,
        step: int | None,
        tool: str,
        arguments: str,
        *,
        started: float | None = None,
        result: str | None = None,
        error: str | None = None,
    ) -> str:
        """Record a tool's call; what the model reads back (its result, or the error)."""
        text = self.redact(result) if result is not None else ""
        self.emit(
            ToolCalled(
                **self._ids(),
                call_id=call_id,
                step=step,
                tool=tool,
                arguments=self.redact(arguments)[:1000],
                result_chars=len(text),
                result_preview=text[:RESULT_PREVIEW],
                latency_s=0.0 if started is None else time.perf_counter() - started,
                error=error,
            )
        )
        return text if error is None else f"[tool error] {error}"

    def repl_tools(self) -> dict[str, Callable[..., Any]]:
        """The tools as the root's code calls them: the functions themselves (their signature and
        docstring for ``help()``), each call recorded."""
        return {name: self._repl_tool(tool) for name, tool in self.tools.items()}

    def _repl_tool(self, tool: Tool) -> Callable[..., Any]:
        @functools.wraps(tool.fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            return self.call_tool(tool.name, args, kwargs)

        return call

    def call_tool(self, name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """A tool the root's code called (here, or in a kernel through the bridge): its result as
        the function returned it; its exception goes to the code, recorded."""
        tool = self.tools[name]
        arguments = as_text({"args": list(args), "kwargs": dict(kwargs)} if args else dict(kwargs))
        started = time.perf_counter()
        step = self.step
        try:
            value = tool.fn(*args, **kwargs)
        except Exception as exc:
            self._ran(None, step, name, arguments, started=started, error=one_line(exc))
            raise
        self._ran(None, step, name, arguments, started=started, result=as_text(value))
        return value

    def _recorded(self, step: int | None, key: str) -> str | None:
        """The reply the run this one continues got for the same request in the same step, while
        a replayed step runs; ``None`` for a request the recording lacks (it is asked again)."""
        if not self.replaying or self.recorded is None or step is None:
            return None
        return self.recorded.take(step, key)

    def _gather(self, futures: Sequence[concurrent.futures.Future[str]]) -> list[str]:
        try:
            return [self.pool.wait(f, self.budget) for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise

    # -- the REPL functions --------------------------------------------------------
    def llm_query(self, prompt: str, model: str | None = None) -> str:
        """Ask the sub-model one prompt; returns its reply (or a string starting with [llm_query error])."""
        return self._gather([self.pool.submit(self._call(prompt, self.lm_for(model), None, 1))])[0]

    def llm_query_batched(self, prompts: Sequence[str], model: str | None = None) -> list[str]:
        """Ask many prompts at once, concurrently; replies come back in the prompts' order."""
        prompts = prompt_list(prompts, "llm_query_batched")
        lm = self.lm_for(model)
        batch_id = f"b{next(_ids)}"
        return self._gather([self.pool.submit(self._call(p, lm, batch_id, len(prompts))) for p in prompts])

    def ask_batched(self, conversations: Sequence[list[Message]], max_tokens: int | None = None) -> list[str]:
        """For helpers: many conversations (few-shot turns and all) at once; replies in order."""
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
        return "" if reply.startswith(ERROR_PREFIX) else reply

    async def summary(self, prompt: str, lm: LMClient, max_tokens: int) -> str:
        """The root model's notes for a compaction of its history: one call of this run, recorded and
        charged like ``llm_query``'s; ``ERROR_PREFIX`` and why, when it failed."""
        return await self._call(prompt, lm, None, 1, max_tokens, tools=False)

    def rlm_query(self, prompt: str, context: Any = None) -> str:
        """Hand a sub-task to a child run with its own REPL (a plain llm_query at max depth)."""
        return self.rlm_query_batched([prompt], None if context is None else [context])[0]

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
        with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="rlm-child") as threads:
            futures = [
                threads.submit(self._child, spawn, p, c) for p, c in zip(prompts, contexts, strict=True)
            ]
            try:
                return [self.pool.wait(f) for f in futures]
            except BaseException:
                self.pool.cancel_all()
                raise

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
            error = str(exc)
            reply = f"[rlm_query error] {exc}"
        self.emit(
            SubcallFinished(
                **self._ids(),
                **finished,
                error=error,
                latency_s=time.perf_counter() - started,
                response_preview=reply[:200],
                response="" if error else reply,
            )
        )
        return reply


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except json.JSONDecodeError:
        return arguments


def _repeated(asked: list[tuple[str, str]], results: dict[tuple[str, str], str]) -> str:
    """What a model that asks for the calls it already made is told instead of their results again."""
    given = "\n".join(f"- {name}({args}) gave: {results[(name, args)][:2000]}" for name, args in asked)
    return f"You already called these tools, and they gave:\n{given}\nAnswer now, in text, without a tool."


def _replayed(reply: str) -> dict[str, Any]:
    """A replayed sub-call's end: the recorded reply, at no cost."""
    return {"response_preview": reply[:200], "response": reply, "replayed": True, "cost": 0.0}
