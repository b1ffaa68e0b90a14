"""The sandbox of the ``kernel`` executor, and of a gateway's ``rlm-sandbox`` kernels: bubblewrap.

A sandboxed kernel is another identity, not a scrubbed copy of the host:

- another identity: started by root, a uid of its own that no other process has (and no
  capability); started by another user, uid 65534 in a user namespace of its own, with no
  capability outside it and no way to make another;
- namespaces of its own: mount, pid, network, IPC, UTS and cgroup;
- a filesystem of its own, read-only but for what is counted: the system (``/usr``) and the
  Python environment, an empty ``/tmp`` and ``/dev/shm`` in memory, ``$HOME`` pointing into
  ``/tmp``; no user's files, no Jupyter runtime folder, no other kernel's connection file. It
  binds its channels, IPC sockets, in a small folder of its own in memory, which its host reaches
  through the sandbox's first process and holds by descriptor (:func:`hold_sockets`); contexts
  arrive through a folder it may only read. No file it makes is on the host's disk;
- no network: loopback is its own, empty;
- an environment built from an allowlist (locale, time zone, thread counts), never the host's;
- a seccomp filter (:mod:`.seccomp`): no namespaces, mounts, io_uring, keyrings, BPF, perf
  events, memfds or SysV IPC;
- one memory limit across all its processes and its in-memory files, one CPU limit across all its
  processes, limits on processes, open files and file sizes, kept by the sandbox's first process
  (:mod:`.sandbox_init`); every process the kernel starts ends with it.

Where bubblewrap cannot run (not installed, user namespaces disabled, not Linux), :func:`problem`
says so in one line, and ``executor="kernel"`` refuses to start unless told ``isolation="none"``.

``python -m rlm_kernel.executors.sandbox -f CONNECTION_FILE`` starts a kernel this way; it is the
``rlm-sandbox`` kernelspec's command (``python -m rlm_kernel.install --sandbox``), for the kernels
of a Jupyter Kernel Gateway started with ``--KernelManager.transport=ipc``.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from . import seccomp
from .leftovers import PREFIX, private_folder, remove, sweep
from .sandbox_command import (
    ALLOWED,
    CONNECTION_FILE,
    INIT,
    OWN_UIDS,
    SANDBOX_UID,
    SOCKETS,
    SOCKETS_BYTES,
    command,
    environment,
    identity,
    options,
    sealed,
)
from .sandbox_launch import START_S, Launch
from .sandbox_limits import ENDED, HELD_BY, Limits, cpu_seconds
from .sandbox_mounts import ETC, SYSTEM, python_paths, system
from .sandbox_sockets import PORTS, first_pid, hold_sockets, inside, link_sockets

__all__ = [
    "Limits",
    "problem",
    "command",
    "environment",
    "private_folder",
    "sweep",
    "CONNECTION_FILE",
    "SANDBOX_UID",
    "identity",
    "main",
    # where each lives now; importable from here as before
    "ALLOWED",
    "ENDED",
    "ETC",
    "HELD_BY",
    "INIT",
    "Launch",
    "NONE_HINT",
    "OWN_UIDS",
    "PORTS",
    "PREFIX",
    "SOCKETS",
    "SOCKETS_BYTES",
    "START_S",
    "SYSTEM",
    "cpu_seconds",
    "first_pid",
    "hold_sockets",
    "inside",
    "link_sockets",
    "python_paths",
    "remove",
]


# -- whether a sandbox can be had --------------------------------------------------------------
NONE_HINT = "or pass executor_kwargs={'isolation': 'none'} to run the kernel without one"


@functools.cache
def problem() -> str | None:
    """Why no sandbox can be made here, in one line; None when one can."""
    if sys.platform != "linux":
        return f"executor='kernel' sandboxes its kernel with bubblewrap, which needs Linux; {NONE_HINT}."
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return (
            "executor='kernel' sandboxes its kernel with bubblewrap, which is not installed: "
            f"apt install bubblewrap (or dnf install bubblewrap), {NONE_HINT}."
        )
    if (why := seccomp.available()) is not None:
        return f"{why}; {NONE_HINT}."
    filter_ = seccomp.open_program()
    probe = [*options(Limits(memory_mb=64), identity()), *system(), *sealed()]
    probe += ["--seccomp", str(filter_), "--", _true()]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30, pass_fds=(filter_,))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap did not run ({exc}); {NONE_HINT}."
    finally:
        os.close(filter_)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return (
            f"bubblewrap cannot make a sandbox here ({why}); unprivileged user namespaces may be disabled "
            f"(sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap); {NONE_HINT}."
        )
    return None


def _true() -> str:
    return shutil.which("true") or "/bin/true"


# -- a gateway's kernels ----------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """The ``rlm-sandbox`` kernelspec's command: a Python kernel in a sandbox, for a server that
    starts kernels with IPC channels (a Kernel Gateway with ``--KernelManager.transport=ipc``).

    The server connects to ``<ip>-<port>``; each is a link to a socket the kernel bound in its
    sandbox's own folder, held by this process. The kernel has none of the server's stdio: its
    standard input and output are ``/dev/null``, and of its errors, the last line is said (as
    plain text) only when it ends badly."""
    parser = argparse.ArgumentParser(prog="python -m rlm_kernel.executors.sandbox", description=main.__doc__)
    parser.add_argument("-f", dest="connection_file", required=True)
    parser.add_argument("--memory-mb", type=int, default=Limits.memory_mb)
    parser.add_argument("--max-procs", type=int, default=Limits.max_procs)
    parser.add_argument("--file-mb", type=int, default=Limits.file_mb)
    parser.add_argument("--cpu-s", type=float, default=Limits.cpu_s)
    args = parser.parse_args(argv)
    server = os.getppid()
    if sys.platform == "linux":  # ended with the server that started it, whatever ends the server
        ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != server:
        return 1
    info = json.loads(Path(args.connection_file).read_text())
    if info.get("transport") != "ipc":
        print(
            "rlm-sandbox: the sandboxed kernel has no network, so its server must use IPC channels: "
            "start it with --KernelManager.transport=ipc",
            file=sys.stderr,
        )
        return 2
    if (why := problem()) is not None:
        print(f"rlm-sandbox: {why}", file=sys.stderr)
        return 2
    limits = Limits(args.memory_mb, args.max_procs, args.file_mb, args.cpu_s)
    with Launch(info, limits) as launch:
        return launch.run(os.path.abspath(info["ip"]))


if __name__ == "__main__":
    raise SystemExit(main())
