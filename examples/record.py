"""Re-record the example notebooks from real runs of the local model, then check them as CI does.

    python examples/record.py                          # every notebook here
    python examples/record.py 02-long-context.ipynb    # one

Each notebook's first cell sets the replay backend with ``{"path": "recordings/<name>.jsonl"}``, and
CI replays those files under nbval. This script runs each notebook once with nbclient, in a kernel
where an ``RLM`` built for the replay backend (by ``%rlm`` or by the notebook's own code) runs the
real local model instead (Qwen2.5-Coder-0.5B in llama.cpp) with ``record=`` that same path. So the
requests are exactly those the replay will send, and each reply the model gives is written to the
recording. The notebook is saved with the outputs of that real run: what GitHub shows, and what
nbval compares the replay against. Finally ``pytest`` replays the notebook.

Re-record after any change to a notebook's context or question, to the prompts
(``rlm_kernel/prompts.py``), or to what the REPL prints back to the model: the replay matches
requests by a hash of their messages, and a changed request stops the replay with ReplayMismatch.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent

# Runs in the recording kernel before any cell: the replay backend becomes the real model, recording.
HOOK = """
import rlm_kernel.rlm

from dataclasses import replace as _replace

_setup = rlm_kernel.rlm.RLM._setup


def _record_instead(self, config):
    if config.backend == "replay":
        kwargs = {k: v for k, v in config.backend_kwargs.items() if k not in ("path", "recording")}
        # A replay is one root: record the one it will ask again.
        path = config.backend_kwargs["path"]
        config = _replace(config, backend="local", backend_kwargs=kwargs, record=path, votes=1)
    _setup(self, config)


rlm_kernel.rlm.RLM._setup = _record_instead
del _record_instead
"""


def recording_path(nb: nbformat.NotebookNode) -> Path:
    """The recording named in the notebook's first code cell."""
    first = next(c for c in nb.cells if c.cell_type == "code")
    found = re.search(r"recordings/[\w.-]+\.jsonl", first.source)
    if found is None:
        raise SystemExit("The first code cell names no recordings/*.jsonl file.")
    return HERE / found.group()


def record(path: Path, hook: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    target = recording_path(nb)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)  # recordings are appended to
    started = time.perf_counter()
    client = NotebookClient(
        nb,
        timeout=900,
        kernel_name="python3",
        resources={"metadata": {"path": str(HERE)}},
        extra_arguments=[f"--IPKernelApp.exec_files={hook}"],
    )
    client.execute()
    nb.metadata.pop("widgets", None)  # the live widgets end as static HTML; their state is noise
    nbformat.write(nb, path)
    replies = sum(1 for line in target.read_text(encoding="utf-8").splitlines() if line.strip())
    print(
        f"{path.name}: {replies} replies recorded to {target.relative_to(HERE)} "
        f"in {time.perf_counter() - started:.0f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("notebooks", nargs="*", help="notebooks to record (default: all in examples/)")
    parser.add_argument("--no-check", action="store_true", help="skip the replay under pytest")
    args = parser.parse_args(argv)
    paths = [HERE / n for n in args.notebooks] or sorted(HERE.glob("[0-9]*.ipynb"))
    with tempfile.TemporaryDirectory() as tmp:
        hook = Path(tmp) / "record_hook.py"
        hook.write_text(HOOK, encoding="utf-8")
        for path in paths:
            record(path, hook)
    if args.no_check:
        return 0
    return subprocess.call([sys.executable, "-m", "pytest", "-q", *map(str, paths)], cwd=HERE.parent)


if __name__ == "__main__":
    raise SystemExit(main())
