"""MCP servers as tools: ``tools=[MCPServer.stdio("uvx", ["mcp-server-fetch"])]`` offers a server's
tools like Python functions, through the official ``mcp`` SDK's :class:`mcp.Client`.

Each of the server's tools becomes an :class:`MCPTool`: a :class:`~rlm_kernel.tool_spec.Tool` whose
signature, summary and JSON schema come from the server's listing, and whose calls go to the server.
So the root's prompt lists it, sub-calls offer it through the tool loop, the root's code calls it
like a function (keyword or positional arguments, the result as Python values when the server sends
structured content), and each call is a ``tool_call`` event, as for a Python tool. A tool's error
(``isError``) is that call's result for a sub-model, and an :class:`MCPToolError` for the root's code.

Lifecycle. A server is started on first need: when a config takes it and lists its tools. Its
session then stays open for the runs that follow, on its runtime's loop (one task holds the SDK's
contexts, which must be entered and left in one task; the runtime is ``runtime=``, else the
process's default one), and ends at :meth:`MCPServer.close` (or the ``with`` block's end) or when
that runtime closes (the default one at the process's exit), which stops a stdio server's process. A call
whose connection broke ends that session; the next call opens a new one. A server that cannot start
is a one-line :class:`~rlm_kernel.errors.ConfigError` naming the command or URL, with the last line
the server wrote to its stderr.

Secrets. The ``env`` values and ``headers`` given are used only to start the server or connect to
it: the server's ``repr``, its errors, and its tools' results pass through a
:class:`~rlm_kernel.secrets.Redactor` that knows them, and no config, trajectory or log shows them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import keyword
import operator
import re
import shlex
import sys
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from .errors import ConfigError, one_line
from .runtime import Runtime, default_runtime, wait_future
from .secrets import Redactor
from .tool_spec import Tool, arguments_of, as_text

__all__ = ["MCPServer", "MCPTool", "MCPToolError"]

CLOSE_TIMEOUT = 10.0  # seconds a closing session may take: the SDK gives a stdio server 2 s, then kills it


class MCPToolError(Exception):
    """An MCP tool answered with an error (``isError``); the message is the server's text."""


@dataclass(frozen=True)
class MCPTool(Tool):
    """A tool of an MCP server, as its listing describes it; a call goes to the server."""

    server: MCPServer = field(compare=False)
    remote: str  # the tool's own name on the server (``name`` may be prefixed, or made a Python name)
    wrapped: bool = False  # whether its structured result is a value wrapped as {"result": value}

    def call(self, arguments: str) -> str:
        """Run the tool with a model's JSON arguments (the server checks them); its result as text."""
        return self.server._text(self.server.call(self.remote, arguments_of(arguments)), self.wrapped)


class MCPServer:
    """An MCP server whose tools a run offers, over stdio or streamable HTTP: make one with
    :meth:`stdio` or :meth:`streamable_http` and put it in ``tools=`` or ``sub_tools=``, alone or
    beside functions. In a dict, its key prefixes its tools' names (``{"notes": server}`` offers
    ``notes_read``), so two servers' tools of one name can both be offered."""

    def __init__(
        self,
        transport: Literal["stdio", "streamable_http"],
        target: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        runtime: Runtime | None = None,
    ) -> None:
        if transport not in ("stdio", "streamable_http"):
            raise ConfigError(f"An MCP server is reached over stdio or streamable_http, not {transport!r}.")
        if not target:
            raise ConfigError("An MCP server needs a command (MCPServer.stdio) or a URL (.streamable_http).")
        if isinstance(args, str):
            raise ConfigError(f"MCPServer.stdio takes its arguments as a list, not one string: {args!r}.")
        if not timeout > 0:
            raise ConfigError(f"An MCP server's timeout is in seconds, more than 0, not {timeout!r}.")
        self.transport = transport
        self.target = target
        self.args = tuple(str(a) for a in args)
        self.cwd = cwd
        self.timeout = timeout
        self.runtime = runtime  # whose loop holds its session, and whose close ends it
        self._env = dict(env or {})
        self._headers = dict(headers or {})
        secrets = [*self._env.values(), *self._headers.values()]
        secrets += [v.rsplit(" ", 1)[-1] for v in self._headers.values()]  # "Bearer <token>": the token too
        self._redactor = Redactor(secrets)
        self._lock = threading.Lock()
        self._session: _Session | None = None
        self._listing: list[Any] | None = None  # the server's tools (mcp_types.Tool), listed once

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        timeout: float = 60.0,
        runtime: Runtime | None = None,
    ) -> MCPServer:
        """A server this process starts as ``command args...`` and talks to over its stdin and stdout.
        ``env`` is added to the SDK's small default environment (``PATH``, ``HOME``, ...); ``timeout``
        is the seconds to wait for it to start, and for each call's reply."""
        return cls("stdio", command, args=args, env=env, cwd=cwd, timeout=timeout, runtime=runtime)

    @classmethod
    def streamable_http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        runtime: Runtime | None = None,
    ) -> MCPServer:
        """A running server at ``url`` (its MCP endpoint, often ending in ``/mcp``), reached over
        streamable HTTP with ``headers`` on every request (``{"Authorization": "Bearer ..."}``)."""
        return cls("streamable_http", url, headers=headers, timeout=timeout, runtime=runtime)

    # -- what users and errors see ------------------------------------------------------------
    @property
    def label(self) -> str:
        """The command line, or the URL without credentials or query: what errors name."""
        if self.transport == "stdio":
            text = shlex.join([self.target, *self.args])
            text = text if len(text) <= 160 else text[:157] + "..."
        else:
            parts = urlsplit(self.target)
            host = parts.hostname or ""
            netloc = f"{host}:{parts.port}" if parts.port else host
            text = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
        return self._redactor.text(text)

    def __repr__(self) -> str:
        return f"MCPServer.{self.transport}({self.label!r})"

    def __enter__(self) -> MCPServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- its tools ------------------------------------------------------------------------------
    def tools(self, prefix: str = "") -> list[MCPTool]:
        """The server's tools as tool records, each named ``prefix`` + its name (characters a Python
        name cannot have become ``_``). Listing them starts the server if it is not running."""
        if self._listing is None:
            self._listing = self._listed()
        return [self._tool(t, prefix) for t in self._listing]

    def _listed(self) -> list[Any]:
        """Every page of the server's listing; why it could not list them as a ConfigError."""
        from mcp import MCPError

        listed: list[Any] = []
        session = self._open()
        cursor = None
        try:
            while True:
                page = self._wait(session, session.client.list_tools(cursor=cursor), "list its tools")
                listed += page.tools
                if not (cursor := page.next_cursor):
                    return listed
        except (MCPError, TimeoutError, ConnectionError, _Broken) as exc:
            raise ConfigError(
                f"MCP server {self.label} did not list its tools: {self._reason(exc)}"
            ) from None

    def _tool(self, listed: Any, prefix: str) -> MCPTool:
        name = prefix + re.sub(r"[^0-9A-Za-z_]", "_", listed.name)
        if not name.isidentifier() or name.startswith("_") or keyword.iskeyword(name):
            raise ConfigError(
                f"MCP server {self.label}: its tool {listed.name!r} has no name that code can call; "
                f"offer the server in a dict, {{'prefix': server}}, to name its tools prefix_..."
            )
        schema = {k: v for k, v in dict(listed.input_schema or {}).items() if k != "title"}
        schema.setdefault("type", "object")
        doc = inspect.cleandoc(listed.description or listed.title or "")
        signature = _signature(schema, listed.output_schema)
        summary = doc.split("\n\n")[0].replace("\n", " ").strip()
        remote, loose, wrapped = listed.name, _loose(signature), _wrapped(listed.output_schema)

        def call(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs).arguments  # a TypeError, as a function gives
            return self._value(self.call(remote, bound.get("arguments", {}) if loose else bound), wrapped)

        call.__name__ = call.__qualname__ = name
        call.__doc__ = doc
        call.__signature__ = signature  # type: ignore[attr-defined]  # what help() and a kernel's stub show
        return MCPTool(
            name=name,
            fn=call,
            summary=summary,
            signature=f"{name}{signature}",
            description=doc,
            parameters=schema,
            server=self,
            remote=remote,
            wrapped=wrapped,
        )

    # -- calls ----------------------------------------------------------------------------------
    def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        """Call ``tool`` on the server (starting it if need be); the SDK's ``CallToolResult``. An error
        the server answers is an :class:`MCPToolError`; a broken connection is a ``ConnectionError``
        and ends the session, so that the next call opens another."""
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED

        session = self._open()
        try:
            return self._wait(session, session.client.call_tool(tool, dict(arguments)), f"run {tool}")
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED:
                raise MCPToolError(self._redactor.text(exc.message)) from None
            error: BaseException = exc
        except _Broken as exc:  # the transport's own (a closed stream, a refused connection)
            error = exc.cause
        self._end(session)
        raise ConnectionError(f"MCP server {self.label}: {self._reason(error)}")

    def _wait(self, session: _Session, coro: Any, what: str) -> Any:
        """``coro``'s result, run on the session's loop, within ``timeout``. The server's errors
        (``MCPError``), a timeout and a refused or closed connection come as they are; anything else
        the SDK's transport raised comes as a :class:`_Broken` that holds it."""
        from mcp import MCPError

        try:
            future = session.runtime.submit(coro)
        except RuntimeError as exc:  # the runtime closed
            raise _Broken(exc) from exc
        try:
            return future.result(self.timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(
                f"MCP server {self.label} did not {what} within {self.timeout:g} s: give it a longer "
                f"timeout=, or check that it is not stuck"
            ) from None
        except concurrent.futures.CancelledError:
            raise ConnectionError(f"MCP server {self.label}: its session was closed") from None
        except (MCPError, ConnectionError):
            raise
        except Exception as exc:  # the SDK's transports raise anyio's, httpx's and the OS's errors, in groups
            raise _Broken(exc) from exc
        finally:  # a timeout, a Ctrl-C or a stopped step in the waiting thread: the call ends too
            future.cancel()

    def _text(self, result: Any, wrapped: bool = False) -> str:
        """A result as a model reads it: its text content (structured content only where there is no
        text); an error result raises, so that the tool loop reports it as the call's error."""
        parts = [_content_text(c) for c in result.content]
        if result.is_error:
            raise MCPToolError(self._redactor.text("\n".join(parts) or "the tool failed"))
        if not parts and result.structured_content is not None:
            parts = [as_text(_unwrapped(result.structured_content, wrapped))]
        return self._redactor.text("\n".join(parts))

    def _value(self, result: Any, wrapped: bool = False) -> Any:
        """A result as the root's code gets it: the structured content as Python values (a wrapped
        value unwrapped), else the text."""
        if result.is_error or result.structured_content is None:
            return self._text(result)
        return self._redactor.value(_unwrapped(result.structured_content, wrapped))

    # -- the session ----------------------------------------------------------------------------
    def _open(self) -> _Session:
        """The open session, started if there is none (or the last one ended)."""
        with self._lock:
            if self._session is not None and not self._session.ended.done():
                return self._session
            runtime = self.runtime or default_runtime()
            if runtime.in_loop():
                raise RuntimeError(
                    f"MCP server {self.label}: a tool cannot be called from the runtime's loop"
                )
            session = _Session(self, runtime)
            try:
                session.opened.result(self.timeout)
            except concurrent.futures.TimeoutError:
                session.close()
                raise ConfigError(
                    f"MCP server {self.label} did not start within {self.timeout:g} s: check that it "
                    f"is an MCP server, or give it a longer timeout="
                ) from None
            except concurrent.futures.CancelledError:
                raise ConfigError(f"MCP server {self.label} did not start: its loop was closed") from None
            except ConfigError:
                wait_future(session.ended, CLOSE_TIMEOUT)  # its process is gone before the error is seen
                raise
            self._session = runtime.adopt(session)
            return session

    def _end(self, session: _Session) -> None:
        with self._lock:
            if self._session is session:
                self._session = None
        session.close()

    def close(self) -> None:
        """End the session, stopping a stdio server's process; a later call starts it again."""
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            session.close()

    @asynccontextmanager
    async def _connect(self, errlog: IO[str]) -> AsyncIterator[Any]:
        """The SDK's client, connected; entered and left in one task. What the server says of a
        failure goes to ``errlog``: a stdio server's stderr, an HTTP server's error statuses."""
        from mcp import Client

        async with AsyncExitStack() as stack:
            if self.transport == "stdio":
                from mcp.client.stdio import StdioServerParameters, stdio_client

                params = StdioServerParameters(
                    command=self.target, args=list(self.args), env=self._env or None, cwd=self.cwd
                )
                transport = stdio_client(params, errlog=errlog)
            else:
                import httpx2
                from mcp.client.streamable_http import streamable_http_client

                async def refused(response: httpx2.Response) -> None:  # the SDK's error omits the status
                    if response.is_error:
                        errlog.write(f"HTTP {response.status_code} {response.reason_phrase}\n")

                http = await stack.enter_async_context(
                    httpx2.AsyncClient(
                        headers=self._headers,
                        timeout=httpx2.Timeout(self.timeout, read=300.0),
                        event_hooks={"response": [refused]},
                    )
                )
                transport = streamable_http_client(self.target, http_client=http)
            yield await stack.enter_async_context(Client(transport, read_timeout_seconds=self.timeout))

    def _reason(self, exc: BaseException) -> str:
        """An exception as one line without secrets; the first of a group (the SDK's task groups)."""
        if isinstance(exc, _Broken):
            exc = exc.cause
        while isinstance(exc, _GROUPS) and exc.exceptions:
            exc = exc.exceptions[0]
        return self._redactor.text(one_line(exc))

    def _failed(self, exc: BaseException, errlog: IO[str]) -> ConfigError:
        """Why the server did not start, as one line: the SDK's reason and the server's last words."""
        errlog.seek(0)
        lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
        said = f" (it said: {self._redactor.text(lines[-1][:200])})" if lines else ""
        hint = "the command and its arguments" if self.transport == "stdio" else "the URL and headers"
        return ConfigError(f"MCP server {self.label} did not start: {self._reason(exc)}{said}; check {hint}.")


if sys.version_info >= (3, 11):
    _GROUPS: tuple[type[BaseException], ...] = (BaseExceptionGroup,)  # noqa: F821 (a builtin since 3.11)
else:  # anyio's task groups raise the backport's groups there
    from exceptiongroup import BaseExceptionGroup as _Group

    _GROUPS = (_Group,)


class _Broken(Exception):
    """What the SDK's transport raised on a call (``cause``): the connection is broken."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _Session:
    """One connection: the task on the runtime's loop that holds the SDK's client open, and how to end
    it. ``opened`` gets the client (or why it did not start); ``ended`` is set once the task has left
    the SDK's contexts, so a stdio server's process is gone."""

    def __init__(self, server: MCPServer, runtime: Runtime) -> None:
        import tempfile

        self.runtime = runtime
        self.client: Any = None
        self.opened: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.ended: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # What the server says (a stdio server's stderr): kept out of the user's output, read back when
        # it does not start.
        errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        try:
            held = runtime.submit(self._hold(server, errlog))
        except RuntimeError:  # the runtime is closed
            errlog.close()
            raise
        held.add_done_callback(functools.partial(self._left, server, errlog))

    async def _hold(self, server: MCPServer, errlog: IO[str]) -> None:
        self._task = asyncio.current_task()
        async with server._connect(errlog) as client:
            self.client = client
            self.opened.set_result(client)
            await self._closing.wait()

    def _left(self, server: MCPServer, errlog: IO[str], held: concurrent.futures.Future[None]) -> None:
        """The task has left the SDK's contexts, however it ended (its future holds how), so a stdio
        server's process is gone. A session that never opened says why; one that broke once open
        just ends, and the calls it broke see their own error."""
        if not self.opened.done():
            why = asyncio.CancelledError() if held.cancelled() else held.exception()
            self.opened.set_exception(server._failed(why or ConnectionError("it ended"), errlog))
        errlog.close()
        self.ended.set_result(None)
        self.runtime.release(self)

    def close(self) -> None:
        """Ask the task to leave its contexts (a cancel, while it is still starting), and wait until it
        has; from the loop's own thread, or once the loop is gone, only ask."""
        self.runtime.release(self)
        if self.ended.done():
            return

        def stop() -> None:
            if self.opened.done() or self._task is None:
                self._closing.set()
            else:
                self._task.cancel()

        try:
            self.runtime.call_soon(stop)
        except RuntimeError:  # the runtime closed: its close cancelled the task
            return
        if not self.runtime.in_loop():
            wait_future(self.ended, CLOSE_TIMEOUT)


# -- from the server's JSON schemas to a Python signature ----------------------------------------
_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": None,
}


def _annotation(schema: Any) -> Any:
    """The Python type a JSON schema describes, for the signature the root's prompt shows."""
    if not isinstance(schema, Mapping):
        return Any
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options:
        return _union([_annotation(s) for s in options])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return Literal[tuple(schema["enum"])]
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([_annotation({**schema, "type": k}) for k in kind])
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        inner = _annotation(schema["items"])
        return list if inner is Any else list[inner]  # type: ignore[valid-type]
    return _TYPES.get(kind, Any) if isinstance(kind, str) else Any


def _union(types: list[Any]) -> Any:
    unique = list(dict.fromkeys(type(None) if t is None else t for t in types))
    if Any in unique:
        return Any
    return functools.reduce(operator.or_, unique) if len(unique) > 1 else unique[0]


def _signature(schema: Mapping[str, Any], output: Mapping[str, Any] | None) -> inspect.Signature:
    """``(name: str, start: int = 0) -> str`` from the input and output schemas: required arguments
    first, the others with their default (or None); ``(**arguments)`` where a name is not Python's."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    returns = _annotation(output.get("properties", {}).get("result")) if _wrapped(output) else None
    returns = returns if returns is not None else (dict if output else str)
    if any(not n.isidentifier() or keyword.iskeyword(n) for n in properties):
        loose = inspect.Parameter("arguments", inspect.Parameter.VAR_KEYWORD)
        return inspect.Signature([loose], return_annotation=returns)
    params = []
    for name in sorted(properties, key=lambda n: n not in required):  # a stable sort: the schema's order
        prop = properties[name]
        default = inspect.Parameter.empty if name in required else prop.get("default")
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        params.append(inspect.Parameter(name, kind, default=default, annotation=_annotation(prop)))
    return inspect.Signature(params, return_annotation=returns)


def _loose(signature: inspect.Signature) -> bool:
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())


def _wrapped(output: Mapping[str, Any] | None) -> bool:
    """Whether an output schema is the SDK's wrapper of a value that is not an object (a list, a
    string): structured content must be an object, so the SDK sends ``{"result": value}``."""
    return (
        bool(output)
        and set(output.get("properties") or {}) == {"result"}
        and output.get("required") == ["result"]
    )


def _unwrapped(structured: Any, wrapped: bool) -> Any:
    if wrapped and isinstance(structured, Mapping) and set(structured) == {"result"}:
        return structured["result"]
    return structured


def _content_text(content: Any) -> str:
    """One content block of a result as text: text as it is, an embedded text resource's text, and a
    short note of what anything else is (an image, a link to a resource)."""
    from mcp.types import (
        AudioContent,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    if isinstance(content, TextContent):
        return content.text
    if isinstance(content, EmbeddedResource):
        resource = content.resource
        return resource.text if isinstance(resource, TextResourceContents) else f"[resource {resource.uri}]"
    if isinstance(content, ResourceLink):
        return f"[resource {content.uri}]"
    if isinstance(content, (ImageContent, AudioContent)):
        return f"[{content.type} {content.mime_type}]"
    return f"[{content.type}]"
