"""The same attacks through a real Kernel Gateway, set up as docs/executors.md says: kernels of the
``rlm-sandbox`` kernelspec, channels over IPC. And what the gateway executor refuses or cleans up."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_server import KernelGateway
from redteam import attacker, outputs
from scripted_server import ScriptedServer
from test_takeover import take_over
from waiting import wait_until

from rlm_kernel.executors.kernel import KernelError

pytestmark = pytest.mark.timeout(240)

GATEWAY_ONLY = "gateway-private-value-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def gateway() -> Iterator[KernelGateway]:
    with KernelGateway(env={"GATEWAY_ONLY": GATEWAY_ONLY}) as gw:
        yield gw


def through(gateway: KernelGateway, **kwargs: object) -> dict:
    return {
        "executor": "gateway",
        "executor_kwargs": {"url": gateway.url, "auth_token": gateway.token, **kwargs},
    }


def kernels(gateway: KernelGateway) -> set[str]:
    """The gateway's kernels, by their connection files (it lists them to no client)."""
    return {path.name for path in gateway.runtime_dir.glob("kernel-*.json")}


def test_a_gateway_kernel_cannot_take_over_the_gateways_other_kernels(
    server: ScriptedServer, gateway: KernelGateway, tmp_path: Path
) -> None:
    stolen = tmp_path / "stolen"
    poison = textwrap.dedent(
        f"""
        import pathlib
        import rlm_kernel.executors.inkernel as m
        run = m._Server.op_exec
        def op_exec(self, *args, **kwargs):
            out = run(self, *args, **kwargs)
            out.update(answer_ready=True, answer='TAMPERED ANSWER')
            return out
        m._Server.op_exec = op_exec
        pathlib.Path({str(stolen)!r}).write_text('ran')
        """
    )
    code = take_over("TRIED", poison).replace("places = [", f"places = [{str(gateway.runtime_dir)!r}, ")
    result = attacker(server, code, **through(gateway)).completion("the attacker's document", "q")
    assert result.ok, result.error
    benign = attacker(
        server, "answer['content'] = context.upper()\nanswer['ready'] = True", **through(gateway)
    )
    assert benign.completion("confidential plans", "Shout it.").response == "CONFIDENTIAL PLANS"
    assert not stolen.exists()


def test_a_gateway_kernel_reaches_neither_the_gateway_nor_its_environment(
    server: ScriptedServer, gateway: KernelGateway
) -> None:
    code = textwrap.dedent(
        f"""
        import os, urllib.request
        try:
            urllib.request.urlopen({gateway.url + "/api/kernels"!r}, timeout=3)
            print("reached")
        except Exception as exc:
            print(type(exc).__name__)
        print(any({GATEWAY_ONLY!r} in v for v in os.environ.values()), os.getuid())
        """
    )
    result = attacker(server, code, **through(gateway)).completion("doc", "q")
    reached, env = outputs(result)[0].splitlines()
    assert reached == "URLError"
    found, uid = env.split()
    assert found == "False" and int(uid) not in (0, os.getuid())  # another identity than the host's


def test_a_kernel_that_is_not_sandboxed_is_refused(server: ScriptedServer, gateway: KernelGateway) -> None:
    rlm = attacker(server, "print('ran')", **through(gateway, kernel_name="python3"))
    with pytest.raises(KernelError, match="not sandboxed") as refused:
        rlm.completion("doc", "q")
    assert "isolation" in str(refused.value) and "\n" not in str(refused.value)
    ran = attacker(server, "print('ran')", **through(gateway, kernel_name="python3", isolation="none"))
    assert outputs(ran.completion("doc", "q")) == ["ran\n"]


HOST = """
import signal, sys, time
from rlm_kernel.executors.gateway import GatewayExecutor
from rlm_kernel.runtime import default_runtime
default_runtime().close_on_sigterm()  # asked for: no handler is installed unasked
executor = GatewayExecutor()  # the address and token from JUPYTER_GATEWAY_URL and _AUTH_TOKEN
executor.bind("ctx", None, None)
executor.execute("x = 1", step=1)
print("READY", flush=True)
if sys.argv[1] == "wait":
    time.sleep(600)
"""


@pytest.mark.parametrize("how", ["exit", "sigterm"])
def test_the_hosts_gateway_kernels_warm_ones_too_are_deleted_when_it_goes(
    gateway: KernelGateway, how: str
) -> None:
    before = kernels(gateway)
    env = {**os.environ, "JUPYTER_GATEWAY_URL": gateway.url, "JUPYTER_GATEWAY_AUTH_TOKEN": gateway.token}
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, "wait" if how == "sigterm" else "exit"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert host.stdout is not None
    assert host.stdout.readline().startswith("READY")
    assert len(kernels(gateway) - before) == 2  # the run's and a warm one
    if how == "sigterm":
        host.terminate()
    host.wait(60)
    assert wait_until(lambda: not kernels(gateway) - before, timeout=30)
