"""The notebooks here run under nbval (``--nbval-lax`` in pyproject.toml), replaying recorded LM
replies; this adds the patterns that make a replay's output comparable to the recorded run's."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "nbval_sanitize_with", "") is None:
        config.option.nbval_sanitize_with = str(Path(__file__).with_name("nbval-sanitize.cfg"))
