"""A llama.cpp server running in this process, for the small local models.

:class:`LlamaServer` starts llama.cpp's HTTP server through ``xllamacpp`` on
127.0.0.1 and hands out its OpenAI-compatible ``base_url`` (``/v1/chat/completions``;
the Anthropic-style ``/v1/messages`` is served too, at :attr:`LlamaServer.url`).

Lifecycle: ``LlamaServer(...)`` is created stopped; :meth:`~LlamaServer.start`
loads the model (about 1-2 s for the 0.5B model) and returns once ``/health``
answers ok; :meth:`~LlamaServer.stop` closes the port and frees the model
(a stream in flight ends within about a second, without a finish reason).
``xllamacpp.Server`` has no stop method: its C++ destructor stops the HTTP
server, ends the decoding loop and frees the model, and runs as soon as the last
reference to the Python object goes. So this class holds the only reference and
drops it in ``stop()``.

Settings that matter on a small CPU machine (measured on 2 cores, 0.5B Q4_K_M,
~1,450-token prompt: ~140 tokens/s reading, ~33 tokens/s generating):

- threads = physical cores, llama.cpp's default: 3 threads on 2 cores halves
  both speeds. Two servers (two processes) busy at once on the same cores are
  far worse than half: generation fell to 5-7 tokens/s each with 2 threads
  each, 18 each with 1 thread each. Hence one shared server per process, and one per
  machine for the local backend (:mod:`rlm_kernel.lm.machine_server` runs this class in a
  process of its own that the notebooks and workers of one user share).
- flash attention on (``auto`` picks it on CPU): ~30 % faster prompt reading.
- the default batch sizes (2048/512) and the context size barely matter for
  speed; llama.cpp splits ``n_ctx`` between the parallel slots, so this class
  multiplies it by ``n_parallel``. ``n_parallel=2`` serves two requests at once
  with ~10-40 % more total throughput, each one slower.
- prompt caching is on (llama.cpp's defaults, which a test checks): a request
  that repeats a slot's prompt prefix reads only the new tokens (a 1,500-token conversation
  plus a question: 0.2 s), and the prompts of idle slots are kept in memory (``cache_ram_mib``,
  8 GiB at most), so a root turn after sub-calls that took its slot still finds its
  conversation (one slot, an 800-token root turn, a sub-call, the next root turn: 793 of 811
  tokens cached, 0.2 s instead of 5 s). Root turns are not pinned to a slot (``id_slot``, which
  the OpenAI endpoint takes in ``extra_body``): llama.cpp already gives a request the idle slot
  whose prompt it shares most of, and a pinned slot would make every run's root wait for the
  same one, without keeping sub-calls off it.

llama.cpp logs to the process's stderr, where it would land in the middle of a terminal's
progress bar or in a kernel's log. The server runs quiet: what it would log reaches the user
anyway, a failed request's reason as the HTTP error the client raises, and a failed start as
:class:`LocalServerError`, after one more try with llama.cpp's errors on, so that they show why.

Qwen2.5's ChatML template (through llama.cpp's Jinja) renders any order of
roles: consecutive assistant or user turns, an assistant turn first. Without a
leading system message it inserts Qwen's default one ("You are Qwen, created by
Alibaba Cloud..."); a trailing assistant message is continued, not closed.

:func:`shared_server` keeps one started server per model and settings for a
runtime (:class:`~rlm_kernel.runtime.Runtime`; the process's default one unless
given), so that tests and notebooks that start many runs pay the start once; they
are stopped when the runtime closes (the default one at interpreter exit).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from rlm_kernel.errors import ConfigError, LocalServerError
from rlm_kernel.runtime import Runtime, default_runtime

__all__ = ["LlamaServer", "LocalServerError", "SharedServers", "shared_server", "stop_shared_servers"]

_HOST = "127.0.0.1"
HEALTH_RETRY_S = 0.05  # between /health probes while the model loads
# llama.cpp's log thresholds (common/log.h): 0 its "output" only (the server has none), 1 errors too.
_QUIET, _ERRORS = 0, 1


def _default_threads() -> int:
    """-1 lets llama.cpp use the physical cores; fewer when this process may use fewer CPUs."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return -1
    total = os.cpu_count() or allowed
    return allowed if allowed < total else -1


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((_HOST, port))
        except OSError:
            return True
    return False


class LlamaServer:
    """llama.cpp's OpenAI/Anthropic-compatible server, in this process, on 127.0.0.1.

    ``n_ctx`` is the context window of each request: with ``n_parallel`` slots the
    server holds ``n_ctx * n_parallel`` tokens of KV cache. ``n_threads`` defaults
    to the physical cores; ``port`` to a free one chosen by the OS. With ``api_key`` the
    server answers 401 to a request without ``Authorization: Bearer <api_key>`` (``/health``
    excepted), so that other users of the machine cannot use its port.

    Use as a context manager, or call :meth:`start` and :meth:`stop`::

        with LlamaServer(rlm_kernel.models.fetch()) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="none")
    """

    def __init__(
        self,
        model_path: str | os.PathLike,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        port: int | None = None,
        n_parallel: int = 1,
        api_key: str | None = None,
    ) -> None:
        if n_ctx < 256:
            raise ConfigError(f"n_ctx={n_ctx} is too small: pass at least 256 (8192 is the default).")
        if n_parallel < 1:
            raise ConfigError(f"n_parallel={n_parallel}: pass 1 or more.")
        if n_threads is not None and n_threads < 1:
            raise ConfigError(f"n_threads={n_threads}: pass 1 or more, or None for the physical cores.")
        if port is not None and not 0 <= port < 65536:
            raise ConfigError(f"port={port} is not a TCP port: pass 1-65535, or None for a free one.")
        self._model_path = Path(model_path).expanduser()
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._requested_port = port or 0
        self._n_parallel = n_parallel
        self._api_key = api_key  # required of every request but /health when set; never in repr or logs
        self._server: Any = None  # the xllamacpp.Server; ours is its only reference
        self._url: str | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        state = f"running at {self._url}" if self._url else "stopped"
        return f"<LlamaServer {self._model_path.name} n_ctx={self._n_ctx} {state}>"

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> str:
        """Load the model, serve it, wait for ``/health``; return the OpenAI ``base_url``.

        Calling it on a running server returns the same URL.
        """
        with self._lock:
            if self._server is not None:
                return self.base_url
            if not self._model_path.is_file():
                raise ConfigError(
                    f"No model file at {self._model_path}: fetch it with `python -m rlm_kernel.models fetch`."
                )
            try:
                import xllamacpp
            except ImportError:
                raise ConfigError("xllamacpp is not installed: run `pip install xllamacpp`.") from None
            params = self._params(xllamacpp)
            started = time.monotonic()
            try:
                # No local name for the server: a traceback holding this frame would keep it alive.
                self._server = xllamacpp.Server(params)
            except RuntimeError as exc:
                raise LocalServerError(self._start_failure(xllamacpp, exc)) from None
            url = str(self._server.listening_address).rstrip("/")
            self._url = url if url.startswith("http") else "http://" + url
            with contextlib.ExitStack() as undo:  # undone on any failure, Ctrl-C included, and re-raised
                undo.callback(self._release)
                self._wait_healthy(deadline=started + timeout, timeout=timeout)
                undo.pop_all()
            return self.base_url

    def stop(self) -> None:
        """Stop serving, close the port and free the model. Safe to call twice."""
        with self._lock:
            self._release()

    def _release(self) -> None:
        server, self._server, self._url = self._server, None, None
        # Dropping the last reference runs xllamacpp's C++ destructor, which stops
        # the HTTP server, ends the decoding loop (joining its thread) and frees
        # the model and KV cache before `del` returns.
        del server

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- properties ----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def url(self) -> str:
        """The server's root URL, ``http://127.0.0.1:PORT`` (Anthropic SDKs take this one)."""
        if self._url is None:
            raise LocalServerError(
                f"The llama.cpp server for {self._model_path.name} is not running: call start() first "
                "or use `with LlamaServer(...) as server:`."
            )
        return self._url

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ``http://127.0.0.1:PORT/v1``."""
        return self.url + "/v1"

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def n_ctx(self) -> int:
        """The context window of each request, in tokens."""
        return self._n_ctx

    @property
    def n_parallel(self) -> int:
        return self._n_parallel

    @property
    def api_key(self) -> str | None:
        return self._api_key

    @property
    def model_path(self) -> Path:
        return self._model_path

    @property
    def model_name(self) -> str:
        """The name the server reports as ``model`` (the file name without ``.gguf``)."""
        return self._model_path.stem

    # -- helpers -------------------------------------------------------------------------------

    def _params(self, xllamacpp: Any, verbosity: int = _QUIET) -> Any:
        params = xllamacpp.CommonParams()
        params.model.path = str(self._model_path)
        params.model_alias = {self.model_name}
        params.hostnames = [_HOST]
        params.port = self._requested_port  # 0: the OS picks a free port, with no race
        # llama.cpp splits n_ctx evenly between the slots; give each request the full window.
        params.n_ctx = self._n_ctx * self._n_parallel
        params.n_parallel = self._n_parallel
        threads = self._n_threads if self._n_threads is not None else _default_threads()
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        # A streaming request wakes every ping interval to notice shutdown: with the default
        # 30 s, stop() during a stream blocked for 30 s. Pings are SSE comments, which SDKs skip.
        params.sse_ping_interval = 1
        params.ui = False
        if self._api_key:
            params.api_keys = [self._api_key]
        # Quiet: its log goes to the process's stderr (a progress bar, a kernel's log), and each error
        # it would log there reaches the client as the request's HTTP error anyway.
        params.verbosity = verbosity
        return params

    def _start_failure(self, xllamacpp: Any, exc: RuntimeError) -> str:
        if self._requested_port and _port_in_use(self._requested_port):
            return f"Port {self._requested_port} is in use: pass another port, or port=None for a free one."
        # The quiet start kept llama.cpp's reasons to itself: start again with its errors on stderr,
        # to show them (a start that works this time stops at once).
        with contextlib.suppress(RuntimeError):
            xllamacpp.Server(self._params(xllamacpp, verbosity=_ERRORS))
        return (
            f"llama.cpp could not load {self._model_path} ({exc}; its reasons are on this process's "
            "stderr); check it is a whole GGUF file, e.g. delete it and run "
            "`python -m rlm_kernel.models fetch` again."
        )

    def _wait_healthy(self, *, deadline: float, timeout: float) -> None:
        # http.client, not urllib: urllib sends "Connection: close", so the server closes
        # first and its side of each probe lingers in TIME_WAIT on our port after stop().
        host, port = _HOST, self.port
        last = "no answer"
        while True:
            conn = http.client.HTTPConnection(host, port, timeout=5)
            try:
                conn.request("GET", "/health")
                resp = conn.getresponse()
                body = resp.read()
                if resp.status == 200 and json.loads(body or b"{}").get("status") == "ok":
                    return
                last = f"HTTP {resp.status} {body[:200]!r}"  # 503 while the model loads
            except (OSError, ValueError, http.client.HTTPException) as exc:
                last = str(exc) or type(exc).__name__
            finally:
                conn.close()
            if time.monotonic() >= deadline:
                raise LocalServerError(
                    f"The llama.cpp server at {self._url} did not answer /health within {timeout:g} s "
                    f"(last: {last}); pass a longer timeout to start(), or check the machine's load."
                )
            # llama.cpp offers no signal of readiness: /health answers 503 until the model is
            # loaded, so it is asked again. Only at start, never once the server is up.
            time.sleep(HEALTH_RETRY_S)


# -- one server per model and settings, for a runtime -------------------------------------------
# Requests the local server of the bundled models serves at once, by default: a vote's roots, or a
# root's sub-calls, are batched. Requests batched together are computed with other numerics, so a
# greedy reply can differ with what else runs at the time.
LOCAL_SLOTS = 3


class SharedServers:
    """A runtime's started servers, one per model and settings; closing it (with the runtime)
    stops them."""

    def __init__(self) -> None:
        self._servers: dict[tuple[Any, ...], LlamaServer] = {}
        self._lock = threading.Lock()

    def get(self, path: Path, kw: dict[str, Any]) -> LlamaServer:
        key = (str(path), *sorted(kw.items()))
        with self._lock:
            server = self._servers.get(key)
            if server is None:
                server = self._servers[key] = LlamaServer(path, **kw)
            server.start()  # a no-op when running
            return server

    def close(self) -> None:
        with self._lock:
            servers = list(self._servers.values())
            self._servers.clear()
        for server in servers:
            server.stop()


def shared_server(model_path: str | os.PathLike, *, runtime: Runtime | None = None, **kw: Any) -> LlamaServer:
    """A started :class:`LlamaServer` shared by everyone asking ``runtime`` (the process's default
    runtime unless given) for the same one.

    Servers are keyed by the model's resolved path, ``n_ctx`` and the other settings
    in ``kw``; a shared server that someone stopped is started again. All are stopped
    when the runtime closes (the default one at interpreter exit), or by
    :func:`stop_shared_servers`. Do not stop one you got here unless you mean to stop
    it for everyone.
    """
    path = Path(model_path).expanduser().resolve()
    kw.setdefault("n_ctx", 8192)
    kw.setdefault("n_parallel", LOCAL_SLOTS)
    return (runtime or default_runtime()).own(SharedServers, SharedServers).get(path, kw)


def stop_shared_servers() -> None:
    """Stop every server :func:`shared_server` started on the default runtime, and forget them."""
    default_runtime().own(SharedServers, SharedServers).close()
