"""How a setting is declared: a dataclass field whose metadata its front ends are generated from.

:class:`rlm_kernel.config.RLMConfig` and the executors' settings nested in it
(:class:`rlm_kernel.executors.settings.ExecutorSettings`) declare each field with :func:`setting`;
the keywords, the magics' options and ``%config`` traits, the command lines' flags and the docs'
tables are read from that metadata, so a new setting is one field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any

__all__ = ["setting"]


def setting(
    default: Any = None,
    help: str | None = None,
    *,
    env: str | None = None,
    alias: str | None = None,
    kind: str | None = None,
    choices: tuple[str, ...] | None = None,
    factory: Callable[[], Any] | None = None,
    executors: tuple[str, ...] | None = None,
) -> Any:
    """A field with what its front ends are generated from: ``help`` (the field is then a setting
    that every front end offers under its name), ``env`` (the environment variable the magics read),
    ``alias`` (an older spelling, accepted with a warning), ``kind`` (``dict`` or ``functions``:
    values a command line does not take as text; ``secret``: a value no command line or repr shows),
    ``choices``, and ``executors`` (for an executor's setting: the executors that take it)."""
    given = (
        ("help", help),
        ("env", env),
        ("alias", alias),
        ("kind", kind),
        ("choices", choices),
        ("executors", executors),
    )
    meta = {k: v for k, v in given if v is not None}
    shown = kind != "secret"
    if factory is not None:
        return field(default_factory=factory, metadata=meta, repr=shown)
    return field(default=default, metadata=meta, repr=shown)
