"""The sandbox of the ``kernel`` executor, and of a gateway's ``rlm-sandbox`` kernels: bubblewrap.

A sandboxed kernel is another identity, not a scrubbed copy of the host:

- another identity: started by root, a uid of its own that no other process has (and no
  capability); started by another user, uid 65534 in a user namespace of its own, with no
  capability outside it and no way to make another;
- namespaces of its own: mount, pid, network, IPC, UTS and cgroup;
- a filesystem of its own: the system (``/usr``) and the Python environment read-only, an empty
  ``/tmp`` and ``/dev/shm`` in memory, ``$HOME`` pointing into ``/tmp``; no user's files, no Jupyter
  runtime folder, no other kernel's connection file. Its channels are IPC sockets in a folder only
  it and its host share, and contexts arrive through a folder it may only read;
- no network: loopback is its own, empty;
- an environment built from an allowlist (locale, time zone, thread counts), never the host's;
- one memory limit across all its processes and its in-memory files, a limit on processes and
  one on file sizes, kept by the sandbox's first process (:mod:`.sandbox_init`); every process
  the kernel starts ends with it.

Where bubblewrap cannot run (not installed, user namespaces disabled, not Linux), :func:`problem`
says so in one line, and ``executor="kernel"`` refuses to start unless told ``isolation="none"``.

``python -m rlm_kernel.executors.sandbox -f CONNECTION_FILE`` starts a kernel this way; it is the
``rlm-sandbox`` kernelspec's command (``python -m rlm_kernel.install --sandbox``), for the kernels
of a Jupyter Kernel Gateway started with ``--KernelManager.transport=ipc``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..secrets import secret_in

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
]

SANDBOX_UID = 65534  # nobody, inside the sandbox's own user namespace
OWN_UIDS = (1_000_000_000, 1 << 24)  # where root picks a sandbox's own uid: first, how many
CONNECTION_FILE = "/run/rlm/kernel.json"  # where a sandboxed kernel reads its connection file
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
ETC = (  # what Python and its libraries read in /etc; no secret, no host name
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "passwd",
    "group",
    "nsswitch.conf",
    "mime.types",
    "alternatives",
    "ssl",
    "fonts",
)
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
PREFIX = "rlm-kernel-"  # the folders a host makes: rlm-kernel-<host pid>-<random>


@dataclass(frozen=True)
class Limits:
    """What a sandbox may hold: memory across all its processes and in-memory files, processes,
    and the size of any one file."""

    memory_mb: int = 4096
    max_procs: int = 256
    file_mb: int = 1024


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
    probe = [*_options(Limits(memory_mb=64), identity()), *_system(), "--", _true()]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap did not run ({exc}); {NONE_HINT}."
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return (
            f"bubblewrap cannot make a sandbox here ({why}); unprivileged user namespaces may be disabled "
            f"(sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap); {NONE_HINT}."
        )
    return None


def _true() -> str:
    return shutil.which("true") or "/bin/true"


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


def _options(limits: Limits, uid: int | None) -> list[str]:
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


def _folders(paths: Sequence[str]) -> list[str]:
    """The folders above ``paths`` that the sandbox's root lacks, made passable by anyone (bubblewrap
    would make them for the mounts, readable by their owner only)."""
    made: list[str] = []
    for path in paths:
        for parent in reversed(Path(path).parents):
            folder = str(parent)
            if folder not in ("/", "/tmp", "/dev", "/dev/shm", "/proc") and folder not in made:  # noqa: S108
                made.append(folder)
    return [opt for folder in made for opt in ("--perms", "0755", "--dir", folder)]


def _system() -> list[str]:
    """The system, read-only: /usr, the folders that are links into it, and a few files of /etc."""
    opts: list[str] = []
    for path in SYSTEM:
        if os.path.islink(path):
            opts += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            opts += ["--ro-bind", path, path]
    for name in ETC:
        path = os.path.join("/etc", name)
        if os.path.exists(path):
            opts += ["--ro-bind", path, path]
    return opts


_PATHS = (
    "import json, os, sys\n"
    "prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,"
    " os.path.dirname(os.path.realpath(sys.executable))}\n"
    "print(json.dumps([sorted(prefixes), [p for p in sys.path if p]]))\n"
)


@functools.cache
def python_paths(python: str) -> tuple[str, ...]:
    """The folders ``python`` imports from, as it sees them with no environment (the kernel's view):
    its prefixes, and the paths ``.pth`` files add. Of a source checkout installed in editable mode,
    only the package: not the rest of the checkout (a ``.env`` file, say)."""
    done = subprocess.run(
        [python, "-I", "-c", _PATHS],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    if done.returncode != 0:
        raise OSError(f"{python} could not list its paths: {done.stderr.strip()[-300:]}")
    prefixes, path = json.loads(done.stdout)
    prefixes = [os.path.realpath(p) for p in prefixes]
    found = list(prefixes)
    for entry in map(os.path.realpath, path):
        if any(entry == p or entry.startswith(p + "/") for p in prefixes):
            continue
        package = os.path.join(entry, "rlm_kernel")
        found.append(package if os.path.isdir(package) else entry)
    home = os.path.realpath(os.path.expanduser("~"))
    # Never a home folder or the root, whole: only what imports need.
    kept = [p for p in found if os.path.exists(p) and p != "/" and not (home + "/").startswith(p + "/")]
    return tuple(_outermost(kept))


def _outermost(paths: Sequence[str]) -> list[str]:
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == k or path.startswith(k + "/") for k in kept):
            kept.append(path)
    return kept


def command(
    kernel: Sequence[str],
    *,
    connection_file: str,
    sockets: str,
    uid: int | None,
    alive: int,
    inside_sockets: str | None = None,
    read_only: Sequence[str] = (),
    env: Mapping[str, str],
    limits: Limits = Limits(),
) -> list[str]:
    """The command that runs ``kernel`` (a Python kernel's argv, reading ``CONNECTION_FILE``) in a
    sandbox, as ``uid`` (:func:`identity`). ``sockets`` is the host folder for its IPC sockets, shared
    writable, seen inside at ``inside_sockets`` (the same place by default); ``read_only`` are host
    folders it may read, at the same place; ``env`` is its whole environment. With a ``uid``, what
    it must reach on the host belongs to that uid. ``alive`` is the reading end of a pipe, passed
    to the command, whose writing end the host holds: the sandbox ends when it closes."""
    python = kernel[0]
    inside = inside_sockets or sockets
    # A system Python's folders are in /usr, which the sandbox has already.
    mounts = [p for p in (*python_paths(python), *read_only) if p != "/usr" and not p.startswith("/usr/")]
    opts = [*_options(limits, uid), *_system(), *_folders([*mounts, inside, CONNECTION_FILE])]
    for path in mounts:
        opts += ["--ro-bind", path, path]
    opts += ["--bind", sockets, inside]
    opts += ["--ro-bind", connection_file, CONNECTION_FILE, "--ro-bind", str(INIT), "/run/rlm/init.py"]
    opts += ["--clearenv"]
    for name, value in env.items():
        opts += ["--setenv", name, value]
    opts += ["--chdir", "/tmp"]  # noqa: S108 - the sandbox's own
    init = [python, "-I", "-S", "/run/rlm/init.py", "-" if uid is None else str(uid), str(alive)]
    init += [str(limits.memory_mb << 20), str(limits.max_procs), str(limits.file_mb << 20), inside, "--"]
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


# -- the host's folders ----------------------------------------------------------------------------
def private_folder(parent: str | None = None) -> str:
    """A new folder only this user can enter, named for this process so that a later host can tell
    it was left behind (:func:`sweep`)."""
    return tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _left_behind(parent: str) -> Iterator[str]:
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for entry in entries:
            pid = entry.name[len(PREFIX) :].split("-", 1)[0]
            if (
                entry.name.startswith(PREFIX)
                and pid.isdigit()
                and entry.is_dir(follow_symlinks=False)
                and entry.stat(follow_symlinks=False).st_uid == os.geteuid()
                and not _alive(int(pid))
            ):
                yield entry.path


def sweep(*parents: str) -> None:
    """Remove the folders of hosts that ended without removing theirs (killed outright)."""
    for parent in parents:
        for path in _left_behind(parent):
            shutil.rmtree(path, ignore_errors=True)


# -- a gateway's kernels ----------------------------------------------------------------------------
PORTS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")


def main(argv: list[str] | None = None) -> int:
    """The ``rlm-sandbox`` kernelspec's command: a Python kernel in a sandbox, for a server that
    starts kernels with IPC channels (a Kernel Gateway with ``--KernelManager.transport=ipc``).

    The server connects to ``<ip>-<port>``; each is a link to the socket of the same name in a
    folder of this kernel's own, which is all the sandbox sees of the server's folder."""
    parser = argparse.ArgumentParser(prog="python -m rlm_kernel.executors.sandbox", description=main.__doc__)
    parser.add_argument("-f", dest="connection_file", required=True)
    parser.add_argument("--memory-mb", type=int, default=Limits.memory_mb)
    parser.add_argument("--max-procs", type=int, default=Limits.max_procs)
    parser.add_argument("--file-mb", type=int, default=Limits.file_mb)
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
    ip = os.path.abspath(info["ip"])
    uid = identity()
    sweep(tempfile.gettempdir())
    folder = private_folder()
    sockets = os.path.join(folder, "sockets")
    os.mkdir(sockets, 0o700)
    copy = os.path.join(folder, "kernel.json")  # the connection file, for the sandbox's uid to read
    shutil.copyfile(args.connection_file, copy)
    if uid is not None:
        for path in (sockets, copy):
            os.chown(path, uid, uid)
    links = []
    for port in PORTS:
        link = f"{ip}-{info[port]}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(link)
        os.symlink(os.path.join(sockets, f"{os.path.basename(ip)}-{info[port]}"), link)
        links.append(link)
    kernel = [sys.executable, "-m", "ipykernel_launcher", "-f", CONNECTION_FILE]
    limits = Limits(args.memory_mb, args.max_procs, args.file_mb)
    alive, held = os.pipe()  # this process holds the writing end until it ends
    argv_ = command(
        kernel,
        connection_file=copy,
        sockets=sockets,
        uid=uid,
        alive=alive,
        inside_sockets=os.path.dirname(ip),
        env=environment(sys.executable),
        limits=limits,
    )
    process = subprocess.Popen(argv_, pass_fds=(alive,))
    os.close(alive)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts reach the kernel as messages
    signal.signal(signal.SIGTERM, lambda signum, frame: process.kill())
    try:
        return process.wait()
    finally:
        os.close(held)
        for link in links:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(link)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
