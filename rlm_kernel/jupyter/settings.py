"""The magics' settings: RLMConfig's run settings as ``%config`` traits, and each setting's effective
value with where it came from, as ``%rlm config`` shows it.

A setting's value is the first of: the magic's option, ``%config RLMMagics.<name>`` (or
``ipython_config.py``), an older spelling set that way (with a warning), its environment variable,
and its default; with no backend named, the provider whose key is found. ``RLMMagics.mode_cap``
caps the mode whatever set it.
"""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError
from traitlets import Bool, Dict, Enum, Float, Int, List, TraitType, Unicode
from traitlets.config import Configurable

from ..config import (
    ALIASES,
    EXECUTOR_SETTINGS,
    RUN_SETTINGS,
    DeprecatedName,
    setting_choices,
    setting_default,
    setting_env,
    setting_help,
    setting_kind,
    setting_type,
)
from ..lm import backend as backend_of
from ..lm import keyed_backend
from ..risk import capped
from ..tools import MCPServer

__all__ = ["NO_KEY", "Setting", "config_table", "effective_settings", "settings_traits"]

NO_KEY = "no API key found: the bundled model"
# The executors' settings, one trait each (%config RLMMagics.memory_mb = 1024), but a secret's.
_EXECUTOR_SETTINGS = tuple(n for n in EXECUTOR_SETTINGS if setting_kind(n) != "secret")
_MAGICS_OWN = ("mode", "answer", "widget")  # the magics' settings that are not RLMConfig's


@dataclass(frozen=True)
class Setting:
    name: str
    value: Any
    source: str


def _trait(name: str) -> TraitType:
    """The %config trait of setting ``name``, from its type and metadata where it is declared."""
    default = setting_default(name)
    help = setting_help(name)
    if env := setting_env(name):
        help += f" (env {env})"
    if setting_kind(name) in ("dict", "functions"):
        trait: TraitType = Dict(help=help) if isinstance(default, dict) else List(help=help)
        return trait.tag(config=True)
    optional = default is None
    if choices := setting_choices(name):
        return Enum(list(choices), default, allow_none=optional, help=help).tag(config=True)
    kind = setting_type(name)
    if kind is bool:
        return Bool(default, allow_none=optional, help=help).tag(config=True)
    trait_type = {int: Int, float: Float}.get(kind, Unicode)
    return trait_type(default, allow_none=optional, help=help).tag(config=True)


def settings_traits() -> dict[str, TraitType]:
    """RLMConfig's run settings as traits, and each older spelling as a trait of its own (read with
    a warning)."""
    traits = {name: _trait(name) for name in (*RUN_SETTINGS, *_EXECUTOR_SETTINGS)}
    traits.update({old: _trait(new) for old, new in ALIASES.items()})
    return traits


def effective_settings(
    magics: Configurable, opts: argparse.Namespace | None, namespace: Mapping[str, Any]
) -> list[Setting]:
    """Each setting's effective value and where it came from; environment read now. ``namespace``
    is the notebook's, where ``--tools`` and ``--output-type`` find what they name."""
    out = []
    for name in (*RUN_SETTINGS, *_EXECUTOR_SETTINGS, *_MAGICS_OWN):
        found = _from_option(name, opts, namespace)
        out.append(found if found is not None else _configured(magics, name))
        if name == "mode":
            out[-1] = _capped(out[-1], magics.mode_cap)  # type: ignore[attr-defined]
    return out


def _from_option(name: str, opts: argparse.Namespace | None, namespace: Mapping[str, Any]) -> Setting | None:
    """The value the magic's option gives setting ``name``, if it gives one."""
    if opts is None:
        return None
    option = False if name == "widget" and opts.no_widget else getattr(opts, name, None)
    if option is None:
        return None
    if name in RUN_SETTINGS and setting_kind(name) == "functions":
        return Setting(name, notebook_functions(option, name, namespace), "magic option")
    if name == "output_type":  # a class or schema of the notebook's
        found = namespace.get(option)
        option = found if isinstance(found, (type, dict)) else option
    return Setting(name, option, "magic option")


def _configured(magics: Configurable, name: str) -> Setting:
    """Setting ``name`` where no option gives it: %config's, an older name's, the environment's,
    the backend whose key is found, or the default."""
    if _explicit(magics, name):
        return Setting(name, getattr(magics, name), "%config / ipython_config")
    old = next((o for o, new in ALIASES.items() if new == name and _explicit(magics, o)), None)
    if old is not None:
        warnings.warn(
            f"RLMMagics.{old} is now called RLMMagics.{name}; the old name will go.",
            DeprecatedName,
            stacklevel=4,  # the caller of RLMMagics.settings
        )
        return Setting(name, getattr(magics, old), f"%config RLMMagics.{old}")
    env = setting_env(name) if name in RUN_SETTINGS else None
    if env and os.environ.get(env):
        return Setting(name, os.environ[env], f"${env}")
    if name == "backend":
        return found_backend(magics.backend_kwargs)  # type: ignore[attr-defined]
    return Setting(name, getattr(magics, name), "default")


def _explicit(magics: Configurable, name: str) -> bool:
    """Whether ``%config`` or ``ipython_config.py`` set ``RLMMagics.<name>``."""
    section = magics.config.get("RLMMagics") if "RLMMagics" in magics.config else None
    return section is not None and name in section


def _capped(mode: Setting, cap: str) -> Setting:
    if capped(str(mode.value), cap) == mode.value:
        return mode
    return Setting(mode.name, cap, f"capped by RLMMagics.mode_cap ({mode.value} asked)")


def found_backend(backend_kwargs: Mapping[str, Any]) -> Setting:
    """With no backend configured: the provider whose key is found (OpenAI's first), else the
    bundled model, which needs none. Services with no default model are only chosen by name."""
    if (spec := keyed_backend()) is not None:
        return Setting("backend", spec.name, f"${spec.key_var} is set")
    if backend_kwargs.get("api_key"):
        return Setting("backend", "openai", "default: backend_kwargs has an api_key")
    return Setting("backend", "local", NO_KEY)


def notebook_functions(names: str, option: str, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """``--tools a,b``: the notebook's functions of those names, and the tools of its MCP servers
    of those names, by the names the servers give them."""
    found: dict[str, Any] = {}
    for name in filter(None, (n.strip() for n in names.split(","))):
        value = namespace.get(name)
        if isinstance(value, MCPServer):
            found.update((tool.name, tool) for tool in value.tools())
        elif callable(value):
            found[name] = value
        else:
            raise UsageError(
                f"--{option.replace('_', '-')}: no function or MCP server named {name!r} in the namespace"
            )
    return found


def config_table(found: list[Setting]) -> str:
    """``%rlm config``: each setting, its value and its source, then whether the chosen backend's
    environment variables are set (a base URL shown, a key never)."""
    rows = [(s.name, repr(s.value), s.source) for s in found]
    backend = next(s.value for s in found if s.name == "backend")
    declared = backend_of(backend)
    for var in filter(None, (declared.key_var, declared.base_url_var)):
        shown = "set" if os.environ.get(var) else "not set"
        if var.endswith("BASE_URL") and os.environ.get(var):
            shown = os.environ[var]
        rows.append((var, shown, "environment"))
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{n.ljust(width)}  {v}  ({src})" for n, v, src in rows)
