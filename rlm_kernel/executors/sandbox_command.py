"""The bubblewrap command line of a sandboxed kernel: its identity, namespaces, filesystem,
environment and first process (:mod:`.sandbox_init`), which keeps its limits."""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..secrets import secret_in
from .sandbox_limits import Limits
from .sandbox_mounts import folders, python_paths, system

__all__ = [
    "SANDBOX_UID",
    "OWN_UIDS",
    "CONNECTION_FILE",
    "SOCKETS",
    "ALLOWED",
    "identity",
    "options",
    "sealed",
    "command",
    "environment",
]

SANDBOX_UID = 65534  # nobody, inside the sandbox's own user namespace
OWN_UIDS = (1_000_000_000, 1 << 24)  # where root picks a sandbox's own uid: first, how many
CONNECTION_FILE = "/run/rlm/kernel.json"  # where a sandboxed kernel reads its connection file
SOCKETS = "/run/rlm/sockets"  # the sandbox's own folder of its sockets: a tmpfs, counted, gone with it
SOCKETS_BYTES = 64 << 10
INIT = Path(__file__).with_name("sandbox_init.py")
# What a kernel's environment may carry over from its host's: locale, time zone, terminal, thread
# counts and Python's own text settings. Nothing else, whatever its name.
ALLOWED = frozenset(
    {
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "PYTHONHASHSEED",
        "PYTHONIOENCODING",
        "PYTHONUTF8",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
    }
)


@functools.cache
def _supports(option: str) -> bool:
    bwrap = shutil.which("bwrap") or "bwrap"
    try:
        return option in subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False


# -- the command line ----------------------------------------------------------------------------
def identity() -> int | None:
    """The uid (and gid) a new sandbox runs as: one of its own where this process may choose it (as
    root), else None: the user's own, seen as ``SANDBOX_UID`` inside a user namespace."""
    first, count = OWN_UIDS
    return first + secrets.randbelow(count) if os.geteuid() == 0 else None


def options(limits: Limits, uid: int | None) -> list[str]:
    """bubblewrap's first options: its namespaces and identity, and the in-memory ``/tmp`` and
    ``/dev/shm``, each no larger than the memory limit (the first process counts what they hold)."""
    size = str(limits.memory_mb << 20)
    opts = [
        shutil.which("bwrap") or "bwrap",
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
    ]
    opts += ["--unshare-cgroup-try", "--hostname", "sandbox"]
    if uid is None:
        opts += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
        if _supports("--disable-userns"):
            opts.append("--disable-userns")
    else:  # the sandbox's first process takes its own uid, and with it gives these up
        opts += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    opts += ["--die-with-parent", "--new-session", "--as-pid-1"]
    opts += ["--proc", "/proc", "--dev", "/dev"]
    opts += ["--size", size, "--perms", "1777", "--tmpfs", "/tmp"]  # noqa: S108 - the sandbox's own
    opts += ["--size", size, "--perms", "1777", "--tmpfs", "/dev/shm"]  # noqa: S108 - the sandbox's own
    return opts


def sealed() -> list[str]:
    """The last options: the sandbox's socket folder, a small tmpfs of its own, and its root and
    ``/dev`` read-only, so that the only memory its files can take is in the folders its first
    process counts."""
    opts = ["--perms", "0755", "--dir", "/run/rlm"]
    opts += ["--size", str(SOCKETS_BYTES), "--perms", "1777", "--tmpfs", SOCKETS]
    return [*opts, "--remount-ro", "/dev", "--remount-ro", "/"]


def command(
    kernel: Sequence[str],
    *,
    connection_file: str,
    uid: int | None,
    alive: int,
    info: int | None = None,
    seccomp: int | None = None,
    read_only: Sequence[str] = (),
    env: Mapping[str, str],
    limits: Limits = Limits(),
) -> list[str]:
    """The command that runs ``kernel`` (a Python kernel's argv, reading ``CONNECTION_FILE``) in a
    sandbox, as ``uid`` (:func:`identity`). ``connection_file`` is the kernel's (see
    :func:`~.sandbox_sockets.inside`), readable by that uid; ``read_only`` are host folders it may
    read, at the same place; ``env`` is its whole environment. ``alive`` is the reading end of a
    pipe, passed to the command, whose writing end the host holds: the sandbox ends when it closes.
    ``info``, a pipe's writing end, gets the sandbox's first process's pid
    (:func:`~.sandbox_sockets.first_pid`); ``seccomp``, a file holding the filter (:mod:`.seccomp`)."""
    python = kernel[0]
    # A system Python's folders are in /usr, which the sandbox has already.
    mounts = [p for p in (*python_paths(python), *read_only) if p != "/usr" and not p.startswith("/usr/")]
    opts = [*options(limits, uid), *system(), *folders([*mounts, CONNECTION_FILE])]
    for path in mounts:
        opts += ["--ro-bind", path, path]
    opts += ["--ro-bind", connection_file, CONNECTION_FILE, "--ro-bind", str(INIT), "/run/rlm/init.py"]
    opts += sealed()
    if info is not None:
        opts += ["--info-fd", str(info)]
    if seccomp is not None:
        opts += ["--seccomp", str(seccomp)]
    opts += ["--clearenv"]
    for name, value in env.items():
        opts += ["--setenv", name, value]
    opts += ["--chdir", "/tmp"]  # noqa: S108 - the sandbox's own
    init = [python, "-I", "-S", "/run/rlm/init.py", "-" if uid is None else str(uid), str(alive)]
    init += [str(limits.memory_mb << 20), str(limits.max_procs), str(limits.file_mb << 20)]
    init += [str(limits.cpu_s), str(limits.max_files), "--"]
    return [*opts, "--", *init, *kernel]


def environment(python: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A kernel's whole environment: the allowed names of ``environ`` whose values hold no secret,
    and what a kernel needs (``PATH``, ``HOME``, no colours, a plotting backend without a display)."""
    environ = os.environ if environ is None else environ
    env = {
        name: value
        for name, value in environ.items()
        if (name in ALLOWED or name.startswith("LC_")) and not secret_in(value)
    }
    env.update(
        PATH=os.pathsep.join([os.path.dirname(python), "/usr/local/bin", "/usr/bin", "/bin"]),
        HOME="/tmp",  # noqa: S108 - the sandbox's own, empty
        NO_COLOR="1",
        MPLBACKEND="Agg",
        PYTHONDONTWRITEBYTECODE="1",
        JUPYTER_PLATFORM_DIRS="1",
        USER="sandbox",  # a sandbox's own uid has no name
        LOGNAME="sandbox",
    )
    return env
