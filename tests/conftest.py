"""Shared fixtures: a real scripted LM server per test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# `from scripted_server import Reply, Script, sequence` in any test, and in benchmark scripts.
TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from scripted_server import ScriptedServer  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def local_model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The suite's local model server is its own (not a user's), and stops once the suite's last
    process lets it go, not minutes after."""
    folder = tmp_path_factory.mktemp("llama", numbered=False)
    folder.chmod(0o700)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLM_LOCAL_SERVER_DIR", str(folder))
        patch.setenv("RLM_LOCAL_SERVER_IDLE", "0")
        yield


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``sandbox`` (the kernel and gateway executors) skip where bubblewrap cannot make a
    sandbox, with the reason; .ci/run installs it."""
    if not any("sandbox" in item.keywords for item in items):
        return
    from rlm_kernel.executors.sandbox import problem

    if (why := problem()) is not None:
        skip = pytest.mark.skip(reason=f"no sandbox here: {why}")
        for item in items:
            if "sandbox" in item.keywords:
                item.add_marker(skip)


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    """A started :class:`ScriptedServer` that echoes the last user message; set ``.responder``."""
    with ScriptedServer() as server:
        yield server
