"""A real Jupyter Kernel Gateway on 127.0.0.1 with a random token, for the gateway executor's tests
and benchmarks. Its kernels get an environment without keys, as a remote machine would."""

from __future__ import annotations

import secrets
import socket
import subprocess
import sys
import urllib.request
from types import TracebackType

from waiting import wait_until

from rlm_kernel.executors.kernel import scrubbed_env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class KernelGateway:
    def __init__(self) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = secrets.token_hex(16)

    def __enter__(self) -> KernelGateway:
        args = [
            sys.executable,
            "-m",
            "kernel_gateway",
            "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={self.port}",
            f"--KernelGatewayApp.auth_token={self.token}",
            "--KernelGatewayApp.port_retries=0",
        ]
        self.process = subprocess.Popen(
            args, env=scrubbed_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
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
