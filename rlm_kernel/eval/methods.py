"""The methods a sweep compares on the same tasks, with the same model: the paper's Table 1 rows.

- ``rlm``: the RLM with the chosen model, sub-model and prompt profile.
- ``rlm-no-subcalls``: the paper's ablation: the same REPL without ``llm_query`` / ``rlm_query``.
- ``base``: the model alone, the whole context in its prompt. A context past the model's window
  fails with the provider's own error, as the paper scores it; it is never cut to fit.
- ``summary``: the paper's summary agent (its Appendix C.2). A context that fits the model's
  window goes in whole, as in ``base``; a longer one is read in parts that fit, each with the
  question and a running summary that the model rewrites to keep what the question needs, and
  the question is answered from the last summary. Sizes come from the client's
  ``context_window``: whether the context fits is judged at :data:`CHARS_PER_TOKEN` characters a
  token, the first part is cut at :data:`FIRST_CHARS_PER_TOKEN`, and the later ones at what the
  provider counted of the requests before. With no known window the context goes in whole.
- ``codeact``, ``codeact+subcalls``: the paper's CodeAct baseline (C.1): a ReAct loop of code in a
  REPL, run by the RLM engine with a system prompt of its own (:func:`~rlm_kernel.prompts.codeact_system`)
  that holds the whole context, so the root reads it at once; the REPL holds it too, as
  ``context``. ``codeact`` has no sub-call functions (the ``no_subcalls`` profile's REPL);
  ``codeact+subcalls`` has ``llm_query`` and ``llm_query_batched``, and no child RLMs. A context past
  the window fails on the first request with the provider's own error, as in ``base``.
- ``reference``: the reference ``rlms`` package (``pip install rlms``), through its own API, on
  an OpenAI-compatible endpoint (the bundled model's llama.cpp server, for ``local``).

A method that runs the root in a REPL (``rlm``, ``rlm-no-subcalls``, ``codeact``,
``codeact+subcalls``) may be named with ``+tips`` (``rlm+tips``, ``codeact+subcalls+tips``): the
same method with the sweep's ``tips`` appended to the root's prompt; without the suffix it runs
without them. So one sweep puts both side by side, and each is a rollout of its own in the
results. Only a final ``+tips`` is a suffix: ``codeact+subcalls`` is a method's own name. The
sweep's ``tools`` and ``sub_tools`` go to every one of those methods.

Each returns an :class:`Outcome` with the tokens, calls and cost of every LM call it made; a
failure of the method is an outcome with ``error`` set (and no answer), so a sweep goes on.
Exceptions that escape are the harness's own faults, and the runner records them as crashed
rollouts, which a resumed sweep runs again.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..config import RLMConfig, normalize
from ..errors import ConfigError, ProviderError, RLMError
from ..lm import BACKENDS, backend
from ..lm.base import Completion
from ..lm.tokens import CHARS_PER_TOKEN, estimate_tokens
from .tasks import Task, as_text

__all__ = [
    "Settings",
    "DEFAULTS",
    "Outcome",
    "METHODS",
    "TIPS",
    "CHARS_PER_TOKEN",
    "FIRST_CHARS_PER_TOKEN",
    "run_method",
    "split_method",
    "check_methods",
    "chunks",
]

TIPS = "+tips"  # the suffix of a method that runs with the sweep's tips
# The methods whose root works in a REPL, and may run with the sweep's tips.
_TAKES_TIPS = ("rlm", "rlm-no-subcalls", "codeact", "codeact+subcalls")


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
    cached_tokens: int = 0  # of the input tokens, root and sub, those read from a prompt cache
    calls: int = 0
    cost: float | None = None
    iterations: int = 0
    trajectory: str | None = None
    warnings: list[str] = field(default_factory=list)


def _outcome_of(result: Any) -> Outcome:
    """An RLM run's result as an outcome."""
    usage = result.usage
    return Outcome(
        answer=result.response,
        error=result.error,
        root_input_tokens=usage.root.input_tokens,
        root_output_tokens=usage.root.output_tokens,
        sub_input_tokens=usage.sub.input_tokens,
        sub_output_tokens=usage.sub.output_tokens,
        cached_tokens=usage.total.cached_tokens,
        calls=usage.total.calls,
        cost=usage.total.cost,
        iterations=result.iterations,
        trajectory=str(result.log_path) if result.log_path else None,
        warnings=list(result.warnings),
    )


async def _rlm(task: Task, settings: Settings, log_dir: Path | None, *, subcalls: bool = True) -> Outcome:
    from ..rlm import RLM

    config = replace(settings.rlm, log_dir=log_dir if log_dir is not None else False)
    if not subcalls:
        config = replace(config, prompt_profile="no_subcalls")
    result = await RLM.from_config(config).acompletion(task.context, task.question)
    return _outcome_of(result)


async def _codeact(task: Task, settings: Settings, log_dir: Path | None, *, subcalls: bool) -> Outcome:
    """The paper's CodeAct baseline on the RLM engine: the whole context in the root's system prompt.
    The profile only chooses the REPL (``no_subcalls``: no sub-call functions); the prompt is
    CodeAct's own, whatever profile the sweep names, and ``rlm_query`` starts no child RLM."""
    from ..prompts import codeact_system
    from ..rlm import RLM

    system = codeact_system(as_text(task.context), subcalls=subcalls, protocol=settings.rlm.protocol)
    config = replace(
        settings.rlm,
        log_dir=log_dir if log_dir is not None else False,
        prompt_profile="default" if subcalls else "no_subcalls",
        system_prompt=system,
        max_depth=1,
        compaction=False,  # the paper's CodeAct keeps its whole history
    )
    result = await RLM.from_config(config).acompletion(task.context, task.question)
    return _outcome_of(result)


def _plain_lm(settings: Settings) -> Any:
    """The root's model as a plain client, for the methods without a REPL: one try a request, as
    long as the rollout may take (a slow model reads long; a retry would read it all again)."""
    from ..lm import make_lm

    name, kwargs, model = settings.rlm.lm_kwargs("root")
    if settings.rlm.max_timeout is not None:
        kwargs.setdefault("timeout", settings.rlm.max_timeout)
        kwargs.setdefault("max_retries", 0)
    return make_lm(name, kwargs, model=model)


class _Failed(Exception):
    """A call of a plain-model method failed; ``error`` says how, in the outcome's words, and
    ``refused`` whether the provider turned the request down as too large or malformed (HTTP 400
    or 413), as it does a prompt past the window."""

    def __init__(self, error: str, *, refused: bool = False) -> None:
        super().__init__(error)
        self.error = error
        self.refused = refused


class _Calls:
    """The LM calls of one plain-model rollout, within the rollout's time, with their tokens and cost
    added up. A refused request counts as a call that cost nothing (nothing was read); one cut off
    by the rollout's time makes the cost unknown (the provider may have read it)."""

    def __init__(self, lm: Any, timeout: float | None) -> None:
        self.lm = lm
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.calls = self.input_tokens = self.output_tokens = self.cached_tokens = 0
        self.cost: float | None = 0.0
        self.warnings: list[str] = []

    async def ask(self, prompt: str, max_tokens: int) -> Completion:
        """The reply; raises :class:`_Failed` when the provider refuses or time runs out."""
        left = None if self.deadline is None else self.deadline - time.monotonic()
        if left is not None and left <= 0:
            raise _Failed(f"no reply within the rollout's {self.timeout:g} s")
        self.calls += 1
        try:
            completion = await asyncio.wait_for(
                self.lm.complete([{"role": "user", "content": prompt}], max_tokens=max_tokens), left
            )
        except asyncio.TimeoutError:
            self.cost = None
            raise _Failed(f"no reply within the rollout's {self.timeout:g} s") from None
        except RLMError as exc:  # the provider refused: nothing was read, nothing is owed
            refused = isinstance(exc, ProviderError) and exc.status in (400, 413)
            raise _Failed(str(exc), refused=refused) from None
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens
        self.cached_tokens += completion.cached_tokens
        cost = completion.cost
        self.cost = None if cost is None or self.cost is None else self.cost + cost
        return completion

    def outcome(self, answer: str | None, error: str | None = None) -> Outcome:
        return Outcome(
            answer=answer,
            error=error,
            root_input_tokens=self.input_tokens,
            root_output_tokens=self.output_tokens,
            cached_tokens=self.cached_tokens,
            calls=self.calls,
            cost=self.cost,
            iterations=self.calls,
            warnings=self.warnings,
        )


async def _base(task: Task, settings: Settings, log_dir: Path | None) -> Outcome:
    lm = _plain_lm(settings)
    calls = _Calls(lm, settings.rlm.max_timeout)
    try:
        reply = await calls.ask(f"{as_text(task.context)}\n\n{task.question}", settings.base_max_tokens)
    except _Failed as failed:
        return calls.outcome(None, failed.error)
    finally:
        await lm.aclose()
    return calls.outcome(reply.text)


# Characters a token, as the summary agent estimates them. Measured with Qwen2.5's tokenizer on the
# generated families: English and code 3.5 to 4.3, OOLONG and JSON records 2.2 to 2.9, a CSV of
# numbers 1.6. Whether a context fits whole is judged at CHARS_PER_TOKEN; the first part is sized
# at FIRST_CHARS_PER_TOKEN, and each later one at what the provider counted of the requests before
# (the lowest ratio seen, less a tenth), never above CHARS_PER_TOKEN.
FIRST_CHARS_PER_TOKEN = 1.5
_TEMPLATE_TOKENS = 64  # the chat template's own framing of a request, and the estimate's slack
_MIN_PART_TOKENS = 64  # a window that leaves less room for a part of the context is too small

_SUMMARY_UPDATE = (
    "You are reading a long context one part at a time, to answer a question about it at the end. "
    "You see one part and your notes so far; nothing else of the context is kept.\n\n"
    "Question: {question}\n\nYour notes so far:\n{summary}\n\n"
    "Part {i} of the context (characters {first:,} to {last:,} of {total:,}):\n"
)
_SUMMARY_UPDATE_END = (
    "\n\nWrite your notes again, updated with this part. Keep every fact the question may need "
    "(names, numbers, dates, exact wording, counts so far) and drop the rest. Reply with the notes only."
)
_NO_NOTES = "(none yet: this is the first part)"
_SUMMARY_ANSWER = (
    "Notes taken while reading a long context one part at a time, for the question below:\n\n"
    "{summary}\n\n{question}"
)


def _tokens(text: str) -> int:
    return estimate_tokens(text)


def _cut(text: str, start: int, size: int) -> int:
    """Where the part of at most ``size`` characters from ``start`` ends: after a line break in its
    last fifth where there is one, else after a space there, else at ``size``."""
    end = min(start + size, len(text))
    if end < len(text):
        floor = start + size - size // 5
        cut = text.rfind("\n", floor, end)
        if cut < 0:
            cut = text.rfind(" ", floor, end)
        if cut >= 0:
            end = cut + 1
    return end


def chunks(text: str, size: int) -> list[str]:
    """``text`` in parts of at most ``size`` characters that join back to it exactly, each cut as
    the summary agent cuts its parts (after a line break or a space near the end where there is one)."""
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    parts, start = [], 0
    while start < len(text):
        end = _cut(text, start, size)
        parts.append(text[start:end])
        start = end
    return parts


async def _summary(task: Task, settings: Settings, log_dir: Path | None) -> Outcome:
    """The paper's summary agent: see the module's docstring. Each summary is at most ``reply``
    tokens (a quarter of the window, or ``base_max_tokens`` if fewer), and each request leaves room
    for the running summary, the reply and the question besides its part of the context. A whole
    context that the provider refuses (HTTP 400 or 413: more tokens than estimated) is then read
    in parts."""
    lm = _plain_lm(settings)
    calls = _Calls(lm, settings.rlm.max_timeout)
    try:
        return await _summarise(lm, calls, task, settings)
    except _Failed as failed:
        return calls.outcome(None, failed.error)
    finally:
        await lm.aclose()


async def _summarise(lm: Any, calls: _Calls, task: Task, settings: Settings) -> Outcome:
    text, question = as_text(task.context), task.question
    window = lm.context_window
    reply = min(settings.base_max_tokens, window // 4) if window else settings.base_max_tokens
    whole = f"{text}\n\n{question}"
    if window is None or _tokens(whole) + reply + _TEMPLATE_TOKENS <= window:
        try:
            return calls.outcome((await calls.ask(whole, settings.base_max_tokens)).text)
        except _Failed as failed:
            if window is None or not failed.refused:
                raise
            calls.warnings.append(f"the whole context was refused, so it was read in parts: {failed.error}")
    # A part's request: the instructions with the question, the summary so far, the part.
    n = len(text)  # no part's number or position is longer
    frame = _SUMMARY_UPDATE.format(question=question, summary="", i=n, first=n, last=n, total=n)
    room = window - _tokens(frame + _SUMMARY_UPDATE_END) - 2 * reply - _TEMPLATE_TOKENS
    if room < _MIN_PART_TOKENS:
        return calls.outcome(
            None,
            f"{lm.model_name}'s window of {window:,} tokens leaves no room for a part of the context "
            f"beside the question and a summary of {reply:,} tokens: lower --base-max-tokens, "
            "or use a model with a larger window",
        )
    ratio, measured = FIRST_CHARS_PER_TOKEN, math.inf
    summary, start, i = "", 0, 0
    while start < len(text):
        i += 1
        end = _cut(text, start, max(int(room * ratio), 1))
        head = _SUMMARY_UPDATE.format(
            question=question, summary=summary or _NO_NOTES, i=i, first=start + 1, last=end, total=len(text)
        )
        prompt = head + text[start:end] + _SUMMARY_UPDATE_END
        completion = await calls.ask(prompt, reply)
        if completion.input_tokens > 0:  # the provider's own count sizes the next parts
            measured = min(measured, len(prompt) / completion.input_tokens)
            ratio = min(CHARS_PER_TOKEN, 0.9 * measured)
        if notes := completion.text.strip():
            summary = notes
        else:
            calls.warnings.append(f"the summary of part {i} was empty: kept the one before")
        start = end
    final = _SUMMARY_ANSWER.format(summary=summary or _NO_NOTES, question=question)
    return calls.outcome((await calls.ask(final, settings.base_max_tokens)).text)


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
        # The server's own key: the machine's llama.cpp server answers no request without it.
        key = lm.api_key or "not-needed"
        kwargs = {"model_name": lm.model_name, "base_url": str(lm.base_url), "api_key": key}
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


async def _codeact_plain(task: Task, settings: Settings, log_dir: Path | None) -> Outcome:
    return await _codeact(task, settings, log_dir, subcalls=False)


async def _codeact_subcalls(task: Task, settings: Settings, log_dir: Path | None) -> Outcome:
    return await _codeact(task, settings, log_dir, subcalls=True)


# In the order of the paper's Table 1 where it has them.
METHODS: dict[str, Method] = {
    "base": _base,
    "codeact": _codeact_plain,
    "codeact+subcalls": _codeact_subcalls,
    "summary": _summary,
    "rlm": _rlm,
    "rlm-no-subcalls": _no_subcalls,
    "reference": _reference,
}


def _listed(names: tuple[str, ...] | list[str]) -> str:
    """``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


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
            raise ConfigError(f"Method {name!r}: only {_listed(_TAKES_TIPS)} take tips.")
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
