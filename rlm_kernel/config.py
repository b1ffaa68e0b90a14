"""The settings of one run, frozen. A child run is ``replace(config, depth=config.depth + 1)``."""

from __future__ import annotations

import argparse
import difflib
import typing
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError
from .executors.settings import SETTINGS as EXECUTOR_SETTINGS
from .executors.settings import ExecutorSettings
from .lm import BACKENDS as _BACKENDS
from .lm import backend as backend_of
from .secrets import public_kwargs
from .setting import setting
from .tools import tools_of

__all__ = [
    "RLMConfig",
    "BACKENDS",
    "PROFILES",
    "PROTOCOLS",
    "RUN_SETTINGS",
    "EXECUTORS",
    "EXECUTOR_SETTINGS",
    "ExecutorSettings",
    "ALIASES",
    "DeprecatedName",
    "setting_help",
    "setting_env",
    "setting_kind",
    "setting_choices",
    "setting_type",
    "setting_default",
    "normalize",
    "add_arguments",
    "executor_kwargs_of",
]

BACKENDS = tuple(_BACKENDS)
PROFILES = ("default", "small", "no_subcalls")
PROTOCOLS = ("answer", "final", "both")
EXECUTORS = ("local", "kernel", "gateway")
# Roots that vote by default on the bundled models: one, until votes are shown to help there. With
# three, the 0.5B's greedy root, batched with two sampled ones, reads needles it reads alone
# wrongly, and paraphrases split votes that agree (docs/evaluation.md).
DEFAULT_VOTES = 1
# The settings of a few named values, and whether None (empty: a default) is one of them.
_CHOSEN = (
    ("backend", BACKENDS, False),
    ("sub_backend", BACKENDS, True),
    ("prompt_profile", PROFILES, True),
    ("protocol", PROTOCOLS, False),
    ("executor", EXECUTORS, False),
)
# Numbers with a least value, where given: (setting, least, the rule as the error says it).
_AT_LEAST = (
    ("output_retries", 0, "must be 0 or more"),
    ("max_errors", 1, "must be at least 1"),
    ("votes", 1, "must be at least 1 (1: one root, no vote)"),
    ("max_reply_tokens", 16, "must be at least 16"),
)


class DeprecatedName(FutureWarning):
    """A setting was given by an older spelling (``profile`` for ``prompt_profile``): it still works.
    A FutureWarning, so that notebooks and command lines show it."""


@dataclass(frozen=True)
class RLMConfig:
    backend: str = setting(
        "openai", "The LM provider: " + ", ".join(_BACKENDS), env="RLM_BACKEND", choices=tuple(_BACKENDS)
    )
    model_name: str | None = setting(
        None, "The root model; empty: the backend's default", env="RLM_MODEL", alias="model"
    )
    backend_kwargs: dict[str, Any] = setting(
        help="The backend's own arguments, e.g. {'base_url': ...}", kind="dict", factory=dict
    )
    sub_backend: str | None = setting(
        None, "The sub-calls' provider; empty: the root's", choices=tuple(_BACKENDS)
    )
    sub_model_name: str | None = setting(
        None, "The sub-calls' model; empty: the root's model", env="RLM_SUB_MODEL", alias="sub_model"
    )
    sub_models: tuple[str, ...] | None = setting(
        None,
        "More models the code's sub-calls may name (llm_query(p, model=...)), on the sub-calls' "
        "provider, besides the sub-model and the root model; a list, or names separated by commas",
    )
    sub_backend_kwargs: dict[str, Any] | None = None
    max_iterations: int = setting(30, "Root turns before the run must answer")
    max_errors: int | None = setting(None, "Steps in a row that may fail before the run stops; empty: any")
    max_depth: int = setting(1, "Depth of child RLMs (rlm_query); 1 means none")
    max_output_chars: int = setting(8192, "Characters of a step's output the root sees; the rest is cut")
    max_concurrency: int = setting(32, "Sub-calls in flight at once")
    max_budget: float | None = setting(None, "US dollars for the whole run tree")
    max_tokens: int | None = setting(None, "LM tokens for the whole run tree")
    max_timeout: float | None = setting(None, "Seconds for the whole run tree", alias="timeout")
    max_reply_tokens: int | None = setting(None, "Tokens of one root reply; empty: the profile's default")
    system_prompt: str | None = None
    prompt_profile: str | None = setting(
        None,
        "The root's prompts: default, small or no_subcalls; empty: by backend",
        alias="profile",
        choices=PROFILES,
    )
    protocol: Literal["answer", "final", "both"] = setting(
        "both", "How code ends a run: the answer dict, FINAL lines, or both"
    )
    executor: Literal["local", "kernel", "gateway"] = setting(
        "local", "Where the code runs: this process, a kernel of its own, or a Kernel Gateway's"
    )
    # Given as a dict, it is the executor's settings from __post_init__ on (rlm_kernel.executors.settings).
    executor_kwargs: ExecutorSettings = setting(
        help="The kernel and gateway executors' arguments, e.g. {'memory_mb': 2048} or "
        "{'isolation': 'none'} where no sandbox can be made",
        kind="dict",
        factory=dict,
    )
    tips: str | None = setting(None, "A hint about how to work, appended to the root's prompt")
    max_tool_rounds: int = setting(8, "Rounds of tool calls one sub-call may make before it must answer")
    oversize: Literal["error", "split"] = setting(
        "error",
        "A sub-call's prompt over the sub-model's window: raise SubcallTooLarge in the code (error), "
        "or ask it in parts and join their answers (split)",
        choices=("error", "split"),
    )
    verify: bool = setting(False, "Also ask the sub-model whether what the code printed supports the answer")
    output_type: Any = setting(
        None,
        "The answer's type: a pydantic model, dataclass, TypedDict, JSON schema or type such as list[str]; "
        "empty: text",
    )
    output_retries: int = setting(2, "Times the root may answer again when its answer is not of output_type")
    compaction: bool | None = setting(
        None,
        "Summarise the root's older turns when its conversation nears the model's window; empty: on for "
        "windows up to 32K tokens",
    )
    compaction_threshold: float = setting(
        0.75, "The share of the root's window its conversation may fill before it is compacted"
    )
    # Functions for the root's code ({"name": fn}, or a list named by __name__), and functions only
    # sub-calls' models may call. Normalized to Tool records (rlm_kernel.tools).
    tools: Any = setting(help="Functions the root's code may call", kind="functions", factory=dict)
    sub_tools: Any = setting((), "Functions only sub-calls' models may call", kind="functions")
    log_dir: str | Path | Literal[False] | None = setting(
        None, "Where trajectories go; empty: $RLM_LOG_DIR or ~/.rlm_kernel/runs"
    )
    record: str | Path | None = setting(None, "Also save every LM reply to this file, for the replay backend")
    votes: int | None = setting(
        None,
        "Root runs that answer each question at once and vote on the answer (the first greedy, the "
        "others sampled); a split vote is a low_confidence warning and result.ok False; empty: 1; "
        "always 1 in sessions, notebook mode and step mode, where a human is in the loop",
    )
    depth: int = 0

    def __post_init__(self) -> None:
        for kwargs_name, name in (("backend_kwargs", "model_name"), ("sub_backend_kwargs", "sub_model_name")):
            self._model_of(kwargs_name, name)
        object.__setattr__(self, "sub_models", _names(self.sub_models, "sub_models"))
        object.__setattr__(self, "tools", tools_of(self.tools))
        object.__setattr__(self, "sub_tools", tuple(tools_of(self.sub_tools).values()))
        from .repl import RESERVED

        if taken := sorted(set(self.tools) & set(RESERVED)):
            raise ConfigError(f"A tool cannot be named {taken[0]!r}: the REPL already has that name.")
        for name, choices, optional in _CHOSEN:
            value = getattr(self, name)
            if not (value is None and optional) and value not in choices:
                raise ConfigError(f"Unknown {name} {value!r}: choose one of {', '.join(choices)}.")
        for name in ("max_iterations", "max_depth", "max_output_chars", "max_concurrency", "max_tool_rounds"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}.")
        self._check_paths_and_types()
        for name, least, rule in _AT_LEAST:
            if (value := getattr(self, name)) is not None and value < least:
                raise ConfigError(f"{name} {rule}, got {value}.")
        # executor_kwargs, a dict where the settings are given, is the executor's typed settings from here
        object.__setattr__(self, "executor_kwargs", ExecutorSettings.of(self.executor_kwargs, self.executor))

    def _model_of(self, kwargs_name: str, name: str) -> None:
        """The reference's spelling, backend_kwargs={"model_name": ...}, is the same setting as model_name."""
        kwargs = getattr(self, kwargs_name)
        if not kwargs or "model_name" not in kwargs:
            return
        kwargs = dict(kwargs)
        given = kwargs.pop("model_name")
        if getattr(self, name) not in (None, given):
            raise ConfigError(
                f"Two models given: {name}={getattr(self, name)!r} and {kwargs_name}['model_name']"
                f"={given!r}: give one."
            )
        object.__setattr__(self, kwargs_name, kwargs)
        object.__setattr__(self, name, given)

    def _check_paths_and_types(self) -> None:
        if (
            self.log_dir not in (None, False)
            and Path(self.log_dir).exists()
            and not Path(self.log_dir).is_dir()
        ):
            raise ConfigError(f"log_dir {str(self.log_dir)!r} is a file: give a folder for the trajectories.")
        if not 0 < self.compaction_threshold <= 0.95:
            raise ConfigError(
                "compaction_threshold is a share of the window, above 0 and at most 0.95; "
                f"got {self.compaction_threshold}."
            )
        from .typed import output_type

        output_type(self.output_type)  # a type that cannot be checked fails here, in one line

    @property
    def profile(self) -> str:
        if self.prompt_profile is not None:
            return self.prompt_profile
        return "small" if backend_of(self.backend).small else "default"

    @property
    def vote_count(self) -> int:
        """How many roots answer a question and vote: ``votes``, else the default of a small local
        model's backend (whose server runs them in parallel slots, at no cost per token), else 1."""
        if self.votes is not None:
            return self.votes
        return DEFAULT_VOTES if backend_of(self.backend).small else 1

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

    def compacts(self, window: int | None) -> bool:
        """Whether the root's history is compacted near a window of ``window`` tokens (None: unknown)."""
        if window is None:
            return False
        return self.compaction if self.compaction is not None else window <= 32_768

    @property
    def can_recurse(self) -> bool:
        """Whether ``rlm_query`` starts a child run here (else it is a plain ``llm_query``)."""
        return self.depth + 1 < self.max_depth

    def child(self) -> RLMConfig:
        """A child run's: its answer is text for its parent's code, whatever type the top one has."""
        return replace(self, depth=self.depth + 1, output_type=None)

    def lm_kwargs(self, role: str) -> tuple[str, dict[str, Any], str | None]:
        """(backend, its kwargs, model) of the root's LM or the sub-calls' (``role`` "sub"): the
        sub-calls take the root's backend, kwargs and model unless theirs are given."""
        if role == "root":
            return self.backend, dict(self.backend_kwargs), self.model_name
        backend = self.sub_backend or self.backend
        same = backend == self.backend and self.sub_backend_kwargs is None
        kwargs = self.sub_backend_kwargs if self.sub_backend_kwargs is not None else {}
        if same:
            kwargs = self.backend_kwargs
        return backend, dict(kwargs), self.sub_model_name or (self.model_name if same else None)

    def public(self) -> dict[str, Any]:
        """The settings for a trajectory: no API keys, no headers."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, (dict, ExecutorSettings)):
                value = public_kwargs(value)
            if isinstance(value, Path):
                value = str(value)
            if name == "tools":
                value = {n: t.signature for n, t in value.items()}
            elif name == "sub_tools":
                value = [t.signature for t in value]
            elif name == "output_type" and value is not None:
                from .typed import output_type

                declared = output_type(value)
                assert declared is not None
                value = {"name": declared.name, "schema": declared.schema}
            out[name] = value
        return out


def _names(value: Any, setting: str) -> tuple[str, ...] | None:
    """Names given as a list, or as one string of names separated by commas (a command line's)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = value.split(",")
    value = list(value) if isinstance(value, Iterable) else None
    if value is None or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{setting} takes names: a list of strings, or one string of names and commas.")
    return tuple(dict.fromkeys(name.strip() for name in value if name.strip()))


# The settings of a run that every front end offers under the same name (the Python API's keyword
# arguments, the magics' options and %config traits, the eval's flags): those with a help text above.
RUN_SETTINGS: tuple[str, ...] = tuple(f.name for f in fields(RLMConfig) if "help" in f.metadata)
# Older spellings, still accepted: {"profile": "prompt_profile", ...}.
ALIASES: dict[str, str] = {f.metadata["alias"]: f.name for f in fields(RLMConfig) if "alias" in f.metadata}
_FIELDS = {f.name: f for f in fields(RLMConfig)}
# The settings front ends are generated from: RLMConfig's, and the executors' nested in it.
_DECLARED = {**_FIELDS, **{f.name: f for f in fields(ExecutorSettings) if f.name in EXECUTOR_SETTINGS}}
assert not set(_FIELDS) & set(EXECUTOR_SETTINGS), "an executor setting has the name of a run setting"


def _hint(name: str) -> Any:
    return typing.get_type_hints(RLMConfig if name in _FIELDS else ExecutorSettings)[name]


def setting_help(name: str) -> str:
    return _DECLARED[name].metadata["help"]


def setting_env(name: str) -> str | None:
    """The environment variable a front end reads for setting ``name``, if it has one."""
    return _DECLARED[name].metadata.get("env")


def setting_kind(name: str) -> str | None:
    return _DECLARED[name].metadata.get("kind")


def setting_choices(name: str) -> tuple[str, ...] | None:
    tp = _hint(name)
    if typing.get_origin(tp) is Literal:
        return typing.get_args(tp)
    return _DECLARED[name].metadata.get("choices")


def setting_type(name: str) -> type:
    """The plain type a command line parses setting ``name`` as: bool, int, float or str."""
    tp = _hint(name)
    args = set(typing.get_args(tp)) or {tp}
    for plain in (bool, int, float):
        if plain in args or tp is plain:
            return plain
    return str


def setting_default(name: str) -> Any:
    """The value setting ``name`` has when none is given."""
    f = _DECLARED[name]
    return f.default_factory() if f.default is MISSING else f.default  # type: ignore[misc]


def normalize(
    settings: Mapping[str, Any], *, known: typing.Iterable[str] = (), where: str = "RLM"
) -> dict[str, Any]:
    """``settings`` by their current names: an older spelling is renamed with a
    :class:`DeprecatedName` warning; a name that is neither a field of RLMConfig nor in ``known`` is a
    one-line error that names the closest setting."""
    names = set(_FIELDS) | set(known)
    out: dict[str, Any] = {}
    for name, value in settings.items():
        if name in ALIASES and name not in names:
            new = ALIASES[name]
            warnings.warn(
                f"{where}: {name!r} is now called {new!r}; the old name will go.",
                DeprecatedName,
                stacklevel=3,
            )
            if new in settings:
                raise ConfigError(f"{where}: {name!r} and {new!r} are the same setting: give one.")
            name = new
        elif name not in names:
            close = difflib.get_close_matches(name, sorted(names | set(ALIASES)), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{where}: unknown setting {name!r}.{hint}")
        out[name] = value
    return out


def add_arguments(
    parser: argparse.ArgumentParser,
    *,
    defaults: RLMConfig | None = None,
    skip: typing.Iterable[str] = (),
    functions: str = "NAME,...",
    executor_settings: bool = False,
) -> None:
    """A ``--flag`` for each run setting (``--max-iterations``, ``--model-name``, ...) and a hidden one
    for each older spelling, all with ``dest`` the setting's name and default None (absent: the caller's
    own default). Dict settings are left out; ``functions`` is the metavar of ``--tools``. With
    ``executor_settings``, a flag for each of the executors' settings too (``--memory-mb``,
    ``--isolation``, ...) but a secret's, which :func:`executor_kwargs_of` gathers."""
    skip = set(skip)
    for name in (*RUN_SETTINGS, *(EXECUTOR_SETTINGS if executor_settings else ())):
        if name in skip or setting_kind(name) in ("dict", "secret"):
            continue
        if defaults is None:
            default = None
        else:
            default = getattr(defaults.executor_kwargs if name in EXECUTOR_SETTINGS else defaults, name)
        _add_flag(parser, name, default, functions)


def _add_flag(parser: argparse.ArgumentParser, name: str, default: Any, functions: str) -> None:
    flag = "--" + name.replace("_", "-")
    keywords: dict[str, Any] = {"dest": name, "default": None}
    help = setting_help(name)
    if default not in (None, (), {}, False):
        help += f" (default: {default})"
    if setting_kind(name) == "functions":
        keywords["metavar"] = functions
    elif setting_type(name) is bool:
        keywords["action"] = argparse.BooleanOptionalAction
    elif choices := setting_choices(name):
        keywords["choices"] = list(choices)
    else:
        keywords["type"] = setting_type(name)
    parser.add_argument(flag, help=help[0].lower() + help[1:], **keywords)
    if alias := _DECLARED[name].metadata.get("alias"):
        parser.add_argument(
            "--" + alias.replace("_", "-"),
            dest=name,
            action=_Deprecated,
            help=argparse.SUPPRESS,
            **{k: v for k, v in keywords.items() if k in ("type", "choices", "metavar")},
        )


def executor_kwargs_of(args: argparse.Namespace) -> dict[str, Any]:
    """The executors' settings given by the flags of ``add_arguments(..., executor_settings=True)``."""
    return {name: value for name in EXECUTOR_SETTINGS if (value := getattr(args, name, None)) is not None}


class _Deprecated(argparse.Action):
    """An older spelling of a flag: stores the value, with a :class:`DeprecatedName` warning."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        new = "--" + self.dest.replace("_", "-")
        warnings.warn(
            f"{option_string} is now called {new}; the old name will go.", DeprecatedName, stacklevel=2
        )
        setattr(namespace, self.dest, values)
