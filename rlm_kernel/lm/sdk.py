"""What the two official-SDK backends share: the key, the base URL, one SDK client per event loop,
and the mapping of the SDK's errors to :class:`~rlm_kernel.errors.ProviderError`.

The client is made on first use, so construction needs no event loop; a call from a different
loop (a second ``asyncio.run``) gets a fresh client, because connections cannot move between loops.
"""

from __future__ import annotations

import abc
import asyncio
import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any, ClassVar
from urllib.parse import urlparse

from ..errors import MissingAPIKey, ProviderError
from .base import BaseLM

__all__ = ["SDKBackend", "longest_prefix"]

# Local servers ignore the key, but the SDKs refuse to start (or look elsewhere) without one.
PLACEHOLDER_KEY = "not-needed"


def longest_prefix(table: dict[str, int], name: str) -> int | None:
    matches = [prefix for prefix in table if name.startswith(prefix)]
    return table[max(matches, key=len)] if matches else None


class SDKBackend(BaseLM):
    """A :class:`~rlm_kernel.lm.base.BaseLM` over an official SDK (``openai``, ``anthropic``).

    ``provider`` names who answers in error messages ("OpenAI error: ..."); a server that speaks the
    SDK's protocol and is not the provider (the local llama.cpp server) passes its own name."""

    provider: str  # each subclass's own by default; an instance's when given
    key_var: ClassVar[str]
    base_url_var: ClassVar[str]
    official_host: ClassVar[str]
    context_windows: ClassVar[dict[str, int]] = {}

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 1,
        timeout: float = 60.0,
        context_window: int | None = None,
        temperature: float | None = None,
        extra_body: dict | None = None,
        continues_reply: bool = False,
        prices: Mapping[str, Any] | None = None,
        provider: str | None = None,
        **client_kwargs: Any,
    ) -> None:
        if provider:
            self.provider = provider
        if context_window is None:
            context_window = longest_prefix(self.context_windows, model_name)
        super().__init__(
            model_name, context_window=context_window, continues_reply=continues_reply, prices=prices
        )
        self.base_url = base_url or os.environ.get(self.base_url_var) or None
        key = api_key or os.environ.get(self.key_var)
        if not key:
            if self.is_official:  # the one place where a missing key is certainly an error
                raise MissingAPIKey(self.provider, self.key_var)
            key = PLACEHOLDER_KEY
        self._api_key = key
        self.max_retries = max_retries
        self.timeout = timeout
        self.temperature = temperature
        self.extra_body = dict(extra_body or {})
        self._client_kwargs = client_kwargs
        self._client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    @property
    def api_key(self) -> str | None:
        """The key this client sends (None for the placeholder), so a run can redact it."""
        return None if self._api_key == PLACEHOLDER_KEY else self._api_key

    @property
    def is_official(self) -> bool:
        return not self.base_url or urlparse(self.base_url).hostname == self.official_host

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"{type(self).__name__}({self.model_name!r}{where})"

    @abc.abstractmethod
    def _sdk_module(self) -> ModuleType:
        """The SDK's module (imported on first use), whose ``APIStatusError`` and ``APIError`` it raises."""

    @abc.abstractmethod
    def _status_message(self, error: Any) -> str:
        """The provider's own words in an ``APIStatusError``."""

    def _error(self, exc: Exception) -> ProviderError | None:
        """An HTTP error status, or no usable answer at all (connection refused, timeout, a body that is
        not a reply), is the provider's error; retries with backoff were the SDK's, before it."""
        sdk = self._sdk_module()
        if isinstance(exc, sdk.APIStatusError):
            return ProviderError(self.provider, self._status_message(exc), exc.status_code)
        if isinstance(exc, sdk.APIError):
            return ProviderError(self.provider, str(exc))
        return None

    def _unanswered(self, exc: Exception) -> bool:
        import httpx2

        cause: BaseException | None = exc
        while cause is not None:  # the SDK's connection error wraps the HTTP client's
            if isinstance(cause, httpx2.RemoteProtocolError) and "without sending a response" in str(cause):
                return True
            cause = cause.__cause__
        return False

    @abc.abstractmethod
    def _new_client(self, **kwargs: Any) -> Any:
        """The SDK's async client, given the common settings and ``http_client``."""

    @abc.abstractmethod
    def _default_http_client(self) -> Any:
        """The SDK's own httpx client class, sharing the process's SSL context."""

    def _sdk(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            # A plain httpx2 client, not the SDK's default wrapper: when a client from a finished loop is
            # dropped, the wrapper's __del__ would try to close its sockets on the new loop and log errors.
            kwargs = dict(self._client_kwargs)
            kwargs.setdefault("http_client", self._default_http_client())
            self._client = self._new_client(
                api_key=self._api_key,
                base_url=self.base_url,
                max_retries=self.max_retries,
                timeout=self.timeout,
                **kwargs,
            )
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the connections; a later call opens new ones."""
        client, loop = self._client, self._client_loop
        self._client, self._client_loop = None, None
        # Connections made on another (finished) loop cannot be closed from this one; they go with it.
        if client is not None and loop is asyncio.get_running_loop():
            await client.close()
