"""A printed report's table read as a pandas user reads it: the lines that are rows, their
columns' places, and the section fields of the title lines above them."""

from __future__ import annotations

from typing import Any

import pytest

from rlm_kernel.prompts import context_metadata, describe_context, opening_messages
from rlm_kernel.text_tables import report_layout, report_load
from rlm_kernel.worked import reply_start

RULE = "-" * 72
HEADER = "ORDER   PART NO      DESCRIPTION            QTY     HOURS  TECH  DONE"


def _order(n: int, line: str) -> str:
    qty = 1 + n % 4
    hours = f"{1000 + 37 * n:,}" if n % 5 == 0 else str(3 + n % 9)
    done = "" if n % 3 == 0 else "Y"
    part = f"P-{4000 + n}"
    return f"{n:<8}{part:<13}{'Bearing, ' + line:<23}{qty:>3}  {hours:>8}  T{n % 7:<5}{done}".rstrip()


def paged_report(shifts: dict[str, int]) -> str:
    """A plant's work orders by line and shift, a page each, as a maintenance system prints them."""
    out: list[str] = []
    n = 100
    for page, (line, orders) in enumerate(shifts.items(), start=1):
        out += [
            "NORTHFIELD PLANT - MAINTENANCE WORK ORDERS                      PRINTED: 03/02/2025",
            f"LINE: {line}     SHIFT: {'AB'[page % 2]}     SUPERVISOR: R. OKAFOR          PAGE: {page}",
            RULE,
            HEADER,
            RULE,
        ]
        for _ in range(orders):
            out.append(_order(n, line))
            n += 1
        out += ["", f"TOTAL {line}: ORDERS {orders}", "\f"]
    return "\n".join([*out, "*** END ***"])


def test_a_paged_report_becomes_one_frame_with_each_row_s_section() -> None:
    pd = pytest.importorskip("pandas")
    text = paged_report({"PRESS 4": 9, "PAINT": 7, "ASSEMBLY EAST": 12})
    layout = report_layout(text)
    assert layout is not None
    assert layout["names"] == ["ORDER", "PART NO", "DESCRIPTION", "QTY", "HOURS", "TECH", "DONE"]
    assert layout["fields"] == ["LINE", "SHIFT", "PAGE"]  # PRINTED and SUPERVISOR stay the same
    namespace: dict[str, Any] = {"context": text}
    exec(report_load(layout), namespace)
    df = namespace["df"]
    assert len(df) == 28 and list(df["ORDER"]) == list(range(100, 128))  # no title, rule or total
    assert df.groupby("LINE", sort=False).size().to_dict() == {"PRESS 4": 9, "PAINT": 7, "ASSEMBLY EAST": 12}
    assert df["HOURS"].dtype.kind == "i" and df.loc[df["ORDER"] == 100, "HOURS"].item() == 4700
    assert df["DESCRIPTION"].iloc[0] == "Bearing, PRESS 4" and df["DONE"].isna().sum() == 9
    assert pd.api.types.is_numeric_dtype(df["QTY"])


def test_a_report_of_one_section_is_read_without_fields() -> None:
    pytest.importorskip("pandas")
    text = paged_report({"PRESS 4": 9})
    layout = report_layout(text)
    assert layout is not None and layout["fields"] == []
    load = report_load(layout)
    assert "sections" not in load and "rows = []\nfor line in context.splitlines():" in load
    namespace: dict[str, Any] = {"context": text}
    exec(load, namespace)
    assert len(namespace["df"]) == 9


def test_the_root_is_shown_the_report_s_title_lines_and_the_lines_that_read_it() -> None:
    pytest.importorskip("pandas")
    text = paged_report({"PRESS 4": 9, "PAINT": 7})
    meta = context_metadata(text)
    assert meta["format"] == "report" and meta["dims"] == [16, 10]
    described = describe_context(meta)
    assert "a printed report, a table of aligned columns under title lines" in described
    assert "NORTHFIELD PLANT - MAINTENANCE WORK ORDERS" in described  # its title, as it begins
    assert described.endswith(meta["load"])
    start, _ = reply_start(meta, "How many orders of line PAINT are done?")
    assert start.startswith("```repl\n" + meta["load"])
    # the worked examples are a report too: its lines, then the question's code, then the answer
    turns = opening_messages(
        profile="small", question="How many orders of line PAINT are done?", context_meta=meta
    )
    example = next(t["content"] for t in turns if t["role"] == "assistant")
    assert (
        "cut = re.compile(" in example and "df = pd.concat([pd.DataFrame(sections), df], axis=1)\n" in example
    )
    assert example.rstrip("`\n").endswith("print(n)")
    assert "a printed report" in turns[1]["content"] and "SHOPS REGISTER" in turns[1]["content"]


@pytest.mark.parametrize(
    "text",
    [
        # prose: lines of words, some of them under one another by chance
        "\n".join(
            f"The parts list {i} has nothing to do with the actual position in the bay." for i in range(30)
        ),
        # a table whose rows fill few of their columns
        "A    B    C    D    E    F\n" + "\n".join(f"{i}" for i in range(20)),
        # a table that is the whole text: the plain read_fwf reads it
        "\n".join([HEADER, *(_order(n, "PAINT") for n in range(5))]),
    ],
)
def test_text_that_is_no_report_is_left_to_the_other_readers(text: str) -> None:
    layout = report_layout(text)
    assert layout is None or text.startswith(HEADER)
    if layout is not None:  # a table alone: aligned_layout is asked first
        pytest.importorskip("pandas")
        assert context_metadata(text)["format"] == "fwf"
