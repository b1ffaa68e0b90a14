"""Errors a user of rlm_kernel can see.

Every message is one line and says what to do next.

    RLMError
    ├── ConfigError          a bad option or argument (unknown backend, bad profile)
    │   └── MissingAPIKey    no key for a provider; names the variable to set
    ├── ProviderError        the provider refused a request (auth, unknown model, too long)
    ├── BudgetExceeded       max_budget / max_tokens / max_timeout reached across the run tree
    │   ├── BudgetExceededError       max_budget    (the reference ``rlms`` package's names)
    │   ├── TokenLimitExceededError   max_tokens
    │   └── TimeoutExceededError      max_timeout
    ├── RunCancelled         stopped by the user (Stop, interrupt, ``cancel()``); alias CancellationError
    ├── ErrorThresholdExceededError   max_errors steps failed in a row
    ├── SubcallTooLarge      a sub-call's prompt is over the sub-model's window (not sent): split it
    ├── ReplayMismatch       a replayed run asked for something the recording lacks
    ├── ModelFetchError      the local model could not be fetched or failed its checksum
    └── LocalServerError     llama.cpp's server could not start

Errors in the root LM's own code are not raised: they are data in the step's
observation and the root reads them as text.
"""

from __future__ import annotations

from .events import StopReason

__all__ = [
    "RLMError",
    "ConfigError",
    "MissingAPIKey",
    "ProviderError",
    "BudgetExceeded",
    "RunCancelled",
    "ReplayMismatch",
    "ModelFetchError",
    "LocalServerError",
    "SubcallTooLarge",
    "BudgetExceededError",
    "TokenLimitExceededError",
    "TimeoutExceededError",
    "CancellationError",
    "ErrorThresholdExceededError",
    "one_line",
]


def one_line(exc: BaseException) -> str:
    """An exception as one line of a message: its type, and the first line of its text if any."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class RLMError(Exception):
    """Base of every error rlm_kernel raises on purpose.

    ``stop`` is why a run that ends on this error stopped, for front ends to read instead of the
    message: ``"error"``, ``"budget"``, ``"user"`` (Stop, ``cancel()``) or ``"interrupt"``."""

    stop: StopReason = "error"
    partial_answer: str | None = None  # an error that ended a run, raised from its result: what it had


class ConfigError(RLMError, ValueError):
    """A bad option, argument or combination of them."""


class MissingAPIKey(ConfigError):
    """No API key for a provider."""

    def __init__(self, provider: str, env_var: str) -> None:
        self.provider = provider
        self.env_var = env_var
        super().__init__(
            f"No {provider} API key: set the {env_var} environment variable "
            f"or pass backend_kwargs={{'api_key': ...}}."
        )


class ProviderError(RLMError):
    """The provider answered with an error; ``message`` is the provider's own text."""

    def __init__(self, provider: str, message: str, status: int | None = None) -> None:
        self.provider = provider
        self.status = status
        self.provider_message = message
        where = f" (HTTP {status})" if status else ""
        super().__init__(f"{provider} error{where}: {message}")


class BudgetExceeded(RLMError):
    """A limit that holds across the whole run tree was reached."""

    stop = "budget"

    def __init__(self, limit: str, used: float, allowed: float) -> None:
        self.limit = limit
        self.used = used
        self.allowed = allowed
        super().__init__(f"{limit} exceeded: used {used:g} of {allowed:g}; raise the limit to go further.")


class RunCancelled(RLMError):
    """The run was stopped on request; the partial result is kept."""

    def __init__(self, reason: str = "stopped by the user", *, stop: StopReason = "user") -> None:
        self.reason = reason
        self.stop = stop
        super().__init__(f"Run cancelled: {reason}.")

    @classmethod
    def interrupted(cls) -> RunCancelled:
        """Ctrl-C, or the kernel's interrupt."""
        return cls("interrupted", stop="interrupt")


class ReplayMismatch(RLMError):
    """A replayed run diverged from its recording."""


class ModelFetchError(RLMError):
    """The default local model could not be fetched or verified."""


class LocalServerError(RLMError):
    """llama.cpp's server (the local backend) failed to start or answer."""


class SubcallTooLarge(RLMError):
    """A sub-call's prompt is over its model's window, less room for the reply, so it was not sent.

    Raised in the REPL by ``llm_query``, where the root's code can catch it and split the prompt;
    in a batch, ``index`` is the prompt's place. ``counted_by`` says how ``prompt_tokens`` was
    counted: the server's or provider's tokenizer, or a conservative estimate."""

    def __init__(
        self,
        prompt_tokens: int,
        window: int,
        model: str,
        limit: int | None = None,
        counted_by: str = "estimate",
        index: int | None = None,
    ) -> None:
        self.prompt_tokens = prompt_tokens
        self.window = window
        self.model = model
        self.limit = window if limit is None else limit  # the most the prompt may have
        self.counted_by = counted_by
        self.index = index
        where = f"prompts[{index}]: " if index is not None else ""
        size = (
            f"about {prompt_tokens:,} tokens (estimated)"
            if counted_by == "estimate"
            else f"{prompt_tokens:,} tokens (counted by {counted_by})"
        )
        room = f" ({self.limit:,} with room for the reply)" if self.limit < window else ""
        super().__init__(
            f"{where}a prompt of {size} does not fit {model}'s window of {window:,} tokens{room}: "
            "split it into smaller pieces and ask each, or set oversize='split'"
        )

    def fields(self) -> dict[str, object]:
        """What it is built from: it crosses a kernel's bridge as these, and is raised there again."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "window": self.window,
            "model": self.model,
            "limit": self.limit,
            "counted_by": self.counted_by,
            "index": self.index,
        }

    def __reduce__(self) -> tuple[type[SubcallTooLarge], tuple[object, ...]]:
        return type(self), tuple(self.fields().values())


# The reference ``rlms`` package's exceptions, by its names and with its attributes, so that code
# written for it catches ours (raised by :meth:`rlm_kernel.RLMResult.raise_for_error`).


class BudgetExceededError(BudgetExceeded):
    """``max_budget`` (US dollars) was reached."""

    def __init__(self, spent: float, budget: float) -> None:
        self.spent = spent
        self.budget = budget
        super().__init__("max_budget ($)", spent, budget)


class TokenLimitExceededError(BudgetExceeded):
    """``max_tokens`` was reached."""

    def __init__(self, tokens_used: int, token_limit: int) -> None:
        self.tokens_used = tokens_used
        self.token_limit = token_limit
        super().__init__("max_tokens", tokens_used, token_limit)


class TimeoutExceededError(BudgetExceeded):
    """``max_timeout`` (seconds) was reached."""

    def __init__(self, elapsed: float, timeout: float) -> None:
        self.elapsed = elapsed
        self.timeout = timeout
        super().__init__("max_timeout (s)", elapsed, timeout)


CancellationError = RunCancelled  # the reference's name for a run stopped on request


class ErrorThresholdExceededError(RLMError):
    """``max_errors`` steps in a row ended in an exception."""

    def __init__(self, error_count: int, threshold: int, last_error: str | None = None) -> None:
        self.error_count = error_count
        self.threshold = threshold
        self.last_error = last_error
        super().__init__(
            f"max_errors reached: {error_count} steps in a row failed (the last: {last_error or 'unknown'}); "
            "raise max_errors to go further."
        )
