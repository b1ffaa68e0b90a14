"""The tenth set of held-out task families, checked against the context itself: crashes, variants,
gradebook and manifest (what every held-out family must be is checked in
test_eval_heldout_families.py).

Every expected answer is found again here from the context as a user would read it (the crash logs
parsed line by line with regular expressions, their local times turned to UTC, the crash events
walked as dicts; the VCF split on tabs, semicolons and bars, the lab's table filtered and grouped
with pandas; the submissions walked as dicts, the gradebook export read with csv; the manifest
walked as dicts with its pounds and Fahrenheit converted, the terminal's report cut into columns
where the header's names start), not from the generator's bookkeeping; ``meta["params"]`` only
says where to look.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from datetime import datetime, timezone

import pandas as pd
import pytest
from heldout_tasks import SIZE, N
from heldout_tasks import tasks as _tasks

from rlm_kernel.eval.tasks import TaskRef, as_text, generate

TENTH = ("crashes", "variants", "gradebook", "manifest")

_CONTAINERS = {
    "crashes": (dict, list),
    "variants": (str, pd.DataFrame),
    "gradebook": (list, str),
    "manifest": (dict, str),
}
_SIZES = {"crashes": "reports", "variants": "variants", "gradebook": "students", "manifest": "containers"}


@pytest.mark.parametrize("family", TENTH)
def test_containers_per_split(family: str) -> None:
    dev, test = _CONTAINERS[family]
    assert all(isinstance(t.context, dev) for t in _tasks(family, "dev"))
    assert all(isinstance(t.context, test) for t in _tasks(family, "test"))
    files = _tasks("crashes", "dev")[0].context  # file name -> text
    assert len(files) >= 2 and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
    events = _tasks("crashes", "test")[0].context  # a list of nested dicts
    assert all(isinstance(e, dict) and isinstance(e["exceptions"], list) for e in events)
    submissions = _tasks("gradebook", "dev")[0].context  # a list of dicts, each with two dicts in it
    assert all(isinstance(s["assignment"], dict) and isinstance(s["user"], dict) for s in submissions)
    manifest = _tasks("manifest", "dev")[0].context  # a dict of lists of dicts of lists of dicts
    assert all(isinstance(b["containers"], list) for b in manifest["bills_of_lading"])


def test_the_frame_has_the_dtypes_of_real_data() -> None:
    df = _tasks("variants", "test")[0].context
    for column in ("sample_id", "chromosome", "consequence"):
        assert isinstance(df[column].dtype, pd.CategoricalDtype), column
    assert df["position"].dtype == "int64" and df["depth"].dtype == "int64"
    assert all(df[c].dtype == float for c in ("vaf", "gnomad_af", "cadd_phred"))
    assert pd.api.types.is_datetime64_any_dtype(df["run_date"])
    for column in (
        "reference",
        "alternate",
        "gene",
        "hgvs_c",
        "hgvs_p",
        "clinvar",
        "zygosity",
        "filter_status",
    ):
        assert pd.api.types.is_string_dtype(df[column]), column
    assert df["gnomad_af"].isna().any() and df["clinvar"].isna().any() and df["hgvs_p"].isna().any()
    where = ["chromosome", "position"]
    assert df.duplicated(where).any() and not df.duplicated(["sample_id", *where]).any()
    assert set(df["filter_status"]) > {"PASS"}
    vcf = _tasks("variants", "dev")[0].context
    header = next(line for line in vcf.splitlines() if line.startswith("#CHROM"))
    assert not set(header[1:].split("\t")) & set(df.columns)
    assert not {c.lower() for c in header[1:].split("\t")} & set(df.columns)


@pytest.mark.parametrize("family", TENTH)
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


@pytest.mark.parametrize("family", TENTH)
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


def _mean(values: list, places: int) -> float:
    return round(sum(values) / len(values), places)


# -- crashes ----------------------------------------------------------------------------------

_FRAME = re.compile(r"^\d+\s+(\S+)\s*\t0x[0-9a-f]{16} (.*)$")


def _crash_logs(files: dict[str, str]) -> list[dict]:
    out = []
    for name, text in files.items():
        head = dict(re.findall(r"^([A-Z][\w /-]*?):\s+(.*)$", text.split("\nThread ", 1)[0], re.M))
        when = datetime.strptime(head["Date/Time"], "%Y-%m-%d %H:%M:%S.%f %z")
        launched = datetime.strptime(head["Launch Time"], "%Y-%m-%d %H:%M:%S.%f %z")
        thread = int(head["Triggered by Thread"])
        crashed = text.split(f"\nThread {thread} Crashed:\n", 1)[1].split("\n\n", 1)[0]
        frames = [_FRAME.match(line).groups() for line in crashed.splitlines()]
        top = next(symbol for image, symbol in frames if image == "Larkspur")
        function, where = re.fullmatch(r"(.*) \+ \d+ \((\S+:\d+)\)", top).groups()
        out.append(
            {
                "file": name,
                "incident": head["Incident Identifier"],
                "model": head["Hardware Model"],
                "version": head["Version"].split(" (")[0],
                "os": re.match(r"iPhone OS ([\d.]+) \(", head["OS Version"]).group(1),
                "exception": head["Exception Type"].split()[0],
                "utc_day": when.astimezone(timezone.utc).date().isoformat(),
                "uptime": round((when - launched).total_seconds(), 4),
                "function": function,
                "where": where,
            }
        )
    return out


def _crashes_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    logs = _crash_logs(task.context)
    if kind == "count":
        if "day" in p:
            return sum(r["utc_day"] == p["day"] for r in logs)
        return sum(r["version"] == p["version"] and r["exception"] == p["exception"] for r in logs)
    if kind == "mean":
        key = "version" if "version" in p else "model"
        return _mean([r["uptime"] for r in logs if r[key] == p[key]], 1)
    if kind == "top":
        if "version" in p:
            return _leader(Counter(r["model"] for r in logs if r["version"] == p["version"]))
        return _leader(Counter(r["function"] for r in logs))
    if "file" in p:
        (r,) = [r for r in logs if r["file"] == p["file"]]
        return r["where"]
    (r,) = [r for r in logs if r["incident"] == p["incident"]]
    return r["os"]


def _crashes_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    events = task.context
    fatal = [e for e in events if e["is_fatal"]]
    if kind == "count":
        if "android" in p:
            return sum(
                e["issue_title"] == p["issue"] and e["operating_system"]["display_version"] == p["android"]
                for e in fatal
            )
        return sum(
            e["device"]["manufacturer"] == p["manufacturer"]
            and e["application"]["display_version"] == p["version"]
            for e in fatal
        )
    mine = [e for e in events if e["issue_title"] == p.get("issue")]
    if kind == "mean":
        if "free" in task.question:
            return _mean([e["memory"]["free"] / 1e6 for e in mine if e["is_fatal"]], 1)
        return round(100 * sum(e["is_fatal"] for e in mine) / len(mine), 1)
    if kind == "top":
        if "day" in p:
            return _leader(Counter(e["issue_title"] for e in fatal if e["event_timestamp"][:10] == p["day"]))
        return _leader(
            Counter(
                e["device"]["model"] for e in fatal if e["application"]["display_version"] == p["version"]
            )
        )
    (e,) = [e for e in events if e["event_id"] == p["event_id"]]
    if "line" in task.question:
        (blamed,) = [f for x in e["exceptions"] if x["blamed"] for f in x["frames"] if f["blamed"]]
        return blamed["line"]
    return e["application"]["display_version"]


# -- variants ---------------------------------------------------------------------------------


def _vcf(text: str) -> tuple[list[str], list[dict]]:
    lines = [line for line in text.splitlines() if not line.startswith("##")]
    header = lines[0].lstrip("#").split("\t")
    samples = header[9:]
    sites = []
    for line in lines[1:]:
        row = dict(zip(header, line.split("\t"), strict=True))
        info = dict(item.split("=", 1) for item in row["INFO"].split(";"))
        first = info["ANN"].split(",")[0].split("|")
        keys = row["FORMAT"].split(":")
        calls = {s: dict(zip(keys, row[s].split(":"), strict=True)) for s in samples}
        assert int(info["AN"]) == sum(a != "." for s in samples for a in re.split(r"[/|]", calls[s]["GT"]))
        sites.append(
            {
                "chrom": row["CHROM"],
                "pos": int(row["POS"]),
                "id": row["ID"],
                "qual": float(row["QUAL"]),
                "filter": row["FILTER"],
                "dp": int(info["DP"]),
                "gene": first[3],
                "consequence": first[1],
                "gt": {s: calls[s]["GT"] for s in samples},
            }
        )
    return samples, sites


def _het(gt: str) -> bool:
    a, b = re.split(r"[/|]", gt)
    return a != "." and a != b


def _variants_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    _, sites = _vcf(task.context)
    passing = [s for s in sites if s["filter"] == "PASS"]
    if kind == "count":
        if "gene" in p:
            return sum(s["gene"] == p["gene"] for s in passing)
        return sum(s["chrom"] == p["chrom"] and _het(s["gt"][p["sample"]]) for s in sites)
    if kind == "mean":
        if "chrom" in p:
            return _mean([s["dp"] for s in passing if s["chrom"] == p["chrom"]], 1)
        return _mean([s["qual"] for s in sites if s["gene"] == p["gene"]], 2)
    if kind == "top":
        if p["by"] == "gene":
            return _leader(Counter(s["gene"] for s in passing if s["consequence"] == "missense_variant"))
        return _leader(Counter(s["chrom"] for s in sites if s["filter"] != "PASS"))
    (site,) = [s for s in sites if s["chrom"] == p["chrom"] and s["pos"] == p["pos"]]
    return site["gt"][p["sample"]] if "sample" in p else site["id"]


def _variants_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    df = task.context
    mine = df[df["sample_id"] == p.get("sample")]
    gene = df[df["gene"] == p.get("gene")]
    if kind == "count":
        if "below" in p:
            return int((gene["gnomad_af"] < p["below"]).sum())
        return int(
            mine["clinvar"].isin(["Pathogenic", "Likely_pathogenic", "Pathogenic/Likely_pathogenic"]).sum()
        )
    if kind == "mean":
        if "sample" in p:
            return _mean(mine.loc[mine["filter_status"] == "PASS", "depth"].tolist(), 1)
        return _mean(gene.loc[gene["consequence"] == "missense_variant", "cadd_phred"].dropna().tolist(), 2)
    if kind == "top":
        if "gene" in p:
            het = gene[gene["zygosity"] == "HET"]
            return _leader(het["sample_id"].value_counts().loc[lambda s: s > 0].to_dict())
        rare = df[df["gnomad_af"].isna() | (df["gnomad_af"] < 0.001)]
        return _leader(rare["gene"].value_counts().to_dict())
    (row,) = mine[(mine["chromosome"] == p["chrom"]) & (mine["position"] == p["pos"])].itertuples()
    return row.vaf if "vaf" in task.question else row.hgvs_p


# -- gradebook --------------------------------------------------------------------------------


def _gradebook_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    subs = task.context
    assert len({(s["user_id"], s["assignment_id"]) for s in subs}) == len(subs)
    mine = [s for s in subs if s["assignment"]["name"] == p.get("assignment")]
    theirs = [s for s in subs if s["user"]["name"] == p.get("student")]
    if kind == "count":
        if "assignment" in p:
            return sum(s["late"] for s in mine)
        return sum(s["missing"] for s in theirs)
    if kind == "mean":
        if "assignment" in p:
            return _mean([s["score"] for s in mine if s["score"] is not None], 2)
        return _mean(
            [100 * s["score"] / s["assignment"]["points_possible"] for s in theirs if s["score"] is not None],
            1,
        )
    if kind == "top":
        if p["by"] == "student":
            points: Counter = Counter()
            for s in subs:
                points[s["user"]["name"]] += s["score"] or 0.0
            return _leader(dict(points))
        return _leader(Counter(s["assignment"]["name"] for s in subs if s["late"]))
    (s,) = [s for s in mine if s["user"]["name"] == p["student"]]
    return round(s["seconds_late"] / 3600, 1) if "hours" in task.question else s["score"]


def _grade(text: str) -> float | None:
    return None if text == "-" else float(text)


def _gradebook_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    rows = list(csv.DictReader(io.StringIO(task.context)))
    assert all(len(r) == len(rows[0]) for r in rows)
    column = f"{p['item']} (Real)" if "item" in p else None
    mine = [r for r in rows if r["Department"] == p.get("class")]
    if kind == "count":
        if "class" in p:
            return sum(r[column] == "-" for r in mine)
        return sum(r[column] != "-" and float(r[column]) >= p["at_least"] for r in rows)
    if kind == "mean":
        if "item" in p:
            return _mean([_grade(r[column]) for r in mine if r[column] != "-"], 2)
        return _mean([float(r["Course total (Real)"]) for r in mine], 2)
    if kind == "top":
        if "item" in p:
            means = {}
            for group in {r["Department"] for r in rows}:
                grades = [float(r[column]) for r in rows if r["Department"] == group and r[column] != "-"]
                if grades:
                    means[group] = _mean(grades, 2)
            return _leader(means)
        quizzes = [c for c in rows[0] if c.startswith("Quiz:")]
        return _leader(
            {f"{r['First name']} {r['Last name']}": sum(_grade(r[c]) or 0.0 for c in quizzes) for r in rows}
        )
    if "email" in p:
        (r,) = [r for r in rows if r["Email address"] == p["email"]]
        return float(r[column])
    (r,) = [r for r in mine if (r["First name"], r["Last name"]) == (p["first"], p["last"])]
    return float(r["Course total (Real)"])


# -- manifest ---------------------------------------------------------------------------------

_LB = 0.45359237


def _boxes(manifest: dict) -> list[dict]:
    out = []
    for bill in manifest["bills_of_lading"]:
        for c in bill["containers"]:
            weight = c["gross_weight"]
            kg = weight["value"] * _LB if weight["unit"] == "LBR" else weight["value"]
            setting = (c["reefer"] or {}).get("temperature_setting")
            celsius = None
            if setting:
                v = setting["value"]
                celsius = round((v - 32) * 5 / 9, 1) if setting["unit"] == "FAH" else v
            out.append(
                {
                    "number": c["container_number"],
                    "bl": bill["bl_number"],
                    "port": bill["port_of_discharge"]["unlocode"],
                    "shipper": bill["shipper"]["name"],
                    "consignee": bill["consignee"]["name"],
                    "kg": kg,
                    "packages": c["packages"]["count"],
                    "celsius": celsius,
                    "imo": {d["imo_class"] for d in c["dangerous_goods"]},
                }
            )
    return out


def _manifest_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    boxes = _boxes(task.context)
    if kind == "count":
        if "port" in p:
            return sum(b["port"] == p["port"] for b in boxes)
        return sum(p["imo_class"] in b["imo"] for b in boxes)
    if kind == "total":
        if "port" in p:
            return round(sum(b["kg"] for b in boxes if b["port"] == p["port"]) / 1000, 2)
        return sum(b["packages"] for b in boxes if b["shipper"] == p["shipper"])
    if kind == "top":
        if p["by"] == "consignee":
            return _leader(Counter(b["consignee"] for b in boxes))
        weights: Counter = Counter()
        for b in boxes:
            weights[b["port"]] += b["kg"]
        return _leader(dict(weights))
    (b,) = [b for b in boxes if b["number"] == p["container"]]
    return b["celsius"] if "temperature" in task.question else b["bl"]


def _discharge_lists(text: str) -> list[dict]:
    """Every container row as a dict of its columns, cut where the header's names start, with the
    vessel whose list it is on."""
    rows, vessel, starts = [], None, []
    for line in text.splitlines():
        if line.startswith("VESSEL: "):
            vessel = re.match(r"VESSEL: (.+?)\s+VOYAGE:", line).group(1)
        elif line.startswith("CONTAINER "):
            starts = [(m.start(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", line)]
        elif re.match(r"[A-Z]{4}\d{7} ", line):
            cells = {"vessel": vessel}
            for k, (at, name) in enumerate(starts):
                end = starts[k + 1][0] if k + 1 < len(starts) else len(line)
                cells[name] = line[at:end].strip()
            rows.append(cells)
    return rows


def _teu(iso: str) -> int:
    return 1 if iso.startswith("2") else 2


def _manifest_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    rows = _discharge_lists(task.context)
    for r in rows:
        r["kg"] = int(r["GROSS KG"].replace(",", ""))
    on = [r for r in rows if r["vessel"] == p.get("vessel")]
    if kind == "count":
        if "vessel" in p:
            return sum(r["TEMP"] != "" for r in on)
        return sum(r["ST"] == "E" and r["OPR"] == p["operator"] for r in rows)
    if kind == "total":
        if "pol" in p:
            return round(sum(r["kg"] for r in rows if r["ST"] == "F" and r["POL"] == p["pol"]) / 1000, 2)
        return sum(_teu(r["ISO"]) for r in on if r["OPR"] == p["operator"])
    if kind == "top":
        totals: Counter = Counter()
        for r in on if "vessel" in p else rows:
            totals[r["OPR"] if "vessel" in p else r["POL"]] += _teu(r["ISO"]) if "vessel" in p else r["kg"]
        return _leader(dict(totals))
    (r,) = [r for r in rows if r["CONTAINER"] == p["container"]]
    return r["kg"] if "GROSS" in task.question else r["vessel"]


_ANSWER = {
    ("crashes", "dev"): _crashes_dev,
    ("crashes", "test"): _crashes_test,
    ("variants", "dev"): _variants_dev,
    ("variants", "test"): _variants_test,
    ("gradebook", "dev"): _gradebook_dev,
    ("gradebook", "test"): _gradebook_test,
    ("manifest", "dev"): _manifest_dev,
    ("manifest", "test"): _manifest_test,
}


@pytest.mark.parametrize("family", TENTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_answers_are_read_from_the_context(family: str, split: str) -> None:
    tasks = _tasks(family, split) + _tasks(family, split, 8, SIZE // 4) + _tasks(family, split, 4, SIZE * 4)
    for task in tasks:
        _check(task, _ANSWER[family, split](task))


def _check_digit(number: str) -> int:
    values = [v for v in range(10, 39) if v % 11]
    value = {letter: values[k] for k, letter in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZ")}
    return sum((value[c] if c.isalpha() else int(c)) * 2**i for i, c in enumerate(number[:10])) % 11 % 10


def test_the_traps_are_there() -> None:
    logs = [r for t in _tasks("crashes", "dev", 4, SIZE * 4) for r in _crash_logs(t.context)]
    assert {"4.2.1", "4.2.10"} <= {r["version"] for r in logs}
    functions = {r["function"] for r in logs}
    assert {"ReaderViewController.loadChapter(_:)", "ReaderViewController.loadChapters(_:)"} <= functions
    text = "".join(v for t in _tasks("crashes", "dev")[:4] for v in t.context.values())
    assert re.search(r"^Triggered by Thread:  [1-9]", text, re.M)  # not always the first thread
    assert re.search(r" [-+]0[4-7]00$", text, re.M) and re.search(r" \+0[5-9]30$|\+1000$", text, re.M)
    crashed_days = {(r["utc_day"], r["file"][19:29]) for r in logs}
    assert any(day != local for day, local in crashed_days)  # another day in UTC than on the device
    events = [e for t in _tasks("crashes", "test")[:4] for e in t.context]
    assert {True, False} == {e["is_fatal"] for e in events}
    assert {"samsung", "Google"} <= {e["device"]["manufacturer"] for e in events}
    assert any(len(e["exceptions"]) > 1 for e in events)
    assert any(
        not f["blamed"] and f["owner"] == "DEVELOPER"
        for e in events
        for x in e["exceptions"]
        for f in x["frames"]
    )

    _, sites = _vcf(_tasks("variants", "dev")[0].context)
    calls = {gt for s in sites for gt in s["gt"].values()}
    assert {"./.", "0|1", "0/1", "1/1"} <= calls
    assert any(s["id"] == "." for s in sites) and {s["filter"] for s in sites} > {"PASS"}
    text = "".join(t.context for t in _tasks("variants", "dev")[:4])
    assert re.search(r"\t[ACGT]+\t[ACGT]+,[ACGT]+\t", text)  # two alternate alleles at a site
    assert "|TTN|" in text and "|TTN-AS1|" in text
    df = pd.concat([t.context for t in _tasks("variants", "test")[:4]])
    assert {"BRCA1", "BRCA2"} <= set(df["gene"]) and df["cadd_phred"].isna().any()

    subs = [s for t in _tasks("gradebook", "dev", 4, SIZE * 4) for s in t.context]
    assert any(s["excused"] and s["score"] is None for s in subs)
    assert any(s["missing"] and s["score"] == 0 for s in subs) and any(
        s["missing"] and s["score"] is None for s in subs
    )
    assert any(s["points_deducted"] for s in subs) and any(s["workflow_state"] == "submitted" for s in subs)
    dues = {s["assignment"]["due_at"][11:] for s in subs}
    assert {"04:59:00Z", "05:59:00Z"} <= dues  # the clocks changed
    names = {s["assignment"]["name"] for s in subs}
    assert {"Problem Set 1", "Problem Set 10"} <= names
    text = _tasks("gradebook", "test")[0].context
    assert '"St Markham\'s Academy, Leeds"' in text and ",-," in text
    header = next(csv.reader(io.StringIO(text)))
    assert {"Quiz: Bonding (Real)", "Quiz: Bonding (retake) (Real)"} <= set(header)

    boxes = [b for t in _tasks("manifest", "dev")[:4] for b in _boxes(t.context)]
    units = {
        c["gross_weight"]["unit"]
        for t in _tasks("manifest", "dev")[:4]
        for bill in t.context["bills_of_lading"]
        for c in bill["containers"]
    }
    assert units == {"KGM", "LBR"} and any(b["imo"] for b in boxes)
    assert any(b["celsius"] is not None for b in boxes)
    assert all(_check_digit(b["number"]) == int(b["number"][-1]) for b in boxes)
    rows = [r for t in _tasks("manifest", "test")[:4] for r in _discharge_lists(t.context)]
    assert all(_check_digit(r["CONTAINER"]) == int(r["CONTAINER"][-1]) for r in rows)
    assert any(" " in r["SEAL NO"] for r in rows) and {r["ST"] for r in rows} == {"E", "F"}
    assert {"HANSA CONCORD", "HANSA CONCORDIA"} <= {r["vessel"] for r in rows}
    text = _tasks("manifest", "test")[0].context
    assert len(re.findall(r"^CONTAINER ", text, re.M)) > len(re.findall(r"^TOTAL ", text, re.M))  # paged
