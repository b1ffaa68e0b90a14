"""The sandbox's seccomp filter (rlm_kernel/executors/seccomp.py), attacked from inside bubblewrap.

Each attack is a syscall an attacker in the kernel would make, in a child of its own, with arguments
the Linux kernel would act on (or reject for a reason of its own, read before any capability check):
so without the filter no attack fails with the filter's errno, and with it each does. Two sandboxes:
one in a user namespace, as an ordinary user's host makes it, and one without, as root's host makes
it (its first process takes a uid of its own; without the filter, its kernel can make a user
namespace with every capability). Then the data-science stack, run under the filter, still works.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from rlm_kernel.executors import sandbox, seccomp

pytestmark = pytest.mark.timeout(180)

BWRAP = shutil.which("bwrap")
OWN_UID = 1_000_000_007  # the uid root's sandbox takes, as sandbox_init takes one of its own
MODES = ("user-namespace", "root")

# The attacks: an expression run in a child of its own inside the sandbox (names from RUNNER); a
# result of -1 means failure with ctypes' errno. Without the filter, none fails with its errno.
CLONE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWTIME": 0x00000080,
}
ATTACKS = {
    "unshare(CLONE_NEWUSER)": "os.unshare(os.CLONE_NEWUSER) if hasattr(os, 'unshare') else libc.unshare(CLONE_NEWUSER)",
    "setns(own user namespace)": "libc.setns(os.open('/proc/self/ns/user', os.O_RDONLY), CLONE_NEWUSER)",
    "clone(CLONE_NEWUSER)": "forked(sc('clone', CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0))",
    # With CLONE_THREAD but not CLONE_SIGHAND, clone is invalid: the kernel says so before it makes
    # any namespace, so these fail with EINVAL without the filter, whose rule for each flag comes first.
    **{
        f"clone({name})": f"sc('clone', {flag} | CLONE_THREAD, 0, 0, 0, 0)"
        for name, flag in CLONE_FLAGS.items()
    },
    "clone3(CLONE_NEWUSER)": "forked(sc('clone3', clone_args(CLONE_NEWUSER), 64))",
    "mount(tmpfs)": "libc.mount(b'none', b'/nonexistent', b'tmpfs', 0, None)",
    "umount2": "libc.umount2(b'/nonexistent', 0)",
    "chroot": "libc.chroot(b'/nonexistent')",
    "open_tree": "sc('open_tree', AT_FDCWD, text('/tmp'), os.O_CLOEXEC)",
    "io_uring_setup": "sc('io_uring_setup', 8, zeros(120))",
    "io_uring_enter": "sc('io_uring_enter', -1, 0, 0, 0, 0, 0)",
    "io_uring_register": "sc('io_uring_register', -1, 0, 0, 0)",
    "keyctl(get session keyring)": "sc('keyctl', 0, -3, 1)",
    "add_key": "sc('add_key', text('user'), text('rlm'), text('x'), 1, -2)",
    "request_key": "sc('request_key', text('user'), text('rlm-none'), 0, 0)",
    "bpf(BPF_MAP_CREATE)": "sc('bpf', 0, 1, 72)",
    "perf_event_open(cpu clock)": "sc('perf_event_open', perf_attr(), 0, -1, -1, 0)",
    "userfaultfd(user mode)": "sc('userfaultfd', os.O_CLOEXEC | 1)",
    "ptrace(PTRACE_TRACEME)": "sc('ptrace', 0, 0, 0, 0)",
    "process_vm_readv(self)": "sc('process_vm_readv', os.getpid(), iovec(8), 1, iovec(8), 1, 0)",
    "process_vm_writev(self)": "sc('process_vm_writev', os.getpid(), iovec(8), 1, iovec(8), 1, 0)",
    "personality(ADDR_NO_RANDOMIZE)": "sc('personality', 0x0040000)",
    "ioctl(TIOCSTI)": "sc('ioctl', 0, termios.TIOCSTI, text('x'))",
    "ioctl(TIOCSTI, high bits set)": "sc('ioctl', 0, 1 << 32 | termios.TIOCSTI, text('x'))",
    "quotactl": "sc('quotactl', 99, 0, 0, 0)",
    "memfd_create": "os.memfd_create('rlm')",
    "memfd_secret": "sc('memfd_secret', 0)",
    "shmget": "libc.shmget(0, 1 << 20, IPC_CREAT | 0o600)",
    "msgget": "libc.msgget(0, IPC_CREAT | 0o600)",
    "semget": "libc.semget(0, 1, IPC_CREAT | 0o600)",
}
EXPECTED = {name: errno.ENOSYS if name.startswith("clone3") else errno.EPERM for name in ATTACKS}

RUNNER = r"""
import ctypes, errno, json, os, sys, termios
given = json.loads(sys.argv[1])
numbers = given["numbers"]
if given["uid"] is not None:  # root's sandbox: a uid of its own, as sandbox_init takes one
    os.setgroups([])
    os.setresgid(given["uid"], given["uid"], given["uid"])
    os.setresuid(given["uid"], given["uid"], given["uid"])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CLONE_NEWUSER, CLONE_THREAD, SIGCHLD, IPC_CREAT, AT_FDCWD = 0x10000000, 0x10000, 17, 0o1000, -100
kept = []

def sc(name, *args):
    return libc.syscall(ctypes.c_long(numbers[name]), *(ctypes.c_long(a) for a in args))

def zeros(size):
    kept.append(ctypes.create_string_buffer(size))
    return ctypes.addressof(kept[-1])

def text(value):
    kept.append(ctypes.create_string_buffer(value.encode()))
    return ctypes.addressof(kept[-1])

def iovec(size):
    kept.append((ctypes.c_size_t * 2)(zeros(size), size))
    return ctypes.addressof(kept[-1])

def clone_args(flags):  # struct clone_args, version 0: flags, pidfd, child_tid, parent_tid, exit_signal, ...
    kept.append((ctypes.c_uint64 * 8)(flags, 0, 0, 0, SIGCHLD, 0, 0, 0))
    return ctypes.addressof(kept[-1])

def perf_attr():  # PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, disabled, user space only
    kept.append((ctypes.c_uint32 * 32)(1, 128, 0, 0, 0, 0, 0, 0, 0, 0, 1 | 1 << 5 | 1 << 6))
    return ctypes.addressof(kept[-1])

def forked(pid):  # a clone that made a process: the new one ends at once
    if pid == 0:
        os._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
    return pid

def attempt(code):
    # In a child of its own: an attack that succeeds changes nothing for the next.
    pid = os.fork()
    if pid == 0:
        try:
            result = eval(code)
            os._exit(ctypes.get_errno() if result == -1 else 0)
        except OSError as exc:
            os._exit(exc.errno)
        except BaseException:
            os._exit(255)
    status = os.waitpid(pid, 0)[1]
    return os.waitstatus_to_exitcode(status)

found = {}
for name, code in given["attacks"].items():
    found[name] = attempt(code)
print(json.dumps(found))
"""


def numbers() -> dict[str, int]:
    """This architecture's syscall numbers, by name (pyseccomp knows them; ctypes does not)."""
    import pyseccomp

    names = {*seccomp.REFUSED, "clone", "clone3", "ioctl", "personality"}
    found = {name: pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name) for name in names}
    return {name: number for name, number in found.items() if number >= 0}


def bwrap_argv(mode: str, program_fd: int | None) -> list[str]:
    """A sandbox as rlm_kernel/executors/sandbox.py makes one, with the filter when ``program_fd``."""
    argv = [BWRAP or "bwrap"]
    if mode == "user-namespace":
        argv += ["--unshare-all", "--uid", "65534", "--gid", "65534"]
    else:  # root's: no user namespace; its first process takes a uid of its own (RUNNER does)
        argv += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    argv += ["--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
    for path in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--perms", "1777", "--tmpfs", "/tmp", "--perms", "1777", "--tmpfs", "/dev/shm"]
    # After the tmpfs, as the sandbox binds them: an environment may live under /tmp (CI's does).
    for path in sandbox.python_paths(sys.executable):
        if path != "/usr" and not path.startswith("/usr/"):
            argv += ["--ro-bind", path, path]
    argv += ["--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp"]
    argv += ["--setenv", "MPLBACKEND", "Agg", "--setenv", "LANG", "C.UTF-8", "--chdir", "/tmp"]
    if program_fd is not None:
        argv += ["--seccomp", str(program_fd)]
    return argv


def run_inside(script: str, argument: object, *, mode: str, filtered: bool) -> dict[str, object]:
    """Run ``script`` (which prints one JSON line) in a sandbox; its answer, decoded."""
    fd = seccomp.open_program() if filtered else None
    argv = [*bwrap_argv(mode, fd), "--", sys.executable, "-I", "-c", script, json.dumps(argument)]
    try:
        done = subprocess.run(
            argv,
            pass_fds=() if fd is None else (fd,),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=150,
        )
    finally:
        if fd is not None:
            os.close(fd)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def need_sandbox(mode: str) -> None:
    """Skip, saying why, where this sandbox or the filter cannot be had."""
    if BWRAP is None:
        pytest.skip("bubblewrap is not installed (apt install bubblewrap)")
    if (why := seccomp.available()) is not None:
        pytest.skip(why)
    if mode == "root" and os.geteuid() != 0:
        pytest.skip("root's sandbox (no user namespace) needs root")


def run_attacks(attacks: dict[str, str], mode: str, *, filtered: bool = True) -> dict[str, int]:
    """What each attack got in the sandbox: 0 when it succeeded, else its errno."""
    need_sandbox(mode)
    known = numbers()
    runnable = {name: code for name, code in attacks.items() if set(_named(code)) <= known.keys()}
    given = {"numbers": known, "attacks": runnable, "uid": OWN_UID if mode == "root" else None}
    return run_inside(RUNNER, given, mode=mode, filtered=filtered)  # type: ignore[return-value]


_found: dict[tuple[str, bool], dict[str, int]] = {}


def attacked(mode: str, *, filtered: bool = True) -> dict[str, int]:
    """The attacks' results, once for each sandbox."""
    if (mode, filtered) not in _found:
        _found[mode, filtered] = run_attacks(ATTACKS, mode, filtered=filtered)
    return _found[mode, filtered]


def _named(code: str) -> list[str]:
    """The syscalls an attack calls through ``sc('name', ...)``."""
    return [part.split("'", 1)[0] for part in code.split("sc('")[1:]]


def _errno(value: int) -> str:
    return "succeeded" if value == 0 else errno.errorcode.get(value, str(value))


def _sysctl(name: str) -> str:
    try:
        with open(f"/proc/sys/{name}") as f:
            return f.read().strip()
    except OSError:
        return ""


def host_refuses() -> set[str]:
    """The attacks this host's own settings refuse, filter or not: no proof of the filter here."""
    refused = set()
    if _sysctl("kernel/io_uring_disabled") not in ("", "0"):
        refused.add("io_uring_setup")
    if (
        _sysctl("user/max_user_namespaces") == "0"
        or _sysctl("kernel/apparmor_restrict_unprivileged_userns") == "1"
    ):
        refused |= {"unshare(CLONE_NEWUSER)", "clone(CLONE_NEWUSER)", "clone3(CLONE_NEWUSER)"}
    return refused


# -- the attacks -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_the_filter_refuses(attack: str, mode: str) -> None:
    found = attacked(mode)
    if attack not in found:
        pytest.skip(f"{attack}: not a syscall of this architecture")
    assert _errno(found[attack]) == _errno(EXPECTED[attack])


@pytest.mark.parametrize("mode", MODES)
def test_without_the_filter_no_attack_fails_as_the_filter_makes_it(mode: str) -> None:
    """The control: an attack that failed with the filter's errno anyway would prove nothing."""
    found = attacked(mode, filtered=False)
    alike = {
        name: _errno(value)
        for name, value in found.items()
        if value == EXPECTED[name] and name not in host_refuses()
    }
    assert not alike, f"these attacks fail as they would under the filter, without it: {alike}"


@pytest.mark.parametrize("mode", MODES)
def test_every_refused_syscall_is_refused(mode: str) -> None:
    """Each syscall of the filter's lists, called with zeros, fails with EPERM."""
    found = run_attacks({name: f"sc('{name}', 0, 0, 0, 0, 0, 0)" for name in seccomp.REFUSED}, mode)
    assert "unshare" in found and "memfd_create" in found
    wrong = {name: _errno(value) for name, value in found.items() if value != errno.EPERM}
    assert not wrong, wrong


# -- the stack, under the filter ------------------------------------------------------------------------------
STACK = r"""
import json, sys, traceback
found = {}

def check(name):
    def run(test):
        try:
            test()
            found[name] = "ok"
        except BaseException:
            found[name] = traceback.format_exc(limit=3)[-1500:]
    return run

@check("threads")
def _():
    import threading
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as pool:
        assert sum(pool.map(lambda x: x * x, range(100))) == 328350
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()

@check("os.fork")
def _():
    import os
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7

@check("subprocess")
def _():
    import subprocess
    subprocess.run(["true"], check=True)
    assert subprocess.run(["echo", "hi"], capture_output=True, text=True, check=True).stdout == "hi\n"

@check("multiprocessing")
def _():
    import multiprocessing
    with multiprocessing.Pool(2) as pool:
        assert pool.map(abs, [-1, -2, 3]) == [1, 2, 3]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        assert pool.map(abs, [-4]) == [4]
    value = multiprocessing.Value("i", 3)
    assert value.value == 3

@check("tempfile")
def _():
    import tempfile
    with tempfile.TemporaryFile() as f:
        f.write(b"x" * 10000)
        f.seek(0)
        assert len(f.read()) == 10000
    with tempfile.NamedTemporaryFile() as f, tempfile.TemporaryDirectory() as d:
        assert f.name and d

@check("asyncio")
def _():
    import asyncio

    async def main():
        await asyncio.sleep(0.01)
        proc = await asyncio.create_subprocess_exec("true")
        assert await proc.wait() == 0
        return await asyncio.get_running_loop().run_in_executor(None, sum, [1, 2])

    assert asyncio.run(main()) == 3

@check("ctypes callback")
def _():
    import ctypes
    libc = ctypes.CDLL(None)
    compare = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
    values = (ctypes.c_int * 5)(5, 1, 4, 2, 3)
    libc.qsort(values, 5, ctypes.sizeof(ctypes.c_int), compare(lambda a, b: a[0] - b[0]))
    assert list(values) == [1, 2, 3, 4, 5]

@check("personality query")
def _():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.personality(0xFFFFFFFF) != -1, ctypes.get_errno()
    assert libc.personality(0) != -1, ctypes.get_errno()

@check("numpy")
def _():
    import numpy as np
    a = np.random.default_rng(0).random((300, 300))
    assert np.allclose(a @ np.linalg.inv(a), np.eye(300), atol=1e-6)

@check("pandas")
def _():
    import pandas as pd
    frame = pd.DataFrame({"k": list("abab"), "v": [1, 2, 3, 4]})
    assert frame.groupby("k")["v"].sum().to_dict() == {"a": 4, "b": 6}

@check("matplotlib")
def _():
    import os
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [3, 1, 2])
    ax.set_title("seccomp")
    fig.savefig("/tmp/plot.png")
    assert os.path.getsize("/tmp/plot.png") > 1000

@check("a kernel runs a cell")
def _():
    from jupyter_client.manager import KernelManager
    manager = KernelManager(kernel_name="python3", transport="ipc", ip="/tmp/kernel")
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        printed = []
        code = "import threading, numpy; print(numpy.arange(4).sum(), threading.active_count() > 1)"
        hook = lambda msg: printed.append(msg["content"].get("text", ""))
        reply = client.execute_interactive(code, timeout=60, output_hook=hook)
        assert reply["content"]["status"] == "ok" and "".join(printed) == "6 True\n", (reply, printed)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)

@check("zmq and ipykernel")
def _():
    import zmq
    from ipykernel.ipkernel import IPythonKernel  # noqa: F401
    context = zmq.Context()
    pull, push = context.socket(zmq.PULL), context.socket(zmq.PUSH)
    pull.bind("ipc:///tmp/rlm-check")
    push.connect("ipc:///tmp/rlm-check")
    push.send(b"hi")
    assert pull.poll(5000) and pull.recv() == b"hi"
    context.destroy(linger=0)

print(json.dumps(found))
"""
NEEDS = {
    "numpy": "numpy",
    "pandas": "pandas",
    "matplotlib": "matplotlib",
    "zmq and ipykernel": "ipykernel",
    "a kernel runs a cell": "numpy",
}
_stack: dict[str, object] = {}


@pytest.mark.parametrize("check", re.findall(r'@check\("([^"]+)"\)', STACK))
def test_the_stack_works_under_the_filter(check: str) -> None:
    need_sandbox("user-namespace")
    if check in NEEDS and importlib.util.find_spec(NEEDS[check]) is None:
        pytest.skip(f"{NEEDS[check]} is not installed here")
    if not _stack:
        _stack.update(run_inside(STACK, None, mode="user-namespace", filtered=True))
    assert _stack[check] == "ok", _stack[check]


# -- the program ---------------------------------------------------------------------------------------------
def test_the_program_is_the_same_each_time_and_not_empty() -> None:
    if (why := seccomp.available()) is not None:
        pytest.skip(why)
    first = seccomp.program()
    seccomp.program.cache_clear()
    assert seccomp.program() == first
    assert len(first) > 8 * len(seccomp.REFUSED) and len(first) % 8 == 0  # sock_filter instructions
    fd = seccomp.open_program()
    try:
        assert os.read(fd, len(first) + 1) == first
    finally:
        os.close(fd)
    assert seccomp.program() is seccomp.program()  # cached
