"""The fifth set of held-out task families, checked against the context itself: invoices, fixtures,
subtitles and tracker (what every held-out family must be is checked in
test_eval_heldout_families.py).

Every expected answer is found again here from the context as a user would read it (the accounting
API's invoices walked as dicts and the receipts' texts parsed with regular expressions; the results
CSV read with ``csv`` and the league's JSON walked as dicts; the SubRip and WebVTT files split into
cues with regular expressions; the Jira export read with ElementTree and the Linear-like issues
walked as dicts), not from the generator's bookkeeping; ``meta["params"]`` only says where to look.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import xml.etree.ElementTree as ET
from collections import Counter
from datetime import date, datetime
from email.utils import parsedate_to_datetime

import pytest
from heldout_tasks import SIZE
from heldout_tasks import tasks as _tasks

from rlm_kernel.eval.tasks import TaskRef, generate

FIFTH = ("invoices", "fixtures", "subtitles", "tracker")


_CONTAINERS = {
    "invoices": (list, dict),
    "fixtures": (str, dict),
    "subtitles": (dict, str),
    "tracker": (str, list),
}


@pytest.mark.parametrize("family", FIFTH)
def test_containers_per_split(family: str) -> None:
    dev, test = _CONTAINERS[family]
    assert all(isinstance(t.context, dev) for t in _tasks(family, "dev"))
    assert all(isinstance(t.context, test) for t in _tasks(family, "test"))
    for split in ("dev", "test"):
        context = _tasks(family, split)[0].context
        if (family, split) in (("invoices", "test"), ("subtitles", "dev")):  # file name -> text
            assert context and all(isinstance(k, str) and isinstance(v, str) for k, v in context.items())
        if (family, split) in (("invoices", "dev"), ("tracker", "test")):  # a list of nested dicts
            assert all(isinstance(item, dict) for item in context)
            assert any(isinstance(v, (dict, list)) for item in context for v in item.values())
    if family == "fixtures":  # nested: teams by code, games with a side dict each
        league = _tasks(family, "test")[0].context
        assert isinstance(league["teams"], dict) and isinstance(league["games"][0]["home"], dict)


@pytest.mark.parametrize("family", FIFTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_what_they_hold_grows_with_the_length(family: str, split: str) -> None:
    small = generate(TaskRef(family, split, SIZE // 4, 0))
    big = generate(TaskRef(family, split, 8 * SIZE, 0))
    assert 0.5 * SIZE <= small.context_chars <= 1.5 * SIZE, small.context_chars
    key = {"invoices": "documents", "fixtures": "matches", "subtitles": "cues", "tracker": "issues"}[family]
    assert small.meta[key] < _tasks(family, split)[0].meta[key] < big.meta[key]


def _check(task, want: object) -> None:
    if isinstance(want, float):
        assert task.answer == pytest.approx(want, abs=1e-6), task.question
    else:
        assert task.answer == want, task.question


def _leader(counts: Counter) -> object:
    (first, n1), (_, n2) = [*counts.most_common(2), (None, -1)][:2]
    assert n1 > n2  # a clear leader
    return first


def _pence(value: float) -> int:
    return round(value * 100)


# -- invoices ---------------------------------------------------------------------------------


def _receipts(folder: dict[str, str]) -> dict[str, dict]:
    out = {}
    for name, text in folder.items():
        rows = text.splitlines()
        rule = [i for i, row in enumerate(rows) if set(row) == {"-"}]
        items = []
        for row in rows[rule[0] + 1 : rule[1]]:
            m = re.match(r"^(\S.*?)\s+£(\d+\.\d\d)$", row)
            if m:
                items.append((m.group(1), _pence(float(m.group(2)))))
            else:
                assert re.match(r"^  \d+ @ £\d+\.\d\d$", row), row  # a multiple's quantity and price
        total = _pence(float(re.search(r"TOTAL\s+£(\d+\.\d\d)$", text, re.M).group(1)))
        assert total == sum(p for _, p in items)
        day = datetime.strptime(re.search(r"^(\d\d/\d\d/\d{4})  \d\d:\d\d", text, re.M).group(1), "%d/%m/%Y")
        out[name] = {"shop": rows[0].strip(), "items": items, "total": total, "month": f"{day:%Y-%m}"}
    return out


def _invoices_answer(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    if task.split == "dev":
        invoices = task.context
        for inv in invoices:
            assert _pence(inv["Total"]) == _pence(inv["SubTotal"]) + _pence(inv["TotalTax"])
            assert _pence(inv["SubTotal"]) == sum(_pence(li["LineAmount"]) for li in inv["LineItems"])
        if kind == "total":
            pence = sum(
                _pence(inv["Total"])
                for inv in invoices
                if inv["Contact"]["Name"] == p["contact"]
                and inv["DateString"][:7] == p["month"]
                and inv["Status"] not in ("VOIDED", "DRAFT")
            )
            return pence / 100
        if kind == "count":
            day = date.fromisoformat(p["day"])
            return sum(
                inv["Status"] == "AUTHORISED" and date.fromisoformat(inv["DueDateString"][:10]) < day
                for inv in invoices
            )
        if kind == "top":
            owed: Counter = Counter()
            for inv in invoices:
                if inv["Status"] == "AUTHORISED":
                    owed[inv["Contact"]["Name"]] += _pence(inv["AmountDue"])
            return _leader(owed)
        (inv,) = [inv for inv in invoices if inv["InvoiceNumber"] == p["invoice"]]
        (quantity,) = [li["Quantity"] for li in inv["LineItems"] if li["Description"] == p["item"]]
        return quantity
    receipts = _receipts(task.context)
    if kind == "total":
        return (
            sum(r["total"] for r in receipts.values() if r["shop"] == p["shop"] and r["month"] == p["month"])
            / 100
        )
    if kind == "count":
        return sum(any(name == p["item"] for name, _ in r["items"]) for r in receipts.values())
    if kind == "top":
        spent: Counter = Counter()
        for r in receipts.values():
            spent[r["shop"]] += r["total"]
        return _leader(spent)
    prices = Counter(dict(receipts[p["file"]]["items"]))
    return _leader(prices)


# -- fixtures ---------------------------------------------------------------------------------


def _season(day: datetime) -> str:
    first = day.year if day.month >= 7 else day.year - 1
    return f"{first}/{(first + 1) % 100:02d}"


def _fixtures_answer(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    if task.split == "dev":
        rows = list(csv.DictReader(io.StringIO(task.context)))
        for r in rows:
            r["day"] = datetime.strptime(r["Date"], "%d/%m/%Y")
            r["FTHG"], r["FTAG"] = int(r["FTHG"]), int(r["FTAG"])
            assert r["FTR"] == ("H" if r["FTHG"] > r["FTAG"] else "A" if r["FTHG"] < r["FTAG"] else "D")
        if kind == "points":
            points = 0
            for r in rows:
                if _season(r["day"]) == p["season"] and p["team"] in (r["HomeTeam"], r["AwayTeam"]):
                    side = "H" if r["HomeTeam"] == p["team"] else "A"
                    points += 3 if r["FTR"] == side else 1 if r["FTR"] == "D" else 0
            return points
        if kind == "scored":
            return sum(
                r["FTHG"] for r in rows if r["HomeTeam"] == p["team"] and f"{r['day']:%Y-%m}" == p["month"]
            )
        if kind == "leader":
            return _leader(
                Counter(
                    r["HomeTeam"]
                    for r in rows
                    if r["Div"] == p["division"] and _season(r["day"]) == p["season"] and r["FTR"] == "H"
                )
            )
        (referee,) = [
            r["Referee"]
            for r in rows
            if r["HomeTeam"] == p["home"]
            and r["AwayTeam"] == p["away"]
            and f"{r['day']:%Y-%m-%d}" == p["date"]
        ]
        return referee
    league = task.context
    games = league["games"]
    assert [g["tipoff"] for g in games] == sorted((g["tipoff"] for g in games), reverse=True)  # newest first
    for g in games:
        assert (
            g["home"]["score"] == sum(g["home"]["periods"]) != g["away"]["score"] == sum(g["away"]["periods"])
        )
    code = {t["fullName"]: c for c, t in league["teams"].items()}

    def winner(g: dict) -> str:
        return g["home"]["teamCode"] if g["home"]["score"] > g["away"]["score"] else g["away"]["teamCode"]

    if kind == "points":
        return sum(winner(g) == code[p["team"]] for g in games)
    if kind == "scored":
        return sum(
            g["away"]["score"]
            for g in games
            if g["away"]["teamCode"] == code[p["team"]] and g["tipoff"][:7] == p["month"]
        )
    if kind == "leader":
        won = Counter(winner(g) for g in games if league["teams"][winner(g)]["conference"] == p["conference"])
        return league["teams"][_leader(won)]["fullName"]
    (attendance,) = [g["attendance"] for g in games if g["gameId"] == p["gameId"]]
    return attendance


# -- subtitles --------------------------------------------------------------------------------

_TIME = r"(\d\d):(\d\d):(\d\d)[,.](\d\d\d)"


def _ms(h: str, m: str, s: str, ms: str) -> int:
    return ((int(h) * 60 + int(m)) * 60 + int(s)) * 1000 + int(ms)


def _srt_cues(text: str) -> list[dict]:
    cues = []
    for number, block in enumerate(text.strip().split("\n\n"), 1):
        index, times, *lines = block.split("\n")
        assert int(index) == number
        t = re.fullmatch(f"{_TIME} --> {_TIME}", times).groups()
        said = re.match(r"^([A-Z][A-Z.' ]*): (.*)$", lines[0])
        speaker = said.group(1) if said else ""
        if not said:
            assert re.fullmatch(r"\[[a-z ]+\]", lines[0])  # a sound
        words = " ".join([said.group(2) if said else lines[0], *lines[1:]])
        cues.append(
            {"start": times.split(" --> ")[0], "ms": _ms(*t[4:]) - _ms(*t[:4]), "who": speaker, "text": words}
        )
    return cues


def _vtt_cues(text: str) -> list[dict]:
    header, *blocks = text.strip().split("\n\n")
    assert header.startswith("WEBVTT")
    cues = []
    for block in blocks:
        if block.startswith("NOTE"):
            continue
        ident, times, *lines = block.split("\n")
        assert re.fullmatch(r"[0-9a-f-]{36}/\d+-0", ident)
        t = re.fullmatch(f"{_TIME} --> {_TIME}", times).groups()
        m = re.fullmatch(r"<v ([^>]+)>(.*)</v>", "\n".join(lines), re.S)
        text = m.group(2).replace("\n", " ")
        cues.append({"from": _ms(*t[:4]), "ms": _ms(*t[4:]) - _ms(*t[:4]), "who": m.group(1), "text": text})
    return cues


def _says(cue: dict, word: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", cue["text"], re.I) is not None


def _subtitles_answer(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    if task.split == "dev":
        files = {name: _srt_cues(text) for name, text in task.context.items()}
        mine = [c for c in files.get(p.get("file"), []) if c["who"] == p.get("speaker")]
        if kind == "lines":
            return len(mine)
        if kind == "time":
            return round(sum(c["ms"] for c in mine) / 1000, 3)
        if kind == "most":
            return _leader(Counter(c["who"] for cues in files.values() for c in cues if c["who"]))
        return next(c["start"] for c in files[p["file"]] if _says(c, p["word"]))
    cues = _vtt_cues(task.context)
    mine = [c for c in cues if c["who"] == p.get("speaker")]
    if kind == "lines":
        return sum(p["from_ms"] <= c["from"] < p["to_ms"] for c in mine)
    if kind == "time":
        return round(sum(c["ms"] for c in mine) / 1000, 3)
    if kind == "most":
        words: Counter = Counter()
        for c in cues:
            words[c["who"]] += len(c["text"].split())
        return _leader(words)
    return next(c["who"] for c in cues if _says(c, p["word"]))


# -- tracker ----------------------------------------------------------------------------------


def _jira_items(text: str) -> list[dict]:
    channel = ET.fromstring(text).find("channel")
    items = []
    for item in channel.iterfind("item"):
        fields = {
            f.findtext("customfieldname"): f.findtext("customfieldvalues/customfieldvalue")
            for f in item.iterfind("customfields/customfield")
        }
        assignee = item.find("assignee")
        resolved = item.findtext("resolved")
        items.append(
            {
                "key": item.findtext("key"),
                "type": item.findtext("type"),
                "priority": item.findtext("priority"),
                "resolution": item.findtext("resolution"),
                "assignee": None if assignee.get("accountid") == "-1" else assignee.text,
                "component": item.findtext("component"),
                "created": parsedate_to_datetime(item.findtext("created")),
                "resolved": resolved and parsedate_to_datetime(resolved),
                "points": float(fields.get("Story point estimate") or 0),
                "sprint": fields["Sprint"],
            }
        )
    assert int(channel.find("issue").get("total")) == len(items)
    return items


def _tracker_answer(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    if task.split == "dev":
        items = _jira_items(task.context)
        if kind == "count":
            return sum(
                i["type"] == "Bug"
                and i["resolution"] == "Unresolved"
                and i["priority"] == p["priority"]
                and i["component"] == p["component"]
                for i in items
            )
        sprint = f"PAY Sprint {p.get('sprint')}"
        if kind == "points":
            return int(sum(i["points"] for i in items if i["sprint"] == sprint and i["resolution"] == "Done"))
        if kind == "most":
            return _leader(Counter(i["assignee"] for i in items if i["sprint"] == sprint and i["assignee"]))
        (i,) = [i for i in items if i["key"] == p["key"]]
        return (i["resolved"].date() - i["created"].date()).days
    issues = task.context
    by_id = {i["identifier"]: i for i in issues}
    assert len(by_id) == len(issues)

    def labels(i: dict) -> set[str]:
        return {lab["name"] for lab in i["labels"]["nodes"]}

    if kind == "count":
        return sum(
            i["team"]["key"] == p["team"]
            and i["state"]["type"] not in ("completed", "canceled")
            and p["label"] in labels(i)
            for i in issues
        )
    if kind == "points":
        return sum(
            i["estimate"] or 0
            for i in issues
            if i["team"]["key"] == p["team"]
            and i["cycle"]["number"] == p["cycle"]
            and i["state"]["type"] == "completed"
        )
    if kind == "most":
        return _leader(
            Counter(
                i["assignee"]["displayName"]
                for i in issues
                if i["state"]["type"] == "completed" and p["label"] in labels(i) and i["assignee"]
            )
        )
    parent = by_id[by_id[p["identifier"]]["parent"]["identifier"]]
    return parent["assignee"]["email"]


_ANSWER = {
    "invoices": _invoices_answer,
    "fixtures": _fixtures_answer,
    "subtitles": _subtitles_answer,
    "tracker": _tracker_answer,
}


@pytest.mark.parametrize("family", FIFTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_answers_are_read_from_the_context(family: str, split: str) -> None:
    tasks = _tasks(family, split) + _tasks(family, split, 8, SIZE // 4) + _tasks(family, split, 4, SIZE * 4)
    for task in tasks:
        _check(task, _ANSWER[family](task))


def _lookalikes(names: set[str]) -> bool:
    return any(a != b and b.startswith(a) for a in names for b in names)


def test_the_traps_are_there() -> None:
    invoices = _tasks("invoices", "dev")[0].context
    assert _lookalikes({i["Contact"]["Name"] for t in _tasks("invoices", "dev")[:4] for i in t.context})
    assert {i["Status"] for i in invoices} >= {"PAID", "AUTHORISED"}
    assert any(
        0 < i["AmountPaid"] < i["Total"] for t in _tasks("invoices", "dev") for i in t.context
    )  # part paid
    receipts = _receipts(_tasks("invoices", "test")[0].context)
    assert _lookalikes({r["shop"] for r in receipts.values()})
    assert " @ £" in "".join(_tasks("invoices", "test")[0].context.values())  # multiples
    results = _tasks("fixtures", "dev")[0].context
    assert _lookalikes(set(re.findall(r"^E\d,[^,]+,[^,]+,([^,]+),", results, re.M)))
    league = _tasks("fixtures", "test")[1].context
    assert any(
        len(g["home"]["periods"]) > 4 for t in _tasks("fixtures", "test") for g in t.context["games"]
    )  # OT
    cities = [t["fullName"].split()[0] for t in league["teams"].values()]
    assert len(set(cities)) < len(cities)  # two teams of one city
    srt = "".join(_tasks("subtitles", "dev")[0].context.values())
    assert {"TOM", "TOMMY"} <= set(re.findall(r"^([A-Z][A-Z.' ]*): ", srt, re.M))
    assert re.search(r"^\[[a-z ]+\]$", srt, re.M)  # sounds
    cues = _vtt_cues(_tasks("subtitles", "test")[0].context)
    assert any(a["who"] == b["who"] for a, b in itertools.pairwise(cues))  # turns over several cues
    assert _lookalikes({c["who"] for c in cues})
    items = _jira_items(_tasks("tracker", "dev")[1].context)
    assert any(i["assignee"] is None for t in _tasks("tracker", "dev") for i in _jira_items(t.context))
    assert {i["resolution"] for i in items} >= {"Unresolved", "Done"}
    issues = [i for t in _tasks("tracker", "test")[:4] for i in t.context]
    assert any(i["parent"] for i in issues) and any(i["assignee"] is None for i in issues)
    assert _lookalikes({i["assignee"]["displayName"] for i in issues if i["assignee"]})
