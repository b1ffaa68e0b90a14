"""``python -m rlm_kernel.install``: install the "RLM Python" kernelspec (``pip install`` already does,
into the environment's ``share/jupyter/kernels``; this is for other places); with ``--sandbox``, the
``rlm-sandbox`` kernelspec a Kernel Gateway's kernels need for the ``gateway`` executor."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

__all__ = ["KERNEL_NAME", "SANDBOX_KERNEL_NAME", "install", "main"]

KERNEL_NAME = "rlm-python"
SANDBOX_KERNEL_NAME = "rlm-sandbox"
SPEC_DIR = Path(__file__).parent / "jupyter" / "kernelspec"
# A Python kernel in a bubblewrap sandbox (rlm_kernel.executors.sandbox); interrupts arrive as
# messages, since no signal crosses into the sandbox.
SANDBOX_SPEC = {
    "argv": ["python", "-m", "rlm_kernel.executors.sandbox", "-f", "{connection_file}"],
    "display_name": "Python (rlm sandbox)",
    "language": "python",
    "interrupt_mode": "message",
    "metadata": {"debugger": False},
}


def install(
    *, user: bool = False, prefix: str | None = None, kernel_name: str = KERNEL_NAME, sandbox: bool = False
) -> str:
    """Install the kernelspec (or, with ``sandbox``, the sandbox's), pointing at this Python;
    returns where it went."""
    from jupyter_client.kernelspec import KernelSpecManager

    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / kernel_name
        if sandbox:
            staged.mkdir()
            spec = dict(SANDBOX_SPEC)
        else:
            shutil.copytree(SPEC_DIR, staged)
            spec = json.loads((staged / "kernel.json").read_text())
        spec["argv"] = [sys.executable, *spec["argv"][1:]]
        (staged / "kernel.json").write_text(json.dumps(spec, indent=2))
        return KernelSpecManager().install_kernel_spec(str(staged), kernel_name, user=user, prefix=prefix)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlm_kernel.install", description=__doc__)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for this user (~/.local/share/jupyter)")
    where.add_argument("--sys-prefix", action="store_true", help="into this environment (sys.prefix)")
    where.add_argument("--prefix", help="under this prefix (PREFIX/share/jupyter/kernels)")
    parser.add_argument(
        "--sandbox",
        action="store_true",
        help=f"the {SANDBOX_KERNEL_NAME} kernelspec instead: sandboxed kernels for a Kernel Gateway",
    )
    args = parser.parse_args(argv)
    prefix = sys.prefix if args.sys_prefix else args.prefix
    name = SANDBOX_KERNEL_NAME if args.sandbox else KERNEL_NAME
    path = install(user=args.user, prefix=prefix, kernel_name=name, sandbox=args.sandbox)
    print(f"Installed the {'rlm-sandbox' if args.sandbox else 'RLM Python'} kernelspec in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
