"""The wheel's build hook (pyproject.toml, ``[tool.hatch.build.hooks.custom]``): hatchling loads
:func:`get_build_hook`, whose hook runs :func:`build`.

It builds the JupyterLab extension with jlpm into ``rlm_kernel/labextension/``, from where the
wheel ships it to ``share/jupyter/labextensions/rlm-kernel-labextension/``. The production build is
committed, with the digest of the sources it was built from (``sources.sha256``), so a clone
installs the extension with no Node.js.

- The build output is complete and was built from these very sources (a clone, an sdist, a
  second install): nothing to do, no Node.js needed, and nothing more in the build environment
  than hatchling.
- Otherwise it runs ``jlpm install`` and ``jlpm run build:prod`` in ``labextension/``; only then
  does the hook ask the installer for JupyterLab (which brings jlpm) and hatch-jupyter-builder.
- Without Node.js 20.19+ or 22.12+ there is nothing to build with: the package installs without
  the extension (or with the older build, if there is one), and the kernel shows each run's
  steps inside its ``%%rlm`` cell instead. ``HATCH_JUPYTER_BUILDER_SKIP_NPM=1`` skips the build on purpose.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

# jupyter-builder (JupyterLab >= 4.6) refuses older Node.js: "^20.19.0 || >=22.12.0".
NODE_OK = "20.19+ or 22.12+"
# What the build reads: a change to any of these makes the output stale.
SOURCES = ("src", "style", "package.json", "yarn.lock", "tsconfig.json")
STAMP = "sources.sha256"  # in the build: the digest of the sources it was built from
PACKAGE, OUT = "labextension", "rlm_kernel/labextension"  # the sources, and where their build goes
# What a build needs in the build environment: jlpm (JupyterLab's) and the npm runner.
BUILD_NEEDS = ["hatch-jupyter-builder>=0.9", "jupyterlab>=4.1,<5"]
log = logging.getLogger("rlm_kernel.build")


def _node_version() -> tuple[int, int] | None:
    node = shutil.which("node")
    if node is None:
        return None
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout
        major, minor = version.strip().lstrip("v").split(".")[:2]
        return int(major), int(minor)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return None


def _usable(version: tuple[int, int] | None) -> bool:
    return version is not None and (version >= (22, 12) or (20, 19) <= version < (21, 0))


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return [p for p in path.rglob("*") if p.is_file() and "__tests__" not in p.parts]


def _complete(out: Path) -> bool:
    """A whole build, not a stray file of one: the manifest and the federated entry point."""
    return (out / "package.json").is_file() and any((out / "static").glob("remoteEntry.*.js"))


def sources_digest(package: Path) -> str:
    """The SHA-256 of what the build reads: each source file's path and bytes, in order. A clone
    keeps no build times, so a build says by this digest which sources it was built from."""
    digest = hashlib.sha256()
    files = sorted(f for name in SOURCES if (package / name).exists() for f in _files(package / name))
    for f in files:
        digest.update(f.relative_to(package).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()


def _up_to_date(out: Path, package: Path) -> bool:
    stamp = out / STAMP
    return _complete(out) and stamp.is_file() and stamp.read_text().strip() == sources_digest(package)


def _skipped() -> bool:
    return os.environ.get("HATCH_JUPYTER_BUILDER_SKIP_NPM") == "1"


def _to_build(out: Path, package: Path) -> bool:
    """Whether there is a build to run: stale or missing output, and a Node.js to run it with."""
    return not _skipped() and not _up_to_date(out, package) and _usable(_node_version())


def build(root: Path, target_name: str = "wheel", version: str = "standard") -> None:
    package, out = root / PACKAGE, root / OUT
    if _skipped():
        log.info("rlm-kernel: HATCH_JUPYTER_BUILDER_SKIP_NPM=1, not building the JupyterLab extension")
        return
    if _up_to_date(out, package):
        log.info("rlm-kernel: the JupyterLab extension in %s is up to date", out)
        return
    node = _node_version()
    if not _usable(node):
        found = "no Node.js" if node is None else f"Node.js {node[0]}.{node[1]}"
        log.warning(
            "rlm-kernel: %s found, so the JupyterLab extension is not built%s. Install Node.js %s "
            "and reinstall to get each RLM step as a notebook cell.",
            found,
            " (the older build in rlm_kernel/labextension is used)" if _complete(out) else "",
            NODE_OK,
        )
        return
    from hatch_jupyter_builder import npm_builder  # in BUILD_NEEDS, installed only when it builds

    # the production build for an editable install too: the one committed and shipped
    npm_builder(
        target_name,
        version,
        path=str(package),
        build_dir=str(out),
        build_cmd="build:prod",
        npm=["jlpm"],
        force=True,
    )
    (out / STAMP).write_text(sources_digest(package) + "\n")


def get_build_hook() -> type:
    """The hook hatchling loads. Its class is made here, so that running this file (below) or
    reading its digest needs no hatchling."""
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface

    class LabExtensionHook(BuildHookInterface):
        PLUGIN_NAME = "custom"

        def dependencies(self) -> list[str]:
            root = Path(self.root)
            return list(BUILD_NEEDS) if _to_build(root / OUT, root / PACKAGE) else []

        def initialize(self, version: str, build_data: dict[str, Any]) -> None:
            if self.target_name in ("wheel", "sdist"):
                build(Path(self.root), self.target_name, version)

    return LabExtensionHook


if __name__ == "__main__":  # python labextension/hatch_build.py: the production build to commit, stamped
    here = Path(__file__).resolve().parent
    subprocess.run(["jlpm", "install"], cwd=here, check=True)
    subprocess.run(["jlpm", "build:prod"], cwd=here, check=True)
    (here.parent / "rlm_kernel" / "labextension" / STAMP).write_text(sources_digest(here) + "\n")
