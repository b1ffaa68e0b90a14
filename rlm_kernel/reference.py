"""The reference ``rlms`` package's spelling on ours: its constructor keywords, its result's fields,
its ``RLMLogger`` and its callbacks, so that code written for it runs with the import line changed.

Each keyword maps to one of our settings or to a subscriber of the run's events; one with no
equivalent here is a one-line error naming the closest setting, never ignored.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .events import (
    Event,
    RootReply,
    RootRequest,
    RunEnded,
    RunStarted,
    StepFinished,
    StepStarted,
    SubcallFinished,
    SubcallStarted,
)
from .tools import Tool
from .usage import Tally, Usage

__all__ = [
    "KEYWORDS",
    "RLMLogger",
    "ModelUsageSummary",
    "UsageSummary",
    "Translated",
    "translate",
    "trajectory_of",
]

# The reference's keywords that are not settings of ours by the same name: :func:`translate` takes them.
KEYWORDS = (
    "environment",
    "environment_kwargs",
    "depth",
    "custom_system_prompt",
    "user_prologue",
    "orchestrator",
    "other_backends",
    "other_backend_kwargs",
    "compaction_threshold_pct",
    "max_concurrent_subcalls",
    "sampling_args",
    "sub_sampling_args",
    "custom_tools",
    "custom_sub_tools",
    "persistent",
    "logger",
    "verbose",
    "on_subcall_start",
    "on_subcall_complete",
    "on_iteration_start",
    "on_iteration_complete",
)
# The environments of the reference that run code in this process or in a Jupyter kernel of its own.
ENVIRONMENTS = {"local": "local", "ipython": "kernel"}


@dataclass
class Translated:
    """The reference's keywords as ours: settings for RLMConfig, and what the RLM itself keeps."""

    settings: dict[str, Any] = field(default_factory=dict)
    subscribers: list[Callable[[Event], None]] = field(default_factory=list)
    logger: RLMLogger | None = None
    variables: dict[str, Any] = field(default_factory=dict)  # custom_tools that are data, not functions
    persistent: bool = False


# The reference's keywords that are settings of ours by another name.
RENAMED = {
    "custom_system_prompt": "system_prompt",
    "user_prologue": "tips",
    "compaction_threshold_pct": "compaction_threshold",
    "max_concurrent_subcalls": "max_concurrency",
}


def translate(backend: str, backend_kwargs: dict[str, Any] | None, given: dict[str, Any]) -> Translated:
    """Take the reference's keywords out of ``given`` (in place) and return them as ours."""
    out = Translated()
    settings = out.settings
    _environment(given.pop("environment", None), given.pop("environment_kwargs", None), settings)
    if given.pop("depth", 0) != 0:
        raise ConfigError("depth is set by the run tree, not given: set max_depth.")
    if given.pop("orchestrator", True) is not True:
        raise ConfigError("orchestrator=False has no equivalent here: the root always writes code.")
    for theirs, ours in RENAMED.items():
        if (value := given.pop(theirs, None)) is not None:
            settings[ours] = value
    _other_backends(given.pop("other_backends", None), given.pop("other_backend_kwargs", None), settings)
    _sampling(
        backend,
        backend_kwargs,
        given.pop("sampling_args", None),
        given.pop("sub_sampling_args", None),
        settings,
    )
    _custom_tools(given.pop("custom_tools", None), given.pop("custom_sub_tools", None), out)
    out.persistent = bool(given.pop("persistent", False))
    _subscribers(given, out)
    return out


def _environment(
    environment: str | None, environment_kwargs: Mapping[str, Any] | None, settings: dict[str, Any]
) -> None:
    """The reference's environments that run code here: this process, or a kernel of its own."""
    if environment is not None:
        if environment not in ENVIRONMENTS:
            raise ConfigError(
                f"environment={environment!r} has no equivalent here: code runs in executor='local' (this "
                "process), 'kernel' (a sandboxed kernel of its own) or 'gateway' (a Kernel Gateway's)."
            )
        settings["executor"] = ENVIRONMENTS[environment]
    if environment_kwargs:
        raise ConfigError(
            f"environment_kwargs {sorted(environment_kwargs)} have no equivalent here: a kernel's settings "
            "are executor_kwargs (memory_mb, isolation, ...)."
        )


def _other_backends(
    others: list[str] | None, other_kwargs: list[dict[str, Any]] | None, settings: dict[str, Any]
) -> None:
    """The reference's other backend, for the sub-calls: our sub_backend."""
    if others is None:
        return
    if len(others) != 1 or (other_kwargs is not None and len(other_kwargs) != 1):
        raise ConfigError("other_backends takes one backend, for the sub-calls: sub_backend here.")
    settings["sub_backend"] = others[0]
    settings["sub_backend_kwargs"] = dict((other_kwargs or [{}])[0])


def _custom_tools(
    tools: Mapping[str, Any] | None, sub_tools: Mapping[str, Any] | None, out: Translated
) -> None:
    """The reference's tools as ours; the root's that are values are variables of its REPL."""
    if tools:
        out.settings["tools"], out.variables = _tools(tools, "custom_tools")
    if sub_tools:
        out.settings["sub_tools"], data = _tools(sub_tools, "custom_sub_tools")
        if data:
            raise ConfigError(
                f"custom_sub_tools {sorted(data)} are not functions: sub-calls' models call functions only."
            )


def _subscribers(given: dict[str, Any], out: Translated) -> None:
    """The reference's logger, verbose console and callbacks, as subscribers of the run's events."""
    if (logger := given.pop("logger", None)) is not None:
        if not isinstance(logger, RLMLogger):
            raise ConfigError("logger takes an RLMLogger (from rlm_kernel import RLMLogger).")
        out.logger = logger
        out.subscribers.append(logger)
        if logger.log_dir is not None:
            out.settings.setdefault("log_dir", logger.log_dir)
    if given.pop("verbose", False):
        from .console import ConsoleView

        out.subscribers.append(ConsoleView())
    callbacks = {name: given.pop(name, None) for name in _Callbacks.NAMES}
    if any(callbacks.values()):
        out.subscribers.append(_Callbacks(**callbacks))


def _sampling(
    backend: str,
    backend_kwargs: dict[str, Any] | None,
    root: Mapping[str, Any] | None,
    sub: Mapping[str, Any] | None,
    settings: dict[str, Any],
) -> None:
    """``sampling_args`` into the root's backend kwargs, ``sub_sampling_args`` into the sub-calls'
    (the root's backend and kwargs, where no other is given): temperature as the clients take it,
    ``max_tokens`` as the root's reply limit, the rest (a sub-call's ``max_tokens`` too) in each
    request's body."""

    def apply(kwargs: dict[str, Any], args: Mapping[str, Any], role: str) -> dict[str, Any]:
        kwargs = dict(kwargs)
        args = dict(args)
        if "temperature" in args:
            kwargs["temperature"] = args.pop("temperature")
        if "max_tokens" in args and role == "root":
            settings["max_reply_tokens"] = args.pop("max_tokens")
        if args:
            kwargs["extra_body"] = {**kwargs.get("extra_body", {}), **args}
        return kwargs

    if root:
        settings["backend_kwargs"] = apply(backend_kwargs or {}, root, "root")
    if sub:
        if "sub_backend" not in settings:
            settings["sub_backend"] = backend
            settings["sub_backend_kwargs"] = dict(backend_kwargs or {})
        settings["sub_backend_kwargs"] = apply(settings["sub_backend_kwargs"], sub, "sub")


def _tools(value: Mapping[str, Any], where: str) -> tuple[dict[str, Tool], dict[str, Any]]:
    """The reference's tools: ``{"name": fn}``, ``{"name": {"tool": fn_or_value, "description": ...}}``;
    values that are not functions are variables of the REPL."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} takes a dict of names to functions or values.")
    tools: dict[str, Tool] = {}
    data: dict[str, Any] = {}
    for name, item in value.items():
        description = None
        if isinstance(item, Mapping) and "tool" in item:
            item, description = item["tool"], item.get("description")
        if not callable(item):
            data[name] = item
            continue
        tool = Tool.of(item, name)
        if description:
            tool = dataclasses.replace(tool, summary=description.splitlines()[0], description=description)
        tools[name] = tool
    return tools, data


class _Callbacks:
    """The reference's callbacks as a subscriber. A sub-call is any of ``llm_query``, ``rlm_query``
    and their batched forms; an iteration is a root turn, from its request to the next one."""

    NAMES = ("on_subcall_start", "on_subcall_complete", "on_iteration_start", "on_iteration_complete")

    def __init__(
        self,
        on_subcall_start: Callable[[int, str, str], None] | None = None,
        on_subcall_complete: Callable[[int, str, float, str | None], None] | None = None,
        on_iteration_start: Callable[[int, int], None] | None = None,
        on_iteration_complete: Callable[[int, int, float], None] | None = None,
    ) -> None:
        self.on_subcall_start = on_subcall_start
        self.on_subcall_complete = on_subcall_complete
        self.on_iteration_start = on_iteration_start
        self.on_iteration_complete = on_iteration_complete
        self._open: dict[str, tuple[int, float, int]] = {}  # run -> (turn, when it started, depth)

    def __call__(self, event: Event) -> None:
        if isinstance(event, SubcallStarted) and self.on_subcall_start:
            self.on_subcall_start(event.depth + 1, event.model, event.prompt_preview)
        elif isinstance(event, SubcallFinished) and self.on_subcall_complete:
            self.on_subcall_complete(event.depth + 1, event.model, event.latency_s, event.error)
        elif isinstance(event, RootRequest):
            self._close(event.run_id, event.ts)
            self._open[event.run_id] = (event.turn, event.ts, event.depth)
            if self.on_iteration_start:
                self.on_iteration_start(event.depth, event.turn)
        elif isinstance(event, RunEnded):
            self._close(event.run_id, event.ts)

    def _close(self, run_id: str, now: float) -> None:
        if (opened := self._open.pop(run_id, None)) is not None and self.on_iteration_complete:
            turn, started, depth = opened
            self.on_iteration_complete(depth, turn, now - started)


# -- results -------------------------------------------------------------------------------


@dataclass
class ModelUsageSummary:
    total_calls: int
    total_input_tokens: int
    total_output_tokens: int
    total_cost: float | None = None

    @classmethod
    def of(cls, tally: Tally) -> ModelUsageSummary:
        return cls(tally.calls, tally.input_tokens, tally.output_tokens, tally.cost)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class UsageSummary:
    """The reference's usage by model; :class:`~rlm_kernel.usage.Usage` has the same figures and more
    (root and sub apart, by depth, cached tokens)."""

    model_usage_summaries: dict[str, ModelUsageSummary]

    @classmethod
    def of(cls, usage: Usage) -> UsageSummary:
        return cls({model: ModelUsageSummary.of(t) for model, t in usage.by_model.items()})

    @property
    def total_cost(self) -> float | None:
        costs = [s.total_cost for s in self.model_usage_summaries.values()]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)

    @property
    def total_input_tokens(self) -> int:
        return sum(s.total_input_tokens for s in self.model_usage_summaries.values())

    @property
    def total_output_tokens(self) -> int:
        return sum(s.total_output_tokens for s in self.model_usage_summaries.values())

    def to_dict(self) -> dict[str, Any]:
        return {"model_usage_summaries": {m: s.to_dict() for m, s in self.model_usage_summaries.items()}}


def _usage_of(events: Iterable[Event]) -> dict[str, Any]:
    from .usage import summarize

    return UsageSummary.of(summarize(events)).to_dict()


def trajectory_of(events: list[Event], run_id: str | None = None) -> dict[str, Any] | None:
    """A run's events in the shape of the reference's ``completion.metadata``: ``run_metadata`` and
    ``iterations``, each with its reply and code blocks, each block with the sub-calls its code made
    (a child run's own trajectory under its call's ``metadata``). ``prompt`` is what that turn's
    request added to the conversation, not the whole conversation."""
    runs = (e for e in events if isinstance(e, RunStarted) and (run_id is None or e.run_id == run_id))
    started = next(runs, None)
    if started is None:
        return None
    run_id = started.run_id
    settings = started.settings
    children = {e.parent_call_id: e.run_id for e in events if isinstance(e, RunStarted) and e.parent_call_id}
    iterations: list[dict[str, Any]] = []
    blocks: dict[int, dict[str, Any]] = {}
    request: RootRequest | None = None
    for event in (e for e in events if e.run_id == run_id):
        if isinstance(event, RootRequest):
            request = event
        elif isinstance(event, RootReply):
            iterations.append(
                {
                    "prompt": request.content if request else "",
                    "response": event.text,
                    "code_blocks": [],
                    "final_answer": None,
                    "iteration_time": event.ts - request.ts if request else event.latency_s,
                }
            )
        elif isinstance(event, StepStarted) and iterations:
            blocks[event.step] = {"code": event.code, "result": _block_result()}
            iterations[-1]["code_blocks"].append(blocks[event.step])
        elif isinstance(event, StepFinished) and event.step in blocks:
            result = blocks[event.step]["result"]
            result.update(stdout=event.output, stderr=event.error or "", execution_time=event.elapsed_s)
        elif isinstance(event, SubcallFinished) and event.step in blocks:
            child = children.get(event.call_id)
            blocks[event.step]["result"]["rlm_calls"].append(
                {
                    "root_model": event.model,
                    "prompt": None,  # the prompt stays with the run's trajectory, not copied here
                    "response": event.response or event.response_preview,
                    "usage_summary": _usage_of([event]),
                    "execution_time": event.latency_s,
                    "metadata": trajectory_of(events, child) if child else None,
                    "error": event.error,
                }
            )
        elif isinstance(event, RunEnded) and iterations:
            iterations[-1]["final_answer"] = event.response
    return {
        "run_metadata": {
            "root_model": started.model,
            "max_depth": settings.get("max_depth"),
            "max_iterations": settings.get("max_iterations"),
            "backend": settings.get("backend"),
            "backend_kwargs": settings.get("backend_kwargs", {}),
            "environment_type": settings.get("executor"),
            "environment_kwargs": settings.get("executor_kwargs", {}),
            "other_backends": [settings["sub_backend"]] if settings.get("sub_backend") else None,
        },
        "iterations": iterations,
    }


def _block_result() -> dict[str, Any]:
    return {
        "stdout": "",
        "stderr": "",
        "locals": {},
        "execution_time": 0.0,
        "rlm_calls": [],
        "final_answer": None,
    }


class RLMLogger:
    """The reference's logger: collects each run's events, and gives its trajectory in the reference's
    shape (``get_trajectory()``, ``completion.metadata``). With ``log_dir``, trajectories are written
    there, in this package's JSONL format (:mod:`rlm_kernel.trajectory`)."""

    def __init__(self, log_dir: str | Path | None = None, file_name: str = "rlm") -> None:
        self.log_dir = log_dir
        self.file_name = file_name
        self._events: list[Event] = []

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted) and event.depth == 0:
            self._events = []
        self._events.append(event)

    def get_trajectory(self) -> dict[str, Any] | None:
        """The last run's trajectory, as the reference's ``completion.metadata``; None before any run."""
        return trajectory_of(self._events)

    def clear_iterations(self) -> None:
        self._events = []

    @property
    def iteration_count(self) -> int:
        trajectory = self.get_trajectory()
        return len(trajectory["iterations"]) if trajectory else 0

    def __repr__(self) -> str:
        return f"RLMLogger(log_dir={json.dumps(str(self.log_dir)) if self.log_dir else None})"
