"""Secrets never leave in what a run records or shows the root: observations, events, trajectories,
notebook outputs and exports all pass through one :class:`Redactor`.

The secrets are the configured keys (``api_key``, tokens, passwords in any backend's kwargs) and
the values of key-like environment variables (``OPENAI_API_KEY``, ``*_TOKEN``, ``*_SECRET``,
...). Code the root writes may still read them in the ``local`` executor, which runs in the
caller's process; what it prints, returns or sends is redacted before anything records it.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["REDACTED", "Redactor", "secrets_of", "is_secret_name"]

REDACTED = "[redacted]"
# A name part (between underscores or dashes): OPENAI_API_KEY, GITHUB_TOKEN, auth_token,
# Authorization; not AUTHOR or TOKENIZERS_PARALLELISM.
_SECRET_NAME = re.compile(
    r"(?:^|[_-])(api[_-]?key|access[_-]?key|token|secret|password|passwd|credentials?|auth|authorization)(?:$|[_-])",
    re.IGNORECASE,
)
_MIN_LEN = 8  # shorter values ("", "sk", "1") would redact ordinary text


def is_secret_name(name: str) -> bool:
    """Whether a setting or environment variable is named like a secret (``OPENAI_API_KEY``)."""
    return bool(_SECRET_NAME.search(name))


def secrets_of(*kwargs: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> list[str]:
    """The secret values in backend kwargs and in the environment, longest first."""
    found: set[str] = set()

    def walk(mapping: Mapping[str, Any]) -> None:
        for name, value in mapping.items():
            if isinstance(value, Mapping):  # default_headers={"Authorization": ...}
                walk(value)
            elif _SECRET_NAME.search(str(name)) and isinstance(value, str) and len(value) >= _MIN_LEN:
                found.add(value)
                if " " in value:  # "Bearer sk-...": the key alone too
                    found.add(value.rsplit(" ", 1)[-1])

    for mapping in (*kwargs, os.environ if environ is None else environ):
        walk(mapping or {})
    return sorted((s for s in found if len(s) >= _MIN_LEN), key=len, reverse=True)


class Redactor:
    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = [s for s in secrets if len(s) >= _MIN_LEN]

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def value(self, value: Any) -> Any:
        """Strings, and the strings inside lists, tuples and dicts, redacted; other values as they are."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, (list, tuple)):
            return type(value)(self.value(v) for v in value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        return value

    def event(self, event: Any) -> Any:
        """The event with every field redacted; the same object when nothing needed it."""
        if not self.secrets:
            return event
        changes = {}
        for f in dataclasses.fields(event):
            value = getattr(event, f.name)
            clean = self.value(value)
            if clean != value:
                changes[f.name] = clean
        return dataclasses.replace(event, **changes) if changes else event
