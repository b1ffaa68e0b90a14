"""Text tables: columns aligned under a header, as a command prints them or a report on paper.

:func:`aligned_layout` reads a table that is the whole text (``kubectl get``, ``docker ps``,
``df -h``): ``pd.read_fwf`` with the columns' places. :func:`report_layout` reads a printed
report, where title lines, rules of dashes, page breaks and totals come around the table and its
header starts again on each page or section (a terminal's discharge list, a maintenance system's
work orders). Its rows are the lines with characters in most columns and none across a column's
start; the ``KEY: value`` fields of the title lines that change from one section to the next
(``VESSEL: NORTHERN VALOUR``) go beside the rows under them. Both give the lines a pandas user
would write, and nothing of our own to learn. A header whose names stand one space apart
(``Er NI Ee Pension``), or a section's line inside the table under its header, is not read: such
a report stays text.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

_COLUMN_NAME = re.compile(r"[%#]?[A-Za-z_][\w.%/()#-]{0,40}")  # a word of one: NAME, %CPU, Use%


def aligned_layout(text: str) -> dict[str, Any] | None:
    """How ``pd.read_fwf`` reads a table of aligned columns, as its ``colspecs``: a header line of
    names, then rows whose values keep to the header's places (``kubectl get``, ``docker ps``,
    ``df -h``). A column is where the rows have characters, with the names above it; a name of
    two words (``NOMINATED NODE``) and values with spaces (``Up 2 hours``) stay one column. None
    for other text, or where a value would be cut in two."""
    chunk = text[:16384]
    lines = chunk.splitlines()[:60]
    if len(chunk) < len(text) and len(lines) > 1:
        lines.pop()  # it may be cut
    lines = [line.rstrip() for line in lines if line.strip()]
    if len(lines) < 4 or any("\t" in line for line in lines):
        return None
    header, rows = lines[0], lines[1:]
    tokens = [(m.start(), m.end()) for m in re.finditer(r"\S+", header)]
    if (
        not all(_COLUMN_NAME.fullmatch(header[a:b]) for a, b in tokens)
        or sum(row.split() == header.split() for row in rows) > len(rows) / 2
    ):
        return None
    starts = _column_starts(tokens, rows)
    if starts is None or len(starts) < 3 or not kept_to(starts, lines):
        return None
    return {"colspecs": [*itertools.pairwise(starts), (starts[-1], None)]}


def _column_starts(tokens: list[tuple[int, int]], rows: list[str]) -> list[int] | None:
    """Where each column starts: its values' or its name's first character, whichever is first."""
    width = max(map(len, rows))
    filled = "".join("1" if any(i < len(r) and r[i] != " " for r in rows) else "0" for i in range(width))
    runs = [m.span() for m in re.finditer("1+", filled)]
    column = list(range(len(runs)))  # the column each run of characters is part of
    owner = _names_over(tokens, runs, column)
    if owner is None:
        return None
    starts: list[int] = []
    first_words: list[int] = []
    for j, (s, _) in enumerate(runs):
        if column[j] != j:
            continue
        if named := [k for k, o in owner.items() if column[o] == j]:
            starts.append(min(s, tokens[min(named)][0]))
            first_words.append(min(named))
        elif not starts or tokens[first_words[-1]][0] != starts[-1]:
            return None  # values with no name, right of a column that is not left-aligned
    return starts


def _names_over(
    tokens: list[tuple[int, int]], runs: list[tuple[int, int]], column: list[int]
) -> dict[int, int] | None:
    """The run of values under each word of the header, joining runs under one word into one
    column (values with spaces); a word over none is part of the name beside it (``NOMINATED
    NODE``). None where a word is neither."""
    owner: dict[int, int] = {}
    for k, (a, b) in enumerate(tokens):
        under = [j for j, (s, e) in enumerate(runs) if a < e and s < b]
        for j in under:
            column[j] = column[under[0]]
        if under:
            owner[k] = under[0]
    for k, (a, b) in enumerate(tokens):
        if k in owner:
            continue
        if k - 1 in owner and a - tokens[k - 1][1] == 1:
            owner[k] = owner[k - 1]
        elif k + 1 in owner and tokens[k + 1][0] - b == 1:
            owner[k] = owner[k + 1]
        else:
            return None
    return owner


def kept_to(starts: list[int], lines: list[str]) -> bool:
    """No value cut in two at a column's start, and no two names in one column."""
    header = lines[0]
    cut = any(0 < s < len(line) and line[s - 1] != " " and line[s] != " " for line in lines for s in starts)
    names = [header[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
    return not cut and not any("  " in name for name in names)


SCAN_CHARS = 1_000_000  # of a report's beginning, where its header and pages are found
SCAN_PAGES = 50  # pages whose rows tell where the columns are
TITLE_LINES = 8  # of a report's lines before its header, shown to the root
NAME_WORDS = 3  # a column's name is a word or a few (GROSS KG, Mounted on)
_RULE = re.compile(r"[-=_*~+|#. ]*")  # a line of dashes, or blank
_FIELD = re.compile(r"\b([A-Z][A-Za-z]*(?: [A-Za-z]+)*): +(\S+(?: \S+)*)")  # VESSEL: NORTHERN VALOUR
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def report_layout(text: str) -> dict[str, Any] | None:
    """A printed report's table, or None for other text: its ``colspecs`` and column ``names``;
    ``least``, the columns a row fills at the fewest; ``fields``, the section fields its rows
    take from the title lines above them; ``thousands`` where numbers are written ``26,852``;
    and ``title``, the lines before its header."""
    lines = text[:SCAN_CHARS].splitlines()
    for at, header in enumerate(lines[:40]):
        tokens = [(m.start(), m.end()) for m in re.finditer(r"\S+", header)]
        if len(tokens) < 3 or not all(_COLUMN_NAME.fullmatch(header[a:b]) for a, b in tokens):
            continue
        if len(_first_rows(lines[at + 1 :])) < 3:
            continue
        # the rows under every page's header: a column may be empty on the first page
        words = header.split()
        under = [k for k, line in enumerate(lines) if k >= at and line.split() == words]
        rows = [row for k in under[:SCAN_PAGES] for row in _first_rows(lines[k + 1 :])]
        starts = _column_starts(tokens, rows)
        if starts is None or len(starts) < 3 or not kept_to(starts, [header.rstrip(), *rows]):
            continue
        colspecs = [*itertools.pairwise(starts), (starts[-1], None)]
        names = [header[a:b].strip() for a, b in colspecs]
        least = min(sum(bool(row[a:b].strip()) for a, b in colspecs) for row in rows)
        if 2 * least < len(colspecs) or any(len(name.split()) > NAME_WORDS for name in names):
            continue  # rows that fill few of their columns, or names that are sentences: prose
        layout = {"colspecs": colspecs, "names": names, "least": least}
        values = [row[a:b].strip() for row in rows for a, b in colspecs]
        return {
            **layout,
            "fields": _section_fields(text, layout),
            "thousands": any(_THOUSANDS.fullmatch(v) for v in values),
            "title": [line.rstrip() for line in lines[:at] if not _RULE.fullmatch(line)][:TITLE_LINES],
        }
    return None


def _first_rows(lines: list[str]) -> list[str]:
    """The lines under a header, past a rule, up to the first blank line, rule or end."""
    rows = list(
        itertools.takewhile(
            lambda line: not _RULE.fullmatch(line),
            itertools.dropwhile(lambda line: _RULE.fullmatch(line) and line.strip(), lines),
        )
    )
    return [row.rstrip() for row in rows]


def cut_at(colspecs: list[tuple[int, int | None]]) -> str:
    """The pattern of a line with a value across a column's start (a title line, no row)."""
    return "^(?:" + "|".join(f".{{{start - 1}}}" for start, _ in colspecs[1:]) + r")\S\S"


def _is_row(line: str, layout: dict[str, Any], cut: re.Pattern[str]) -> bool:
    """Characters in ``least`` columns or more, none across a column's start (``cut``, from
    :func:`cut_at`), and not the header."""
    colspecs = layout["colspecs"]
    return (
        sum(bool(line[a:b].strip()) for a, b in colspecs) >= layout["least"]
        and not cut.match(line)
        and line[: colspecs[0][1]].strip() != layout["names"][0]
    )


def _section_fields(text: str, layout: dict[str, Any]) -> list[str]:
    """The ``KEY`` of each ``KEY: value`` on lines that are not rows whose value changes from one
    section to the next, in the order they come, as the report's first pages show them."""
    cut = re.compile(cut_at(layout["colspecs"]))
    seen: dict[str, set[str]] = {}
    for line in text[:SCAN_CHARS].splitlines():
        if ": " in line and not _is_row(line, layout, cut):
            for key, value in _FIELD.findall(line):
                seen.setdefault(key, set()).add(value)
    return [key for key, values in seen.items() if len(values) > 1]


def report_load(layout: dict[str, Any]) -> str:
    """The lines that make a report's rows a DataFrame ``df``: keep the lines that are rows,
    read them with ``pd.read_fwf``, and put each row's section fields first."""
    colspecs, names = layout["colspecs"], layout["names"]
    first = f"line[:{colspecs[0][1]}].strip() != {names[0]!r}"
    read = 'pd.read_fwf(io.StringIO("\\n".join(rows)), colspecs=colspecs, names=names'
    read += ', thousands=",")' if layout["thousands"] else ")"
    fields = "|".join(re.escape(key) for key in layout["fields"])
    return "\n".join(
        [
            "import io",
            "import re",
            "import pandas as pd",
            f"colspecs = {colspecs}",
            f"names = {names}",
            f'cut = re.compile(r"{cut_at(colspecs)}")  # a value across a column\'s start: a title line',
            "rows, sections, section = [], [], {}" if fields else "rows = []",
            "for line in context.splitlines():",
            "    filled = sum(bool(line[a:b].strip()) for a, b in colspecs)",
            f"    if filled >= {layout['least']} and not cut.match(line) and {first}:",
            "        rows.append(line)",
            *(
                [
                    "        sections.append(dict(section))",
                    "    else:  # a title line: the section's fields",
                    f'        section.update(re.findall(r"\\b({fields}): +(\\S+(?: \\S+)*)", line))',
                ]
                if fields
                else []
            ),
            f"df = {read}",
            *(["df = pd.concat([pd.DataFrame(sections), df], axis=1)"] if fields else []),
        ]
    )
