"""The seccomp filter of a kernel's sandbox: the Linux kernel's surface that data science does not need.

bubblewrap loads it (``bwrap --seccomp FD``) just before it starts the sandbox's first process, so it
holds every process of the sandbox, and none can lift it. The default is to allow; what it refuses
fails with ``EPERM`` before the kernel reads the call's arguments, as it would without a capability:

- namespaces, whatever a process's uid: ``unshare``, ``setns``, and ``clone`` with a ``CLONE_NEW*``
  flag. ``clone3`` reads its flags from memory, which a filter cannot see, so it answers ``ENOSYS``
  and the C library falls back to ``clone`` (as Flatpak and Docker do). A sandbox started by root
  has no user namespace of its own, and without this its kernel could make one with every
  capability in it;
- mounts and roots, and the machine's own calls (modules, kexec, swap, reboot, the kernel log);
- second interfaces to the kernel that attacks favour: io_uring, BPF, perf events, userfaultfd,
  the key rings, ptrace, another process's memory, ``TIOCSTI``, and ``personality`` other than
  Linux's own or a query;
- memory the sandbox cannot count (:mod:`.sandbox_init`): memfd and SysV IPC. The stack uses files
  instead (libffi, which may try a memfd for its closures, falls back to one).

Syscalls the running architecture does not have are left out; other architectures' calls (a 32-bit
call on x86_64) are refused outright, since none of their rules were written.

bubblewrap reads the compiled program from a file descriptor::

    fd = seccomp.open_program()
    try:
        subprocess.Popen([bwrap, "--seccomp", str(fd), ...], pass_fds=(fd,))
    finally:
        os.close(fd)
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import sys
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyseccomp

__all__ = ["available", "program", "open_program"]

# Each tuple: syscalls refused with EPERM, and why.
# Namespaces: a new one would give the sandbox a user namespace with every capability in it.
NAMESPACES = ("unshare", "setns")
# Mounts and roots: the sandbox's view of the filesystem is bubblewrap's to make, not its own.
MOUNTS = (
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
)
# io_uring: a second syscall interface, out of a filter's sight and rich in kernel bugs.
IO_URING = ("io_uring_setup", "io_uring_enter", "io_uring_register")
# Key rings: shared with the host's user and not namespaced; nothing in a notebook needs them.
KEYS = ("keyctl", "add_key", "request_key")
# Kernel programs, tracing and another process's memory: the favourite ways into the kernel or out.
TRACING = ("bpf", "perf_event_open", "userfaultfd", "ptrace", "process_vm_readv", "process_vm_writev")
# The machine's own (modules, kexec, swap, reboot, its log, accounting, quotas): none a sandbox's.
MACHINE = (
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
    "acct",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
)
# Memory the sandbox cannot count: anonymous files and SysV IPC are in no folder it measures.
UNCOUNTED = ("memfd_create", "memfd_secret", "shmget", "msgget", "semget")
REFUSED = (*NAMESPACES, *MOUNTS, *IO_URING, *KEYS, *TRACING, *MACHINE, *UNCOUNTED)

# clone's flags that make a namespace; each is refused on its own (one masked comparison each).
CLONE_NEW = (
    0x10000000,  # CLONE_NEWUSER
    0x00020000,  # CLONE_NEWNS
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x02000000,  # CLONE_NEWCGROUP
    0x00000080,  # CLONE_NEWTIME (clone3's and unshare's only; never in a valid exit signal)
)
# Terminal ioctls (termios's names) that type into, or drive, a terminal shared with the host.
TTY_IOCTLS = ("TIOCSTI", "TIOCLINUX")
# personality: Linux's own (0) and the query (0xffffffff) are allowed; others turn off ASLR and more.
PERSONALITY_BITS = 32
LOW32 = 0xFFFFFFFF  # ioctl's request and personality's value are 32 bits: the kernel drops the rest


@functools.cache
def program() -> bytes:
    """The BPF program (cached): built once, the same bytes for every sandbox."""
    with tempfile.TemporaryFile() as out:
        _rules().export_bpf(out)
        out.seek(0)
        return out.read()


def _rules() -> pyseccomp.SyscallFilter:
    """The filter, as libseccomp holds it (``export_pfc`` shows it readably)."""
    import termios

    import pyseccomp as seccomp

    native = seccomp.system_arch()
    refuse = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    # Another architecture's calls (int 0x80 on x86_64) would pass rules written for this one's
    # numbers; they end the process (a kernel before 4.14 ends the thread, libseccomp's default).
    with contextlib.suppress(OSError):
        rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)

    def add(action: int, name: str, *args: seccomp.Arg) -> None:
        number = seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)
        if number >= 0:  # negative: not a syscall of this architecture
            rules.add_rule(action, number, *args)

    for name in REFUSED:
        add(refuse, name)
    add(seccomp.ERRNO(errno.ENOSYS), "clone3")
    flags = 1 if native in (seccomp.Arch.S390, seccomp.Arch.S390X) else 0  # s390 swaps clone's first two
    for flag in CLONE_NEW:
        add(refuse, "clone", seccomp.Arg(flags, seccomp.MASKED_EQ, flag, flag))
    for request in (getattr(termios, name) for name in TTY_IOCTLS if hasattr(termios, name)):
        add(refuse, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, LOW32, request))
    # A 32-bit value is neither 0 nor all ones exactly when, going round its bits, some set bit is
    # followed by a clear one: one masked comparison for each such pair.
    for bit in range(PERSONALITY_BITS):
        pair = 1 << bit | 1 << (bit + 1) % PERSONALITY_BITS
        add(refuse, "personality", seccomp.Arg(0, seccomp.MASKED_EQ, pair, 1 << bit))
    return rules


@functools.cache
def available() -> str | None:
    """None when a filter can be built here, else why not, in one line."""
    if sys.platform != "linux":
        return "a seccomp filter needs Linux"
    try:
        with open("/proc/self/status") as status:
            if not any(line.startswith("Seccomp:") for line in status):
                return "no seccomp filter: this Linux kernel was built without seccomp (CONFIG_SECCOMP)"
    except OSError:
        pass  # no /proc: let bubblewrap find out
    try:
        program()
    except ImportError:
        return "no seccomp filter: pyseccomp is not installed (pip install pyseccomp)"
    except RuntimeError as exc:  # pyseccomp's word for a missing libseccomp
        return f"no seccomp filter: {exc} (apt install libseccomp2, or dnf install libseccomp)"
    except OSError as exc:
        return f"no seccomp filter: libseccomp could not build it ({exc})"
    return None


def open_program() -> int:
    """A readable fd holding :func:`program`, at its start, for ``bwrap --seccomp FD``.

    Close-on-exec: ``subprocess``'s ``pass_fds`` hands it to bubblewrap alone; the caller closes it
    once bubblewrap has started (bubblewrap reads it to its end before it starts the sandbox)."""
    data = program()
    try:
        fd = os.memfd_create("rlm-seccomp", os.MFD_CLOEXEC)
    except (AttributeError, OSError):  # no memfd (an old kernel, or inside a filter like this one)
        fd, path = tempfile.mkstemp(prefix="rlm-seccomp-")
        os.unlink(path)
    with contextlib.ExitStack() as undo:  # a write that fails closes it
        undo.callback(os.close, fd)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
        undo.pop_all()
    return fd
