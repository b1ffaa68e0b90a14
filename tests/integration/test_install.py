"""The kernelspec: installed with the package, and by ``python -m rlm_kernel.install`` elsewhere."""

from __future__ import annotations

import json
import subprocess
import sys

from jupyter_client.kernelspec import KernelSpecManager


def test_pip_install_provides_the_kernelspec():
    spec = KernelSpecManager().get_kernel_spec("rlm-python")
    assert spec.display_name == "RLM Python" and spec.language == "python"
    assert spec.argv[1:3] == ["-m", "rlm_kernel.jupyter.kernel"]


def test_install_command_writes_a_spec_for_this_python(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.install", "--prefix", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    target = tmp_path / "share" / "jupyter" / "kernels" / "rlm-python"
    assert str(target) in done.stdout
    spec = json.loads((target / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable and spec["display_name"] == "RLM Python"
    assert (target / "logo-64x64.png").read_bytes().startswith(b"\x89PNG")
