"""The protocol's own stdin and stdout: the agent's code shares a process with the REPL's code.

The root's code runs in this process (the ``local`` executor), and libraries print; a stray
``print()`` on stdout would corrupt the JSON-RPC stream, and an ``input()`` would eat a request.
So the protocol gets copies of fds 0 and 1, and fd 0 then reads nothing while fd 1 goes to stderr.
"""

from __future__ import annotations

import asyncio
import os
import sys

from acp import run_agent, stdio_streams
from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES

from .agent import RLMAgent

__all__ = ["serve", "protocol_streams"]


async def protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The SDK's stdio streams, on fds that only the protocol uses (POSIX; elsewhere the plain ones)."""
    limit = DEFAULT_STDIO_BUFFER_LIMIT_BYTES
    if os.name != "posix":
        return await stdio_streams(limit=limit)
    protocol_in, protocol_out = os.dup(0), os.dup(1)
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    sys.stdout.flush()
    os.dup2(2, 1)
    # The SDK opens sys.stdin and sys.stdout as pipes: for that call only, they are the copies.
    saved = sys.stdin, sys.stdout
    sys.stdin = open(protocol_in, "rb", buffering=0)  # the pipe transport keeps it
    sys.stdout = open(protocol_out, "wb", buffering=0)
    try:
        return await stdio_streams(limit=limit)
    finally:
        sys.stdin, sys.stdout = saved


async def serve(agent: RLMAgent) -> None:
    """Answer the client on stdin and stdout until it closes them."""
    reader, writer = await protocol_streams()
    await run_agent(agent, writer, reader)
