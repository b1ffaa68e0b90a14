"""The eighth set of held-out task families, checked against the context itself: birding,
listening, metrics and parcels (what every held-out family must be is checked in
test_eval_heldout_families.py).

Every expected answer is found again here from the context as a user would read it (the mailed
checklists split into their header lines and ``Name  count`` lines by regular expressions, the
observation records walked as dicts; the streaming history walked as dicts, the scrobbles
filtered and grouped with pandas; the query API's series walked as dicts with their values read
from text, the exposition text parsed line by line with regular expressions; the tracking CSV read
with csv and grouped by package, the tracking API's shipments walked as dicts), not from the
generator's bookkeeping; ``meta["params"]`` only says where to look.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from collections import Counter, defaultdict
from datetime import datetime

import pandas as pd
import pytest
from heldout_tasks import SIZE, N
from heldout_tasks import tasks as _tasks

from rlm_kernel.eval.tasks import TaskRef, as_text, generate

EIGHTH = ("birding", "listening", "metrics", "parcels")

_CONTAINERS = {
    "birding": (dict, list),
    "listening": (list, pd.DataFrame),
    "metrics": (dict, str),
    "parcels": (str, dict),
}
_SIZES = {"birding": "checklists", "listening": "plays", "metrics": "targets", "parcels": "packages"}


@pytest.mark.parametrize("family", EIGHTH)
def test_containers_per_split(family: str) -> None:
    dev, test = _CONTAINERS[family]
    assert all(isinstance(t.context, dev) for t in _tasks(family, "dev"))
    assert all(isinstance(t.context, test) for t in _tasks(family, "test"))
    files = _tasks("birding", "dev")[0].context  # file name -> text
    assert len(files) >= 2 and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
    records = _tasks("birding", "test")[0].context  # a list of flat dicts
    assert all(
        isinstance(r, dict) and not any(isinstance(v, (dict, list)) for v in r.values()) for r in records
    )
    shipments = _tasks("parcels", "test")[0].context["shipments"]  # a dict of lists of nested dicts
    assert all(isinstance(s["events"], list) and isinstance(s["events"][0], dict) for s in shipments)
    plays = _tasks("listening", "dev")[0].context
    assert all(isinstance(r, dict) for r in plays)


def test_the_frame_has_the_dtypes_of_real_data() -> None:
    df = _tasks("listening", "test")[0].context
    assert str(df["utc_time"].dt.tz) == "UTC" and pd.api.types.is_datetime64_any_dtype(df["utc_time"])
    assert isinstance(df["artist"].dtype, pd.CategoricalDtype)
    assert df["uts"].dtype == "int64" and df["loved"].dtype == bool and df["duration_ms"].dtype == float
    assert pd.api.types.is_string_dtype(df["track"]) and pd.api.types.is_string_dtype(df["album"])
    assert df["album"].isna().any() and df["duration_ms"].isna().any() and df["track_mbid"].isna().any()
    assert df["utc_time"].is_monotonic_decreasing  # newest first, as the export lists them
    assert (df["utc_time"].astype("int64") // 10**9 == df["uts"]).all() or (
        df["utc_time"].astype("int64") // 10**6 == df["uts"]
    ).all()
    keys = set(_tasks("listening", "dev")[0].context[0])
    assert not keys & set(df.columns)  # other fields in the other split


@pytest.mark.parametrize("family", EIGHTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_what_they_hold_grows_with_the_length(family: str, split: str) -> None:
    small = generate(TaskRef(family, split, SIZE // 4, 0))
    big = generate(TaskRef(family, split, 8 * SIZE, 0))
    assert 0.5 * SIZE <= small.context_chars <= 1.5 * SIZE, small.context_chars
    key = _SIZES[family]
    assert small.meta[key] < _tasks(family, split)[0].meta[key] < big.meta[key]
    for length in (4096, 16384):  # near the length asked for, at four characters a token
        for index in range(2):
            task = generate(TaskRef(family, split, length, index))
            assert 0.8 * 4 * length <= task.context_chars <= 1.2 * 4 * length, (length, task.context_chars)
            assert task.context_chars == len(as_text(task.context))


@pytest.mark.parametrize("family", EIGHTH)
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


# -- birding ----------------------------------------------------------------------------------

_SPECIES_LINE = re.compile(r"^(\S.*?)  (\d+|X)$")


def _checklists(files: dict[str, str]) -> list[dict]:
    out = []
    for name, text in files.items():
        lines = text.splitlines()
        place, county, state, country = lines[0].rsplit(", ", 3)
        assert (state, country) == ("New York", "US")
        sub_id = re.search(r"https://ebird\.org/checklist/(S\d+)$", text, re.M).group(1)
        assert name == f"checklists/{sub_id}.txt"
        minutes = re.search(r"^(\d+) Minute\(s\)$", text, re.M)
        species = re.search(r"^(\d+) species(?: \(\+(\d+) other taxa\))?$", text, re.M)
        counts = {}
        for line in lines[lines.index(species.group(0)) + 2 :]:
            if not line:
                break
            m = _SPECIES_LINE.match(line)
            if m:
                counts[m.group(1)] = None if m.group(2) == "X" else int(m.group(2))
            else:
                assert line.startswith("     ")  # a species comment
        assert len(counts) == int(species.group(1)) + int(species.group(2) or 0)
        out.append(
            {
                "place": place,
                "county": county,
                "start": datetime.strptime(lines[1], "%b %d, %Y %I:%M %p"),
                "protocol": re.search(r"^Protocol: (\w+)$", text, re.M).group(1),
                "minutes": int(minutes.group(1)) if minutes else None,
                "counts": counts,
            }
        )
    return out


def _birding_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    lists = _checklists(task.context)
    if kind == "count":
        return sum(p["species"] in c["counts"] for c in lists)
    if kind == "total":
        return sum(c["counts"].get(p["species"]) or 0 for c in lists if c["place"] == p["place"])
    if kind == "top":
        return _leader(dict(Counter(c["place"] for c in lists)))
    (c,) = [c for c in lists if c["place"] == p["place"] and f"{c['start']:%Y-%m-%d}" == p["day"]]
    return c["minutes"]


def _birding_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    obs = task.context
    assert all(("howMany" in o) != o["presenceNoted"] for o in obs)
    if kind == "count":
        return len(
            {o["subId"] for o in obs if o["comName"] == p["species"] and o["subnational2Name"] == p["county"]}
        )
    if kind == "total":
        return sum(
            o.get("howMany", 0) for o in obs if o["comName"] == p["species"] and o["obsDt"][:10] == p["day"]
        )
    if kind == "top":
        birds: Counter = Counter()
        for o in obs:
            birds[o["comName"]] += o.get("howMany", 0)
        return _leader(dict(birds))
    (o,) = [o for o in obs if o["subId"] == p["subId"] and o["comName"] == p["species"]]
    return o["howMany"]


# -- listening --------------------------------------------------------------------------------


def _listening_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    rows = task.context
    music = [r for r in rows if r["master_metadata_track_name"] is not None]
    if kind == "count":
        return sum(
            r["master_metadata_track_name"] == p["track"]
            and r["master_metadata_album_artist_name"] == p["artist"]
            and r["ms_played"] >= 30_000
            for r in music
        )
    if kind == "total":
        ms = sum(
            r["ms_played"]
            for r in music
            if r["master_metadata_album_artist_name"] == p["artist"] and r["ts"].startswith(p["month"])
        )
        return round(ms / 60_000, 1)
    if kind == "top":
        spent: Counter = Counter()
        for r in music:
            spent[r["master_metadata_album_artist_name"]] += r["ms_played"]
        return _leader(dict(spent))
    (r,) = [r for r in rows if r["ts"] == p["ts"] and r["master_metadata_track_name"] == p["track"]]
    return r["ms_played"]


def _listening_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    df = task.context
    if kind == "count":
        day = df["utc_time"].dt.strftime("%Y-%m-%d")
        return int(((df["artist"] == p["artist"]) & (day == p["day"])).sum())
    if kind == "total":
        return round(df.loc[df["album"] == p["album"], "duration_ms"].sum() / 60_000, 1)
    if kind == "top":
        month = df[df["utc_time"].dt.strftime("%Y-%m") == p["month"]]
        return _leader(month["artist"].value_counts().to_dict())
    albums = df.loc[(df["track"] == p["track"]) & (df["artist"] == p["artist"]), "album"].dropna().unique()
    (album,) = albums
    return album


# -- metrics ----------------------------------------------------------------------------------

_EXPOSITION = re.compile(r"^([a-zA-Z_:][\w:]*)\{(.*)\} (\S+) (\d+)$")


def _vector(response: dict) -> list[tuple[dict, float]]:
    assert response["status"] == "success" and response["data"]["resultType"] == "vector"
    out = []
    for r in response["data"]["result"]:
        stamp, value = r["value"]
        assert isinstance(value, str) and isinstance(stamp, float)
        out.append((r["metric"], float(value)))
    return out


def _exposition(text: str) -> list[tuple[dict, float]]:
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.fullmatch(r"# TYPE \w+ untyped", line)
            continue
        m = _EXPOSITION.match(line)
        assert m, line
        labels = {"__name__": m.group(1), **dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))}
        out.append((labels, float(m.group(3))))
    return out


def _metrics_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    series = _vector(task.context)

    def named(name: str) -> list[tuple[dict, float]]:
        return [(m, v) for m, v in series if m["__name__"] == name]

    if kind == "count":
        return sum(
            m["job"] == p["job"] and m["code"].startswith("5") for m, _ in named("http_requests_total")
        )
    if kind == "total":
        return sum(
            v
            for m, v in named("http_requests_total")
            if m["job"] == p["job"] and m["handler"] == p["handler"]
        )
    if kind == "top":
        return _leader({m["instance"]: v for m, v in named("process_resident_memory_bytes")})
    (v,) = [v for m, v in named("go_goroutines") if m["instance"] == p["instance"]]
    return v


def _metrics_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    series = _exposition(task.context)

    def named(name: str) -> list[tuple[dict, float]]:
        return [(m, v) for m, v in series if m["__name__"] == name]

    if kind == "count":
        return sum(m["job"] == p["job"] and v >= p["at_least"] for m, v in named("jvm_threads_live_threads"))
    if kind == "total":
        return sum(
            v
            for m, v in named("http_server_requests_seconds_count")
            if m["job"] == p["job"] and m["uri"] == p["uri"] and m["status"] == p["status"]
        )
    if kind == "top":
        spent: dict = defaultdict(float)
        for m, v in named("http_server_requests_seconds_sum"):
            if m["job"] == p["job"]:
                spent[m["uri"]] += v
        return _leader(dict(spent))
    (v,) = [v for m, v in named("jvm_memory_used_bytes") if m["pod"] == p["pod"] and m["id"] == "G1 Old Gen"]
    return v


# -- parcels ----------------------------------------------------------------------------------


def _ups_check(number: str) -> bool:
    body, check = number[2:-1], int(number[-1])
    total = sum(
        (int(c) if c.isdigit() else (ord(c) - 63) % 10) * (2 if i % 2 else 1) for i, c in enumerate(body)
    )
    return (10 - total % 10) % 10 == check


def _packages(text: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for row in csv.DictReader(io.StringIO(text)):
        out[row["Tracking Number"]].append(row)
    for number, rows in out.items():
        assert number.startswith("1Z") and len(number) == 18 and _ups_check(number)
        assert len({(r["Service"], r["Package Weight (LBS)"], r["Destination State"]) for r in rows}) == 1
    return out


def _parcels_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    packages = _packages(task.context)
    if kind == "count":
        return sum(
            rows[0]["Service"] == p["service"] and any(r["Status"] == "Exception" for r in rows)
            for rows in packages.values()
        )
    if kind == "total":
        return round(
            sum(
                float(rows[0]["Package Weight (LBS)"])
                for rows in packages.values()
                if rows[0]["Destination State"] == p["state"]
            ),
            1,
        )
    if kind == "top":
        delivered = Counter(
            r["Destination City"]
            for rows in packages.values()
            for r in rows
            if r["Status"] == "Delivered"
            and f"{datetime.strptime(r['Activity Date'], '%m/%d/%Y'):%Y-%m}" == p["month"]
        )
        return _leader(dict(delivered))
    (row,) = [r for r in packages[p["number"]] if r["Status"] == "Delivered"]
    return row["Signed By"]


def _parcels_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    shipments = task.context["shipments"]
    for s in shipments:
        assert s["status"] == s["events"][0]  # the newest event first
    if kind == "count":
        return sum(
            s["destination"]["address"]["addressLocality"] == p["city"]
            and any(e["statusCode"] == "failure" for e in s["events"])
            for s in shipments
        )
    if kind == "total":
        return round(
            sum(
                s["details"]["weight"]["value"]
                for s in shipments
                if s["details"]["product"]["productName"] == p["product"]
            ),
            2,
        )
    if kind == "top":
        processed = Counter(
            e["location"]["address"]["addressLocality"]
            for s in shipments
            for e in s["events"]
            if e["description"].endswith(p["centre"])
        )
        return _leader(dict(processed))
    (s,) = [s for s in shipments if s["id"] == p["id"]]
    (e,) = [e for e in s["events"] if e["statusCode"] == "delivered"]
    return datetime.fromisoformat(e["timestamp"]).strftime("%Y-%m-%d")


_ANSWER = {
    ("birding", "dev"): _birding_dev,
    ("birding", "test"): _birding_test,
    ("listening", "dev"): _listening_dev,
    ("listening", "test"): _listening_test,
    ("metrics", "dev"): _metrics_dev,
    ("metrics", "test"): _metrics_test,
    ("parcels", "dev"): _parcels_dev,
    ("parcels", "test"): _parcels_test,
}


@pytest.mark.parametrize("family", EIGHTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_answers_are_read_from_the_context(family: str, split: str) -> None:
    tasks = _tasks(family, split) + _tasks(family, split, 8, SIZE // 4) + _tasks(family, split, 4, SIZE * 4)
    for task in tasks:
        _check(task, _ANSWER[family, split](task))


def test_the_traps_are_there() -> None:
    lists = [c for t in _tasks("birding", "dev")[:4] for c in _checklists(t.context)]
    places = {c["place"] for c in lists}
    assert any(a != b and b.startswith(a + "--") for a in places for b in places)  # a park and its sub-areas
    assert any(None in c["counts"].values() for c in lists) and any(c["minutes"] is None for c in lists)
    text = "".join(v for t in _tasks("birding", "dev")[:4] for v in t.context.values())
    assert "Downy/Hairy Woodpecker  " in text and re.search(r"^     .*\d", text, re.M)  # numbers in comments
    assert re.search(r"^\d+ species \(\+\d+ other taxa\)$", text, re.M)
    obs = [o for t in _tasks("birding", "test")[:4] for o in t.context]
    assert any("howMany" not in o for o in obs) and any("/" in o["comName"] for o in obs)

    rows = [r for t in _tasks("listening", "dev")[:4] for r in t.context]
    assert any(r["master_metadata_track_name"] is None and r["episode_name"] for r in rows)  # podcasts
    assert any(r["reason_end"] == "fwdbtn" and r["ms_played"] >= 30_000 for r in rows)
    assert any(r["skipped"] is None for r in rows)
    tracks = {r["master_metadata_track_name"] for r in rows}
    assert {"Dreams", "Dreams - 2004 Remaster"} <= tracks
    artists = {r["master_metadata_album_artist_name"] for r in rows}
    assert {"Khruangbin", "Khruangbin & Leon Bridges"} <= artists
    df = _tasks("listening", "test")[0].context
    assert {"Beach House", "Beach Fossils"} <= set(df["artist"])

    series = [s for t in _tasks("metrics", "dev")[:4] for s in _vector(t.context)]
    jobs = {m["job"] for m, _ in series}
    assert {"checkout", "checkout-worker"} <= jobs
    assert any(m["__name__"] == "up" and v == 0 for m, v in series)  # a target down
    text = _tasks("metrics", "test")[0].context
    assert re.search(r" \d\.\d+e\+0\d \d+$", text, re.M)  # a million and up as Go writes it
    assert re.search(r'uri="/api/orders"', "".join(t.context for t in _tasks("metrics", "test")[:4]))

    packages = _packages(_tasks("parcels", "dev")[0].context)
    assert sum(len(rows) for rows in packages.values()) > 3 * len(packages)  # a package's fields on every row
    statuses = {r["Status"] for rows in packages.values() for r in rows}
    assert {"Exception", "Delivered", "In Transit"} <= statuses
    assert any(
        all(r["Status"] != "Delivered" for r in rows) for rows in packages.values()
    )  # still on the road
    numbers = sorted(packages)
    assert any(a[:-3] == b[:-3] for a, b in itertools.pairwise(numbers))  # numbers a digit or two apart
    shipments = [s for t in _tasks("parcels", "test")[:4] for s in t.context["shipments"]]
    stamps = {e["timestamp"][-6:] for s in shipments for e in s["events"]}
    assert {"+01:00", "+02:00"} <= stamps  # summer time ends in the middle
    assert any(e["statusCode"] == "failure" for s in shipments for e in s["events"])
    assert any("estimatedTimeOfDelivery" in s for s in shipments)
