"""A structured context as what it is, in the library that fits it.

Small code models have read pandas, ``json``, ``csv`` and ``re`` a million times and our helpers
never, so the root is shown rows as a pandas DataFrame would show them (shape, dtypes, first rows)
with the lines that load them, run here first on the context itself:

=========================  ==============================================================
the context                the lines the root is given
=========================  ==============================================================
a list of flat dicts       ``df = pd.DataFrame(context)``
a dict of flat dicts       ``df = pd.DataFrame.from_dict(context, orient="index")``
CSV text                   ``df = pd.read_csv(io.StringIO(context))`` (as :func:`csv_layout` reads it)
a text table               ``df = pd.read_fwf(io.StringIO(context), colspecs=[...])`` (columns aligned
                           under a header, as ``kubectl get``, ``docker ps`` and ``df -h`` print
                           them: :mod:`.text_tables`)
a printed report           the same of the lines that are rows, beside the section fields of the
                           title lines above them (pages of a discharge list, work orders)
JSON text of records       ``df = pd.DataFrame(json.loads(context))``
other JSON text            ``data = json.loads(context)``
a dict of columns          ``df = pd.DataFrame(context)`` (lists of one length)
rows without names         ``df = pd.DataFrame(context)`` (tuples of one length; columns 0, 1, ...)
records with nested fields ``df = pd.json_normalize(context)`` (a dict's records under its
                           keys, or the list of records inside it that holds the most), a
                           table of each list of records in a field, one row per item, and
                           one of each other list of records beside them
XML text                   ``data = xmltodict.parse(context, ...)``, then the same as records
                           with nested fields, their numbers made numbers
a dict of files            ``df = pd.DataFrame({"path": list(context), "text": list(context.values())})``,
                           with their paths and sizes and the first file's start
text made of records       ``df = pd.DataFrame({"text": re.split(<where a record starts>, context.strip())})``
                           (a git log, a mailbox, subtitles: :mod:`.text_records`)
a dict of DataFrames       none: each one's shape, dtypes and first rows
=========================  ==============================================================

pandas is optional (the ``eval`` extra): without it rows load with ``json``, ``csv`` or as they
are, and the root sees the description it saw before. Everything here is JSON-able metadata,
made from a sample of the rows: the context itself never leaves the process.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import keyword
import re
import reprlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .text_records import files_load, first_file, has_pandas
from .text_tables import aligned_layout, kept_to, report_layout, report_load

__all__ = [
    "LOADS",
    "ROW_LOADS",
    "csv_separator",
    "csv_layout",
    "aligned_layout",
    "report_layout",
    "table_metadata",
    "json_metadata",
    "xml_metadata",
    "files_metadata",
    "frames_metadata",
    "frame_names",
    "nested_metadata",
    "describe_structured",
]

SAMPLE_ROWS = 2000  # rows a DataFrame is built from to read its dtypes and first rows
FULL_PARSE_CHARS = 5_000_000  # CSV text up to this size is parsed whole, to count its rows
FILES_SHOWN = 12
FRAMES_SHOWN = 8
COLUMNS_SHOWN = 30
ROWS_SHOWN = 3
HEAD_COLUMNS = 8  # of a frame's first rows
CHILDREN_SHOWN = 3  # tables made of lists of records inside the records
SIBLINGS_SHOWN = 3  # tables made of the other lists of records beside them
OTHERS_SHOWN, OTHER_CHARS = 8, 160  # the other keys of a dict that holds the records, as repr shows them
RECORDS_DEPTH = 4  # keys down through dicts where records are looked for
OUTER_ROWS, ITEMS_PER_OUTER = 10, 5  # records this few, holding this many items each: pages of items


# The lines that load rows, by where they are: as a DataFrame ``df`` with pandas, else as a list
# of dicts ``rows`` with the standard library.
LOADS = {
    "list": "import pandas as pd\ndf = pd.DataFrame(context)",
    "dict": 'import pandas as pd\ndf = pd.DataFrame.from_dict(context, orient="index")',
    "csv": "import io\nimport pandas as pd\ndf = pd.read_csv(io.StringIO(context){sep})",
    "fwf": "import io\nimport pandas as pd\ndf = pd.read_fwf(io.StringIO(context){sep})",
    "json": "import json\nimport pandas as pd\ndf = pd.DataFrame(json.loads(context))",
}
_PARSE_JSON = "import json\nimport pandas as pd\ndata = json.loads(context)"
ROW_LOADS = {
    "list": "rows = context",
    "dict": "rows = list(context.values())",
    "csv": "import csv\nimport io\nrows = list(csv.DictReader(io.StringIO(context){sep}))",
    "json": "import json\nrows = json.loads(context)",
}


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _records(values: Sequence[Any]) -> bool:
    """Dicts whose values are all scalars: rows that make a DataFrame of plain columns."""
    return bool(values) and all(
        isinstance(v, Mapping) and v and all(_scalar(x) for x in v.values()) for v in values
    )


def _frame_meta(df: Any, rows: int | None = None) -> dict[str, Any]:
    """A DataFrame's shape, columns with their dtypes, and first rows, as :mod:`prompts` shows them.
    A column of lists or dicts says so (``list``, ``dict``) where pandas would say ``object``."""
    columns = itertools.islice(df.dtypes.items(), COLUMNS_SHOWN)
    return {
        "dims": [int(rows if rows is not None else df.shape[0]), int(df.shape[1])],
        "columns": {str(k): _dtype(df[k], v) for k, v in columns},
        "head": _head(df, df.shape[1]),
    }


def _head(df: Any, columns: int) -> str:
    """The first rows of a frame's first ``columns`` columns (``HEAD_COLUMNS`` at most): a wide
    frame's rows are long lines that a small model copies instead of reading."""
    return df.iloc[:ROWS_SHOWN, : min(columns, HEAD_COLUMNS)].to_string(max_colwidth=40)


def _dtype(column: Any, dtype: Any) -> str:
    if str(dtype) != "object" or getattr(column, "ndim", 1) != 1:
        return str(dtype)
    kinds = {type(v).__name__ for v in itertools.islice(column, 200) if isinstance(v, (list, dict))}
    return kinds.pop() if len(kinds) == 1 else str(dtype)


def csv_separator(text: str) -> str | None:
    """The separator of CSV text (a header row of field names, then rows with as many separators,
    maybe after a few lines about the file), or None when it is not CSV."""
    layout = csv_layout(text)
    return None if layout is None else layout["sep"]


def csv_layout(text: str) -> dict[str, Any] | None:
    """How ``pd.read_csv`` reads CSV text, as its keywords: ``sep``; ``skiprows`` where a header of
    field names follows a few lines about the file (an export's account, period and currency);
    ``decimal=","`` (and ``thousands="."``) where numbers are written ``1.234,56``; and the
    columns of day-first dates (``31.01.2024``) to parse, with ``dayfirst``. None when it is not CSV."""
    chunk = text[:16384]
    head = chunk.splitlines()[:60]
    if len(chunk) < len(text) and len(head) > 1:
        head.pop()  # it may be cut
    for sep in (",", "\t", ";", "|"):
        if (skip := _header_at(head, sep)) is not None:
            return {"sep": sep, **({"skiprows": skip} if skip else {}), **_numbers(head[skip:], sep)}
    return None


def _header_at(head: list[str], sep: str) -> int | None:
    """The line where a header of field names starts the rows: the first line, when every line
    has as many separators as it; else a line from which every line does, to the end; else the
    first line, when the next few have as many separators as it."""
    counts = [len(_split(line, sep)) - 1 for line in head]
    for start in range(min(30, len(head) - 4) if len(head) > 5 else 1):
        n = counts[start]
        if n >= 1 and all(c == n for c in counts[start:]) and _names(head[start], sep):
            return start
    first = counts[:5] if len(head) > 5 else counts[:-1] if len(head) > 2 else []
    if first and first[0] >= 1 and len(set(first)) == 1 and _names(head[0], sep):
        return 0
    return None


def _split(line: str, sep: str) -> list[str]:
    """A line's fields as ``read_csv`` splits them: a quoted field may hold the separator."""
    try:
        return next(csv.reader([line], delimiter=sep), [])
    except csv.Error:
        return line.split(sep)


def _names(line: str, sep: str) -> bool:
    fields = [field.strip() for field in _split(line, sep)]
    return all(_HEADER_FIELD.fullmatch(f) and len(f.split()) <= HEADER_WORDS for f in fields)


_COMMA_DECIMAL = re.compile(r"-?\d{1,3}(?:\.\d{3})+,\d+|-?\d+,\d+")
_DOT_DECIMAL = re.compile(r"-?\d+\.\d+")
_DAY_FIRST = re.compile(r"\d{1,2}\.\d{1,2}\.\d{4}|(?:1[3-9]|2\d|3[01])/\d{1,2}/\d{4}")


_NUMBER_FIELD = re.compile(r"-?[\d,.]*\d%?")
_PLACEHOLDERS = ("-", "--", "\u2013", "\u2014", "?")  # what exports write for "no value"


def _numbers(lines: list[str], sep: str) -> dict[str, Any]:
    """read_csv's keywords for how the rows write numbers and dates, and ``na_values`` where a
    column of numbers writes a missing one as a dash (a gradebook's ``-``)."""
    if len(lines) < 2:
        return {}
    names = [field.strip() for field in _split(lines[0], sep)]
    rows = [[field.strip() for field in _split(line, sep)] for line in lines[1:]]
    columns = [[row[k] for row in rows if len(row) > k and row[k]] for k in range(len(names))]
    marks = {
        value
        for column in columns
        if (numbers := sum(map(bool, map(_NUMBER_FIELD.fullmatch, column))))
        and len(holes := {v for v in column if not _NUMBER_FIELD.fullmatch(v)}) == 1
        and (value := holes.pop()) in _PLACEHOLDERS
        and numbers >= len(column) / 2
    }
    keywords: dict[str, Any] = {"na_values": sorted(marks)} if marks else {}
    if sep == ",":
        return keywords
    fields = [field for row in rows for field in row]
    if any(_COMMA_DECIMAL.fullmatch(f) for f in fields) and not any(
        _DOT_DECIMAL.fullmatch(f) for f in fields
    ):
        keywords["decimal"] = ","
        if any(_COMMA_DECIMAL.fullmatch(f) and "." in f for f in fields):
            keywords["thousands"] = "."
    dates = [
        name
        for k, name in enumerate(names)
        if any(len(row) > k and _DAY_FIRST.fullmatch(row[k]) for row in rows)
        and all(len(row) <= k or not row[k] or _DAY_FIRST.fullmatch(row[k]) for row in rows)
    ]
    if dates:
        keywords.update(parse_dates=dates, dayfirst=True)
    return keywords


HEADER_WORDS = 6  # a field's name is a few words; a longer field is a sentence
# a field's name: words, maybe with a unit or a kind ("Quiz: Bonding (Real)", "Weight (kg)", "Q&A?")
_HEADER_FIELD = re.compile(r"[A-Za-z_#%][\w .:/()&'?%#+-]{0,60}")


def table_metadata(context: Any) -> dict[str, Any] | None:
    """For rows (a list or dict of flat dicts, CSV text, JSON text of records): ``load``, the lines
    that make them a DataFrame ``df`` (or, without pandas, a list of dicts ``rows``), and with
    pandas the frame's ``dims``, ``columns`` (dtypes) and ``head``. None for anything else, or when
    the lines fail on it."""
    pd = _pandas()
    if isinstance(context, str):
        return _text_table(context, pd)
    if isinstance(context, Mapping):
        values = list(itertools.islice(context.values(), SAMPLE_ROWS))
        if not _records(values[:200]):
            return None
        if pd is None:
            return {"load": ROW_LOADS["dict"]}
        df = pd.DataFrame.from_dict(dict(itertools.islice(context.items(), SAMPLE_ROWS)), orient="index")
        return {"load": LOADS["dict"], **_frame_meta(df, len(context))}
    if isinstance(context, Sequence) and not isinstance(context, (bytes, bytearray)):
        sample = list(itertools.islice(context, SAMPLE_ROWS))
        if not _records(sample[:200]):
            return None
        if pd is None:
            return {"load": ROW_LOADS["list"]}
        return {"load": LOADS["list"], **_frame_meta(pd.DataFrame(sample), len(context))}
    return None


def _text_table(text: str, pd: Any) -> dict[str, Any] | None:
    """CSV, a text table of aligned columns (the whole text) or a printed report's table."""
    if (layout := csv_layout(text)) is not None:
        return _csv_metadata(text, layout, pd)
    if pd is None:
        return None
    if (layout := aligned_layout(text)) is not None:
        return _aligned_metadata(text, layout, pd)
    if (layout := report_layout(text)) is not None:
        return _report_metadata(text, layout, pd)
    return None


def _csv_metadata(text: str, layout: dict[str, Any], pd: Any) -> dict[str, Any] | None:
    sep, skip = layout["sep"], layout.get("skiprows", 0)
    if pd is None:
        source = f"context.splitlines()[{skip}:]" if skip else "io.StringIO(context)"
        delimiter = "" if sep == "," else f", delimiter={sep!r}"
        return {"load": ROW_LOADS["csv"].format(sep=delimiter).replace("io.StringIO(context)", source)}
    whole = len(text) <= FULL_PARSE_CHARS
    try:
        df = pd.read_csv(io.StringIO(text), **layout, nrows=None if whole else SAMPLE_ROWS)
    except (ValueError, pd.errors.ParserError):  # the line would fail on it: not offered
        return None
    lines = text.count("\n") + (not text.endswith("\n"))
    rows = df.shape[0] if whole else max(lines - 1 - skip, df.shape[0])
    keywords = "".join(f", {k}={v!r}" for k, v in layout.items() if not (k == "sep" and v == ","))
    return {"load": LOADS["csv"].format(sep=keywords), "format": "csv", **_frame_meta(df, rows)}


def _aligned_metadata(text: str, layout: dict[str, Any], pd: Any) -> dict[str, Any] | None:
    whole = len(text) <= FULL_PARSE_CHARS
    if whole and not kept_to([a for a, _ in layout["colspecs"]], text.splitlines()):
        return None  # rows further on that do not keep to the columns
    try:
        df = pd.read_fwf(io.StringIO(text), **layout, nrows=None if whole else SAMPLE_ROWS)
    except (ValueError, pd.errors.ParserError):
        return None
    rows = df.shape[0] if whole else max(text.count("\n") - 1, df.shape[0])
    return {
        "load": LOADS["fwf"].format(sep=f", colspecs={layout['colspecs']}"),
        "format": "fwf",
        **_frame_meta(df, rows),
    }


def _report_metadata(text: str, layout: dict[str, Any], pd: Any) -> dict[str, Any] | None:
    load = report_load(layout)
    namespace: dict[str, Any] = {"context": text[:FULL_PARSE_CHARS]}
    try:
        exec(load, namespace)  # noqa: S102 - our own lines
    except Exception:  # noqa: BLE001 - lines that fail on the context are not offered
        return None
    df = namespace["df"]
    if len(df) < 3:
        return None
    rows = len(df) if len(text) <= FULL_PARSE_CHARS else round(len(df) * len(text) / FULL_PARSE_CHARS)
    return {
        "load": load,
        "format": "report",
        "title": layout["title"],
        **_frame_meta(df.head(SAMPLE_ROWS), rows),
    }


def json_metadata(text: str) -> dict[str, Any] | None:
    """For JSON text: the lines that parse it, and what they give (records as a DataFrame, with
    pandas; else the parsed value's type, size and first keys). None when it is not JSON."""
    if text.lstrip()[:1] not in ("[", "{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    meta: dict[str, Any] = {"format": "json", "parsed_type": type(data).__name__, "parsed_items": len(data)}
    records = data if isinstance(data, list) else None
    pd = _pandas()
    if records is not None and _records(records[:200]) and pd is not None:
        df = pd.DataFrame(records[:SAMPLE_ROWS])
        return {**meta, "load": LOADS["json"], **_frame_meta(df, len(records))}
    if records is not None and _records(records[:200]):
        return {**meta, "load": ROW_LOADS["json"]}
    if (nested := nested_metadata(data, "data", _PARSE_JSON)) is not None:
        return {**meta, **nested}
    if isinstance(data, dict):
        meta["parsed_keys"] = [str(k)[:60] for k in itertools.islice(data, 20)]
    return {**meta, "load": "import json\ndata = json.loads(context)"}


_XML = re.compile(r"\s*<[?!]?[A-Za-z_]")
# Attributes and text as plain keys: ``df["status"]``, ``df["type.text"]``, not ``df["@status"]``.
_XML_KEYS = {"attr_prefix": "", "cdata_key": "text"}


def xml_metadata(text: str) -> dict[str, Any] | None:
    """For XML text: the lines that make it dicts and lists with ``xmltodict`` (an element that
    repeats anywhere is a list everywhere, one of one included), and tables of its records as
    JSON's are made, their columns of numbers as numbers. None when it is not XML, is longer than
    ``FULL_PARSE_CHARS``, or xmltodict is missing."""
    if not _XML.match(text[:200]) or len(text) > FULL_PARSE_CHARS:
        return None
    try:
        import xmltodict
    except ImportError:
        return None
    try:
        data = xmltodict.parse(text, **_XML_KEYS)
    except Exception:  # noqa: BLE001 - expat's errors, and whatever else is not XML
        return None
    if not isinstance(data, dict) or not data:
        return None
    options: dict[str, Any] = dict(_XML_KEYS)
    if repeated := sorted(_repeated(data)):
        options["force_list"] = repeated
        data = xmltodict.parse(text, **options)
    keywords = "".join(f", {k}={v!r}" for k, v in options.items())
    parse = f"import xmltodict\ndata = xmltodict.parse(context{keywords})"
    meta: dict[str, Any] = {"format": "xml", "parsed_type": "dict", "parsed_items": len(data)}
    if (nested := nested_metadata(data, "data", f"import pandas as pd\n{parse}", numbers=True)) is not None:
        return {**meta, **nested}
    root = next(iter(data.values()))
    if isinstance(root, dict):
        meta["parsed_keys"] = [str(k)[:60] for k in itertools.islice(root, 20)]
    return {**meta, "load": parse}


def _repeated(data: Any) -> set[str]:
    """The keys that hold a list somewhere in parsed XML: its elements that repeat."""
    keys: set[str] = set()
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            keys.update(k for k, v in item.items() if isinstance(v, list))
            stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, (dict, list)))
    return keys


_NUMBER = re.compile(r"[-+]?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _as_numbers(name: str, df: Any) -> str | None:
    """The line that makes numbers of a table's columns whose values are all numbers written as
    text (XML's are all text), or None; ``007`` keeps its zeros, as a code."""
    columns = []
    for column in df.columns:
        values = df[column].dropna()[:SAMPLE_ROWS]
        if len(values) and all(isinstance(v, str) and _NUMBER.fullmatch(v) for v in values):
            columns.append(str(column))
    if not columns:
        return None
    return f'{name}[{columns!r}] = {name}[{columns!r}].apply(pd.to_numeric, errors="coerce")'


def _nested(values: Sequence[Any]) -> bool:
    """Dicts of scalars, dicts and lists, some of them a dict or a list: records with nested fields."""
    if not values or not all(isinstance(v, Mapping) and v for v in values):
        return False
    fields = [x for v in values for x in v.values()]
    if not all(_scalar(x) or isinstance(x, (Mapping, list)) for x in fields):
        return False
    return any(isinstance(x, (Mapping, list)) for x in fields)


def _columns(data: Mapping[str, Any]) -> bool:
    """A dict of lists of scalars, all of one length (two or more): a table by columns."""
    values = list(data.values())
    if len(values) < 2 or not all(isinstance(v, list) and v for v in values):
        return False
    return len({len(v) for v in values}) == 1 and all(_scalar(x) for v in values for x in v[:50])


def _tuples(values: Sequence[Any]) -> bool:
    """Tuples or lists of scalars, all of one length (two or more): rows without names, as a
    database cursor's ``fetchall()`` gives them."""
    if not values or not all(isinstance(v, (tuple, list)) for v in values):
        return False
    return (
        len({len(v) for v in values}) == 1
        and len(values[0]) >= 2
        and all(_scalar(x) for v in values for x in v)
    )


def _records_in(data: Any) -> tuple[tuple[Any, ...], Any] | None:
    """Where the records are in nested data, as the keys that lead to them: the data itself (a
    list of records, or a dict of them by key), or the list of records inside it that holds the
    most values, down through dicts (an RSS feed's items are three keys down); None when there
    are none."""
    if isinstance(data, list):
        return ((), data) if _nested(data[:200]) else None
    if not isinstance(data, Mapping) or not data:
        return None
    if _keyed(data) and _nested(list(itertools.islice(data.values(), 200))):
        return (), data
    found = list(_lists_under(data, ()))
    if not found:
        return None
    _, keys, records = max(found, key=lambda f: f[0])
    return keys, records


def _lists_under(
    data: Mapping[Any, Any], keys: tuple[Any, ...]
) -> Iterator[tuple[int, tuple[Any, ...], Any]]:
    """Each list of records (or dict of them by key) under a dict's keys, with how many values it
    holds (from a sample) and the keys that lead to it: dicts that are not records are looked
    into, ``RECORDS_DEPTH`` keys down."""
    for key, item in itertools.islice(data.items(), 50):
        path = (*keys, key)
        if (sample := _records_sample(item)) is not None:
            yield _leaves(sample[:20]) * len(item) // min(len(sample), 20), path, item
        elif isinstance(item, Mapping) and len(path) < RECORDS_DEPTH:
            yield from _lists_under(item, path)


def _records_sample(item: Any) -> list[Any] | None:
    """The first records of a list of them, or of a dict of them by key; None for anything else."""
    sample = item[:200] if isinstance(item, list) else []
    if isinstance(item, Mapping) and _keyed(item):
        sample = list(itertools.islice(item.values(), 200))
    return sample if len(sample) >= 2 and (_nested(sample) or _records(sample)) else None


def _table_name(name: str) -> str:
    """A table's name from its key's or column's (``frame_names``): ``<name>_df``."""
    return f"{name}_df" if not name.startswith("df") else f"items{name[2:]}_df"


def _leaves(data: Any) -> int:
    """How many values nested data holds: the list of records that holds the most data is the
    table asked about, not a longer list of a few fields each (a wiki's namespaces, beside its
    pages of revisions)."""
    if isinstance(data, Mapping):
        return sum(_leaves(v) for v in data.values())
    if isinstance(data, list):
        return sum(_leaves(v) for v in data)
    return 1


def _keyed(data: Mapping[Any, Any]) -> bool:
    """A dict of records by key (an id, a name): two or more dicts under names, most of which
    share most of their fields (a first entry of another kind aside). A dict whose values hold
    different things (``{"stations": {...}, "trains": {...}}``) is a container of tables, not one
    table: its keys are fields, not data."""
    sample = list(itertools.islice(data.items(), 200))
    if len(sample) < 2 or not all(isinstance(k, str) and isinstance(v, Mapping) and v for k, v in sample):
        return False
    fields = [set(v) for _, v in sample]
    counts = Counter(field for f in fields for field in f)
    shared = [field for field, n in counts.items() if n * 5 >= len(fields) * 4]  # in four of five
    return len(shared) * 2 >= sorted(map(len, fields))[len(fields) // 2]


def _replaced(data: Any, keys: tuple[Any, ...], records: Any) -> Any:
    """The data with the records the keys lead to replaced (by a sample of them), copying only
    the dicts on the way."""
    if not keys:
        return records
    return {**data, keys[0]: _replaced(data[keys[0]], keys[1:], records)}


def _lists_of_records(df: Any) -> list[str]:
    """The columns of a frame that hold lists of dicts."""
    columns = []
    for name in df.columns:
        items = [v for v in itertools.islice(df[name], 200) if isinstance(v, list) and v]
        if items and all(isinstance(x, Mapping) for v in items for x in v[:20]):
            columns.append(str(name))
    return columns


def nested_metadata(
    data: Any, root: str = "context", parse: str | None = None, numbers: bool = False
) -> dict[str, Any] | None:
    """For a dict of columns, or records with nested fields (a list of them, a dict of them by key,
    or a list of them inside a dict): the lines that make them a DataFrame ``df`` with
    ``pd.json_normalize`` (nested dicts become ``a.b`` columns), and for each field that holds a
    list of records a table of its items, one row per item, whose ``row`` is the item's row in
    ``df``. ``root`` names the data in those lines; ``parse``, the lines that import pandas and
    make the data from text, comes first; with ``numbers``, columns of numbers written as text
    are made numbers. The lines are run here first, on a sample; None without pandas, or when they fail."""
    pd = _pandas()
    if pd is None:
        return None
    if isinstance(data, Mapping) and _columns(data):
        load = f"df = pd.DataFrame({root})"
        sample = {key: column[:SAMPLE_ROWS] for key, column in data.items()}
        meta = _run_load(load, {root: sample}, len(next(iter(data.values()))), parse, numbers)
        return None if meta is None else {**meta, "by_columns": True}
    if isinstance(data, list) and _tuples(data[:200]):
        meta = _run_load(f"df = pd.DataFrame({root})", {root: data[:SAMPLE_ROWS]}, len(data), parse, numbers)
        return None if meta is None else {**meta, "by_rows": True}
    found = _records_in(data)
    if found is None:
        return None
    keys, records = found
    path = _path(root, keys)
    if isinstance(records, Mapping):
        sample: Any = dict(itertools.islice(records.items(), SAMPLE_ROWS))
        load = _normalize("df", path, keyed=True)
    else:
        sample = list(itertools.islice(records, SAMPLE_ROWS))
        load = _normalize("df", path)
    container = _at(data, keys[:-1])
    siblings, lines = _siblings(container, keys, root, numbers)
    head = "\n".join([parse or "import pandas as pd", *lines])
    meta = _run_load(load, {root: _replaced(data, keys, sample)}, len(records), head, numbers)
    if meta is None:
        return None
    meta["nested"] = path
    if isinstance(records, Mapping):
        meta["keyed"] = True
    if siblings:
        meta["siblings"] = siblings
    if keys:  # what else the dicts on the way hold, as Python shows it: a table of codes to names, a date
        shown = reprlib.Repr()  # keywords only from Python 3.12
        shown.maxlevel, shown.maxdict, shown.maxlist, shown.maxstring, shown.maxother = 2, 4, 4, 40, 40
        others = [(keys[:depth], _at(data, keys[:depth])) for depth in range(len(keys))]
        tables = {sibling["path"] for sibling in siblings.values()}
        meta["others"] = dict(
            itertools.islice(
                (
                    (_path(root, (*at, key)), shown.repr(value)[:OTHER_CHARS])
                    for at, held in others
                    for key, value in itertools.islice(held.items(), OTHERS_SHOWN + 1)
                    if key != keys[len(at)]
                    and _path(root, (*at, key)) not in tables
                    and not str(key).startswith(("xmlns", "xsi:"))  # XML's namespaces
                ),
                OTHERS_SHOWN,
            )
        )
    return meta


def _path(root: str, keys: Sequence[Any]) -> str:
    return root + "".join(f"[{key!r}]" for key in keys)


def _at(data: Any, keys: Sequence[Any]) -> Any:
    for key in keys:
        data = data[key]
    return data


def _normalize(name: str, path: str, keyed: bool = False) -> str:
    """The lines that make a list of records, or a dict of them by key, the rows of a frame."""
    if keyed:
        return f"{name} = pd.json_normalize(list({path}.values()))\n{name}.index = list({path})"
    return f"{name} = pd.json_normalize({path})"


def _siblings(
    container: Mapping[Any, Any], keys: tuple[Any, ...], root: str, numbers: bool
) -> tuple[dict[str, Any], list[str]]:
    """The other lists of records beside the records (an API's accounts and securities beside
    its transactions), each a frame of its own: their metadata by name, and their lines."""
    pd = _pandas()
    found: dict[str, Any] = {}
    lines: list[str] = []
    if not keys or not isinstance(container, Mapping):
        return found, lines
    for key, item in itertools.islice(container.items(), 50):
        if key == keys[-1] or len(found) == SIBLINGS_SHOWN:
            continue
        if _records_sample(item) is None:
            continue
        keyed = isinstance(item, Mapping)
        name = _table_name(frame_names([key])[0])
        at = (*keys[:-1], key)
        made = [_normalize(name, _path(root, at), keyed)]
        part = dict(itertools.islice(item.items(), SAMPLE_ROWS)) if keyed else item[:SAMPLE_ROWS]
        for step in reversed(at):  # only the path to the sample
            part = {step: part}
        namespace = {"pd": pd, root: part}
        try:
            exec(made[0], namespace)  # noqa: S102 - our own lines
            if numbers and (line := _as_numbers(name, namespace[name])) is not None:
                exec(line, namespace)  # noqa: S102 - our own line
                made.append(line)
        except Exception:  # noqa: BLE001, S112 - a table that fails on the context is not offered
            continue
        found[name] = {"path": _path(root, at), **_frame_meta(namespace[name], len(item))}
        lines += made
    return found, lines


def _run_load(
    load: str, namespace: dict[str, Any], rows: int, parse: str | None, numbers: bool = False
) -> dict[str, Any] | None:
    """Run the lines that load rows (on a sample of them, bound in ``namespace``), then add a table
    for each list of records in a field; the metadata of what they made, or None if they fail."""
    namespace["pd"] = _pandas()
    try:
        exec(load, namespace)  # noqa: S102 - our own lines
    except Exception:  # noqa: BLE001 - lines that fail on the context are not offered
        return None
    lines = [parse or "import pandas as pd", load]
    if numbers and (line := _as_numbers("df", namespace["df"])) is not None:
        exec(line, namespace)  # noqa: S102 - our own line
        lines.append(line)
    df = namespace["df"]
    meta: dict[str, Any] = _frame_meta(df, rows)
    children: dict[str, Any] = {}
    columns = _lists_of_records(df)[:CHILDREN_SHOWN]
    nested = [str(c) for c in df.columns if _dtype(df[c], df[c].dtype) in ("list", "dict")]
    for column, name in zip(columns, map(_table_name, frame_names(columns)), strict=True):
        # One row per item, and beside it the fields of the record that holds it (the record's
        # own lists and dicts aside): a question about items of some records is one filter.
        made = (
            f'{name} = pd.json_normalize([{{"row": i, **item}} for i, items in df[{column!r}].items()'
            " if isinstance(items, list) for item in items])"
        )
        joined = (
            f'{name} = {name}.merge(df.drop(columns={nested!r}), how="left", left_on="row",'
            ' right_index=True, suffixes=("", "_parent"))'
        )
        try:
            exec(made, namespace)  # noqa: S102 - our own line
            own = [str(c) for c in namespace[name].columns]
            exec(joined, namespace)  # noqa: S102 - our own line
        except Exception:  # noqa: BLE001, S112 - a table that fails on the context is not offered
            continue
        lines += [made, joined]
        if numbers and (line := _as_numbers(name, namespace[name])) is not None:
            exec(line, namespace)  # noqa: S102 - our own line
            lines.append(line)
        child = _frame_meta(namespace[name])
        child["head"] = _head(namespace[name], len(own))
        children[name] = {"column": column, "own": len(own), **child}
    meta["load"] = "\n".join(lines)
    if not children:
        return meta
    meta = _items_first({**meta, "children": children}, rows)
    if "outer" not in meta:
        # The lists that became tables leave df, whose line is then the last: a small model
        # goes on with the frame the lines end with, and most questions are about the records.
        drop = f"df = df.drop(columns={[child['column'] for child in children.values()]!r})"
        exec(drop, namespace)  # noqa: S102 - our own line
        meta.update(_frame_meta(namespace["df"], rows), load=f"{meta['load']}\n{drop}")
    return meta


def _items_first(meta: dict[str, Any], rows: int) -> dict[str, Any]:
    """Few records that each hold a list of many (an API's pages of items): the items are the
    table asked about, so they are ``df``, and the records that hold them ``outer_df``."""
    children = meta.get("children", {})
    biggest = max(children, key=lambda name: children[name]["dims"][0], default=None)
    if biggest is None or rows > OUTER_ROWS or children[biggest]["dims"][0] < ITEMS_PER_OUTER * rows:
        return meta
    inner = children.pop(biggest)
    lines = [re.sub(r"\bdf\b", "outer_df", line) for line in meta["load"].split("\n")]
    lines = [re.sub(rf"\b{biggest}\b", "df", line) for line in lines]
    outer = {k: v for k, v in meta.items() if k in ("dims", "columns", "head")}
    meta = {**{k: v for k, v in meta.items() if k not in ("dims", "columns", "head")}, **inner}
    meta.update(load="\n".join(lines), outer={"column": inner["column"], **outer})
    if not children:
        meta.pop("children", None)
    return meta


_FILE_NAME = re.compile(r"[^\n]*(?:/|\\)[^\n]*|[^\n/\\]+\.\w{1,8}")


def files_metadata(context: Any) -> dict[str, Any] | None:
    """For a dict of files (paths to text): each path with its size, the first ``FILES_SHOWN``;
    with pandas, the first file's start and the lines that load the files as rows."""
    if not isinstance(context, Mapping) or not context:
        return None
    sample = list(itertools.islice(context.items(), 200))
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in sample):
        return None
    if sum(bool(_FILE_NAME.fullmatch(k)) for k, _ in sample) * 2 <= len(sample):
        return None
    shown = itertools.islice(context.items(), FILES_SHOWN)
    files = [[k[:200], len(v), v.count("\n") + (not v.endswith("\n")) if v else 0] for k, v in shown]
    meta: dict[str, Any] = {"files": files, "chars": sum(len(v) for v in context.values())}
    if has_pandas() and (first := first_file(context)) is not None:
        meta.update(first=list(first), load=files_load())
    return meta


def frames_metadata(context: Any) -> dict[str, Any] | None:
    """For a dict of pandas DataFrames: each one's shape, dtypes and first rows."""
    pd = _pandas()
    if pd is None or not isinstance(context, Mapping) or not context:
        return None
    if not all(isinstance(v, pd.DataFrame) for v in itertools.islice(context.values(), 50)):
        return None
    shown = dict(itertools.islice(context.items(), FRAMES_SHOWN))
    load = [f"{name} = context[{key!r}]" for name, key in zip(frame_names(list(shown)), shown, strict=True)]
    return {"frames": {str(k)[:60]: _frame_meta(v) for k, v in shown.items()}, "load": "\n".join(load)}


_TAKEN = {"context", "answer", "search", "classify", "pd", "np", "re", "json", "df", "rows"}


def frame_names(keys: Sequence[Any]) -> list[str]:
    """A Python name for each frame of a dict of DataFrames, as a user would name it: its key in
    lower case (``'Orders'`` -> ``orders``), or ``df1``, ``df2``, ... where that is no name."""
    names: list[str] = []
    for i, key in enumerate(keys):
        name = re.sub(r"\W+", "_", str(key).strip().lower()).strip("_")
        if not name.isidentifier() or keyword.iskeyword(name) or name in names or name in _TAKEN:
            name = f"df{i + 1}"
        names.append(name)
    return names


def _frame_lines(
    meta: Mapping[str, Any], name: str = "df", loaded: str | None = None, own: int | None = None
) -> list[str]:
    dims = " x ".join(f"{n:,}" for n in meta["dims"])
    more = " ..." if meta["dims"][1] > len(meta["columns"]) else ""
    columns = ", ".join(f"{k} ({v})" for k, v in meta["columns"].items())
    what = f"{loaded}: a" if loaded else f"{name} is a"
    wide = min(own or meta["dims"][1], HEAD_COLUMNS)
    shown = (
        f"{name}.head({ROWS_SHOWN})" if wide == meta["dims"][1] else f"{name}.iloc[:{ROWS_SHOWN}, :{wide}]"
    )
    return [
        f"{what} pandas DataFrame of shape ({dims}). Columns and dtypes: {columns}{more}",
        f"First rows ({shown}):\n{meta['head']}",
    ]


def _more(items: int, shown: int) -> list[str]:
    return [f"... and {items - shown:,} more: list(context) names them all."] if items > shown else []


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _table_in(meta: Mapping[str, Any], container: str) -> str | None:
    """A container that holds a table: by columns, by rows without names, or as nested records."""
    rows, columns = meta["dims"] if "dims" in meta else (0, 0)
    if "outer" in meta:  # the records, not their items
        rows = meta["outer"]["dims"][0]
    if meta.get("by_columns"):
        return f"a {container} of {columns:,} columns: lists of {rows:,} values each"
    if meta.get("by_rows"):
        return f"a {container} of {rows:,} rows, each {columns:,} values (columns 0, 1, ...)"
    held = f"a dict of {rows:,} dicts by key" if meta.get("keyed") else f"a list of {rows:,} dicts"
    if "nested" in meta and meta["nested"] not in ("context", "data"):  # records inside it
        keys = _count(meta.get("items", 0), "key")
        return f"a {container} of {keys}: {meta['nested']} is {held}"
    if "nested" in meta:
        return f"a {container} of {rows:,} dicts (records, with nested fields)"
    return None


def _what(meta: Mapping[str, Any]) -> str:
    """The context in words: "a list of 1,250 dicts", "CSV text: 4,096 characters, 81 lines"."""
    kind = meta["type"]
    if kind == "str":
        text = {
            "csv": "CSV text",
            "fwf": "a text table, its columns aligned",
            "report": "a printed report, a table of aligned columns under title lines",
            "json": "JSON text",
            "xml": "XML text",
        }.get(meta.get("format", ""), "text")
        lines = f", {_count(meta['lines'], 'line')}" if "lines" in meta else ""
        parsed = ""
        if meta.get("format") in ("json", "xml"):
            items = f"a {meta['parsed_type']} of {meta['parsed_items']:,} items"
            parsed = f": {_table_in({**meta, 'items': meta['parsed_items']}, meta['parsed_type']) or items}"
        return f"{text} ({meta['length']:,} characters{lines}){parsed}"
    container = "dict" if "dict" in kind else kind
    if (table := _table_in(meta, container)) is not None:
        return table
    if kind in ("list", "tuple") or "dict" in kind:
        return f"a {container} of {meta.get('items', 0):,} dicts (records)"
    return f"a {kind} of {meta.get('items', 0):,} records"


def describe_structured(meta: Mapping[str, Any]) -> str | None:
    """The lines that tell the root what a structured context is and how to load it, or None
    when the metadata holds none of that."""
    if "frames" in meta:
        load = meta.get("load") or ""
        names = [line.split(" = ", 1)[0] for line in load.splitlines()]
        if len(names) != len(meta["frames"]):  # metadata written before frames were named
            names = frame_names(list(meta["frames"]))
            load = "\n".join(f"{n} = context[{k!r}]" for n, k in zip(names, meta["frames"], strict=True))
        # Each load line heads its frame's lines, none follows another: a reply begun with all of
        # them (worked.reply_start) goes on with code, not with a copy of this description.
        lines = [f"The variable `context` holds a dict of {meta['items']:,} pandas DataFrames, by name."]
        for name, line, frame in zip(names, load.splitlines(), meta["frames"].values(), strict=True):
            lines += _frame_lines(frame, name, loaded=line)
        lines += _more(meta["items"], len(meta["frames"]))
        return "\n".join(lines)
    if "files" in meta:
        return _describe_files(meta)
    if "records" in meta:
        return _describe_records(meta)
    if "load" not in meta:
        return None
    # The lines that load it come last, just before the question: a reply begun with them
    # (worked.reply_start) goes on with code, where a description after them was copied on.
    lines = [f"The variable `context` holds {_what(meta)}."]
    if meta.get("title"):
        lines += ["It begins:", *meta["title"]]
    if "dims" in meta:
        lines += _frame_lines(meta, own=meta.get("own"))
    elif meta.get("parsed_keys"):
        lines.append(f"First keys of data: {meta['parsed_keys']}")
    return "\n".join([*lines, *_items_lines(meta), "Load it with:", meta["load"]])


def _describe_files(meta: Mapping[str, Any]) -> str:
    lines = [
        f"The variable `context` holds a dict of {meta['items']:,} files: path -> text, "
        f"{meta['chars']:,} characters in all. Read one with context[path]. Paths and sizes:"
    ]
    for path, size, n in meta["files"]:
        lines.append(f"{path} ({_count(size, 'character')}, {_count(n, 'line')})")
    lines += _more(meta["items"], len(meta["files"]))
    if "load" in meta:  # how one reads, and the lines that make them rows
        path, text = meta["first"]
        lines += [f"The first file, {path}:", text, "Load them as rows with:", meta["load"]]
    return "\n".join(lines)


def _describe_records(meta: Mapping[str, Any]) -> str:
    said = f"{_count(meta['records'], 'record')}, each starting {meta['starts']}"
    lines = [f"The variable `context` holds {_what(meta)}: {said}. It begins:", meta["sample"]]
    return "\n".join([*lines, "Load them as rows with:", meta["load"]])


def _items_lines(meta: Mapping[str, Any]) -> list[str]:
    """The tables of items beside ``df``: the records that hold them, or those they hold."""
    lines: list[str] = []
    if outer := meta.get("outer"):
        lines.append(
            f"df has a row for each item of the lists in outer_df[{outer['column']!r}]; "
            "its column row is the item's row label in outer_df, the records that hold them"
            + (
                f", and the columns after its first {meta['own']} are that row's fields:"
                if "own" in meta
                else ":"
            )
        )
        lines += _frame_lines(outer, "outer_df")
    for name, child in meta.get("children", {}).items():
        parent = "outer_df" if outer else "df"
        lists = f"the lists in {parent}[{child['column']!r}]"
        if "own" in child and not outer:
            lists = f"the records' lists in {child['column']!r} (dropped from df)"
        lines.append(
            f"{name} has a row for each item of {lists}; its column row is the record's row label "
            f"in {parent}"
            + (
                f", and the columns after its first {child['own']} are the record's fields "
                "(with _parent where the item has a field of that name)."
                if "own" in child
                else "."
            )
        )
        lines += _frame_lines(child, name, own=child.get("own"))
    for name, sibling in meta.get("siblings", {}).items():
        lines.append(f"{name} has a row for each record of {sibling['path']}.")
        lines += _frame_lines(sibling, name)
    if others := meta.get("others"):
        lines.append("Its other keys: " + "; ".join(f"{k} = {v}" for k, v in others.items()))
    return lines
