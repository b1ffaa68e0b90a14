"""Where the root's code runs: ``local`` (this process), ``kernel`` (a kernel process of its own on
this machine) or ``gateway`` (a kernel of a remote Jupyter Kernel Gateway). See :mod:`.base`."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, MutableMapping
from typing import Any

from ..errors import ConfigError
from ..runtime import Runtime
from .base import Executor

__all__ = ["make_executor", "check_executor"]


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


_NOT_SETTINGS = ("tag", "runtime")  # given by the run, not by executor_kwargs


def check_executor(name: str, kwargs: Mapping[str, Any]) -> None:
    """A one-line ConfigError now for executor_kwargs the executor does not take."""
    if name == "local":
        if kwargs:
            raise ConfigError("executor_kwargs are for the kernel and gateway executors; local takes none.")
        return
    takes = sorted(
        {
            p.name
            for cls in _class(name).__mro__
            if "__init__" in vars(cls) and cls is not object
            for p in inspect.signature(cls.__init__).parameters.values()
            if p.kind is p.KEYWORD_ONLY and p.name not in _NOT_SETTINGS and not p.name.startswith("_")
        }
    )
    for key in kwargs:
        if key not in takes:
            raise ConfigError(
                f"Unknown executor_kwargs key {key!r}: the {name} executor takes {', '.join(takes)}."
            )
    if name == "gateway":
        _class(name)(**kwargs)  # the address and token are found now, not at the first step
    elif kwargs.get("isolation", "sandbox") == "sandbox":
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
    """The executor ``name`` with its settings; a kernel's is owned by ``runtime`` (the run's, else the
    one of the first run bound, else the process's default one)."""
    if name == "local":
        from .local import LocalExecutor

        return LocalExecutor(namespace if namespace is not None else {}, tag=tag)
    if namespace is not None:
        raise ConfigError(
            f"namespace= is for the local executor: the {name} executor's variables live in its kernel."
        )
    return _class(name)(tag=tag, runtime=runtime, **kwargs)
