"""A machine without some program, for the install tests: the user's PATH with those names left out."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest


def _without(names: tuple[str, ...], farm: Path) -> str:
    """``$PATH`` with each folder that holds one of ``names`` replaced by a folder of links to its
    other programs: the rest of the machine stays as it is."""
    parts: list[str] = []
    for i, folder in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        here = Path(folder)
        if not folder or not any((here / name).exists() for name in names):
            parts.append(folder)
            continue
        copy = farm / str(i)
        copy.mkdir(parents=True)
        for entry in here.iterdir():
            if entry.name not in names:
                (copy / entry.name).symlink_to(entry)
        parts.append(str(copy))
    return os.pathsep.join(parts)


@pytest.fixture(scope="module")
def path_without(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., str]:
    """``path_without("bwrap")``: a PATH on which ``shutil.which("bwrap")`` finds nothing."""
    return lambda *names: _without(names, tmp_path_factory.mktemp("path"))
