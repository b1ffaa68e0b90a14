"""Code that aims at each limit of the sandbox: memory it never maps (memfds, SysV shared memory,
inodes), files with no name on the host's disk, CPU in children that fork on, a step whose other
thread waits on a sub-call, a tree too deep to remove, and links where the host connects."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from redteam import attacker, by_turn, outputs, processes_with, run_as_ordinary_user, step
from scripted_server import Reply, Request, ScriptedServer

from rlm_kernel import RLM
from rlm_kernel.executors import sandbox

pytestmark = pytest.mark.timeout(240)

INIT = "/run/rlm/init.py"  # in the command line of every sandbox's first process
# In the kernel's code: the folder of its sockets, wherever its host put it.
SOCKETS = 'json.load(open("/run/rlm/kernel.json"))["ip"].rsplit("/", 1)[0]'


def sandboxes() -> list[int]:
    """The pids of the sandboxes' first processes on this machine."""
    return [pid for pid in processes_with(INIT) if Path(f"/proc/{pid}/status").exists()]


class Peak:
    """The most of ``measure()`` over all sandboxes while the block runs, looked at every 10 ms."""

    def __init__(self, measure: Any) -> None:
        self.measure, self.most = measure, 0.0
        self._done = threading.Event()

    def _watch(self) -> None:
        while not self._done.is_set():
            for pid in sandboxes():
                try:
                    self.most = max(self.most, self.measure(pid))
                except OSError:
                    pass
            self._done.wait(0.01)

    def __enter__(self) -> Peak:
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


def in_memory(pid: int) -> float:
    """Bytes a sandbox holds: its processes' resident memory and its in-memory folders."""
    total = 0
    for folder in ("tmp", "dev/shm", "run/rlm/sockets"):
        s = os.statvfs(f"/proc/{pid}/root/{folder}")
        total += (s.f_blocks - s.f_bfree) * s.f_frsize + (s.f_files - s.f_ffree) * 1280
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            total += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.scandir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(task.path, "children").read_text().split()]
        except OSError:
            continue
    return total


def cpu_of(pid: int) -> float:
    """CPU seconds of a sandbox: every process in it, and the children they reaped."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_bytes().rsplit(b")", 1)[1].split()
            total += sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")
            for task in os.scandir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(task.path, "children").read_text().split()]
        except OSError:
            continue
    return total


# -- memory of every kind ------------------------------------------------------------------------------
MEMFD = """
import os
fds = []
try:
    for _ in range(3):
        fd = os.memfd_create("x")
        os.ftruncate(fd, 512 << 20)
        for off in range(0, 512 << 20, 1 << 20):
            os.pwrite(fd, b"x" * (1 << 20), off)
        fds.append(fd)
    print("held", len(fds))
except OSError as exc:
    print("refused", exc.errno)
"""

SYSV = """
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shm = libc.shmget(0, 512 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
if shm < 0:
    print("refused", ctypes.get_errno())
else:
    address = libc.shmat(shm, None, 0)
    ctypes.memset(address, 1, 512 << 20)
    libc.shmdt(ctypes.c_void_p(address))  # unmapped: the segment holds its pages still
    print("held")
"""

INODES = """
import os
os.makedirs("/tmp/many", exist_ok=True)
for i in range(600_000):
    open(f"/tmp/many/{i}", "w").close()
print("made", len(os.listdir("/tmp/many")))
"""

READ_ONLY = """
import errno
refused = []
for path in ("/filler", "/dev/filler", "/run/filler", "/run/rlm/filler", "/etc/filler"):
    try:
        open(path, "w").close()
    except OSError as exc:
        refused.append(exc.errno in (errno.EROFS, errno.EACCES, errno.ENOENT))
print(refused)
"""


@pytest.mark.parametrize("kind", ["memfd", "sysv"])
def test_memory_the_sandbox_cannot_count_cannot_be_made(server: ScriptedServer, kind: str) -> None:
    """memfds and SysV shared memory, written and never mapped, hold pages no process shows."""
    code = {"memfd": MEMFD, "sysv": SYSV}[kind]
    with Peak(in_memory) as peak:
        result = attacker(server, code, executor_kwargs={"memory_mb": 256}).completion("doc", "q")
    assert outputs(result)[0] == "refused 1\n"  # EPERM, from the seccomp filter
    assert peak.most < 256 << 20


def test_empty_files_count_as_the_memory_they_take(server: ScriptedServer) -> None:
    """600,000 empty files in the sandbox's /tmp cost the machine about 750 MB of kernel memory."""
    with Peak(in_memory) as peak:
        result = attacker(server, INODES, executor_kwargs={"memory_mb": 256}).completion("doc", "q")
    first = outputs(result)[0]
    assert not first.startswith("made") and "over its memory limit" in first
    assert peak.most < (256 + 32) << 20  # what one look of the watch can miss


def test_the_root_and_dev_of_the_sandbox_are_read_only(server: ScriptedServer) -> None:
    """bubblewrap's root and /dev are in-memory folders nothing counts: they take no file."""
    result = attacker(server, READ_ONLY).completion("doc", "q")
    assert outputs(result) == ["[True, True, True, True, True]\n"]
    # With no setting, every limit holds, and the run says which and what holds it.
    limits = result.trajectory[0].settings["sandbox"]["limits"]
    assert limits["memory_mb"] == 4096 and limits["cpu_s"] == 3600 and limits["max_files"] == 1024
    assert "first process" in limits["held_by"] and "seccomp" in limits["held_by"]


# -- the host's disk -------------------------------------------------------------------------------------
NO_NAME = (
    """
import json, os
held = []
for top in ("""
    + SOCKETS
    + """, "/tmp", "/dev/shm"):
    for i in range(4):  # 4 GiB a folder, each file within file_mb
        try:
            if i % 2:
                fd = os.open(top, os.O_TMPFILE | os.O_RDWR, 0o600)
            else:
                path = os.path.join(top, "gone")
                fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
                os.unlink(path)
            os.posix_fallocate(fd, 0, 1 << 30)
            held.append(fd)
        except OSError:
            pass
print(len(held), llm_query("measure the host's disk now"))
"""
)


def test_a_file_with_no_name_takes_none_of_the_hosts_disk(server: ScriptedServer) -> None:
    """O_TMPFILE and unlinked files, with 4 GiB reserved each: while the kernel holds them, the
    host's disk has lost nothing."""
    folders = {tempfile.gettempdir(), "/dev/shm", str(Path.home())}
    before = {f: shutil.disk_usage(f).free for f in folders}
    lost: dict[str, int] = {}

    def measure(request: Request) -> Reply:
        lost.update({f: before[f] - shutil.disk_usage(f).free for f in folders})
        return Reply(text="measured")

    rlm = attacker(server, NO_NAME, executor_kwargs={"memory_mb": 256, "file_mb": 1024})
    inner = server.responder
    server.responder = lambda request: inner(request) if request.is_root else measure(request)
    result = rlm.completion("doc", "q")
    assert outputs(result)[0] == "0 measured\n"
    assert lost and all(n < 64 << 20 for n in lost.values()), lost


# -- CPU ----------------------------------------------------------------------------------------------------
FORK_ON = """
import os, time
def spin():
    while True:
        if os.fork():
            os._exit(0)  # the parent goes; its child spins on, with its own per-process limit
        begun = time.process_time()
        while time.process_time() - begun < 0.5:
            pass
for _ in range(2):
    if os.fork() == 0:
        spin()
time.sleep(60)
print("slept")
"""


def test_cpu_s_holds_every_process_of_the_sandbox_together(server: ScriptedServer) -> None:
    with Peak(cpu_of) as peak:
        result = attacker(server, FORK_ON, executor_kwargs={"cpu_s": 5}).completion("doc", "q")
    first = outputs(result)[0]
    assert "slept" not in first and "over its CPU limit" in first
    assert peak.most <= 5 + 1, peak.most


THREAD_WAITS = """
import threading, time
threading.Thread(target=llm_query, args=("take your time",), daemon=True).start()
begun = time.monotonic()
while time.monotonic() - begun < 40:
    pass
print("computed")
"""


def test_a_step_computing_past_step_timeout_ends_whatever_its_other_threads_wait_on(
    server: ScriptedServer,
) -> None:
    slow = by_turn(step(THREAD_WAITS), "FINAL(done)")
    server.responder = lambda request: slow(request) if request.is_root else Reply(text="late", delay=60)
    rlm = RLM(
        "openai",
        {
            "model_name": "gpt-4o-mini",
            "base_url": server.openai_base_url,
            "api_key": "sk-x",
            "max_retries": 0,
        },
        executor="kernel",
        log_dir=False,
        executor_kwargs={"step_timeout": 5},
    )
    begun = time.monotonic()
    result = rlm.completion("doc", "q")
    took = time.monotonic() - begun
    first = outputs(result)[0]
    assert "computed" not in first
    assert took < 25, took  # the step's 5 s of its own work, its grace and a new kernel


# -- what the host touches --------------------------------------------------------------------------------
LINKS = (
    """
import json, os, socket, time
folder = """
    + SOCKETS
    + """
for name in os.listdir(folder):
    os.unlink(os.path.join(folder, name))
    os.symlink({canary!r}, os.path.join(folder, name))
cut = 0
for fd in map(int, os.listdir("/proc/self/fd")):
    try:
        s = socket.socket(fileno=os.dup(fd))
    except OSError:
        continue
    try:  # a connection the host made to one of its sockets (not the socket itself)
        if s.family == socket.AF_UNIX and not s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            if str(s.getsockname()).startswith(folder):
                s.shutdown(socket.SHUT_RDWR)
                cut += 1
    except OSError:
        pass
    s.detach()
print("cut", cut)
time.sleep(3)  # while the host reconnects
"""
)


def test_the_host_never_connects_through_a_name_the_kernel_made(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """The kernel replaces its sockets by links to a socket of the host's and cuts its connections:
    the host reconnects, and never reaches the other socket."""
    canary = tmp_path / "canary.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(canary))
    listener.listen(64)
    listener.settimeout(0.05)
    os.chmod(tmp_path, 0o755)
    reached = []
    done = threading.Event()

    def count() -> None:
        while not done.is_set():
            try:
                reached.append(listener.accept()[0])
            except OSError:
                pass

    counter = threading.Thread(target=count, daemon=True)
    counter.start()
    try:
        code = LINKS.format(canary=str(canary))
        result = attacker(server, code, "print('next')", executor_kwargs={"step_timeout": 10}).completion(
            "doc", "q"
        )
    finally:
        done.set()
        counter.join()
        listener.close()
    assert reached == []
    assert outputs(result)[-1] == "next\n"


# -- what a killed host leaves behind ---------------------------------------------------------------------
def dead_pid() -> int:
    """A pid no process has."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def deep_tree(top: Path, depth: int) -> None:
    """A tree ``depth`` folders deep, made a level at a time (no path is ever long)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            os.close(os.open("f", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
            inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)


def test_a_tree_too_deep_for_the_stack_is_swept_and_stops_no_later_host(tmp_path: Path) -> None:
    left = tmp_path / f"{sandbox.PREFIX}{dead_pid()}-abc"
    left.mkdir()
    deep_tree(left, 5000)
    os.symlink("/etc", left / "link")  # never followed
    sandbox.sweep(str(tmp_path))
    assert not left.exists()
    assert Path("/etc/passwd").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a folder to a sandbox's own uid")
def test_as_root_the_folders_given_to_a_sandboxs_uid_are_swept_too(tmp_path: Path) -> None:
    left = tmp_path / f"{sandbox.PREFIX}{dead_pid()}-abc"
    left.mkdir(mode=0o700)
    (left / "context").write_text("a context")
    uid = sandbox.OWN_UIDS[0] + 7
    for path in (left, left / "context"):
        os.chown(path, uid, uid)
    other = tmp_path / f"{sandbox.PREFIX}{dead_pid()}-def"  # another user's: left alone
    other.mkdir()
    os.chown(other, 1234, 1234)
    sandbox.sweep(str(tmp_path))
    assert not left.exists() and other.exists()


FILL_AND_TRAP = (
    """
import json, os
fd = os.open("""
    + SOCKETS
    + """, os.O_RDONLY | os.O_DIRECTORY)
made = 0
try:
    for _ in range(3000):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
        made += 1
except OSError:
    pass
print(made > 0)
"""
)

NEXT_HOST = """
import json, time
from rlm_kernel.executors.kernel import KernelExecutor
begun = time.monotonic()
executor = KernelExecutor()
executor.bind("doc", None, None)
print(json.dumps({"started_s": time.monotonic() - begun, "out": executor.execute("print(1)", step=1).result.stdout}))
executor.close()
"""


def test_a_host_killed_after_an_attack_leaves_nothing_that_stops_the_next() -> None:
    """A host is killed outright while its kernel's folders hold a tree too deep for the stack; the
    next host starts its first kernel as usual."""
    host = subprocess.Popen(
        [sys.executable, "-c", TRAPPED_HOST.format(code=FILL_AND_TRAP)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert host.stdout is not None and host.stdout.readline() == "True\n"
    finally:
        host.kill()
        host.wait()
    done = subprocess.run([sys.executable, "-c", NEXT_HOST], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["out"] == "1\n" and report["started_s"] < 30


TRAPPED_HOST = """
import time
from rlm_kernel.executors.kernel import KernelExecutor
executor = KernelExecutor()
executor.bind("doc", None, None)
print(executor.execute({code!r}, step=1).result.stdout, end="", flush=True)
time.sleep(600)
"""


# -- a gateway's stdio -----------------------------------------------------------------------------------
STDIO = """
import os, select
told = []
for fd in map(int, os.listdir("/proc/self/fd")):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        continue
    if target.startswith(("socket:", "anon_inode:")):
        continue
    try:
        os.write(fd, b"\\x1b[2J[I 2026-01-01 KernelGatewayApp] FORGED admin logged in\\n")
        told.append(target)
    except OSError:
        pass
    try:
        os.ftruncate(fd, 0)
    except OSError:
        pass
    try:
        if select.select([fd], [], [], 0)[0]:
            told.append(os.pread(fd, 100, 0) if target.startswith("/") else os.read(fd, 100))
    except OSError:
        pass
print(told)
"""


def test_a_gateway_kernel_has_none_of_the_gateways_stdio(server: ScriptedServer, tmp_path: Path) -> None:
    """A kernel writes to and truncates every file it inherited, and reads every one that has input:
    the gateway's log keeps every line it had and gets none of the kernel's."""
    from gateway_server import KernelGateway

    log, typed = tmp_path / "gateway.log", tmp_path / "typed"
    log.write_text("the gateway's first line\n")
    typed.write_text("the admin's password\n")
    with KernelGateway(log=log, stdin=typed) as gateway:
        settings = {"url": gateway.url, "auth_token": gateway.token}
        rlm = attacker(server, STDIO, executor="gateway", executor_kwargs=settings)
        result = rlm.completion("doc", "q")
    told = outputs(result)[0]
    assert "password" not in told and "/dev/pts" not in told and "gateway.log" not in told, told
    text = log.read_text()
    assert text.startswith("the gateway's first line\n") and "FORGED" not in text


# -- the same, with the host an ordinary user ------------------------------------------------------------
USER_HOST = """
import json, sys
sys.path[:0] = {paths!r}
from rlm_kernel import RLM
import test_limits_aimed_at as t

def run(name, **limits):
    rlm = RLM("openai", {{"model_name": "gpt-4o-mini", "base_url": {url!r}, "api_key": "sk-x", "max_retries": 0}},
              log_dir=False, executor="kernel", executor_kwargs=limits)
    with t.Peak(t.in_memory) as memory, t.Peak(t.cpu_of) as cpu:
        result = rlm.completion("doc", name)
    return {{"out": t.outputs(result)[0], "memory": memory.most, "cpu": cpu.most}}

print(json.dumps({{
    "memfd": run("MEMFD", memory_mb=256),
    "sysv": run("SYSV", memory_mb=256),
    "inodes": run("INODES", memory_mb=256),
    "read_only": run("READ_ONLY"),
    "no_name": run("NO_NAME", memory_mb=256, file_mb=1024),
    "fork_on": run("FORK_ON", cpu_s=5),
    "links": run("LINKS", step_timeout=10),
}}))
"""


def test_every_limit_holds_with_the_host_an_ordinary_user(server: ScriptedServer, tmp_path: Path) -> None:
    """The attacks above, with the host running as uid 65534: its sandbox is a user namespace of
    that user's, whose root and /dev are the user's own to write, were they not read-only."""
    canary = tmp_path / "canary.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(canary))
    os.chmod(canary, 0o777)
    listener.listen(64)
    listener.setblocking(False)
    attacks = {
        "MEMFD": MEMFD,
        "SYSV": SYSV,
        "INODES": INODES,
        "READ_ONLY": READ_ONLY,
        "NO_NAME": NO_NAME,
        "FORK_ON": FORK_ON,
        "LINKS": LINKS.format(canary=str(canary)),
    }
    folders = {tempfile.gettempdir(), "/dev/shm"}
    before = {f: shutil.disk_usage(f).free for f in folders}
    lost: dict[str, int] = {}

    def respond(request: Request) -> Reply:
        if not request.is_root:
            lost.update({f: before[f] - shutil.disk_usage(f).free for f in folders})
            return Reply(text="measured")
        name = next(n for n in attacks if n in request.text)
        answered = any(m["role"] == "assistant" for m in request.messages)
        return Reply(text="FINAL(done)" if answered else step(attacks[name]))

    server.responder = respond
    here = str(Path(__file__).parent)
    script = USER_HOST.format(paths=[str(Path(here).parent), here], url=server.openai_base_url)
    try:
        report = run_as_ordinary_user(script, tmp_path, {}, timeout=220)
        try:
            reached = listener.accept()
        except BlockingIOError:
            reached = None
    finally:
        listener.close()
    assert report["memfd"]["out"] == report["sysv"]["out"] == "refused 1\n"
    assert max(report[k]["memory"] for k in ("memfd", "sysv")) < 256 << 20
    assert "over its memory limit" in report["inodes"]["out"]
    assert report["inodes"]["memory"] < (256 + 32) << 20
    assert report["read_only"]["out"] == "[True, True, True, True, True]\n"
    assert report["no_name"]["out"] == "0 measured\n" and all(n < 64 << 20 for n in lost.values()), lost
    assert "over its CPU limit" in report["fork_on"]["out"] and report["fork_on"]["cpu"] <= 5 + 1
    assert report["links"]["out"].startswith("cut") or "died" in report["links"]["out"]
    assert reached is None


STACK = """
import matplotlib.pyplot as plt, numpy as np, pandas as pd
frame = pd.DataFrame({"k": list("abab"), "v": np.arange(4.0)})
plt.plot(frame["v"]); plt.savefig("/tmp/plot.png")
import multiprocessing, subprocess
with multiprocessing.Pool(2) as pool:
    squares = pool.map(abs, [-1, -2])
print(frame.groupby("k")["v"].sum().to_dict(), squares, subprocess.run(["true"]).returncode)
"""


def test_the_data_science_stack_works_in_the_sandbox(server: ScriptedServer) -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    result = attacker(server, STACK).completion("doc", "q")
    assert outputs(result)[0].startswith("{'a': 2.0, 'b': 4.0} [1, 2] 0\n")  # a font warning may follow


# -- the same, through a gateway -----------------------------------------------------------------------
def test_every_limit_holds_through_a_gateway(server: ScriptedServer, tmp_path: Path) -> None:
    """The attacks above, on the kernels of a Kernel Gateway set up as docs/executors.md says, the
    limits given by the kernelspec's options."""
    from gateway_server import KernelGateway

    prefix = tmp_path / "prefix"
    install = [sys.executable, "-m", "rlm_kernel.install", "--sandbox", "--prefix", str(prefix)]
    subprocess.run(install, check=True, capture_output=True)
    (spec,) = prefix.glob("share/jupyter/kernels/rlm-sandbox/kernel.json")
    kernel = json.loads(spec.read_text())
    kernel["argv"] += ["--memory-mb", "256", "--cpu-s", "5"]
    spec.write_text(json.dumps(kernel))
    canary = tmp_path / "canary.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(canary))
    listener.listen(64)
    listener.setblocking(False)
    attacks = {"MEMFD": MEMFD, "SYSV": SYSV, "INODES": INODES, "READ_ONLY": READ_ONLY, "FORK_ON": FORK_ON}
    attacks["LINKS"] = LINKS.format(canary=str(canary))
    report: dict[str, tuple[str, float, float]] = {}
    with KernelGateway(env={"JUPYTER_PATH": str(prefix / "share" / "jupyter")}) as gateway:
        settings = {"url": gateway.url, "auth_token": gateway.token, "step_timeout": 30}
        for name, code in attacks.items():
            rlm = attacker(server, code, executor="gateway", executor_kwargs=settings)
            with Peak(in_memory) as memory, Peak(cpu_of) as cpu:
                result = rlm.completion("doc", name)
            report[name] = (outputs(result)[0], memory.most, cpu.most)
    try:
        reached = listener.accept()
    except BlockingIOError:
        reached = None
    listener.close()
    assert report["MEMFD"][0] == report["SYSV"][0] == "refused 1\n"
    assert "died" in report["INODES"][0] and report["INODES"][1] < (256 + 32) << 20
    assert report["READ_ONLY"][0] == "[True, True, True, True, True]\n"
    assert "died" in report["FORK_ON"][0] and report["FORK_ON"][2] <= 5 + 1
    assert reached is None
