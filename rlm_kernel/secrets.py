"""Secrets never leave in what a run records or shows the root: observations, events, trajectories,
notebook outputs and exports all pass through one :class:`Redactor`.

What it removes:

- the run's configured keys (``api_key``, tokens and passwords in any backend's kwargs, headers);
- the values of environment variables named like secrets: ``OPENAI_API_KEY``, ``OPENAI_KEY``,
  ``GITHUB_TOKEN``, ``PGPASSWORD``, ``MYSQL_PWD``, ``AWS_SECRET_ACCESS_KEY``, ...;
- secrets it recognizes by their form, wherever they appear: the password (or token) inside an
  address (``postgres://user:pw@host``, ``https://ghp_...@github.com``), a token in a query string
  (``?token=...``), and tokens of well-known formats (GitHub, OpenAI, Anthropic, Slack, AWS,
  GitLab, Hugging Face, Google).

Code the root writes may still read secrets in the ``local`` executor, which runs in the caller's
process; what it prints, returns or sends is redacted before anything records it. A secret encoded
first (base64, reversed) is not recognized.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "Redactor",
    "secrets_of",
    "is_secret_name",
    "public_kwargs",
    "secret_in",
    "redact_patterns",
]

REDACTED = "[redacted]"
_MIN_LEN = 8  # shorter values ("", "sk", "1") would redact ordinary text

# A name is a secret's when one of its parts (between underscores or dashes) is one of these, or when
# it ends with one of the glued ones (PGPASSWORD, GITHUBTOKEN). AUTHOR, TOKENIZERS_PARALLELISM, PWD
# and OLDPWD are not.
_PARTS = frozenset(
    "key apikey api_key access_key secret token password passwd pass pwd passphrase credential credentials "
    "auth authorization cookie session_key private_key secret_key".split()
)
_GLUED = ("password", "passwd", "token", "secret", "apikey", "credentials")


def is_secret_name(name: str) -> bool:
    """Whether a setting or environment variable is named like a secret (``OPENAI_API_KEY``)."""
    lower = name.lower().replace("-", "_")
    if lower in ("pwd", "oldpwd"):  # the shell's working folders
        return False
    parts = lower.split("_")
    pairs = {f"{a}_{b}" for a, b in itertools.pairwise(parts)}
    if _PARTS & (set(parts) | pairs):
        return True
    return lower.endswith(_GLUED) and lower not in _GLUED


# Arguments that carry credentials without being named like them: a client's headers or the client.
_CARRIERS = frozenset({"default_headers", "http_client", "headers"})


def public_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Backend or executor arguments fit for a trajectory or a results file: no secrets, no headers."""
    return {k: v for k, v in kwargs.items() if k not in _CARRIERS and not is_secret_name(str(k))}


# Secrets by their form: the password (or a token) an address carries for its user, a token in a
# query string, and tokens of well-known formats. Each regex runs only on text that has its mark.
_ADDRESS = re.compile(r"://(?:([^/\s:@]*:)[^/\s@]+|[^/\s:@]{16,})(?=@)")
_QUERY = re.compile(
    r"([?&](?:access_token|refresh_token|id_token|token|api_key|apikey|key|password|secret|signature|sig)=)"
    r"[^&\s#\"']+"
)
_TOKEN = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,}|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[0-9A-Z]{16}|glpat-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{30,}"
    r"|AIza[0-9A-Za-z_-]{35})"
)
_TOKEN_MARKS = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "sk-", "xox", "AKIA", "ASIA", "glpat-")
_TOKEN_MARKS += ("hf_", "AIza")


def redact_patterns(text: str) -> str:
    """``text`` without the secrets it holds in a recognizable form."""
    if "://" in text:
        text = _ADDRESS.sub(lambda m: "://" + (m.group(1) or "") + REDACTED, text)
    if "=" in text:
        text = _QUERY.sub(lambda m: m.group(1) + REDACTED, text)
    if any(mark in text for mark in _TOKEN_MARKS):
        text = _TOKEN.sub(REDACTED, text)
    return text


def secret_in(value: str) -> bool:
    """Whether ``value`` holds a secret recognizable by its form."""
    return redact_patterns(value) != value


def secrets_of(*kwargs: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> list[str]:
    """The secret values in backend kwargs and in the environment, longest first."""
    found: set[str] = set()

    def walk(mapping: Mapping[str, Any]) -> None:
        for name, value in mapping.items():
            if isinstance(value, Mapping):  # default_headers={"Authorization": ...}
                walk(value)
            elif is_secret_name(str(name)) and isinstance(value, str) and len(value) >= _MIN_LEN:
                found.add(value)
                if " " in value:  # "Bearer sk-...": the key alone too
                    found.add(value.rsplit(" ", 1)[-1])

    for mapping in (*kwargs, os.environ if environ is None else environ):
        walk(mapping or {})
    return sorted((s for s in found if len(s) >= _MIN_LEN), key=len, reverse=True)


class Redactor:
    """Removes the given secrets, and secrets recognizable by their form, from text and events."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = sorted({s for s in secrets if len(s) >= _MIN_LEN}, key=len, reverse=True)

    def add(self, secret: str | None) -> None:
        """One more secret, learnt after the start: a key a client was handed, not configured."""
        if secret and len(secret) >= _MIN_LEN and secret not in self.secrets:
            self.secrets = sorted([*self.secrets, secret], key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return redact_patterns(value)

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
        changes = {}
        for f in dataclasses.fields(event):
            value = getattr(event, f.name)
            clean = self.value(value)
            if clean != value:
                changes[f.name] = clean
        return dataclasses.replace(event, **changes) if changes else event
