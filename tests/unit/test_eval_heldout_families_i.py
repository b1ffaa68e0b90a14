"""The ninth set of held-out task families, checked against the context itself: telescope,
cluster, survey and dns (what every held-out family must be is checked in
test_eval_heldout_families.py).

Every expected answer is found again here from the context as a user would read it (the FITS
headers parsed card by card with regular expressions, the archive's frames filtered and grouped
with pandas; kubectl's JSON walked as dicts, its wide table cut into columns where the header's
names start; the survey export read with csv, its columns found by their question text, the form
responses walked as dicts; the zone file parsed line by line with its ``$ORIGIN``, ``$TTL``,
blank owners and parentheses, the provider's records walked as dicts), not from the generator's
bookkeeping; ``meta["params"]`` only says where to look.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from datetime import datetime

import pandas as pd
import pytest
from heldout_tasks import SIZE, N
from heldout_tasks import tasks as _tasks

from rlm_kernel.eval.tasks import TaskRef, as_text, generate

NINTH = ("telescope", "cluster", "survey", "dns")

_CONTAINERS = {
    "telescope": (dict, pd.DataFrame),
    "cluster": (dict, str),
    "survey": (str, list),
    "dns": (str, list),
}
_SIZES = {"telescope": "frames", "cluster": "pods", "survey": "responses", "dns": "records"}


@pytest.mark.parametrize("family", NINTH)
def test_containers_per_split(family: str) -> None:
    dev, test = _CONTAINERS[family]
    assert all(isinstance(t.context, dev) for t in _tasks(family, "dev"))
    assert all(isinstance(t.context, test) for t in _tasks(family, "test"))
    files = _tasks("telescope", "dev")[0].context  # file name -> text
    assert len(files) >= 2 and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
    listing = _tasks("cluster", "dev")[0].context  # a dict of lists of nested dicts
    assert listing["kind"] == "List" and all(isinstance(i["status"], dict) for i in listing["items"])
    responses = _tasks("survey", "test")[0].context  # a list of dicts, each with a list of answers
    assert all(isinstance(r, dict) and isinstance(r["answers"], list) for r in responses)
    records = _tasks("dns", "test")[0].context  # a list of dicts
    assert all(isinstance(r, dict) and isinstance(r["meta"], dict) for r in records)


def test_the_frame_has_the_dtypes_of_real_data() -> None:
    df = _tasks("telescope", "test")[0].context
    assert str(df["date_obs_utc"].dt.tz) == "UTC" and pd.api.types.is_datetime64_any_dtype(df["date_obs_utc"])
    for column in ("site", "obstype", "target_name", "band"):
        assert isinstance(df[column].dtype, pd.CategoricalDtype), column
    assert df["frame_id"].dtype == "int64" and df["frame_id"].is_unique
    assert df["exposure_s"].dtype == float and df["seeing_arcsec"].dtype == float
    assert pd.api.types.is_string_dtype(df["basename"]) and pd.api.types.is_string_dtype(df["proposal_id"])
    calibrations = df["obstype"] != "EXPOSE"
    assert (
        df.loc[calibrations, "target_name"].isna().all()
        and df.loc[~calibrations, "target_name"].notna().all()
    )
    assert df["seeing_arcsec"].isna().any() and df["airmass_start"].isna().any()
    assert df.loc[df["obstype"] == "EXPOSE", "seeing_arcsec"].isna().any()  # not measured on some exposures
    assert df["date_obs_utc"].is_monotonic_decreasing  # newest first, as the archive lists them
    headers = "".join(_tasks("telescope", "dev")[0].context.values())
    keywords = set(re.findall(r"^([A-Z0-9_-]+)\s*=", headers, re.M))
    assert {"EXPTIME", "AIRMASS", "OBJECT", "FILTER", "DATE-OBS"} <= keywords
    assert not keywords & set(df.columns) and not {k.lower() for k in keywords} & set(df.columns)


@pytest.mark.parametrize("family", NINTH)
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


@pytest.mark.parametrize("family", NINTH)
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


# -- telescope --------------------------------------------------------------------------------

_CARD = re.compile(r"^([A-Z0-9_-]{1,8})\s*= (.*)$")


def _value(text: str) -> object:
    if text.startswith("'"):
        return re.match(r"'((?:[^']|'')*)'", text).group(1).replace("''", "'").rstrip()  # padding aside
    raw = text.split(" / ")[0].strip()
    if raw in ("T", "F"):
        return raw == "T"
    return float(raw) if re.search(r"[.eE]", raw) else int(raw)


def _headers(files: dict[str, str]) -> list[dict]:
    out = []
    for name, text in files.items():
        lines = text.splitlines()
        assert lines[-1] == "END" and all(len(line) <= 80 for line in lines)
        cards = {}
        for line in lines[:-1]:
            m = _CARD.match(line)
            assert m, line
            cards[m.group(1)] = _value(m.group(2))
        assert cards["EXPTIME"] == cards["EXPOSURE"]
        cards["file"] = name
        cards["start"] = datetime.fromisoformat(cards["DATE-OBS"])
        out.append(cards)
    return out


def _telescope_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    lights = [h for h in _headers(task.context) if h["IMAGETYP"] == "Light Frame"]
    if kind == "count":
        mine = [h for h in lights if h["OBJECT"] == p["object"]]
        if "filter" in p:
            return sum(h["FILTER"] == p["filter"] for h in mine)
        return sum(h["AIRMASS"] < p["below"] for h in mine)
    if kind == "total":
        if "object" in p:
            return round(sum(h["EXPTIME"] for h in lights if h["OBJECT"] == p["object"]) / 60, 1)
        return round(sum(h["EXPTIME"] for h in lights if h["FILTER"] == p["filter"]) / 3600, 2)
    if kind == "top":
        if "filter" in p:
            return _leader(Counter(h["OBJECT"] for h in lights if h["FILTER"] == p["filter"]))
        seconds: Counter = Counter()
        for h in lights:
            seconds[h["OBJECT"]] += h["EXPTIME"]
        return _leader(dict(seconds))
    if "file" in p:
        (h,) = [h for h in lights if h["file"] == p["file"]]
        return h["FWHM"]
    return max((h for h in lights if h["OBJECT"] == p["object"]), key=lambda h: h["start"])["file"]


def _telescope_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    df = task.context
    science = df[df["obstype"] == "EXPOSE"]
    if kind == "count":
        mine = science[science["target_name"] == p["target"]]
        if "below" in p:
            return int((mine["seeing_arcsec"] < p["below"]).sum())
        return int((mine["site"] == p["site"]).sum())
    if kind == "total":
        if "proposal" in p:
            return round(science.loc[science["proposal_id"] == p["proposal"], "exposure_s"].sum() / 3600, 2)
        mine = science[(science["target_name"] == p["target"]) & (science["band"] == p["band"])]
        return round(mine["exposure_s"].sum() / 60, 1)
    if kind == "top":
        if "day" in p:
            day = science[science["date_obs_utc"].dt.strftime("%Y-%m-%d") == p["day"]]
            return _leader(day["target_name"].value_counts().loc[lambda s: s > 0].to_dict())
        mine = science[science["proposal_id"] == p["proposal"]]
        return _leader(mine.groupby("target_name", observed=True)["exposure_s"].sum().to_dict())
    if "frame_id" in p:
        (airmass,) = df.loc[df["frame_id"] == p["frame_id"], "airmass_start"]
        return airmass
    mine = science[(science["target_name"] == p["target"]) & (science["band"] == p["band"])]
    return mine["date_obs_utc"].max().strftime("%Y-%m-%d %H:%M:%S")


# -- cluster ----------------------------------------------------------------------------------


def _millicores(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else round(float(cpu) * 1000)


def _mib(memory: str) -> int:
    number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", memory).groups()
    return int(number) * (1024 if unit == "Gi" else 1)


def _cluster_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    pods = task.context["items"]
    assert all(i["kind"] == "Pod" for i in pods)
    by_name = {i["metadata"]["name"]: i for i in pods}
    assert len(by_name) == len(pods)
    mine = [i for i in pods if i["metadata"]["namespace"] == p.get("namespace")]
    if kind == "count":
        if "node" in p:
            return sum(i["spec"].get("nodeName") == p["node"] for i in pods)
        return sum(
            i["status"]["phase"] == "Running"
            and not all(c["ready"] for c in i["status"]["containerStatuses"])
            for i in mine
        )
    if kind == "total":
        requests = [c["resources"]["requests"] for i in mine for c in i["spec"]["containers"]]
        if p["resource"] == "cpu":
            return sum(_millicores(r["cpu"]) for r in requests)
        return sum(_mib(r["memory"]) for r in requests if "memory" in r)
    if kind == "top":
        if p["by"] == "node":
            return _leader(Counter(i["spec"]["nodeName"] for i in pods if i["status"]["phase"] == "Running"))
        return _leader(
            {
                i["metadata"]["name"]: sum(
                    c["restartCount"] for c in i["status"].get("containerStatuses", [])
                )
                for i in pods
            }
        )
    pod = by_name[p["pod"]]
    if "container" in p:
        (image,) = [c["image"] for c in pod["spec"]["containers"] if c["name"] == p["container"]]
        return image
    return pod["status"]["podIP"]


def _wide(text: str) -> list[dict]:
    """The table's rows as dicts, each cell cut where its column's name starts in the header."""
    header, *lines = text.splitlines()
    starts = [(m.start(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", header)]
    assert [name for _, name in starts][-2:] == ["NOMINATED NODE", "READINESS GATES"]
    rows = []
    for line in lines:
        cells = {}
        for k, (at, name) in enumerate(starts):
            end = starts[k + 1][0] if k + 1 < len(starts) else len(line)
            cells[name] = line[at:end].strip()
        rows.append(cells)
    return rows


def _cluster_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    rows = _wide(task.context)
    restarts = {r["NAME"]: int(r["RESTARTS"].split()[0]) for r in rows}
    if kind == "count":
        if "node" in p:
            return sum(r["NODE"] == p["node"] and r["STATUS"] != "Running" for r in rows)
        ready = [tuple(map(int, r["READY"].split("/"))) for r in rows if r["NAMESPACE"] == p["namespace"]]
        return sum(a < b for a, b in ready)
    if kind == "total":
        if "deployment" in p:
            mine = re.compile(rf"{re.escape(p['deployment'])}-[a-z0-9]{{9,10}}-[a-z0-9]{{5}}")
            return sum(n for name, n in restarts.items() if mine.fullmatch(name))
        return sum(restarts[r["NAME"]] for r in rows if r["NAMESPACE"] == p["namespace"])
    if kind == "top":
        if p["by"] == "node":
            return _leader(Counter(r["NODE"] for r in rows if r["STATUS"] == "Running"))
        return _leader(Counter(r["NAMESPACE"] for r in rows if r["STATUS"] != "Running"))
    (row,) = [r for r in rows if r["NAME"] == p["pod"]]
    return row[p["column"]]


# -- survey -----------------------------------------------------------------------------------


def _export(text: str) -> tuple[list[dict], dict[str, str]]:
    """The responses (column name -> value), and each question's column by its text."""
    names, texts, ids, *rows = list(csv.reader(io.StringIO(text)))
    assert all("ImportId" in json.loads(i) for i in ids)
    assert all(len(r) == len(names) for r in rows)
    column = dict(zip(texts, names, strict=True))
    return [dict(zip(names, r, strict=True)) for r in rows], column


def _statement(column: dict[str, str], statement: str) -> str:
    (name,) = [c for text, c in column.items() if text.endswith(f" - {statement}")]
    return name


def _survey_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    rows, column = _export(task.context)
    dept = column["Which department do you work in?"]
    tenure = column["How long have you worked at Northwind?"]
    (recommend,) = [c for text, c in column.items() if text.startswith("How likely are you to recommend")]
    real = [r for r in rows if r["Finished"] == "True" and r["Status"] == "IP Address"]
    mine = [r for r in real if r[dept] == p.get("department")]
    if kind == "count":
        if "statement" in p:
            return sum(r[_statement(column, p["statement"])] == "Strongly agree" for r in mine)
        return sum(r[tenure] == p["tenure"] for r in real)
    if kind == "mean":
        if p["of"] == "recommend":
            scores = [int(r[recommend]) for r in mine if r[recommend]]
            return round(sum(scores) / len(scores), 2)
        return round(sum(int(r["Duration (in seconds)"]) for r in mine) / len(mine) / 60, 1)
    if kind == "top":
        if "department" in p:
            return _leader(Counter(r[tenure] for r in mine if r[tenure]))
        scores: dict = {}
        for r in real:
            if r[recommend]:
                scores.setdefault(r[dept], []).append(int(r[recommend]))
        return _leader({k: sum(v) / len(v) for k, v in scores.items()})
    (row,) = [r for r in rows if r["ResponseId"] == p["response"]]
    return row[_statement(column, p["statement"])] if "statement" in p else row[dept]


def _answers(response: dict) -> dict:
    """A form response's answers by their field's ref, each its typed value."""
    out = {}
    for a in response["answers"]:
        value = a[a["type"]]
        out[a["field"]["ref"]] = value["label"] if a["type"] == "choice" else value
    return out


def _survey_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    responses = [(r, _answers(r)) for r in task.context]
    mine = [a for r, a in responses if r["hidden"]["store"] == p.get("store")]
    if kind == "count":
        if "store" in p:
            return sum(a.get("staff_helpful") is True for a in mine)
        return sum(
            a["visit_reason"] == p["reason"] and r["submitted_at"][:7] == p["month"] for r, a in responses
        )
    if kind == "mean":
        if p["of"] == "satisfaction":
            ratings = [a["satisfaction"] for a in mine if "satisfaction" in a]
            return round(sum(ratings) / len(ratings), 2)
        scores = [a["nps"] for a in mine if "nps" in a]
        promoters, detractors = sum(s >= 9 for s in scores), sum(s <= 6 for s in scores)
        return round(100 * (promoters - detractors) / len(scores), 1)
    if kind == "top":
        if "month" in p:
            return _leader(
                Counter(r["hidden"]["store"] for r, _ in responses if r["submitted_at"][:7] == p["month"])
            )
        return _leader(Counter(a["visit_reason"] for _, a in responses if a.get("satisfaction", 5) <= 2))
    if "email" in p:
        (a,) = [a for _, a in responses if a.get("email") == p["email"]]
        return a["nps"]
    (r,) = [r for r, _ in responses if r["response_id"] == p["response_id"]]
    return r["hidden"]["store"]


# -- dns --------------------------------------------------------------------------------------

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_TYPES = {"A", "AAAA", "CNAME", "MX", "NS", "TXT", "SRV", "CAA", "SOA"}


def _seconds(text: str) -> int:
    m = re.fullmatch(r"(\d+)([smhdw]?)", text.lower())
    return int(m.group(1)) * _UNITS.get(m.group(2), 1)


def _absolute(name: str, origin: str) -> str:
    if name == "@":
        return origin
    return name[:-1] if name.endswith(".") else f"{name}.{origin}"


def _logical_lines(text: str) -> list[str]:
    """The zone's lines, comments dropped and a record over several lines in parentheses joined."""
    out, pending = [], ""
    for line in text.splitlines():
        line = re.sub(r';(?=(?:[^"]*"[^"]*")*[^"]*$).*', "", line).rstrip()  # a comment, not inside quotes
        if not line.strip():
            continue
        pending = f"{pending} {line.strip()}" if pending else line
        if pending.count("(") == pending.count(")"):
            out.append(pending.replace("(", " ").replace(")", " "))
            pending = ""
    return out


def _zone_records(text: str) -> list[dict]:
    records, origin, default, owner = [], "", 0, ""
    for line in _logical_lines(text):
        if line.startswith("$ORIGIN"):
            origin = line.split()[1].rstrip(".")
            continue
        if line.startswith("$TTL"):
            default = _seconds(line.split()[1])
            continue
        fields = line.split()
        if not line[0].isspace():
            owner = _absolute(fields.pop(0), origin)
        ttl = default
        while fields[0] not in _TYPES:
            token = fields.pop(0)
            if token != "IN":
                ttl = _seconds(token)
        rtype, data = fields[0], fields[1:]
        if rtype in ("CNAME", "NS"):
            data = [_absolute(data[0], origin)]
        records.append({"name": owner, "type": rtype, "ttl": ttl, "data": data})
    return records


def _resolve(records: list[dict], name: str, key: str, target: str) -> str:
    for _ in range(8):
        mine = [r for r in records if r["name"] == name]
        if len(mine) == 1 and mine[0]["type"] == "CNAME":
            name = mine[0][target]
            continue
        (address,) = [r[key] for r in mine if r["type"] == "A"]
        return address
    raise AssertionError(name)


def _dns_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    records = _zone_records(task.context)
    (soa,) = [r for r in records if r["type"] == "SOA"]
    zone = soa["name"]
    for r in records:
        if r["type"] in ("A", "CNAME"):
            r["value"] = r["data"][0]
    a = [r for r in records if r["type"] == "A"]
    if kind == "count":
        if "subdomain" in p:
            return sum(r["name"] == p["subdomain"] or r["name"].endswith("." + p["subdomain"]) for r in a)
        return sum(r["type"] == "CNAME" and not r["value"].endswith(zone) for r in records)
    if kind == "resolve":
        return _resolve(records, p["name"], "value", "value")
    if kind == "top":
        if p["by"] == "address":
            return _leader(Counter(r["value"] for r in a))
        deep = [r["name"][: -len(zone) - 1] for r in a if r["name"].count(".") > zone.count(".") + 1]
        subs = Counter(f"{name.split('.')[-1]}.{zone}" for name in deep)  # the label right below the zone
        return _leader(subs)
    (r,) = [r for r in records if r["name"] == p["name"]]
    return r["ttl"]


def _dns_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    records = task.context
    assert all((r["type"] == "MX") == ("priority" in r) for r in records)
    assert all(r["ttl"] == 1 for r in records if r["proxied"])  # automatic while proxied
    mine = [r for r in records if r["zone_name"] == p.get("zone")]
    if kind == "count":
        if "year" in p:
            return sum(r["created_on"].startswith(str(p["year"])) for r in mine)
        return sum(r["type"] in ("A", "AAAA") and r["proxied"] for r in mine)
    if kind == "resolve":
        return _resolve(records, p["name"], "content", "content")
    if kind == "top":
        if "month" in p:
            return _leader(Counter(r["zone_name"] for r in records if r["modified_on"][:7] == p["month"]))
        return _leader(Counter(r["content"] for r in records if r["type"] == "CNAME"))
    if "content" in p:
        (r,) = [r for r in mine if r["type"] == "MX" and r["content"] == p["content"]]
        return r["priority"]
    (r,) = [r for r in records if r["name"] == p["name"] and r["type"] == p["type"]]
    return datetime.fromisoformat(r["modified_on"].replace("Z", "+00:00")).strftime("%Y-%m-%d")


_ANSWER = {
    ("telescope", "dev"): _telescope_dev,
    ("telescope", "test"): _telescope_test,
    ("cluster", "dev"): _cluster_dev,
    ("cluster", "test"): _cluster_test,
    ("survey", "dev"): _survey_dev,
    ("survey", "test"): _survey_test,
    ("dns", "dev"): _dns_dev,
    ("dns", "test"): _dns_test,
}


@pytest.mark.parametrize("family", NINTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_answers_are_read_from_the_context(family: str, split: str) -> None:
    tasks = _tasks(family, split) + _tasks(family, split, 8, SIZE // 4) + _tasks(family, split, 4, SIZE * 4)
    for task in tasks:
        _check(task, _ANSWER[family, split](task))


def test_the_traps_are_there() -> None:
    headers = [h for t in _tasks("telescope", "dev", 4, SIZE * 4) for h in _headers(t.context)]
    assert {"Light Frame", "Bias Frame", "Dark Frame", "Flat Field"} <= {h["IMAGETYP"] for h in headers}
    objects = {h["OBJECT"] for h in headers if h["IMAGETYP"] == "Light Frame"}
    assert any(a != b and b.startswith(a) for a in objects for b in objects)  # M 5 and M 51
    assert any("FWHM" not in h for h in headers if h["IMAGETYP"] == "Light Frame")
    text = "".join(v for t in _tasks("telescope", "dev")[:4] for v in t.context.values())
    assert re.search(r"^OBJECT  = 'M \d+ +'", text, re.M)  # padded inside its quotes
    files = [f for t in _tasks("telescope", "dev")[:4] for f in t.context]
    assert len({f.split("/")[1] for f in files}) < len(files)  # a night's numbers again the next night
    df = pd.concat([t.context for t in _tasks("telescope", "test")[:4]])
    names = set(df["target_name"].dropna())
    assert {"WASP-12", "WASP-121", "SN 2024abfl", "SN 2024abfo"} <= names

    pods = [i for t in _tasks("cluster", "dev", 4, SIZE * 4) for i in t.context["items"]]
    crashing = [
        i for i in pods if any("waiting" in c["state"] for c in i["status"].get("containerStatuses", []))
    ]
    assert any(i["status"]["phase"] == "Running" for i in crashing)  # crash-looping, and still Running
    cpus = {c["resources"]["requests"]["cpu"] for i in pods for c in i["spec"]["containers"]}
    assert any(c.endswith("m") for c in cpus) and any(not c.endswith("m") for c in cpus)
    assert any("memory" not in c["resources"]["requests"] for i in pods for c in i["spec"]["containers"])
    assert any(i["status"].get("podIP") == i["status"].get("hostIP") for i in pods)  # the host's network
    assert any("nodeName" not in i["spec"] for i in pods)  # not scheduled
    rows = [r for t in _tasks("cluster", "test")[:4] for r in _wide(t.context)]
    assert any(r["STATUS"] == "Running" and r["READY"].startswith("0/") for r in rows)  # running, not ready
    assert any("ago)" in r["RESTARTS"] for r in rows) and any(r["NODE"] == "<none>" for r in rows)
    names = {r["NAME"] for r in rows}
    assert any(n.startswith("checkout-api-worker-") for n in names) and any(
        re.fullmatch(r"checkout-api-[a-z0-9]{9,10}-[a-z0-9]{5}", n) for n in names
    )

    text = _tasks("survey", "dev")[0].context
    rows, _ = _export(text)
    assert {r["Status"] for r in rows} == {"IP Address", "Survey Preview"} or len(rows) < 60
    assert any(r["Finished"] == "False" for r in rows) and any("\n" in r["Q5"] for r in rows)
    all_rows = [r for t in _tasks("survey", "dev")[:4] for r in _export(t.context)[0]]
    assert any(r["Status"] == "Survey Preview" for r in all_rows)
    assert {"Customer Support", "Customer Success"} <= {r["Q1"] for r in all_rows}
    responses = [r for t in _tasks("survey", "test")[:4] for r in t.context]
    assert any("satisfaction" not in _answers(r) for r in responses)  # a question skipped
    assert {"Bergen Sentrum", "Bergen Bryggen"} <= {r["hidden"]["store"] for r in responses}

    text = _tasks("dns", "dev")[0].context
    assert re.search(r"^\$TTL \d+[mhd]$", text, re.M) and re.search(
        r"^ +IN  ", text, re.M
    )  # units, blank owners
    assert re.search(r"^\S+\. +", text.split("$ORIGIN eu.")[1], re.M)  # an absolute name under an $ORIGIN
    assert re.search(r"^\w+ +\d+ IN  A ", text, re.M)  # a TTL of its own
    assert "( " in text and re.search(r'"v=DMARC1; p=', text)  # parentheses, semicolons in quotes
    records = _zone_records(text)
    assert any(r["type"] == "CNAME" and not r["data"][0].endswith("kestrel-analytics.com") for r in records)
    sections = [re.findall(r"^\$TTL", part, re.M) for part in text.split("$ORIGIN")[2:]]
    assert any(not found for found in sections)  # a subdomain whose TTL is the one written before it
    items = [r for t in _tasks("dns", "test")[:4] for r in t.context]
    assert {"A", "AAAA", "CNAME", "MX", "TXT"} <= {r["type"] for r in items}
    assert any(r["ttl"] == 1 and not r["proxied"] for r in items) and any(r["proxied"] for r in items)
    assert any(r["created_on"] != r["modified_on"] for r in items)
