"""The first process of a kernel's sandbox: it starts the kernel, reaps orphans, and holds every
process of the sandbox to one memory limit.

bubblewrap runs it as pid 1 of the sandbox's pid namespace (``--as-pid-1``), so the code in the
kernel can neither signal it (signals sent from inside a namespace to its init are dropped unless
the init handles them, and this one handles none) nor trace it (it is not dumpable); when it
ends, every process of the sandbox ends with it. It ends when the kernel does.

It adds up the memory of the sandbox's processes and of its private ``/tmp`` and ``/dev/shm``:
resident sizes first, which cost little and bound the rest from above, then, when they are over,
each process's proportional share (its resident size where it hides its maps). It looks again as
soon as memory growing at ``GROWTH`` bytes a second could reach the limit: every ``WATCH_S`` near
it, once a second far below it (an idle kernel's sandbox costs little CPU). Over
the limit, it ends the largest processes other than the kernel until the rest fits, and the kernel
itself when they are not enough. The socket folder the kernel shares with its host must hold
sockets only: anything else written there ends the kernel.

The standard library only, run as ``python -I -S``::

    python -I -S sandbox_init.py UID ALIVE MEMORY_BYTES MAX_PROCS FILE_BYTES SOCKET_FOLDER -- KERNEL...

UID is the uid (and gid) to take when started by root (``-``: keep the user namespace's). ALIVE is
the reading end of a pipe whose other end only the host holds: when it reads as closed (the host
ended, however it ended), so does the sandbox. A parent-death signal would not do: the host's
bubblewrap, without capabilities, cannot signal a process of another uid.
"""

from __future__ import annotations

import ctypes
import os
import resource
import select
import signal
import stat
import sys

WATCH_S, IDLE_S = 0.02, 1.0  # the most and the least often it looks
GROWTH = 4 << 30  # bytes a second memory may grow: a few cores writing to new pages
PAGE = os.sysconf("SC_PAGE_SIZE")
MAX_SOCKETS = 16  # a kernel binds five


def _not_dumpable() -> None:
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0: no ptrace, no /proc/1/mem


def _resident(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0  # gone


def _share(pid: int) -> int:
    """A process's share of memory: Pss where its maps can be read, else its resident size."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return _resident(pid)


def _used(path: str) -> int:
    try:
        s = os.statvfs(path)
    except OSError:
        return 0
    return (s.f_blocks - s.f_bfree) * s.f_frsize


def _only_sockets(folder: str) -> bool:
    try:
        with os.scandir(folder) as entries:
            for i, entry in enumerate(entries):
                if i >= MAX_SOCKETS or not stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                    return False
    except OSError:
        return False
    return True


def _enforce(kernel: int, limit: int, folder: str) -> float:
    """Hold the sandbox to its limits; returns how long until it must look again."""
    if folder and not _only_sockets(folder):
        os.kill(kernel, signal.SIGKILL)
        return WATCH_S
    pids = [int(name) for name in os.listdir("/proc") if name.isdigit() and name != "1"]
    files = _used("/tmp") + _used("/dev/shm")  # noqa: S108 - the sandbox's own, private mounts
    resident = files + sum(map(_resident, pids))
    if resident <= limit:  # resident sizes bound the shares from above
        return min(max((limit - resident) / GROWTH, WATCH_S), IDLE_S)
    sizes = {pid: _share(pid) for pid in pids}
    total = files + sum(sizes.values())
    for pid, size in sorted(sizes.items(), key=lambda item: item[1], reverse=True):
        if total <= limit:
            break
        if pid != kernel:
            os.kill(pid, signal.SIGKILL)
            total -= size
    if total > limit:
        os.kill(kernel, signal.SIGKILL)
    return WATCH_S


def main(argv: list[str]) -> int:
    if os.getpid() != 1:  # its watch ends processes: only ever the sandbox's own
        print("sandbox_init runs only as the first process of a sandbox", file=sys.stderr)
        return 2
    uid, alive, memory, procs, file_size = argv[0], int(argv[1]), int(argv[2]), int(argv[3]), int(argv[4])
    folder = argv[5]
    command = argv[argv.index("--") + 1 :]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    # Counted per user (in the sandbox's own user namespace, or of its own uid): every process of the
    # sandbox, this one too.
    resource.setrlimit(resource.RLIMIT_NPROC, (procs, procs))
    if uid != "-":  # started by root: the sandbox's own uid, and no capability left
        os.setgroups([])
        os.setgid(int(uid))
        os.setuid(int(uid))
    _not_dumpable()
    woken, wake = os.pipe()  # a child's end wakes the loop below, as the host's does
    os.set_blocking(woken, False)
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    kernel = os.fork()
    if kernel == 0:
        os.close(alive)
        os.execv(command[0], command)  # noqa: S606 - the kernel's command, given by the host
    wait = WATCH_S
    while True:
        ready = select.select([alive, woken], [], [], wait)[0]
        if alive in ready:  # the host is gone: so is every process here
            return 0
        if woken in ready:
            os.read(woken, 4096)
        while True:  # reap whatever has ended: the kernel, or an orphan of it
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return 1
            if pid == 0:
                break
            if pid == kernel:
                return os.waitstatus_to_exitcode(status)
        wait = _enforce(kernel, memory, folder)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
