"""The settings of one run, frozen. A child run is ``replace(config, depth=config.depth + 1)``."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError
from .tools import tools_of

__all__ = ["RLMConfig", "BACKENDS", "PROFILES", "PROTOCOLS", "RUN_SETTINGS", "EXECUTORS", "setting_help"]

BACKENDS = ("openai", "anthropic", "local", "replay")
PROFILES = ("default", "small", "no_subcalls")
PROTOCOLS = ("answer", "final", "both")
EXECUTORS = ("local", "kernel", "gateway")


@dataclass(frozen=True)
class RLMConfig:
    backend: str = "openai"
    backend_kwargs: dict[str, Any] = field(default_factory=dict)
    sub_backend: str | None = None
    sub_backend_kwargs: dict[str, Any] | None = None
    max_iterations: int = field(default=30, metadata={"help": "Root turns before the run must answer"})
    max_depth: int = field(default=1, metadata={"help": "Depth of child RLMs (rlm_query); 1 means none"})
    max_output_chars: int = field(
        default=8192, metadata={"help": "Characters of a step's output the root sees; the rest is cut"}
    )
    max_concurrency: int = field(default=32, metadata={"help": "Sub-calls in flight at once"})
    max_budget: float | None = field(default=None, metadata={"help": "US dollars for the whole run tree"})
    max_tokens: int | None = field(default=None, metadata={"help": "LM tokens for the whole run tree"})
    max_timeout: float | None = field(default=None, metadata={"help": "Seconds for the whole run tree"})
    max_reply_tokens: int | None = field(
        default=None, metadata={"help": "Tokens of one root reply; empty: the profile's default"}
    )
    system_prompt: str | None = None
    prompt_profile: str | None = None  # None: "small" for the local backend, else "default"
    protocol: Literal["answer", "final", "both"] = field(
        default="both", metadata={"help": "How code ends a run: the answer dict, FINAL lines, or both"}
    )
    executor: Literal["local", "kernel", "gateway"] = field(
        default="local",
        metadata={"help": "Where the code runs: this process, a kernel of its own, or a Kernel Gateway's"},
    )
    executor_kwargs: dict[str, Any] = field(default_factory=dict)  # see rlm_kernel.executors
    tips: str | None = field(
        default=None, metadata={"help": "A hint about how to work, appended to the root's prompt"}
    )
    max_tool_rounds: int = field(
        default=8, metadata={"help": "Rounds of tool calls one sub-call may make before it must answer"}
    )
    verify: bool = field(
        default=False,
        metadata={"help": "Also ask the sub-model whether what the code printed supports the answer"},
    )
    # Functions for the root's code ({"name": fn}, or a list named by __name__), and functions only
    # sub-calls' models may call. Normalized to Tool records (rlm_kernel.tools).
    tools: Any = field(default_factory=dict)
    sub_tools: Any = ()
    log_dir: str | Path | Literal[False] | None = None
    record: str | Path | None = None
    depth: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", tools_of(self.tools))
        object.__setattr__(self, "sub_tools", tuple(tools_of(self.sub_tools).values()))
        from .repl import RESERVED

        if taken := sorted(set(self.tools) & set(RESERVED)):
            raise ConfigError(f"A tool cannot be named {taken[0]!r}: the REPL already has that name.")
        if self.backend not in BACKENDS:
            raise ConfigError(f"Unknown backend {self.backend!r}: choose one of {', '.join(BACKENDS)}.")
        if self.sub_backend is not None and self.sub_backend not in BACKENDS:
            raise ConfigError(
                f"Unknown sub_backend {self.sub_backend!r}: choose one of {', '.join(BACKENDS)}."
            )
        if self.prompt_profile is not None and self.prompt_profile not in PROFILES:
            raise ConfigError(
                f"Unknown prompt_profile {self.prompt_profile!r}: choose one of {', '.join(PROFILES)}."
            )
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"Unknown protocol {self.protocol!r}: choose one of {', '.join(PROTOCOLS)}.")
        if self.executor not in EXECUTORS:
            raise ConfigError(f"Unknown executor {self.executor!r}: choose one of {', '.join(EXECUTORS)}.")
        for name in ("max_iterations", "max_depth", "max_output_chars", "max_concurrency", "max_tool_rounds"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}.")
        if (
            self.log_dir not in (None, False)
            and Path(self.log_dir).exists()
            and not Path(self.log_dir).is_dir()
        ):
            raise ConfigError(f"log_dir {str(self.log_dir)!r} is a file: give a folder for the trajectories.")
        if self.max_reply_tokens is not None and self.max_reply_tokens < 16:
            raise ConfigError(f"max_reply_tokens must be at least 16, got {self.max_reply_tokens}.")

    @property
    def profile(self) -> str:
        if self.prompt_profile is not None:
            return self.prompt_profile
        return "small" if self.backend == "local" else "default"

    @property
    def reply_tokens(self) -> int:
        """The most tokens one root reply may have. Small models writing code need few; a runaway
        reply (one sentence repeated for minutes) is stopped there."""
        if self.max_reply_tokens is not None:
            return self.max_reply_tokens
        return 1024 if self.profile == "small" else 16384

    @property
    def stop(self) -> tuple[str, ...]:
        """Stop sequences for root replies: the small profile's models stop after a code block,
        where they otherwise go on to write more code or an invented output."""
        return ("\n```\n",) if self.profile == "small" else ()

    @property
    def can_recurse(self) -> bool:
        """Whether ``rlm_query`` starts a child run here (else it is a plain ``llm_query``)."""
        return self.depth + 1 < self.max_depth

    def child(self) -> RLMConfig:
        return replace(self, depth=self.depth + 1)

    def public(self) -> dict[str, Any]:
        """The settings for a trajectory: no API keys, no headers."""
        hidden = {"api_key", "default_headers", "http_client", "auth_token"}
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, dict):
                value = {k: v for k, v in value.items() if k not in hidden}
            if isinstance(value, Path):
                value = str(value)
            if name == "tools":
                value = {n: t.signature for n, t in value.items()}
            elif name == "sub_tools":
                value = [t.signature for t in value]
            out[name] = value
        return out


# The settings of a run that every front end offers under the same name (the Python API's keyword
# arguments, the magics' options and %config traits): those with a help text above.
RUN_SETTINGS: tuple[str, ...] = tuple(
    f.name for f in RLMConfig.__dataclass_fields__.values() if "help" in f.metadata
)


def setting_help(name: str) -> str:
    return RLMConfig.__dataclass_fields__[name].metadata["help"]
