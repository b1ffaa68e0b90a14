"""The protocol is declared once (rlm_kernel/messages.py, rlm_kernel/events.py): the extension's
generated schema and docs/protocol.md must agree with it, field by field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rlm_kernel import messages as m

ROOT = Path(__file__).resolve().parents[2]


def test_the_extensions_schema_is_generated_from_the_python():
    committed = (ROOT / "labextension" / "src" / "schema.ts").read_text()
    assert committed == m.typescript(), (
        "labextension/src/schema.ts is stale: run python -m rlm_kernel.messages > labextension/src/schema.ts"
    )


def _doc_tables() -> dict[str, dict[str, set[str]]]:
    """Section heading -> first column (a `name`) -> the `names` in its row, for each table row."""
    sections: dict[str, dict[str, set[str]]] = {}
    rows: dict[str, set[str]] = {}
    for line in (ROOT / "docs" / "protocol.md").read_text().splitlines():
        if line.startswith("## "):
            rows = sections.setdefault(line[3:].strip(), {})
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and (name := re.fullmatch(r"`(\w+)`", cells[0])):
            rows.setdefault(name.group(1), set()).update(re.findall(r"`(\w+)`", " ".join(cells[1:])))
    return sections


def _check(section: str, name: str, fields: set[str]) -> None:
    rows = _doc_tables()[section]
    assert name in rows, f"docs/protocol.md, {section}: no row for {name}"
    missing = fields - rows[name]
    assert not missing, f"docs/protocol.md, {section}: {name} lacks {sorted(missing)}"


@pytest.mark.parametrize("cls", m.KERNEL_MESSAGES, ids=lambda c: c.type)
def test_the_doc_lists_every_kernel_message_with_every_field(cls):
    _check("Kernel → front end", cls.type, {name for name, _, _ in m.fields_of(cls)})


@pytest.mark.parametrize("cls", m.FRONTEND_MESSAGES[1:], ids=lambda c: c.type)
def test_the_doc_lists_every_front_end_message_with_every_field(cls):
    _check("Front end → kernel", cls.type, {name for name, _, _ in m.fields_of(cls)})


@pytest.mark.parametrize("cls", m.EVENTS, ids=lambda c: c.kind)
def test_the_doc_lists_every_event_with_every_field(cls):
    common = {"run_id", "parent_id", "depth", "ts"}
    _check("Events", cls.kind, {name for name, _, _ in m.fields_of(cls)} - common)


def test_the_doc_names_the_protocol_version():
    assert f"(version {m.PROTOCOL_VERSION})" in (ROOT / "docs" / "protocol.md").read_text()


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"type": "stop", "run_id": "r"}, m.Stop(run_id="r")),
        ({"type": "set_mode", "mode": "step"}, m.SetMode(mode="step")),
        ({"type": "cell_inserted", "run_id": "r", "step": 2, "cell_id": "c", "extra": 1}, None),
        ({"type": "set_mode", "run_id": "r", "mode": "turbo"}, None),
        ({"type": "cell_inserted", "run_id": "r", "step": "2", "cell_id": "c"}, None),
        ({"type": "hint", "run_id": "r"}, None),
        ({"type": "future_thing"}, None),
        ("stop", None),
    ],
)
def test_front_end_messages_are_read_with_their_types(data, expected):
    if isinstance(data, dict) and data.get("type") == "cell_inserted" and "extra" in data:
        expected = m.CellInserted(run_id="r", step=2, cell_id="c")  # unknown fields are ignored
    assert m.parse_frontend(data) == expected


def test_a_version_mismatch_is_one_line_that_says_what_to_do():
    assert m.version_problem(m.PROTOCOL_VERSION) is None
    line = m.version_problem(1)
    assert line is not None and "\n" not in line
    assert line.startswith(
        f"the extension speaks protocol 1, the kernel {m.PROTOCOL_VERSION}: reinstall rlm-kernel"
    )
    assert "sent no protocol version" in (m.version_problem(None) or "")


def test_messages_serialize_with_their_type():
    finished = m.RunFinished(run_id="r", answer=None, error="boom", stop="error")
    assert finished.to_dict() == {
        "type": "run_finished",
        "run_id": "r",
        "answer": None,
        "answer_markdown": None,
        "error": "boom",
        "stop": "error",
        "after_cell_id": None,
        "usage": "",
    }
