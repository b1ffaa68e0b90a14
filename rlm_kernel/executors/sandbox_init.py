"""The first process of a kernel's sandbox: it starts the kernel, reaps orphans, and holds every
process of the sandbox to one memory limit and one CPU limit.

bubblewrap runs it as pid 1 of the sandbox's pid namespace (``--as-pid-1``), so the code in the
kernel can neither signal it (signals sent from inside a namespace to its init are dropped unless
the init handles them, and this one handles none) nor trace it (it is not dumpable); when it
ends, every process of the sandbox ends with it. It ends when the kernel does.

Memory is what the sandbox's processes hold and what its in-memory filesystems hold: the pages of
``/tmp``, ``/dev/shm`` and the socket folder, and their inodes (an empty file still costs the
machine about a kilobyte). Memory it could not count is refused before it is made: the seccomp
filter (:mod:`.seccomp`) allows no memfd and no SysV IPC, and the sandbox's root and ``/dev`` are
read-only. It adds resident sizes first, which cost little and bound the rest from above, then,
when they are over, each process's proportional share (its resident size where it hides its
maps). It looks again as soon as memory growing at ``GROWTH`` bytes a second could reach the limit:
every ``WATCH_S`` near it, once a second far below it (an idle kernel's sandbox costs little CPU).
Over the limit, it ends the largest processes other than the kernel until the rest fits, and the
kernel itself when they are not enough.

CPU is the time of every process of the sandbox, added up: those alive, and those that ended (the
times a process's reaped children used are in its own count, and orphans end here). When the total
passes the limit, every process ends. It looks again before all the machine's cores, busy, could
use what is left.

The standard library only, run as ``python -I -S``::

    python -I -S sandbox_init.py UID ALIVE MEMORY_BYTES MAX_PROCS FILE_BYTES CPU_S MAX_FILES -- KERNEL...

UID is the uid (and gid) to take when started by root (``-``: keep the user namespace's). ALIVE is
the reading end of a pipe whose other end only the host holds: when it reads as closed (the host
ended, however it ended), so does the sandbox. A parent-death signal would not do: the host's
bubblewrap, without capabilities, cannot signal a process of another uid. Its exit status says
why the kernel ended: the kernel's own, or ``OVER_MEMORY`` or ``OVER_CPU`` when this ended it.
"""

from __future__ import annotations

import ctypes
import os
import resource
import select
import signal
import sys

WATCH_S, IDLE_S = 0.02, 1.0  # the most and the least often it looks
GROWTH = 4 << 30  # bytes a second memory may grow: a few cores writing to new pages
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")
INODE = 1280  # bytes of kernel memory an inode of tmpfs costs (inode, dentry and their slabs)
FOLDERS = ("/tmp", "/dev/shm", "/run/rlm/sockets")  # noqa: S108 - the sandbox's own tmpfs mounts
# Exit statuses that name why the sandbox ended its kernel (the host reads them as its reason).
OVER_MEMORY, OVER_CPU = 100, 101


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


def _held(path: str) -> int:
    """What an in-memory filesystem holds: its pages, and its inodes at what each costs."""
    try:
        s = os.statvfs(path)
    except OSError:
        return 0
    return (s.f_blocks - s.f_bfree) * s.f_frsize + max(s.f_files - s.f_ffree, 0) * INODE


def _cpu(pid: int) -> float:
    """CPU seconds of a process and of the children it reaped."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0  # gone: its time is now its parent's, or this process's
    return sum(int(v) for v in fields[11:15]) / TICK  # utime, stime, cutime, cstime


class Watch:
    """The limits, and when to look at them again."""

    def __init__(self, kernel: int, memory: int, cpu_s: float) -> None:
        self.kernel, self.memory, self.cpu_s = kernel, memory, cpu_s
        self.cores = len(os.sched_getaffinity(0)) or 1

    def check(self) -> tuple[float, int | None]:
        """Hold the sandbox to its limits: how long until it must look again, and the exit status
        when everything was ended."""
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit() and name != "1"]
        memory_wait = self._memory(pids)
        if memory_wait is None:
            return WATCH_S, OVER_MEMORY
        if self.cpu_s <= 0:
            return memory_wait, None
        done = os.times()
        used = done.children_user + done.children_system + sum(map(_cpu, pids))
        if used >= self.cpu_s:
            _end_all(pids)
            return WATCH_S, OVER_CPU
        return min(memory_wait, max((self.cpu_s - used) / self.cores / 2, WATCH_S)), None

    def _memory(self, pids: list[int]) -> float | None:
        """How long until memory must be looked at again; None when the kernel was ended."""
        files = sum(map(_held, FOLDERS))
        resident = files + sum(map(_resident, pids))
        if resident <= self.memory:  # resident sizes bound the shares from above
            return min(max((self.memory - resident) / GROWTH, WATCH_S), IDLE_S)
        sizes = {pid: _share(pid) for pid in pids}
        total = files + sum(sizes.values())
        for pid, size in sorted(sizes.items(), key=lambda item: item[1], reverse=True):
            if total <= self.memory:
                break
            if pid != self.kernel:
                _kill(pid)
                total -= size
        if total > self.memory:
            _end_all(pids)
            return None
        return WATCH_S


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _end_all(pids: list[int]) -> None:
    for pid in pids:
        _kill(pid)


def _confine(uid: str, procs: int, file_size: int, files: int) -> None:
    """The limits the kernel's own rlimits keep, then the sandbox's own uid (started by root), with
    no capability left, and no way to be traced."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
    # Counted per user (in the sandbox's own user namespace, or of its own uid): every process of the
    # sandbox, this one too.
    resource.setrlimit(resource.RLIMIT_NPROC, (procs, procs))
    if uid != "-":  # started by root: the sandbox's own uid, and no capability left
        os.setgroups([])
        os.setgid(int(uid))
        os.setuid(int(uid))
    _not_dumpable()


def _start(command: list[str], alive: int) -> tuple[int, int]:
    """Fork the kernel; the kernel's pid, and the reading end of a pipe that a signal (a child's
    end) makes readable, so the loop wakes for it as it does for the host's end."""
    woken, wake = os.pipe()
    os.set_blocking(woken, False)
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    kernel = os.fork()
    if kernel == 0:
        os.close(alive)
        os.execv(command[0], command)  # noqa: S606 - the kernel's command, given by the host
    return kernel, woken


def _reap(kernel: int) -> int | None:
    """Reap whatever has ended (the kernel, or an orphan of it): the exit status when the kernel
    has ended, else None."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return 1
        if pid == 0:
            return None
        if pid == kernel:
            return os.waitstatus_to_exitcode(status) & 0xFF


def main(argv: list[str]) -> int:
    if os.getpid() != 1:  # its watch ends processes: only ever the sandbox's own
        print("sandbox_init runs only as the first process of a sandbox", file=sys.stderr)
        return 2
    uid, alive, memory, procs, file_size = argv[0], int(argv[1]), int(argv[2]), int(argv[3]), int(argv[4])
    cpu_s, files = float(argv[5]), int(argv[6])
    command = argv[argv.index("--") + 1 :]
    _confine(uid, procs, file_size, files)
    kernel, woken = _start(command, alive)
    watch = Watch(kernel, memory, cpu_s)
    wait = WATCH_S
    while True:
        ready = select.select([alive, woken], [], [], wait)[0]
        if alive in ready:  # the host is gone: so is every process here
            return 0
        if woken in ready:
            os.read(woken, 4096)
        if (status := _reap(kernel)) is not None:
            return status
        wait, ended = watch.check()
        if ended is not None:
            return ended


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
