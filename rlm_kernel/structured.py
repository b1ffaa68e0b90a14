"""A structured context as what it is, in the library that fits it.

Small code models have read pandas, ``json``, ``csv`` and ``re`` a million times and our helpers
never, so the root is shown rows as a pandas DataFrame would show them (shape, dtypes, first rows)
with the lines that load them, run here first on the context itself:

=========================  ==============================================================
the context                the lines the root is given
=========================  ==============================================================
a list of flat dicts       ``df = pd.DataFrame(context)``
a dict of flat dicts       ``df = pd.DataFrame.from_dict(context, orient="index")``
CSV text                   ``df = pd.read_csv(io.StringIO(context))`` (its separator named)
JSON text of records       ``df = pd.DataFrame(json.loads(context))``
other JSON text            ``data = json.loads(context)``
a dict of files            none: their paths and sizes
a dict of DataFrames       none: each one's shape, dtypes and first rows
=========================  ==============================================================

pandas is optional (the ``eval`` extra): without it rows load with ``json``, ``csv`` or as they
are, and the root sees the description it saw before. Everything here is JSON-able metadata,
made from a sample of the rows: the context itself never leaves the process.
"""

from __future__ import annotations

import io
import itertools
import json
import keyword
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "LOADS",
    "ROW_LOADS",
    "csv_separator",
    "table_metadata",
    "json_metadata",
    "files_metadata",
    "frames_metadata",
    "frame_names",
    "describe_structured",
]

SAMPLE_ROWS = 2000  # rows a DataFrame is built from to read its dtypes and first rows
FULL_PARSE_CHARS = 5_000_000  # CSV text up to this size is parsed whole, to count its rows
FILES_SHOWN = 40
FRAMES_SHOWN = 8
COLUMNS_SHOWN = 30
ROWS_SHOWN = 3


# The lines that load rows, by where they are: as a DataFrame ``df`` with pandas, else as a list
# of dicts ``rows`` with the standard library.
LOADS = {
    "list": "import pandas as pd\ndf = pd.DataFrame(context)",
    "dict": 'import pandas as pd\ndf = pd.DataFrame.from_dict(context, orient="index")',
    "csv": "import io\nimport pandas as pd\ndf = pd.read_csv(io.StringIO(context){sep})",
    "json": "import json\nimport pandas as pd\ndf = pd.DataFrame(json.loads(context))",
}
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
    """A DataFrame's shape, columns with their dtypes, and first rows, as :mod:`prompts` shows them."""
    columns = itertools.islice(df.dtypes.items(), COLUMNS_SHOWN)
    return {
        "dims": [int(rows if rows is not None else df.shape[0]), int(df.shape[1])],
        "columns": {str(k): str(v) for k, v in columns},
        "head": df.head(ROWS_SHOWN).to_string(max_colwidth=40),
    }


def csv_separator(text: str) -> str | None:
    """The separator of CSV text (a header row of field names, then rows with as many separators),
    or None when it is not CSV."""
    head = text[:4096].splitlines()[:6]
    if len(head) < 3:
        return None
    for sep in (",", "\t", ";", "|"):
        counts = {line.count(sep) for line in head[:-1]}  # the last line may be cut
        if len(counts) == 1 and counts.pop() >= 1:
            names = [field.strip().strip('"') for field in head[0].split(sep)]
            if all(_HEADER_FIELD.fullmatch(name) for name in names):
                return sep
    return None


_HEADER_FIELD = re.compile(r"[A-Za-z_][\w .-]{0,40}")


def table_metadata(context: Any) -> dict[str, Any] | None:
    """For rows (a list or dict of flat dicts, CSV text, JSON text of records): ``load``, the lines
    that make them a DataFrame ``df`` (or, without pandas, a list of dicts ``rows``), and with
    pandas the frame's ``dims``, ``columns`` (dtypes) and ``head``. None for anything else, or when
    the lines fail on it."""
    pd = _pandas()
    if isinstance(context, str):
        if (sep := csv_separator(context)) is not None:
            return _csv_metadata(context, sep, pd)
        return None
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


def _csv_metadata(text: str, sep: str, pd: Any) -> dict[str, Any] | None:
    if pd is None:
        return {"load": ROW_LOADS["csv"].format(sep="" if sep == "," else f", delimiter={sep!r}")}
    whole = len(text) <= FULL_PARSE_CHARS
    try:
        df = pd.read_csv(io.StringIO(text), sep=sep, nrows=None if whole else SAMPLE_ROWS)
    except (ValueError, pd.errors.ParserError):  # the line would fail on it: not offered
        return None
    rows = df.shape[0] if whole else max(text.count("\n") - 1 + (not text.endswith("\n")), df.shape[0])
    load = LOADS["csv"].format(sep="" if sep == "," else f", sep={sep!r}")
    return {"load": load, "format": "csv", **_frame_meta(df, rows)}


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
    if isinstance(data, dict):
        meta["parsed_keys"] = [str(k)[:60] for k in itertools.islice(data, 20)]
    return {**meta, "load": "import json\ndata = json.loads(context)"}


_FILE_NAME = re.compile(r"[^\n]*(?:/|\\)[^\n]*|[^\n/\\]+\.\w{1,8}")


def files_metadata(context: Any) -> dict[str, Any] | None:
    """For a dict of files (paths to text): each path with its size, the first ``FILES_SHOWN``."""
    if not isinstance(context, Mapping) or not context:
        return None
    sample = list(itertools.islice(context.items(), 200))
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in sample):
        return None
    if sum(bool(_FILE_NAME.fullmatch(k)) for k, _ in sample) * 2 <= len(sample):
        return None
    shown = itertools.islice(context.items(), FILES_SHOWN)
    files = [[k[:200], len(v), v.count("\n") + (not v.endswith("\n")) if v else 0] for k, v in shown]
    return {"files": files, "chars": sum(len(v) for v in context.values())}


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


def _frame_lines(meta: Mapping[str, Any], name: str = "df", loaded: str | None = None) -> list[str]:
    dims = " x ".join(f"{n:,}" for n in meta["dims"])
    more = " ..." if meta["dims"][1] > len(meta["columns"]) else ""
    columns = ", ".join(f"{k} ({v})" for k, v in meta["columns"].items())
    what = f"{loaded}: a" if loaded else f"{name} is a"
    return [
        f"{what} pandas DataFrame of shape ({dims}). Columns and dtypes: {columns}{more}",
        f"First rows ({name}.head({ROWS_SHOWN})):\n{meta['head']}",
    ]


def _more(items: int, shown: int) -> list[str]:
    return [f"... and {items - shown:,} more: list(context) names them all."] if items > shown else []


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _what(meta: Mapping[str, Any]) -> str:
    """The context in words: "a list of 1,250 dicts", "CSV text: 4,096 characters, 81 lines"."""
    kind = meta["type"]
    if kind == "str":
        text = "CSV text" if meta.get("format") == "csv" else "JSON text" if meta.get("format") else "text"
        lines = f", {_count(meta['lines'], 'line')}" if "lines" in meta else ""
        parsed = ""
        if meta.get("format") == "json":
            parsed = f": a {meta['parsed_type']} of {meta['parsed_items']:,} items"
        return f"{text} ({meta['length']:,} characters{lines}){parsed}"
    if kind in ("list", "tuple") or "dict" in kind:
        container = "dict" if "dict" in kind else kind
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
        lines = [
            f"The variable `context` holds a dict of {meta['items']:,} files: path -> text, "
            f"{meta['chars']:,} characters in all. Read one with context[path]. Paths and sizes:"
        ]
        for path, size, n in meta["files"]:
            lines.append(f"{path} ({_count(size, 'character')}, {_count(n, 'line')})")
        lines += _more(meta["items"], len(meta["files"]))
        return "\n".join(lines)
    if "load" not in meta:
        return None
    lines = [f"The variable `context` holds {_what(meta)}. Load it with:", meta["load"]]
    if "dims" in meta:
        lines += _frame_lines(meta)
    elif meta.get("parsed_keys"):
        lines.append(f"First keys of data: {meta['parsed_keys']}")
    return "\n".join(lines)
