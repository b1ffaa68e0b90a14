"""The thirteenth set of held-out task families, checked against the context itself: inspections,
reviews, flights and adverse (what every held-out family must be is checked in
test_eval_heldout_families.py).

Every expected answer is found again here from the context as a user would read it (the inspection
rows walked as dicts and grouped into inspections by establishment and date, the food inspections
filtered with pandas with their violations split on ``" | "``; the reviews API's response walked with
each review joined to its response by id, the reviews report read with ``csv`` with each review's id
taken from its link; the on-time data read with ``csv`` with its dates parsed, the tracked flights
walked as dicts with their epoch times turned into UTC; the registry's studies walked arm by arm by
group id, the quarterly files split on ``$`` and joined on ``primaryid``), not from the generator's
bookkeeping; ``meta["params"]`` only says where to look.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from datetime import date, datetime, timezone
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from urllib.parse import parse_qs, urlparse

import pandas as pd
import pytest
from heldout_tasks import SIZE, N
from heldout_tasks import tasks as _tasks

from rlm_kernel.eval.tasks import TaskRef, as_text, generate

THIRTEENTH = ("inspections", "reviews", "flights", "adverse")

_CONTAINERS = {
    "inspections": (list, pd.DataFrame),
    "reviews": (dict, str),
    "flights": (str, list),
    "adverse": (dict, dict),
}
_SIZES = {
    "inspections": ("rows", "inspections"),
    "reviews": ("reviews", "reviews"),
    "flights": ("flights", "flights"),
    "adverse": ("events", "reports"),
}


@pytest.mark.parametrize("family", THIRTEENTH)
def test_containers_per_split(family: str) -> None:
    dev, test = _CONTAINERS[family]
    assert all(isinstance(t.context, dev) for t in _tasks(family, "dev"))
    assert all(isinstance(t.context, test) for t in _tasks(family, "test"))
    rows = _tasks("inspections", "dev")[0].context  # a list of flat dicts of strings
    assert all(isinstance(r, dict) and all(isinstance(v, str) for v in r.values()) for r in rows)
    response = _tasks("reviews", "dev")[0].context  # a JSON:API document
    assert {"data", "included", "links", "meta"} <= set(response)
    flights = _tasks("flights", "test")[0].context  # a list of flat dicts
    assert all(isinstance(f, dict) and "icao24" in f for f in flights)
    files = _tasks("adverse", "test")[0].context  # file name -> text
    assert len(files) == 5 and all(k.endswith(".txt") and isinstance(v, str) for k, v in files.items())
    assert "studies" in _tasks("adverse", "dev")[0].context


def test_the_frame_has_the_dtypes_of_real_data() -> None:
    assert all(t.context["Inspection ID"].is_unique for t in _tasks("inspections", "test"))
    df = pd.concat([t.context for t in _tasks("inspections", "test")])
    assert df["Inspection ID"].dtype == "int64"
    for column in ("License #", "Zip", "Latitude", "Longitude"):
        assert df[column].dtype == "float64" and df[column].isna().any(), column
    for column in ("AKA Name", "Facility Type", "Risk", "Violations", "Location", "City"):
        assert pd.api.types.is_string_dtype(df[column]) and df[column].isna().any(), column
    assert df["Inspection Date"].str.fullmatch(r"\d\d/\d\d/\d{4}").all()
    assert (df["License #"] == 0).any()  # a licence number of 0, as the city's export has


@pytest.mark.parametrize("family", THIRTEENTH)
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


@pytest.mark.parametrize("family", THIRTEENTH)
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


def _mean(values: list, places: int = 2) -> float:
    exact = Fraction(sum(values)) / len(values)
    return _round(Decimal(exact.numerator) / exact.denominator, places)


def _pct(part: int, whole: int) -> float:
    return _round(Decimal(part * 100) / whole, 1)


# -- inspections ------------------------------------------------------------------------------


def _nyc(rows: list[dict]) -> list[dict]:
    """The rows grouped into inspections (one row per violation cited, or one for none)."""
    found: dict[tuple[str, str], dict] = {}
    for r in rows:
        score = int(r["score"]) if "score" in r else None
        day = date.fromisoformat(r["inspection_date"][:10])
        i = found.setdefault(
            (r["camis"], r["inspection_date"]),
            {"camis": r["camis"], "dba": r["dba"], "boro": r["boro"], "cuisine": r["cuisine_description"],
             "address": f"{r['building']} {r['street']}", "day": None if day.year == 1900 else day,
             "type": r.get("inspection_type"), "score": score, "grade": r.get("grade"), "codes": [], "flags": []},
        )  # fmt: skip
        assert (i["score"], i["grade"]) == (score, r.get("grade"))  # the inspection's, on each of its rows
        if "violation_code" in r:
            i["codes"].append(r["violation_code"])
            i["flags"].append(r["critical_flag"])
        else:
            assert r["critical_flag"] == "Not Applicable"
    for i in found.values():
        if i["grade"] in ("A", "B", "C") and i["type"] != "Cycle Inspection / Initial Inspection":
            assert i["grade"] == ("A" if i["score"] <= 13 else "B" if i["score"] <= 27 else "C")
    return list(found.values())


def _inspections_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    done = [i for i in _nyc(task.context) if i["day"] is not None]
    mine = [i for i in done if i["camis"] == p.get("camis")]
    in_month = [i for i in done if i["boro"] == p.get("boro") and f"{i['day']:%Y-%m}" == p.get("month")]
    if kind == "count":
        if "camis" in p:
            return sum(flag == "Critical" for i in mine for flag in i["flags"])
        return len(in_month)
    if kind == "mean":
        if "cuisine" in p:
            chosen = [i for i in done if i["cuisine"] == p["cuisine"] and i["type"] == p["inspection_type"]]
        else:
            chosen = in_month
        return _mean([i["score"] for i in chosen if i["score"] is not None])
    if kind == "top":
        boro = [i for i in done if i["boro"] == p["boro"]]
        if p["by"] == "violation_code":
            return _leader(Counter(c for i in boro for c in i["codes"]))
        ranked = sorted((i for i in boro if i["score"] is not None), key=lambda i: -i["score"])
        assert len(ranked) == 1 or ranked[0]["score"] > ranked[1]["score"]
        return ranked[0]["dba"]
    if p["field"] == "score":
        (i,) = [i for i in mine if i["day"].isoformat() == p["day"]]
        return i["score"]
    return max(i["day"] for i in mine).isoformat()


def _cited(violations: object) -> list[int]:
    """The numbers of the violations in one inspection's text (each opens a part after ``" | "``)."""
    if not isinstance(violations, str):
        return []
    return [int(part.split(".", 1)[0]) for part in violations.split(" | ")]


def _inspections_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    df = task.context.copy()
    df["day"] = pd.to_datetime(df["Inspection Date"], format="%m/%d/%Y")
    df["month"] = df["day"].dt.strftime("%Y-%m")
    df["cited"] = df["Violations"].map(_cited)
    df["n"] = df["cited"].map(len)
    failed = df[df["Results"] == "Fail"]
    if kind == "count":
        if "violation" in p:
            return int(df["cited"].map(lambda c: p["violation"] in c).sum())
        return int((failed["Facility Type"] == p["facility_type"]).sum())
    if kind == "mean":
        if "risk" in p:
            chosen = df.loc[(df["Risk"] == p["risk"]) & (df["month"] == p["month"]), "n"]
        else:
            chosen = failed.loc[failed["Zip"] == p["zip"], "n"]
        return _mean([int(x) for x in chosen])
    if kind == "top":
        if p["by"] == "Zip":
            canvass = df[(df["Inspection Type"] == "Canvass") & (df["month"] == p["month"])]
            return int(_leader(canvass["Zip"].dropna().value_counts().to_dict()))
        return _leader(failed["DBA Name"].value_counts().to_dict())
    if p["field"] == "Results":
        (result,) = df.loc[df["Inspection ID"] == p["inspection_id"], "Results"]
        return result
    at = df[(df["Address"].str.strip() == p["address"]) & (df["Inspection Date"] == p["day"])]
    (license_,) = at["License #"]
    return int(license_)


# -- reviews ----------------------------------------------------------------------------------


def _app_store(response: dict) -> list[dict]:
    """The reviews with their responses joined in by id."""
    responses = {
        x["id"]: x["attributes"] for x in response["included"] if x["type"] == "customerReviewResponses"
    }
    out = []
    for r in response["data"]:
        a = r["attributes"]
        link = r["relationships"]["response"]["data"]
        created = datetime.fromisoformat(a["createdDate"])
        out.append({**a, "created": created, "utc": created.astimezone(timezone.utc),
                    "response": responses[link["id"]] if link else None})  # fmt: skip
    assert [x["created"] for x in out] == sorted((x["created"] for x in out), reverse=True)  # newest first
    assert {x["created"].utcoffset().total_seconds() / 3600 for x in out} <= {-7, -8}
    return out


def _reviews_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    reviews = _app_store(task.context)
    there = [x for x in reviews if x["territory"] == p.get("territory")]
    if kind == "count":
        if "rating" in p:
            return sum(x["rating"] == p["rating"] for x in there)
        return sum(x["rating"] <= p["max_rating"] and x["response"] is None for x in there)
    if kind == "mean":
        if "month" in p:
            mean = _mean([x["rating"] for x in reviews if x["createdDate"][:7] == p["month"]])
            assert mean == _mean(
                [x["rating"] for x in reviews if f"{x['utc']:%Y-%m}" == p["month"]]
            )  # either way
            return mean
        return _mean([x["rating"] for x in there])
    if kind == "top":
        rated = [x for x in reviews if x["rating"] == p["rating"]]
        if p["by"] == "territory":
            return _leader(Counter(x["territory"] for x in rated))
        top = _leader(Counter(x["createdDate"][:10] for x in rated))
        assert top == _leader(Counter(x["utc"].date().isoformat() for x in rated))  # either way
        return top
    (x,) = [x for x in reviews if x["reviewerNickname"] == p["reviewerNickname"] and x["title"] == p["title"]]
    if p["field"] == "rating":
        return x["rating"]
    written = x["response"]["lastModifiedDate"]
    assert datetime.fromisoformat(written).astimezone(timezone.utc).date().isoformat() == written[:10]
    return written[:10]


def _play(text: str) -> list[dict]:
    rows = list(csv.DictReader(io.StringIO(text)))
    for r in rows:
        r["reviewId"] = parse_qs(urlparse(r["Review Link"]).query)["reviewId"][0]
        r["stars"] = int(r["Star Rating"])
        submitted = datetime.strptime(r["Review Submit Date and Time"], "%Y-%m-%dT%H:%M:%SZ")
        assert round(submitted.replace(tzinfo=timezone.utc).timestamp() * 1000) == int(
            r["Review Submit Millis Since Epoch"]
        )
        assert r["Review Last Update Millis Since Epoch"] >= r["Review Submit Millis Since Epoch"]
        assert r["Review Title"] == "" and (r["App Version Code"] == "") == (r["App Version Name"] == "")
    assert len({r["reviewId"] for r in rows}) == len(rows)
    return rows


def _reviews_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    rows = _play(task.context)
    if kind == "count":
        if "App Version Name" in p:
            return sum(r["App Version Name"] == p["App Version Name"] and r["stars"] <= 2 for r in rows)
        return sum(
            r["Reviewer Language"] == p["Reviewer Language"] and not r["Developer Reply Text"] for r in rows
        )
    if kind == "mean":
        if "day" in p:
            return _mean([r["stars"] for r in rows if r["Review Submit Date and Time"][:10] == p["day"]])
        return _mean([r["stars"] for r in rows if r["App Version Code"] == str(p["App Version Code"])])
    if kind == "top":
        if p["by"] == "Device":
            return _leader(Counter(r["Device"] for r in rows if r["stars"] == 1 and r["Device"]))
        return _leader(
            Counter(r["App Version Name"] for r in rows if r["stars"] <= 2 and r["App Version Name"])
        )
    (r,) = [r for r in rows if r["reviewId"] == p["reviewId"]]
    if p["field"] == "Star Rating":
        return r["stars"]
    waited = int(r["Developer Reply Millis Since Epoch"]) - int(r["Review Submit Millis Since Epoch"])
    return waited // 3_600_000


# -- flights ----------------------------------------------------------------------------------


def _minutes(hhmm: str) -> int:
    return int(hhmm[:2]) % 24 * 60 + int(hhmm[2:])


def _apart(later: str, earlier: str) -> int:
    """Minutes from one local time to another, across midnight where need be (less than 12 hours)."""
    return (_minutes(later) - _minutes(earlier) + 720) % 1440 - 720


def _bts(text: str) -> list[dict]:
    assert all(line.endswith(",") for line in text.splitlines())  # every line ends with a comma
    rows = list(csv.DictReader(io.StringIO(text)))
    for r in rows:
        assert r.pop("") == ""  # the column after the last comma
        r["day"] = datetime.strptime(r["FL_DATE"], "%m/%d/%Y %I:%M:%S %p").date()
        assert (r["day"].year, r["day"].month, r["day"].day) == (
            int(r["YEAR"]),
            int(r["MONTH"]),
            int(r["DAY_OF_MONTH"]),
        )
        r["cancelled"] = float(r["CANCELLED"]) == 1
        r["dep"] = None if r["DEP_DELAY"] == "" else int(float(r["DEP_DELAY"]))
        r["arr"] = None if r["ARR_DELAY"] == "" else int(float(r["ARR_DELAY"]))
        assert r["cancelled"] == (r["DEP_TIME"] == "") == (r["CANCELLATION_CODE"] != "")
        if r["dep"] is not None:
            assert _apart(r["DEP_TIME"], r["CRS_DEP_TIME"]) == r["dep"]
        if r["arr"] is not None:
            assert _apart(r["ARR_TIME"], r["CRS_ARR_TIME"]) == r["arr"]
            causes = [
                r[c]
                for c in (
                    "CARRIER_DELAY",
                    "WEATHER_DELAY",
                    "NAS_DELAY",
                    "SECURITY_DELAY",
                    "LATE_AIRCRAFT_DELAY",
                )
            ]
            assert (causes[0] != "") == (r["arr"] >= 15)
            assert r["arr"] < 15 or sum(int(float(c)) for c in causes) == r["arr"]
        else:
            assert r["cancelled"] or float(r["DIVERTED"]) == 1
    return rows


def _flights_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    rows = _bts(task.context)
    late = [r for r in rows if r["arr"] is not None and r["arr"] >= 15]
    origin = [r for r in rows if r["ORIGIN"] == p.get("ORIGIN")]
    if kind == "count":
        if "DEST" in p:
            return sum(r["DEST"] == p["DEST"] for r in late)
        return sum(r["OP_UNIQUE_CARRIER"] == p["OP_UNIQUE_CARRIER"] and r["cancelled"] for r in rows)
    if kind == "mean":
        if "DEST" in p:
            return _mean([r["arr"] for r in origin if r["DEST"] == p["DEST"] and r["arr"] is not None])
        return _mean(
            [
                r["dep"]
                for r in origin
                if r["OP_UNIQUE_CARRIER"] == p["OP_UNIQUE_CARRIER"] and r["dep"] is not None
            ]
        )
    if kind == "top":
        if p["by"] == "late":
            return _leader(Counter(r["OP_UNIQUE_CARRIER"] for r in late if r["ORIGIN"] == p["ORIGIN"]))
        return _leader(Counter(r["DEST"] for r in origin))
    (r,) = [
        r
        for r in origin
        if (r["OP_UNIQUE_CARRIER"], int(r["OP_CARRIER_FL_NUM"]), r["DEST"], r["day"].isoformat())
        == (p["OP_UNIQUE_CARRIER"], p["OP_CARRIER_FL_NUM"], p["DEST"], p["day"])
    ]
    return r["arr"] if p["field"] == "ARR_DELAY" else r["TAIL_NUM"]


def _opensky(flights: list[dict]) -> list[dict]:
    out = []
    for f in flights:
        assert f["callsign"] is None or len(f["callsign"]) == 8  # padded with spaces
        assert f["lastSeen"] > f["firstSeen"] and (f["estArrivalAirport"] is None) == (
            f["estArrivalAirportHorizDistance"] is None
        )
        first = datetime.fromtimestamp(f["firstSeen"], timezone.utc)
        callsign = (f["callsign"] or "").strip()
        out.append({**f, "cs": callsign, "airline": callsign[:3] or None, "day": first.date().isoformat(),
                    "first": first, "minutes": Fraction(f["lastSeen"] - f["firstSeen"], 60)})  # fmt: skip
    return out


def _flights_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    flights = _opensky(task.context)
    out_of = [f for f in flights if f["estDepartureAirport"] == p["from"]]
    route = [f for f in out_of if f["estArrivalAirport"] == p.get("to")]
    if kind == "count":
        if "hours" in p:
            first, last = p["hours"]
            return sum(f["day"] == p["day"] and first <= f["first"].hour < last for f in out_of)
        return sum(f["estArrivalAirport"] is None for f in out_of)
    if kind == "mean":
        if "airline" in p:
            return _mean([f["minutes"] for f in route if f["airline"] == p["airline"]])
        return _mean([f["minutes"] for f in route if f["day"] == p["day"]])
    if kind == "top":
        if p["by"] == "estArrivalAirport":
            return _leader(Counter(f["estArrivalAirport"] for f in out_of if f["estArrivalAirport"]))
        return _leader(Counter(f["airline"] for f in out_of if f["day"] == p["day"] and f["airline"]))
    (f,) = [f for f in out_of if f["cs"] == p["callsign"] and f["day"] == p["day"]]
    return f["icao24"] if p["field"] == "icao24" else f"{f['first']:%H:%M}"


# -- adverse ----------------------------------------------------------------------------------


def _trials(response: dict) -> dict[str, dict]:
    """Each study's arms by title and its events, every count by the arm's title."""
    out = {}
    for study in response["studies"]:
        nct = study["protocolSection"]["identificationModule"]["nctId"]
        module = study["resultsSection"]["adverseEventsModule"]
        groups = {g["id"]: g for g in module["eventGroups"]}
        title = {g["id"]: g["title"] for g in module["eventGroups"]}
        assert len(set(title.values())) == len(title)

        def walk(events: list[dict], groups: dict = groups, title: dict = title) -> list[dict]:
            rows = []
            for e in events:
                stats = {}
                for s in e["stats"]:
                    assert s["numAtRisk"] == groups[s["groupId"]]["seriousNumAtRisk"]
                    assert s.get("numEvents", s["numAffected"]) >= s["numAffected"]
                    stats[title[s["groupId"]]] = s
                rows.append({**e, "stats": stats})
            return rows

        serious, other = walk(module["seriousEvents"]), walk(module["otherEvents"])
        for g in module["eventGroups"]:
            most = max((e["stats"][g["title"]]["numAffected"] for e in serious), default=0)
            assert most <= g["seriousNumAffected"] <= g["seriousNumAtRisk"]
        out[nct] = {
            "groups": {g["title"]: g for g in module["eventGroups"]},
            "serious": serious,
            "other": other,
        }
    return out


def _adverse_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    studies = _trials(task.context)
    study = studies.get(p.get("nctId"))
    if kind == "count":
        if "than" in p:
            more = [
                e["stats"][p["group"]]["numAffected"] > e["stats"][p["than"]]["numAffected"]
                for e in study["other"]
            ]
            return sum(more)
        return sum(e["stats"][p["group"]]["numAffected"] > 0 for e in study["serious"])
    if kind == "share":
        if "term" in p:
            (e,) = [e for e in study["other"] if e["term"] == p["term"]]
            s = e["stats"][p["group"]]
            return _pct(s["numAffected"], s["numAtRisk"])
        g = study["groups"][p["group"]]
        return _pct(g["seriousNumAffected"], g["seriousNumAtRisk"])
    if kind == "top":
        if p["by"] == "otherEvents":
            return _leader(
                {e["term"]: sum(s["numAffected"] for s in e["stats"].values()) for e in study["other"]}
            )
        return _leader(
            {nct: sum(g["seriousNumAffected"] for g in s["groups"].values()) for nct, s in studies.items()}
        )
    events = study["serious"] if p["field"] == "numAffected" else study["other"]
    (e,) = [e for e in events if e["term"] == p["term"]]
    return e["stats"][p["group"]][p["field"]]


_YEARS = {
    "YR": Fraction(1),
    "DEC": Fraction(10),
    "MON": Fraction(1, 12),
    "WK": Fraction(1, 52),
    "DY": Fraction(1, 365),
}


def _faers(files: dict[str, str]) -> dict[str, dict]:
    """Each report by primaryid: its DEMO row, drugs, reactions and outcomes."""
    tables = {}
    quarters = set()
    for name, text in files.items():
        m = re.fullmatch(r"ASCII/([A-Z]+)(\d\dQ[1-4])\.txt", name)
        quarters.add(m[2])
        lines = text.splitlines()
        head = lines[0].split("$")
        tables[m[1]] = [dict(zip(head, line.split("$"), strict=True)) for line in lines[1:]]
    assert len(quarters) == 1 and set(tables) == {"DEMO", "DRUG", "REAC", "OUTC", "INDI"}
    reports = {}
    for d in tables["DEMO"]:
        assert d["primaryid"] == d["caseid"] + d["caseversion"]
        reports[d["primaryid"]] = {**d, "drugs": [], "reactions": [], "outcomes": []}
    for name, key in (("DRUG", "drugs"), ("REAC", "reactions"), ("OUTC", "outcomes")):
        for row in tables[name]:
            reports[row["primaryid"]][key].append(row)
    for r in reports.values():
        (ps,) = [d for d in r["drugs"] if d["role_cod"] == "PS"]
        r["suspect"], r["route"] = ps["prod_ai"], ps["route"]
        r["pts"] = [x["pt"] for x in r["reactions"]]
        r["codes"] = [x["outc_cod"] for x in r["outcomes"]]
        r["years"] = int(r["age"]) * _YEARS[r["age_cod"]] if r["age"] else None
    return reports


def _adverse_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    reports = _faers(task.context)
    mine = [r for r in reports.values() if r["suspect"] == p.get("prod_ai")]
    if kind == "count":
        if "pt" in p:
            return sum(p["pt"] in r["pts"] for r in mine)
        return sum("DE" in r["codes"] for r in mine)
    if kind == "share":
        if "sex" in p:
            known = [r for r in mine if r["sex"]]
            return _pct(sum(r["sex"] == "F" for r in known), len(known))
        return _pct(sum("HO" in r["codes"] for r in mine), len(mine))
    if kind == "top":
        if p["by"] == "pt":
            return _leader(Counter(pt for r in mine for pt in r["pts"]))
        return _leader(
            Counter(r["suspect"] for r in reports.values() if r["years"] is not None and r["years"] >= 65)
        )
    if p["field"] == "event_dt":
        (r,) = [r for r in reports.values() if r["caseid"] == str(p["caseid"])]
        return datetime.strptime(r["event_dt"], "%Y%m%d").date().isoformat()
    return reports[p["primaryid"]]["route"]


_ANSWER = {
    ("inspections", "dev"): _inspections_dev,
    ("inspections", "test"): _inspections_test,
    ("reviews", "dev"): _reviews_dev,
    ("reviews", "test"): _reviews_test,
    ("flights", "dev"): _flights_dev,
    ("flights", "test"): _flights_test,
    ("adverse", "dev"): _adverse_dev,
    ("adverse", "test"): _adverse_test,
}


@pytest.mark.parametrize("family", THIRTEENTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_answers_are_read_from_the_context(family: str, split: str) -> None:
    tasks = _tasks(family, split) + _tasks(family, split, 8, SIZE // 4) + _tasks(family, split, 2, SIZE * 4)
    for task in tasks:
        _check(task, _ANSWER[family, split](task))


def _extends(names: set[str]) -> bool:
    return any(a != b and b.startswith(a) for a in names for b in names)


def test_the_inspections_traps_are_there() -> None:
    rows = [r for t in _tasks("inspections", "dev") for r in t.context]
    inspections = [i for t in _tasks("inspections", "dev") for i in _nyc(t.context)]
    assert len(rows) > len(inspections)  # one row per violation
    assert any(i["day"] is None for i in inspections)  # not yet inspected: 1900-01-01
    assert any("score" not in r for r in rows) and any("grade" not in r for r in rows)
    assert any(r.get("latitude") == "0" for r in rows)
    assert _extends({r["dba"] for r in rows})
    by_name: dict[str, set] = {}
    for r in rows:
        by_name.setdefault(r["dba"], set()).add(r["camis"])
    assert any(len(camis) > 1 for camis in by_name.values())  # a chain's locations
    df = pd.concat([t.context for t in _tasks("inspections", "test")[:4]])
    assert df["Address"].str.endswith(" ").any()
    cited = {n for v in df["Violations"] for n in _cited(v)}
    assert {3, 38} <= cited and any(str(n).startswith("3") and n != 3 for n in cited)


def test_the_reviews_traps_are_there() -> None:
    reviews = [x for t in _tasks("reviews", "dev") for x in _app_store(t.context)]
    assert {x["created"].utcoffset().total_seconds() for x in reviews} == {-7 * 3600, -8 * 3600}
    assert any(x["response"] is None for x in reviews) and any(x["response"] for x in reviews)
    assert {x["response"]["state"] for x in reviews if x["response"]} == {"PUBLISHED", "PENDING_PUBLISH"}
    assert max(Counter(x["title"] for x in reviews).values()) > 1  # titles repeat
    assert _extends({x["reviewerNickname"] for x in reviews})
    rows = [r for t in _tasks("reviews", "test")[:4] for r in _play(t.context)]
    assert any(r["App Version Code"] == "" for r in rows) and any(r["Device"] == "" for r in rows)
    assert any(
        r["Review Last Update Millis Since Epoch"] != r["Review Submit Millis Since Epoch"] for r in rows
    )
    assert any('"' in r["Review Text"] for r in rows) and any("," in r["Review Text"] for r in rows)


def test_the_flights_traps_are_there() -> None:
    rows = [r for t in _tasks("flights", "dev")[:4] for r in _bts(t.context)]
    assert any(r["cancelled"] for r in rows) and any(
        r["DEP_TIME"] < r["CRS_DEP_TIME"] for r in rows if r["dep"]
    )
    assert any(float(r["DIVERTED"]) == 1 for t in _tasks("flights", "dev") for r in _bts(t.context))
    cities = Counter((r["ORIGIN"], r["ORIGIN_CITY_NAME"]) for r in rows)
    assert len({code for code, _ in cities}) > len({city for _, city in cities})  # cities named alike
    legs = Counter((r["day"], r["OP_UNIQUE_CARRIER"], r["OP_CARRIER_FL_NUM"]) for r in rows)
    assert max(legs.values()) == 2  # one number over two legs
    assert any(_minutes(r["ARR_TIME"]) < _minutes(r["DEP_TIME"]) for r in rows if r["arr"] is not None)
    flights = [f for t in _tasks("flights", "test")[:4] for f in _opensky(t.context)]
    assert any(f["callsign"] and f["callsign"].endswith(" ") for f in flights)
    assert any(f["estArrivalAirport"] is None for f in flights) and any(
        f["callsign"] is None for f in flights
    )


def test_the_adverse_traps_are_there() -> None:
    studies = [s for t in _tasks("adverse", "dev") for s in _trials(t.context).values()]
    stats = [s for study in studies for e in study["serious"] + study["other"] for s in e["stats"].values()]
    assert any("numEvents" not in s for s in stats) and any("numEvents" in s for s in stats)
    terms = {e["term"] for study in studies for e in study["serious"] + study["other"]}
    assert _extends(terms)
    assert any({e["term"] for e in s["serious"]} & {e["term"] for e in s["other"]} for s in studies)
    assert sum("Placebo" in s["groups"] for s in studies) > 1
    reports = [r for t in _tasks("adverse", "test")[:4] for r in _faers(t.context).values()]
    assert {len(r["event_dt"]) for r in reports} == {0, 4, 6, 8}  # dates known only in part
    assert {"YR", "DEC", "MON"} <= {r["age_cod"] for r in reports}
    assert {"ADALIMUMAB", "ADALIMUMAB-ADAZ"} <= {r["suspect"] for r in reports}
    suspects = {r["suspect"] for r in reports}
    assert any(d["role_cod"] != "PS" and d["prod_ai"] in suspects for r in reports for d in r["drugs"])
    assert any(not r["codes"] for r in reports) and any(
        d["drugname"] != d["prod_ai"] for r in reports for d in r["drugs"]
    )
