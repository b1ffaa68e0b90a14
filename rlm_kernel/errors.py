"""Errors a user of rlm_kernel can see.

Every message is one line and says what to do next.

    RLMError
    ├── ConfigError          a bad option or argument (unknown backend, bad profile)
    │   └── MissingAPIKey    no key for a provider; names the variable to set
    ├── ProviderError        the provider refused a request (auth, unknown model, too long)
    ├── BudgetExceeded       max_budget / max_tokens / max_timeout reached across the run tree
    ├── RunCancelled         stopped by the user (Stop, interrupt, ``cancel()``)
    ├── ReplayMismatch       a replayed run asked for something the recording lacks
    ├── ModelFetchError      the local model could not be fetched or failed its checksum
    └── LocalServerError     llama.cpp's server could not start

Errors in the root LM's own code are not raised: they are data in the step's
observation and the root reads them as text.
"""

from __future__ import annotations

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

    stop: str = "error"


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

    def __init__(self, reason: str = "stopped by the user", *, stop: str = "user") -> None:
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
