"""Limits with holes: memory across the kernel's children, a file in /dev/shm, processes without
count, a file without end, a step that ignores interrupts, and what a killed host leaves behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest
from redteam import attacker, outputs, processes_with
from scripted_server import ScriptedServer
from waiting import wait_until

from rlm_kernel.executors import kernel as kernel_module

pytestmark = pytest.mark.timeout(240)


def resident(pids: list[int]) -> int:
    """Bytes resident in these processes together (those still there)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return total


def test_memory_mb_holds_the_kernel_and_its_children_together(server: ScriptedServer) -> None:
    marker = f"rlm-hog-{uuid.uuid4().hex[:8]}"
    hog = f"import time; b = bytearray(400 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(30)  # {marker}"
    code = textwrap.dedent(
        f"""
        import subprocess, sys, time
        hogs = [subprocess.Popen([sys.executable, "-c", {hog!r}]) for _ in range(4)]
        time.sleep(6)
        print(sorted(h.poll() is None for h in hogs))
        for h in hogs:
            h.kill()
        """
    )
    peak = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], resident(processes_with(marker)))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        result = attacker(server, code, executor_kwargs={"memory_mb": 512}).completion("doc", "q")
    finally:
        done.set()
        watcher.join()
        for pid in processes_with(marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert result.ok, result.error
    assert peak[0] <= 1.25 * (512 << 20), peak[0] >> 20
    assert "False" in outputs(result)[0]  # some of them were ended


def test_a_file_in_dev_shm_does_not_outlive_the_run(server: ScriptedServer) -> None:
    name = f"rlm-big-{uuid.uuid4().hex}"
    code = f"with open('/dev/shm/{name}', 'wb') as f:\n    f.write(b'x' * (300 << 20))\nprint('written')"
    result = attacker(server, code).completion("doc", "q")
    assert outputs(result) == ["written\n"]
    assert not Path("/dev/shm", name).exists()


def test_the_kernel_cannot_start_processes_without_end(server: ScriptedServer) -> None:
    marker = str(7000 + uuid.uuid4().int % 1000)
    code = textwrap.dedent(
        f"""
        import subprocess
        started = 0
        try:
            for _ in range(300):
                subprocess.Popen(["sleep", "{marker}"])
                started += 1
        except OSError as exc:
            print(type(exc).__name__, exc.errno)
        print(started)
        """
    )
    try:
        result = attacker(server, code, executor_kwargs={"max_procs": 64}).completion("doc", "q")
        error, started = outputs(result)[0].splitlines()
        assert error.startswith("BlockingIOError") and int(started) < 64
    finally:
        for pid in processes_with(f"sleep\0{marker}"):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_the_kernel_cannot_write_a_file_without_end(server: ScriptedServer) -> None:
    code = textwrap.dedent(
        """
        import os
        try:
            with open("big", "wb") as f:
                for _ in range(200):
                    f.write(b"x" * (1 << 20))
        except OSError as exc:
            print(type(exc).__name__, exc.errno)
        print(os.path.getsize("big") >> 20)
        """
    )
    result = attacker(server, code, executor_kwargs={"file_mb": 64}).completion("doc", "q")
    error, size = outputs(result)[0].splitlines()
    assert error == "OSError 27" and int(size) <= 64  # EFBIG


def test_a_step_that_ignores_interrupts_ends_with_the_default_settings(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kernel_module, "STEP_TIMEOUT_S", 2.0)  # the default, shortened for the test
    stuck = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
    result = attacker(server, stuck, "print('next')").completion("doc", "q")
    assert result.ok, result.error
    first, second = outputs(result)
    assert "restarted" in first and second == "next\n"


HOST = """
import os, sys, time
from rlm_kernel.executors.kernel import KernelExecutor
from rlm_kernel.runtime import default_runtime
default_runtime().close_on_sigterm()  # asked for: no handler is installed unasked
executor = KernelExecutor({kwargs})
executor.bind("x" * 300_000, None, None)
print(executor.execute("import os; print(os.getpid())", step=1).result.stdout.strip(), flush=True)
print("READY", executor.session.kernel.workdir, flush=True)
time.sleep(600)
"""


def start_host(kwargs: str = "") -> tuple[subprocess.Popen[str], str]:
    host = subprocess.Popen(
        [sys.executable, "-c", HOST.format(kwargs=kwargs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert host.stdout is not None
    for line in host.stdout:
        if line.startswith("READY"):
            return host, line.split()[1]
    raise AssertionError("the host did not start a kernel")


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_a_host_ended_by_a_signal_leaves_no_kernel_folder_or_connection_file(how: signal.Signals) -> None:
    host, workdir = start_host()
    assert Path(workdir).is_dir()
    host.send_signal(how)
    host.wait(60)
    assert wait_until(lambda: not processes_with(workdir), timeout=20)
    assert not Path(workdir).exists()


def test_a_host_killed_outright_leaves_nothing_that_the_next_one_keeps() -> None:
    host, workdir = start_host()
    host.kill()
    host.wait(60)
    assert wait_until(lambda: not processes_with(workdir), timeout=20)  # the kernel died with it
    second, _ = start_host()  # the next host clears what the killed one left
    try:
        assert not Path(workdir).exists()
    finally:
        second.terminate()
        second.wait(60)


def test_the_kernel_writes_nowhere_but_its_own_tmp(server: ScriptedServer) -> None:
    """The system, the Python environment, the folders contexts arrive in and the sandbox's own files
    are read-only; /tmp, /dev/shm and $HOME (in /tmp) are its own."""
    code = textwrap.dedent(
        """
        import glob, json, os, sys
        info = json.load(open("/run/rlm/kernel.json"))
        places = ["/usr", "/etc", "/run/rlm", sys.prefix, sys.base_prefix, *glob.glob("/dev/shm/rlm-kernel-*"),
                  *glob.glob("/tmp/rlm-kernel-*/in"), "/tmp", "/dev/shm", os.path.expanduser("~")]
        wrote = []
        for place in places:
            try:
                with open(os.path.join(place, "rlm-planted"), "w") as f:
                    f.write("x")
                wrote.append(place)
            except OSError:
                pass
        print(sorted(set(wrote)))
        """
    )
    result = attacker(server, code).completion("x" * 200_000, "q")  # a context that comes as a file
    assert outputs(result) == ["['/dev/shm', '/tmp']\n"]
