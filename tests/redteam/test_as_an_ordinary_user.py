"""The attacks whose outcome differs between root and an ordinary user, made with the host running
as an ordinary user (uid 65534): there the sandbox is a user namespace of that user's, and the
user's own processes (its notebook kernel, the shell above the host) are the same uid as the host."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from redteam import CONFIG_KEY, HOST_KEY, by_turn, run_as_ordinary_user, step
from scripted_server import ScriptedServer
from test_takeover import take_over

pytestmark = pytest.mark.timeout(300)

HOST = """
import json, os, subprocess, time
from jupyter_client.manager import start_new_kernel
from rlm_kernel import RLM

# The user's notebook kernel, started as jupyter_server starts one, with the key in its environment.
km, kc = start_new_kernel(kernel_name="python3", env=dict(os.environ))
rlm = RLM("openai", {{"model_name": "gpt-4o-mini", "base_url": {base_url!r}, "api_key": {key!r}, "max_retries": 0}},
          log_dir=False, executor="kernel", executor_kwargs={{"max_procs": 48}})
result = rlm.completion("the document", "q")
out = []
kc.execute_interactive("print('TAKEN' in globals())", timeout=30,
                       output_hook=lambda m: out.append(m["content"].get("text", "")))
kc.stop_channels()
km.shutdown_kernel(now=True)
time.sleep(1)
left = subprocess.run(["pgrep", "-f", "sleep 4747"], capture_output=True, text=True).stdout.split()
print(json.dumps({{"ok": result.ok, "error": result.error, "taken": "".join(out).strip(), "left": left,
                   "outputs": [e.output for e in result.trajectory if e.kind == "step_finished"]}}))
"""

SPAWN = textwrap.dedent(
    """
    import os, subprocess
    started = 0
    try:
        for _ in range(200):
            subprocess.Popen(["sleep", "4747"], start_new_session=True)
            started += 1
    except OSError as exc:
        print(type(exc).__name__)
    print(started, os.getuid())
    """
)


def test_an_ordinary_users_sandbox_holds_against_its_own_user(server: ScriptedServer, tmp_path: Path) -> None:
    runtime = tmp_path / "home" / ".local" / "share" / "jupyter" / "runtime"
    attack = take_over("TRIED", "TAKEN = True").replace("places = [", f"places = [{str(runtime)!r}, ")
    server.responder = by_turn(step(attack), step(SPAWN), "FINAL(done)")
    script = HOST.format(base_url=server.openai_base_url, key=CONFIG_KEY)
    report = run_as_ordinary_user(script, tmp_path, {"OPENAI_API_KEY": HOST_KEY}, under_bash=True)
    assert report["ok"], report["error"]
    tried, spawned = report["outputs"]
    assert tried.startswith("TRIED 0 ")  # no connection file of the user's to be found
    assert report["taken"] == "False"
    error, counts = spawned.splitlines()
    started, uid = counts.split()
    assert error == "BlockingIOError" and int(started) < 48 and uid == "65534"
    assert report["left"] == []  # every process it started ended with the run
