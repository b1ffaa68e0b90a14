"""The twelfth set of held-out task families, checked against the context itself: fitness,
cloudcost, trades and rides (what every held-out family must be is checked in
test_eval_heldout_families.py).

Every expected answer is found again here from the context as a user would read it (the tracker's
JSON files loaded one by one with their American dates parsed, the health export parsed with
ElementTree with its times read with their UTC offsets; the billing rows walked as dicts with their
amounts read as decimals, the cost explorer's groups walked day by day with their tag keys split;
the aggregation API's transactions joined to their accounts and securities by id, the activity
statement read with csv section by section; the trip data read with csv, the taxi trips filtered
and grouped with pandas), not from the generator's bookkeeping; ``meta["params"]`` only says where
to look.
"""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

import pandas as pd
import pytest
from heldout_tasks import SIZE, N
from heldout_tasks import tasks as _tasks

from rlm_kernel.eval.tasks import TaskRef, as_text, generate

TWELFTH = ("fitness", "cloudcost", "trades", "rides")

_CONTAINERS = {
    "fitness": (dict, str),
    "cloudcost": (list, dict),
    "trades": (dict, str),
    "rides": (str, pd.DataFrame),
}
_SIZES = {"fitness": ("hours", "hours"), "cloudcost": ("rows", "groups"), "trades": ("transactions",) * 2}
_SIZES["rides"] = ("trips", "trips")


@pytest.mark.parametrize("family", TWELFTH)
def test_containers_per_split(family: str) -> None:
    dev, test = _CONTAINERS[family]
    assert all(isinstance(t.context, dev) for t in _tasks(family, "dev"))
    assert all(isinstance(t.context, test) for t in _tasks(family, "test"))
    files = _tasks("fitness", "dev")[0].context  # file name -> JSON text
    assert len(files) >= 3 and all(k.endswith(".json") and isinstance(v, str) for k, v in files.items())
    rows = _tasks("cloudcost", "dev")[0].context  # a list of dicts, each with dicts and lists in it
    assert all(isinstance(r["project"]["labels"], list) and isinstance(r["usage"], dict) for r in rows)
    response = _tasks("trades", "dev")[0].context  # a dict of lists of dicts
    assert {"accounts", "investment_transactions", "securities"} <= set(response)


def test_the_frame_has_the_dtypes_of_real_data() -> None:
    df = _tasks("rides", "test")[0].context
    for column in ("VendorID", "PULocationID", "DOLocationID"):
        assert df[column].dtype == "int32", column
    assert df["payment_type"].dtype == "int64"
    assert pd.api.types.is_datetime64_any_dtype(df["tpep_pickup_datetime"])
    assert pd.api.types.is_datetime64_any_dtype(df["tpep_dropoff_datetime"])
    for column in ("passenger_count", "RatecodeID", "congestion_surcharge", "Airport_fee"):
        assert df[column].dtype == "float64" and df[column].isna().any(), column
    assert pd.api.types.is_string_dtype(df["store_and_fwd_flag"]) and df["store_and_fwd_flag"].isna().any()
    parts = df[["fare_amount", "extra", "mta_tax", "tip_amount", "tolls_amount", "improvement_surcharge"]]
    extra = df["congestion_surcharge"].fillna(0) + df["Airport_fee"].fillna(0)
    assert ((parts.sum(axis=1) + extra - df["total_amount"]).abs() < 0.005).all()
    assert (df["tpep_dropoff_datetime"] > df["tpep_pickup_datetime"]).all()


@pytest.mark.parametrize("family", TWELFTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_what_they_hold_grows_with_the_length(family: str, split: str) -> None:
    small = generate(TaskRef(family, split, SIZE // 4, 0))
    big = generate(TaskRef(family, split, 8 * SIZE, 0))
    assert 0.5 * SIZE <= small.context_chars <= 1.5 * SIZE, small.context_chars
    key = _SIZES[family][split == "test"]
    assert small.meta[key] < _tasks(family, split)[0].meta[key] < big.meta[key]
    for length in (4096, 16384):  # near the length asked for, at four characters a token
        task = generate(TaskRef(family, split, length, 1))
        assert 0.8 * 4 * length <= task.context_chars <= 1.2 * 4 * length, (length, task.context_chars)
        assert task.context_chars == len(as_text(task.context))


@pytest.mark.parametrize("family", TWELFTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_answers_vary_across_tasks(family: str, split: str) -> None:
    tasks = _tasks(family, split)
    assert len({str(t.answer) for t in tasks}) >= 7
    assert len({t.question for t in tasks}) >= N - 4


def _check(task, want: object) -> None:
    if isinstance(want, float):
        assert task.answer == pytest.approx(want, abs=1e-6), task.question
    else:
        assert task.answer == want, task.question


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    assert len(ranked) == 1 or ranked[0][1] > ranked[1][1]  # a clear leader
    return ranked[0][0]


def _round(value: Decimal, places: int = 2) -> float:
    return float(value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def _dec(value: object) -> Decimal:
    return Decimal(str(value).replace(",", ""))


def _span(p: dict) -> tuple[date, date]:
    return date.fromisoformat(p["from"]), date.fromisoformat(p["to"])


# -- fitness ----------------------------------------------------------------------------------


def _fitbit(files: dict[str, str]) -> tuple[list[dict], list[dict], list[dict]]:
    """The exercises, sleeps and resting heart rates of every file, by the file's name."""
    exercises, sleeps, rates = [], [], []
    for name, text in files.items():
        records = json.loads(text)
        kind = re.match(r"(exercise|sleep|resting_heart_rate)-[\d-]+\.json$", name.rsplit("/", 1)[1]).group(1)
        {"exercise": exercises, "sleep": sleeps, "resting_heart_rate": rates}[kind].extend(records)
    for e in exercises:
        e["start"] = datetime.strptime(e["startTime"], "%m/%d/%y %H:%M:%S")
        assert e["activeDuration"] <= e["duration"]
    for s in sleeps:
        levels = s["levels"]
        assert sum(d["seconds"] for d in levels["data"]) == s["duration"] // 1000 == s["timeInBed"] * 60
        awake = sum(v["minutes"] for k, v in levels["summary"].items() if k in ("wake", "awake"))
        assert s["minutesAwake"] == awake and s["minutesAsleep"] + awake == s["timeInBed"]
        assert s["dateOfSleep"] == s["endTime"][:10]
    for r in rates:
        r["day"] = datetime.strptime(r["dateTime"], "%m/%d/%y %H:%M:%S").date()
    return exercises, sleeps, rates


def _fitness_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    exercises, sleeps, rates = _fitbit(task.context)
    first, last = _span(p) if "from" in p else (date.min, date.max)
    inside = [e for e in exercises if first <= e["start"].date() <= last]
    mine = [e for e in inside if e["activityName"] == p.get("activity")]
    if kind == "count":
        if "activity" in p:
            return len(mine)
        nights = [
            s for s in sleeps if s["mainSleep"] and first <= date.fromisoformat(s["dateOfSleep"]) <= last
        ]
        return sum(s["minutesAsleep"] < p["under"] for s in nights)
    if kind == "total":
        if p["field"] == "distance":
            return _round(sum(_dec(e["distance"]) for e in mine))
        return sum(e["calories"] for e in mine)
    if kind == "top":
        if p["by"] == "active":
            totals: Counter = Counter()
            for e in inside:
                totals[e["activityName"]] += e["activeDuration"]
            return _leader(totals)
        measured = sorted((r["value"]["value"], r["day"]) for r in rates if r["value"]["value"] > 0)
        assert measured[0][0] < measured[1][0]
        return measured[0][1].isoformat()
    if "start" in p:
        (e,) = [e for e in exercises if e["start"] == datetime.fromisoformat(p["start"])]
        assert e["activityName"] == p["activity"]
        return e["averageHeartRate"]
    (s,) = [s for s in sleeps if s["mainSleep"] and s["dateOfSleep"] == p["dateOfSleep"]]
    return s["minutesAsleep"]


def _local(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S %z")


def _health(text: str) -> tuple[list[ET.Element], list[dict], list[ET.Element]]:
    root = ET.fromstring(text)
    assert root.tag == "HealthData" and root.find("ExportDate") is not None
    workouts = []
    for w in root.iter("Workout"):
        start, end = _local(w.get("startDate")), _local(w.get("endDate"))
        assert abs(float(w.get("duration")) * 60 - (end - start).total_seconds()) < 1
        stats = {
            s.get("type").removeprefix("HKQuantityTypeIdentifier"): s for s in w.iter("WorkoutStatistics")
        }
        distance = [s for k, s in stats.items() if k.startswith("Distance")]
        workouts.append(
            {
                "type": w.get("workoutActivityType"),
                "startDate": w.get("startDate"),
                "day": start.date(),
                "minutes": float(w.get("duration")),
                "km": _dec(distance[0].get("sum")) if distance else Decimal(0),
                "heart": float(stats["HeartRate"].get("average")) if "HeartRate" in stats else None,
            }
        )
    return list(root.iter("Record")), workouts, list(root.iter("ActivitySummary"))


def _fitness_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    records, workouts, rings = _health(task.context)
    first, last = _span(p) if "from" in p else (date.min, date.max)
    inside = [w for w in workouts if first <= w["day"] <= last]
    days = [r for r in rings if first <= date.fromisoformat(r.get("dateComponents")) <= last]
    if kind == "count":
        if "type" in p:
            return sum(w["type"] == p["type"] for w in inside)
        return sum(float(r.get("activeEnergyBurned")) >= float(r.get("activeEnergyBurnedGoal")) for r in days)
    if kind == "total":
        if "source" in p:
            return sum(
                int(r.get("value"))
                for r in records
                if r.get("type") == "HKQuantityTypeIdentifierStepCount"
                and r.get("sourceName") == p["source"]
                and _local(r.get("startDate")).date().isoformat() == p["day"]
            )
        return _round(sum(w["km"] for w in inside if w["type"] == p["type"]))
    if kind == "top":
        if p["by"] == "duration":
            totals: Counter = Counter()
            for w in inside:
                totals[w["type"]] += w["minutes"]
            return _leader(totals)
        return _leader({r.get("dateComponents"): int(r.get("appleExerciseTime")) for r in days})
    if "startDate" in p:
        (w,) = [w for w in workouts if w["startDate"] == p["startDate"]]
        return w["heart"]
    (r,) = [r for r in rings if r.get("dateComponents") == p["day"]]
    return int(r.get("appleStandHours"))


# -- cloudcost --------------------------------------------------------------------------------


def _gcp(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        start = datetime.strptime(r["usage_start_time"], "%Y-%m-%d %H:%M:%S UTC")
        assert datetime.strptime(r["usage_end_time"], "%Y-%m-%d %H:%M:%S UTC") - start == timedelta(hours=1)
        assert r["invoice"]["month"] == f"{start:%Y%m}" and r["currency"] == "USD"
        cost = _dec(r["cost"])
        credits = [(c["type"], _dec(c["amount"])) for c in r["credits"]]
        assert all(a < 0 for _, a in credits)
        out.append(
            {**r, "gross": cost, "net": cost + sum(a for _, a in credits), "kinds": {k for k, _ in credits}}
        )
    return out


def _cloudcost_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    rows = _gcp(task.context)
    mine = [r for r in rows if r["project"]["id"] == p.get("project")]
    if kind == "count":
        if "credit" in p:
            return sum(p["credit"] in r["kinds"] for r in mine)
        return len({r["sku"]["id"] for r in mine if r["service"]["description"] == p["service"]})
    if kind == "total":
        if "project" in p:
            return _round(sum(r["net"] for r in mine if r["service"]["description"] == p["service"]))
        label = {"key": p["label"], "value": p["value"]}
        return _round(sum(r["gross"] for r in rows if label in r["labels"]))
    totals: Counter = Counter()
    if kind == "top":
        if p["by"] == "sku":
            for r in mine:
                totals[r["sku"]["description"]] += r["net"]
        else:
            for r in rows:
                if r["service"]["description"] == p["service"]:
                    totals[r["project"]["id"]] += r["gross"]
        return _leader(totals)
    (r,) = [r for r in mine if r["sku"]["description"] == p["sku"] and r["usage_start_time"] == p["hour"]]
    return r["cost"] if p["field"] == "cost" else r["usage"]["amount_in_pricing_units"]


def _cost_groups(response: dict) -> list[dict]:
    assert [g["Type"] for g in response["GroupDefinitions"]] == ["DIMENSION", "TAG"]
    out = []
    results = response["ResultsByTime"]
    for k, result in enumerate(results):
        assert result["Total"] == {} and result["Estimated"] == (k >= len(results) - 2)
        day = date.fromisoformat(result["TimePeriod"]["Start"])
        assert date.fromisoformat(result["TimePeriod"]["End"]) - day == timedelta(days=1)
        for g in result["Groups"]:
            service, tag = g["Keys"]
            assert tag.startswith("team$")
            out.append(
                {
                    "day": day,
                    "service": service,
                    "team": tag.removeprefix("team$"),
                    "cost": _dec(g["Metrics"]["UnblendedCost"]["Amount"]),
                    "usage": g["Metrics"]["UsageQuantity"]["Amount"],
                }
            )
    return out


def _cloudcost_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    groups = _cost_groups(task.context)
    team = [g for g in groups if g["team"] == p.get("team")]
    if kind == "count":
        if "over" in p:
            return sum(g["service"] == p["service"] and g["cost"] > p["over"] for g in team)
        return sum(g["day"].isoformat() == p["day"] and g["cost"] > 0 for g in team)
    if kind == "total":
        if "service" in p:
            first, last = _span(p)
            return _round(
                sum(g["cost"] for g in groups if g["service"] == p["service"] and first <= g["day"] <= last)
            )
        return _round(sum(g["cost"] for g in team))
    totals: Counter = Counter()
    if kind == "top":
        if p["by"] == "team":
            for g in groups:
                if g["service"] == p["service"] and g["team"]:
                    totals[g["team"]] += g["cost"]
        else:
            for g in team:
                totals[g["service"]] += g["cost"]
        return _leader(totals)
    (g,) = [g for g in team if g["service"] == p["service"] and g["day"].isoformat() == p["day"]]
    return _round(g["cost"]) if p["field"] == "UnblendedCost" else float(g["usage"])


# -- trades -----------------------------------------------------------------------------------


def _plaid(response: dict) -> list[dict]:
    """The transactions with their account's name and their security's ticker and name joined in."""
    accounts = {a["account_id"]: a["name"] for a in response["accounts"]}
    securities = {s["security_id"]: s for s in response["securities"]}
    txns = response["investment_transactions"]
    assert response["total_investment_transactions"] == len(txns)
    assert [t["date"] for t in txns] == sorted((t["date"] for t in txns), reverse=True)  # newest first
    out = []
    for t in txns:
        security = securities.get(t["security_id"]) or {}
        if t["type"] == "buy":
            assert t["amount"] > 0 and t["quantity"] > 0
        elif t["type"] == "sell":
            assert t["amount"] < 0 and t["quantity"] < 0
        out.append({**t, "account": accounts[t["account_id"]], "ticker": security.get("ticker_symbol"),
                    "security": security.get("name")})  # fmt: skip
    return out


def _trades_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    txns = _plaid(task.context)
    mine = [t for t in txns if t["account"] == p.get("account")]
    if kind == "count":
        if "ticker" in p:
            return sum(t["ticker"] == p["ticker"] and t["subtype"] == "buy" for t in mine)
        return sum(t["subtype"] == "dividend" and t["date"][:7] == p["month"] for t in mine)
    if kind == "total":
        if "security" in p:
            return _round(
                -sum(
                    _dec(t["amount"])
                    for t in txns
                    if t["security"] == p["security"] and t["subtype"] == "dividend"
                )
            )
        return _round(sum(_dec(t["quantity"]) for t in mine if t["ticker"] == p["ticker"]), 3)
    totals: Counter = Counter()
    if kind == "top":
        for t in mine if p["by"] == "bought" else txns:
            if (p["by"] == "bought" and t["type"] == "buy") or (
                p["by"] == "dividends" and t["subtype"] == "dividend"
            ):
                totals[t["ticker"]] += abs(_dec(t["amount"]))
        return _leader(totals)
    on = [t for t in mine if t["date"] == p["date"] and t["type"] == p["type"]]
    if p["field"] == "ticker":
        (t,) = on
        return t["ticker"]
    (t,) = [t for t in on if t["ticker"] == p["ticker"]]
    return t["price"]


def _statement(text: str) -> dict[str, list[dict]]:
    """Each section's data rows as dicts under the section's header; the trades' rows are checked
    against their subtotals and closed lots."""
    sections: dict[str, list[dict]] = {}
    heads: dict[str, list[str]] = {}
    for row in csv.reader(io.StringIO(text)):
        name, what, *values = row
        if what == "Header":
            heads[name] = values
        else:
            sections.setdefault(name, []).append({"row": what, **dict(zip(heads[name], values, strict=True))})
    orders = [r for r in sections["Trades"] if r["DataDiscriminator"] == "Order"]
    for r in orders:
        assert (
            _dec(r["Realized P/L"]) == _dec(r["Proceeds"]) + _dec(r["Comm/Fee"]) + _dec(r["Basis"])
            or r["Code"] == "O"
        )
    subtotals = [r for r in sections["Trades"] if r["row"] == "SubTotal"]
    for sub in subtotals:
        mine = [r for r in orders if (r["Symbol"], r["Currency"]) == (sub["Symbol"], sub["Currency"])]
        for column in ("Quantity", "Proceeds", "Comm/Fee", "Basis", "Realized P/L"):
            assert sum(_dec(r[column]) for r in mine) == _dec(sub[column]), column
    trades = sections["Trades"]
    for k, r in enumerate(trades):
        if r["DataDiscriminator"] == "Order" and r["Code"] == "C":
            lots = []
            for lot in trades[k + 1 :]:
                if lot["DataDiscriminator"] != "ClosedLot":
                    break
                lots.append(lot)
            assert sum(_dec(lot["Basis"]) for lot in lots) == -_dec(r["Basis"])
            assert sum(_dec(lot["Quantity"]) for lot in lots) == -_dec(r["Quantity"])
    return sections


def _paid(sections: dict, symbol: str, section: str) -> Decimal:
    return sum(
        (_dec(r["Amount"]) for r in sections.get(section, []) if r["Description"].startswith(f"{symbol}(")),
        Decimal(0),
    )


def _trades_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    sections = _statement(task.context)
    orders = [r for r in sections["Trades"] if r["DataDiscriminator"] == "Order"]
    mine = [r for r in orders if r["Symbol"] == p.get("symbol")]
    if kind == "count":
        if "symbol" in p:
            return len(mine)
        return sum(
            r["Code"] == "C" and _dec(r["Realized P/L"]) < 0 and r["Date/Time"][:7] == p["month"]
            for r in orders
        )
    if kind == "total":
        if p["field"] == "Comm/Fee":
            return float(-sum(_dec(r["Comm/Fee"]) for r in mine))
        return float(
            _paid(sections, p["symbol"], "Dividends") + _paid(sections, p["symbol"], "Withholding Tax")
        )
    totals: Counter = Counter()
    if kind == "top":
        if p["by"] == "realized":
            for r in orders:
                if r["Currency"] == "USD":
                    totals[r["Symbol"]] += _dec(r["Realized P/L"])
        else:
            for r in sections["Dividends"]:
                if r["Currency"] == p["currency"]:
                    totals[r["Description"].split("(")[0]] += _dec(r["Amount"])
        return _leader(totals)
    if p["field"] == "Conid":
        (r,) = [r for r in sections["Financial Instrument Information"] if r["Symbol"] == p["symbol"]]
        return int(r["Conid"])
    (r,) = [r for r in mine if r["Date/Time"] == p["when"]]
    return float(r["T. Price"])


# -- rides ------------------------------------------------------------------------------------


def _bike_rides(text: str) -> list[dict]:
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len({r["ride_id"] for r in rows}) == len(rows)
    for r in rows:
        r["start"] = datetime.strptime(r["started_at"], "%Y-%m-%d %H:%M:%S.%f")
        r["ms"] = round(
            (datetime.strptime(r["ended_at"], "%Y-%m-%d %H:%M:%S.%f") - r["start"]).total_seconds() * 1000
        )
        assert r["ms"] > 0 and (r["end_station_name"] == "") == (r["end_station_id"] == "")
    return rows


def _mean(values: list, places: int = 2) -> float:
    return _round(Decimal(sum(values)) / len(values), places)


def _rides_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    rows = _bike_rides(task.context)
    on = [r for r in rows if r["start"].date().isoformat() == p.get("day")]
    at = [r for r in rows if r["start_station_name"] == p.get("station")]
    if kind == "count":
        if "station" in p:
            return sum(r["member_casual"] == "member" for r in on if r["start_station_name"] == p["station"])
        return sum(r["rideable_type"] == "electric_bike" and r["end_station_name"] == "" for r in on)
    if kind == "mean":
        if "station" in p:
            return _mean([Decimal(r["ms"]) / 60_000 for r in at if r["rideable_type"] == p["type"]])
        return _mean([Decimal(r["ms"]) / 60_000 for r in on if r["member_casual"] == "casual"])
    if kind == "top":
        if p["by"] == "destination":
            return _leader(Counter(r["end_station_name"] for r in at if r["end_station_name"]))
        return _leader(Counter(r["start_station_name"] for r in on if p["from"] <= r["start"].hour < p["to"]))
    (r,) = [r for r in rows if r["ride_id"] == p["ride_id"]]
    return r["end_station_name"] if p["field"] == "end_station_name" else r["started_at"][11:19]


def _rides_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    df = task.context
    picked = df["tpep_pickup_datetime"]
    on = df[picked.dt.date.astype(str) == p.get("day")] if "day" in p else df
    if kind == "count":
        if "hour" in p:
            hits = (on["PULocationID"] == p["PULocationID"]) & (on["payment_type"] == 1)
            return int((hits & (on["tpep_pickup_datetime"].dt.hour == p["hour"])).sum())
        return int(on["passenger_count"].isna().sum())
    if kind == "mean":
        if "DOLocationID" in p:
            tips = df.loc[(df["payment_type"] == 1) & (df["DOLocationID"] == p["DOLocationID"]), "tip_amount"]
            return _mean([_dec(f"{x:.2f}") for x in tips])
        paid = on[(on["VendorID"] == p["VendorID"]) & on["payment_type"].isin([1, 2])]
        return _mean([_dec(f"{x:.2f}") for x in paid["trip_distance"]])
    if kind == "top":
        if p["by"] == "hour":
            return _leader(on["tpep_pickup_datetime"].dt.hour.value_counts().to_dict())
        return _leader(
            df.loc[df["PULocationID"] == p["PULocationID"], "DOLocationID"].value_counts().to_dict()
        )
    mine = df[(picked == pd.Timestamp(p["pickup"])) & (df["PULocationID"] == p["PULocationID"])]
    assert len(mine) == 1
    return (
        round(float(mine["total_amount"].iloc[0]), 2)
        if p["field"] == "total_amount"
        else int(mine["DOLocationID"].iloc[0])
    )


_ANSWER = {
    ("fitness", "dev"): _fitness_dev,
    ("fitness", "test"): _fitness_test,
    ("cloudcost", "dev"): _cloudcost_dev,
    ("cloudcost", "test"): _cloudcost_test,
    ("trades", "dev"): _trades_dev,
    ("trades", "test"): _trades_test,
    ("rides", "dev"): _rides_dev,
    ("rides", "test"): _rides_test,
}


@pytest.mark.parametrize("family", TWELFTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_answers_are_read_from_the_context(family: str, split: str) -> None:
    tasks = _tasks(family, split) + _tasks(family, split, 8, SIZE // 4) + _tasks(family, split, 2, SIZE * 4)
    for task in tasks:
        _check(task, _ANSWER[family, split](task))


def test_the_traps_are_there() -> None:
    exports = [t.context for t in _tasks("fitness", "dev")]
    parsed = [_fitbit(files) for files in exports]
    exercises = [e for ex, _, _ in parsed for e in ex]
    assert {"Bike", "Outdoor Bike"} <= {e["activityName"] for e in exercises}
    assert any(e["activeDuration"] < e["duration"] for e in exercises)  # a paused workout
    assert any("averageHeartRate" not in e for e in exercises)  # logged by hand
    sleeps = [s for _, sl, _ in parsed for s in sl]
    assert any(not s["mainSleep"] for s in sleeps) and any(
        s["startTime"][:10] != s["dateOfSleep"] for s in sleeps
    )
    assert any(r["value"]["value"] == 0 for _, _, rates in parsed for r in rates)  # a day not measured
    texts = [t.context for t in _tasks("fitness", "test", 4)]
    roots = [ET.fromstring(text) for text in texts]
    sources = {r.get("sourceName") for root in roots for r in root.iter("Record")}
    assert any("\u2019s iPhone" in s for s in sources) and any("\u2019s Apple Watch" in s for s in sources)
    assert any(
        w.find("WorkoutStatistics[@type='HKQuantityTypeIdentifierHeartRate']") is None
        for root in roots
        for w in root.iter("Workout")
    )
    offsets = {_local(r.get("startDate")).utcoffset() for root in roots for r in root.iter("Record")}
    assert offsets == {timedelta(0), timedelta(hours=1)}

    rows = [r for t in _tasks("cloudcost", "dev", 4) for r in t.context]
    assert {"web-frontend", "web-frontend-staging"} <= {r["project"]["id"] for r in rows}
    assert {c["type"] for r in rows for c in r["credits"]} >= {"FREE_TIER", "SUSTAINED_USAGE_DISCOUNT"}
    assert any(r["labels"] == [] for r in rows) and any(r["labels"] for r in rows)
    groups = [g for t in _tasks("cloudcost", "test", 4) for g in _cost_groups(t.context)]
    assert any(g["team"] == "" for g in groups) and any(g["cost"] == 0 for g in groups)
    assert {"Amazon Elastic Container Service", "Amazon Elastic Container Service for Kubernetes"} <= {
        g["service"] for g in groups
    }

    txns = [t for task in _tasks("trades", "dev", 4) for t in _plaid(task.context)]
    assert {"IRA", "ROTH IRA"} <= {t["account"] for t in txns} and {"VT", "VTI"} <= {
        t["ticker"] for t in txns
    }
    assert {"dividend reinvestment", "dividend", "sell"} <= {t["subtype"] for t in txns}
    assert any(t["quantity"] % 1 for t in txns)  # fractional shares
    text = _tasks("trades", "test")[0].context
    sections = _statement(text)
    assert {"EUR", "USD"} <= {r["Currency"] for r in sections["Trades"]}
    assert any(r["DataDiscriminator"] == "ClosedLot" for r in sections["Trades"])
    assert any(r["Currency"] == "Total in USD" for r in sections["Trades"]) and '"2024-' in text

    rides = [r for t in _tasks("rides", "dev", 4) for r in _bike_rides(t.context)]
    names = {r["start_station_name"] for r in rides}
    assert {"W 52 St & 11 Ave", "W 52 St & 11 Ave (NW Corner)"} <= names
    assert any(r["end_station_name"] == "" and len(r["end_lat"].split(".")[1]) <= 2 for r in rides)
    assert any(r["ms"] < 60_000 and r["start_station_id"] == r["end_station_id"] for r in rides)
    df = pd.concat([t.context for t in _tasks("rides", "test")[:4]])
    assert (df["total_amount"] < 0).any() and df.loc[df["total_amount"] < 0, "payment_type"].isin(
        [3, 4]
    ).all()
    assert (df.loc[df["payment_type"] == 2, "tip_amount"] == 0).all()
