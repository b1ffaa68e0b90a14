"""Fixtures of the red team (tests/redteam/redteam.py has the attacks' helpers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from scripted_server import ScriptedServer


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.parent == Path(__file__).parent:
            item.add_marker(pytest.mark.sandbox)


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv
