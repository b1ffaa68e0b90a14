"""The context's preview costs what the preview shows, not what the context holds."""

from __future__ import annotations

import tracemalloc
from collections import OrderedDict
from typing import Any

import pytest

from rlm_kernel.prompts import PREVIEW_CHARS, context_metadata, describe_context


class Counted:
    """An item whose ``repr`` counts its calls."""

    calls = 0

    def __init__(self, n: int) -> None:
        self.n = n

    def __repr__(self) -> str:
        Counted.calls += 1
        return f"C{self.n}"


SMALL: list[Any] = [
    [],
    [1, "two", 3.0, None],
    [[1, [2, [3]]], {"a": (1,)}],
    {},
    {"a": 1, "b": [1, 2], 3: {"c": "d"}},
    (1,),
    (1, 2, "x"),
    set(),
    {1, 2},
    frozenset({3}),
    ["it's", 'say "hi"', b"bytes", "é\n\t"],
]


@pytest.mark.parametrize("context", SMALL, ids=repr)
def test_a_small_context_previews_as_its_repr(context: Any) -> None:
    assert context_metadata(context)["preview"] == repr(context)


def test_a_long_list_or_dict_shows_its_first_items_then_dots() -> None:
    assert context_metadata(list(range(100)))["preview"] == "[0, 1, 2, 3, 4, ...]"
    assert (
        context_metadata(dict.fromkeys("abcdefg", 0))["preview"]
        == "{'a': 0, 'b': 0, 'c': 0, 'd': 0, 'e': 0, ...}"
    )
    assert context_metadata(OrderedDict(a=1))["preview"] == "{'a': 1}"
    long = context_metadata(["x" * 1000, "y"])["preview"]
    assert long == repr(["x" * 1000, "y"])[:PREVIEW_CHARS]
    assert context_metadata("abc" * 100)["preview"] == ("abc" * 100)[:PREVIEW_CHARS]


def test_a_huge_list_reprs_only_the_items_shown() -> None:
    Counted.calls = 0
    meta = context_metadata([Counted(i) for i in range(200_000)])
    assert meta["preview"] == "[C0, C1, C2, C3, C4, ...]"
    assert Counted.calls == 5
    assert meta["items"] == 200_000
    assert "It begins: '[C0, C1, C2, C3, C4, ...]'" in describe_context(meta)


def test_nested_containers_are_walked_only_as_far_as_shown() -> None:
    Counted.calls = 0
    context = {"rows": [[Counted(i) for i in range(1000)] for _ in range(1000)], "more": Counted(-1)}
    assert context_metadata(context)["preview"].startswith("{'rows': [[C0, C1, C2, C3, C4, ...], [C0,")
    assert Counted.calls <= 30


def test_big_items_are_cut_before_their_repr_is_built() -> None:
    context = ["x" * 20_000_000, {"k": "y" * 20_000_000}, b"z" * 20_000_000]
    tracemalloc.start()
    try:
        preview = context_metadata(context)["preview"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert preview == "['" + "x" * (PREVIEW_CHARS - 2)
    assert peak < 1_000_000  # the whole repr would be 60 MB


def test_a_list_that_holds_itself_is_shown_as_repr_shows_it() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert context_metadata(loop)["preview"] == repr(loop) == "[1, [...]]"
