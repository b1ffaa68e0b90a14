"""Reading trajectories back: only a half-written last line is forgiven."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import pytest

from rlm_kernel.errors import RLMError
from rlm_kernel.events import Hint
from rlm_kernel.trajectory import (
    SAVED_RUN_KEY,
    SAVED_RUN_VERSION,
    TrajectoryError,
    TrajectoryWriter,
    from_notebook,
    iter_events,
    load,
    saved_run_problem,
)


def _written(path: Path, texts: list[str]) -> list[str]:
    """Writes one hint per text and returns the file's lines."""
    writer = TrajectoryWriter(path)
    for text in texts:
        writer(Hint(run_id="r", text=text))
    writer.close()
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def _texts(path: Path) -> list[str]:
    return [cast(Hint, e).text for e in load(path)]


def test_a_whole_file_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    _written(path, ["a", "b", "c"])
    assert _texts(path) == ["a", "b", "c"]


@pytest.mark.parametrize("cut", [1, 10, -2])
def test_a_half_written_last_line_is_skipped(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "run.jsonl"
    lines = _written(path, ["a", "b", "c"])
    path.write_text("".join(lines[:-1]) + lines[-1][:cut], encoding="utf-8")
    assert _texts(path) == ["a", "b"]


def test_a_last_line_cut_inside_a_character_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    lines = _written(path, ["a", "zoë"])
    raw = "".join(lines).encode("utf-8")
    path.write_bytes(raw[: raw.index("ë".encode()) + 1])  # half of the two bytes of ë
    assert _texts(path) == ["a"]


def test_blank_lines_after_a_cut_last_line_still_leave_it_last(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    lines = _written(path, ["a", "b"])
    path.write_text(lines[0] + lines[1][:5] + "\n\n", encoding="utf-8")
    assert len(load(path)) == 1


def test_a_bad_line_before_the_last_raises_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    lines = _written(path, ["a", "b", "c"])
    path.write_text(lines[0] + lines[1][:7] + "\n" + lines[2], encoding="utf-8")
    with pytest.raises(
        TrajectoryError, match=r"run\.jsonl, line 2: not a trajectory event \(invalid JSON"
    ) as info:
        load(path)
    assert isinstance(info.value, ValueError) and isinstance(info.value, RLMError)
    assert "\n" not in str(info.value)


def test_events_before_a_bad_line_are_yielded_first(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    lines = _written(path, ["a", "b"])
    path.write_text(lines[0] + "{oops\n" + lines[1], encoding="utf-8")
    events = iter_events(path)
    assert cast(Hint, next(events)).text == "a"
    with pytest.raises(TrajectoryError, match="line 2"):
        next(events)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"kind": "no_such_event", "run_id": "r"}', "unknown or missing kind 'no_such_event'"),
        ("[1, 2]", "a JSON list, not an object"),
        ('{"kind": "hint"}', "missing"),
    ],
)
def test_a_whole_line_that_is_not_an_event_raises_even_last(tmp_path: Path, line: str, reason: str) -> None:
    path = tmp_path / "run.jsonl"
    lines = _written(path, ["a"])
    path.write_text(lines[0] + line + "\n", encoding="utf-8")
    with pytest.raises(TrajectoryError, match="line 2") as info:
        load(path)
    assert reason in str(info.value)


def test_the_writer_output_is_one_json_object_a_line(tmp_path: Path) -> None:
    lines = _written(tmp_path / "run.jsonl", ["a\nb"])
    assert len(lines) == 1 and json.loads(lines[0])["text"] == "a\nb"


def _notebook_with(tmp_path: Path, kept: dict[str, object]) -> Path:
    cell = {"cell_type": "code", "source": "%%rlm\nq", "outputs": [{"metadata": {SAVED_RUN_KEY: kept}}]}
    path = tmp_path / "saved.ipynb"
    path.write_text(json.dumps({"cells": [cell]}))
    return path


def test_a_saved_run_of_this_version_or_older_is_read_as_it_is(tmp_path: Path) -> None:
    event = Hint(run_id="r1", parent_id=None, depth=0, text="x").to_dict()
    for version in (None, 0, SAVED_RUN_VERSION):
        assert [
            e.to_dict()
            for e in from_notebook(_notebook_with(tmp_path, {"version": version, "events": [event]}))
        ] == [event]


def test_a_saved_run_from_a_newer_version_is_refused_in_one_line(tmp_path: Path) -> None:
    path = _notebook_with(tmp_path, {"version": SAVED_RUN_VERSION + 1, "events": []})
    with pytest.raises(TrajectoryError) as info:
        from_notebook(path)
    assert "\n" not in str(info.value)
    assert "upgrade rlm-kernel" in str(info.value)
    assert saved_run_problem(SAVED_RUN_VERSION) is None
