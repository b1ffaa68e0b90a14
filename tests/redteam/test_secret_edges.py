"""Keys around the edges: a key under a name nobody would guess, passwords and credentials inside
addresses, a parent process that holds the key, and an export of a run that printed one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from redteam import CONFIG_KEY, HOST_KEY, attacker, by_turn, outputs, run_as_ordinary_user, step
from scripted_server import ScriptedServer

from rlm_kernel.secrets import REDACTED

pytestmark = pytest.mark.timeout(240)

NEEDLE = "sk-live"
FIND_NEEDLE = f"""
import os
print(sorted(k for k, v in os.environ.items() if {NEEDLE!r} in v))
"""


def test_a_key_from_a_variable_of_any_name_is_not_in_the_kernel(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_KEY", CONFIG_KEY)  # a name that does not look like a key's
    monkeypatch.setenv("MY_SETTINGS", f"region=eu;key={HOST_KEY}")
    result = attacker(server, FIND_NEEDLE).completion("doc", "q")
    assert outputs(result) == ["[]\n"]


CREDENTIALS = {
    "PGPASSWORD": "correct-horse-battery-staple",
    "DATABASE_URL": "postgres://:pw@db.internal:5432/app",
    "GIT_REMOTE": "https://ghp_0123456789abcdefABCDEF0123456789abcd@github.com/org/repo.git",
    "HOOK": "https://hooks.example.com/x?token=t0k3n-abcdef-123456",
    "MYSQL_PWD": "hunter2-but-longer",
}
LEAKED = [
    "correct-horse-battery-staple",
    ":pw@",
    "ghp_0123456789abcdef",
    "t0k3n-abcdef",
    "hunter2-but-longer",
]


@pytest.mark.parametrize("executor", ["local", "kernel"])
def test_passwords_and_credentials_in_addresses_never_reach_the_record(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, executor: str
) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    # Read from the environment: redacted by the variable's name (PGPASSWORD, MYSQL_PWD) or by the
    # value's form (an address's password, a token as an address's user, a token in a query string).
    code = f"import os\nprint([os.environ.get(n) for n in {list(CREDENTIALS)!r}])"
    result = attacker(server, code, executor=executor, log_dir=tmp_path).completion("doc", "q")
    recorded = result.log_path.read_text()
    assert not [leak for leak in LEAKED if leak in recorded]
    if executor == "local":  # read, then redacted
        assert outputs(result)[0].count(REDACTED) == len(CREDENTIALS)
    else:  # never in the kernel's environment
        assert outputs(result) == [repr([None] * len(CREDENTIALS)) + "\n"]
    sent = json.dumps([r.body for r in server.requests])
    assert not [leak for leak in LEAKED if leak in sent]


SCAN_PROC = """
import os
found = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if b"sk-live" in open(f"/proc/{pid}/environ", "rb").read():
                found.append(int(pid))
        except OSError:
            pass
print(found)
"""

HOST = """
import json
from rlm_kernel import RLM
rlm = RLM("openai", {{"model_name": "gpt-4o-mini", "base_url": {base_url!r}, "api_key": {key!r}, "max_retries": 0}},
          log_dir=False, executor="kernel")
result = rlm.completion("doc", "q")
print(json.dumps({{"ok": result.ok, "error": result.error,
                   "outputs": [e.output for e in result.trajectory if e.kind == "step_finished"]}}))
"""


def test_an_ordinary_users_parent_process_that_holds_the_key_cannot_be_read(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """As an ordinary user (no capabilities anywhere), the processes above the kernel (bash, the
    host) are the same user's: the code looks for the key in every /proc/<pid>/environ."""
    server.responder = by_turn(step(SCAN_PROC), "FINAL(done)")
    script = HOST.format(base_url=server.openai_base_url, key=CONFIG_KEY)
    report = run_as_ordinary_user(script, tmp_path, {"OPENAI_API_KEY": HOST_KEY}, under_bash=True)
    assert report["ok"], report["error"]
    assert report["outputs"] == ["[]\n"]


def test_export_redacts_again_with_its_own_environment(tmp_path: Path, server: ScriptedServer) -> None:
    """A run that did not know a secret printed it; exporting with the secret in the environment
    leaves it out of the training data."""
    secret = "tok-" + "9f8e7d6c5b4a" * 3
    code = f"print('the token is {secret}')"
    result = attacker(server, code, executor="local", log_dir=tmp_path / "runs").completion("doc", "q")
    assert secret in result.log_path.read_text()  # nothing told the run it was a secret
    out = tmp_path / "train.jsonl"
    env = {**os.environ, "SERVICE_TOKEN": secret}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlm_kernel.export",
            str(tmp_path / "runs"),
            "-o",
            str(out),
            "--min-turns",
            "1",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    exported = out.read_text()
    assert exported and secret not in exported and REDACTED in exported


READ_CLIENT_KEYS = """
import gc
from rlm_kernel.lm.sdk import SDKBackend
llm_query("Say hi.")  # the sub-model's client exists from its first call
print(sorted({o._api_key for o in gc.get_objects() if isinstance(o, SDKBackend)}))
"""


@pytest.mark.local_model
def test_the_machine_model_servers_key_is_redacted_though_no_setting_named_it(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """The bundled model's key comes from the machine's server, not from a setting or the
    environment; code in the local executor finds the client and prints its key."""
    from rlm_kernel.lm import make_lm

    key = make_lm("local", {}).api_key
    assert key
    result = attacker(
        server,
        READ_CLIENT_KEYS,
        executor="local",
        log_dir=tmp_path,
        sub_backend="local",
        sub_backend_kwargs={},
    ).completion("doc", "q")
    assert result.ok, result.error
    assert REDACTED in outputs(result)[0]
    assert key not in result.log_path.read_text()
    assert key not in json.dumps([r.body for r in server.requests])
