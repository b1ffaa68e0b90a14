"""Questions about data frames and arrays: the context is a pandas DataFrame, Series or numpy array.

A notebook's data is mostly tables, so here the context is one, as pandas holds it (not as text):
``rows = clamp(chars // 60, 3_000, 100_000)``, sixty characters being about one row written as
CSV (``meta["chars"]`` records the context's real size as CSV). The table has a datetime64
column, a categorical column, a string column, integers, floats and a boolean. Kinds of question
on a table:

- ``count``: rows where a column has a value;
- ``count2``: rows where a column has a value and a number passes a threshold;
- ``aggregate``: the sum or mean of a column over a filter, rounded as asked;
- ``top``: the group with the largest total (a name; the winner leads by at least 2%);
- ``distinct``: the distinct values of a column over a filter.

One index in seven asks ``exceed`` (how many values pass a threshold) and one in seven ``argmax``
(the position, or index label, of the largest value, which is unique) about a 1-D numpy array or
a pandas Series of the same length instead (they alternate). Every answer is computed with pandas.
Score: ``exact``.

Splits: ``dev`` holds weather stations' readings (and river gauge levels for arrays), ``test`` a
library's loans (and checkouts per item): other columns, dtypes, value ranges and wordings.
"""

from __future__ import annotations

import random
from datetime import datetime

from .tasks import Task, TaskRef, asked_task, family

__all__ = ["KINDS", "rows_for", "make"]

KINDS = ("count", "count2", "aggregate", "top", "distinct", "exceed", "argmax")

_STATIONS = ("Kestrel Point", "Harrow Fell", "Oldmere", "Brackwater", "Sella Ridge", "Tarnby", "Wexcombe",
             "Dunholt", "Marrow Bay", "Ilsey Moor", "Corran Head", "Fenwick Cross", "Grisby", "Lowther Gap",
             "Penhale", "Quarry Knoll", "Rindle", "Stowey Beacon", "Ulvand", "Varrow Sound")  # fmt: skip
_SENSORS = ("WX-10", "WX-20", "WX-20b", "Hydra-3", "Aneto", "Boreas S", "Calyx")
_BRANCHES = ("Central", "Riverside", "Northgate", "Elm Park", "Harbour", "Old Town", "Westfield", "Millbrook",
             "Saint Anne's", "Hillcrest", "Docklands", "Greenway")  # fmt: skip
_FORMATS = ("book", "audiobook", "DVD", "ebook", "magazine", "board game", "vinyl")
_GENRES = ("fiction", "history", "science", "children", "travel", "cookery", "poetry", "biography", "crime")


def rows_for(chars: int) -> int:
    return max(3_000, min(100_000, chars // 60))


def _weather(rng, n: int):
    import numpy as np
    import pandas as pd

    weights = rng.gamma(2.0, 1.0, len(_STATIONS))
    station = rng.choice(len(_STATIONS), n, p=weights / weights.sum())
    seconds = np.sort(rng.integers(0, 365 * 86400, n))
    when = pd.Timestamp("2023-01-01") + pd.to_timedelta(seconds, unit="s")
    day = seconds / 86400
    base = rng.uniform(-2, 12, len(_STATIONS))[station]
    temp = base + 9 * np.sin((day - 110) / 365 * 2 * np.pi) + rng.normal(0, 3, n)
    wet = rng.uniform(0.8, 6, len(_STATIONS))[station]
    rain = np.where(rng.random(n) < 0.55, 0.0, rng.exponential(wet))
    return pd.DataFrame(
        {
            "station": pd.Categorical.from_codes(station, categories=list(_STATIONS)),
            "observed_at": when.floor("min"),
            "temp_c": np.round(temp, 1),
            "rain_mm": np.round(rain, 2),
            "wind_kmh": rng.gamma(2.2, 8, n).astype(np.int64),
            "humidity_pct": np.clip(rng.normal(74, 14, n), 12, 100).astype(np.int64),
            "frost": np.round(temp, 1) < 0,
            "sensor": np.array(_SENSORS, dtype=object)[rng.integers(0, len(_SENSORS), n)],
        }
    )


def _loans(rng, n: int):
    import numpy as np
    import pandas as pd

    weights = rng.gamma(2.0, 1.0, len(_BRANCHES))
    branch = rng.choice(len(_BRANCHES), n, p=weights / weights.sum())
    fmt = rng.choice(len(_FORMATS), n, p=np.array([40, 8, 6, 20, 10, 3, 2]) / 89)
    borrowers = rng.choice(np.arange(100_000, 999_999), max(50, n // 6), replace=False)
    days = rng.integers(1, 60, n)
    late = days > 21
    fee = np.where(late, np.round((days - 21) * rng.uniform(0.1, 0.35, n), 2), 0.0)
    return pd.DataFrame(
        {
            "loan_date": pd.Timestamp("2024-01-01")
            + pd.to_timedelta(np.sort(rng.integers(0, 366, n)), unit="D"),
            "branch": pd.Categorical.from_codes(branch, categories=list(_BRANCHES)),
            "format": pd.array(np.array(_FORMATS, dtype=object)[fmt], dtype="string"),
            "genre": pd.Categorical(np.array(_GENRES, dtype=object)[rng.integers(0, len(_GENRES), n)]),
            "borrower_id": rng.choice(borrowers, n),
            "days_out": days.astype(np.int32),
            "late_fee": fee,
            "renewed": rng.random(n) < 0.18,
        }
    )


def _month(rng: random.Random, year: int) -> tuple[int, str]:
    m = rng.randint(1, 12)
    return m, f"{datetime(year, m, 1):%B} {year}"


def _table_question(kind: str, split: str, rng: random.Random, df) -> tuple[str, object, dict] | None:
    """(question, answer, parameters) for a question about the table, or None when the data give
    this kind no clear answer."""
    return (_dev_question if split == "dev" else _test_question)(kind, rng, df)


def _dev_question(kind: str, rng: random.Random, df) -> tuple[str, object, dict] | None:
    """The dev split's weather readings."""
    s = rng.choice(_STATIONS)
    at = df["station"] == s
    if kind == "count":
        return f"How many readings in the table come from the station {s}?", int(at.sum()), {"station": s}
    if kind == "count2":
        t = rng.choice([2, 4, 5, 8, 10])
        n = int((at & (df["rain_mm"] > t)).sum())
        q = f"How many readings from {s} recorded more than {t} mm of rain (rain_mm)?"
        return q, n, {"station": s, "rain_above": t}
    if kind == "aggregate":
        m, name = _month(rng, 2023)
        inmonth = df["observed_at"].dt.month == m
        if rng.random() < 0.5:
            value = round(float(df.loc[at & inmonth, "temp_c"].mean()), 2)
            q = f"What was the mean temperature (temp_c) at {s} in {name}? Round it to 2 decimals."
            return q, value, {"station": s, "month": m, "op": "mean", "column": "temp_c"}
        value = round(float(df.loc[at & inmonth, "rain_mm"].sum()), 2)
        q = f"How much rain (rain_mm, summed) fell at {s} in {name}? Round it to 2 decimals."
        return q, value, {"station": s, "month": m, "op": "sum", "column": "rain_mm"}
    if kind == "top":
        m, name = _month(rng, 2023)
        totals = df[df["observed_at"].dt.month == m].groupby("station", observed=True)["rain_mm"].sum()
        return _leader(totals, f"Which station had the largest total rainfall (rain_mm) in {name}?", m)
    # distinct
    w = rng.choice([10, 15, 20, 25])
    days = df.loc[at & df["frost"] & (df["wind_kmh"] > w), "observed_at"].dt.normalize().nunique()
    q = f"On how many distinct calendar days did {s} log a frost reading with wind_kmh above {w}?"
    return q, int(days), {"station": s, "wind_above": w}


def _test_question(kind: str, rng: random.Random, df) -> tuple[str, object, dict] | None:
    """The test split's library loans."""
    b = rng.choice(_BRANCHES)
    at = df["branch"] == b
    f = rng.choice(_FORMATS[:5])
    if kind == "count":
        n = int((df["format"] == f).sum())
        return f"Count the loans whose format is '{f}'.", n, {"format": f}
    if kind == "count2":
        d = rng.choice([14, 21, 28, 35])
        n = int((at & (df["days_out"] >= d)).sum())
        q = f"At the {b} branch, how many loans were kept out for {d} days or more (days_out)?"
        return q, n, {"branch": b, "days_at_least": d}
    if kind == "aggregate":
        if rng.random() < 0.5:
            value = round(float(df.loc[at & df["renewed"], "late_fee"].sum()), 2)
            q = f"What is the total late_fee of renewed loans at the {b} branch, to the cent?"
            return q, value, {"branch": b, "op": "sum", "column": "late_fee", "renewed": True}
        value = round(float(df.loc[at & (df["format"] == f), "days_out"].mean()), 2)
        q = f"Give the average days_out of '{f}' loans from {b}, rounded to two decimal places."
        return q, value, {"branch": b, "format": f, "op": "mean", "column": "days_out"}
    if kind == "top":
        m, name = _month(rng, 2024)
        totals = df[df["loan_date"].dt.month == m].groupby("branch", observed=True)["late_fee"].sum()
        return _leader(totals, f"In {name}, which branch collected the most in late fees (late_fee)?", m)
    # distinct
    n = int(df.loc[at & (df["format"] == f) & df["renewed"], "borrower_id"].nunique())
    q = f"How many different borrowers (borrower_id) renewed at least one '{f}' loan at {b}?"
    return q, n, {"branch": b, "format": f, "renewed": True}


def _leader(totals, question: str, month: int) -> tuple[str, object, dict] | None:
    top = totals.sort_values(ascending=False)
    if len(top) < 2 or top.iloc[0] < 1.02 * top.iloc[1]:
        return None
    return question, str(top.index[0]), {"month": month}


def _array(split: str, rng, n: int, series: bool):
    import numpy as np
    import pandas as pd

    if split == "dev":  # river gauge levels, metres
        walk = np.cumsum(rng.normal(0, 0.02, n))
        values = np.round(1.8 + walk - walk.mean() + rng.normal(0, 0.05, n), 3)
        labels = [f"G-{i:06d}" for i in rng.choice(1_000_000, n, replace=False)]
    else:  # checkouts per item
        values = rng.negative_binomial(2, 0.12, n).astype(np.int64)
        labels = [f"B{i:07d}" for i in rng.choice(10_000_000, n, replace=False)]
    peak = int(rng.integers(0, n))
    values[peak] = values.max() + (0.004 if split == "dev" else 1)  # one largest value
    return (
        pd.Series(values, index=pd.Index(labels, name="gauge" if split == "dev" else "barcode"))
        if series
        else values
    )


def _array_question(kind: str, split: str, rng: random.Random, data) -> tuple[str, object, dict]:
    import numpy as np

    values = np.asarray(data)
    series = not isinstance(data, np.ndarray)
    what = "gauge levels" if split == "dev" else "checkout counts"
    holder = "Series" if series else "array"
    if kind == "exceed":
        q = float(np.quantile(values, rng.uniform(0.5, 0.98)))
        t = round(q, 2) if split == "dev" else int(q)
        n = int((values > t).sum())
        if split == "dev":
            return f"How many of the {what} in the {holder} are greater than {t}?", n, {"above": t}
        return f"In this {holder} of {what}, how many entries exceed {t}?", n, {"above": t}
    if series:
        label = str(data.idxmax())
        if split == "dev":
            return f"Which gauge (the {holder}'s index label) has the highest level?", label, {}
        return f"Which barcode in the {holder}'s index has the most checkouts?", label, {}
    pos = int(values.argmax())
    if split == "dev":
        return "At which position (0-based) of the array is the highest gauge level?", pos, {}
    return "Give the 0-based index of the largest checkout count in the array.", pos, {}


def _csv_chars(data) -> int:
    """The context's size written as CSV (what the rows would cost as text)."""
    if hasattr(data, "to_csv"):
        return len(data.to_csv(index=not hasattr(data, "columns")))
    return len("\n".join(map(str, data.tolist())))


@family(
    "frames", "questions on a pandas DataFrame, Series or numpy array (weather in dev, library loans in test)"
)
def make(ref: TaskRef) -> Task:
    import numpy as np

    rng = ref.rng()
    gen = np.random.default_rng(rng.getrandbits(64))
    n = rows_for(ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    if kind in ("exceed", "argmax"):
        series = (ref.index // len(KINDS)) % 2 == 1
        context = _array(ref.split, gen, n, series)
        question, answer, params = _array_question(kind, ref.split, rng, context)
        container, columns = ("Series" if series else "ndarray"), 1
    else:
        context = (_weather if ref.split == "dev" else _loans)(gen, n)
        found = None
        for attempt in range(12):  # other values, then a plain count, until the answer is clear
            found = _table_question(kind if attempt < 8 else "count", ref.split, rng, context)
            if found is not None and found[1] not in (0, 0.0) and found[1] == found[1]:  # not 0, not NaN
                break
        kind = kind if attempt < 8 else "count"
        question, answer, params = found
        container, columns = "DataFrame", context.shape[1]
    return asked_task(
        ref,
        context,
        kind,
        (question, answer, params),
        container=container,
        rows=n,
        columns=columns,
        chars=_csv_chars(context),
    )
