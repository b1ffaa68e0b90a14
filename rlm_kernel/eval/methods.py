"""The methods a sweep compares on the same tasks, with the same model.

- ``rlm``: the RLM with the chosen model, sub-model and prompt profile.
- ``rlm-no-subcalls``: the paper's ablation: the same REPL without ``llm_query`` / ``rlm_query``.
- ``base``: the model alone, the whole context in its prompt. A context past the model's window
  fails with the provider's own error, as the paper scores it; it is never cut to fit.
- ``reference``: the reference ``rlms`` package (``pip install rlms``), through its own API, on
  an OpenAI-compatible endpoint (the bundled model's llama.cpp server, for ``local``).

An RLM method named with ``+tips`` (``rlm+tips``, ``rlm-no-subcalls+tips``) is the same method with
the sweep's ``tips`` appended to the root's prompt; without the suffix it runs without them. So one
sweep puts both side by side, and each is a rollout of its own in the results. The sweep's
``tools`` and ``sub_tools`` go to every RLM method.

Each returns an :class:`Outcome`; a failure of the method is an outcome with ``error`` set, so a
sweep goes on. Exceptions that escape are the harness's own faults, and the runner records them as
crashed rollouts, which a resumed sweep runs again.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..config import RLMConfig, normalize
from ..errors import ConfigError, RLMError
from ..lm import BACKENDS, backend
from .tasks import Task, as_text

__all__ = ["Settings", "DEFAULTS", "Outcome", "METHODS", "TIPS", "run_method", "split_method"]

TIPS = "+tips"  # the suffix of a method that runs with the sweep's tips
_TAKES_TIPS = ("rlm", "rlm-no-subcalls")


def split_method(name: str) -> tuple[str, bool]:
    """``"rlm+tips"`` -> ``("rlm", True)``: the method that runs, and whether with the tips."""
    return (name[: -len(TIPS)], True) if name.endswith(TIPS) else (name, False)


def tips_digest(tips: str | None) -> str:
    """A short name for a tips text, in the rollout key: other tips are other rollouts."""
    return hashlib.sha256(tips.strip().encode()).hexdigest()[:8] if tips and tips.strip() else ""


# The run settings of every RLM rollout, unless a sweep says otherwise: the bundled model, in a
# kernel of its own (no keys inside), a few turns, a few sub-calls at once, 15 minutes a rollout.
DEFAULTS = RLMConfig(
    backend="local", max_iterations=12, max_concurrency=8, max_timeout=900.0, executor="kernel", log_dir=False
)


@dataclass(frozen=True, init=False)
class Settings:
    """What every rollout of a sweep shares: the run settings of its RLMs (``rlm``, an RLMConfig with
    :data:`DEFAULTS`), and the eval's own. Run settings may also be given by name:
    ``Settings(model_name="qwen2.5-coder-1.5b", max_iterations=8)``."""

    rlm: RLMConfig
    base_max_tokens: int = 2048  # the longest answer of the base method

    def __init__(self, rlm: RLMConfig | None = None, *, base_max_tokens: int = 2048, **settings: Any) -> None:
        settings = normalize(settings, where="Settings")
        object.__setattr__(self, "rlm", replace(rlm or DEFAULTS, **settings) if settings else rlm or DEFAULTS)
        object.__setattr__(self, "base_max_tokens", base_max_tokens)

    @property
    def model_label(self) -> str:
        return self.rlm.model_name or backend(self.rlm.backend).default_model or self.rlm.backend

    @property
    def sub_model_label(self) -> str:
        sub, _, model = self.rlm.lm_kwargs("sub")
        return model or backend(sub).default_model or sub

    def public(self) -> dict[str, Any]:
        """The settings for a results file: no keys, tools by name."""
        out = self.rlm.public()
        out["tools"] = list(self.rlm.tools)
        out["sub_tools"] = [tool.name for tool in self.rlm.sub_tools]
        return {**out, "base_max_tokens": self.base_max_tokens}

    def tips_for(self, method: str) -> str:
        """The digest of the tips a method runs with ("" for none), which its rollout key holds."""
        return tips_digest(self.rlm.tips) if split_method(method)[1] else ""

    def with_(self, **changes: Any) -> Settings:
        base_max_tokens = changes.pop("base_max_tokens", self.base_max_tokens)
        return Settings(self.rlm, base_max_tokens=base_max_tokens, **changes)


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

    config = replace(settings.rlm, log_dir=log_dir if log_dir is not None else False)
    if not subcalls:
        config = replace(config, prompt_profile="no_subcalls")
    rlm = RLM.from_config(config)
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

    name, kwargs, model = settings.rlm.lm_kwargs("root")
    timeout = settings.rlm.max_timeout
    if timeout is not None:  # one try, as long as the rollout may take: a slow model reads long
        kwargs.setdefault("timeout", timeout)
        kwargs.setdefault("max_retries", 0)
    lm = make_lm(name, kwargs, model=model)
    prompt = f"{as_text(task.context)}\n\n{task.question}"
    try:
        coro = lm.complete([{"role": "user", "content": prompt}], max_tokens=settings.base_max_tokens)
        completion = await asyncio.wait_for(coro, timeout)
    except asyncio.TimeoutError:
        return Outcome(answer=None, error=f"no reply within the rollout's {timeout:g} s")
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
    name, kwargs, model = settings.rlm.lm_kwargs("root")
    if not backend(name).openai_compatible:
        compatible = " or ".join(n for n, b in BACKENDS.items() if b.openai_compatible)
        raise ConfigError(
            f"The reference method runs on an OpenAI-compatible endpoint: use --backend {compatible}."
        )
    if model:
        kwargs["model_name"] = model
    if name != "openai":  # the endpoint of this process's own server (llama.cpp, started or shared)
        from ..lm import make_lm

        lm = make_lm(name, kwargs)
        kwargs = {"model_name": lm.model_name, "base_url": str(lm.base_url), "api_key": "local"}
        await lm.aclose()

    def run() -> Any:
        return reference.RLM(
            backend="openai", backend_kwargs=kwargs, max_iterations=settings.rlm.max_iterations
        ).completion(task.context, root_prompt=task.question)

    timeout = settings.rlm.max_timeout
    try:
        result = await asyncio.wait_for(asyncio.to_thread(run), timeout)
    except asyncio.TimeoutError:
        return Outcome(answer=None, error=f"no answer within the rollout's {timeout:g} s")
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
    if tipped and not tips_digest(settings.rlm.tips):
        raise ConfigError(f"Method {tipped[0]!r} runs with tips, and none are given: pass tips (--tips).")
    if tips_digest(settings.rlm.tips) and not tipped:
        raise ConfigError(
            "Tips are given but no method runs with them: add +tips to a method "
            "(--methods rlm,rlm+tips runs with and without them side by side)."
        )


async def run_method(
    name: str, task: Task, settings: Settings, log_dir: Path | None
) -> tuple[Outcome, float]:
    """Run one method on one task; (outcome, wall seconds). A ``+tips`` method gets the tips."""
    method, with_tips = split_method(name)
    if not with_tips and settings.rlm.tips is not None:
        settings = settings.with_(tips=None)
    started = time.perf_counter()
    outcome = await METHODS[method](task, settings, log_dir)
    return outcome, time.perf_counter() - started
