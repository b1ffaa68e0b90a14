"""A sweep: task families × lengths × methods, run, scored and kept in a results folder.

    from rlm_kernel import eval as rlm_eval

    results = rlm_eval.run(tasks=["sniah", "oolong"], lengths=["8k", "32k"], methods=["rlm", "base"],
                           split="test", n=10, out="results/")
    print(results)                       # the summary table
    pandas.DataFrame(results.to_records())

The same from the command line: ``python -m rlm_kernel.eval run ...``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .methods import Settings, check_methods, split_method
from .results import Results, ResultsDir
from .runners import Job, LocalRunner, Progress, Runner
from .tasks import Task, generated_tasks, load_jsonl, parse_length

__all__ = ["run", "arun", "jobs_for"]


def jobs_for(
    tasks: Iterable[str],
    lengths: Iterable[str | int],
    methods: Sequence[str],
    *,
    split: str,
    n: int,
    task_files: Iterable[str | Path] = (),
) -> list[Job]:
    """Every rollout of a sweep, task by task (a task's methods run next to each other)."""
    check_methods(list(methods))
    if n < 1:
        raise ConfigError(f"n must be at least 1, got {n}.")
    specs: list[Task | Any] = list(generated_tasks(tasks, [parse_length(x) for x in lengths], split, n))
    for path in task_files:
        specs.extend(load_jsonl(path))
    return [Job(spec, method) for spec in specs for method in methods]


async def arun(
    tasks: Iterable[str] = ("sniah",),
    lengths: Iterable[str | int] = ("8k",),
    methods: Sequence[str] = ("rlm", "base"),
    *,
    split: str = "test",
    n: int = 5,
    out: str | Path = "results",
    settings: Settings | None = None,
    task_files: Iterable[str | Path] = (),
    runner: Runner | None = None,
    progress: bool = True,
    **setting_overrides: Any,
) -> Results:
    """Run the sweep's rollouts that are not in ``out`` yet; return every row of ``out`` for this sweep.

    Settings (RLMConfig's: ``backend``, ``model_name``, ``prompt_profile``, ``max_iterations``,
    ``max_timeout``, ``tips``, ``tools``, …) come as a :class:`Settings` or as keywords. With tips,
    name the methods that take them with ``+tips``: ``methods=["rlm", "rlm+tips"]`` runs both."""
    settings = (
        (settings or Settings()).with_(**setting_overrides) if setting_overrides else settings or Settings()
    )
    check_methods(list(methods), settings)
    if any(split_method(m)[0] == "reference" for m in methods):
        try:
            import rlm  # noqa: F401 - the rlms package
        except ImportError:
            raise ConfigError("The reference method needs the rlms package: pip install rlms.") from None
    store = ResultsDir(out)
    jobs = jobs_for(tasks, lengths, methods, split=split, n=n, task_files=task_files)
    keys = {job.key(settings) for job in jobs}
    done = store.done()
    todo = [job for job in jobs if job.key(settings) not in done]
    store.note_sweep(
        {
            "tasks": list(tasks) if not isinstance(tasks, str) else [tasks],
            "lengths": [str(x) for x in lengths],
            "methods": list(methods),
            "split": split,
            "n": n,
            "task_files": [str(p) for p in task_files],
            "runner": type(runner or LocalRunner()).__name__,
            "settings": settings.public(),
            "rollouts": len(jobs),
            "already_done": len(jobs) - len(todo),
        }
    )
    bar = Progress(len(todo), enabled=progress)
    try:
        await (runner or LocalRunner()).run(todo, settings, store, bar)
    finally:
        bar.close()
        store.write_csv()
    return Results(row for row in store.rows() if row.key in keys)


def run(*args: Any, **kwargs: Any) -> Results:
    """:func:`arun`, blocking. In a notebook (whose event loop is running) the sweep runs on a
    loop of its own in a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(arun(*args, **kwargs))
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = asyncio.run(arun(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
            box["error"] = exc

    thread = threading.Thread(target=work, name="rlm-eval", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["result"]
