"""The seventh set of held-out task families, checked against the context itself: chess,
contacts, ledger and weather (what every held-out family must be is checked in test_eval_heldout_families.py).

Every expected answer is found again here from the context as a user would read it (the PGN file
split into games with its tags read by regular expressions, the game export walked as dicts; the contacts response walked as dicts and the vCard file unfolded and
split into cards and properties; the Beancount file split into
entries with amounts elided by one posting filled in, the app's export walked as dicts; the
METAR files split into reports and their groups read by regular expressions, the ASOS columns
zipped into rows), not from the generator's bookkeeping; ``meta["params"]`` only says where to
look.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime

import pytest
from heldout_tasks import SIZE, N
from heldout_tasks import tasks as _tasks

from rlm_kernel.eval.tasks import TaskRef, as_text, generate

SEVENTH = ("chess", "contacts", "ledger", "weather")

_CONTAINERS = {"chess": (str, list), "contacts": (dict, str), "ledger": (str, list), "weather": (dict, dict)}
_SIZES = {"chess": "games", "contacts": "contacts", "ledger": "transactions", "weather": "observations"}


@pytest.mark.parametrize("family", SEVENTH)
def test_containers_per_split(family: str) -> None:
    dev, test = _CONTAINERS[family]
    assert all(isinstance(t.context, dev) for t in _tasks(family, "dev"))
    assert all(isinstance(t.context, test) for t in _tasks(family, "test"))
    files = _tasks("weather", "dev")[0].context  # file name -> text
    assert len(files) >= 2 and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
    columns = _tasks("weather", "test")[0].context  # a table as columns of equal length
    assert len({len(v) for v in columns.values()}) == 1 and all(isinstance(v, list) for v in columns.values())
    games = _tasks("chess", "test")[0].context  # a list of nested dicts
    assert all(isinstance(g, dict) and isinstance(g["players"], dict) for g in games)


@pytest.mark.parametrize("family", SEVENTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_what_they_hold_grows_with_the_length(family: str, split: str) -> None:
    small = generate(TaskRef(family, split, SIZE // 4, 0))
    big = generate(TaskRef(family, split, 8 * SIZE, 0))
    key = _SIZES[family]
    assert small.meta[key] < _tasks(family, split)[0].meta[key] < big.meta[key]
    for length in (4096, 16384):  # near the length asked for, at four characters a token
        task = generate(TaskRef(family, split, length, 1))
        assert 0.8 * 4 * length <= task.context_chars <= 1.2 * 4 * length, (length, task.context_chars)
        assert task.context_chars == len(as_text(task.context))


@pytest.mark.parametrize("family", SEVENTH)
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


# -- chess ------------------------------------------------------------------------------------


def _pgn(text: str) -> list[dict]:
    games = []
    for block in re.split(r"\n\n(?=\[Event )", text.strip()):
        head, moves = block.split("\n\n", 1)
        tags = dict(re.findall(r'^\[(\w+) "(.*)"\]$', head, re.M))
        assert moves.split()[-1] == tags["Result"]
        plies = [t for t in re.sub(r"\{[^}]*\}", " ", moves).split()[:-1] if not re.fullmatch(r"\d+\.", t)]
        assert len(plies) == int(tags["PlyCount"])
        games.append(tags)
    return games


def _chess_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    games = _pgn(task.context)
    if kind == "count":
        return sum(g["Black"] == p["player"] and g["Result"] == "0-1" for g in games)
    if kind == "total":
        points = 0.0
        for g in games:
            if p["player"] in (g["White"], g["Black"]):
                won = "1-0" if g["White"] == p["player"] else "0-1"
                points += 1.0 if g["Result"] == won else 0.5 if g["Result"] == "1/2-1/2" else 0.0
        return points
    if kind == "top":
        wins = Counter(
            g["White"] if g["Result"] == "1-0" else g["Black"] for g in games if g["Result"] != "1/2-1/2"
        )
        return _leader(dict(wins))
    (g,) = [g for g in games if g["Round"].split(".")[0] == p["round"] and g["White"] == p["white"]]
    assert g["White"] in task.question and g["Black"] in task.question
    return g["ECO"]


def _chess_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    games = task.context
    assert len({g["id"] for g in games}) == len(games)

    def colour(g: dict, user: str) -> str | None:
        return next((c for c, side in g["players"].items() if side["user"]["name"] == user), None)

    if kind == "count":
        return sum(
            g["status"] == "outoftime" and colour(g, p["user"]) not in (None, g.get("winner")) for g in games
        )
    if kind == "total":
        return sum(
            g["players"][colour(g, p["user"])]["ratingDiff"]
            for g in games
            if g["rated"] and colour(g, p["user"])
        )
    if kind == "top":
        wins = Counter(
            g["players"][g["winner"]]["user"]["name"]
            for g in games
            if "winner" in g and g["speed"] == p["speed"]
        )
        return _leader(dict(wins))
    (g,) = [g for g in games if g["id"] == p["id"]]
    return g["players"][colour(g, p["user"])]["rating"]


# -- contacts ---------------------------------------------------------------------------------


def _people_dev(response: dict) -> list[dict]:
    assert response["totalPeople"] == len(response["connections"])
    out = []
    for c in response["connections"]:
        (name,) = c["names"]
        out.append(
            {
                "name": name["displayName"],
                "org": c.get("organizations", [{}])[0].get("name"),
                "phones": [(x["type"], x["value"]) for x in c.get("phoneNumbers", [])],
            }
        )
    return out


def _vcf(text: str) -> list[dict]:
    unfolded = text.replace("\r\n ", "")
    out = []
    for block in re.findall(r"BEGIN:VCARD\r\n(.*?)END:VCARD", unfolded, re.S):
        card: dict = {"TEL": [], "EMAIL": [], "ADR": [], "CATEGORIES": []}
        for line in block.split("\r\n"):
            if not line:
                continue
            head, value = line.split(":", 1)
            prop, *params = head.split(";")
            if prop in ("TEL", "EMAIL", "ADR"):
                types = {t for p in params for t in p.removeprefix("TYPE=").split(",")}
                card[prop].append((types, value))
            elif prop == "CATEGORIES":
                card[prop] = value.split(",")
            else:
                card[prop] = value
        out.append(card)
    return out


def _contacts_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    people = _people_dev(task.context)
    if kind == "count":
        return sum(x["org"] == p["org"] for x in people)
    if kind == "total":
        return sum(len(x["phones"]) for x in people if x["org"] == p["org"])
    if kind == "top":
        return _leader(dict(Counter(x["org"] for x in people if x["org"])))
    (x,) = [x for x in people if x["name"] == p["name"]]
    return next(v for t, v in x["phones"] if t == "mobile")


def _contacts_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    cards = _vcf(task.context)

    def city(card: dict) -> str | None:
        return next((v.split(";")[3] for t, v in card["ADR"] if "HOME" in t), None)

    if kind == "count":
        return sum(city(c) == p["city"] and p["category"] in c["CATEGORIES"] for c in cards)
    if kind == "total":
        return sum(len(c["TEL"]) for c in cards if city(c) == p["city"])
    if kind == "top":
        return _leader(dict(Counter(city(c) for c in cards if city(c))))
    (c,) = [c for c in cards if c["FN"] == p["name"]]
    return next(v for t, v in c["EMAIL"] if "WORK" in t)


# -- ledger -----------------------------------------------------------------------------------


def _beancount(text: str) -> list[dict]:
    out = []
    for entry in text.split("\n\n"):
        lines = [x for x in entry.splitlines() if x and not x.startswith(";")]
        if not lines:
            continue
        m = re.match(r'(\d{4}-\d\d-\d\d) [*!] "([^"]*)" "([^"]*)"', lines[0])
        if not m:
            continue
        postings = [re.match(r"  (\S+)(?:\s+(-?[\d.]+) EUR)?$", x).groups() for x in lines[1:]]
        given = [float(a) for _, a in postings if a]
        assert len(given) == 1 and len(postings) == 2  # one amount left out, as Beancount allows
        amounts = {acc: (float(a) if a else -given[0]) for acc, a in postings}
        for acc, amount in amounts.items():
            if acc.startswith("Expenses:"):
                out.append({"date": m.group(1), "payee": m.group(2), "account": acc, "amount": amount})
    return out


def _ledger_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    rows = _beancount(task.context)
    if kind == "count":
        return sum(r["payee"] == p["payee"] and r["date"].startswith(p["month"]) for r in rows)
    if kind == "total":
        return round(
            sum(r["amount"] for r in rows if r["account"] == p["where"] and r["date"].startswith(p["month"])),
            2,
        )
    if kind == "top":
        spent: Counter = Counter()
        for r in rows:
            spent[r["payee"]] += r["amount"]
        return _leader(dict(spent))
    (r,) = [r for r in rows if r["payee"] == p["payee"] and r["date"] == p["day"]]
    return round(r["amount"], 2)


def _ledger_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    rows = [r for r in task.context if r["amount"] < 0 and not r["deleted"]]
    if kind == "count":
        return sum(r["payee_name"] == p["payee"] and r["date"].startswith(p["month"]) for r in rows)
    if kind == "total":
        mine = [
            -r["amount"]
            for r in rows
            if r["category_name"] == p["where"] and r["date"].startswith(p["month"])
        ]
        return round(sum(mine) / 1000, 2)
    if kind == "top":
        spent: Counter = Counter()
        for r in rows:
            spent[r["payee_name"]] -= r["amount"]
        return _leader(dict(spent))
    (r,) = [r for r in rows if r["payee_name"] == p["payee"] and r["date"] == p["day"]]
    return round(-r["amount"] / 1000, 2)


# -- weather ----------------------------------------------------------------------------------


def _metar(files: dict[str, str]) -> list[dict]:
    out = []
    for name, text in files.items():
        station = re.fullmatch(r"metar/(K[A-Z]{3})_(\d{4})-(\d\d)\.txt", name)
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            m = re.match(r"(METAR|SPECI) (\w{4}) (\d\d)(\d\d)(\d\d)Z ", line)
            assert m and m.group(2) == station.group(1)
            wind = re.search(r" (VRB|\d{3})(\d\d)(?:G(\d\d))?KT ", line)
            temp = re.search(r" (M?\d\d)/(M?\d\d) ", line)
            precip = re.search(r" P(\d{4})\b", line)
            out.append(
                {
                    "kind": m.group(1),
                    "station": m.group(2),
                    "when": datetime(
                        int(station.group(2)), int(station.group(3)), *map(int, m.group(3, 4, 5))
                    ),
                    "gust": int(wind.group(3)) if wind.group(3) else None,
                    "temp": int(temp.group(1).replace("M", "-")),
                    "precip": int(precip.group(1)) if precip else 0,
                }
            )
    return out


def _weather_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    reports = _metar(task.context)
    routine = [r for r in reports if r["kind"] == "METAR"]
    if kind == "count":
        return sum(r["station"] == p["station"] and r["gust"] is not None for r in routine)
    if kind == "total":
        day = datetime.fromisoformat(p["day"]).date()
        hundredths = sum(
            r["precip"] for r in routine if r["station"] == p["station"] and r["when"].date() == day
        )
        return round(hundredths / 100, 2)
    if kind == "top":
        best: dict = {}
        for r in reports:
            best[r["station"]] = max(best.get(r["station"], 0), r["gust"] or 0)
        return _leader(best)
    when = datetime.fromisoformat(p["time"])
    (r,) = [r for r in routine if r["station"] == p["station"] and r["when"] == when]
    return r["temp"]


def _weather_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    cols = task.context
    rows = [dict(zip(cols, values, strict=True)) for values in zip(*cols.values(), strict=True)]
    mine = [r for r in rows if r["station"] == p.get("station")]
    if kind == "count":
        return sum(r["tmpf"] <= p["at_most"] for r in mine)
    if kind == "total":
        return round(sum(r["p01i"] for r in mine if r["valid"].startswith(p["day"])), 2)
    if kind == "top":
        best: dict = {}
        for r in rows:
            best[r["station"]] = max(best.get(r["station"], -999.0), r["tmpf"])
        return _leader(best)
    (r,) = [r for r in mine if r["valid"] == p["time"]]
    return r["dwpf"]


_ANSWER = {
    ("chess", "dev"): _chess_dev,
    ("chess", "test"): _chess_test,
    ("contacts", "dev"): _contacts_dev,
    ("contacts", "test"): _contacts_test,
    ("ledger", "dev"): _ledger_dev,
    ("ledger", "test"): _ledger_test,
    ("weather", "dev"): _weather_dev,
    ("weather", "test"): _weather_test,
}


@pytest.mark.parametrize("family", SEVENTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_answers_are_read_from_the_context(family: str, split: str) -> None:
    tasks = _tasks(family, split) + _tasks(family, split, 8, SIZE // 4) + _tasks(family, split, 4, SIZE * 4)
    for task in tasks:
        _check(task, _ANSWER[family, split](task))


def test_the_traps_are_there() -> None:
    games = _pgn(_tasks("chess", "dev")[0].context)
    players = {g["White"] for g in games} | {g["Black"] for g in games}
    assert {"Nowak, Pawel", "Novak, Pavel"} <= players
    assert "{" in _tasks("chess", "dev")[0].context and any("Opening" not in g for g in games)
    export = [g for t in _tasks("chess", "test")[:4] for g in t.context]
    assert {g["rated"] for g in export} == {True, False} and any("winner" not in g for g in export)
    assert any(g["status"] == "outoftime" for g in export)
    text = "".join(_tasks("weather", "dev")[0].context.values())
    assert "SPECI " in text and " VRB" in text and " AUTO " in text and re.search(r" M\d\d/", text)
    people = [x for t in _tasks("contacts", "dev")[:4] for x in _people_dev(t.context)]
    assert any(x["org"] is None for x in people) and {"Northwind Traders", "Northwind Trading"} <= {
        x["org"] for x in people
    }
    vcf = _tasks("contacts", "test")[0].context
    assert "\r\n " in vcf and "NOTE:" in vcf  # folded lines, notes that name other cities
    beancount = _tasks("ledger", "dev")[0].context
    assert "\n2024-01-01 open " in beancount and ' ! "' in beancount and " #" in beancount
    export = [r for t in _tasks("ledger", "test")[:4] for r in t.context]
    assert any(r["amount"] > 0 for r in export) and any(r["memo"] for r in export)
    cols = _tasks("weather", "test")[0].context
    assert None in cols["gust"] and any(v is not None for v in cols["gust"])
