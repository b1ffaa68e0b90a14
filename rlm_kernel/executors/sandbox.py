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
import contextlib
import ctypes
import functools
import json
import os
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
SOCKETS = "/run/rlm/sockets"  # the sandbox's own folder of its sockets: a tmpfs, counted, gone with it
SOCKETS_BYTES = 64 << 10
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
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
    the size of any one file, CPU seconds of all its processes together, and open files per
    process. Every one holds with no setting."""

    memory_mb: int = 4096
    max_procs: int = 256
    file_mb: int = 1024
    cpu_s: float = 3600.0
    max_files: int = 1024


# What holds a sandbox to its limits, as the run's settings event says.
HELD_BY = "counted by the sandbox's first process (no cgroup); seccomp refuses memfds and SysV IPC"


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
    from . import seccomp

    if (why := seccomp.available()) is not None:
        return f"{why}; {NONE_HINT}."
    filter_ = seccomp.open_program()
    probe = [*_options(Limits(memory_mb=64), identity()), *_system(), *_sealed()]
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


def _sealed() -> list[str]:
    """The last options: the sandbox's socket folder, a small tmpfs of its own, and its root and
    ``/dev`` read-only, so that the only memory its files can take is in the folders its first
    process counts."""
    opts = ["--perms", "0755", "--dir", "/run/rlm"]
    opts += ["--size", str(SOCKETS_BYTES), "--perms", "1777", "--tmpfs", SOCKETS]
    return [*opts, "--remount-ro", "/dev", "--remount-ro", "/"]


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
        if not any(entry == p or entry.startswith(p + "/") for p in prefixes):
            found += _importable(entry)
    home = os.path.realpath(os.path.expanduser("~"))
    # Never a home folder or the root, whole: only what imports need.
    kept = [p for p in found if os.path.exists(p) and p != "/" and not (home + "/").startswith(p + "/")]
    return tuple(_outermost(kept))


def _importable(entry: str) -> list[str]:
    """What of a ``sys.path`` entry outside the environment the kernel needs: a site folder whole
    (one a ``.pth`` file adds, or a user's), and of any other folder (a source checkout installed
    in editable mode) its packages and modules only, never its other files (a ``.env``, say)."""
    if not os.path.isdir(entry):
        return [entry]  # a zip file, or nothing
    with os.scandir(entry) as entries:
        children = list(entries)
    site = os.path.basename(entry) in ("site-packages", "dist-packages") or any(
        c.name.endswith((".dist-info", ".egg-info")) for c in children
    )
    if site:
        return [entry]
    return [
        c.path
        for c in children
        if not c.name.startswith(".")
        and (
            (c.is_dir() and os.path.exists(os.path.join(c.path, "__init__.py")))
            or (c.is_file() and c.name.endswith((".py", ".so", ".pyd")))
        )
    ]


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
    :func:`inside`), readable by that uid; ``read_only`` are host folders it may read, at the same
    place; ``env`` is its whole environment. ``alive`` is the reading end of a pipe, passed to the
    command, whose writing end the host holds: the sandbox ends when it closes. ``info``, a pipe's
    writing end, gets the sandbox's first process's pid (:func:`first_pid`); ``seccomp``, a file
    holding the filter (:mod:`.seccomp`)."""
    python = kernel[0]
    # A system Python's folders are in /usr, which the sandbox has already.
    mounts = [p for p in (*python_paths(python), *read_only) if p != "/usr" and not p.startswith("/usr/")]
    opts = [*_options(limits, uid), *_system(), *_folders([*mounts, CONNECTION_FILE])]
    for path in mounts:
        opts += ["--ro-bind", path, path]
    opts += ["--ro-bind", connection_file, CONNECTION_FILE, "--ro-bind", str(INIT), "/run/rlm/init.py"]
    opts += _sealed()
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


# -- the kernel's sockets ----------------------------------------------------------------------------
PORTS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")


def inside(connection: Mapping[str, Any]) -> dict[str, Any]:
    """A kernel's connection info as its sandbox sees it: its sockets in the sandbox's own folder."""
    return {**connection, "transport": "ipc", "ip": f"{SOCKETS}/k"}


def first_pid(info: int, timeout: float) -> int:
    """The pid of a sandbox's first process, read from the pipe bubblewrap's ``--info-fd`` wrote."""
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(b"}") and (left := deadline - time.monotonic()) > 0:
        if not select.select([info], [], [], left)[0]:
            break
        chunk = os.read(info, 4096)
        if not chunk:
            break
        data += chunk.strip()
    try:
        return int(json.loads(data)["child-pid"])
    except (ValueError, KeyError, TypeError) as exc:
        raise OSError(f"bubblewrap said no pid ({data[:200]!r})") from exc


def hold_sockets(
    pid: int, connection: Mapping[str, Any], timeout: float, running: Callable[[], bool]
) -> dict[str, int]:
    """The sockets of the sandbox whose first process is ``pid``, each held by an ``O_PATH``
    descriptor once it is there, by port name. They are taken as the kernel binds them, before
    any code runs in it, so the host never connects through a name the kernel made afterwards."""
    folder = f"/proc/{pid}/root{SOCKETS}"
    names = {port: f"k-{connection[port]}" for port in PORTS}
    held: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(held) < len(names):
            for port, name in names.items():
                if port in held:
                    continue
                try:
                    fd = os.open(os.path.join(folder, name), os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
                except FileNotFoundError:
                    continue
                held[port] = fd
                if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                    raise OSError(f"the kernel's {name} is not a socket")
            if len(held) < len(names):
                if time.monotonic() > deadline or not running():
                    raise OSError("the kernel did not open its sockets")
                time.sleep(0.005)
    except BaseException:
        for fd in held.values():
            os.close(fd)
        raise
    return held


def cpu_seconds(pid: int) -> float:
    """CPU seconds of a sandbox whose first process is ``pid``: of every process in it, and of
    those that ended (a process's reaped children are in its own count)."""
    total, todo, seen = 0.0, [pid], set()
    while todo and len(seen) < 1 << 16:
        pid = todo.pop()
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            total += sum(int(v) for v in fields[11:15]) / TICK  # utime, stime, cutime, cstime
            for task in os.scandir(f"/proc/{pid}/task"):
                with open(os.path.join(task.path, "children"), "rb") as f:
                    todo += [int(c) for c in f.read().split() if int(c) not in seen]
        except (OSError, IndexError, ValueError):
            continue  # gone: its time is now its parent's
    return total


def link_sockets(held: Mapping[str, int], connection: Mapping[str, Any], ip: str) -> list[str]:
    """Links ``<ip>-<port>`` (the names a Jupyter client connects to) to the sockets this process
    holds: whatever the kernel later does to its folder, a connection reaches the socket it bound."""
    links = []
    for port, fd in held.items():
        link = f"{ip}-{connection[port]}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(link)
        os.symlink(f"/proc/{os.getpid()}/fd/{fd}", link)
        links.append(link)
    return links


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


def _ours(st: os.stat_result) -> bool:
    """Whether a folder is this user's: its own, or, as root, a sandbox's uid it gave it to."""
    first, count = OWN_UIDS
    return st.st_uid == os.geteuid() or (os.geteuid() == 0 and first <= st.st_uid < first + count)


def _left_behind(parent: str) -> Iterator[str]:
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for entry in entries:
            pid = entry.name[len(PREFIX) :].split("-", 1)[0]
            with contextlib.suppress(OSError):
                if (
                    entry.name.startswith(PREFIX)
                    and pid.isdigit()
                    and entry.is_dir(follow_symlinks=False)
                    and _ours(entry.stat(follow_symlinks=False))
                    and not _alive(int(pid))
                ):
                    yield entry.path


def remove(path: str) -> None:
    """Remove a folder and all it holds, however deep, never following a link out of it and never
    raising: a tree is flattened into its top folder (a rename), one level at a time, so neither the
    stack nor a path grows with its depth."""
    try:
        top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)
        return
    try:
        for _ in range(1 << 24):  # each round removes or lifts at least one entry
            with os.scandir(top) as entries:
                names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
            if not names:
                break
            for name, is_dir in names:
                if is_dir:
                    _lift(top, name)
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=top)
    except OSError:
        pass
    finally:
        os.close(top)
    with contextlib.suppress(OSError):
        os.rmdir(path)


def _lift(top: int, name: str) -> None:
    """Empty the folder ``name`` of ``top`` into ``top`` (its folders moved up, the rest removed),
    then remove it."""
    try:
        sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=top)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=top)
        return
    try:
        with os.scandir(sub) as entries:
            children = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
        for child, is_dir in children:
            with contextlib.suppress(OSError):
                if is_dir:
                    os.rename(child, secrets.token_hex(8), src_dir_fd=sub, dst_dir_fd=top)
                else:
                    os.unlink(child, dir_fd=sub)
    finally:
        os.close(sub)
    with contextlib.suppress(OSError):
        os.rmdir(name, dir_fd=top)


def sweep(*parents: str) -> None:
    """Remove the folders of hosts that ended without removing theirs (killed outright)."""
    for parent in parents:
        for path in _left_behind(parent):
            remove(path)


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


class Launch:
    """One sandboxed kernel of a server: its folder, its sandbox, the sockets it holds."""

    def __init__(self, info: Mapping[str, Any], limits: Limits) -> None:
        from . import seccomp

        self.info, self.limits = info, limits
        self.uid = identity()
        sweep(tempfile.gettempdir())
        self.folder = private_folder()
        copy = os.path.join(self.folder, "kernel.json")  # for the sandbox's uid to read
        Path(copy).write_text(json.dumps(inside(info)))
        if self.uid is not None:
            os.chown(copy, self.uid, self.uid)
        self.alive, self.held = os.pipe()  # this process holds the writing end until it ends
        self.info_r, info_w = os.pipe()
        self.filter = seccomp.open_program()
        argv = command(
            [sys.executable, "-m", "ipykernel_launcher", "-f", CONNECTION_FILE],
            connection_file=copy,
            uid=self.uid,
            alive=self.alive,
            info=info_w,
            seccomp=self.filter,
            env=environment(sys.executable),
            limits=limits,
        )
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(self.alive, info_w, self.filter),
        )
        for fd in (self.alive, info_w, self.filter):
            os.close(fd)
        self.sockets: dict[str, int] = {}
        self.links: list[str] = []
        self.errors = _Tail(self.process.stderr)

    def run(self, ip: str) -> int:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts reach the kernel as messages
        signal.signal(signal.SIGTERM, lambda signum, frame: self.process.kill())
        try:
            pid = first_pid(self.info_r, START_S)
            self.sockets = hold_sockets(pid, self.info, START_S, lambda: self.process.poll() is None)
            self.links = link_sockets(self.sockets, self.info, ip)
        except OSError as exc:
            self.process.kill()
            self.process.wait()
            print(f"rlm-sandbox: the kernel did not start: {exc}{self.errors.last()}", file=sys.stderr)
            return 1
        status = self.process.wait()
        if status in ENDED:
            print(f"rlm-sandbox: {ENDED[status]}", file=sys.stderr)
        elif status != 0:
            print(f"rlm-sandbox: the kernel ended with status {status}{self.errors.last()}", file=sys.stderr)
        return status

    def __enter__(self) -> Launch:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for fd in (self.held, self.info_r, *self.sockets.values()):
            os.close(fd)
        for link in self.links:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(link)
        remove(self.folder)


START_S = 120.0
# Why a sandbox's first process ended its kernel, by its exit status (sandbox_init's OVER_*).
ENDED = {
    100: "the kernel was ended by its sandbox: over its memory limit",
    101: "the kernel was ended by its sandbox: over its CPU limit",
}


class _Tail:
    """The last few kilobytes a stream wrote, read on a thread of its own; never more."""

    def __init__(self, stream: Any, keep: int = 4096) -> None:
        self._data = b""
        self._keep = keep
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := stream.read1(65536):
                self._data = (self._data + chunk)[-self._keep :]

    def last(self) -> str:
        """Its last line, as printable text, after ``: ``; empty when there is none."""
        self._thread.join(timeout=1.0)
        lines = self._data.decode("utf-8", "replace").splitlines()
        line = "".join(c for c in (lines[-1] if lines else "") if c.isprintable())[:300]
        return f": {line}" if line else ""


if __name__ == "__main__":
    raise SystemExit(main())
