"""The machine's one llama.cpp server: real daemons on the bundled model, real client processes.

Each test points ``RLM_LOCAL_SERVER_DIR`` at a fresh private folder of its own, so nothing here
touches the user's servers, and starts daemons with ``--idle-timeout 0``: they stop as the test's
last lease closes. Waits are on conditions (a line read, a process's pidfd), never on sleeps.
"""

from __future__ import annotations

import http.client
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import openai
import pytest
from waiting import wait_until

from rlm_kernel import models
from rlm_kernel.errors import ConfigError, LocalServerError
from rlm_kernel.lm import machine_server, make_lm
from rlm_kernel.lm.machine_server import DIR_VAR, MODE_VAR, ServerKey
from rlm_kernel.runtime import default_runtime

pytestmark = pytest.mark.local_model

N_CTX = 1024  # small: a quick load, and a key no other test's server has

# A client process: takes a lease, says what it got and whether the model is mapped in it, then
# holds the lease until its stdin closes.
CLIENT = textwrap.dedent(
    """
    import json, sys
    from rlm_kernel.lm import machine_server

    held = machine_server.lease(sys.argv[1], n_ctx=int(sys.argv[2]), idle_timeout=0)
    with open("/proc/self/maps") as fh:
        mapped = sys.argv[3] in fh.read()
    print(json.dumps({"base_url": held.base_url, "pid": held.pid, "model_mapped": mapped}), flush=True)
    sys.stdin.read()
    """
)


@pytest.fixture(scope="session")
def model_file() -> Path:
    return models.fetch(progress=False)


@pytest.fixture
def run_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private folder of this test's own (short: a UNIX socket's path has at most 107 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="rlm-run-", dir="/tmp"))
    monkeypatch.setenv(DIR_VAR, str(folder))
    monkeypatch.delenv(MODE_VAR, raising=False)
    yield folder
    machine_server.close_leases()
    for sock in folder.glob("*.sock"):  # a daemon still up (a failed test): stop it, by its own pid
        _stop_daemon(sock)
    shutil.rmtree(folder, ignore_errors=True)


def _stop_daemon(sock_path: Path) -> None:
    conn = socket.socket(socket.AF_UNIX)
    try:
        conn.settimeout(30)
        conn.connect(str(sock_path))
        pid = json.loads(conn.makefile("rb").readline())["pid"]
    except (OSError, ValueError, KeyError):
        return
    finally:
        conn.close()
    os.kill(pid, signal.SIGTERM)
    _wait_exit(pid)


def _wait_exit(pid: int, timeout: float = 60.0) -> bool:
    """Whether process ``pid`` (not necessarily our child) ended within ``timeout``: its pidfd
    becomes readable when it does, zombie or reaped."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    return not _wait_exit(pid, timeout=0)


def _model_rss_kb(pid: int, model: Path) -> int:
    """Resident kB of the model file's mappings in process ``pid``."""
    total, current = 0, ""
    with open(f"/proc/{pid}/smaps") as fh:
        for line in fh:
            fields = line.split()
            if "-" in fields[0] and not fields[0].endswith(":"):
                current = fields[-1] if len(fields) >= 6 else ""
            elif fields[0] == "Rss:" and current == str(model):
                total += int(fields[1])
    return total


def _vm_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


def _start_client(model: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CLIENT, str(model), str(N_CTX), model.name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _chat(base_url: str, api_key: str) -> str:
    client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=120)
    reply = client.chat.completions.create(
        model="any", messages=[{"role": "user", "content": "Say hi."}], max_tokens=4, temperature=0
    )
    return reply.choices[0].message.content or ""


def test_two_processes_share_one_server_and_the_model_is_loaded_once(model_file: Path, run_dir: Path) -> None:
    model = model_file.resolve()
    clients = [_start_client(model), _start_client(model)]  # at once: they race for the start
    try:
        said = [json.loads(c.stdout.readline()) for c in clients]  # type: ignore[union-attr]
        pid = said[0]["pid"]
        assert said[0]["base_url"] == said[1]["base_url"]
        assert said[1]["pid"] == pid and pid not in {c.pid for c in clients}
        assert said[0]["base_url"].startswith("http://127.0.0.1:")

        # One model in memory: resident in the daemon, not even mapped in the clients.
        size_kb = model.stat().st_size // 1024
        assert _model_rss_kb(pid, model) > 0.8 * size_kb
        assert not said[0]["model_mapped"] and not said[1]["model_mapped"]
        assert all(_vm_rss_kb(c.pid) < size_kb / 2 for c in clients)
        log = next(run_dir.glob("*.log")).read_text()
        assert log.count(" serving ") == 1 and log.count("lease opened") == 2

        # The first to leave does not stop it; the last does (--idle-timeout 0), removing its socket.
        clients[0].stdin.close()  # type: ignore[union-attr]
        clients[0].wait(timeout=60)
        assert wait_until(lambda: "lease closed (1 held)" in next(run_dir.glob("*.log")).read_text())
        assert _alive(pid)
        clients[1].stdin.close()  # type: ignore[union-attr]
        assert _wait_exit(pid), "the daemon outlived its last lease"
        assert not list(run_dir.glob("*.sock"))
    finally:
        for c in clients:
            c.kill()
            c.wait()


def test_requests_need_the_api_key_and_make_lm_has_it(model_file: Path, run_dir: Path) -> None:
    held = machine_server.lease(model_file, n_ctx=N_CTX, idle_timeout=0)
    assert machine_server.lease(model_file, n_ctx=N_CTX) is held  # one lease per key in a process
    assert held.api_key not in repr(held)

    assert _chat(held.base_url, held.api_key).strip()
    with pytest.raises(openai.AuthenticationError):
        _chat(held.base_url, "local")
    url = urlsplit(held.base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    conn.request("POST", "/v1/chat/completions", body=b"{}", headers={"Content-Type": "application/json"})
    assert conn.getresponse().status == 401
    conn.close()

    lm = make_lm("local", {"model_path": str(model_file), "n_ctx": N_CTX})
    assert lm.base_url == held.base_url and lm._api_key == held.api_key  # type: ignore[attr-defined]

    assert held.api_key not in next(run_dir.glob("*.log")).read_text()


def test_the_daemon_keeps_no_provider_key_and_a_forked_child_holds_no_lease(
    model_file: Path, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-daemon-must-not-hold-0123456789")
    held = machine_server.lease(model_file, n_ctx=N_CTX, idle_timeout=0)
    environ = Path(f"/proc/{held.pid}/environ").read_bytes()
    assert b"sk-daemon-must-not-hold" not in environ and b"PATH=" in environ

    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child's lease table is empty, and its copy of the socket closed
        os.close(read)
        ok = not machine_server.leases_of(default_runtime()) and held.sock.fileno() == -1
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    assert os.read(read, 1) == b"1"
    os.waitpid(child, 0)
    assert held.alive and machine_server.lease(model_file, n_ctx=N_CTX) is held


def test_the_opt_out_runs_the_server_in_this_process(
    model_file: Path, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlm_kernel.lm.llama_server import shared_server

    monkeypatch.setenv(MODE_VAR, "process")
    # n_ctx=2048: the in-process server tests/integration/test_local_model.py shares, started once
    lm = make_lm("local", {"model_path": str(model_file), "n_ctx": 2048})
    assert lm.base_url == shared_server(model_file, n_ctx=2048).base_url  # type: ignore[attr-defined]
    assert not list(run_dir.iterdir())  # no daemon, no socket
    monkeypatch.setenv(MODE_VAR, "cluster")
    with pytest.raises(ConfigError, match=r"RLM_LOCAL_SERVER='cluster'.*'machine'.*'process'"):
        make_lm("local", {"model_path": str(model_file), "n_ctx": 2048})


def test_garbage_on_the_lease_socket_does_not_stop_the_server(model_file: Path, run_dir: Path) -> None:
    held = machine_server.lease(model_file, n_ctx=N_CTX, idle_timeout=0)
    sock_path = ServerKey.of(model_file, n_ctx=N_CTX).paths(run_dir)[0]

    def connect() -> socket.socket:
        conn = socket.socket(socket.AF_UNIX)
        conn.settimeout(60)
        conn.connect(str(sock_path))
        return conn

    blobs = [b"\xff\xfe\x00garbage\n", b'{"base_url": 1}\n', b"\n" * 1000, os.urandom(1 << 20)]
    for blob in blobs:
        conn = connect()
        conn.sendall(blob)
        conn.shutdown(socket.SHUT_WR)
        conn.close()
    connect().close()  # gone before it reads its line
    idle = connect()
    idle.sendall(b"x")  # stays, says something, reads nothing

    assert held.alive and _alive(held.pid)
    fresh = connect()
    hello = json.loads(fresh.makefile("rb").readline())
    assert hello["pid"] == held.pid and hello["api_key"] == held.api_key
    models_list = openai.OpenAI(base_url=held.base_url, api_key=held.api_key, max_retries=0).models.list()
    assert [m.id for m in models_list.data] == [model_file.stem]  # it answers, and takes the key
    for conn in (idle, fresh):
        conn.close()


def test_a_folder_others_can_enter_is_refused_in_one_line(
    model_file: Path, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.chmod(run_dir, 0o755)
    with pytest.raises(LocalServerError) as caught:
        machine_server.lease(model_file, n_ctx=N_CTX)
    message = str(caught.value)
    assert "\n" not in message and str(run_dir) in message and "open to others (mode 755)" in message
    assert f"chmod 700 {run_dir}" in message and DIR_VAR in message
    assert not list(run_dir.iterdir())  # nothing was created in it

    cli = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.models", "serve", "--model-path", str(model_file)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cli.returncode == 1 and cli.stderr.count("\n") == 1 and "open to others" in cli.stderr

    os.chmod(run_dir, 0o700)
    link = run_dir.with_name(run_dir.name + "-link")
    link.symlink_to(run_dir)
    try:
        monkeypatch.setenv(DIR_VAR, str(link))
        with pytest.raises(LocalServerError, match="not a folder"):
            machine_server.private_dir()
    finally:
        link.unlink()
    if os.getuid() == 0:  # only root can give a folder away
        monkeypatch.setenv(DIR_VAR, str(run_dir))
        os.chown(run_dir, 65534, 65534)
        with pytest.raises(LocalServerError, match="owned by uid 65534, not you"):
            machine_server.private_dir()
        os.chown(run_dir, 0, 0)


def test_a_server_that_cannot_start_names_its_log(run_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"this is not GGUF\n" * 100)
    with pytest.raises(LocalServerError) as caught:
        machine_server.lease(bad, n_ctx=N_CTX, idle_timeout=0)
    log = ServerKey.of(bad, n_ctx=N_CTX).paths(run_dir)[2]
    message = str(caught.value)
    assert "did not start: llama.cpp could not load" in message and f"its log is {log}" in message
    assert log.is_file() and "error: llama.cpp could not load" in log.read_text()
    assert not list(run_dir.glob("*.sock"))


def test_serve_in_the_foreground_is_found_and_stops_on_ctrl_c(model_file: Path, run_dir: Path) -> None:
    cmd = [sys.executable, "-m", "rlm_kernel.models", "serve", "--model-path", str(model_file)]
    cmd += ["--n-ctx", str(N_CTX)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base_url = proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        held = machine_server.lease(model_file, n_ctx=N_CTX)
        assert (held.base_url, held.pid) == (base_url, proc.pid)

        again = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert again.returncode == 1 and f"already running (pid {proc.pid}, {base_url})" in again.stderr

        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert not held.alive and not list(run_dir.glob("*.sock"))
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]


def test_serve_help() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.models", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0
    for option in ("--model-path", "--n-ctx", "--parallel", "--threads", "--idle-timeout", "--port"):
        assert option in out.stdout
    assert "--listen-fd" not in out.stdout  # the daemon's own options are not the user's
