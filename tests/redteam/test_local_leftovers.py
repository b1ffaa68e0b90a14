"""Two bad inputs for the ``local`` executor and the trajectory: a forked copy of the host that would
outlive the run, and a disk that fills up in the middle of a line."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from redteam import attacker, outputs
from scripted_server import ScriptedServer
from waiting import wait_until

pytestmark = pytest.mark.timeout(120)

FORKS = """
import os, time
pid = os.fork()
if pid == 0:
    {child}
    time.sleep(600)
print("forked")
"""


def copies_of_this_process() -> set[int]:
    """The processes running this process's command line, but for it: its forked copies."""
    mine = Path("/proc/self/cmdline").read_bytes()
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if (entry / "cmdline").read_bytes() == mine and _alive_copy(int(entry.name)):
                    found.add(int(entry.name))
    return found


@pytest.mark.parametrize(
    "child", ["pass", "os.setsid()\n    if os.fork():\n        os._exit(0)"], ids=["fork", "double-fork"]
)
def test_a_forked_copy_of_the_host_does_not_outlive_the_run(server: ScriptedServer, child: str) -> None:
    before = copies_of_this_process()
    result = attacker(server, FORKS.format(child=child), executor="local").completion("doc", "q")
    assert result.ok, result.error
    assert outputs(result) == ["forked\n"]
    try:
        assert wait_until(lambda: not copies_of_this_process() - before, timeout=20)
    finally:
        for pid in copies_of_this_process() - before:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _alive_copy(pid: int) -> bool:
    """Whether ``pid`` runs still (a zombie has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


FULL_DISK = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a full disk: writes past the limit fail with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
from rlm_kernel import RLM
rlm = RLM("openai", {{"model_name": "gpt-4o-mini", "base_url": {base_url!r}, "api_key": "sk-test", "max_retries": 0}},
          log_dir={log_dir!r})
result = rlm.completion("doc", "q")
print(result.ok, result.error)
"""


@pytest.mark.parametrize("limit", [1500, 2600, 4100])
def test_on_a_full_disk_the_trajectory_ends_on_a_whole_line(
    server: ScriptedServer, tmp_path: Path, limit: int
) -> None:
    attacker(server, "print('a step that prints a line or two ' * 20)", "x = 1")
    script = FULL_DISK.format(limit=limit, base_url=server.openai_base_url, log_dir=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "could not be written" in done.stdout
    (log,) = tmp_path.glob("*.jsonl")
    text = log.read_text()
    assert not text or text.endswith("\n")  # the first event alone may not fit
    assert all(isinstance(json.loads(line), dict) for line in text.splitlines())
