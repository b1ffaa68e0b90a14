"""A real Jupyter Kernel Gateway on 127.0.0.1 with a random token, for the gateway executor's tests
and benchmarks, set up as docs/executors.md says: the ``rlm-sandbox`` kernelspec installed where the
gateway finds it, kernels' channels over IPC, and the token in the gateway's environment (never on
a command line, where any process of the machine could read it)."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from types import TracebackType

from waiting import wait_until


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class KernelGateway:
    def __init__(
        self, env: dict[str, str] | None = None, log: Path | None = None, stdin: Path | None = None
    ) -> None:
        self.log = log  # where its output goes, as an admin's gateway writes its log
        self.stdin = stdin  # what it reads, as one started in a terminal reads what the admin types
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = secrets.token_hex(16)
        self.env = env or {}
        self.home = Path(tempfile.mkdtemp(prefix="rlm-gateway-"))
        self.runtime_dir = self.home / "runtime"

    def __enter__(self) -> KernelGateway:
        prefix = self.home / "prefix"
        subprocess.run(
            [sys.executable, "-m", "rlm_kernel.install", "--sandbox", "--prefix", str(prefix)],
            check=True,
            capture_output=True,
        )
        args = [
            sys.executable,
            "-m",
            "kernel_gateway",
            "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={self.port}",
            "--KernelGatewayApp.port_retries=0",
            "--KernelManager.transport=ipc",
        ]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "JUPYTER_PATH": str(prefix / "share" / "jupyter"),
            "JUPYTER_RUNTIME_DIR": str(self.runtime_dir),
            "KG_AUTH_TOKEN": self.token,
            **self.env,
        }
        out = subprocess.DEVNULL if self.log is None else self.log.open("ab")
        typed = subprocess.DEVNULL if self.stdin is None else self.stdin.open("rb")
        self.process = subprocess.Popen(args, env=env, stdin=typed, stdout=out, stderr=out)
        for stream in (out, typed):
            if not isinstance(stream, int):
                stream.close()
        if not wait_until(self._answers, timeout=60):
            self.__exit__()
            raise RuntimeError("Kernel Gateway did not answer within 60 s")
        return self

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"Kernel Gateway exited with {self.process.returncode}")
        request = urllib.request.Request(self.url + "/api", headers={"Authorization": f"token {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def __exit__(self, *exc: object | TracebackType) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.home, ignore_errors=True)
