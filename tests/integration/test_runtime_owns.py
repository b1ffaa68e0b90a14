"""The runtime owns what runs: leaving ``with Runtime():`` after a run in a kernel, with an MCP server
of its own, leaves no thread, process or folder of it; nothing else closes at exit or catches
SIGTERM unasked."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import psutil
import pytest
from scripted_server import Script, ScriptedServer

from rlm_kernel import RLM
from rlm_kernel.executors.sandbox import PREFIX
from rlm_kernel.mcp_tools import MCPServer
from rlm_kernel.runtime import Runtime

pytestmark = pytest.mark.timeout(240)

MCP_SERVER = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_notes_server.py")


def folders() -> set[str]:
    """This process's sandbox folders: kernels' own, and the ones contexts pass through."""
    mine = f"{PREFIX}{os.getpid()}-*"
    return {*glob.glob(os.path.join(tempfile.gettempdir(), mine)), *glob.glob(os.path.join("/dev/shm", mine))}


def children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


@pytest.mark.sandbox
def test_leaving_a_runtime_leaves_no_thread_process_or_folder_of_it(server: ScriptedServer) -> None:
    threads, processes, made = set(threading.enumerate()), children(), folders()
    server.responder = Script(
        root=['```repl\nprint(len(context), server_pid(), "done")\n```', "FINAL(done)"], sub="ok"
    )
    with Runtime(name="rlm-owned") as runtime:
        notes = MCPServer.stdio(sys.executable, [MCP_SERVER], runtime=runtime)
        rlm = RLM(
            "openai",
            {"model_name": "gpt-4o-mini", "base_url": server.openai_base_url, "api_key": "sk-test"},
            executor="kernel",
            tools=[notes],
            log_dir=False,
            runtime=runtime,
        )
        result = rlm.completion("x" * 200_000, "q")  # large enough to pass as a file in its folders
        assert result.ok, result.error
        assert children() - processes  # its kernel, a warm one and the MCP server, while it is open
        assert folders() - made
    assert set(threading.enumerate()) <= threads, set(threading.enumerate()) - threads
    assert children() <= processes and folders() <= made


def test_only_the_default_runtime_closes_at_exit_and_none_catches_sigterm_unasked() -> None:
    code = (
        "import signal, threading\n"
        "from rlm_kernel.executors.kernel import KernelExecutor\n"
        "from rlm_kernel.runtime import Runtime\n"
        "hooks = len(threading._threading_atexits)\n"
        "with Runtime() as runtime:\n"
        "    KernelExecutor(runtime=runtime).runtime.loop\n"
        "assert len(threading._threading_atexits) == hooks, 'a Runtime of its own registered an exit hook'\n"
        "assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL\n"
        "Runtime().close_on_sigterm()\n"
        "assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
