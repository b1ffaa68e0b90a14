"""Tools' records: the schema from a signature and docstring, calls checked against it, results as
text, and the calls a small model writes as text."""

from __future__ import annotations

import pytest

from rlm_kernel.errors import ConfigError
from rlm_kernel.tools import Tool, ToolRequest, as_text, calls_in_text, tools_of


def search(query: str, limit: int = 5, *, exact: bool = False) -> list[str]:
    """Find passages that hold the words.

    Longer notes, for the model only.

    Args:
        query: the words to look for
        limit: how many passages at most
    """
    return [query] * limit


def test_the_schema_comes_from_the_signature_and_the_docstring():
    tool = Tool.of(search)
    assert tool.name == "search" and tool.summary == "Find passages that hold the words."
    assert tool.signature == "search(query: str, limit: int = 5, *, exact: bool = False) -> list[str]"
    assert tool.description == "Find passages that hold the words.\n\nLonger notes, for the model only."
    assert tool.parameters["required"] == ["query"]
    props = tool.parameters["properties"]
    assert props["query"] == {"type": "string", "description": "the words to look for"}
    assert props["limit"] == {"type": "integer", "default": 5, "description": "how many passages at most"}
    assert props["exact"] == {"type": "boolean", "default": False}
    assert tool.spec() == {"name": "search", "description": tool.description, "parameters": tool.parameters}


def test_a_call_is_checked_against_the_signature():
    tool = Tool.of(search)
    assert tool.call('{"query": "x", "limit": "2"}') == '["x", "x"]'  # coerced, as pydantic does
    with pytest.raises(ValueError, match="validation error"):
        tool.call('{"limit": 2}')
    with pytest.raises(ValueError, match="not JSON"):
        tool.call("{query")
    with pytest.raises(ValueError, match="must be a JSON object"):
        tool.call('["x"]')


def test_results_read_as_text():
    assert as_text("plain") == "plain"
    assert as_text({"a": [1, 2]}) == '{"a": [1, 2]}'
    assert as_text({1, 2}) in ('"{1, 2}"', '"{2, 1}"')  # anything else by its str


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "search", "arguments": {"query": "x"}}',
        '```json\n{"name": "search", "arguments": {"query": "x"}}\n```',
        '<tool_call>\n{"name": "search", "arguments": {"query": "x"}}\n</tool_call>',
        '{"name": "search", "arguments": {"query": "x"}}\n{"name": "search", "arguments": {"query": "x"}}',
        '{{"name": "search", "arguments": {"query": "x"}}}',
        '{"name": "search", "parameters": {"query": "x"}}',
    ],
)
def test_a_call_written_as_text_is_read(text):
    assert calls_in_text(text, ["search"]) == [ToolRequest("text-call-1", "search", '{"query": "x"}')]


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 4.",
        '{"name": "other", "arguments": {}}',
        '{"name": "search"}',
        '{"answer": 3}',
        "[1, 2]",
    ],
)
def test_anything_else_is_no_call(text):
    assert calls_in_text(text, ["search"]) == []


def test_tool_mistakes_are_config_errors():
    with pytest.raises(ConfigError, match="needs a name that code can call"):
        Tool.of(lambda x: x)
    with pytest.raises(ConfigError, match="must be a function"):
        tools_of({"x": "not a function"})
    assert list(tools_of({"find": search})) == ["find"] and tools_of(None) == {}
