"""Questions about election results by precinct: a state's county result files as a dict of file
name to CSV text (``dev``) or a city's results table as a dict of columns (``test``).

What a notebook holds when someone looks at how an election went: every precinct's votes for every
choice in every contest, split by how the votes were cast. Candidates who share a surname stand
beside each other, and so do places (``Clay`` and ``Clayton`` counties, one precinct name in two
counties). Precincts are added until the text (or the indented JSON) is about the length asked for.
Kinds of question:

- ``count``: in how many of one county's precincts one candidate beat every rival (``dev``), or
  in how many precincts a ballot measure got more Yes than No (``test``);
- ``total``: one candidate's votes in one county (``dev``) or one ward (``test``), all ways of
  voting together;
- ``top``: the county where a candidate got the largest share of the contest's votes (``dev``), or
  who came second for mayor in the city or one ward (``test``) (clear gaps);
- ``lookup``: one candidate's absentee votes in one precinct (``dev``), or one candidate's votes of
  one method in one precinct (``test``);
- ``hop``: who won the State House district one precinct lies in (``dev``), or which mayoral
  candidate led in the ward where one council candidate ran (``test``).

Every answer is computed from the results the generator wrote. Score: ``exact`` (numbers as
numbers, names without case).

Splits: ``dev`` is an OpenElections-like general election, one CSV per county
(``county,precinct,office,district,party,candidate,votes`` and the votes by ``election_day``,
``advance_voting``, ``absentee_by_mail`` and ``provisional``; each precinct's ``Registered Voters``
and ``Ballots Cast`` rows among the contests); ``test`` is a city's municipal election as columns
(``ward``, a four-digit ``precinct`` code, ``contest``, ``choice`` with write-ins, ``method`` of
Election Day, Early Voting or Vote by Mail, ``votes``), as ``DataFrame.to_dict("list")`` or a
dataset's ``to_dict()`` gives it: other containers, fields, places, people and wording.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup", "hop")

_DEV_COUNTIES = (
    ("Clay", 1, "2"), ("Clayton", 5, "13"), ("Clarke", 4, "10"), ("Cobb", 6, "11"), ("Coffee", 2, "8"),
    ("Columbia", 4, "12"), ("Cook", 1, "8"), ("Coweta", 3, "3"), ("Crawford", 1, "2"), ("Crisp", 2, "2"),
)  # fmt: skip
_DEV_PRECINCTS = (
    "Antioch", "Bethel", "Cedar Creek", "Central", "Fairview", "Friendship", "Hickory Flat", "Liberty",
    "Macedonia", "Mount Zion", "Mountain View", "New Hope", "Oak Grove", "Pine Ridge", "Pleasant Grove",
    "Red Oak", "Riverside", "Salem", "Shiloh", "Union Hill", "Walnut Grove", "Woodland", "Eastside",
    "Westside", "Courthouse", "Library", "Fire Station 3", "Mill Creek", "Sandy Springs Road", "Beulah",
)  # fmt: skip
_DEV_GIVEN = (
    "Walter", "Dana", "Marcus", "Loretta", "Lorna", "Curtis", "Regina", "Terrence", "Ashley", "Hollis",
    "Gwen", "Gwendolyn", "Ray", "Rayford", "Jolene", "Daniel", "Beth", "Elijah", "Monique", "Nathan",
    "Sheila", "Byron", "Keisha", "Wade", "Priya", "Felix", "Tamika", "Grady", "Leon", "Renee",
)  # fmt: skip
_DEV_SURNAMES = (
    "Greeley", "Whitcomb", "Hale", "Banks", "Odom", "Odum", "Vance", "Pruitt", "McBrayer", "Tatum",
    "Sutter", "Barrow", "Oyelaran", "Cordell", "Crump", "Faircloth", "Yarbrough", "Pettway", "Lowery",
    "Lamb", "Ingram", "Raman", "Ochoa", "Holloway", "Strickland", "Mims", "Pickens", "Rountree",
)  # fmt: skip

_TEST_GIVEN = (
    "Maria", "Mario", "Kevin", "Janelle", "Tomás", "Denise", "Hector", "Lydia", "Omar", "Bianca",
    "Grant", "Rosa", "Rosalind", "Victor", "Naomi", "Elliot", "Yolanda", "Desmond", "Carmen", "Ivan",
)  # fmt: skip
_TEST_SURNAMES = (
    "Santos", "Santoro", "O'Neill", "O'Neil", "Brooks", "Ibarra", "Whitaker", "Nguyen", "Castillo",
    "Haddad", "Fontaine", "Okafor", "Kowalski", "Delgado", "Marsh", "Marshall", "Quintero", "Abbott",
)  # fmt: skip
_TEST_MEASURES = ("Measure K", "Measure L", "Measure R", "Measure T", "Measure W")
_TEST_METHODS = ("Election Day", "Early Voting", "Vote by Mail")
_PARTIES = ("REP", "DEM", "LIB")
_DEV_MODES = ("election_day", "advance_voting", "absentee_by_mail", "provisional")


@dataclass
class Precinct:
    county: str  # the county (dev) or the ward's number as text (test)
    name: str  # the precinct's name (dev) or four-digit code (test)
    district: str  # the State House district (dev) or "" (test)
    registered: int
    ballots: int
    lean: float = 0.5  # the share the second party's candidates tend to get
    modes: tuple[float, ...] = ()  # the share of the votes cast by each way of voting
    # (office, district) -> [(party, choice, votes by mode)]
    results: dict[tuple[str, str], list[tuple[str, str, tuple[int, ...]]]] = field(default_factory=dict)

    def votes(self, contest: tuple[str, str]) -> dict[str, int]:
        return {who: sum(modes) for _, who, modes in self.results.get(contest, [])}


def _names(rng: random.Random, given: tuple, surnames: tuple, n: int) -> list[str]:
    """``n`` distinct full names; one in four shares a surname already drawn."""
    out: list[str] = []
    while len(out) < n:
        family_name = rng.choice([x.rsplit(" ", 1)[1] for x in out]) if out and rng.random() < 0.25 else None
        name = f"{rng.choice(given)} {family_name or rng.choice(surnames)}"
        if name not in out:
            out.append(name)
    return out


def _split(rng: random.Random, votes: int, shares: tuple[float, ...]) -> tuple[int, ...]:
    """A choice's votes by mode, the second mode (advance voting) taking what rounding leaves."""
    parts = [round(votes * s * rng.uniform(0.8, 1.2)) for s in shares]
    parts[1] = 0
    while sum(parts) > votes:
        parts[parts.index(max(parts))] -= 1
    parts[1] = votes - sum(parts)
    return tuple(parts)


def _shares(rng: random.Random, lean: float, n: int) -> list[float]:
    """Vote shares of ``n`` candidates (REP, DEM, then minor ones) for a precinct's lean."""
    minor = [rng.uniform(0.015, 0.05) for _ in range(n - 2)]
    dem = min(0.93, max(0.07, lean + rng.gauss(0, 0.04))) * (1 - sum(minor))
    return [1 - sum(minor) - dem, dem, *minor]


def _dev_precincts(seed: str, n: int) -> list[Precinct]:
    rng = random.Random(f"{seed}/{n}")
    k = min(len(_DEV_COUNTIES), max(3, n // 4))
    counties = sorted(rng.sample(_DEV_COUNTIES, k))
    weights = [w for _, w, _ in counties]
    sizes = [2 + round((n - 2 * k) * w / sum(weights)) for w in weights]
    districts = rng.sample(range(20, 180), sum(1 + s // 6 for s in sizes))
    people = iter(_names(rng, _DEV_GIVEN, _DEV_SURNAMES, 3 + 2 * (k + len(districts))))
    contests = {("Public Service Commissioner", ""): [next(people) for _ in range(3)]}
    for house in dict.fromkeys(house for _, _, house in counties):
        contests["U.S. House", house] = [next(people), next(people)]
    precincts = []
    for (county, _, house), size in zip(counties, sizes, strict=True):
        lean, mine = rng.uniform(0.25, 0.7), [str(districts.pop()) for _ in range(1 + size // 6)]
        names = rng.sample(_DEV_PRECINCTS, min(size, len(_DEV_PRECINCTS)))
        names += [f"{rng.choice(_DEV_PRECINCTS)} {i}" for i in range(2, size - len(names) + 2)]
        for i, name in enumerate(names):
            district = mine[i * len(mine) // len(names)]
            if ("State House", district) not in contests:
                contests["State House", district] = [next(people), next(people)]
            p = _dev_precinct(rng, county, name, district, lean + rng.gauss(0, 0.08))
            for contest in (
                ("Public Service Commissioner", ""),
                ("U.S. House", house),
                ("State House", district),
            ):
                _cast(rng, p, contest, contests[contest], _shares(rng, p.lean, len(contests[contest])))
            yes = rng.uniform(0.38, 0.68)
            _cast(rng, p, ("Constitutional Amendment 1", ""), ["Yes", "No"], [yes, 1 - yes])
            precincts.append(p)
    return precincts


def _dev_precinct(rng: random.Random, county: str, name: str, district: str, lean: float) -> Precinct:
    registered = rng.randint(600, 4200)
    ed, absentee, provisional = rng.uniform(0.25, 0.45), rng.uniform(0.05, 0.15), rng.uniform(0, 0.012)
    modes = (ed, 1 - ed - absentee - provisional, absentee, provisional)
    ballots = round(registered * rng.uniform(0.48, 0.78))
    return Precinct(county, name, district, registered, ballots, lean, modes)


def _cast(
    rng: random.Random, p: Precinct, contest: tuple[str, str], choices: list[str], shares: list
) -> None:
    cast = round(p.ballots * rng.uniform(0.93, 0.99))
    parties = _PARTIES if choices != ["Yes", "No"] else ("", "")
    p.results[contest] = [
        (party, who, _split(rng, round(cast * s), p.modes))
        for party, who, s in zip(parties, choices, shares, strict=False)
    ]


def _test_precincts(seed: str, n: int) -> list[Precinct]:
    rng = random.Random(f"{seed}/{n}")
    wards = min(7, max(2, n // 3))
    people = _names(rng, _TEST_GIVEN, _TEST_SURNAMES, 4 + 3 * wards)
    mayors, council = people[:4], people[4:]
    measure = rng.choice(_TEST_MEASURES)
    appeal = [rng.uniform(0.5, 1.6) for _ in mayors]
    precincts = []
    for i in range(max(n, wards)):
        ward = 1 + i % wards
        ward_appeal = [a * rng.uniform(0.6, 1.5) for a in appeal]
        modes = (rng.uniform(0.3, 0.55), rng.uniform(0.15, 0.3), rng.uniform(0.2, 0.4))
        p = Precinct(str(ward), f"{ward:02d}{1 + i // wards:02d}", "", 0, rng.randint(250, 1900), 0.5, modes)
        total = sum(ward_appeal)
        _test_cast(rng, p, "Mayor", [*mayors, "Write-in"], [0.985 * a / total for a in ward_appeal] + [0.015])
        mine = council[3 * (ward - 1) : 3 * ward][: 2 + ward % 2]
        weights = [rng.uniform(0.6, 1.4) for _ in mine]
        _test_cast(rng, p, f"City Council Ward {ward}", mine, [w / sum(weights) for w in weights])
        yes = rng.uniform(0.35, 0.68)
        _test_cast(rng, p, measure, ["Yes", "No"], [yes, 1 - yes])
        precincts.append(p)
    precincts.sort(key=lambda p: p.name)
    return precincts


def _test_cast(rng: random.Random, p: Precinct, contest: str, choices: list[str], shares: list) -> None:
    cast = round(p.ballots * rng.uniform(0.9, 0.98))
    norm = sum(p.modes)
    p.results[(contest, "")] = [
        ("", who, tuple(round(cast * s * m / norm * rng.uniform(0.85, 1.15)) for m in p.modes))
        for who, s in zip(choices, shares, strict=True)
    ]


# -- the files ----------------------------------------------------------------------------------

_DEV_HEADER = "county,precinct,office,district,party,candidate,votes," + ",".join(_DEV_MODES)


def _csv_field(text: str) -> str:
    return f'"{text}"' if "," in text else text


def _county_files(precincts: list[Precinct]) -> dict[str, str]:
    files: dict[str, list[str]] = {}
    for p in precincts:
        rows = files.setdefault(p.county, [_DEV_HEADER])
        where = f"{p.county},{_csv_field(p.name)}"
        rows.append(f"{where},Registered Voters,,,,{p.registered},,,,")
        rows.append(f"{where},Ballots Cast,,,,{p.ballots},,,,")
        for (office, district), choices in p.results.items():
            for party, who, modes in choices:
                rows.append(
                    f"{where},{office},{district},{party},{who},{sum(modes)},{','.join(map(str, modes))}"
                )
    return {
        f"20241105__ga__general__{county.lower()}__precinct.csv": "\n".join(rows) + "\n"
        for county, rows in files.items()
    }


def _columns(precincts: list[Precinct]) -> dict[str, list]:
    out: dict[str, list] = {k: [] for k in ("ward", "precinct", "contest", "choice", "method", "votes")}
    for p in precincts:
        for (contest, _), choices in p.results.items():
            for _, who, modes in choices:
                for method, votes in zip(_TEST_METHODS, modes, strict=True):
                    for key, value in zip(
                        out, (int(p.county), p.name, contest, who, method, votes), strict=True
                    ):
                        out[key].append(value)
    return out


def _fit(split: str, seed: str, chars: int) -> tuple[list[Precinct], object]:
    per = 1150 if split == "dev" else 3600
    n = max(6 if split == "dev" else 2, chars // per)
    for _ in range(6):
        precincts = _dev_precincts(seed, n) if split == "dev" else _test_precincts(seed, n)
        context = _county_files(precincts) if split == "dev" else _columns(precincts)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(6 if split == "dev" else 2, round(n * chars / size))
    return precincts, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _contest_of(p: Precinct, who: str) -> tuple[str, str]:
    return next(c for c, choices in p.results.items() if any(x == who for _, x, _ in choices))


def _pick(rng: random.Random, precincts: list[Precinct]) -> tuple[Precinct, str]:
    p = rng.choice(precincts)
    choices = [who for c, rows in p.results.items() for _, who, _ in rows if who not in ("Yes", "No")]
    return p, rng.choice([w for w in choices if w != "Write-in"])


def _clear(counts: Counter, places: int = 1) -> list | None:
    """The ``places`` first of a ranking, or None where two of the first ``places + 1`` tie."""
    ranked = counts.most_common(places + 1)
    if len(ranked) <= places or len({v for _, v in ranked}) < len(ranked):
        return None
    return [k for k, _ in ranked[:places]]


def _ask_count(split: str, rng: random.Random, precincts: list[Precinct]) -> _Asked:
    if split == "test":
        measure = next(c for c in precincts[0].results if c[0].startswith("Measure"))
        n = sum(p.votes(measure)["Yes"] > p.votes(measure)["No"] for p in precincts)
        q = f"Count the precincts in which {measure[0]} got more Yes votes than No votes."
        return q, n, {"measure": measure[0]}
    p, who = _pick(rng, precincts)
    contest = _contest_of(p, who)
    n = 0
    for x in precincts:
        votes = x.votes(contest)
        if x.county == p.county and who in votes:
            n += all(votes[who] > v for w, v in votes.items() if w != who)
    q = (
        f"In how many of {p.county} County's precincts did {who} get more votes than any other candidate "
        f"in the {contest[0]} race?"
    )
    return q, n, {"county": p.county, "candidate": who, "office": contest[0]}


def _ask_total(split: str, rng: random.Random, precincts: list[Precinct]) -> _Asked:
    p, who = _pick(rng, precincts)
    n = sum(x.votes(_contest_of(p, who)).get(who, 0) for x in precincts if x.county == p.county)
    if split == "dev":
        q = f"How many votes did {who} receive in {p.county} County in all?"
        return q, n, {"county": p.county, "candidate": who}
    q = f"Give the total number of votes cast for {who} in Ward {p.county}, every voting method together."
    return q, n, {"ward": int(p.county), "candidate": who}


def _ask_top(split: str, rng: random.Random, precincts: list[Precinct]) -> _Asked:
    if split == "test":
        ward = rng.choice([None, rng.choice(precincts).county])
        votes: Counter = Counter()
        for p in precincts:
            if ward in (None, p.county):
                votes.update(p.votes(("Mayor", "")))
        ranked = _clear(votes, 2)
        if ranked is None:
            return None
        where = "citywide" if ward is None else f"in Ward {ward}"
        q = f"Which candidate finished second in the race for Mayor, {where}?"
        return q, ranked[1], {"ward": None if ward is None else int(ward)}
    p = rng.choice(precincts)
    contest = rng.choice([c for c in p.results if c[0] in ("Public Service Commissioner", "U.S. House")])
    who = rng.choice(p.results[contest])[1]
    got, cast = Counter(), Counter()
    for x in precincts:
        votes = x.votes(contest)
        if who in votes:
            got[x.county] += votes[who]
            cast[x.county] += sum(votes.values())
    share = Counter({c: got[c] / cast[c] for c in got})
    (first, a), (_, b) = [*share.most_common(2), (None, 0.0)][:2]
    if len(share) < 2 or a - b < 0.002:
        return None
    q = (
        f"In which county did {who} get the largest share of the {contest[0]} votes, counting the share "
        "of all candidates' votes in that race there? Give the county as the county column names it."
    )
    return q, first, {"candidate": who, "office": contest[0]}


def _ask_lookup(split: str, rng: random.Random, precincts: list[Precinct]) -> _Asked:
    p, who = _pick(rng, precincts)
    modes = next(m for rows in p.results.values() for _, w, m in rows if w == who)
    if split == "dev":
        q = f"How many absentee-by-mail votes did {who} get in the {p.name} precinct of {p.county} County?"
        return q, modes[2], {"county": p.county, "precinct": p.name, "candidate": who}
    i = rng.randrange(len(_TEST_METHODS))
    q = f"Report the {_TEST_METHODS[i]} votes for {who} in precinct {p.name}."
    return q, modes[i], {"precinct": p.name, "candidate": who, "method": _TEST_METHODS[i]}


def _ask_hop(split: str, rng: random.Random, precincts: list[Precinct]) -> _Asked:
    p = rng.choice(precincts)
    votes: Counter = Counter()
    if split == "dev":
        contest = ("State House", p.district)
        for x in precincts:
            votes.update(x.votes(contest))
        ranked = _clear(votes)
        q = (
            f"Who won the State House race in the district that the {p.name} precinct of {p.county} "
            "County votes in?"
        )
        return None if ranked is None else (q, ranked[0], {"county": p.county, "precinct": p.name})
    council = f"City Council Ward {p.county}"
    who = rng.choice(p.results[(council, "")])[1]
    for x in precincts:
        if (council, "") in x.results:
            votes.update(x.votes(("Mayor", "")))
    ranked = _clear(votes)
    q = f"In the ward where {who} ran for City Council, which mayoral candidate got the most votes?"
    return None if ranked is None else (q, ranked[0], {"candidate": who})


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup, "hop": _ask_hop}


@family(
    "elections",
    "election results by precinct: county CSV files as a dict of file name to text (dev) or a city's "
    "results as a dict of columns (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    precincts, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    # other counties, wards, precincts and candidates, then one candidate's total, never zero
    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, precincts), kind, "total", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict of strings (file name -> CSV text)"
        if ref.split == "dev"
        else "dict of columns (lists)",
        precincts=len(precincts),
    )
