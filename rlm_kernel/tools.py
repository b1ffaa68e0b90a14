"""Tools: plain Python functions the root's code may call (``tools``), and functions only sub-calls
may call (``sub_tools``), as the provider's function calling. An MCP server's tools may stand beside
them: :class:`MCPServer` (``rlm_kernel.mcp_tools``) lists them as :class:`Tool` records too.

A tool's JSON schema comes from its signature (pydantic) and the descriptions of its arguments from
its docstring (docstring_parser), so a function needs nothing but type hints and a docstring
(:mod:`rlm_kernel.tool_spec`). A sub-call with tools runs the tool-calling loop until the sub-model
answers in text, so a tool's verbose output stays in that sub-call and never reaches the root's
context.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .errors import ConfigError
from .mcp_tools import MCPServer
from .tool_spec import RESULT_PREVIEW, Tool, ToolRequest, arguments_of, as_text, calls_in_text

__all__ = [
    "Tool",
    "ToolRequest",
    "MCPServer",
    "tools_of",
    "load_tools",
    "as_text",
    "arguments_of",
    "calls_in_text",
    "RESULT_PREVIEW",
]


def load_tools(spec: str) -> Any:
    """The tools an import path ``module:attr`` names (a dict or list of functions and MCP servers, or
    one of them), so that a command line and a Ray worker can name them."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ConfigError(f"Tools are named module:attr, not {spec!r}.")
    try:
        value = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"Cannot import the tools {spec!r}: {exc}") from None
    if isinstance(value, MCPServer) or (callable(value) and not isinstance(value, (Mapping, Sequence))):
        value = [value]
    return value


def tools_of(
    value: Mapping[str, Callable[..., Any] | MCPServer]
    | Iterable[Callable[..., Any] | MCPServer]
    | MCPServer
    | str
    | None,
) -> dict[str, Tool]:
    """Tools by name, from ``{"name": fn}``, a list of functions (each named by ``__name__``), or an
    import path ``module:attr`` naming either. An MCP server among them gives all its tools, named as
    the server names them, or prefixed by its key in a dict (``{"notes": server}``: ``notes_read``);
    listing them starts the server."""
    if not value:
        return {}
    if isinstance(value, str):
        value = load_tools(value)
    if isinstance(value, MCPServer):
        value = [value]
    pairs = value.items() if isinstance(value, Mapping) else ((None, fn) for fn in value)
    tools: dict[str, Tool] = {}
    for name, fn in pairs:
        if isinstance(fn, MCPServer):
            found: list[Tool] = list(fn.tools(f"{name}_" if name else ""))
        else:
            found = [fn if isinstance(fn, Tool) else Tool.of(fn, name)]
        for tool in found:
            if tool.name in tools:
                raise ConfigError(f"Two tools are named {tool.name!r}.")
            tools[tool.name] = tool
    return tools
