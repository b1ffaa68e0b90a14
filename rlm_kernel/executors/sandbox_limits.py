"""What a sandbox may hold, and how much of it its processes have used.

The limits are kept inside the sandbox by its first process (:mod:`.sandbox_init`); the host reads
the CPU its processes used (:func:`cpu_seconds`) to tell a step's own time from its waits on the
host, and the first process's exit status to say why it ended the kernel (:data:`ENDED`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["Limits", "HELD_BY", "ENDED", "cpu_seconds"]

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


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


# Why a sandbox's first process ended its kernel, by its exit status (sandbox_init's OVER_*).
ENDED = {
    100: "the kernel was ended by its sandbox: over its memory limit",
    101: "the kernel was ended by its sandbox: over its CPU limit",
}


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
