"""The red team: attacks on the ``kernel`` and ``gateway`` executors, made as an attacker with the
host's uid would make them.

Each attack is the root LM's code, sent by the scripted server as a step, with a fake key in the
host's environment and in ``backend_kwargs``. The host is a real process (this one, a notebook
kernel started the way jupyter_server starts one, or a Python process of an ordinary user), the
kernels are real, and the checks look at what the attack could reach from outside: files, other
kernels, processes, memory, the trajectory.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Reply, Request, ScriptedServer

from rlm_kernel import RLM

HOST_KEY = "sk-live-hostkey-0123456789abcdefABCDEF"  # in the host's environment
CONFIG_KEY = "sk-live-configkey-0123456789abcdefABCD"  # in backend_kwargs
NOBODY = 65534


def by_turn(*turns: str, sub: str = "ok") -> Any:
    """A responder for runs at any depth: a root request gets the reply for its turn (how many replies
    the conversation already holds), so every child run plays the same script from the start. Past
    the script, a last reply that is an answer is given again: a run sends back, once, an answer
    that nothing its code printed supports."""

    def respond(request: Request) -> Reply:
        if not request.is_root:
            return Reply(text=sub)
        turn = sum(m["role"] == "assistant" for m in request.messages)
        if turn >= len(turns) and turns and turns[-1].startswith("FINAL("):
            turn = len(turns) - 1
        if turn >= len(turns):
            return Reply(status=500, error_message="script exhausted")
        return Reply(text=turns[turn])

    return respond


def step(code: str) -> str:
    return f"```repl\n{code}\n```"


def attacker(server: ScriptedServer, *codes: str, **settings: Any) -> RLM:
    """An RLM whose root runs ``codes`` as its steps, then answers with the last step's output."""
    server.responder = by_turn(*(step(c) for c in codes), "FINAL(done)")
    settings.setdefault("executor", "kernel")
    settings.setdefault("log_dir", False)
    return RLM(
        "openai",
        {
            "model_name": "gpt-4o-mini",
            "base_url": server.openai_base_url,
            "api_key": CONFIG_KEY,
            "max_retries": 0,
        },
        **settings,
    )


def outputs(result: Any) -> list[str]:
    return [e.output for e in result.trajectory if e.kind == "step_finished"]


def processes_with(marker: str) -> list[int]:
    """Pids of this machine's processes whose command line holds ``marker``."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry.name))
    return found


def command_lines(pids: list[int]) -> dict[int, str]:
    """What each of these processes runs, for a failure's message."""
    lines = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            lines[pid] = (
                Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:200]
            )
    return lines


# -- an ordinary user ----------------------------------------------------------------------------
def _hidden_ancestors(path: str) -> list[str]:
    """The folders above ``path`` that another user cannot pass through."""
    hidden = []
    parent = os.path.dirname(os.path.realpath(path))
    while parent != "/":
        if not os.stat(parent).st_mode & 0o001:
            hidden.append(parent)
        parent = os.path.dirname(parent)
    return hidden


def ordinary_user_command(argv: list[str], folder: str) -> list[str]:
    """``argv`` as an ordinary user (uid 65534), who may use ``folder``. As root, that user cannot pass
    through a private folder above the interpreter (pyenv under /root, a venv under ``mktemp -d``):
    those folders get an empty tmpfs in a mount namespace of the command's own, with what the
    command needs bound back, and then the command drops to the ordinary user. Its uid, processes,
    network and /proc are the machine's; only those folders look different."""
    if os.geteuid() != 0:
        return argv
    if shutil.which("bwrap") is None or shutil.which("setpriv") is None:
        pytest.skip("the ordinary-user variant needs bwrap and setpriv as root")
    import rlm_kernel

    needed = [sys.prefix, sys.base_prefix, os.path.realpath(sys.executable), folder]
    needed.append(str(Path(rlm_kernel.__file__).resolve().parent.parent))
    wrap = ["bwrap", "--dev-bind", "/", "/"]
    hidden = sorted({h for p in needed for h in _hidden_ancestors(p)}, key=len)
    done: list[str] = []
    for folder in hidden:
        wrap += ["--tmpfs", folder]
    for path in needed:
        above = [h for h in hidden if path.startswith(h + "/")]
        if above:  # the folders between the tmpfs and the path, passable; then the path itself
            for folder in reversed(Path(path).parents):
                if len(str(folder)) > len(above[-1]) and not str(folder).startswith(tuple(done)):
                    wrap += ["--perms", "0755", "--dir", str(folder)]
            wrap += ["--bind", path, path]
            done.append(path)
    wrap += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--die-with-parent", "--"]
    drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all"]
    return [*wrap, *drop, *argv]


def run_as_ordinary_user(
    script: str, tmp_path: Path, env: dict[str, str], *, under_bash: bool = False, timeout: float = 150
) -> Any:
    """Run a Python ``script`` as an ordinary user (under ``bash -c``, which then holds ``env`` too); it
    prints one JSON line, returned decoded."""
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "script.py").write_text(script)
    if os.geteuid() == 0:
        for path in (tmp_path, home, tmp_path / "script.py"):
            os.chown(path, NOBODY, NOBODY)
    os.chmod(tmp_path, 0o755)
    argv = [sys.executable, str(tmp_path / "script.py")]
    if under_bash:  # `; exit $?` keeps bash from replacing itself with the command
        argv = ["bash", "-c", f"{argv[0]} {argv[1]}; exit $?"]
    argv = ordinary_user_command(argv, str(tmp_path))
    env = {"PATH": os.environ["PATH"], "HOME": str(home), **env}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
