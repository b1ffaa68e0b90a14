"""Questions about a notebook file: the context is the notebook's JSON, loaded as a dict.

What ``json.load(open(path))`` leaves in a notebook when the file is another notebook: cells in
their order, some run out of order, some more than once and some never, each with what it printed,
displayed or raised. A section starts at a markdown heading. Cells are written until the JSON
(indented, as a plain model reads it) is about the length asked for. Kinds of question:

- ``defines``: the cell that defines a named function (other cells call it, and functions with
  nearly the same name are defined elsewhere): its execution count (``dev``) or its id (``test``);
- ``errors``: how many cells ended in one kind of exception (others failed with other kinds, and
  some cells name it in an ``except`` clause without failing);
- ``section``: the number printed by the first code cell under a heading (headings that differ by
  a few words stand beside it);
- ``last_run``: the number printed by the cell run most recently, which the execution counts
  (``dev``) or run times (``test``) say, not the cells' order (the user went back to an earlier
  cell at the end).

Every answer is computed from the cells the generator wrote. Score: ``exact`` (numbers as
numbers, ids without case).

Splits: ``dev`` is a Jupyter notebook (nbformat 4: ``cells``, ``cell_type``, ``source`` as a list
of lines, ``outputs`` with ``stream``, ``execute_result`` and ``error``, ``execution_count``) of a
retail analysis in pandas; ``test`` is an Apache Zeppelin note (``paragraphs``, ``text`` starting
``%pyspark`` or ``%md``, ``status``, ``results.msg``, ``dateStarted`` and ``dateFinished`` written
as ``Mar 4, 2025 9:15:30 AM``) of web analytics in PySpark: other formats, fields, code, domain
and wording.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("defines", "errors", "section", "last_run")


@dataclass(frozen=True)
class _Vocab:
    verbs: tuple[str, ...]
    nouns: tuple[str, ...]
    suffixes: tuple[str, ...]
    frames: tuple[str, ...]
    columns: tuple[str, ...]
    values: tuple[str, ...]
    labels: tuple[str, ...]
    topics: tuple[str, ...]
    qualifiers: tuple[str, ...]
    notes: tuple[str, ...]
    errors: tuple[str, ...]


_DEV = _Vocab(
    verbs=("load", "clean", "merge", "summarise", "score", "export", "tag", "reshape"),
    nouns=("orders", "returns", "customers", "stores", "prices", "baskets", "refunds", "stock"),
    suffixes=("_v2", "_raw", "_fast"),
    frames=("orders", "returns", "customers", "stores", "baskets", "stock"),
    columns=("region", "store_id", "qty", "unit_price", "revenue", "channel", "customer_id"),
    values=("North", "South", "online", "outlet", "East", "West"),
    labels=("rows after cleaning", "orders without a store", "distinct customers", "late deliveries",
            "returned items", "duplicate order ids", "baskets over the threshold", "stores reporting",
            "rows dropped", "negative quantities"),
    topics=("Load the raw files", "Cleaning", "Revenue by region", "Returns", "Store coverage",
            "Customer cohorts", "Basket size", "Price checks", "Channel mix", "Stock levels",
            "Late deliveries", "Duplicates", "Refunds", "Promotions", "Outliers", "Seasonality"),
    qualifiers=("", " (2023)", " (2024)", ", excluding returns", ", second pass", ": checks", " by month",
                ", online only"),
    notes=("The March file repeats some order ids; they are dropped below.",
           "Numbers here are before returns.", "TODO: ask finance about the outlet stores.",
           "Quantities under zero are corrections, not returns.", "Slow cell: reads every CSV again."),
    errors=("KeyError", "NameError", "AttributeError", "ValueError", "TypeError", "ZeroDivisionError"),
)  # fmt: skip

_TEST = _Vocab(
    verbs=("parse", "sessionize", "dedupe", "enrich", "bucket", "rank", "filter", "explode"),
    nouns=("events", "clicks", "sessions", "pageviews", "users", "referrers", "campaigns", "devices"),
    suffixes=("_udf", "_legacy", "_daily"),
    frames=("events", "clicks", "sessions", "pageviews", "users"),
    columns=("country", "device", "referrer", "user_id", "campaign", "browser", "path"),
    values=("DE", "FR", "mobile", "desktop", "newsletter", "organic"),
    labels=("sessions counted", "bounced sessions", "unique visitors", "bot hits removed",
            "events without a user", "checkout views", "campaign clicks", "short sessions",
            "late events", "pages per session over ten"),
    topics=("Read the raw events", "Sessionization", "Sessions per country", "Bounce rate",
            "Campaign attribution", "Device mix", "Referrers", "Funnel", "Retention", "Data quality",
            "Bot traffic", "Latency", "Landing pages", "Search terms", "Cohorts", "Exports"),
    qualifiers=("", " (EU)", " (US)", " v2", ", sanity checks", ": draft", " per week", ", mobile only"),
    notes=("Events before the tracking fix are dropped.", "Counts are per session, not per user.",
           "Ask the data team whether bots are filtered upstream.", "Slow: scans the whole month.",
           "The EU cluster clock was off by an hour until the 12th."),
    errors=("AnalysisException", "ValueError", "TypeError", "NameError", "IndexError", "KeyError"),
)  # fmt: skip

_PRINT, _SHOW, _DEF, _ERROR, _HEADING, _PROSE = "print", "show", "def", "error", "heading", "prose"
_CODE = (_PRINT, _SHOW, _DEF, _ERROR)


@dataclass
class Cell:
    kind: str
    source: str
    heading: str = ""
    value: int | None = None  # the number a print cell prints
    label: str = ""
    shown: str = ""  # what a show cell displays
    error: tuple[str, str] | None = None  # (exception, message)
    defines: str = ""
    must_run: bool = False
    ident: str = ""
    created: datetime | None = None  # when the paragraph was written (test)
    run: int | None = None  # the last of the session's runs that ran it (1, 2, ...), None: never


class _Names:
    """Unique names drawn from a shuffled pool, then numbered ones when it runs out."""

    def __init__(self, rng: random.Random, pool: list[str], joiner: str = "_{}") -> None:
        self.rng, self.pool, self.seen, self.k, self.joiner = rng, pool, set(), 1, joiner
        rng.shuffle(self.pool)

    def next(self) -> str:
        while self.pool:
            name = self.pool.pop()
            if name not in self.seen:
                self.seen.add(name)
                return name
        self.k += 1
        return self.rng.choice(sorted(self.seen)) + self.joiner.format(self.k)


def _exception(split: str, ename: str, v: _Vocab, rng: random.Random) -> tuple[str, str]:
    """A failing line of code and the exception's message."""
    df, col = rng.choice(v.frames), rng.choice(v.columns)
    typo = col[:-1] + col[-1] * 2 if rng.random() < 0.5 else col[:2] + col[3:]
    if ename == "KeyError":
        return f'{df}["{typo}"].sum()', f"'{typo}'"
    if ename == "NameError":
        name = f"{df}_{'clean' if split == 'dev' else 'tmp'}"
        return f"{name}.shape" if split == "dev" else f"{name}.count()", f"name '{name}' is not defined"
    if ename == "AttributeError":
        return f'{df}.groupy("{col}").size()', "'DataFrame' object has no attribute 'groupy'"
    if ename == "ValueError":
        return f'{df}["{col}"].astype(int)', "invalid literal for int() with base 10: 'n/a'"
    if ename == "TypeError":
        return f'{df}["{col}"] + 1', 'can only concatenate str (not "int") to str'
    if ename == "ZeroDivisionError":
        return f'{df}["qty"].sum() / len({df}_empty)', "division by zero"
    if ename == "IndexError":
        return f"{df}.take(5)[7]", "list index out of range"
    return (  # AnalysisException
        f'{df}.select("{typo}").show()',
        f"[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column or function parameter with name `{typo}` cannot "
        f"be resolved. Did you mean one of the following? [`{col}`].",
    )


def _code_print(split: str, v: _Vocab, rng: random.Random, fns: list[str], label: str) -> str:
    df, col, val = rng.choice(v.frames), rng.choice(v.columns), rng.choice(v.values)
    var = f"{df}_{rng.choice(('f', 'x', 'sub', 'tmp'))}"
    call = f"{rng.choice(fns)}({df})" if fns else (f"{df}.dropna()" if split == "dev" else f"{df}.na.drop()")
    guard = rng.choice(v.errors) if rng.random() < 0.3 else None
    if split == "dev":
        expr = rng.choice(
            (f"len({var})", f'{var}["{col}"].nunique()', f'int(({var}["{col}"] == "{val}").sum())')
        )
        show = f'print(f"{label}: {{n}}")'
    else:
        expr = rng.choice((f"{var}.count()", f'{var}.filter(F.col("{col}") == "{val}").count()',
                           f'{var}.select("{col}").distinct().count()'))  # fmt: skip
        show = f'print("{label} =", n)'
    if guard is None:
        return f"{var} = {call}\nn = {expr}\n{show}"
    return f"{var} = {call}\ntry:\n    n = {expr}\nexcept {guard}:\n    n = 0\n{show}"


def _code_def(split: str, v: _Vocab, rng: random.Random, fn: str) -> str:
    col, other = rng.sample(v.columns, 2)
    doc = f'    """{fn.replace("_", " ").capitalize()} for the report."""\n' if rng.random() < 0.5 else ""
    if split == "dev":
        return (
            f'def {fn}(df):\n{doc}    out = df[df["{col}"].notna()].copy()\n'
            f'    out["{other}"] = out["{other}"].astype("{rng.choice(("category", "float64", "string"))}")\n'
            "    return out"
        )
    return (
        f'def {fn}(df):\n{doc}    return (df.filter(F.col("{col}").isNotNull())\n'
        f'              .withColumn("{other}", F.lower(F.col("{other}"))))'
    )


def _code_show(split: str, v: _Vocab, rng: random.Random) -> tuple[str, str]:
    df, col = rng.choice(v.frames), rng.choice(v.columns)
    keys = rng.sample(v.values, 3)
    counts = [rng.randint(10, 9999) for _ in keys]
    if split == "dev":
        rows = "\n".join(f"{k:<10}{n:>8}" for k, n in zip(keys, counts, strict=True))
        return f'{df}.groupby("{col}").size().head(3)', f"{col}\n{rows}\ndtype: int64"
    rows = "\n".join(f"{k}\t{n}" for k, n in zip(keys, counts, strict=True))
    return f'z.show({df}.groupBy("{col}").count().limit(3))', f"{col}\tcount\n{rows}\n"


class _Writer:
    """Writes a notebook's cells, section by section, drawing names and numbers without repeats."""

    def __init__(self, split: str, rng: random.Random) -> None:
        self.split, self.rng = split, rng
        self.v = _DEV if split == "dev" else _TEST
        v = self.v
        self.headings = _Names(rng, [t + q for t in v.topics for q in v.qualifiers], " (part {})")
        self.fns = _Names(rng, [f"{a}_{b}" for a in v.verbs for b in v.nouns])
        self.defined: list[str] = []
        self.values: set[int] = set()

    def value(self) -> int:
        while True:
            n = self.rng.choice((self.rng.randint(100, 9999), self.rng.randint(10_000, 999_999)))
            if n not in self.values:
                self.values.add(n)
                return n

    def function(self) -> str:
        """A new function's name; often an earlier one's with a suffix (``load_orders_v2``)."""
        if self.defined and self.rng.random() < 0.4:
            base = self.rng.choice(self.defined)
            for suffix in self.rng.sample(self.v.suffixes, len(self.v.suffixes)):
                if base + suffix not in self.defined:
                    return base + suffix
        return self.fns.next()

    def printer(self, must_run: bool = False) -> Cell:
        label = self.rng.choice(self.v.labels)
        source = _code_print(self.split, self.v, self.rng, self.defined[-6:], label)
        return Cell(_PRINT, source, value=self.value(), label=label, must_run=must_run)

    def cell(self) -> Cell:
        rng, v = self.rng, self.v
        kind = rng.choices((_PRINT, _SHOW, _DEF, _ERROR, _PROSE), (36, 18, 20, 16, 10))[0]
        if kind == _PRINT:
            return self.printer()
        if kind == _DEF:
            fn = self.function()
            self.defined.append(fn)
            return Cell(_DEF, _code_def(self.split, v, rng, fn), defines=fn, must_run=True)
        if kind == _SHOW:
            source, shown = _code_show(self.split, v, rng)
            return Cell(_SHOW, source, shown=shown)
        if kind == _ERROR:
            ename = rng.choice(v.errors)
            line, message = _exception(self.split, ename, v, rng)
            return Cell(_ERROR, line, error=(ename, message))
        return Cell(_PROSE, rng.choice(v.notes))

    def section(self) -> list[Cell]:
        heading = self.headings.next()
        hashes = self.rng.choice(("##", "###"))
        out = [Cell(_HEADING, f"{hashes} {heading}", heading=heading), self.printer(must_run=True)]
        return out + [self.cell() for _ in range(self.rng.randint(1, 6))]


def _session(rng: random.Random, cells: list[Cell]) -> list[Cell]:
    """Runs the cells as a user would, top to bottom with some skipped and some run again; the
    cells run, in order (each one's ``run`` the last of them), ending on an earlier print cell."""
    events: list[Cell] = []
    i, steps = 0, 0
    while i < len(cells) and steps < 6 * len(cells):
        c, steps = cells[i], steps + 1
        if c.must_run or c.kind in (_HEADING, _PROSE) or rng.random() < 0.88:
            events.append(c)
        if i > 4 and rng.random() < 0.06:
            i -= rng.randint(1, 4)  # back up to run a few cells again
        i += 1
    code = [c for c in cells if c.kind in _CODE]
    earlier = [c for c in code[: max(1, int(len(code) * 0.8))] if c.kind == _PRINT]
    events.append(rng.choice(earlier))
    for k, c in enumerate(events, 1):
        c.run = k
    return events


def _cells(split: str, rng: random.Random, chars: int) -> tuple[list[Cell], list[Cell]]:
    w = _Writer(split, rng)
    cells: list[Cell] = []
    idents: set[str] = set()
    created = datetime(2025, 2, 24, 14, 0)
    size = 600  # the notebook's metadata
    while size < chars:
        section = w.section()
        cells += section
        for c in section:
            if split == "dev":
                while not c.ident or c.ident in idents:
                    c.ident = f"{rng.getrandbits(32):08x}"
                idents.add(c.ident)
            else:
                created += timedelta(seconds=rng.randint(30, 900))
                c.created = created
                ms = (created - datetime(1970, 1, 1)) // timedelta(milliseconds=1)
                c.ident = f"paragraph_{ms}_{rng.randint(10**8, 2 * 10**9)}"
            size += _cost(split, c)
    return cells, _session(rng, cells)


def _cost(split: str, c: Cell) -> int:
    """What the cell costs in the notebook's indented JSON, were it run."""
    if split == "dev":
        text = json.dumps(_ipynb_cell(c, 100), indent=1)
    else:
        text = json.dumps(_paragraph(c, (c.created, c.created)), indent=1)
    return len(text) + 3 + 2 * text.count("\n")  # two levels deeper in the notebook


# -- dev: nbformat 4 ----------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _ipynb_outputs(c: Cell, count: int) -> list[dict]:
    if c.kind == _PRINT:
        return [{"name": "stdout", "output_type": "stream", "text": [f"{c.label}: {c.value}\n"]}]
    if c.kind == _SHOW:
        data = {"text/plain": _lines(c.shown)}
        return [{"data": data, "execution_count": count, "metadata": {}, "output_type": "execute_result"}]
    if c.kind == _ERROR:
        ename, message = c.error
        red, green, end = "\x1b[0;31m", "\x1b[0;32m", "\x1b[0m"
        trace = [
            f"{red}{'-' * 75}{end}",
            f"{red}{ename}{end}{' ' * max(1, 42 - len(ename))}Traceback (most recent call last)",
            f"Cell {green}In[{count}], line 1{end}\n{green}----> 1{end} {c.source}\n",
            f"{red}{ename}{end}: {message}",
        ]
        return [{"ename": ename, "evalue": message, "output_type": "error", "traceback": trace}]
    return []


def _ipynb_cell(c: Cell, count: int | None) -> dict:
    if c.kind in (_HEADING, _PROSE):
        return {"cell_type": "markdown", "id": c.ident, "metadata": {}, "source": _lines(c.source)}
    return {
        "cell_type": "code",
        "execution_count": count,
        "id": c.ident,
        "metadata": {},
        "outputs": _ipynb_outputs(c, count) if count else [],
        "source": _lines(c.source),
    }


def _ipynb(cells: list[Cell], events: list[Cell]) -> dict:
    # a cell's count is the number its last run got; runs are numbered only among code cells
    numbered: dict[int, int] = {}
    n = 0
    for c in events:
        if c.kind in _CODE:
            n += 1
            numbered[id(c)] = n
    return {
        "cells": [_ipynb_cell(c, numbered.get(id(c))) for c in cells],
        "metadata": {
            "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
            "language_info": {"name": "python", "version": "3.11.7", "mimetype": "text/x-python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


# -- test: a Zeppelin note ----------------------------------------------------------------------


def zeppelin_time(t: datetime) -> str:
    """A time as Zeppelin writes it in a note: ``Mar 4, 2025 9:15:30 AM``."""
    return f"{t:%b} {t.day}, {t.year} {(t.hour % 12) or 12}:{t:%M:%S} {'AM' if t.hour < 12 else 'PM'}"


def _timeline(rng: random.Random, events: list[Cell]) -> dict[int, tuple[datetime, datetime]]:
    """When each paragraph last started and finished."""
    t = datetime(2025, 3, 3, 9, rng.randint(0, 40), rng.randint(0, 59))
    out = {}
    for c in events:
        start = t + timedelta(seconds=rng.randint(8, 1500))
        if rng.random() < 0.04:  # the next working session, another day
            start = datetime(start.year, start.month, start.day, 8, 30) + timedelta(
                days=1, minutes=rng.randint(0, 300)
            )
        t = start + timedelta(seconds=rng.randint(1, 150))
        out[id(c)] = (start, t)
    return out


def _html(body: str) -> tuple[str, dict]:
    return "FINISHED", {
        "code": "SUCCESS",
        "msg": [{"type": "HTML", "data": f'<div class="markdown-body">\n{body}\n</div>'}],
    }


def _zeppelin_results(c: Cell) -> tuple[str, dict]:
    if c.kind == _HEADING:
        level = c.source.split()[0].count("#")
        return _html(f"<h{level}>{c.heading}</h{level}>")
    if c.kind == _PROSE:
        return _html(f"<p>{c.source}</p>")
    if c.kind == _PRINT:
        return "FINISHED", {"code": "SUCCESS", "msg": [{"type": "TEXT", "data": f"{c.label} = {c.value}\n"}]}
    if c.kind == _SHOW:
        return "FINISHED", {"code": "SUCCESS", "msg": [{"type": "TABLE", "data": c.shown}]}
    if c.kind == _ERROR:
        ename, message = c.error
        qualified = f"pyspark.errors.exceptions.captured.{ename}" if ename == "AnalysisException" else ename
        trace = (
            "Traceback (most recent call last):\n"
            '  File "/tmp/python7211853960237761541/zeppelin_python.py", line 167, in <module>\n'
            "    exec(code, _zcUserQueryNameSpace)\n"
            f'  File "<stdin>", line 1, in <module>\n{qualified}: {message}\n'
        )
        return "ERROR", {"code": "ERROR", "msg": [{"type": "TEXT", "data": trace}]}
    return "FINISHED", {"code": "SUCCESS", "msg": []}


def _paragraph(c: Cell, span: tuple[datetime, datetime] | None) -> dict:
    md = c.kind in (_HEADING, _PROSE)
    p = {
        "text": ("%md\n" if md else "%pyspark\n") + c.source,
        "user": "anonymous",
        "dateUpdated": zeppelin_time(c.created),
        "config": {"editorMode": "ace/mode/markdown" if md else "ace/mode/python", "editorHide": md},
        "jobName": c.ident,
        "id": c.ident,
        "dateCreated": zeppelin_time(c.created),
    }
    if span is None:
        p["status"] = "READY"
    else:
        p["dateStarted"], p["dateFinished"] = zeppelin_time(span[0]), zeppelin_time(span[1])
        p["status"], p["results"] = _zeppelin_results(c)
    return p


def _zeppelin(rng: random.Random, cells: list[Cell], events: list[Cell]) -> dict:
    times = _timeline(rng, events)
    return {
        "paragraphs": [_paragraph(c, times.get(id(c))) for c in cells],
        "name": "analytics/sessions_q1",
        "id": "2JX" + "".join(rng.choice("ABCDEFGHJKMNPQRSTUVWXYZ23456789") for _ in range(6)),
        "defaultInterpreterGroup": "spark",
        "version": "0.10.1",
        "noteParams": {},
        "noteForms": {},
        "config": {"isZeppelinNotebookCronEnable": False},
        "info": {},
    }


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _ask_defines(split: str, rng: random.Random, cells: list[Cell], context: dict) -> _Asked:
    defs = [c for c in cells if c.kind == _DEF]
    if not defs:
        return None
    names = [c.defines for c in defs]
    alike = [c for c in defs if any(o != c.defines and o.startswith(c.defines) for o in names)]
    if not alike:
        return None
    c = rng.choice(alike)  # one with a longer look-alike defined in another cell
    if split == "dev":
        count = _count_of(context, c.ident)
        q = f"Which execution count does the cell that defines the function `{c.defines}` show (its In [n])?"
        return (q, count, {"function": c.defines}) if count else None
    q = f"Give the id of the paragraph whose code defines the function {c.defines} (def {c.defines}(...))."
    return q, c.ident, {"function": c.defines}


def _count_of(context: dict, ident: str) -> int | None:
    return next(c["execution_count"] for c in context["cells"] if c["id"] == ident)


def _ask_errors(split: str, rng: random.Random, cells: list[Cell], context: dict) -> _Asked:
    failed = [c.error[0] for c in cells if c.kind == _ERROR and c.run is not None]
    if not failed:
        return None
    ename = rng.choice(sorted(set(failed)))
    n = failed.count(ename)
    if split == "dev":
        return f"How many code cells have an error output whose exception is {ename}?", n, {"ename": ename}
    return f"Count the paragraphs that failed (status ERROR) raising {ename}.", n, {"ename": ename}


def _ask_section(split: str, rng: random.Random, cells: list[Cell], context: dict) -> _Asked:
    i = rng.choice([k for k, c in enumerate(cells) if c.kind == _HEADING])
    first = next(c for c in cells[i + 1 :] if c.kind in _CODE)
    if first.kind != _PRINT or first.run is None:
        return None
    h = cells[i].heading
    if split == "dev":
        q = f'What number did the first code cell under the markdown heading "{h}" print?'
        return q, first.value, {"heading": h}
    q = f"Below the %md paragraph titled '{h}', the next code paragraph prints a count: which number?"
    return q, first.value, {"heading": h}


def _ask_last_run(split: str, rng: random.Random, cells: list[Cell], context: dict) -> _Asked:
    last = max((c for c in cells if c.run is not None and c.kind in _CODE), key=lambda c: c.run)
    if split == "dev":
        q = "What number did the last-run cell print (the code cell with the highest execution_count)?"
        return q, last.value, {}
    q = "The paragraph that finished last (the latest dateFinished) printed a count. What was the number?"
    return q, last.value, {}


_ASK = {"defines": _ask_defines, "errors": _ask_errors, "section": _ask_section, "last_run": _ask_last_run}


@family(
    "notebook",
    "a notebook's JSON as a dict (cells, outputs, run order): definitions, errors, sections (ipynb in dev)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    cells, events = _cells(ref.split, rng, ref.chars)
    context = _ipynb(cells, events) if ref.split == "dev" else _zeppelin(rng, cells, events)
    kind = KINDS[ref.index % len(KINDS)]
    # other names and headings, then the last run, which always has an answer
    kind, asked = draw_question(lambda kind_: _ASK[kind_](ref.split, rng, cells, context), kind, "last_run")
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict (notebook JSON)",
        cells=len(cells),
    )
