"""Runners: where a sweep's rollouts run. One rollout is one method on one task.

- :class:`LocalRunner` (the default): rollouts on this process's event loop, a few at a time.
  Sub-calls of every rollout share one asyncio loop, and the bundled model's one llama.cpp
  server per process, whose slots the rollouts queue on.
- :class:`RayRunner`: async actors, each running several rollouts at once, on a local Ray
  cluster or any cluster at ``address`` (``pip install "rlm-kernel[ray]"``). A worker rebuilds a
  generated task from its ref instead of receiving the context.

Both write rows through the same :class:`~rlm_kernel.eval.results.ResultsDir`, one as each rollout
ends, so both give the same results file for the same sweep.
"""

from __future__ import annotations

import asyncio
import contextlib
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from ..errors import ConfigError
from ..foreign import settled
from .methods import Outcome, Settings, run_method
from .results import ResultsDir, Row, rollout_key
from .scoring import score
from .tasks import Task, TaskRef, generate

__all__ = ["Job", "Runner", "LocalRunner", "RayRunner", "rollout", "Progress"]


@dataclass(frozen=True)
class Job:
    """One rollout to run: a task (or the ref that rebuilds it) and a method."""

    task: Task | TaskRef
    method: str

    @property
    def task_id(self) -> str:
        return self.task.id

    def key(self, settings: Settings) -> str:
        return rollout_key(
            self.task_id,
            self.method,
            settings.model_label,
            settings.sub_model_label,
            settings.rlm.prompt_profile or "",
            settings.tips_for(self.method),
        )


@lru_cache(maxsize=8)  # the methods of one task run close together: build its context once
def _built(ref: TaskRef) -> Task:
    return generate(ref)


async def task_of(job: Job) -> Task:
    return job.task if isinstance(job.task, Task) else await asyncio.to_thread(_built, job.task)


async def _scored(
    task: Task, method: str, settings: Settings, trajectories: Path | None
) -> tuple[Outcome, float, float]:
    outcome, wall = await run_method(method, task, settings, trajectories)
    return outcome, wall, score(task.scorer, outcome.answer, task.answer)


async def rollout(task: Task, method: str, settings: Settings, trajectories: Path | None) -> Row:
    """Run and score one rollout. A method's failure is a row with ``error``; an exception that
    escapes the method is the harness's fault and the row says ``crashed`` (run again on resume)."""
    # A bug escaping a method is a crashed row, the sweep goes on.
    scored, exc = await settled(_scored(task, method, settings, trajectories))
    if isinstance(exc, ConfigError):
        raise exc  # a mistake in the sweep's settings: every rollout would fail the same way
    crashed = exc is not None
    if scored is not None:
        outcome, wall, value = scored
    else:
        outcome, wall, value = Outcome(answer=None, error=f"crashed: {type(exc).__name__}: {exc}"), 0.0, 0.0
        outcome.warnings.append("".join(traceback.format_exception(exc))[-4000:])
    return Row(
        task_id=task.id,
        family=task.family,
        split=task.split,
        length=task.length,
        method=method,
        model=settings.model_label,
        sub_model=settings.sub_model_label,
        profile=settings.rlm.prompt_profile or "",
        score=value,
        answer=outcome.answer,
        expected=task.answer,
        error=outcome.error,
        root_input_tokens=outcome.root_input_tokens,
        root_output_tokens=outcome.root_output_tokens,
        sub_input_tokens=outcome.sub_input_tokens,
        sub_output_tokens=outcome.sub_output_tokens,
        cached_tokens=outcome.cached_tokens,
        calls=outcome.calls,
        cost=outcome.cost,
        wall_s=round(wall, 3),
        iterations=outcome.iterations,
        context_chars=task.context_chars,
        trajectory=outcome.trajectory,
        crashed=crashed,
        meta={**task.meta, **({"warnings": outcome.warnings} if outcome.warnings else {})},
        tips=settings.tips_for(method),
    )


class Progress:
    """Rollouts done, running, the mean score and the cost so far: a tqdm bar in a terminal, an
    ipywidgets bar in a notebook (``tqdm.auto``), nothing when disabled."""

    def __init__(self, total: int, *, enabled: bool = True, desc: str = "rlm eval") -> None:
        self.total, self.running, self.done, self.score, self.cost = total, 0, 0, 0.0, 0.0
        self.unknown_cost = False
        self.bar: Any = None
        if enabled and total:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="rollout", dynamic_ncols=True, mininterval=0.5)

    def started(self) -> None:
        self.running += 1
        self._show()

    def finished(self, row: Row | None) -> None:
        self.running -= 1
        if row is not None:
            self.done += 1
            self.score += row.score
            if row.cost is None:
                self.unknown_cost = True
            else:
                self.cost += row.cost
            if self.bar is not None:
                self.bar.update(1)
        self._show()

    def _show(self) -> None:
        if self.bar is None:
            return
        mean = f"{self.score / self.done:.2f}" if self.done else "-"
        cost = f"${self.cost:.4f}" + ("+?" if self.unknown_cost else "")
        self.bar.set_postfix_str(f"running {self.running} · score {mean} · cost {cost}", refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Runner(Protocol):
    async def run(
        self, jobs: Sequence[Job], settings: Settings, store: ResultsDir, progress: Progress
    ) -> None: ...


def _interrupted() -> bool:
    """Whether this task was asked to stop while an awaited call swallowed the cancellation (an
    RLM run returns its partial result when cancelled): such a rollout is not a result."""
    task = asyncio.current_task()
    return task is not None and getattr(task, "cancelling", lambda: 0)() > 0


class LocalRunner:
    """Rollouts on this process's event loop, ``concurrency`` at a time."""

    def __init__(self, concurrency: int = 2) -> None:
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {concurrency}.")
        self.concurrency = concurrency

    async def run(
        self, jobs: Sequence[Job], settings: Settings, store: ResultsDir, progress: Progress
    ) -> None:
        slots = asyncio.Semaphore(self.concurrency)

        async def one(job: Job) -> None:
            async with slots:
                progress.started()
                row = None
                try:
                    row = await rollout(await task_of(job), job.method, settings, store.trajectories)
                    if _interrupted():
                        raise asyncio.CancelledError
                    store.add(row)
                finally:
                    progress.finished(row)

        await asyncio.gather(*(one(job) for job in jobs))


class _RolloutWorker:
    """A Ray actor: runs rollouts on its own event loop, several at once."""

    async def run(self, spec: Task | TaskRef, method: str, settings: Settings, trajectories: str) -> dict:
        task = spec if isinstance(spec, Task) else _built(spec)
        return (await rollout(task, method, settings, Path(trajectories))).to_dict()


class RayRunner:
    """Rollouts on Ray async actors: ``workers`` actors, ``rollouts_per_worker`` rollouts each at
    once. Connects to ``address`` (or ``ray.init()``'s default: a local cluster, started here and
    stopped at the end of the sweep)."""

    def __init__(
        self,
        address: str | None = None,
        workers: int = 2,
        rollouts_per_worker: int = 2,
        init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if workers < 1 or rollouts_per_worker < 1:
            raise ConfigError("RayRunner needs at least one worker and one rollout per worker.")
        self.address = address
        self.workers = workers
        self.rollouts_per_worker = rollouts_per_worker
        self.init_kwargs = dict(init_kwargs or {})

    def _ray(self) -> Any:
        try:
            import ray
        except ImportError:
            raise ConfigError('The Ray runner needs Ray: pip install "rlm-kernel[ray]".') from None
        return ray

    async def run(
        self, jobs: Sequence[Job], settings: Settings, store: ResultsDir, progress: Progress
    ) -> None:
        ray = self._ray()
        started = False
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "log_to_driver": False, **self.init_kwargs}
            await asyncio.to_thread(ray.init, address=self.address, **kwargs)
            started = True
        worker = ray.remote(num_cpus=0, max_concurrency=self.rollouts_per_worker)(_RolloutWorker)
        actors = [worker.remote() for _ in range(self.workers)]
        try:
            await self._drive(actors, list(reversed(jobs)), settings, store, progress)
        finally:
            for actor in actors:
                with contextlib.suppress(Exception):
                    ray.kill(actor)
            if started:
                await asyncio.to_thread(ray.shutdown)

    async def _drive(
        self, actors: list[Any], queue: list[Job], settings: Settings, store: ResultsDir, progress: Progress
    ) -> None:
        """Keep each actor ``rollouts_per_worker`` rollouts busy until the queue is empty."""
        in_flight: dict[asyncio.Future, Any] = {}

        def submit(actor: Any) -> None:
            job = queue.pop()
            ref = actor.run.remote(job.task, job.method, settings, str(store.trajectories))
            in_flight[asyncio.wrap_future(ref.future())] = actor
            progress.started()

        try:
            for actor in actors:
                for _ in range(min(self.rollouts_per_worker, len(queue))):
                    submit(actor)
            while in_flight:
                done, _ = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                for future in done:
                    actor = in_flight.pop(future)
                    row = Row.from_dict(future.result())
                    store.add(row)
                    progress.finished(row)
                    if queue:
                        submit(actor)
        finally:
            for future in in_flight:
                future.cancel()
