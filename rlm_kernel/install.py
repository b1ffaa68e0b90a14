"""``python -m rlm_kernel.install``: install the "RLM Python" kernelspec (``pip install`` already does,
into the environment's ``share/jupyter/kernels``; this is for other places)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

__all__ = ["KERNEL_NAME", "install", "main"]

KERNEL_NAME = "rlm-python"
SPEC_DIR = Path(__file__).parent / "jupyter" / "kernelspec"


def install(*, user: bool = False, prefix: str | None = None, kernel_name: str = KERNEL_NAME) -> str:
    """Install the kernelspec, pointing at this Python; returns where it went."""
    from jupyter_client.kernelspec import KernelSpecManager

    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / kernel_name
        shutil.copytree(SPEC_DIR, staged)
        spec_file = staged / "kernel.json"
        spec = json.loads(spec_file.read_text())
        spec["argv"][0] = sys.executable
        spec_file.write_text(json.dumps(spec, indent=2))
        return KernelSpecManager().install_kernel_spec(str(staged), kernel_name, user=user, prefix=prefix)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlm_kernel.install", description=__doc__)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for this user (~/.local/share/jupyter)")
    where.add_argument("--sys-prefix", action="store_true", help="into this environment (sys.prefix)")
    where.add_argument("--prefix", help="under this prefix (PREFIX/share/jupyter/kernels)")
    args = parser.parse_args(argv)
    prefix = sys.prefix if args.sys_prefix else args.prefix
    path = install(user=args.user, prefix=prefix)
    print(f"Installed the RLM Python kernelspec in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
