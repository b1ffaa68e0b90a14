"""The methods a sweep compares on the same tasks, with the same model.

- ``rlm``: the RLM with the chosen model, sub-model and prompt profile.
- ``rlm-no-subcalls``: the paper's ablation: the same REPL without ``llm_query`` / ``rlm_query``.
- ``base``: the model alone, the whole context in its prompt. A context past the model's window
  fails with the provider's own error, as the paper scores it; it is never cut to fit.
- ``reference``: the reference ``rlms`` package (``pip install rlms``), through its own API, on
  an OpenAI-compatible endpoint (the bundled model's llama.cpp server, for ``local``).

An RLM method named with ``+tips`` (``rlm+tips``, ``rlm-no-subcalls+tips``) is the same method with
:attr:`Settings.tips` appended to the root's prompt; without the suffix it runs without them. So one
sweep puts both side by side, and each is a rollout of its own in the results. The tools of
:attr:`Settings.tools` / :attr:`Settings.sub_tools` go to every RLM method.

Each returns an :class:`Outcome`; a failure of the method is an outcome with ``error`` set, so a
sweep goes on. Exceptions that escape are the harness's own faults, and the runner records them as
crashed rollouts, which a resumed sweep runs again.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError, RLMError
from ..lm import DEFAULT_MODELS
from .tasks import Task, as_text

__all__ = ["Settings", "Outcome", "METHODS", "TIPS", "run_method", "split_method", "load_tools"]

TIPS = "+tips"  # the suffix of a method that runs with the sweep's tips
_TAKES_TIPS = ("rlm", "rlm-no-subcalls")

ToolSpec = Mapping[str, Callable[..., Any]] | Sequence[Callable[..., Any]] | str | None


def split_method(name: str) -> tuple[str, bool]:
    """``"rlm+tips"`` -> ``("rlm", True)``: the method that runs, and whether with the tips."""
    return (name[: -len(TIPS)], True) if name.endswith(TIPS) else (name, False)


def tips_digest(tips: str | None) -> str:
    """A short name for a tips text, in the rollout key: other tips are other rollouts."""
    return hashlib.sha256(tips.strip().encode()).hexdigest()[:8] if tips and tips.strip() else ""


def load_tools(spec: ToolSpec) -> Any:
    """Tools as given (a dict or list of functions), or named by an import path ``module:attr``
    (a dict or list there), so a command line and a Ray worker can find them."""
    if not isinstance(spec, str):
        return spec or {}
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ConfigError(f"Tools are named module:attr, not {spec!r}.")
    try:
        value = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"Cannot import the tools {spec!r}: {exc}") from None
    if callable(value) and not isinstance(value, (Mapping, Sequence)):
        value = [value]
    return value


@dataclass(frozen=True)
class Settings:
    """What every rollout of a sweep shares: the model(s) and the limits of one rollout."""

    backend: str = "local"
    model: str | None = None
    sub_backend: str | None = None
    sub_model: str | None = None
    backend_kwargs: Mapping[str, Any] = field(default_factory=dict)
    sub_backend_kwargs: Mapping[str, Any] | None = None
    profile: str | None = None
    max_iterations: int = 12
    max_depth: int = 1
    max_concurrency: int = 8  # sub-calls in flight within one rollout
    timeout: float | None = 900.0  # seconds for one rollout
    base_max_tokens: int = 2048
    executor: str = "kernel"  # where an RLM rollout's code runs: its own kernel, with no keys inside
    executor_kwargs: Mapping[str, Any] = field(default_factory=dict)
    tips: str | None = None  # appended to the root's prompt by the methods named with +tips
    tools: ToolSpec = None  # functions the root's code calls: {"name": fn}, [fn, ...] or "module:attr"
    sub_tools: ToolSpec = None  # functions only the sub-calls' models call (function calling)
    max_tool_rounds: int = 8
    verify: bool = False  # RLM(verify=True): the sub-model checks each answer against the printed output

    @property
    def model_label(self) -> str:
        if self.model:
            return self.model
        return (
            "qwen2.5-coder-0.5b"
            if self.backend == "local"
            else DEFAULT_MODELS.get(self.backend, self.backend)
        )

    @property
    def sub_model_label(self) -> str:
        return self.sub_model or (
            self.model_label if not self.sub_backend else DEFAULT_MODELS.get(self.sub_backend, "")
        )

    def root_kwargs(self) -> dict[str, Any]:
        kwargs = dict(self.backend_kwargs)
        if self.model:
            kwargs["model_name"] = self.model
        return kwargs

    def sub_kwargs(self) -> dict[str, Any] | None:
        if self.sub_backend_kwargs is None and not self.sub_model:
            return None
        kwargs = dict(self.sub_backend_kwargs if self.sub_backend_kwargs is not None else self.root_kwargs())
        if self.sub_model:
            kwargs["model_name"] = self.sub_model
        return kwargs

    def public(self) -> dict[str, Any]:
        """The settings for a results file: no keys."""
        hidden = {"api_key", "default_headers", "http_client", "auth_token"}
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        for name in ("backend_kwargs", "sub_backend_kwargs", "executor_kwargs"):
            if out[name] is not None:
                out[name] = {k: v for k, v in out[name].items() if k not in hidden}
        for name in ("tools", "sub_tools"):  # functions by name: a results file holds no code
            if out[name] is not None and not isinstance(out[name], str):
                items = out[name].items() if isinstance(out[name], Mapping) else enumerate(out[name])
                out[name] = [k if isinstance(k, str) else getattr(fn, "__name__", str(fn)) for k, fn in items]
        return out

    def tips_for(self, method: str) -> str:
        """The digest of the tips a method runs with ("" for none), which its rollout key holds."""
        return tips_digest(self.tips) if split_method(method)[1] else ""

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)


@dataclass
class Outcome:
    """What one method made of one task."""

    answer: str | None
    error: str | None = None
    root_input_tokens: int = 0
    root_output_tokens: int = 0
    sub_input_tokens: int = 0
    sub_output_tokens: int = 0
    calls: int = 0
    cost: float | None = None
    iterations: int = 0
    trajectory: str | None = None
    warnings: list[str] = field(default_factory=list)


async def _rlm(task: Task, settings: Settings, log_dir: Path | None, *, subcalls: bool = True) -> Outcome:
    from ..rlm import RLM

    profile = settings.profile if subcalls else "no_subcalls"
    rlm = RLM(
        settings.backend,
        settings.root_kwargs(),
        settings.sub_backend,
        settings.sub_kwargs(),
        max_iterations=settings.max_iterations,
        max_depth=settings.max_depth,
        max_concurrency=settings.max_concurrency,
        max_timeout=settings.timeout,
        prompt_profile=profile,
        log_dir=log_dir if log_dir is not None else False,
        executor=settings.executor,
        executor_kwargs=dict(settings.executor_kwargs),
        tips=settings.tips,
        tools=load_tools(settings.tools),
        sub_tools=load_tools(settings.sub_tools),
        max_tool_rounds=settings.max_tool_rounds,
        verify=settings.verify,
    )
    result = await rlm.acompletion(task.context, task.question)
    usage = result.usage
    return Outcome(
        answer=result.response,
        error=result.error,
        root_input_tokens=usage.root.input_tokens,
        root_output_tokens=usage.root.output_tokens,
        sub_input_tokens=usage.sub.input_tokens,
        sub_output_tokens=usage.sub.output_tokens,
        calls=usage.total.calls,
        cost=usage.total.cost,
        iterations=result.iterations,
        trajectory=str(result.log_path) if result.log_path else None,
        warnings=list(result.warnings),
    )


async def _base(task: Task, settings: Settings, log_dir: Path | None) -> Outcome:
    from ..lm import make_lm

    kwargs = settings.root_kwargs()
    if settings.timeout is not None:  # one try, as long as the rollout may take: a slow model reads long
        kwargs.setdefault("timeout", settings.timeout)
        kwargs.setdefault("max_retries", 0)
    lm = make_lm(settings.backend, kwargs)
    prompt = f"{as_text(task.context)}\n\n{task.question}"
    try:
        coro = lm.complete([{"role": "user", "content": prompt}], max_tokens=settings.base_max_tokens)
        completion = await asyncio.wait_for(coro, settings.timeout)
    except asyncio.TimeoutError:
        return Outcome(answer=None, error=f"no reply within the rollout's {settings.timeout:g} s")
    except RLMError as exc:  # the provider refused: nothing was read, nothing is owed
        return Outcome(answer=None, error=str(exc), cost=0.0, calls=1)
    finally:
        await lm.aclose()
    return Outcome(
        answer=completion.text,
        root_input_tokens=completion.input_tokens,
        root_output_tokens=completion.output_tokens,
        calls=1,
        cost=completion.cost,
        iterations=1,
    )


async def _reference(task: Task, settings: Settings, log_dir: Path | None) -> Outcome:
    try:
        import rlm as reference  # the rlms package
    except ImportError:
        raise ConfigError("The reference method needs the rlms package: pip install rlms.") from None
    if settings.backend not in ("openai", "local"):
        raise ConfigError(
            "The reference method runs on an OpenAI-compatible endpoint: use --backend openai or local."
        )
    kwargs = settings.root_kwargs()
    if settings.backend == "local":
        from ..lm import make_lm

        lm = make_lm("local", kwargs)  # starts (or shares) this process's llama.cpp server
        kwargs = {"model_name": lm.model_name, "base_url": str(lm.base_url), "api_key": "local"}
        await lm.aclose()

    def run() -> Any:
        return reference.RLM(
            backend="openai", backend_kwargs=kwargs, max_iterations=settings.max_iterations
        ).completion(task.context, root_prompt=task.question)

    try:
        result = await asyncio.wait_for(asyncio.to_thread(run), settings.timeout)
    except asyncio.TimeoutError:
        return Outcome(answer=None, error=f"no answer within the rollout's {settings.timeout:g} s")
    usage = result.usage_summary
    return Outcome(
        answer=result.response,
        error=getattr(result, "error", None),
        root_input_tokens=usage.total_input_tokens,
        root_output_tokens=usage.total_output_tokens,
        calls=sum(s.total_calls for s in usage.model_usage_summaries.values()),
        cost=usage.total_cost,
    )


Method = Callable[[Task, Settings, "Path | None"], Awaitable[Outcome]]


async def _no_subcalls(task: Task, settings: Settings, log_dir: Path | None) -> Outcome:
    return await _rlm(task, settings, log_dir, subcalls=False)


METHODS: dict[str, Method] = {
    "rlm": _rlm,
    "rlm-no-subcalls": _no_subcalls,
    "base": _base,
    "reference": _reference,
}


def check_methods(names: list[str], settings: Settings | None = None) -> None:
    """One-line errors for a sweep's methods: unknown names, ``+tips`` with no tips, tips no method
    takes, tools that cannot be imported."""
    for name in names:
        method, with_tips = split_method(name)
        if method not in METHODS:
            raise ConfigError(
                f"Unknown method {name!r}: choose from {', '.join(METHODS)} "
                f"(and {', '.join(m + TIPS for m in _TAKES_TIPS)} with tips)."
            )
        if with_tips and method not in _TAKES_TIPS:
            raise ConfigError(f"Method {name!r}: only {' and '.join(_TAKES_TIPS)} take tips.")
    if settings is None:
        return
    tipped = [n for n in names if split_method(n)[1]]
    if tipped and not tips_digest(settings.tips):
        raise ConfigError(f"Method {tipped[0]!r} runs with tips, and none are given: pass tips (--tips).")
    if tips_digest(settings.tips) and not tipped:
        raise ConfigError(
            "Tips are given but no method runs with them: add +tips to a method "
            "(--methods rlm,rlm+tips runs with and without them side by side)."
        )
    for spec in (settings.tools, settings.sub_tools):
        load_tools(spec)


async def run_method(
    name: str, task: Task, settings: Settings, log_dir: Path | None
) -> tuple[Outcome, float]:
    """Run one method on one task; (outcome, wall seconds). A ``+tips`` method gets the tips."""
    method, with_tips = split_method(name)
    if not with_tips and settings.tips is not None:
        settings = settings.with_(tips=None)
    started = time.perf_counter()
    outcome = await METHODS[method](task, settings, log_dir)
    return outcome, time.perf_counter() - started
