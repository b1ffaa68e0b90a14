"""Questions about a workbook: the context is a dict of pandas DataFrames, sheet name -> sheet.

What ``pd.read_excel(path, sheet_name=None)`` gives: three sheets that refer to one another by
key, so most questions need a join. ``rows = max(60, chars // 45)`` (``// 33`` in ``test``) in the
largest sheet (about what a row costs as CSV), a tenth of that or fewer in the others. Kinds of question:

- ``lookup``: one value of a named row in one sheet;
- ``join_count``: rows of the large sheet whose key leads to a given value in another sheet;
- ``join_sum``: a total over one person's rows, found through their name in another sheet;
- ``join_top``: the group, named in a third sheet, with the largest total (a clear leader).

The rows are generated, and every answer computed, in plain Python; pandas is needed only to
build the DataFrames (so ``python -m rlm_kernel.eval list`` works without it). Score: ``exact``.

Splits: ``dev`` is a shop's workbook (``Customers``, ``Orders``, ``Products``: revenue, cities,
categories); ``test`` a firm's time sheets (``staff``, ``departments``, ``timesheets``: hours,
sites, grades): other sheets, columns, keys, dtypes and wording.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from datetime import date, timedelta
from itertools import accumulate

from .tasks import Task, TaskRef, asked_task, draw_question, family

__all__ = ["KINDS", "rows_for", "make"]

KINDS = ("lookup", "join_count", "join_sum", "join_top")

_FIRST = (
    "Ada", "Ben", "Chloe", "Dev", "Eva", "Femi", "Gus", "Hana", "Ivo", "Jade", "Kofi", "Lena", "Marta",
    "Nils", "Oona", "Pavel", "Quinn", "Rosa", "Sami", "Tuva", "Uri", "Vera", "Wen", "Yusuf", "Zara",
)  # fmt: skip
_LAST = (
    "Park", "Ortiz", "Dunn", "Patel", "Novak", "Ade", "Hale", "Sato", "Kral", "Moss", "Mensah", "Roth",
    "Silva", "Berg", "Kask", "Sokol", "Doyle", "Lind", "Haddad", "Ness", "Levin", "Holm", "Zhou", "Quist",
    "Byrne", "Costa", "Eriksen", "Fischer", "Greco", "Ivanova",
)  # fmt: skip
_CITIES = ("Leeds", "Bristol", "York", "Bath", "Derby", "Exeter", "Hull", "Truro", "Ely", "Perth")
_SEGMENTS = ("retail", "wholesale", "online")
_CATEGORIES = ("garden", "kitchen", "lighting", "storage", "textiles", "tools", "stationery")
_ITEMS = ("lamp", "crate", "kettle", "trowel", "rug", "shelf", "planter", "notebook", "jar", "hook", "tray",
          "basket", "mug", "clamp", "cushion", "vase")  # fmt: skip
_ADJECTIVES = ("oak", "linen", "copper", "slate", "amber", "brass", "walnut", "cotton", "steel", "clay")

_DEPARTMENTS = ("Finance", "Legal", "Research", "Facilities", "Sales", "Support", "Design", "Platform",
                "Procurement", "Training")  # fmt: skip
_SITES = ("Harbour House", "Mill Yard", "North Campus", "Quay Street")
_GRADES = ("G1", "G2", "G3", "G4", "G5", "G6")


def rows_for(chars: int, split: str = "dev") -> int:
    return max(60, chars // (45 if split == "dev" else 33))


def _people(rng: random.Random, n: int) -> list[str]:
    pool = [f"{f} {last}" for f in _FIRST for last in _LAST]
    if n > len(pool):
        pool += [f"{f} {a}-{b}" for f in _FIRST for a in _LAST for b in _LAST if a != b]
    return rng.sample(pool, n)


def _shop(rng: random.Random, n: int) -> dict[str, list[dict]]:
    names = _people(rng, max(15, n // 8))
    customers = [
        {
            "customer_id": f"C{1000 + i}",
            "name": name,
            "city": rng.choice(_CITIES),
            "segment": rng.choice(_SEGMENTS),
            "joined": date(2019, 1, 1) + timedelta(days=rng.randrange(5 * 365)),
        }
        for i, name in enumerate(names)
    ]
    titles = rng.sample([f"{a} {b}" for a in _ADJECTIVES for b in _ITEMS], max(12, min(120, n // 15)))
    products = [
        {
            "sku": f"SKU-{rng.randint(10, 99)}{i:03d}",
            "product": title,
            "category": rng.choice(_CATEGORIES),
            "unit_price": round(rng.uniform(2, 180), 2),
        }
        for i, title in enumerate(titles)
    ]
    # cumulative weights, so that drawing a row does not add them up again (a 1m workbook has 90k rows)
    cw = list(accumulate(rng.uniform(0.2, 2.0) for _ in customers))
    pw = list(accumulate(rng.uniform(0.2, 2.0) for _ in products))
    orders = [
        {
            "order_no": 50_000 + i,
            "order_date": date(2024, 1, 1) + timedelta(days=rng.randrange(366)),
            "customer_id": rng.choices(customers, cum_weights=cw)[0]["customer_id"],
            "sku": rng.choices(products, cum_weights=pw)[0]["sku"],
            "qty": rng.choices((1, 2, 3, 4, 5, 10, 20), (30, 20, 10, 6, 5, 3, 1))[0],
        }
        for i in range(n)
    ]
    orders.sort(key=lambda r: (r["order_date"], r["order_no"]))
    return {"Customers": customers, "Orders": orders, "Products": products}


def _firm(rng: random.Random, n: int) -> dict[str, list[dict]]:
    departments = [
        {"dept": f"D{i + 1:02d}", "dept_name": name, "site": rng.choice(_SITES)}
        for i, name in enumerate(_DEPARTMENTS)
    ]
    names = _people(rng, max(15, n // 10))
    staff = [
        {
            "emp_no": 2000 + i * 3 + rng.randint(0, 2),
            "full_name": name,
            "dept": rng.choice(departments)["dept"],
            "grade": rng.choice(_GRADES),
            "start_date": date(2012, 1, 1) + timedelta(days=rng.randrange(12 * 365)),
        }
        for i, name in enumerate(names)
    ]
    projects = [f"PRJ-{k}" for k in rng.sample(range(100, 1000), max(6, min(40, n // 40)))]
    sw = list(accumulate(rng.uniform(0.2, 2.0) for _ in staff))
    weeks = [date(2025, 1, 6) + timedelta(weeks=w) for w in range(26)]
    timesheets = [
        {
            "emp_no": rng.choices(staff, cum_weights=sw)[0]["emp_no"],
            "week_start": rng.choice(weeks),
            "project": rng.choice(projects),
            "hours": rng.randint(1, 80) / 2,
        }
        for _ in range(n)
    ]
    timesheets.sort(key=lambda r: (r["week_start"], r["emp_no"]))
    return {"staff": staff, "departments": departments, "timesheets": timesheets}


def _leader(totals: dict[str, float]) -> str | None:
    (a, na), (_, nb) = Counter(totals).most_common(2)
    return a if na > nb else None


def _ask_shop(kind: str, rng: random.Random, book: dict[str, list[dict]]) -> tuple[str, object, dict] | None:
    customers = {c["customer_id"]: c for c in book["Customers"]}
    products = {p["sku"]: p for p in book["Products"]}
    orders = book["Orders"]
    if kind == "lookup":
        p = rng.choice(book["Products"])
        return (
            f"What is the unit price of the product '{p['product']}'?",
            p["unit_price"],
            {"product": p["product"]},
        )
    if kind == "join_count":
        city = rng.choice(_CITIES)
        n = sum(customers[o["customer_id"]]["city"] == city for o in orders)
        return (
            (f"How many orders were placed by customers based in {city}?", n, {"city": city}) if n else None
        )
    if kind == "join_sum":
        c = rng.choice(book["Customers"])
        total = round(
            sum(
                o["qty"] * products[o["sku"]]["unit_price"]
                for o in orders
                if o["customer_id"] == c["customer_id"]
            ),
            2,
        )
        q = f"What did {c['name']} spend in total (qty times unit_price, over all orders)? Round to the cent."
        return (q, total, {"name": c["name"]}) if total else None
    units: dict[str, float] = defaultdict(int)
    for o in orders:
        units[products[o["sku"]]["category"]] += o["qty"]
    top = _leader(units)
    return ("Which product category sold the most units (qty) across all orders?", top, {}) if top else None


def _ask_firm(kind: str, rng: random.Random, book: dict[str, list[dict]]) -> tuple[str, object, dict] | None:
    staff = {s["emp_no"]: s for s in book["staff"]}
    departments = {d["dept"]: d for d in book["departments"]}
    sheets = book["timesheets"]
    if kind == "lookup":
        s = rng.choice(book["staff"])
        return f"Which grade is {s['full_name']} on?", s["grade"], {"full_name": s["full_name"]}
    if kind == "join_count":
        site = rng.choice(_SITES)
        n = sum(departments[staff[t["emp_no"]]["dept"]]["site"] == site for t in sheets)
        q = f"Count the timesheet rows filed by people whose department sits at {site}."
        return (q, n, {"site": site}) if n else None
    if kind == "join_sum":
        s = rng.choice(book["staff"])
        mine = [t for t in sheets if t["emp_no"] == s["emp_no"]]
        if not mine:
            return None
        project = rng.choice(mine)["project"]
        total = sum(t["hours"] for t in mine if t["project"] == project)
        q = f"Give the number of hours {s['full_name']} booked to project {project}."
        return q, total, {"full_name": s["full_name"], "project": project}
    hours: dict[str, float] = defaultdict(float)
    for t in sheets:
        hours[departments[staff[t["emp_no"]]["dept"]]["dept_name"]] += t["hours"]
    top = _leader(hours)
    return (
        ("Name the department (dept_name) with the greatest total of timesheet hours.", top, {})
        if top
        else None
    )


def _frames(book: dict[str, list[dict]]) -> dict:
    import pandas as pd

    out = {}
    for name, rows in book.items():
        df = pd.DataFrame(rows)
        for column in df.columns:
            if isinstance(rows[0][column], date):
                df[column] = pd.to_datetime(df[column])
        for column in ("segment", "category", "grade", "site"):
            if column in df.columns:
                df[column] = df[column].astype("category")
        out[name] = df
    return out


@family(
    "workbook",
    "a dict of DataFrames (sheets): lookups and joins across sheets (a shop in dev, time sheets in test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    n = rows_for(ref.chars, ref.split)
    book = (_shop if ref.split == "dev" else _firm)(rng, n)
    ask = _ask_shop if ref.split == "dev" else _ask_firm
    kind = KINDS[ref.index % len(KINDS)]
    # other parameters, then a lookup, which always has an answer
    kind, asked = draw_question(lambda kind_: ask(kind_, rng, book), kind, "lookup")
    context = _frames(book)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict of DataFrames",
        sheets={name: len(rows) for name, rows in book.items()},
        chars=sum(len(df.to_csv(index=False)) for df in context.values()),
    )
