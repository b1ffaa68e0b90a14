"""Where the root's code runs: ``local`` (this process), ``kernel`` (a kernel process of its own on
this machine) or ``gateway`` (a kernel of a remote Jupyter Kernel Gateway). See :mod:`.base`; their
settings are declared in :mod:`.settings`."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from ..errors import ConfigError
from ..runtime import Runtime
from .base import Executor
from .settings import ExecutorSettings

__all__ = ["make_executor", "check_executor", "ExecutorSettings"]


def _class(name: str) -> type:
    if name == "local":
        from .local import LocalExecutor

        return LocalExecutor
    if name == "kernel":
        from .kernel import KernelExecutor

        return KernelExecutor
    if name == "gateway":
        from .gateway import GatewayExecutor

        return GatewayExecutor
    raise ConfigError(f"Unknown executor {name!r}: choose one of local, kernel, gateway.")


def check_executor(name: str, kwargs: Mapping[str, Any]) -> None:
    """A one-line ConfigError now for settings the executor does not take (``kwargs``: its
    :class:`ExecutorSettings`, or a dict of them), a gateway without an address, or a sandbox that
    cannot be made."""
    _class(name)
    settings = ExecutorSettings.of(kwargs, name)
    if name == "gateway":
        _class(name)(settings)  # the address and token are found now, not at the first step
    elif name == "kernel" and settings.isolation == "sandbox":
        from .sandbox import problem

        if (why := problem()) is not None:
            raise ConfigError(why)


def make_executor(
    name: str,
    kwargs: Mapping[str, Any],
    *,
    tag: str,
    namespace: MutableMapping[str, Any] | None = None,
    runtime: Runtime | None = None,
) -> Executor:
    """The executor ``name`` with its settings (``kwargs``: an :class:`ExecutorSettings`, or a dict
    of them); a kernel's is owned by ``runtime`` (the run's, else the one of the first run bound, else
    the process's default one)."""
    if name == "local":
        from .local import LocalExecutor

        return LocalExecutor(namespace if namespace is not None else {}, tag=tag)
    if namespace is not None:
        raise ConfigError(
            f"namespace= is for the local executor: the {name} executor's variables live in its kernel."
        )
    return _class(name)(ExecutorSettings.of(kwargs, name), tag=tag, runtime=runtime)
