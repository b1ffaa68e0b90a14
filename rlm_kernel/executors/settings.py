"""The kernel and gateway executors' settings, declared once: ``RLMConfig.executor_kwargs``.

Each field is a setting like RLMConfig's (:func:`rlm_kernel.setting.setting`): its help, type and
default make its flag, its ``%config`` trait and its row of the docs' table, and ``executors``
says which executors take it. A dict given as ``executor_kwargs`` becomes an
:class:`ExecutorSettings` at the boundary (:meth:`ExecutorSettings.of`), where a key the executor
does not take is a one-line error naming those it does. A new setting is a field here, which the
executor then reads from its ``settings``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..setting import setting

__all__ = ["ExecutorSettings", "SETTINGS", "ISOLATIONS", "takes"]

ISOLATIONS = ("sandbox", "none")
KERNELS = ("kernel", "gateway")  # the executors that run code in a kernel: each takes these settings
GATEWAY = ("gateway",)


@dataclass(frozen=True)
class ExecutorSettings(Mapping[str, Any]):
    """Where and within what limits a kernel runs the root's code. Frozen, so a child run's executor
    shares its parent's; read as a mapping, it is the settings that were given (what
    ``executor_kwargs`` was), so code written for the dict takes it."""

    isolation: str = setting(
        "sandbox",
        "sandbox: a local kernel runs in a bubblewrap sandbox, a gateway's must be in one; none: without, "
        "where no sandbox can be made or the gateway isolates its kernels otherwise",
        choices=ISOLATIONS,
        executors=KERNELS,
    )
    kernel_name: str | None = setting(
        None, "The kernelspec; empty: python3, or rlm-sandbox on a gateway with a sandbox", executors=KERNELS
    )
    memory_mb: int | None = setting(
        4096,
        "Memory in MiB for all the kernel's processes and in-memory files together; empty: 4096 in a sandbox",
        executors=KERNELS,
    )
    max_procs: int = setting(256, "Processes the kernel may have at once", executors=KERNELS)
    file_mb: int = setting(1024, "The largest file the kernel may write, in MiB", executors=KERNELS)
    cpu_s: float | None = setting(
        None,
        "CPU seconds of all the kernel's processes together over its life, its start included; empty: "
        "3600 in a sandbox",
        executors=KERNELS,
    )
    step_timeout: float | None = setting(
        None,
        "Seconds a step may work before it is interrupted, and its kernel restarted if it does not stop; "
        "empty: 300",
        executors=KERNELS,
    )
    interrupt_grace_s: float = setting(
        3.0, "Seconds an interrupted step has to stop before its kernel is restarted", executors=KERNELS
    )
    max_subcalls: int | None = setting(
        10_000, "Sub-calls a run's code may make; empty: any", executors=KERNELS
    )
    output_cap: int = setting(
        1_000_000, "Characters of a step's output that leave the kernel", executors=KERNELS
    )
    warm: int = setting(1, "Kernels started ahead, so that a run need not wait for one", executors=KERNELS)
    url: str | None = setting(None, "The gateway's address; empty: $JUPYTER_GATEWAY_URL", executors=GATEWAY)
    auth_token: str | None = setting(
        None, "The gateway's token; empty: $JUPYTER_GATEWAY_AUTH_TOKEN", kind="secret", executors=GATEWAY
    )
    # The settings given by name, in their order; those that differ from their default count too.
    _given: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.isolation not in ISOLATIONS:
            raise ConfigError(f"Unknown isolation {self.isolation!r}: choose one of {', '.join(ISOLATIONS)}.")
        changed = (f.name for f in _FIELDS if getattr(self, f.name) != f.default)
        object.__setattr__(self, "_given", tuple(dict.fromkeys((*self._given, *changed))))

    def __eq__(self, other: object) -> bool:
        """Settings of the same values are equal; a mapping is equal to the settings that were given,
        as it was to the dict they stand for."""
        if isinstance(other, ExecutorSettings):
            return all(getattr(self, f.name) == getattr(other, f.name) for f in _FIELDS)
        if isinstance(other, Mapping):
            return dict(self) == dict(other)
        return NotImplemented

    @classmethod
    def of(cls, given: Mapping[str, Any], executor: str) -> ExecutorSettings:
        """``given`` (``executor_kwargs``: a dict, or settings already made) as the settings of
        ``executor``; a key it does not take is a one-line ConfigError that names those it does."""
        taken = takes(executor)
        if given and not taken:
            kinds = " and ".join(KERNELS)
            raise ConfigError(f"executor_kwargs are for the {kinds} executors; {executor} takes none.")
        for key in given:
            if key not in taken:
                raise ConfigError(
                    f"Unknown executor_kwargs key {key!r}: the {executor} executor takes {', '.join(taken)}."
                )
        if isinstance(given, ExecutorSettings):
            return given
        return cls(**given, _given=tuple(given))

    def __getitem__(self, name: str) -> Any:
        if name not in self._given:
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._given)

    def __len__(self) -> int:
        return len(self._given)


_FIELDS = tuple(f for f in dataclasses.fields(ExecutorSettings) if "help" in f.metadata)
# The executors' settings by name, in the order they are declared.
SETTINGS: tuple[str, ...] = tuple(f.name for f in _FIELDS)


def takes(executor: str) -> tuple[str, ...]:
    """The settings ``executor`` takes, sorted by name (none for ``local``)."""
    return tuple(sorted(f.name for f in _FIELDS if executor in f.metadata["executors"]))
