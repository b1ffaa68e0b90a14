"""Sub-calls: every LM call of a run tree goes through the runtime's asyncio loop, on its thread.

``llm_query`` and friends are plain blocking functions for the REPL's code, but
they submit coroutines to this loop, so a batch of 64 prompts is 64 concurrent
requests (bounded by ``max_concurrency``), and the calling thread (the kernel's
main thread, say) only waits. Cancelling the pool cancels every call in flight.

They are also the host's boundary with the code, for every executor (a kernel's calls reach them
through the bridge):

- what they hand back is redacted: replies, error texts, a child run's answer, tool results and
  the exceptions raised in the code. A provider or a proxy may echo the request's key in its reply
  or its error, and code that encodes what it got (base64, reversed) would take it past the
  redaction of the record;
- the code may name only the run's models (``llm_query(p, model=...)``): the sub-model, the root
  model and those of the ``sub_models`` setting. Any other name is a ValueError in the code, and
  no request; the host keeps nothing for it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import hashlib
import itertools
import json
import math
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from .budget import Budget
from .errors import ConfigError, RLMError, RunCancelled, SubcallTooLarge, one_line
from .events import Event, RunWarning, SubcallFinished, SubcallStarted, ToolCalled
from .images import Image, load_images
from .lm.base import Completion, LMClient, Message, SeesImages
from .lm.replay import RecordingLM, request_key
from .lm.tokens import conservative_tokens, fitting_prefix, preflight, split_text, template_tokens
from .rewind import RecordedReplies
from .runtime import Runtime, StopSignal, default_runtime, wait_any
from .tools import RESULT_PREVIEW, Tool, ToolRequest, as_text, calls_in_text

__all__ = ["SubcallPool", "Subcalls", "ERROR_PREFIX", "OVERSIZE", "prompt_list", "images_for", "batch_images"]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
ERROR_PREFIX = "[llm_query error]"
_ids = itertools.count(1)
# A round offered tools writes at most this many tokens unless the call sets its own limit: a small
# model may write one call over and over, and a request with tools is not streamed, so no guard
# stops it early.
TOOL_ROUND_TOKENS = 512
LAST_ROUND = "You have used all your tool calls: answer now, in text, from what you have."
# What llm_query does with a prompt over the sub-model's window: raise SubcallTooLarge in the code,
# or ask it in parts and join their answers.
OVERSIZE = ("error", "split")
# A part of a split prompt holds at least this many tokens of it, or the prompt is not split.
MIN_PART_TOKENS = 64


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


def batch_images(images: Any, n: int) -> list[Any]:
    """``llm_query_batched``'s ``images``: one entry per prompt (an image, a list of them, a folder, or
    None), so that each prompt sends its own; None for none at all."""
    if images is None:
        return [None] * n
    if isinstance(images, (str, bytes)) or not isinstance(images, Sequence):
        raise TypeError(
            "llm_query_batched takes images=[images of prompt 1, images of prompt 2, ...], one entry "
            "per prompt (the same for all: images=[imgs] * len(prompts))"
        )
    if len(images) != n:
        raise ValueError(f"images= has {len(images)} entries for {n} prompts: give one per prompt")
    return list(images)


def _to_the_code(method: F) -> F:
    """A REPL function of :class:`Subcalls` as the code calls it: what it returns, and the exception
    it raises, redacted (:meth:`Subcalls.handed_back`, :meth:`Subcalls.raised_in_code`)."""

    @functools.wraps(method)
    def handed_back(self: Subcalls, *args: Any, **kwargs: Any) -> Any:
        try:
            value = method(self, *args, **kwargs)
        except Exception as exc:
            clean = self.raised_in_code(exc)
            if clean is exc:
                raise
        else:
            return self.handed_back(value)
        # Raised out of the except block, so that the exception that held the secret is not its
        # context, where the code would find it.
        raise clean

    return handed_back  # type: ignore[return-value]


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
        self.tools = dict(tools or {})  # the root's code calls these
        self.sub_tools = {t.name: t for t in sub_tools}  # only sub-calls' models call these
        self.max_tool_rounds = max_tool_rounds
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
        index: int | None = None,
        raise_too_large: bool = False,
        images: Sequence[Image] = (),
    ) -> str:
        """One sub-call. ``prompt`` is the text of one user turn, or (for helpers) whole messages;
        ``images`` go after the text of that turn. A prompt over the window is not sent: its
        :class:`SubcallTooLarge` is raised where ``raise_too_large`` (``llm_query``'s, to be raised
        in the code), else it is the error text."""
        messages: list[Message] = [
            {**m, "content": self.redact(str(m["content"]))}  # type: ignore[typeddict-item]
            for m in (prompt if isinstance(prompt, list) else [{"role": "user", "content": str(prompt)}])
        ]
        if images:
            messages[-1] = {**messages[-1], "images": list(images)}
        text = "\n".join(m["content"] for m in messages)
        call_id = f"c{next(_ids)}"
        step = self.step
        key = request_key(messages)
        if images:  # the same text with other images is another request
            seen = ",".join(image.digest() for image in images)
            key = hashlib.sha256(f"{key}:{seen}".encode()).hexdigest()[:32]
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
                images=[image.record() for image in images],
            )
        )
        started = time.perf_counter()
        finished = {"call_id": call_id, "step": step, "model": lm.model_name, "batch_id": batch_id}
        if (recorded := self._recorded(step, key)) is not None:
            self.emit(SubcallFinished(**self._ids(), **finished, **_replayed(recorded)))
            return recorded
        try:
            self.budget.check()
            if self.sub_tools and tools:
                completion = await self._with_tools(lm, messages, max_tokens, call_id, step, index)
            else:
                await _fits(lm, messages, max_tokens, index)
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
        except SubcallTooLarge as exc:  # never sent
            self.emit(
                SubcallFinished(
                    **self._ids(),
                    **finished,
                    error=one_line(exc),
                    latency_s=time.perf_counter() - started,
                    cost=0.0,
                )
            )
            if raise_too_large:
                raise
            return f"{ERROR_PREFIX} {one_line(exc)}"
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
        self,
        lm: LMClient,
        messages: list[Message],
        max_tokens: int | None,
        call_id: str,
        step: int | None,
        index: int | None = None,
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
            # Each round: the tools' results may take a conversation that fit past the window.
            await _fits(lm, conversation, max_tokens or TOOL_ROUND_TOKENS, index, specs)
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
            written_tokens=sum(c.written_tokens for c in rounds),
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

    @_to_the_code
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
        """``value`` as the code gets it: the text in it (strings, bytes, in lists, tuples, sets and
        dicts) redacted; another object as it is, unless its text holds a secret, when it is that
        text, redacted. The same object when nothing needed it."""
        return self._scrubbed(value, 0)[0]

    def _scrubbed(self, value: Any, depth: int) -> tuple[Any, bool]:
        """(``value`` redacted, whether that changed it)."""
        if isinstance(value, str):
            clean = self.redact(value)
            return clean, clean != value
        if value is None or isinstance(value, (bool, int, float, complex)):
            return value, False
        if isinstance(value, (bytes, bytearray)):
            text = bytes(value).decode("latin-1")  # every byte a character, and back
            clean = self.redact(text)
            return (clean.encode("latin-1"), True) if clean != text else (value, False)
        if depth < 64 and type(value) in (list, tuple, set, frozenset):
            items = [self._scrubbed(v, depth + 1) for v in value]
            if not any(changed for _, changed in items):
                return value, False
            return type(value)(v for v, _ in items), True
        if depth < 64 and type(value) is dict:
            pairs = [(self._scrubbed(k, depth + 1), self._scrubbed(v, depth + 1)) for k, v in value.items()]
            if not any(k[1] or v[1] for k, v in pairs):
                return value, False
            return {k[0]: v[0] for k, v in pairs}, True
        try:
            text = str(value)  # what a kernel's bridge would send of it
        except Exception:
            return value, False
        clean = self.redact(text)
        return (clean, True) if clean != text else (value, False)

    def raised_in_code(self, exc: Exception) -> Exception:
        """``exc`` as the code gets it: itself when neither it nor the exceptions chained to it hold
        a secret (in their text or their arguments); else one of its type made from its redacted
        arguments, with no chain (or, where its type cannot be made so, a RuntimeError that names
        it). Other attributes are not searched: in a kernel the code gets only the text."""
        chain: list[BaseException] = []
        seen: BaseException | None = exc
        while seen is not None and len(chain) < 16:
            chain.append(seen)
            seen = seen.__cause__ or seen.__context__
        if all(self.redact(str(e)) == str(e) and not self._scrubbed(e.args, 0)[1] for e in chain):
            return exc
        try:
            clean = type(exc)(*(self.handed_back(a) for a in exc.args))
            if self.redact(str(clean)) != str(clean):  # a __str__ of its own, from its attributes
                raise TypeError
        except Exception:
            clean = RuntimeError(f"{type(exc).__name__}: {self.redact(str(exc))}")
        return clean

    def _recorded(self, step: int | None, key: str) -> str | None:
        """The reply the run this one continues got for the same request in the same step, while
        a replayed step runs; ``None`` for a request the recording lacks (it is asked again)."""
        if not self.replaying or self.recorded is None or step is None:
            return None
        return self.recorded.take(step, key)

    def _gather(self, futures: Sequence[concurrent.futures.Future[T]]) -> list[T]:
        try:
            return [self.pool.wait(f, self.budget) for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise

    # -- the REPL functions --------------------------------------------------------
    @_to_the_code
    def llm_query(self, prompt: str, model: str | None = None, images: Any = None) -> str:
        """Ask the sub-model one prompt; returns its reply (or a string starting with [llm_query error]).
        A prompt over the sub-model's window raises SubcallTooLarge (oversize="split": is asked in parts).
        ``model``: another of the run's models (the root's, or one of the sub_models setting); any
        other name raises ValueError. ``images``: an image (PIL image, PNG/JPEG/GIF/WebP bytes, a
        path), a list of them, or a folder; a model that takes none raises ValueError before
        anything is sent."""
        lm = self._lm(model, "llm_query")
        loaded = images_for(images, lm)
        call = self._call(prompt, lm, None, 1, raise_too_large=True, images=loaded)
        try:
            return self._gather([self.pool.submit(call)])[0]
        except SubcallTooLarge as too_large:
            # A prompt with images is not split: each part would need the images again.
            if self.oversize == "split" and not isinstance(prompt, list) and not loaded:
                (joined,) = self._split([(str(prompt), too_large)], lm)
                if joined is not None:
                    return joined
            raise too_large.with_traceback(None) from None  # the loop's frames are not the code's

    @_to_the_code
    def llm_query_batched(
        self, prompts: Sequence[str], model: str | None = None, images: Sequence[Any] | None = None
    ) -> list[str]:
        """Ask many prompts at once, concurrently; replies come back in the prompts' order. A prompt over
        the window is not sent: its slot says so, with its index (oversize="split": asked in parts).
        ``images``: one entry per prompt (an image, a list of them, a folder, or None)."""
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
            for i, joined in zip(over, split, strict=True):
                replies[i] = joined if joined is not None else replies[i]
        return [r if isinstance(r, str) else f"{ERROR_PREFIX} {one_line(r)}" for r in replies]

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
        batch, and each prompt's answers joined in order under a note that says so (None for a
        prompt whose window holds no part worth asking). A warning records each split.

        The answers are joined, not combined by one more call: the root, which has the question, the
        code and the other results, combines them better than a sub-model that sees only the
        answers; and a combining call could itself be over the window."""
        plans: list[tuple[int, int] | None] = []
        parts: list[str] = []
        for text, too_large in prompts:
            pieces = _parts(text, too_large)
            if pieces is None:
                plans.append(None)
                continue
            plans.append((len(parts), len(pieces)))
            parts.extend(pieces)
            self.emit(
                RunWarning(
                    **self._ids(),
                    code="subcall_split",
                    text=f"An llm_query prompt of {_size(too_large)} was over {lm.model_name}'s window of "
                    f"{too_large.window:,} tokens: it was asked in {len(pieces)} parts and their answers "
                    "joined (oversize='split').",
                )
            )
        if not parts:
            return [None] * len(prompts)
        batch_id = f"s{next(_ids)}"
        answers = self._gather([self.pool.submit(self._call(p, lm, batch_id, len(parts))) for p in parts])
        return [
            None if plan is None else _joined(answers[plan[0] : plan[0] + plan[1]], too_large, lm.model_name)
            for plan, (_, too_large) in zip(plans, prompts, strict=True)
        ]

    @_to_the_code
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

    @_to_the_code
    def rlm_query(self, prompt: str, context: Any = None) -> str:
        """Hand a sub-task to a child run with its own REPL (a plain llm_query at max depth)."""
        return self.rlm_query_batched([prompt], None if context is None else [context])[0]

    @_to_the_code
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


async def _fits(
    lm: LMClient,
    messages: list[Message],
    max_tokens: int | None,
    index: int | None,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> None:
    """The pre-flight: raise SubcallTooLarge for a request over ``lm``'s window, less room for the
    reply (:mod:`rlm_kernel.lm.tokens`)."""
    fit = await preflight(lm, messages, max_tokens=max_tokens, tools=tools)
    if fit is not None and not fit.fits:
        raise SubcallTooLarge(fit.tokens, fit.window, lm.model_name, fit.limit, fit.counted_by, index)


_PART = (
    "[Part {i} of {n} of a request too long to read at once. The request begins: «{head}» and ends: "
    "«{tail}». Do what it asks for this part alone; if this part holds nothing it asks for, say so in "
    "one line.]\n\n"
)


def _parts(text: str, too_large: SubcallTooLarge) -> list[str] | None:
    """The prompts of the parts of ``text``, each framed with the request's first and last words (where
    its question usually is); None when the window leaves too little room for a part.

    Parts are measured by the conservative estimate, scaled by how the tokenizer counted the whole
    (with a quarter more, as a part may be denser than the whole); each is counted again before it
    is sent."""
    quote = max(min(too_large.limit // 10, 200), 8)
    head = text[: fitting_prefix(text, quote)]
    # The tail's length is the prefix's of the end reversed (the estimate ignores order); a quote of
    # n tokens holds at most 3n characters.
    tail = text[len(text) - fitting_prefix(text[-(3 * quote + 3) :][::-1], quote) :]
    frame = _PART.format(i=10**6, n=10**6, head=head, tail=tail)
    frame_tokens = conservative_tokens(frame) + template_tokens(1)
    room = too_large.limit - frame_tokens
    if room < MIN_PART_TOKENS:
        return None
    scale = 1.0
    if too_large.counted_by not in ("bound", "estimate"):
        scale = 1.25 * too_large.prompt_tokens / (conservative_tokens(text) + template_tokens(1))
    pieces = split_text(text, room, lambda s: math.ceil(conservative_tokens(s) * scale))
    n = len(pieces)
    return [_PART.format(i=i, n=n, head=head, tail=tail) + piece for i, piece in enumerate(pieces, 1)]


def _size(too_large: SubcallTooLarge) -> str:
    if too_large.counted_by == "estimate":
        return f"about {too_large.prompt_tokens:,} tokens"
    return f"{too_large.prompt_tokens:,} tokens"


def _joined(answers: Sequence[str], too_large: SubcallTooLarge, model: str) -> str:
    """The answers of a split prompt's parts, in order, under a note for the root."""
    n = len(answers)
    note = (
        f"[oversize='split': this prompt, of {_size(too_large)}, is over {model}'s window of "
        f"{too_large.window:,} tokens, so it was asked in {n} parts; their answers follow in order. "
        "Combine them.]"
    )
    return note + "".join(f"\n\n[part {i} of {n}]\n{a}" for i, a in enumerate(answers, 1))
