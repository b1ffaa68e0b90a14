"""LM backends behind one factory: ``make_lm(backend, backend_kwargs)``.

Backends are imported lazily, so using one never imports the others' SDKs. Every backend takes
``prices={"model-or-prefix": (input, output, cached_input)}`` (US dollars per million tokens):
that client's own prices, before the process-wide table of :mod:`rlm_kernel.usage`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .base import BaseLM, Completion, LMClient, Message, estimate_tokens, price_of

__all__ = [
    "make_lm",
    "BaseLM",
    "Completion",
    "LMClient",
    "Message",
    "estimate_tokens",
    "price_of",
    "DEFAULT_MODELS",
]

DEFAULT_MODELS = {"openai": "gpt-5-mini", "anthropic": "claude-sonnet-4-5"}
_LOCAL_N_CTX = 8192


def make_lm(backend: str, kwargs: dict[str, Any] | None = None, *, model: str | None = None) -> LMClient:
    """A client for ``backend``; ``model`` overrides ``kwargs["model_name"]`` (``llm_query(model=...)``)."""
    kw = dict(kwargs or {})
    name = model or kw.pop("model_name", None)
    kw.pop("model_name", None)
    if backend == "openai":
        from .openai import OpenAILM

        return OpenAILM(name or DEFAULT_MODELS["openai"], **kw)
    if backend == "anthropic":
        from .anthropic import AnthropicLM

        return AnthropicLM(name or DEFAULT_MODELS["anthropic"], **kw)
    if backend == "replay":
        from .replay import ReplayLM

        path = kw.pop("path", None) or kw.pop("recording", None)
        if path is None:
            raise ConfigError("The replay backend needs backend_kwargs={'path': 'recording.jsonl'}.")
        return ReplayLM(
            path, model_name=name, context_window=kw.get("context_window"), prices=kw.get("prices")
        )
    if backend == "local":
        return _local(name, kw)
    raise ConfigError(f"Unknown backend {backend!r}: choose openai, anthropic, local or replay.")


def _local(name: str | None, kw: dict[str, Any]) -> LMClient:
    """llama.cpp's server in-process (xllamacpp), spoken to through the OpenAI SDK. ``model_name`` may
    name a bundled model (``qwen2.5-coder-1.5b``), fetched on first use; ``model_path`` any GGUF."""
    from .. import models
    from ..usage import as_prices
    from .llama_server import shared_server
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
    server = shared_server(path, n_ctx=n_ctx, **server_kw)
    name = name or path.stem
    # A local model costs nothing per token: this client's own price, unless the caller gave one.
    kw["prices"] = {name: (0.0, 0.0, 0.0), **as_prices(kw.get("prices"))}
    kw.setdefault("temperature", 0.0)
    kw.setdefault("continues_reply", True)  # llama.cpp continues a trailing assistant message
    # A request may wait long in the server's queue behind others on a small machine; a retry of a
    # server in this process helps nothing.
    kw.setdefault("timeout", 600.0)
    kw.setdefault("max_retries", 0)
    return OpenAILM(name, base_url=server.base_url, api_key="local", context_window=n_ctx, **kw)
