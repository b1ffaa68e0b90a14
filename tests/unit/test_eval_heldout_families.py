"""The held-out task families, checked against the context itself: notebook, statement, mlruns
and references (the second set), and calendars, testreport, transit and places (the third); what
every held-out family must be, for the fourth and fifth sets too.

Every expected answer is found again here from the context as a user would read it (the notebook
walked as JSON with its Zeppelin dates parsed, the bank's CSV read with pandas and the card's OFX
with regular expressions, the runs walked as dicts, the BibTeX parsed with regular expressions and
the CSL-JSON walked as dicts; the third set's files parsed with csv, json, re and ElementTree), not
from the generator's bookkeeping; ``meta["params"]`` only says where to look.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from datetime import date, datetime

import pandas as pd
import pytest
from heldout_tasks import SIZE
from heldout_tasks import tasks as _tasks

from rlm_kernel.eval.scoring import score
from rlm_kernel.eval.tasks import TaskRef, as_text, family_names, generate

SECOND = ("notebook", "statement", "mlruns", "references")
THIRD = ("calendars", "testreport", "transit", "places")
FOURTH = ("mailbox", "gitlog", "sqldump", "lockfile")  # their answers: test_eval_heldout_families_d.py
FIFTH = ("invoices", "fixtures", "subtitles", "tracker")  # their answers: test_eval_heldout_families_e.py
SIXTH = ("elections", "recipes", "genealogy", "labs")  # their answers: test_eval_heldout_families_f.py
SEVENTH = ("chess", "contacts", "ledger", "weather")  # their answers: test_eval_heldout_families_g.py
EIGHTH = ("birding", "listening", "metrics", "parcels")  # their answers: test_eval_heldout_families_h.py
NINTH = ("telescope", "cluster", "survey", "dns")  # their answers: test_eval_heldout_families_i.py
TENTH = ("crashes", "variants", "gradebook", "manifest")  # their answers: test_eval_heldout_families_j.py
ELEVENTH = ("payroll", "admissions", "library", "wiki")  # their answers: test_eval_heldout_families_k.py
TWELFTH = ("fitness", "cloudcost", "trades", "rides")  # their answers: test_eval_heldout_families_l.py
THIRTEENTH = ("inspections", "reviews", "flights", "adverse")  # answers: test_eval_heldout_families_m.py
HELD_OUT = SECOND + THIRD + FOURTH + FIFTH + SIXTH + SEVENTH + EIGHTH + NINTH + TENTH + ELEVENTH + TWELFTH
HELD_OUT += THIRTEENTH
# a pandas DataFrame: pandas builds it, as the workbook's sheets
FRAMES = {
    ("listening", "test"),
    ("telescope", "test"),
    ("variants", "test"),
    ("admissions", "test"),
    ("rides", "test"),
    ("inspections", "test"),
}


def _wrong(answer: object) -> str:
    if isinstance(answer, (int, float)):
        return str(round(answer * 1.5 + 7, 2))
    return "something else entirely"


def test_the_families_are_registered_and_listed() -> None:
    assert set(HELD_OUT) <= set(family_names())
    out = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.eval", "list"], capture_output=True, text=True, check=True
    ).stdout
    for family in HELD_OUT:
        assert re.search(rf"^{family}\s+\S", out, re.M), family


def test_the_families_need_no_pandas() -> None:
    code = (
        "import sys; sys.modules['pandas'] = None; sys.modules['numpy'] = None\n"
        "from rlm_kernel.eval.tasks import TaskRef, generate\n"
        f"for name in {HELD_OUT!r}:\n"
        "    for split in ('dev', 'test'):\n"
        f"        if (name, split) not in {FRAMES!r}:\n"
        "            generate(TaskRef(name, split, 2048, 0))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("family", HELD_OUT)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_a_ref_always_builds_the_same_task_and_its_answer_scores(family: str, split: str) -> None:
    for index in range(4):
        ref = TaskRef(family, split, SIZE, index)
        a, b = generate(ref), generate(ref)
        assert as_text(a.context) == as_text(b.context)
        assert (a.question, a.answer, a.scorer, a.meta) == (b.question, b.answer, b.scorer, b.meta)
        assert a.split == split and a.family == family and a.id == ref.id and a.ref == ref
        assert score(a.scorer, str(a.answer), a.answer) == 1.0
        assert score(a.scorer, _wrong(a.answer), a.answer) == 0.0
        if isinstance(a.answer, str):
            assert a.answer.lower() not in a.question.lower()
            assert score(a.scorer, f"`{a.answer.upper()}`", a.answer) == 1.0  # case and quotes aside
        else:
            assert a.answer not in (0, 0.0)
    other = generate(TaskRef(family, split, SIZE, 40))
    assert as_text(other.context) != as_text(generate(TaskRef(family, split, SIZE, 0)).context)


@pytest.mark.parametrize("family", HELD_OUT)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_tasks_serialise_as_the_harness_writes_them(family: str, split: str) -> None:
    for task in _tasks(family, split)[:4]:
        row = {"task_id": task.id, "expected": task.answer, "meta": task.meta, "length": task.length}
        assert json.loads(json.dumps(row)) == row
        text = as_text(task.context)
        assert isinstance(text, str) and task.context_chars == len(text)
        if isinstance(task.context, pd.DataFrame):  # a frame is CSV as the plain model reads it
            assert pd.read_csv(io.StringIO(text)).shape == task.context.shape
        elif not isinstance(task.context, str):
            json.loads(text)  # a structured context is JSON as the plain model reads it


def _stems(family: str, split: str) -> set[str]:
    out = set()
    for task in _tasks(family, split):
        q = task.question
        out.add(" ".join(re.sub(r"`[^`]*`|'[^']*'|\"[^\"]*\"|\d[\d.,]*", "#", q).split()[:4]))
    return out


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _fields(family: str, context: object) -> set[str]:
    """The names a context's data is kept under: nested keys (a run's, not the runs' names), or the
    first line's shape."""
    if isinstance(context, str):
        return {re.sub(r"[\w.:-]+", "w", context.splitlines()[0])[:12], context.split("\n", 1)[0][:8]}
    if family == "mlruns":
        return {k for run in context.values() for k in _keys(run)}
    return _keys(context)


_GENERIC = {"id", "name", "text", "data", "version"}  # what both notebook formats call these


@pytest.mark.parametrize("family", HELD_OUT)
def test_dev_and_test_differ_in_wording_fields_and_data(family: str) -> None:
    assert not (_stems(family, "dev") & _stems(family, "test"))
    for i in range(2):
        dev, test = _tasks(family, "dev")[i], _tasks(family, "test")[i]
        shared = _fields(family, dev.context) & _fields(family, test.context)
        assert shared <= _GENERIC, shared
        assert type(dev.context) is not type(test.context) or as_text(dev.context) != as_text(test.context)


@pytest.mark.parametrize("family", HELD_OUT)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_sizes_follow_the_length(family: str, split: str) -> None:
    for task in _tasks(family, split):  # near the length asked for, at four characters a token
        assert 0.5 * SIZE * 4 <= task.context_chars <= 1.5 * SIZE * 4, task.context_chars
    big = generate(TaskRef(family, split, 8 * SIZE, 0))
    assert 0.5 * 8 * SIZE * 4 <= big.context_chars <= 1.5 * 8 * SIZE * 4, big.context_chars


@pytest.mark.parametrize("family", HELD_OUT)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_every_kind_of_question_is_asked(family: str, split: str) -> None:
    module = __import__(f"rlm_kernel.eval.{family}", fromlist=["KINDS"])
    assert {t.meta["question_type"] for t in _tasks(family, split)} == set(module.KINDS)


def _check(task, want: object) -> None:
    if isinstance(want, float):
        assert task.answer == pytest.approx(want, abs=1e-9), task.question
    else:
        assert task.answer == want, task.question


def _last_number(text: str) -> int:
    return int(re.findall(r"\d+", text)[-1])


# -- notebook ---------------------------------------------------------------------------------


def _ipynb_cells(nb: dict) -> list[dict]:
    assert nb["nbformat"] == 4
    out = []
    for c in nb["cells"]:
        source = "".join(c["source"])
        if c["cell_type"] == "markdown":
            out.append({"md": True, "source": source, "id": c["id"]})
            continue
        outputs = c["outputs"]
        assert bool(outputs) <= (c["execution_count"] is not None)
        for o in outputs:
            if o["output_type"] == "execute_result":
                assert o["execution_count"] == c["execution_count"]
        out.append(
            {
                "md": False,
                "source": source,
                "id": c["id"],
                "order": c["execution_count"],
                "printed": "".join("".join(o["text"]) for o in outputs if o["output_type"] == "stream"),
                "errors": [o["ename"] for o in outputs if o["output_type"] == "error"],
            }
        )
    return out


def _zeppelin_cells(note: dict) -> list[dict]:
    out = []
    for p in note["paragraphs"]:
        interpreter, source = p["text"].split("\n", 1)
        msgs = p.get("results", {}).get("msg", [])
        cell = {"md": interpreter == "%md", "source": source, "id": p["id"]}
        if not cell["md"]:
            cell["order"] = (
                datetime.strptime(p["dateFinished"], "%b %d, %Y %I:%M:%S %p") if "dateFinished" in p else None
            )
            assert (p["status"] == "READY") == (cell["order"] is None)
            cell["printed"] = (
                "".join(m["data"] for m in msgs if m["type"] == "TEXT") if p["status"] == "FINISHED" else ""
            )
            cell["errors"] = []
            if p["status"] == "ERROR":
                last = [line for line in msgs[0]["data"].splitlines() if line.strip()][-1]
                cell["errors"] = [re.match(r"(?:\w+\.)*(\w+): ", last).group(1)]
        out.append(cell)
    return out


@pytest.mark.parametrize("split", ["dev", "test"])
def test_notebook_answers_are_read_from_the_cells(split: str) -> None:
    for task in _tasks("notebook", split):
        kind, p = task.meta["question_type"], task.meta["params"]
        cells = _ipynb_cells(task.context) if split == "dev" else _zeppelin_cells(task.context)
        code = [c for c in cells if not c["md"]]
        assert len({c["id"] for c in cells}) == len(cells)
        if kind == "defines":
            fn = p["function"]
            assert f"`{fn}`" in task.question or f" {fn} " in task.question
            (cell,) = [c for c in code if re.search(rf"^def {re.escape(fn)}\(", c["source"], re.M)]
            assert any(
                re.search(rf"^def {re.escape(fn)}\w+\(", c["source"], re.M) for c in code
            )  # look-alike
            want = cell["order"] if split == "dev" else cell["id"]
        elif kind == "errors":
            want = sum(c["errors"] == [p["ename"]] for c in code)
        elif kind == "section":
            heads = [i for i, c in enumerate(cells) if c["md"] and re.match(r"#+ (.*)", c["source"])]
            (i,) = [i for i in heads if re.match(r"#+ (.*)", cells[i]["source"]).group(1) == p["heading"]]
            first = next(c for c in cells[i + 1 :] if not c["md"])
            want = _last_number(first["printed"])
        else:
            ran = sorted((c for c in code if c["order"] is not None), key=lambda c: c["order"])
            assert ran[-1]["order"] > ran[-2]["order"]
            assert ran[-1] is not code[-1]  # the last cell run is not the notebook's last cell
            want = _last_number(ran[-1]["printed"])
        _check(task, want)


def test_notebook_distractors_are_there() -> None:
    task = _tasks("notebook", "dev")[1]
    cells = _ipynb_cells(task.context)
    failed = {c["errors"][0] for c in cells if not c["md"] and c["errors"]}
    assert len(failed) >= 3  # other exceptions than the one asked about
    assert any(re.search(r"^except \w+:", c["source"], re.M) and not c["errors"] for c in cells)
    counts = [c["order"] for c in cells if not c["md"] and c["order"] is not None]
    assert counts != sorted(counts)  # run out of order
    note = _tasks("notebook", "test")[1].context
    assert any(p["status"] == "READY" for p in note["paragraphs"])


# -- statement --------------------------------------------------------------------------------


def _bank_csv(text: str) -> pd.DataFrame:
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith('"Booking date"'))
    df = pd.read_csv(
        io.StringIO(text),
        sep=";",
        skiprows=header,
        decimal=",",
        thousands=".",
        dtype={"Reference": str, "Booking date": str, "Value date": str},
    )
    df["booked"] = pd.to_datetime(df["Booking date"], format="%d.%m.%Y")
    df["valued"] = pd.to_datetime(df["Value date"], format="%d.%m.%Y")
    closing = float(
        re.search(r'"Closing balance";"([-\d.,]+)"', text).group(1).replace(".", "").replace(",", ".")
    )
    assert df["Balance"].iloc[0] == pytest.approx(closing)
    chrono = df.iloc[::-1].reset_index(drop=True)  # newest first in the file
    assert (chrono["booked"].diff().dropna() >= pd.Timedelta(0)).all()
    steps = (chrono["Balance"].diff() - chrono["Amount"]).iloc[1:]
    assert steps.abs().max() < 0.005  # each balance is the one before plus the amount
    return df


def _ofx(text: str) -> pd.DataFrame:
    rows = []
    for block in re.findall(r"<STMTTRN>\n(.*?)</STMTTRN>", text, re.S):
        tags = dict(re.findall(r"^<(\w+)>(.*)$", block, re.M))
        rows.append(
            {
                "type": tags["TRNTYPE"],
                "posted": tags["DTPOSTED"][:8],
                "made": tags["DTUSER"][:8],
                "amount": float(tags["TRNAMT"]),
                "fitid": tags["FITID"],
                "name": tags["NAME"],
            }
        )
    df = pd.DataFrame(rows)
    assert df["fitid"].is_unique and list(df["posted"]) == sorted(df["posted"])
    return df


def _statement_answer(task, df: pd.DataFrame) -> object:
    kind, p, dev = task.meta["question_type"], task.meta["params"], task.split == "dev"
    party, month = ("Counterparty", "Amount") if dev else ("name", "amount")
    out = df[month] < 0 if dev else df["type"] == "DEBIT"
    in_month = (
        df["booked"].dt.strftime("%Y-%m") == p.get("month")
        if dev
        else df["posted"].str[:6] == str(p.get("month", "")).replace("-", "")
    )
    if kind == "total":
        return round(-df.loc[out & in_month & (df[party] == p["party"]), month].sum(), 2)
    if kind == "count":
        return int(((df[party] == p["party"]) & (True if dev else out)).sum())
    if kind == "largest":
        card = df["Booking text"] == "Card payment" if dev else out
        rows = df[card & in_month & (df[month] < 0)].sort_values(month)
        assert rows[month].iloc[0] < rows[month].iloc[1]
        return rows[party].iloc[0]
    if dev:
        (balance,) = df.loc[df["Reference"] == p["ref"], "Balance"]
        return round(float(balance), 2)
    (amount,) = df.loc[df["fitid"] == p["fitid"], "amount"]
    assert p["fitid"][:-1] in " ".join(df["fitid"].drop(df.index[df["fitid"] == p["fitid"]]))  # neighbours
    return round(abs(float(amount)), 2)


@pytest.mark.parametrize("split", ["dev", "test"])
def test_statement_answers_are_read_from_the_file(split: str) -> None:
    for task in _tasks("statement", split):
        df = _bank_csv(task.context) if split == "dev" else _ofx(task.context)
        assert len(df) == task.meta["transactions"]
        _check(task, _statement_answer(task, df))


def test_statement_dates_and_amounts_are_the_traps_they_should_be() -> None:
    df = _bank_csv(_tasks("statement", "dev")[0].context)
    assert (df["booked"].dt.month != df["valued"].dt.month).any()  # a booking's two dates in two months
    assert (df["Amount"].abs() >= 1000).any()  # amounts written with a thousands point
    ofx = _ofx(_tasks("statement", "test")[0].context)
    assert (ofx["posted"] != ofx["made"]).any() and (ofx["type"] == "CREDIT").any()


# -- mlruns -----------------------------------------------------------------------------------


def _mlruns_answer(task) -> object:
    runs, kind, p = task.context, task.meta["question_type"], task.meta["params"]
    if task.split == "dev":
        curves = {name: r["metrics"] for name, r in runs.items()}
        score_of, loss_of = (
            {n: m["val_acc"] for n, m in curves.items()},
            {n: m["val_loss"] for n, m in curves.items()},
        )
        steps_of = {n: list(range(1, len(m["val_loss"]) + 1)) for n, m in curves.items()}
    else:
        names = [r["name"] for r in runs.values()]
        assert len(set(names)) == len(names)
        evals = {r["name"]: [h for h in r["history"] if "eval/f1" in h] for r in runs.values()}
        score_of = {n: [h["eval/f1"] for h in rows] for n, rows in evals.items()}
        loss_of = {n: [h["eval/loss"] for h in rows] for n, rows in evals.items()}
        steps_of = {n: [h["_step"] for h in rows] for n, rows in evals.items()}
        for r in runs.values():
            assert r["summary"]["eval/f1"] == score_of[r["name"]][-1]
    if kind == "best":
        peaks = sorted(((max(v), n) for n, v in score_of.items()), reverse=True)
        assert peaks[0][0] > peaks[1][0]
        return peaks[0][1]
    if kind == "epoch":
        losses = loss_of[p["run"]]
        assert losses.count(min(losses)) == 1
        return steps_of[p["run"]][losses.index(min(losses))]
    if kind == "final":
        return score_of[p["run"]][-1]
    if task.split == "dev":
        return sum(
            r["status"] == "FINISHED"
            and r["params"]["optimizer"] == p["optimizer"]
            and r["params"]["batch_size"] == p["batch_size"]
            for r in runs.values()
        )
    return sum(
        r["state"] == "finished"
        and r["config"]["model_name"] == p["model_name"]
        and r["config"]["learning_rate"] == p["learning_rate"]
        for r in runs.values()
    )


@pytest.mark.parametrize("split", ["dev", "test"])
def test_mlruns_answers_are_found_in_the_curves(split: str) -> None:
    for task in _tasks("mlruns", split):
        _check(task, _mlruns_answer(task))


def test_mlruns_stopped_runs_are_shorter_than_their_settings() -> None:
    runs = _tasks("mlruns", "dev")[0].context
    stopped = [r for r in runs.values() if r["status"] != "FINISHED"]
    assert stopped and all(len(r["metrics"]["val_acc"]) < int(r["params"]["epochs"]) for r in stopped)
    assert all(
        len(r["metrics"]["val_acc"]) == int(r["params"]["epochs"]) for r in runs.values() if r not in stopped
    )
    names = list(runs)
    assert any(a != b and a.rsplit("-", 1)[0] == b.rsplit("-", 1)[0] for a in names for b in names)


# -- references -------------------------------------------------------------------------------

_ENTRY = re.compile(r"^@(\w+)\{([^,\n]+),\n(.*?)\n\}$", re.S | re.M)
_FIELD = re.compile(r"^\s*(\w+) = (?:\{(.*)\}|\"(.*)\"|(\d+)),?$")


def _bibtex(text: str) -> list[dict]:
    entries = []
    for kind, key, body in _ENTRY.findall(text):
        fields = {"type": kind, "key": key}
        for line in body.splitlines():
            m = _FIELD.match(line)
            assert m, line
            fields[m.group(1)] = next(g for g in m.groups()[1:] if g is not None)
        fields["title"] = fields["title"].replace("{", "").replace("}", "")
        people = []
        for name in fields["author"].split(" and "):
            family, _, given = name.partition(", ")
            people.append((given, family) if given else tuple(name.rsplit(" ", 1)))
        fields["people"], fields["year"] = people, int(fields["year"])
        entries.append(fields)
    assert len(entries) == text.count("\n@")
    return entries


def _csl(items: list[dict]) -> list[dict]:
    return [
        {
            "type": {"article-journal": "article"}.get(item["type"], item["type"]),
            "key": item["DOI"],
            "title": item["title"],
            "journal": item.get("container-title"),
            "pages": item.get("page", "").replace("-", "--"),
            "people": [(a["given"], a["family"]) for a in item["author"]],
            "year": item["issued"]["date-parts"][0][0],
        }
        for item in items
    ]


@pytest.mark.parametrize("split", ["dev", "test"])
def test_references_answers_are_read_from_the_entries(split: str) -> None:
    for task in _tasks("references", split):
        entries = _bibtex(task.context) if split == "dev" else _csl(task.context)
        kind, p = task.meta["question_type"], task.meta["params"]
        person = (p.get("given"), p.get("family"))
        if kind == "author_count":
            want = sum(person in e["people"] for e in entries)
            assert any(
                q != person and (q[0] == person[0] or q[1] == person[1]) for e in entries for q in e["people"]
            )
        elif kind == "pages":
            (e,) = [e for e in entries if e["title"] == p["title"]]
            assert e["type"] == "article"
            first, last = map(int, e["pages"].split("--"))
            want = last - first + 1
        elif kind == "venue":
            top = Counter(e["journal"] for e in entries if e["type"] == "article" and e["year"] >= p["since"])
            (want, a), (_, b) = top.most_common(2)
            assert a > b
        else:
            mine = sorted((e for e in entries if person in e["people"]), key=lambda e: e["year"])
            assert len(mine) == 1 or mine[0]["year"] < mine[1]["year"]
            want = mine[0]["key"]
        _check(task, want)


def test_references_write_names_both_ways_and_editors_apart() -> None:
    text = _tasks("references", "dev")[0].context
    assert re.search(r"author = .*\b[A-Z]\w+, [A-Z]\w+", text) and re.search(
        r"and [A-Z]\w+ [A-Z]\w+ and", text
    )
    assert "{" in "".join(re.findall(r"title = \{(.*)\}", text))  # acronyms braced in some titles
    items = _tasks("references", "test")[0].context
    assert any("editor" in item for item in items)


# -- the third set: every answer read again, at several lengths ---------------------------------


def _minutes(start: datetime, end: datetime) -> int:
    return int((end - start).total_seconds() // 60)


def _ics_events(text: str) -> list[dict]:
    assert all(len(line.encode()) <= 75 for line in text.split("\r\n"))  # folded as the RFC says
    events, current = [], None
    for line in text.replace("\r\n ", "").split("\r\n"):
        if line == "BEGIN:VEVENT":
            current = {"invitees": [], "all_day": False, "cancelled": False, "room": None}
        elif line == "END:VEVENT":
            events.append(current)
            current = None
        elif current is not None:
            head, _, value = line.partition(":")
            name, *rest = head.split(";")
            params = dict(p.split("=", 1) for p in rest)
            if name == "ATTENDEE":
                state = {"NEEDS-ACTION": "needsAction"}.get(params["PARTSTAT"], params["PARTSTAT"].lower())
                current["invitees"].append((params["CN"], value.removeprefix("mailto:"), state))
            elif name in ("DTSTART", "DTEND"):
                current["all_day"] = params.get("VALUE") == "DATE"
                fmt = "%Y%m%d" if current["all_day"] else "%Y%m%dT%H%M%S"
                assert current["all_day"] or params["TZID"] == "Europe/Berlin"
                current["start" if name == "DTSTART" else "end"] = datetime.strptime(value, fmt)
            elif name in ("UID", "SUMMARY", "LOCATION", "STATUS"):
                key = {"UID": "uid", "SUMMARY": "title", "LOCATION": "room", "STATUS": "status"}[name]
                current[key] = value
                current["cancelled"] = current.get("status") == "CANCELLED"
    assert len(events) == text.count("BEGIN:VEVENT")
    return events


def _google_events(items: list[dict]) -> list[dict]:
    out = []
    for item in items:
        start, end = item["start"], item["end"]
        out.append(
            {
                "uid": item["id"],
                "title": item["summary"],
                "room": item.get("location"),
                "cancelled": item["status"] == "cancelled",
                "all_day": "date" in start,
                "start": datetime.fromisoformat(start.get("dateTime") or start["date"]),
                "end": datetime.fromisoformat(end.get("dateTime") or end["date"]),
                "invitees": [
                    (a["displayName"], a["email"], a["responseStatus"]) for a in item.get("attendees", [])
                ],
            }
        )
    return out


def _calendars_answer(task) -> object:
    dev, kind, p = task.split == "dev", task.meta["question_type"], task.meta["params"]
    events = _ics_events(task.context) if dev else _google_events(task.context)
    meetings = [e for e in events if not e.get("all_day") and not e["cancelled"]]
    if kind == "hours":
        first, last = date.fromisoformat(p["from"]), date.fromisoformat(p["to"])
        minutes = sum(
            _minutes(e["start"], e["end"])
            for e in meetings
            if first <= e["start"].date() <= last
            and any((name if dev else email) == (p["person"] if dev else p["email"]) and state == "accepted"
                    for name, email, state in e["invitees"])
        )  # fmt: skip
        return minutes / 60 if dev else minutes
    if kind == "count":
        if dev:
            return sum(e["title"] == p["title"] and f"{e['start']:%Y-%m}" == p["month"] for e in meetings)
        first, last = date.fromisoformat(p["from"]), date.fromisoformat(p["to"])
        return sum(e["title"] == p["title"] and first <= e["start"].date() <= last for e in meetings)
    if kind == "busiest":
        booked: Counter = Counter()
        for e in meetings:
            if f"{e['start']:%Y-%m}" == p["month"]:
                booked[e["room"]] += 1 if dev else _minutes(e["start"], e["end"])
        (room, a), (_, b) = booked.most_common(2)
        assert a > b
        return room
    (e,) = [e for e in events if e["uid"] == (p["uid"] if dev else p["id"])]
    return f"{e['end']:%H:%M}" if dev else sum(state == "accepted" for *_, state in e["invitees"])


def _junit_cases(text: str) -> list[dict]:
    root = ET.fromstring(text)
    cases = []
    for suite in root.iter("testsuite"):
        mine = list(suite.iter("testcase"))
        assert int(suite.get("tests")) == len(mine)
        assert float(suite.get("time")) >= sum(float(c.get("time")) for c in mine)  # its set-up too
        for case in mine:
            ended = [el for el in case if el.tag in ("failure", "error", "skipped")]
            cases.append(
                {
                    "group": case.get("classname"),
                    "name": case.get("name"),
                    "time": float(case.get("time")),
                    "outcome": ended[0].tag if ended else "passed",
                    "type": ended[0].get("type") if ended else None,
                }
            )
    return cases


def _pytest_cases(report: dict) -> list[dict]:
    tests = report["tests"]
    assert report["summary"]["total"] == len(tests)
    return [
        {
            "group": t["nodeid"].split("::")[0],
            "name": t["nodeid"],
            "time": t["call"]["duration"] if "call" in t else None,
            "outcome": {"failed": "failure"}.get(t["outcome"], t["outcome"]),
            "line": t.get("call", {}).get("crash", {}).get("lineno"),
        }
        for t in tests
    ]


def _testreport_answer(task) -> object:
    dev, kind, p = task.split == "dev", task.meta["question_type"], task.meta["params"]
    cases = _junit_cases(task.context) if dev else _pytest_cases(task.context)
    group = p.get("class") or p.get("module")
    mine = [c for c in cases if c["group"] == group]
    if kind == "failed":
        return sum(c["outcome"] == "failure" for c in mine)
    if kind == "slowest":
        timed = sorted((c for c in mine if c["time"] is not None), key=lambda c: -c["time"])
        assert timed[0]["time"] > timed[1]["time"]
        return timed[0]["name"]
    if kind == "time":
        total = sum(c["time"] for c in mine if c["time"] is not None)
        return round(total, 3 if dev else 6)
    if dev:
        (case,) = [c for c in mine if c["name"] == p["name"]]
        return case["type"]
    (case,) = [c for c in cases if c["name"] == p["nodeid"]]
    assert case["outcome"] == "failure"
    return case["line"]


def _gtfs_trips(files: dict[str, str]) -> tuple[dict, dict, dict]:
    """stop_id -> name, route short name -> route_id, trip_id -> its row with its calls in order."""
    table = {name: list(csv.DictReader(io.StringIO(text))) for name, text in files.items()}
    stops = {row["stop_id"]: row["stop_name"] for row in table["stops.txt"]}
    routes = {row["route_short_name"]: row["route_id"] for row in table["routes.txt"]}
    trips = {row["trip_id"]: {**row, "calls": []} for row in table["trips.txt"]}
    for row in table["stop_times.txt"]:
        trips[row["trip_id"]]["calls"].append(row)
    for trip in trips.values():
        trip["calls"].sort(key=lambda r: int(r["stop_sequence"]))
        assert [r["stop_id"] for r in trip["calls"]][-1] in stops
    return stops, routes, trips


def _hhmm(text: str) -> int:
    h, m = text.split(":")[:2]
    return int(h) * 60 + int(m)


_RUNS_ON = {"Mo-Fr": ("Mo", "Tu", "We", "Th", "Fr"), "Sa": ("Sa",), "Su": ("Su",)}


def _transit_calls(task) -> list[dict]:
    """Every trip as ``{"line", "days", "direction", "calls": [(stop name, arrival, departure)]}``,
    the times in minutes (None where there is none)."""
    if task.split == "dev":
        stops, routes, trips = _gtfs_trips(task.context)
        line_of = {v: k for k, v in routes.items()}
        return [
            {
                "id": trip_id,
                "line": line_of[t["route_id"]],
                "days": (t["service_id"],),
                "direction": int(t["direction_id"]),
                "calls": [(stops[r["stop_id"]], _hhmm(r["arrival_time"]), _hhmm(r["departure_time"])) for r in t["calls"]],
            }
            for trip_id, t in trips.items()
        ]  # fmt: skip
    stations = {code: s["name"] for code, s in task.context["stations"].items()}
    return [
        {
            "id": number,
            "line": s["line"],
            "days": _RUNS_ON.get(s["operatingDays"], ("Mo", "Tu", "We", "Th", "Fr", "Sa", "Su")),
            "direction": None,
            "calls": [
                (stations[c["station"]], c["arr"] and _hhmm(c["arr"]), c["dep"] and _hhmm(c["dep"]))
                for c in s["calls"]
            ],
        }
        for number, s in task.context["services"].items()
    ]


def _transit_answer(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    trips = _transit_calls(task)
    if kind == "duration":
        (trip,) = [t for t in trips if t["id"] == p.get("trip", p.get("train"))]
        return trip["calls"][-1][1] - trip["calls"][0][2]
    running = [t for t in trips if p["day"] in t["days"]]
    if kind == "calls":
        return sum(t["line"] == p["line"] and any(s == p["stop"] for s, *_ in t["calls"]) for t in running)
    if kind == "next":
        after = _hhmm(p["after"])
        found = min(
            dep
            for t in running
            if t["line"] == p["line"] and t["direction"] == p.get("direction")
            for s, _, dep in t["calls"][:-1]
            if s == p["stop"] and dep > after
        )
        return f"{found // 60:02d}:{found % 60:02d}" + (":00" if task.split == "dev" else "")
    start, end = _hhmm(p["from"]), _hhmm(p["to"])
    counts = Counter(s for t in running for s, _, dep in t["calls"][:-1] if start <= dep < end)
    (name, a), (_, b) = counts.most_common(2)
    assert a > b
    return name


def _km(lon1: float, lat1: float, lon2: float, lat2: float) -> float:
    dp, dl = math.radians(lat2 - lat1), math.radians(lon2 - lon1)
    h = (
        math.sin(dp / 2) ** 2
        + math.cos(math.radians(lat1)) * math.cos(math.radians(lat2)) * math.sin(dl / 2) ** 2
    )
    return 2 * 6371.0 * math.asin(math.sqrt(h))


def _places_points(task) -> list[dict]:
    if task.split == "dev":
        assert task.context["type"] == "FeatureCollection"
        return [
            {
                "name": f["properties"]["name"],
                "category": f["properties"]["amenity"],
                "group": f["properties"]["district"],
                "number": f["properties"]["capacity"],
                "date": date.fromisoformat(f["properties"]["opened"]),
                "lon": f["geometry"]["coordinates"][0],
                "lat": f["geometry"]["coordinates"][1],
            }
            for f in task.context["features"]
        ]
    ns = {"k": "http://www.opengis.net/kml/2.2"}
    out = []
    for folder in ET.fromstring(task.context).iterfind("k:Document/k:Folder", ns):
        for mark in folder.iterfind("k:Placemark", ns):
            data = {
                d.get("name"): d.findtext("k:value", namespaces=ns) for d in mark.iterfind(".//k:Data", ns)
            }
            lon, lat, _ = mark.findtext("k:Point/k:coordinates", namespaces=ns).split(",")
            out.append(
                {
                    "name": mark.findtext("k:name", namespaces=ns),
                    "category": folder.findtext("k:name", namespaces=ns),
                    "group": data["operator"],
                    "number": int(data["points"]),
                    "date": datetime.strptime(data["commissioned"], "%d/%m/%Y").date(),
                    "lon": float(lon),
                    "lat": float(lat),
                }
            )
    return out


def _places_answer(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    points = _places_points(task)
    assert len({q["name"] for q in points}) == len(points)
    mine = [q for q in points if q["category"] == p.get("category")]
    if kind == "inside":
        return sum(p["west"] < q["lon"] < p["east"] and p["south"] < q["lat"] < p["north"] for q in mine)
    if kind == "total":
        if task.split == "dev":
            return sum(q["number"] for q in mine if q["group"] == p["district"])
        return sum(q["number"] for q in points if q["group"] == p["operator"])
    if kind == "nearest":
        by_km = sorted(mine, key=lambda q: _km(p["lon"], p["lat"], q["lon"], q["lat"]))
        by_degrees = min(mine, key=lambda q: math.hypot(q["lon"] - p["lon"], q["lat"] - p["lat"]))
        assert by_km[0] is by_degrees
        return by_km[0]["name"]
    first, last = date.fromisoformat(p["from"]), date.fromisoformat(p["to"])
    return sum(first <= q["date"] <= last for q in mine)


_ANSWER = {
    "calendars": _calendars_answer,
    "testreport": _testreport_answer,
    "transit": _transit_answer,
    "places": _places_answer,
}


@pytest.mark.parametrize("family", THIRD)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_third_set_answers_are_read_from_the_context(family: str, split: str) -> None:
    tasks = _tasks(family, split) + _tasks(family, split, 8, SIZE // 4) + _tasks(family, split, 4, SIZE * 4)
    for task in tasks:
        _check(task, _ANSWER[family](task))


def test_third_set_traps_are_there() -> None:
    text = "".join(t.context for t in _tasks("calendars", "dev")[:4])
    assert (
        "\r\n " in text and "STATUS:CANCELLED" in text and "VALUE=DATE" in text
    )  # folded, cancelled, all day
    items = [i for t in _tasks("calendars", "test")[:4] for i in t.context]
    assert any(i["status"] == "cancelled" for i in items) and any("date" in i["start"] for i in items)
    cases = _junit_cases(_tasks("testreport", "dev")[0].context)
    assert {c["outcome"] for c in cases} == {"passed", "failure", "error", "skipped"}
    report = _tasks("testreport", "test")[0].context
    assert any("[" in t["nodeid"] for t in report["tests"]) and any("call" not in t for t in report["tests"])
    _, _, trips = _gtfs_trips(_tasks("transit", "dev")[0].context)
    lengths = Counter((t["route_id"], t["direction_id"], len(t["calls"])) for t in trips.values())
    assert len({k[:2] for k in lengths}) < len(lengths)  # some trips turn back early
    services = _tasks("transit", "test")[0].context["services"].values()
    assert len({(s["line"], len(s["calls"])) for s in services}) > len(
        {s["line"] for s in services}
    )  # expresses
    kml = _tasks("places", "test")[0].context
    assert re.search(r"<value>\d\d/\d\d/\d{4}</value>", kml)
    names = [f["properties"]["name"] for f in _tasks("places", "dev")[0].context["features"]]
    assert any(a != b and b.startswith(a) for a in names for b in names)  # names that extend another's
