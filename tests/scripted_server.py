"""A real HTTP LM server that answers from a script, for tests and benchmarks.

It speaks OpenAI Chat Completions (``POST /v1/chat/completions``) and Anthropic
Messages (``POST /v1/messages``), plain and streamed, in the exact wire formats
the official SDKs parse, so the backends are tested through their real HTTP
stack rather than a mock. Latency is ``asyncio.sleep`` on the server's own loop
in a background thread, so hundreds of slow requests overlap as they would
against a real provider.

    with ScriptedServer(Script(root=["```repl\\nprint(1)\\n```"], sub="ok")) as server:
        lm = OpenAILM("scripted", base_url=server.openai_base_url, api_key="test")

Usage reports no cached tokens unless a reply says so (``Reply(cached_tokens=...)``), or the
server is given a :class:`PromptCache` (``server.prompt_cache = PromptCache()``), which counts
them as a provider's prompt cache would.

Run it standalone for benchmarks in another virtualenv::

    python tests/scripted_server.py --port 0 --latency 0.25 --script my_script.py

``my_script.py`` defines ``responder`` and may ``from scripted_server import Reply``.
The server prints ``READY <url>`` once it listens and runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import itertools
import json
import re
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from aiohttp import web

__all__ = ["PromptCache", "Reply", "Request", "Responder", "Script", "ScriptedServer", "echo", "sequence"]

Api = Literal["openai", "anthropic"]


@dataclass
class Reply:
    """What the server answers to one request.

    Token counts are totals in OpenAI's sense: ``input_tokens`` includes
    ``cached_tokens``. On the Anthropic wire the server splits them into
    ``input_tokens`` (uncached) and ``cache_read_input_tokens``, so a backend
    that adds them back reports the same numbers for both APIs.
    """

    text: str = ""
    status: int = 200
    error_message: str = "scripted failure"
    delay: float = 0.0
    token_delay: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int = 0
    hang: bool = False
    # Close the connection without answering, as a server does with a kept-alive connection it drops.
    drop: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    # The body exactly as sent, for replies a provider should never give (not JSON, cut, invalid
    # UTF-8, a broken event stream); sent as an event stream to a streamed request.
    raw: bytes | None = None
    # Function calls the reply asks for, (tool name, arguments), answered to a request not streamed.
    tool_calls: list[tuple[str, dict]] = field(default_factory=list)
    # A streamed reply in exactly these pieces (they join to ``text``), as a provider's tokens split
    # a word; else word-sized ones.
    pieces: list[str] | None = None


@dataclass
class Request:
    """One LM request as the server received it, normalised across the two APIs."""

    api: Api
    model: str
    messages: list[dict]
    stream: bool
    body: dict
    headers: dict[str, str]  # names lower-cased
    # When the server received it and when it had answered (time.monotonic()), so a test can tell
    # requests that overlapped from requests that came one after another.
    received: float = field(default_factory=time.monotonic)
    answered: float | None = None

    @property
    def system(self) -> str | None:
        return next((m["content"] for m in self.messages if m["role"] == "system"), None)

    @property
    def last_user(self) -> str:
        return next((m["content"] for m in reversed(self.messages) if m["role"] == "user"), "")

    @property
    def is_root(self) -> bool:
        """Root calls carry the system prompt; sub-calls (``llm_query``) are bare."""
        return self.system is not None

    @property
    def tools(self) -> list[str]:
        """The names of the tools the request offers (function calling)."""
        offered = self.body.get("tools") or []
        return [t.get("function", t).get("name", "") for t in offered]

    @property
    def tool_results(self) -> list[str]:
        """The results of tool calls the request sends back, in order."""
        if self.api == "openai":
            return [
                _text_of(m.get("content")) for m in self.body.get("messages", []) if m.get("role") == "tool"
            ]
        return [
            _text_of(block.get("content"))
            for m in self.body.get("messages", [])
            if isinstance(m.get("content"), list)
            for block in m["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]

    @property
    def text(self) -> str:
        """Every message's text, the basis of the default input token estimate."""
        return "\n".join(m["content"] for m in self.messages)


# A responder runs on the server's event loop, so it must not block: latency belongs in Reply.delay.
Responder = Callable[[Request], "Reply | str"]


def echo(request: Request) -> Reply:
    """The default responder: answer with the last user message."""
    return Reply(text=request.last_user)


def _as_reply(answer: Reply | str) -> Reply:
    return answer if isinstance(answer, Reply) else Reply(text=str(answer))


def _with_latency(reply: Reply, latency: float) -> Reply:
    return replace(reply, delay=latency) if latency and not reply.delay else reply


class Script:
    """A responder: root requests (those with a system message) get `root` replies in order.

    The rest (sub-calls) go to `sub`, a responder or a fixed reply.
    Running out of root replies answers HTTP 500, so a test whose engine asks the
    root more often than scripted fails loudly instead of hanging.
    """

    def __init__(
        self,
        root: Iterable[Reply | str] = (),
        sub: Responder | str | Reply = "ok",
        *,
        latency: float = 0.0,
    ) -> None:
        self._root: Iterator[Reply | str] = iter(list(root))
        self.sub = sub
        self.latency = latency
        self._lock = threading.Lock()

    def __call__(self, request: Request) -> Reply:
        if request.is_root:
            with self._lock:
                answer = next(self._root, None)
            if answer is None:
                answer = Reply(status=500, error_message="script exhausted: no more root replies")
        elif isinstance(self.sub, (str, Reply)):
            answer = self.sub
        else:
            answer = self.sub(request)
        return _with_latency(_as_reply(answer), self.latency)


def sequence(*replies: Reply | str) -> Responder:
    """A responder answering each request with the next reply, for retry tests; then HTTP 500."""
    pending = iter(replies)
    lock = threading.Lock()

    def respond(request: Request) -> Reply | str:
        with lock:
            answer = next(pending, None)
        return Reply(status=500, error_message="sequence exhausted") if answer is None else answer

    return respond


# ---------------------------------------------------------------- wire formats


def _text_of(content: Any) -> str:
    """Join a message's content, a string or a list of content blocks, into one string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            if isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif "content" in block:  # Anthropic tool_result
                parts.append(_text_of(block["content"]))
    return "".join(parts)


def _normalise(api: Api, body: dict) -> list[dict]:
    messages = []
    if api == "anthropic" and body.get("system"):
        messages.append({"role": "system", "content": _text_of(body["system"])})
    for message in body.get("messages") or []:
        role = message.get("role", "user")
        if role == "developer":  # OpenAI's newer name for the system role
            role = "system"
        messages.append({"role": role, "content": _text_of(message.get("content"))})
    return messages


def _chunks(text: str) -> list[str]:
    """Split text into word-sized pieces that join back to it exactly."""
    return re.findall(r"\s+|\S+\s*", text)


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _error_body(api: Api, status: int, message: str) -> dict:
    kind = _ERROR_TYPES.get(status, "api_error" if api == "anthropic" else "server_error")
    if api == "openai":
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return {"type": "error", "error": {"type": kind, "message": message}}


def _sse(data: dict | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def _openai_usage(input_tokens: int, output_tokens: int, cached: int, written: int = 0) -> dict:
    """``written`` is ignored: OpenAI does not say what it wrote to its cache."""
    return {
        "prompt_tokens": input_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def _anthropic_usage(input_tokens: int, output_tokens: int, cached: int, written: int = 0) -> dict:
    return {
        "input_tokens": max(input_tokens - cached - written, 0),
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": written,
    }


class PromptCache:
    """A provider's prompt cache, as far as a test can tell it: which prefixes of earlier requests it
    holds, and so how many input tokens of a request it would read from the cache.

    A prefix is a run of whole messages, compared by role and text (a breakpoint's mark and the form
    of the content, a string or blocks, are not part of the prompt). Tokens are the server's estimate,
    a quarter of the characters; there is no minimum length and nothing expires.

    - OpenAI (automatic): every prefix of every request is kept; a request reads its longest prefix
      that an earlier one sent.
    - Anthropic (by mark): only the prefixes that end at a ``cache_control`` mark are written; a
      request reads the longest written prefix that ends at one of its marks or at most
      :attr:`LOOKBACK` messages before one, and writes what lies between that and its last mark.
    """

    LOOKBACK = 20  # Anthropic looks for a hit at about 20 blocks before each mark

    def __init__(self) -> None:
        self._held: set[str] = set()

    def use(self, request: Request) -> tuple[int, int]:
        """The tokens this request reads from the cache and those it writes; remember what it wrote."""
        texts = [m["content"] for m in request.messages]
        sizes = [len("\n".join(texts[:k])) // 4 for k in range(len(texts) + 1)]
        digest, keys = hashlib.sha256(), [""]
        for message in request.messages:
            digest.update(json.dumps([message["role"], message["content"]]).encode() + b"\n")
            keys.append(digest.hexdigest())
        if request.api == "openai":
            hit = max((k for k in range(1, len(keys)) if keys[k] in self._held), default=0)
            self._held.update(keys[1:])
            return sizes[hit], 0
        marks = _marks(request)
        hit = 0
        for end in marks:
            hit = max(
                hit,
                next((k for k in range(end, max(end - self.LOOKBACK, 0), -1) if keys[k] in self._held), 0),
            )
        self._held.update(keys[k] for k in marks)
        last = max(marks, default=0)
        return sizes[hit], max(sizes[last] - sizes[hit], 0)


def _marks(request: Request) -> list[int]:
    """The lengths (in normalised messages) of the prefixes that end at a ``cache_control`` mark."""

    def marked(content: Any) -> bool:
        return isinstance(content, list) and any(
            isinstance(b, dict) and "cache_control" in b for b in content
        )

    system = 1 if request.body.get("system") else 0
    marks = [1] if system and marked(request.body["system"]) else []
    marks += [
        i + 1 + system for i, m in enumerate(request.body.get("messages") or []) if marked(m.get("content"))
    ]
    return marks


# ---------------------------------------------------------------- the server


class ScriptedServer:
    """An aiohttp server on its own loop in a background thread; see the module docstring."""

    def __init__(self, responder: Responder | None = None, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.responder: Responder = responder or echo
        self.requests: list[Request] = []
        # None: no cached tokens unless a reply gives some; a PromptCache counts them (opt-in).
        self.prompt_cache: PromptCache | None = None
        self.models: list[str] = ["scripted"]
        self.host = host
        self.port = port
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._closing: asyncio.Event | None = None

    # -- lifecycle

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url  # the Anthropic SDK adds /v1 itself

    def start(self) -> ScriptedServer:
        if self._thread is not None:
            raise RuntimeError("ScriptedServer already started")
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._serve())
            except BaseException as e:  # reported by start() below
                failure.append(e)
                loop.close()
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._shutdown())
            loop.close()

        self._thread = threading.Thread(target=run, name="scripted-lm-server", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise RuntimeError(f"ScriptedServer could not start on {self.host}:{self.port}") from failure[0]
        return self

    def stop(self) -> None:
        """Stop serving; hanging and sleeping handlers are released at once."""
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._thread = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def _serve(self) -> None:
        self._closing = asyncio.Event()
        app = web.Application(client_max_size=1 << 30)
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, backlog=1024)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _shutdown(self) -> None:
        assert self._closing is not None
        assert self._runner is not None
        self._closing.set()
        await self._runner.cleanup()

    async def _pause(self, seconds: float) -> None:
        """Sleep, but wake early when the server is stopping."""
        assert self._closing is not None
        if seconds > 0:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._closing.wait(), seconds)

    # -- handlers

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _models(self, request: web.Request) -> web.Response:
        if "anthropic-version" in request.headers:
            data = [
                {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                for m in self.models
            ]
            return web.json_response(
                {"data": data, "has_more": False, "first_id": self.models[0], "last_id": self.models[-1]}
            )
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    async def _openai(self, request: web.Request) -> web.StreamResponse:
        return await self._handle("openai", request)

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        return await self._handle("anthropic", request)

    async def _handle(self, api: Api, http: web.Request) -> web.StreamResponse:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        request: Request | None = None
        try:
            try:
                body = await http.json()
            except ValueError:
                body = None
            if not isinstance(body, dict):
                return web.json_response(_error_body(api, 400, "the body must be a JSON object"), status=400)
            request = Request(
                api=api,
                model=str(body.get("model", "")),
                messages=_normalise(api, body),
                stream=bool(body.get("stream")),
                body=body,
                headers={k.lower(): v for k, v in http.headers.items()},
            )
            with self._lock:
                self.requests.append(request)
            reply = self._answer(request)
            await self._pause(reply.delay)
            if reply.drop:
                assert http.transport is not None
                http.transport.abort()
                return web.Response(status=500)  # never sent: the connection is gone
            if reply.hang:
                assert self._closing is not None
                await self._closing.wait()
                return web.Response(status=503, text="server stopping")
            if reply.raw is not None:
                kind = "text/event-stream" if request.stream else "application/json"
                return web.Response(
                    body=reply.raw, status=reply.status, headers={"Content-Type": kind, **reply.headers}
                )
            if reply.status != 200:
                return web.json_response(
                    _error_body(api, reply.status, reply.error_message),
                    status=reply.status,
                    headers=reply.headers,
                )
            estimate = (len(request.text) // 4 + 1, len(reply.text) // 4 + 1)
            input_tokens = estimate[0] if reply.input_tokens is None else reply.input_tokens
            cached, written = reply.cached_tokens, 0
            if self.prompt_cache is not None and not reply.cached_tokens:
                cached, written = self.prompt_cache.use(request)
                cached = min(cached, input_tokens)
                written = min(written, input_tokens - cached)
            usage = (
                input_tokens,
                estimate[1] if reply.output_tokens is None else reply.output_tokens,
                cached,
                written,
            )
            if request.stream:
                return await self._stream(http, request, reply, usage)
            if api == "openai":
                return web.json_response(self._openai_body(request, reply, usage), headers=reply.headers)
            return web.json_response(self._anthropic_body(request, reply, usage), headers=reply.headers)
        finally:
            if request is not None:
                request.answered = time.monotonic()
            with self._lock:
                self.in_flight -= 1

    def _answer(self, request: Request) -> Reply:
        """Ask the responder; its own failure becomes an HTTP 500 the test can read."""
        try:
            answer = self.responder(request)
        except Exception:
            return Reply(status=500, error_message="responder raised:\n" + traceback.format_exc())
        return _as_reply(answer)

    def _openai_body(self, request: Request, reply: Reply, usage: tuple[int, int, int, int]) -> dict:
        return {
            "id": f"chatcmpl-scripted-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": reply.text,
                        "refusal": None,
                        **(
                            {
                                "tool_calls": [
                                    {
                                        "id": f"call_{next(self._ids)}",
                                        "type": "function",
                                        "function": {"name": name, "arguments": json.dumps(args)},
                                    }
                                    for name, args in reply.tool_calls
                                ]
                            }
                            if reply.tool_calls
                            else {}
                        ),
                    },
                    "logprobs": None,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                }
            ],
            "usage": _openai_usage(*usage),
        }

    def _anthropic_body(self, request: Request, reply: Reply, usage: tuple[int, int, int, int]) -> dict:
        return {
            "id": f"msg_scripted_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": request.model,
            "content": [
                *([{"type": "text", "text": reply.text}] if reply.text or not reply.tool_calls else []),
                *(
                    {"type": "tool_use", "id": f"toolu_{next(self._ids)}", "name": name, "input": args}
                    for name, args in reply.tool_calls
                ),
            ],
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": _anthropic_usage(*usage),
        }

    async def _stream(
        self, http: web.Request, request: Request, reply: Reply, usage: tuple[int, int, int, int]
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", **reply.headers}
        )
        await response.prepare(http)
        events = self._openai_events if request.api == "openai" else self._anthropic_events
        try:
            for event, pause_before in events(request, reply, usage):
                if pause_before:
                    await self._pause(reply.token_delay)
                await response.write(event)
            await response.write_eof()
        except ConnectionError:  # the client went away mid-stream
            pass
        return response

    def _openai_events(
        self, request: Request, reply: Reply, usage: tuple[int, int, int, int]
    ) -> Iterator[tuple[bytes, bool]]:
        """``chat.completion.chunk`` lines; the bool says whether a token delay comes first."""
        include_usage = bool((request.body.get("stream_options") or {}).get("include_usage"))
        base = {
            "id": f"chatcmpl-scripted-{next(self._ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": request.model,
        }

        def chunk(delta: dict, finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            extra = {"usage": None} if include_usage else {}
            return _sse({**base, "choices": [choice], **extra})

        yield chunk({"role": "assistant", "content": "", "refusal": None}), False
        for piece in reply.pieces or _chunks(reply.text):
            yield chunk({"content": piece}), True
        yield chunk({}, "stop"), False
        if include_usage:
            yield _sse({**base, "choices": [], "usage": _openai_usage(*usage)}), False
        yield _sse("[DONE]"), False

    def _anthropic_events(
        self, request: Request, reply: Reply, usage: tuple[int, int, int, int]
    ) -> Iterator[tuple[bytes, bool]]:
        """The Messages stream events, each with its ``event:`` line (the SDK skips data without one)."""
        start_usage = {**_anthropic_usage(*usage), "output_tokens": 1}
        message = {
            "id": f"msg_scripted_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": request.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": start_usage,
        }
        yield _sse({"type": "message_start", "message": message}, "message_start"), False
        block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        yield _sse(block, "content_block_start"), False
        yield _sse({"type": "ping"}, "ping"), False
        for piece in reply.pieces or _chunks(reply.text):
            delta = {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": piece},
            }
            yield _sse(delta, "content_block_delta"), True
        yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"), False
        end = {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": usage[1]},
        }
        yield _sse(end, "message_delta"), False
        yield _sse({"type": "message_stop"}, "message_stop"), False


# ---------------------------------------------------------------- command line


def _load_responder(path: str) -> Responder:
    import runpy

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    namespace = runpy.run_path(path)
    if "responder" not in namespace:
        raise SystemExit(f"{path} defines no `responder`")
    return namespace["responder"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A scripted OpenAI/Anthropic-compatible LM server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply starts")
    parser.add_argument("--script", help="a file defining `responder` (default: echo)")
    args = parser.parse_args(argv)

    base = _load_responder(args.script) if args.script else echo
    latency = args.latency

    def responder(request: Request) -> Reply:
        return _with_latency(_as_reply(base(request)), latency)

    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    with ScriptedServer(responder, host=args.host, port=args.port) as server:
        print(f"READY {server.url}", flush=True)
        while not stopping.wait(0.5):
            pass


if __name__ == "__main__":
    # Scripts do `from scripted_server import Reply`: make that name this module, not a second copy
    # whose Reply class would fail isinstance checks.
    sys.modules.setdefault("scripted_server", sys.modules[__name__])
    main()
