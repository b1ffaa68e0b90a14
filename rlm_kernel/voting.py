"""Several roots that answer one question at once and vote (``votes``): driving them together,
stopping those the vote no longer needs, and counting.

The roots are opened by :class:`~rlm_kernel.rlm.RLM` (the greedy one first, the others sampled, one
budget for all). :func:`vote` drives each in a thread of its own, :func:`avote` each as a task of
the caller's event loop. Once more than half gave one answer, the others are stopped; the result is
the winner's run with every root's usage, and the ``voted`` event is recorded in its trajectory.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Sequence

from .driver import adrive, drive
from .engine import Finish
from .events import Event, EventBus, RunWarning, Voted
from .run_result import OpenRun, RLMResult
from .usage import summarize
from .votes import Vote, tally

__all__ = ["vote", "avote"]

Subscribers = Sequence[Callable[[Event], None]]


def vote(roots: list[OpenRun], subscribers: Subscribers, *, typed: bool) -> RLMResult:
    """``completion`` by several roots at once, each driven in a thread of its own; this one
    waits for them, and hears Ctrl-C. ``typed``: the answers are ``output_type``'s JSON."""
    finishes: list[Finish | None] = [None] * len(roots)
    ended: queue.SimpleQueue[int] = queue.SimpleQueue()

    def work(index: int) -> None:
        try:
            finishes[index] = drive(roots[index].parts)
        finally:
            ended.put(index)

    threads = [
        threading.Thread(target=work, args=(i,), name=f"rlm-root-{i}", daemon=True) for i in range(len(roots))
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
            cut |= _cut_decided(roots, finishes, cut, typed=typed)
    except KeyboardInterrupt:
        interrupted = True
        for root in roots:
            root.parts.tree.cancel()
    for thread in threads:
        thread.join()
    stopped = interrupted or _stopped(roots, cut)
    return _count(roots, finishes, subscribers, stopped=stopped, typed=typed)


async def avote(roots: list[OpenRun], subscribers: Subscribers, *, typed: bool) -> RLMResult:
    """``acompletion`` by several roots at once, on this event loop. Cancelling the task
    cancels every root and keeps the partial run, as with one root."""
    tasks = [asyncio.ensure_future(adrive(root.parts)) for root in roots]
    finishes: list[Finish | None] = [None] * len(roots)
    cut: set[int] = set()
    cancelled = False
    try:
        pending = set(tasks)
        while pending:
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            finishes = [_finish_of(task) for task in tasks]
            cut |= _cut_decided(roots, finishes, cut, typed=typed)
    except asyncio.CancelledError:
        cancelled = True
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)  # each ends with its partial run
    finishes = [_finish_of(task) for task in tasks]
    stopped = cancelled or _stopped(roots, cut)
    return _count(roots, finishes, subscribers, stopped=stopped, typed=typed)


def _cut_decided(
    roots: list[OpenRun], finishes: list[Finish | None], cut: set[int], *, typed: bool
) -> set[int]:
    """Once more than half of the roots gave one answer, the others cannot change the vote:
    those still running are stopped (they vote for none). The roots stopped so."""
    if cut:
        return set()
    if not tally([f.response if f and not f.error else None for f in finishes], typed=typed).clear:
        return set()
    running = {i for i, f in enumerate(finishes) if f is None}
    for index in running:
        roots[index].parts.tree.cancel()
    return running


def _stopped(roots: list[OpenRun], cut: set[int]) -> bool:
    """Whether a human stopped the vote (``cancel()``, Stop), not the count."""
    return any(root.parts.tree.cancelled for i, root in enumerate(roots) if i not in cut)


def _count(
    roots: list[OpenRun],
    finishes: list[Finish | None],
    subscribers: Subscribers,
    *,
    stopped: bool,
    typed: bool,
) -> RLMResult:
    """The roots' vote, recorded in the winner's trajectory after its end, and the result:
    the winner's run, with every root's usage. A root with no clean answer votes for none;
    a vote a human stopped is not counted (the greedy root's partial run is the result)."""
    ended = [f or Finish(None, "the root's driver failed", stop="error") for f in finishes]
    counted = tally([None if f.error else f.response for f in ended], typed=typed)
    winner = 0 if stopped else counted.winner
    if not stopped:
        _record_vote(roots, ended, counted, subscribers)
    results = [root.close(finish) for root, finish in zip(roots, ended, strict=True)]
    result = results[winner]
    result.usage = summarize(e for r in results for e in r.trajectory)
    result.execution_time = max(r.execution_time for r in results)
    result.restored_names = results[0].restored_names  # the greedy root ran in the caller's names
    result.votes = None if stopped else counted
    return result


def _record_vote(roots: list[OpenRun], ended: list[Finish], counted: Vote, subscribers: Subscribers) -> None:
    """The ``voted`` event (and a ``low_confidence`` warning on a split) on the winner's bus,
    so its trajectory holds them; views that followed the greedy root are first shown the
    winner's run when another root won."""
    won = roots[counted.winner]
    if counted.winner != 0 and subscribers:
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
            answer=ended[counted.winner].response,
            clear=counted.clear,
            runs=[root.parts.run.run_id for root in roots],
            candidates=counted.counts(),
            input_tokens=usage.total.input_tokens,
            output_tokens=usage.total.output_tokens,
            cost=usage.total.cost,
        )
    )
    if not counted.clear:
        won.bus.emit(RunWarning(run_id=run.run_id, code="low_confidence", text=counted.text()))


def _finish_of(task: asyncio.Future[Finish]) -> Finish | None:
    """A root's end, once its task is done and did not fail."""
    if not task.done() or task.cancelled() or task.exception() is not None:
        return None
    return task.result()
