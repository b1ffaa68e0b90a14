"""The MCP servers an ACP client names in ``session/new``, as the session's tools.

An editor passes the servers its user set up (``McpServerStdio``: a command to start; ``HttpMcpServer``:
a streamable HTTP endpoint). Each becomes an :class:`~rlm_kernel.mcp_tools.MCPServer` whose tools the
root's code may call, prefixed by the server's name (``notes`` gives ``notes_read_note``), as a dict
of servers gives them in ``tools=``. SSE servers, a transport the MCP SDK has deprecated, are not
reached: the session says so once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..mcp_tools import MCPServer

__all__ = ["servers_of"]


def servers_of(entries: Iterable[Any], cwd: str) -> tuple[dict[str, MCPServer], list[str]]:
    """The servers by their tool prefix, and a line for each one left out (its name and why)."""
    servers: dict[str, MCPServer] = {}
    left_out: list[str] = []
    for entry in entries:
        kind = getattr(entry, "type", None) or "stdio"
        name = _prefix(entry.name, servers)
        if kind == "stdio":
            env = {variable.name: variable.value for variable in entry.env or ()}
            servers[name] = MCPServer.stdio(entry.command, list(entry.args or ()), env=env, cwd=cwd)
        elif kind == "http":
            headers = {header.name: header.value for header in entry.headers or ()}
            servers[name] = MCPServer.streamable_http(entry.url, headers=headers)
        else:
            left_out.append(f"{entry.name} ({kind}: only stdio and http MCP servers are reached)")
    return servers, left_out


def _prefix(name: str, taken: dict[str, MCPServer]) -> str:
    """A Python name from the server's name, distinct from the others' (tools are called by it)."""
    base = re.sub(r"\W", "_", name.strip()).strip("_") or "mcp"
    if base[0].isdigit():
        base = f"mcp_{base}"
    prefix, n = base, 2
    while prefix in taken:
        prefix, n = f"{base}_{n}", n + 1
    return prefix
