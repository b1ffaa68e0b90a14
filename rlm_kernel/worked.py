"""Worked examples for the ``small`` profile: one per shape of context, given as earlier turns.

Small models copy the form of the example they are shown (``shared/REFERENCE.md``: the 0.5B
model printed whole lines because its example did, and invented an answer when the needle was cut
off). So the example is chosen to match the real context's shape, and its code is code that works
on any context of that shape: ``search(...)`` for text (one long line, many lines, documents,
records with text in them) and pandas for rows (a DataFrame, a list or dict of flat records, CSV
or JSON text; without pandas, the standard library), loaded by the same lines the context's
description gives (:mod:`rlm_kernel.structured`).
The example's outputs are made by the real helpers on a made-up context, so they always look
exactly like what the model will see. None of it is drawn from the evaluation's tasks.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from itertools import islice
from typing import Any

from .helpers import looks_like_csv, search_text
from .lm.base import Message
from .structured import LOADS, ROW_LOADS, aligned_layout, report_layout

__all__ = [
    "SHAPES",
    "shape_of",
    "example_turns",
    "reply_start",
    "reply_starts",
    "retry_start",
    "answer_start",
    "two_hops",
]

SHAPES = ("text", "lines", "documents", "table", "frame", "frames", "array", "other")
_SHORT = 120  # a field longer than this is text to search, not a value to count


def _flat(item: Any) -> bool:
    return isinstance(item, Mapping) and all(
        not isinstance(v, str) or len(v) <= _SHORT for v in item.values()
    )


def shape_of(context: Any) -> str:
    """What the context looks like to code: ``text`` (a long string with few line breaks),
    ``lines``, ``documents`` (items holding text), ``table`` (flat records), ``frame`` (a pandas
    DataFrame), ``frames`` (a dict of them), ``array`` (a Series or an array), or ``other``."""
    if hasattr(context, "columns") and hasattr(context, "dtypes") and hasattr(context, "iloc"):
        return "frame"
    if hasattr(context, "dtype") and hasattr(context, "shape") and hasattr(context, "__len__"):
        return "array"
    if isinstance(context, str):
        return _shape_of_text(context)
    if isinstance(context, Mapping):
        values = list(islice(context.values(), 20))
    elif isinstance(context, Sequence) and not isinstance(context, (bytes, bytearray)):
        values = list(islice(context, 20))  # a deque takes no slice
    else:
        return "other"
    if values and all(_flat(v) for v in values):
        return "table"
    if values and isinstance(context, Mapping) and all(shape_of(v) == "frame" for v in values):
        return "frames"
    return "documents" if values else "other"


def _shape_of_text(context: str) -> str:
    """``table`` for CSV, a text table or report (with pandas to read it), or JSON of flat records; else
    ``lines`` or ``text`` by its line lengths."""
    if looks_like_csv(context) or (
        _has_pandas() and (aligned_layout(context) is not None or report_layout(context) is not None)
    ):
        return "table"
    if context.lstrip()[:1] in ("[", "{") and len(context) < 64_000_000:
        try:
            parsed = json.loads(context)
        except ValueError:
            parsed = None
        if parsed is not None and shape_of(parsed) == "table":
            return "table"
    lines = context.count("\n") + 1
    return "lines" if lines >= 20 and len(context) / lines < 2000 else "text"


# -- the made-up contexts of the examples ---------------------------------------------------

_FILLER = [
    "The harbour office opens at {n} on weekdays.",
    "Tickets for the museum boat cost {n} crowns this season.",
    "Road works on Mill Street will last until week {n}.",
    "The council approved {n} new benches for the park.",
    "Fog delayed the morning crossing by {n} minutes.",
    "A new bakery opened near the old fish market.",
    "The library extends its hours during the festival.",
    "Volunteers planted {n} trees along the canal.",
    "Delays of the ferry are posted at the pier office.",
]
# Questions about rows, each with the pandas that answers it over the rows loaded as `df`: the
# usual kinds of question an analyst asks of a table (a count under filters, a total, the group
# with the most, a lookup, groups compared, a share, a date, a list), written over the made-up
# shops. A root is shown a few of them always, and one more where its question is worded like the
# root's own (see _ROW_CORE).
_ROW_QUESTIONS = [
    ("How many shops are closed?", 'n = int((df["status"] == "closed").sum())\nprint(n)'),
    (
        "How many cafes in Porto are open?",
        'mask = (df["city"] == "Porto") & (df["kind"] == "cafe") & (df["status"] == "open")\n'
        "n = int(mask.sum())\nprint(n)",
    ),
    (
        "How many cafes in Porto have a revenue above 1500?",
        'mask = (df["city"] == "Porto") & (df["kind"] == "cafe") & (df["revenue"] > 1500)\n'
        "n = int(mask.sum())\nprint(n)",
    ),
    (
        "What is the total revenue of the shops in Graz, to the cent?",
        'n = round(float(df.loc[df["city"] == "Graz", "revenue"].sum()), 2)\nprint(n)',
    ),
    (
        "What is the total revenue of the cafes in Graz, to the cent?",
        'mask = (df["city"] == "Graz") & (df["kind"] == "cafe")\n'
        'n = round(float(df.loc[mask, "revenue"].sum()), 2)\nprint(n)',
    ),
    ("Which city has the most shops?", 'n = df["city"].value_counts().idxmax()\nprint(n)'),
    (
        "How many shops opened in May 2021?",
        'opened = pd.to_datetime(df["opened"])\nmask = (opened.dt.year == 2021) & (opened.dt.month == 5)\n'
        "n = int(mask.sum())\nprint(n)",
    ),
    (
        "How many different kinds of shop are there in Lyon?",
        'n = df.loc[df["city"] == "Lyon", "kind"].nunique()\nprint(n)',
    ),
    (
        "What is the average revenue of the bookshops, rounded to one decimal?",
        'n = round(float(df.loc[df["kind"] == "bookshop", "revenue"].mean()), 1)\nprint(n)',
    ),
    (
        "Which city has the largest total revenue?",
        'n = df.groupby("city")["revenue"].sum().idxmax()\nprint(n)',
    ),
    (
        "What is the id of the shop with the highest revenue?",
        'n = df.loc[df["revenue"].idxmax(), "id"]\nprint(n)',
    ),
    ("What kind of shop is shop 17?", 'n = df.loc[df["id"] == 17, "kind"].iloc[0]\nprint(n)'),
    (
        "In how many cities are there more than 20 cafes?",
        'per_city = df[df["kind"] == "cafe"].groupby("city").size()\n'
        "n = int((per_city > 20).sum())\nprint(n)",
    ),
    (
        "Among the open shops, in how many cities did the cafes earn more in total than the bakeries?",
        'open_shops = df[df["status"] == "open"]\n'
        'totals = open_shops.pivot_table(index="city", columns="kind", values="revenue", aggfunc="sum")\n'
        'n = int((totals["cafe"] > totals["bakery"]).sum())\nprint(n)',
    ),
    (
        "What percentage of the shops are cafes, to one decimal?",
        'n = round(100 * float((df["kind"] == "cafe").mean()), 1)\nprint(n)',
    ),
    (
        "When did the first bookshop in Turku open?",
        'mask = (df["city"] == "Turku") & (df["kind"] == "bookshop")\n'
        'n = pd.to_datetime(df.loc[mask, "opened"]).min().date()\nprint(n)',
    ),
    (
        "Which cities have a bakery that moved? List them in alphabetical order.",
        'mask = (df["kind"] == "bakery") & (df["status"] == "moved")\n'
        'n = ", ".join(sorted(df.loc[mask, "city"].unique()))\nprint(n)',
    ),
    (
        "How much more revenue did Lyon make than Porto in total, to the cent?",
        'by_city = df.groupby("city")["revenue"].sum()\n'
        'n = round(float(by_city["Lyon"] - by_city["Porto"]), 2)\nprint(n)',
    ),
    (
        "In which year did the most shops open?",
        'n = int(pd.to_datetime(df["opened"]).dt.year.value_counts().idxmax())\nprint(n)',
    ),
    (
        "How many shops have a revenue between 1000 and 1200?",
        'n = int(df["revenue"].between(1000, 1200).sum())\nprint(n)',
    ),
    (
        "Which city has the second largest total revenue?",
        'n = df.groupby("city")["revenue"].sum().sort_values(ascending=False).index[1]\nprint(n)',
    ),
    (
        "How many shops opened after 1 March 2022?",
        'n = int((pd.to_datetime(df["opened"]) > "2022-03-01").sum())\nprint(n)',
    ),
    (
        "Which are the two kinds of shop with the largest total revenue?",
        'n = ", ".join(df.groupby("kind")["revenue"].sum().nlargest(2).index)\nprint(n)',
    ),
]
# The same questions of rows keyed by name (a dict of records): the key is df's index, not a column.
_BY_KEY = {
    "What is the id of the shop with the highest revenue?": (
        "Which shop has the highest revenue?",
        'n = df["revenue"].idxmax()\nprint(n)',
    ),
    "What kind of shop is shop 17?": (
        "What kind of shop is shop-17?",
        'n = df.loc["shop-17", "kind"]\nprint(n)',
    ),
}
# The questions every root of rows is shown, in this order where no question is given: five of
# rows, seven of a DataFrame. Of the others, the one that shares the most words of substance with
# the root's own question is shown too, last, where it shares two or more and more than any of
# these (see _closest): a question of words only (``the most``, ``largest``) is often worded like
# an example of another kind, and a small model copies the example it saw last.
_ROW_CORE = (
    "What is the total revenue of the shops in Graz, to the cent?",
    "How many shops opened in May 2021?",
    "Which city has the most shops?",
    "How many cafes in Porto are open?",
    "How many shops are closed?",
)
_FRAME_CORE = (
    "How many shops are closed?",
    "How many cafes in Porto have a revenue above 1500?",
    "What is the total revenue of the shops in Graz, to the cent?",
    "Which city has the largest total revenue?",
    "How many shops opened in May 2021?",
    "How many different kinds of shop are there in Lyon?",
    "What is the average revenue of the bookshops, rounded to one decimal?",
)
# A dict of DataFrames, each loaded as a name (see structured.frame_names): lookups, and joins
# with merge, as pandas users write them.
_FRAMES_EXAMPLES = [
    ("How many shops are closed?", 'n = int((shops["status"] == "closed").sum())\nprint(n)'),
    ("Which kind of shop is shop 17?", 'n = shops.loc[shops["id"] == 17, "kind"].iloc[0]\nprint(n)'),
    (
        "How many cafes are there in Austria?",
        'df = shops.merge(cities, on="city")\n'
        'n = int(((df["country"] == "AT") & (df["kind"] == "cafe")).sum())\nprint(n)',
    ),
    (
        "What is the total revenue of the shops in Portugal, to the cent?",
        'df = shops.merge(cities, on="city")\n'
        'n = round(float(df.loc[df["country"] == "PT", "revenue"].sum()), 2)\nprint(n)',
    ),
    (
        "Which city has the largest total revenue?",
        'n = shops.groupby("city")["revenue"].sum().idxmax()\nprint(n)',
    ),
]
# Records with nested fields, loaded with pd.json_normalize (nested dicts as "a.b" columns) and a
# table of each list of records in a field, whose "row" is the record's row in df.
_NESTED_EXAMPLES = [
    (
        "How many shops in Graz are closed?",
        'mask = (df["address.city"] == "Graz") & (df["status"] == "closed")\nn = int(mask.sum())\nprint(n)',
    ),
    (
        "How many shops have the tag 'vegan'?",
        'n = sum("vegan" in tags for tags in df["tags"] if isinstance(tags, list))\nprint(n)',
    ),
    (
        "What is the total of the sales of Brook Cafe in 2021, to the cent?",
        'mask = (sales_df["name"] == "Brook Cafe") & sales_df["month"].str.startswith("2021")\n'
        'n = round(float(sales_df.loc[mask, "amount"].sum()), 2)\nprint(n)',
    ),
    (
        "Which shop in Graz had the largest monthly sale?",
        'graz = sales_df[sales_df["address.city"] == "Graz"]\n'
        'n = graz.loc[graz["amount"].idxmax(), "name"]\nprint(n)',
    ),
]
# Records with nested dicts and no lists of records (no item table beside df): the questions of
# rows over "a.b" columns, with the shops' figures a dict of their own.
_DOTTED_EXAMPLES = [
    _NESTED_EXAMPLES[0],
    (
        "What is the total revenue of the shops in Graz, to the cent?",
        'n = round(float(df.loc[df["address.city"] == "Graz", "figures.revenue"].sum()), 2)\nprint(n)',
    ),
    (
        "Which city has the most closed shops?",
        'n = df.loc[df["status"] == "closed", "address.city"].value_counts().idxmax()\nprint(n)',
    ),
    (
        "On which street is Oak Cafe?",
        'n = df.loc[df["name"] == "Oak Cafe", "address.street"].iloc[0]\nprint(n)',
    ),
]
_DOTTED_MORE = [_NESTED_EXAMPLES[1]]
# The same, of a dict of records by name: the names are df's index, and the items' rows.
_NESTED_DICT_EXAMPLES = [
    _NESTED_EXAMPLES[0],
    ("In which city is Brook Cafe?", 'n = df.loc["Brook Cafe", "address.city"]\nprint(n)'),
    (
        "What is the total of the sales of Brook Cafe in 2021, to the cent?",
        'mask = (sales_df["row"] == "Brook Cafe") & sales_df["month"].str.startswith("2021")\n'
        'n = round(float(sales_df.loc[mask, "amount"].sum()), 2)\nprint(n)',
    ),
    (
        "Which shop in Graz had the largest monthly sale?",
        'graz = sales_df[sales_df["address.city"] == "Graz"]\n'
        'n = graz.loc[graz["amount"].idxmax(), "row"]\nprint(n)',
    ),
]
_DOTTED_DICT_EXAMPLES = [
    *_DOTTED_EXAMPLES[:3],
    ("On which street is Oak Cafe?", 'n = df.loc["Oak Cafe", "address.street"]\nprint(n)'),
]
_ROWS_EXAMPLES = [
    ("How many shops are closed?", 'n = sum(1 for r in rows if r["status"] == "closed")\nprint(n)'),
    (
        "What is the total revenue of the shops in Graz, to the cent?",
        'n = round(sum(float(r["revenue"]) for r in rows if r["city"] == "Graz"), 2)\nprint(n)',
    ),
    (
        "Which city has the most shops?",
        "from collections import Counter\n"
        'n = Counter(r["city"] for r in rows).most_common(1)[0][0]\nprint(n)',
    ),
    (
        "How many cafes in Porto are open?",
        'n = sum(1 for r in rows if r["city"] == "Porto" and r["kind"] == "cafe" and r["status"] == "open")\n'
        "print(n)",
    ),
    (
        "How many shops opened in May 2021?",
        'n = sum(1 for r in rows if str(r["opened"]).startswith("2021-05"))\nprint(n)',
    ),
]
# Records of text (a dict of files, a log of reports) as rows of ``df["text"]``: each value read
# with the pattern its lines call for, as the first record shown says they are written.
_RECORD_EXAMPLES = [
    (
        "How many reports mention rain?",
        'n = int(df["text"].str.contains("rain", case=False).sum())\nprint(n)',
    ),
    (
        "What is the total revenue of the shops in Graz, to the cent?",
        'graz = df[df["text"].str.contains("(Graz)", regex=False)]\n'
        'revenue = graz["text"].str.extract(r"Revenue: ([\\d.]+)")[0].astype(float)\n'
        "n = round(float(revenue.sum()), 2)\nprint(n)",
    ),
    (
        "Which shop counted the most visitors in one report?",
        'df["visitors"] = df["text"].str.extract(r"Visitors: (\\d+)")[0].astype(float)\n'
        'df["shop"] = df["text"].str.extract(r" - (.+) \\(")[0]\n'
        'n = df.loc[df["visitors"].idxmax(), "shop"]\nprint(n)',
    ),
    (
        "How many reports from May 2021 counted more than 300 visitors?",
        'df["visitors"] = df["text"].str.extract(r"Visitors: (\\d+)")[0].astype(float)\n'
        'may = df["text"].str.contains("Date: 2021-05")\n'
        'n = int((may & (df["visitors"] > 300)).sum())\nprint(n)',
    ),
]
_RECORD_LOOKUP = (
    "On which date was report 1077 written?",
    'text = df.loc[df["text"].str.contains("Report 1077 "), "text"].iloc[0]\n'
    'n = re.search(r"Date: (\\S+)", text).group(1)\nprint(n)',
)
_FILE_LOOKUP = (
    "On which date was the report in reports/lyon/1077.txt written?",
    'text = context["reports/lyon/1077.txt"]\nn = re.search(r"Date: (\\S+)", text).group(1)\nprint(n)',
)
_NOTES = ["rain all day", "new window display", "staff training", "quiet morning", "street market outside"]
_ARRAY_EXAMPLES = [
    ("How many readings are above 20?", "n = int((context > 20).sum())\nprint(n)"),
    ("At which position is the highest reading?", "n = int(context.argmax())\nprint(n)"),
    ("What is the mean reading, to two decimals?", "n = round(float(context.mean()), 2)\nprint(n)"),
]
# Counting over lines of text, in `re` and `collections`: a search finds passages, not how many.
_LINES_LOAD = "import re\nfrom collections import Counter\nlines = context.splitlines()"
_LINES_EXAMPLES = [
    (
        "How many messages from May 2024 mention the ferry?",
        'n = sum(1 for line in lines if "[2024-05" in line and re.search("ferry", line, re.I))\nprint(n)',
    ),
    (
        "In which month were the most messages about delays written?",
        'found = [re.search(r"\\d{4}-\\d{2}", line) for line in lines if re.search("delay", line, re.I)]\n'
        "months = [m.group() for m in found if m]\n"
        "n = Counter(months).most_common(1)[0][0]\nprint(n)",
    ),
    (
        "How many different message numbers appear in the messages of March 2024?",
        'found = [re.search(r"#(\\d+)", line) for line in lines if "[2024-03" in line]\n'
        "n = len({m.group(1) for m in found if m})\nprint(n)",
    ),
]
_COUNTING = re.compile(
    r"\bhow many\b|\bcount\b|\bnumber of\b|\b(?:most|least|fewest)\b|\bdistinct\b|\btotal\b|\baverage\b",
    re.IGNORECASE,
)
# A question in two hops: what the first fact names is what the second search looks for.
_HOPS = [(7734, "Norrholm", 14), (5120, "Vikby", 3), (6408, "Sandoe", 9), (2291, "Kalvik", 21)]
_HOP_QUESTION = "Booking 7734 is for a ferry: from which pier does that ferry leave?"
_HOP_CODE = (
    "# Two steps: find which ferry booking 7734 is for, then where that ferry leaves from.\n"
    'search("booking 7734")'
)
# Counting by a label the data does not show: each item labelled by a sub-call.
_MESSAGES = [
    ("praise", "Thank you, the new timetable works well."),
    ("complaint", "The parcel arrived broken and nobody answered the phone."),
    ("question", "Does the night bus stop at the hospital?"),
    ("complaint", "Third delay this week on line 4."),
    ("praise", "Friendly driver on the 7:40 this morning."),
    ("question", "Can I bring a bicycle on the ferry?"),
]
_LABELS = ["praise", "complaint", "question"]
_CLASSIFY_QUESTION = (
    "How many of the messages should be labelled 'complaint'? The labels are not in the data: "
    "infer each message's label from its meaning. The labels: praise, complaint, question."
)
_CLASSIFY_CODE = (
    "from collections import Counter\n"
    "items = context.splitlines() if isinstance(context, str) else list(context)\n"
    f"labels = classify(items, {_LABELS!r})\ncounts = Counter(labels)\nprint(counts)"
)
# A question that counts items by what they mean, not by what they say.
_LABELLED = re.compile(
    r"\blabel|classif|categor|\btopics?\b|\bthemes?\b|sentiment|by (?:its|their) meaning"
    r"|how many\b.*\b(?:are|is|were|was)\s+(?:about|on the subject of|related to|concerning)\b",
    re.IGNORECASE,
)
# A path, a file name or an identifier of the question (``src/styles/theme.css``): no word of it
# says how the question counts.
_NAMED = re.compile(r"\S*\w[/._\\]\w\S*")


def _labelled(question: str | None) -> bool:
    """Whether a question counts items by a label the data does not show."""
    return bool(question and _LABELLED.search(_NAMED.sub(" ", question)))


# A question in two hops: it asks about a thing named only through another one ("the ferry of
# booking 7734", "the town of the courier who ...").
_TWO_HOP = re.compile(
    r".\b(?:who|whose|that)\s+(?!(?:is|are|was|were|the|a|an|it|this)\b)\w+|\bof\s+the\s+\w+\s+(?:of|who|that|for)\b",
    re.IGNORECASE,
)
_ANSWER = 'answer["content"] = str(n)\nanswer["ready"] = True'
_NEEDLE = "The ferry to Norrholm leaves from pier 14."
_QUESTION = "From which pier does the ferry to Norrholm leave?"


def _sentences(count: int, needle_at: int | None) -> list[str]:
    out = [_FILLER[i % len(_FILLER)].format(n=(i * 37) % 90 + 7) for i in range(count)]
    if needle_at is not None:
        out.insert(needle_at, _NEEDLE)
    return out


@cache
def _context(shape: str) -> Any:
    if shape in _TABLE_FORMS:
        return _table_form(shape)
    if shape in _NESTED_FORMS or shape in _DOTTED_FORMS:
        return _nested(shape)
    if shape == "documents":
        docs = [" ".join(_sentences(12, None)) for _ in range(40)]
        docs[23] = " ".join(_sentences(12, 7))
        return docs
    if shape in ("table", "list"):
        cities, kinds = ["Lyon", "Porto", "Graz", "Turku"], ["bakery", "cafe", "bookshop"]
        states = ["open", "open", "closed", "moved"]
        return [
            {
                "id": i + 1,
                "city": cities[i % 4],
                "kind": kinds[i * 7 % 3],
                "status": states[i * 5 % 4],
                "revenue": round(800 + (i * 37 % 400) * 3.25, 2),
                "opened": f"{2019 + i % 5}-{i * 5 % 12 + 1:02d}-{i % 27 + 1:02d}",
            }
            for i in range(1250)
        ]
    if shape == "messages":
        lines = [
            f"[2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}] #{5000 + i * 7}: {_MESSAGES[(i * i + i // 3) % 6][1]}"
            for i in range(480)
        ]
        return "\n".join(lines)
    if shape == "array":
        import numpy as np

        return np.array([round(12 + (i * 37 % 101) / 7.3, 1) for i in range(3000)])
    if shape in ("hops-text", "hops-lines", "hops-documents"):
        return _hops(shape.removeprefix("hops-"))
    if shape in ("files", "records"):
        return _reports(shape)
    sentences = _sentences(700, 391)
    return "\n".join(sentences) if shape == "lines" else " ".join(sentences)


_TABLE_FORMS = ("frame", "csv", "fwf", "report", "json", "dict", "frames", "columns", "tuples")
REPORT_PAGE = 12  # rows on a page of the made-up report
_NESTED_FORMS = ("nested-list", "nested-dict", "nested-key", "nested-json", "nested-xml")
_DOTTED_FORMS = (
    "dotted-list",
    "dotted-dict",
    "dotted-key",
    "dotted-json",
    "dotted-xml",
)  # no list of records in them
_NAMES = ["Lind", "Oak", "Mole", "Vale", "Brook", "Fern", "Hill", "Moss", "Reed", "Ash", "Birch"]


def _printed(shape: str) -> str:
    """The shops' table as a command prints it (``fwf``), or on the pages of a report."""
    table = _context("table")
    rows = [list(table[0])] + [[str(v) for v in row.values()] for row in table]
    widths = [max(len(row[k]) for row in rows) + 3 for k in range(len(rows[0]))]
    header, *lines = ["".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    if shape == "fwf":  # each column as wide as its longest value
        return "\n".join([header, *lines])
    rule = "-" * len(header)
    pages: list[str] = []
    for page, start in enumerate(range(0, len(lines), REPORT_PAGE), start=1):
        title = f"SHOPS REGISTER{f'PAGE: {page}':>{len(header) - 14}}"
        pages += [title, rule, header, rule, *lines[start : start + REPORT_PAGE], ""]
    return "\n".join([*pages, "*** END OF REPORT ***"])


def _table_form(shape: str) -> Any:
    """The shops' table in another form: a DataFrame, CSV, JSON or a text table, a dict, a dict of
    frames."""
    if shape == "frame":
        import pandas as pd

        frame = pd.DataFrame(_context("table"))
        frame["opened"] = pd.to_datetime(frame["opened"])
        return frame
    if shape == "csv":
        rows = _context("table")
        lines = [",".join(rows[0])] + [",".join(str(v) for v in row.values()) for row in rows]
        return "\n".join(lines)
    if shape in ("fwf", "report"):
        return _printed(shape)
    if shape == "json":
        return json.dumps(_context("table"))
    if shape == "dict":
        return {f"shop-{row['id']}": {k: v for k, v in row.items() if k != "id"} for row in _context("table")}
    if shape == "columns":
        rows = _context("table")
        return {key: [row[key] for row in rows] for key in rows[0]}
    if shape == "tuples":
        return [tuple(row.values()) for row in _context("table")]
    if shape == "frames":
        import pandas as pd

        cities = pd.DataFrame(
            {"city": ["Lyon", "Porto", "Graz", "Turku"], "country": ["FR", "PT", "AT", "FI"]}
        )
        return {"shops": _context("frame"), "cities": cities}
    raise ValueError(shape)


def _nested(shape: str) -> Any:
    """The shops as records with nested fields: an address, tags, ratings and monthly sales, or,
    as ``dotted-*``, their figures in place of the sales."""
    dotted = shape in _DOTTED_FORMS
    shape = shape.replace("dotted-", "nested-")
    shops = [
        {
            "name": f"{_NAMES[i % 11]} {row['kind'].title()}" + ("" if i < 11 else f" {i // 11 + 1}"),
            "status": row["status"],
            "address": {"city": row["city"], "street": f"{_NAMES[i * 3 % 11]} Street {i % 40 + 1}"},
            "tags": [tag for k, tag in enumerate(["vegan", "wifi", "terrace"]) if (i + k) % (k + 2) == 0],
            "ratings": [(i * 7 + k * 3) % 5 + 1 for k in range(i % 4)] or None,
            "sales": [
                {
                    "month": f"{2020 + (i + m) % 3}-{m % 12 + 1:02d}",
                    "amount": round(200 + (i * 53 + m * 31) % 900 + m / 4, 2),
                }
                for m in range(i % 5)
            ],
        }
        for i, row in enumerate(_context("table")[:120])
    ]
    if dotted:
        for shop, row in zip(shops, _context("table"), strict=False):
            del shop["sales"]
            shop["figures"] = {"revenue": row["revenue"], "staff": 2 + row["id"] * 7 % 9}
    if shape == "nested-dict":  # by name, as trackers key their runs
        return {shop["name"]: {k: v for k, v in shop.items() if k != "name"} for shop in shops}
    if shape == "nested-key":
        return {"source": "shops register", "exported": "2024-02-01", "shops": shops}
    if shape == "nested-xml":  # as an export writes them: every value an element's text
        import xmltodict

        return xmltodict.unparse({"shops": {"shop": shops}}, pretty=True)
    return json.dumps(shops) if shape == "nested-json" else shops


def _reports(shape: str) -> Any:
    """The shops' daily reports: a dict of files by city and number, or a text of them."""
    reports = {}
    for i, row in enumerate(_context("table")[:300]):
        number = 1001 + i
        reports[f"reports/{row['city'].lower()}/{number}.txt"] = (
            f"Report {number} - {_NAMES[i % 11]} {row['kind'].title()} ({row['city']})\n"
            f"Date: {row['opened']}\nVisitors: {150 + i * 37 % 400}\n"
            f"Revenue: {row['revenue']:.2f} EUR\nNote: {_NOTES[i * 3 % 5]}"
        )
    return reports if shape == "files" else "\n\n".join(reports.values())


def _hops(shape: str) -> Any:
    """Filler, bookings that each name a ferry, and far from them, where each ferry leaves."""
    facts = [f"Booking {n} is for the ferry to {place}." for n, place, _ in _HOPS]
    facts += [f"The ferry to {place} leaves from pier {pier}." for _, place, pier in reversed(_HOPS)]
    sentences = _sentences(700, None)
    for k, fact in enumerate(facts):
        sentences.insert(40 + k * 80, fact)
    if shape == "documents":
        return [" ".join(sentences[i : i + 14]) for i in range(0, len(sentences), 14)]
    return "\n".join(sentences) if shape == "lines" else " ".join(sentences)


def _describe(shape: str) -> str:
    from .prompts import describe_context

    return describe_context(_metadata(shape, _has_pandas()))


@cache
def _metadata(shape: str, pandas: bool) -> dict[str, Any]:
    """A made-up context's metadata, made once for each shape (and whether pandas describes it)."""
    from .prompts import context_metadata

    return context_metadata(_context(shape))


def _user(shape: str, question: str) -> Message:
    return {"role": "user", "content": f"{_describe(shape)}\n\nQuestion: {question}"}


def _code(code: str) -> Message:
    return {"role": "assistant", "content": f"```repl\n{code}\n```"}


def _output(step: int, text: str) -> Message:
    return {"role": "user", "content": f"Output of step {step}:\n{text}"}


_WORDS = re.compile(r"[a-z]+|\d+")


# Words that say little of what a question asks: a question's other words choose its extra example.
_PLAIN = frozenset(
    "a an the of in on at to for by with from and or is are was were be been has have had do does did "
    "how many much what which who whose when where there their its it this that as per each all any "
    "than more most into out up one give".split()
)


def _words(text: str) -> set[str]:
    return {"#" if w.isdigit() else w for w in _WORDS.findall(text.lower())}


def _closest(
    examples: list[tuple[str, str]], question: str | None, more: Sequence[tuple[str, str]] = ()
) -> list[tuple[str, str]]:
    """The examples in order of how many words their question shares with the real one, the
    closest last (a small model copies the form of the example it saw last the most); and last,
    the one of ``more`` whose question shares the most words of substance with the real one,
    where it shares two or more, and more than every example's does."""
    if not question:
        return list(examples)
    words = _words(question)
    ranked = sorted(examples, key=lambda e: len(_words(e[0]) & words) / len(_words(e[0]) | words))
    said = words - _PLAIN

    def shared(example: tuple[str, str]) -> int:
        return len(_words(example[0]) & said)

    best = max(more, key=shared, default=None)
    if best is not None and shared(best) >= 2 and shared(best) > max(map(shared, ranked), default=0):
        ranked.append(best)
    return ranked


def _core(
    core: tuple[str, ...], examples: list[tuple[str, str]]
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``examples`` as the ones always shown, in ``core``'s order, and the others."""
    by_question = dict(examples)
    return [(q, by_question[q]) for q in core], [e for e in examples if e[0] not in core]


def _table_turns(shape: str, question: str, code: str) -> list[Message]:
    """One question about rows: the code that answers it, its true output, the answer."""
    namespace: dict[str, Any] = {"context": _context(shape)}
    exec(code.replace("print(n)", ""), namespace)  # noqa: S102 - our own code, run for its true output
    return [_user(shape, question), _code(code), _output(1, str(namespace["n"])), _code(_ANSWER)]


def _examples(shape: str) -> tuple[str, str, list[tuple[str, str]], list[tuple[str, str]]] | None:
    """For a shape with examples by question: the made-up context's shape, the lines that load
    it, the examples (question, code) always shown and those shown where the question is worded
    like theirs; None for a shape that has none."""
    if (rows := _questions_of_rows(shape)) is not None:
        context_shape, load, questions = rows
        examples, more = _core(_FRAME_CORE if shape == "frame" else _ROW_CORE, questions)
        return context_shape, load, examples, more
    if shape == "frames":
        context_shape, load, examples = "frames", _frames_load(_context("frames")), _FRAMES_EXAMPLES
    elif shape == "array":
        context_shape, load, examples = shape, "", _ARRAY_EXAMPLES
    elif shape.startswith("rows-"):  # rows without pandas: a list of dicts
        context_shape = shape.removeprefix("rows-")
        load, examples = ROW_LOADS[context_shape].format(sep=""), _ROWS_EXAMPLES
    elif shape in _NESTED_FORMS:
        examples = _NESTED_DICT_EXAMPLES if shape == "nested-dict" else _NESTED_EXAMPLES
        context_shape, load = shape, _load(shape)
    elif shape in _DOTTED_FORMS:
        examples = _DOTTED_DICT_EXAMPLES if shape == "dotted-dict" else _DOTTED_EXAMPLES
        return shape, _load(shape), examples, _DOTTED_MORE
    elif shape == "count-lines":
        context_shape, load, examples = "messages", _LINES_LOAD, _LINES_EXAMPLES
    elif shape in ("files", "records"):
        lookup = _FILE_LOOKUP if shape == "files" else _RECORD_LOOKUP
        context_shape, load, examples = shape, _load(shape), [*_RECORD_EXAMPLES, lookup]
    else:
        return None
    return context_shape, load, examples, []


def _questions_of_rows(shape: str) -> tuple[str, str, list[tuple[str, str]]] | None:
    """For rows in pandas (a DataFrame, records, CSV or JSON text, columns, tuples): the made-up
    context's shape, the lines that load it and the questions of rows, written for it."""
    if shape == "frame":
        return shape, "", [(q, _of_frame(c)) for q, c in _ROW_QUESTIONS]
    if shape in ("fwf", "report"):  # a text table: the lines give its columns' places
        return shape, _load(shape), _ROW_QUESTIONS
    if shape in LOADS:  # a list or dict of records, CSV or JSON
        keyed = shape == "dict"
        return (
            shape,
            LOADS[shape].format(sep=""),
            [_BY_KEY.get(q, (q, c)) if keyed else (q, c) for q, c in _ROW_QUESTIONS],
        )
    if shape == "columns":  # a dict of columns
        return shape, _load(shape), _ROW_QUESTIONS
    if shape == "tuples":  # rows without names: columns by position
        return shape, _load(shape), [(q, _by_position(c)) for q, c in _ROW_QUESTIONS]
    return None


def _by_question(shape: str, question: str | None) -> list[Message] | None:
    """The examples of counting and lookup over rows, lines, frames or records, the closest to
    the question last; None for a shape that has none."""
    if (found := _examples(shape)) is None:
        return None
    context_shape, load, examples, more = found
    turns: list[Message] = []
    for question_, code in _closest(examples, question, more):
        turns += _table_turns(context_shape, question_, f"{load}\n{code}" if load else code)
    return turns


@lru_cache(maxsize=64)
def _turns(shape: str, question: str | None = None) -> tuple[tuple[str, str], ...]:
    turns = _by_question(shape, question)
    if turns is None:
        turns = _worked_turns(shape)
    return tuple((m["role"], m["content"]) for m in turns)


def _worked_turns(shape: str) -> list[Message]:
    """The one worked example of a shape that is no table: labelling, two hops, a search."""
    if shape == "messages":
        lines = _context("messages").splitlines()
        counts = Counter(_MESSAGES[(i * i + i // 3) % 6][0] for i in range(len(lines)))
        turns = [
            _user(shape, _CLASSIFY_QUESTION),
            _code(_CLASSIFY_CODE),
            _output(1, repr(counts)),
            _code('answer["content"] = str(counts["complaint"])\nanswer["ready"] = True'),
        ]
    elif shape.startswith("hops-"):
        second = (
            f"# Found in [1]: the ferry to {_HOPS[0][1]}. Now: where does that ferry leave from?\n"
            f'search("ferry to {_HOPS[0][1]} pier")'
        )
        turns = [
            _user(shape, _HOP_QUESTION),
            _code(_HOP_CODE),
            _output(1, search_text(_context(shape), "booking 7734")),
            _code(second),
            _output(2, search_text(_context(shape), f"ferry to {_HOPS[0][1]} pier")),
            _code(f'answer["content"] = "pier {_HOPS[0][2]}"\nanswer["ready"] = True'),
        ]
    else:
        shape = shape if shape in ("text", "lines", "documents") else "text"
        turns = [
            _user(shape, _QUESTION),
            _code(f"search({json.dumps(_QUESTION)})"),
            _output(1, search_text(_context(shape), _QUESTION)),
            _code('answer["content"] = "pier 14"\nanswer["ready"] = True'),
        ]
    return turns


def _of_frame(code: str) -> str:
    """A question's code over rows, over a DataFrame context: ``df`` is the context itself."""
    return ("import pandas as pd\n" if "pd." in code else "") + f"df = context\n{code}"


def _by_position(code: str) -> str:
    """Code over the shops' columns by name, over them by position instead."""
    for k, name in enumerate(_context("table")[0]):
        code = code.replace(f'"{name}"', str(k))
    return code


def _load(shape: str) -> str:
    """The lines that load a made-up context, as its description gives them."""
    return _metadata(shape, _has_pandas())["load"]


def _frames_load(frames: Mapping[str, Any]) -> str:
    """The lines that load each frame of a dict of DataFrames as a name, as its description gives them."""
    from .structured import frames_metadata

    return (frames_metadata(frames) or {}).get("load", "")


def _rows_kind(meta: Mapping[str, Any]) -> str:
    """Where rows are: a ``list`` or ``dict`` of records, or ``csv``, ``json``, ``fwf`` (a text
    table) or ``report`` (a printed report) text."""
    if meta.get("type") == "str":
        return {"json": "json", "fwf": "fwf", "report": "report"}.get(meta.get("format", ""), "csv")
    return "dict" if "dict" in str(meta.get("type", "")).lower() else "list"


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def _example_shape(meta: Mapping[str, Any], question: str | None) -> str:
    shape = meta.get("shape", "text")
    if ("files" in meta or "records" in meta) and "load" in meta:  # records of text, as rows
        return "messages" if _labelled(question) else "files" if "files" in meta else "records"
    if meta.get("by_columns") or meta.get("by_rows"):
        return "columns" if meta.get("by_columns") else "tuples"
    if "nested" in meta:  # records with nested fields, in the form they come in
        # with a table of the items of each list of records, or none: nested dicts alone
        form = "nested" if meta.get("children") else "dotted"
        if meta.get("type") == "str":
            return f"{form}-{meta.get('format', 'json')}"
        if "dict" not in str(meta.get("type", "")).lower():
            return f"{form}-list"
        return f"{form}-dict" if meta["nested"] == "context" else f"{form}-key"
    if shape == "table":  # pandas, as the description loads them, unless it said otherwise
        kind = _rows_kind(meta)
        pandas = "pd." in meta["load"] if "load" in meta else _has_pandas()
        return kind if pandas else f"rows-{kind}"
    if shape in ("lines", "text", "documents") and _labelled(question):
        return "messages"  # a question that counts items by a label the data does not show
    if shape == "lines" and question and _COUNTING.search(question):
        return "count-lines"  # counted in code over the lines, not read off a search's matches
    if shape in ("lines", "text", "documents") and two_hops(question):
        return f"hops-{shape}"
    return shape


_LOADED = ("dims", "files", "records")  # metadata of a context the description gives load lines for


def reply_start(meta: Mapping[str, Any], question: str | None = None) -> tuple[str, str | None]:
    """How the root's first reply begins, for a backend that continues a reply: the worked
    example's first line of code up to what depends on the question, and, where the first call
    is ``search("...")``, the ``")`` that closes it, at which the reply stops. A small model then
    looks at the context before it answers, and does not go on to write the call's output itself."""
    first = example_turns(meta, question)[1]["content"]
    # No start ends in a space: the tokenizer joins a space to the word after it, so a model made
    # to begin with a bare space writes what it seldom saw (one model wrote `classify(items, 0)`).
    for mark, closing in (("# Two steps: find", None), ('search("', '")'), ("classify(items,", None)):
        if mark in first:  # under a plan of two hops, the plan is the model's own to write
            return first[: first.index(mark) + len(mark)], closing
    if meta.get("load") and (meta.get("shape") in ("frames", "table") or any(k in meta for k in _LOADED)):
        return f"```repl\n{meta['load']}\n", None  # rows, frames, records: the lines that load them
    if first.startswith(f"```repl\n{_LINES_LOAD}\n"):  # lines: the lines that read them
        return f"```repl\n{_LINES_LOAD}\n", None
    for mark in ("\ndf = ", "\nrows = "):  # rows: the lines that load them, as the description gave
        if mark in first:
            return first[: first.index("\n", first.index(mark) + 1) + 1], None
    return first[: first.index("\n", first.index("```repl\n") + 8) + 1], None  # its first line


def two_hops(question: str | None) -> bool:
    """Whether a question asks about a thing named only through another one."""
    return bool(question and _TWO_HOP.search(question))


def reply_starts(meta: Mapping[str, Any], question: str | None = None) -> dict[int, tuple[str, str | None]]:
    """How the root's replies begin, by turn: the first as :func:`reply_start` says; under a
    plan of two hops, the second too, with what the first search found, in the model's words."""
    starts = {1: reply_start(meta, question)}
    if "# Two steps: " in starts[1][0]:
        starts[2] = ("```repl\n# Found in [1]:", None)
    return starts


_STEP_LINE = re.compile(r'File "<rlm-step-\d+(?:-[0-9a-f]+)?>", line (\d+)')


def retry_start(code: str, error: str, first: tuple[str, str | None] | None) -> tuple[str, str | None] | None:
    """How the reply after a failed step begins: that step's code up to the line that raised, so
    the root writes that line anew. A small model shown an error otherwise copies its worked
    example's next turn, which sets the answer from a variable the failed step never made. Where
    the first line raised, the reply begins as the first one did."""
    lines = [int(n) for n in _STEP_LINE.findall(error)]
    kept = code.splitlines()[: lines[-1] - 1] if lines else []
    while kept:
        try:
            ast.parse("\n".join(kept))
            break
        except SyntaxError:
            kept.pop()  # not cut inside a statement
    if lines and len(kept) == lines[-1] - 1:
        line = code.splitlines()[len(kept)]
        loaded = re.findall(r"^(\w+) = ", first[0], re.M) if first else []
        if (
            fixed := _column_fixed(line, error)
            or _frame_fixed(line, error, loaded)
            or _precedence_fixed(line, error)
        ):
            kept.append(fixed)
    if not kept:
        return first
    return "```repl\n" + "\n".join(kept) + "\n", None


_PRINTED = re.compile(r"print\(([A-Za-z_]\w*)\)")


def answer_start(code: str, output: str) -> tuple[str, str | None] | None:
    """How the reply after a step that printed one short value of a variable begins, as the worked
    examples' next turn does: ``answer["content"] = str(<that variable>)``. A small model
    otherwise copies that turn's ``str(n)`` whatever its own variable is called, and the
    ``NameError`` it gets is sent back turn after turn. None after any other step."""
    lines = [line for line in code.splitlines() if line.strip()]
    printed = _PRINTED.fullmatch(lines[-1]) if lines else None
    shown = output.strip()
    if not printed or printed[1] in ("answer", "context") or not shown or "\n" in shown or len(shown) > 200:
        return None
    return f'```repl\nanswer["content"] = str({printed[1]})\n', None


_MISSING = re.compile(r"KeyError: '([^'\n]+)'\nHint: Close column names: '([^'\n]+)'\.")


def _column_fixed(line: str, error: str) -> str | None:
    """The line that raised a ``KeyError`` on a column, with the column named as the frame names
    it, where the frame has just one column of that name inside a nested one (``metrics.val_acc``
    for ``val_acc``): the correction its ``Hint:`` line gives, made."""
    found = _MISSING.search(error)
    if not found or not found[2].endswith("." + found[1]):
        return None
    key, column = found[1], found[2]
    fixed = line.replace(f'"{key}"', f'"{column}"').replace(f"'{key}'", f"'{column}'")
    try:
        ast.parse(fixed.strip())
    except SyntaxError:
        return None
    return fixed if fixed != line else None


_ELSEWHERE = re.compile(
    r"^KeyError: '([^'\n]+)'\nHint: '[^'\n]+' is a column of (\w+)\. Columns of the DataFrames: (.*)\.$", re.M
)


def _frame_fixed(line: str, error: str, loaded: list[str]) -> str | None:
    """The line that raised a ``KeyError`` on a column of another of the frames the load lines
    made (``df["station"]`` where only ``calls_df`` has it), with that frame, where it has every
    column the line reads: an item table holds its record's fields too. Else None."""
    found = _ELSEWHERE.search(error)
    if not found or found[2] not in loaded:
        return None
    key, holder = found[1], found[2]
    columns = dict(part.split(": ", 1) for part in found[3].split("; ") if ": " in part)
    has = set(columns.get(holder, "").split(", "))
    wrong = set(re.findall(r"\b(\w+)\[\s*['\"]" + re.escape(key) + r"['\"]\s*\]", line))
    if len(wrong) != 1 or (frame := wrong.pop()) not in loaded or frame == holder:
        return None
    read = re.findall(rf"\b{frame}\[\s*['\"]([^'\"]+)['\"]\s*\]", line)
    if not set(read) <= has:
        return None
    return re.sub(rf"\b{frame}\b(?=\s*[\[.])", holder, line)


class _Conditions(ast.NodeTransformer):
    """``a >= x & b <= y``, which Python reads as ``a >= (x & b) <= y``, as it was meant:
    ``(a >= x) & (b <= y)``. Chained comparisons without ``&`` or ``|`` are left as they are."""

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        middle = node.comparators[:-1]
        joins = [c for c in middle if isinstance(c, ast.BinOp) and isinstance(c.op, (ast.BitAnd, ast.BitOr))]
        if not middle or len(joins) < len(middle):
            return node
        lefts = [node.left, *(join.right for join in joins)]
        rights = [*(join.left for join in joins), node.comparators[-1]]
        conditions = [
            ast.Compare(left=left, ops=[op], comparators=[right])
            for left, op, right in zip(lefts, node.ops, rights, strict=True)
        ]
        joined: ast.expr = conditions[0]
        for join, condition in zip(joins, conditions[1:], strict=True):
            joined = ast.BinOp(joined, join.op, condition)
        return joined


def _precedence_fixed(line: str, error: str) -> str | None:
    """The line that raised a ``TypeError`` or ``ValueError`` where conditions joined with ``&``
    or ``|`` lack their parentheses (pandas' most common slip), with them; else None."""
    if not re.search(r"^(TypeError|ValueError): ", error, re.M) or not re.search(r"[&|]", line):
        return None
    indent = line[: len(line) - len(line.lstrip())]
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return None
    fixed = indent + ast.unparse(_Conditions().visit(tree))
    return fixed if ast.dump(ast.parse(fixed.strip())) != ast.dump(ast.parse(line.strip())) else None


def example_turns(meta: Mapping[str, Any], question: str | None = None) -> list[Message]:
    """The worked example for a context with this metadata (its shape, and for rows whether they
    come as text) and this question, as alternating user and assistant turns."""
    shape = _example_shape(meta, question)
    by_question = shape in (
        "frame",
        "frames",
        "array",
        "count-lines",
        "files",
        "records",
        "columns",
        "tuples",
        "report",
        *LOADS,
        *_NESTED_FORMS,
    )
    by_question = by_question or shape.startswith("rows-")
    turns = _turns(shape, question if by_question else None)
    return [{"role": role, "content": content} for role, content in turns]  # type: ignore[typeddict-item]
