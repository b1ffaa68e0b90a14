"""The sixth set of held-out task families, checked against the context itself: elections, recipes,
genealogy and labs (what every held-out family must be is checked in
test_eval_heldout_families.py).

Every expected answer is found again here from the context as a user would read it (the county
CSV files and the city's columns loaded into pandas; the schema.org recipes walked as dicts with
their ingredient lines and ISO 8601 durations parsed with regular expressions, the Markdown notes
split into front matter and lists with regular expressions; the GEDCOM X JSON walked as dicts and
the GEDCOM file parsed line by line; the HL7 messages split into segments and fields, the FHIR
Bundle walked as dicts), not from the generator's bookkeeping; ``meta["params"]`` only says where
to look.
"""

from __future__ import annotations

import difflib
import io
import re
from collections import Counter, defaultdict
from datetime import date, datetime

import pandas as pd
import pytest
from heldout_tasks import SIZE, N
from heldout_tasks import tasks as _tasks

from rlm_kernel.eval.tasks import TaskRef, as_text, generate

SIXTH = ("elections", "recipes", "genealogy", "labs")


_CONTAINERS = {
    "elections": (dict, dict),
    "recipes": (list, dict),
    "genealogy": (dict, str),
    "labs": (str, dict),
}
_SIZES = {"elections": "precincts", "recipes": "recipes", "genealogy": "people", "labs": "results"}


@pytest.mark.parametrize("family", SIXTH)
def test_containers_per_split(family: str) -> None:
    dev, test = _CONTAINERS[family]
    assert all(isinstance(t.context, dev) for t in _tasks(family, "dev"))
    assert all(isinstance(t.context, test) for t in _tasks(family, "test"))
    for split in ("dev", "test"):
        context = _tasks(family, split)[0].context
        if (family, split) in (("elections", "dev"), ("recipes", "test")):  # file name -> text
            assert context and all(isinstance(k, str) and isinstance(v, str) for k, v in context.items())
        if (family, split) == ("elections", "test"):  # a table as columns of equal length
            assert len({len(v) for v in context.values()}) == 1 and all(
                isinstance(v, list) for v in context.values()
            )
        if (family, split) == ("recipes", "dev"):  # a list of nested dicts
            assert all(isinstance(item, dict) for item in context)
            assert any(isinstance(v, (dict, list)) for item in context for v in item.values())
        if (family, split) in (("genealogy", "dev"), ("labs", "test")):  # nested: lists of dicts of dicts
            assert any(isinstance(v, list) and isinstance(v[0], dict) for v in context.values())


@pytest.mark.parametrize("family", SIXTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_what_they_hold_grows_with_the_length(family: str, split: str) -> None:
    small = generate(TaskRef(family, split, SIZE // 4, 0))
    big = generate(TaskRef(family, split, 8 * SIZE, 0))
    assert 0.5 * SIZE <= small.context_chars <= 1.5 * SIZE, small.context_chars
    key = _SIZES[family]
    assert small.meta[key] < _tasks(family, split)[0].meta[key] < big.meta[key]
    for length in (4096, 16384, 32768):  # near the length asked for, at four characters a token
        for index in range(2):
            task = generate(TaskRef(family, split, length, index))
            assert 0.8 * 4 * length <= task.context_chars <= 1.2 * 4 * length, (length, task.context_chars)
            assert task.context_chars == len(as_text(task.context))


@pytest.mark.parametrize("family", SIXTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_answers_vary_across_tasks(family: str, split: str) -> None:
    tasks = _tasks(family, split)
    assert len({str(t.answer) for t in tasks}) >= 8
    assert len({t.question for t in tasks}) >= N - 3  # a question may come back, on other data
    for kind in {t.meta["question_type"] for t in tasks}:  # within a kind too
        mine = [t for t in tasks if t.meta["question_type"] == kind]
        assert len(mine) < 2 or len({t.question for t in mine}) > 1


def _check(task, want: object) -> None:
    if isinstance(want, float):
        assert task.answer == pytest.approx(want, abs=1e-6), task.question
    else:
        assert task.answer == want, task.question


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    assert len(ranked) == 1 or ranked[0][1] > ranked[1][1]  # a clear leader
    return ranked[0][0]


def _lookalikes(names: set[str]) -> bool:
    """Two names of which one extends the other or nearly spells it, or two that share a surname."""
    if max(Counter(n.split()[-1] for n in names).values()) > 1 and all(" " in n for n in names):
        return True
    return any(
        a != b and (b.startswith(a) or difflib.SequenceMatcher(None, a, b).ratio() >= 0.85)
        for a in names
        for b in names
    )


# -- elections --------------------------------------------------------------------------------

_MODES = ["election_day", "advance_voting", "absentee_by_mail", "provisional"]


def _county_rows(files: dict[str, str]) -> pd.DataFrame:
    frames = []
    for name, text in files.items():
        assert re.fullmatch(r"20241105__ga__general__[a-z]+__precinct\.csv", name)
        frames.append(pd.read_csv(io.StringIO(text), dtype={"district": str, "party": str}))
    df = pd.concat(frames, ignore_index=True)
    counts = df[~df["office"].isin(["Registered Voters", "Ballots Cast"])]
    assert (counts[_MODES].sum(axis=1) == counts["votes"]).all()  # the methods add up to the votes
    totals = df.pivot_table(index=["county", "precinct"], columns="office", values="votes", aggfunc="sum")
    assert (totals["Ballots Cast"] <= totals["Registered Voters"]).all()
    return counts


def _winner(rows: pd.DataFrame) -> str:
    return _leader(rows.groupby("candidate")["votes"].sum().to_dict())


def _elections_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    df = _county_rows(task.context)
    if kind == "count":
        mine = df[(df["county"] == p["county"]) & (df["office"] == p["office"])]
        n = 0
        for _, race in mine.groupby(["precinct", "district"], dropna=False):
            if p["candidate"] in set(race["candidate"]):
                votes = race.set_index("candidate")["votes"]
                n += bool((votes[p["candidate"]] > votes.drop(p["candidate"])).all())
        return n
    if kind == "total":
        return int(df.loc[(df["county"] == p["county"]) & (df["candidate"] == p["candidate"]), "votes"].sum())
    if kind == "top":
        (office, district) = df.loc[df["candidate"] == p["candidate"], ["office", "district"]].iloc[0]
        race = df[
            (df["office"] == office) & (df["district"].fillna("") == ("" if pd.isna(district) else district))
        ]
        got = race[race["candidate"] == p["candidate"]].groupby("county")["votes"].sum()
        share = (got / race.groupby("county")["votes"].sum()).dropna()
        return _leader(share.to_dict())
    here = df[(df["county"] == p["county"]) & (df["precinct"] == p["precinct"])]
    if kind == "lookup":
        (votes,) = here.loc[here["candidate"] == p["candidate"], "absentee_by_mail"]
        return int(votes)
    (district,) = set(here.loc[here["office"] == "State House", "district"])
    return _winner(df[(df["office"] == "State House") & (df["district"] == district)])


def _elections_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    df = pd.DataFrame(task.context)
    assert set(df["method"]) == {"Election Day", "Early Voting", "Vote by Mail"}
    assert (df["precinct"].str[:2].astype(int) == df["ward"]).all()  # the code starts with the ward
    if kind == "count":
        measure = df[df["contest"] == p["measure"]].pivot_table(
            index="precinct", columns="choice", values="votes", aggfunc="sum"
        )
        return int((measure["Yes"] > measure["No"]).sum())
    if kind == "total":
        return int(df.loc[(df["ward"] == p["ward"]) & (df["choice"] == p["candidate"]), "votes"].sum())
    if kind == "top":
        mayor = df[
            (df["contest"] == "Mayor") & ((df["ward"] == p["ward"]) if p["ward"] is not None else True)
        ]
        ranked = mayor.groupby("choice")["votes"].sum().sort_values(ascending=False)
        assert ranked.iloc[0] > ranked.iloc[1] > ranked.iloc[2]
        return ranked.index[1]
    if kind == "lookup":
        row = df[
            (df["precinct"] == p["precinct"])
            & (df["choice"] == p["candidate"])
            & (df["method"] == p["method"])
        ]
        (votes,) = row["votes"]
        return int(votes)
    (ward,) = set(
        df.loc[df["contest"].str.startswith("City Council") & (df["choice"] == p["candidate"]), "ward"]
    )
    mayor = df[(df["contest"] == "Mayor") & (df["ward"] == ward)]
    return _leader(mayor.groupby("choice")["votes"].sum().to_dict())


# -- recipes ----------------------------------------------------------------------------------

_DEV_LINE = re.compile(r"^([\d½¼¾]+)(?:(g|ml)| (tbsp|tsp))? ([^,]+)(?:, (.+))?$")
_US_LINE = re.compile(r"^- (\d+ \d/\d|\d/\d|\d+) (?:(cups?|tbsp|tsp|oz|lb|cloves?) )?([^,]+)(?:, (.+))?$")


def _minutes(iso: str) -> int:
    h, m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?", iso).groups()
    return int(h or 0) * 60 + int(m or 0)


def _json_ld(items: list[dict]) -> list[dict]:
    out = []
    for item in items:
        assert item["@type"] == "Recipe"
        lines = []
        for text in item["recipeIngredient"]:
            m = _DEV_LINE.match(text)
            assert m, text
            amount = float(m.group(1)) if m.group(1).isdigit() else None
            lines.append((m.group(4), m.group(2) or m.group(3), amount))
        total = _minutes(item["totalTime"])
        assert total == _minutes(item["prepTime"]) + _minutes(item["cookTime"])
        out.append(
            {
                "title": item["name"],
                "author": item["author"]["name"],
                "category": item["recipeCategory"],
                "cuisine": item["recipeCuisine"],
                "minutes": total,
                "calories": int(re.fullmatch(r"(\d+) calories", item["nutrition"]["calories"]).group(1)),
                "ratings": item["aggregateRating"]["ratingCount"],
                "lines": lines,
            }
        )
    return out


def _notes(folder: dict[str, str]) -> list[dict]:
    out = []
    for name, text in folder.items():
        assert name.startswith("Recipes/") and name.endswith(".md")
        front, body = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S).groups()
        meta = dict(re.findall(r"^(\w+): (.*)$", front, re.M))
        section = re.search(r"^## Ingredients\n(.*?)\n\n", body, re.M | re.S).group(1)
        lines = []
        for row in section.splitlines():
            m = _US_LINE.match(row)
            assert m, row
            amount = int(m.group(1)) if m.group(1).isdigit() else None
            lines.append((m.group(3), (m.group(2) or "").rstrip("s"), amount))
        out.append(
            {
                "title": meta["title"],
                "cuisine": meta["cuisine"],
                "tags": [t.strip() for t in meta["tags"].strip("[]").split(",")],
                "minutes": int(meta["prep"].split()[0]) + int(meta["cook"].split()[0]),
                "lines": lines,
            }
        )
    return out


def _amount(recipe: dict, name: str, unit: str) -> int:
    return sum(a for n, u, a in recipe["lines"] if n == name and u == unit)


def _recipes_answer(task) -> object:
    kind, p, dev = task.meta["question_type"], task.meta["params"], task.split == "dev"
    recipes = _json_ld(task.context) if dev else _notes(task.context)
    titles = [r["title"] for r in recipes]
    assert len(set(titles)) == len(titles)
    by_title = {r["title"]: r for r in recipes}
    if kind == "count" and dev:
        return sum(any(n == p["ingredient"] for n, _, _ in r["lines"]) for r in recipes)
    if kind == "count":
        return sum(p["tag"] in r["tags"] and r["minutes"] < p["limit"] for r in recipes)
    if kind == "total":
        field, value, unit = ("category", p["category"], "g") if dev else ("cuisine", p["cuisine"], "oz")
        return sum(_amount(r, p["ingredient"], unit) for r in recipes if r[field] == value)
    if kind == "top" and dev:
        return _leader({r["title"]: r["ratings"] for r in recipes if r["cuisine"] == p["cuisine"]})
    if kind == "top":
        return _leader({r["title"]: len(r["lines"]) for r in recipes if p["tag"] in r["tags"]})
    if kind == "lookup":
        return (
            by_title[p["title"]]["minutes"] if dev else _amount(by_title[p["title"]], p["ingredient"], "oz")
        )
    if dev:
        best = _leader({r["title"]: r["calories"] for r in recipes if r["category"] == p["category"]})
        return by_title[best]["author"]
    best = _leader(
        {r["title"]: _amount(r, p["ingredient"], "oz") for r in recipes if _amount(r, p["ingredient"], "oz")}
    )
    return by_title[best]["cuisine"]


# -- genealogy --------------------------------------------------------------------------------

_X = "http://gedcomx.org/"


def _gedcomx(tree: dict) -> tuple[dict, dict, dict]:
    """People by id, and each person's parents and children as lists of ids."""
    people = {}
    for person in tree["persons"]:
        facts = {f["type"].removeprefix(_X): f for f in person["facts"]}

        def day(kind: str, facts=facts) -> date | None:
            return date.fromisoformat(facts[kind]["date"]["formal"][1:]) if kind in facts else None

        (form,) = person["names"][0]["nameForms"]
        people[person["id"]] = {
            "name": form["fullText"],
            "female": person["gender"]["type"] == _X + "Female",
            "born": day("Birth"),
            "birthplace": facts["Birth"]["place"]["original"],
            "died": day("Death"),
        }
        assert (
            f"{people[person['id']]['born'].day} {people[person['id']]['born']:%B %Y}"
            == facts["Birth"]["date"]["original"]
        )
    parents, children = defaultdict(list), defaultdict(list)
    for rel in tree["relationships"]:
        a, b = rel["person1"]["resource"][1:], rel["person2"]["resource"][1:]
        assert a in people and b in people
        if rel["type"] == _X + "ParentChild":
            parents[b].append(a)
            children[a].append(b)
    return people, parents, children


def _age(born: date, died: date) -> int:
    return died.year - born.year - ((died.month, died.day) < (born.month, born.day))


def _genealogy_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    people, parents, children = _gedcomx(task.context)
    if kind == "total":
        ages = [
            _age(x["born"], x["died"]) for x in people.values() if x["birthplace"] == p["place"] and x["died"]
        ]
        return round(sum(ages) / len(ages), 1)
    if kind == "top":
        return _leader(
            Counter(x["birthplace"] for x in people.values() if p["from"] <= x["born"].year <= p["to"])
        )
    me = people[p["id"]]
    assert f"{me['name']}, born {me['born'].day} {me['born']:%B %Y}" in task.question
    assert sum(x["name"] == me["name"] and x["born"] == me["born"] for x in people.values()) == 1
    if kind == "count":
        return len(children[p["id"]])
    if kind == "lookup":
        return me["died"].year
    (mother,) = [q for q in parents[p["id"]] if people[q]["female"]]
    return people[mother]["birthplace"]


def _gedcom(text: str) -> tuple[dict, dict]:
    """INDI and FAM records by xref: each tag's values, and ``BIRT.DATE``-like keys for sub-tags."""
    records: dict[str, dict] = {}
    current, parent = None, None
    for line in text.splitlines():
        level, rest = line.split(" ", 1)
        if level == "0":
            m = re.match(r"(@\w+@) (INDI|FAM)$", rest)
            current = records.setdefault(m.group(1), {"type": m.group(2)}) if m else None
            continue
        if current is None:
            continue
        tag, _, value = rest.partition(" ")
        if level == "1":
            parent = tag
            current.setdefault(tag, []).append(value)
        else:
            current[f"{parent}.{tag}"] = value
    people = {k: v for k, v in records.items() if v["type"] == "INDI"}
    families = {k: v for k, v in records.items() if v["type"] == "FAM"}
    for x in people.values():
        x["given"], x["surname"] = re.fullmatch(r"(.+) /(.+)/", x["NAME"][0]).groups()
        x["born"] = datetime.strptime(x["BIRT.DATE"], "%d %b %Y").date()
    return people, families


def _genealogy_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    people, families = _gedcom(task.context)
    if kind == "total":
        return sum(len(f.get("CHIL", [])) for f in families.values() if f["MARR.PLAC"] == p["place"])
    if kind == "top":
        return _leader(Counter(x["surname"] for x in people.values() if x["born"].year > p["after"]))
    me = people[p["id"]]
    assert f"{me['given']} {me['surname']} (born {me['BIRT.DATE']})" in task.question
    assert sum(x["NAME"] == me["NAME"] and x["born"] == me["born"] for x in people.values()) == 1
    if kind == "count":
        kids = [c for f in me.get("FAMS", []) for c in families[f].get("CHIL", [])]
        return len({g for c in kids for f in people[c].get("FAMS", []) for g in families[f].get("CHIL", [])})
    if kind == "lookup":
        (job,) = me["OCCU"]
        return job
    (home,) = me["FAMC"]
    (mother,) = families[home]["WIFE"]
    return people[mother]["surname"]


# -- labs -------------------------------------------------------------------------------------


def _hl7(text: str) -> pd.DataFrame:
    rows, message = [], {}
    for line in text.splitlines():
        f = line.split("|")
        if f[0] == "MSH":
            assert f[8] == "ORU^R01^ORU_R01" and f[11] == "2.5.1"
            message = {"control": f[9]}
        elif f[0] == "PID":
            message["mrn"] = f[3].split("^")[0]
            family_name, given, _ = f[5].split("^")
            message["name"] = f"{given} {family_name}"
        elif f[0] == "PV1":
            message["attending"] = f[7].split("^")[1]
        elif f[0] == "OBR":
            message["ordered_by"] = f[16].split("^")[1]
            message["collected"] = datetime.strptime(f[7], "%Y%m%d%H%M")
        elif f[0] == "OBX":
            low, high = map(float, f[7].split("-"))
            value = float(f[5])
            assert f[8] == (
                "H" if value > high else "L" if value < low else "N"
            )  # the flag follows the range
            assert f[14] == f"{message['collected']:%Y%m%d%H%M}"
            rows.append({**message, "loinc": f[3].split("^")[0], "value": value, "flag": f[8]})
    return pd.DataFrame(rows)


def _labs_dev(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    df = _hl7(task.context)
    assert df.groupby("mrn")["name"].nunique().max() == 1
    test = df[df["loinc"] == p["loinc"]]
    if kind == "count":
        return int(((test["flag"] == "H") & (test["collected"].dt.strftime("%Y-%m") == p["month"])).sum())
    if kind == "top":
        return _leader(test.groupby("mrn")["value"].max().to_dict())
    mine = test[test["mrn"] == p["mrn"]]
    assert f"MRN {p['mrn']}" in task.question and mine["name"].iloc[0] in task.question
    if kind == "total":
        return round(sum(mine["value"].tolist()) / len(mine), 2)
    if kind == "lookup":
        (value,) = mine.loc[mine["collected"].dt.date == date.fromisoformat(p["day"]), "value"]
        return value
    best = _leader(dict(zip(mine["control"], mine["value"], strict=True)))
    (doctor,) = set(mine.loc[mine["control"] == best, "ordered_by"])
    return doctor


def _fhir(bundle: dict) -> tuple[dict, list[dict]]:
    assert bundle["resourceType"] == "Bundle" and bundle["type"] == "searchset"
    patients, observations = {}, []
    for entry in bundle["entry"]:
        r = entry["resource"]
        if r["resourceType"] == "Patient":
            (name,) = r["name"]
            patients[r["id"]] = {
                "name": f"{name['given'][0]} {name['family']}",
                "born": date.fromisoformat(r["birthDate"]),
            }
        else:
            (coding,) = r["code"]["coding"]
            observations.append(
                {
                    "id": r["id"],
                    "status": r["status"],
                    "loinc": coding["code"],
                    "patient": r["subject"]["reference"].removeprefix("Patient/"),
                    "when": datetime.fromisoformat(r["effectiveDateTime"]),
                    "value": r["valueQuantity"]["value"],
                }
            )
    assert bundle["total"] == len(observations)
    assert all(o["patient"] in patients for o in observations)
    return patients, observations


def _labs_test(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    patients, observations = _fhir(task.context)
    final = [o for o in observations if o["status"] == "final" and o["loinc"] == p["loinc"]]
    if kind == "count":
        return sum(o["value"] >= p["at_least"] for o in final)
    if kind == "top":
        latest = {}
        for o in sorted(final, key=lambda o: o["when"]):
            latest[patients[o["patient"]]["name"]] = o["value"]
        return _leader(latest)
    if kind == "hop":
        best = _leader({o["id"]: o["value"] for o in final})
        (patient,) = [o["patient"] for o in final if o["id"] == best]
        return patients[patient]["born"].year
    me = patients[p["patient"]]
    assert f"{me['name']} (born {me['born']})" in task.question
    mine = [o["value"] for o in final if o["patient"] == p["patient"]]
    if kind == "total":
        return round(sum(mine) / len(mine), 2)
    (value,) = [
        o["value"] for o in final if o["patient"] == p["patient"] and f"{o['when'].date()}" == p["day"]
    ]
    return value


_ANSWER = {
    ("elections", "dev"): _elections_dev,
    ("elections", "test"): _elections_test,
    ("recipes", "dev"): _recipes_answer,
    ("recipes", "test"): _recipes_answer,
    ("genealogy", "dev"): _genealogy_dev,
    ("genealogy", "test"): _genealogy_test,
    ("labs", "dev"): _labs_dev,
    ("labs", "test"): _labs_test,
}


@pytest.mark.parametrize("family", SIXTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_answers_are_read_from_the_context(family: str, split: str) -> None:
    tasks = _tasks(family, split) + _tasks(family, split, 8, SIZE // 4) + _tasks(family, split, 4, SIZE * 4)
    for task in tasks:
        _check(task, _ANSWER[family, split](task))


def test_the_traps_are_there() -> None:
    df = _county_rows(_tasks("elections", "dev")[0].context)
    assert {"Clay", "Clayton"} <= {
        c for t in _tasks("elections", "dev")[:4] for c in _county_rows(t.context)["county"]
    }
    assert _lookalikes(set(df["candidate"]) - {"Yes", "No"})  # candidates who share a surname
    places = set(df[["county", "precinct"]].itertuples(index=False))
    assert len({p for _, p in places}) < len(places)  # one precinct name in two counties
    city = pd.DataFrame(_tasks("elections", "test")[0].context)
    assert "Write-in" in set(city["choice"]) and _lookalikes(set(city["choice"]) - {"Write-in", "Yes", "No"})
    items = _json_ld(_tasks("recipes", "dev")[0].context)
    ingredients = {n for r in items for n, _, _ in r["lines"]}
    assert {"butter", "butter beans"} <= {
        n for t in _tasks("recipes", "dev") for r in _json_ld(t.context) for n, _, _ in r["lines"]
    }
    assert any(a != b and b.endswith(" " + a) for a in ingredients for b in ingredients)  # onion, red onion
    titles = {r["title"] for r in items}
    assert any(
        a != b and b.endswith(" " + a) for a in titles for b in titles
    )  # Banana Bread, Easy Banana Bread
    notes = "".join(_tasks("recipes", "test")[0].context.values())
    assert "## Notes" in notes and " 1/2 " in notes  # notes that may name other ingredients, fractions
    people, _, _ = _gedcomx(_tasks("genealogy", "dev")[0].context)
    assert len({x["name"] for x in people.values()}) < len(people)  # a name used twice
    text = _tasks("genealogy", "test")[0].context
    surnames = set(re.findall(r"^2 SURN (.+)$", text, re.M))
    assert _lookalikes(
        surnames
        | {s for t in _tasks("genealogy", "test")[:4] for s in re.findall(r"^2 SURN (.+)$", t.context, re.M)}
    )
    hl7 = _hl7(_tasks("labs", "dev")[0].context)
    assert (hl7["attending"] != hl7["ordered_by"]).any() and {"H", "N"} <= set(hl7["flag"])
    assert _lookalikes(set(hl7["name"]))
    statuses = {o["status"] for t in _tasks("labs", "test") for o in _fhir(t.context)[1]}
    assert statuses == {"final", "entered-in-error"}
