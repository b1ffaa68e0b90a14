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


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    """A started :class:`ScriptedServer` that echoes the last user message; set ``.responder``."""
    with ScriptedServer() as server:
        yield server
