"""Questions about sports fixtures and results: a football results CSV as one string (``dev``) or a
basketball league's schedule API as a nested dict (``test``).

What a notebook holds when someone follows a league: every match played so far with its date, the
two sides and the score, plus what the source adds (referee, shots and cards in ``dev``; arenas,
attendances and quarter scores in ``test``). Team names that extend another's stand beside each
other (``Ashford`` and ``Ashford Town``). Matches are added round by round until the text (or the
indented JSON) is about the length asked for. Kinds of question:

- ``points``: a team's league points, three for a win and one for a draw (``dev``), or how many
  games a team won (``test``, the team named by its full name, its games under its code);
- ``scored``: the goals a team scored at home in one month (``dev``) or the points a team scored
  in its away games in one month (``test``);
- ``leader``: the team of one division with the most home wins (``dev``) or of one conference with
  the most wins (``test``) (a clear leader);
- ``lookup``: who refereed one fixture (``dev``) or one game's attendance (``test``).

Every answer is computed from the matches the generator wrote. Score: ``exact`` (numbers as
numbers, names without case).

Splits: ``dev`` is a football-data-like CSV of several English-style divisions (``Div``, ``Date``
as ``dd/mm/yyyy``, ``HomeTeam``, ``AwayTeam``, ``FTHG``, ``FTAG``, ``FTR``, half-time goals,
``Referee``, shots, corners and cards), oldest first; ``test`` is a basketball league's JSON (teams
keyed by a three-letter code with their conference, games with ``gameId``, a local ``tipoff``,
``home`` and ``away`` sides by code with their points by quarter and in all, ``arena`` and
``attendance``), newest first: other containers, fields, sport and wording.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("points", "scored", "leader", "lookup")

_DEV_DIVISIONS = {
    "E1": (
        "Ashford", "Ashford Town", "Bramley Rovers", "Castleford Athletic", "Dunmore", "Dunmore United",
        "Eastwick City", "Felling Park", "Grantham Vale", "Harrowgate", "Harrowgate Borough",
        "Ivesley Wanderers", "Kettering Heath", "Longridge", "Marsden Albion", "Norbury Forest",
        "Oakham Villa", "Penrith Lane", "Queensbury", "Redcliffe Orient",
    ),
    "E2": (
        "Ambleside", "Barnsworth", "Barnsworth Rangers", "Colebrook", "Colebrook Town", "Denholme",
        "Elmstead Athletic", "Frampton", "Gillingford", "Hexley United", "Ilkley Moor",
        "Kingsbridge", "Kingsbridge City", "Lindow", "Mablethorpe", "Netherton Park",
        "Ormskirk Rovers", "Pelsall", "Ravensworth", "Stainby",
    ),
    "E3": (
        "Aldwick", "Brayton", "Brayton Albion", "Crosshill", "Drayford", "Edgerley", "Fenwick",
        "Fenwick Borough", "Glossop Vale", "Holmfield", "Irthing", "Kelsall Town", "Larkhill",
        "Midhurst", "Newholme", "Otterby", "Pickmere", "Rushden Park", "Silverdale", "Thornaby Heath",
    ),
    "E4": (
        "Alnmouth", "Bexwell", "Charnley", "Charnley Athletic", "Deepdale", "Egremont",
        "Farnworth", "Goldthorpe", "Goldthorpe United", "Hartwell", "Ingleby", "Kilnsea",
        "Ludford", "Moorside", "Nantwell", "Oxenhope", "Padiham Town", "Ripley", "Sedbury", "Tadley",
    ),
}  # fmt: skip
_REFEREES = (
    "M Dean", "M Deane", "A Taylor", "A Taylors", "C Kavanagh", "P Tierney", "S Attwell", "J Gillett",
    "R Jones", "R Johns", "D Coote", "T Robinson", "G Scott", "S Hooper", "J Brooks", "D England",
    "L Smith", "K Stroud", "O Langford", "T Harrington",
)  # fmt: skip

_TEST_TEAMS = (
    ("BAY", "Bayside Mariners", "East", "Harbor Center"),
    ("BAL", "Bayside Lightning", "East", "Lightning Dome"),
    ("CRK", "Cedar Creek Foxes", "East", "Foxhole Arena"),
    ("DLT", "Delta City Herons", "East", "Heron Hall"),
    ("EVG", "Evergreen Pioneers", "East", "Pioneer Court"),
    ("FRP", "Fairport Anchors", "East", "Dockside Pavilion"),
    ("GLN", "Glenmont Wolves", "East", "Timber Arena"),
    ("HLD", "Highland Stags", "East", "Crest Fieldhouse"),
    ("IRN", "Ironwood Miners", "West", "Shaft Center"), ("JSP", "Jasper Falcons", "West", "Skyline Arena"),
    ("KST", "Keystone Titans", "West", "Titan Coliseum"),
    ("KSR", "Keystone Rockets", "West", "Launchpad Center"),
    ("LKS", "Lakeshore Otters", "West", "Otter Bay Arena"),
    ("MSA", "Mesa Scorpions", "West", "Desert Dome"), ("NRT", "Northgate Ravens", "West", "Raven Hall"),
    ("PLM", "Palm Valley Suns", "West", "Sunbowl Arena"),
)  # fmt: skip


@dataclass
class Match:
    id: str
    group: str  # division (dev) or "" (test)
    when: datetime
    home: str
    away: str
    hg: int  # goals or points
    ag: int
    referee: str = ""
    attendance: int = 0
    extra: dict = field(default_factory=dict)


def _round_robin(teams: list[str]) -> list[list[tuple[str, str]]]:
    """Every team meets every other twice, once at home: a list of rounds of pairings."""
    n = len(teams)
    order = teams[:]
    rounds = []
    for r in range(n - 1):
        pairs = [(order[i], order[n - 1 - i]) for i in range(n // 2)]
        rounds.append([(a, b) if (r + i) % 2 else (b, a) for i, (a, b) in enumerate(pairs)])
        order = [order[0], order[-1], *order[1:-1]]
    return rounds + [[(b, a) for a, b in rnd] for rnd in rounds]


def _goals(rng: random.Random, strength: float) -> int:
    return min(7, max(0, int(rng.expovariate(1.0 / strength))))


def _dev_matches(seed: str, n: int) -> list[Match]:
    rng = random.Random(f"{seed}/{n}")
    strength = {t: rng.uniform(0.6, 2.0) for teams in _DEV_DIVISIONS.values() for t in teams}
    schedules = {
        div: _round_robin(rng.sample(list(teams), len(teams))) for div, teams in _DEV_DIVISIONS.items()
    }
    matches: list[Match] = []
    for season in range(2022, 2040):  # long files hold several seasons, August to May
        day = date(season, 8, 6) + timedelta(days=(5 - date(season, 8, 6).weekday()) % 7)
        for r in range(38):
            for div, rounds in schedules.items():
                for home, away in rounds[r]:
                    when = datetime.combine(
                        day + timedelta(days=rng.choice((0, 0, 0, 1, 3))), datetime.min.time()
                    )
                    when = when.replace(hour=rng.choice((12, 15, 15, 15, 17, 19)), minute=rng.choice((0, 30)))
                    hg, ag = _goals(rng, strength[home] * 1.15), _goals(rng, strength[away])
                    hs, as_ = hg + rng.randint(4, 14), ag + rng.randint(2, 11)
                    extra = {
                        "HTHG": rng.randint(0, hg), "HTAG": rng.randint(0, ag), "HS": hs, "AS": as_,
                        "HST": hg + rng.randint(0, hs - hg), "AST": ag + rng.randint(0, as_ - ag),
                        "HC": rng.randint(0, 11), "AC": rng.randint(0, 9), "HY": rng.randint(0, 5),
                        "AY": rng.randint(0, 5), "HR": int(rng.random() < 0.06),
                        "AR": int(rng.random() < 0.07),
                        "season": f"{season}/{(season + 1) % 100:02d}",
                    }  # fmt: skip
                    matches.append(Match("", div, when, home, away, hg, ag, rng.choice(_REFEREES), 0, extra))
            day += timedelta(days=7 if r != 18 else 21)  # a winter break
            if len(matches) >= n:
                break
        if len(matches) >= n:
            break
    matches.sort(key=lambda m: (m.when, m.group, m.home))
    return matches[:n]


def _test_matches(seed: str, n: int) -> list[Match]:
    rng = random.Random(f"{seed}/{n}")
    codes = [t[0] for t in _TEST_TEAMS]
    arena = {t[0]: t[3] for t in _TEST_TEAMS}
    strength = {c: rng.uniform(96, 118) for c in codes}
    rounds = _round_robin(rng.sample(codes, len(codes)))
    rounds = rounds + [[(b, a) for a, b in rnd] for rnd in rounds]  # four meetings a season
    rounds = rounds * 4  # long files: the season goes on (and a new one after it)
    matches: list[Match] = []
    day = date(2024, 10, 22)
    number = 0
    for rnd in rounds:
        for home, away in rnd:
            number += 1
            when = datetime.combine(day + timedelta(days=rng.randint(0, 2)), datetime.min.time())
            when = when.replace(hour=rng.choice((19, 19, 19, 20, 20, 21)), minute=rng.choice((0, 0, 30)))
            quarters = []
            while len(quarters) < 4 or sum(x for x, _ in quarters) == sum(y for _, y in quarters):
                q = 4 if len(quarters) < 4 else 1.6  # overtime is shorter
                low = 8 if q == 4 else 2
                hq = max(low, round(rng.gauss(strength[home] / q + 0.6, 6 / q)))
                quarters.append([hq, max(low, round(rng.gauss(strength[away] / q, 6 / q)))])
            hg, ag = sum(x for x, _ in quarters), sum(y for _, y in quarters)
            game = f"00224{number:05d}"
            extra = {"quarters": quarters, "arena": arena[home]}
            matches.append(Match(game, "", when, home, away, hg, ag, "", rng.randint(11000, 20500), extra))
            if len(matches) >= n:
                break
        day += timedelta(days=3)
        if len(matches) >= n:
            break
    matches.sort(key=lambda m: (m.when, m.id))
    return matches


# -- the files ----------------------------------------------------------------------------------

_COLUMNS = (
    "Div,Date,Time,HomeTeam,AwayTeam,FTHG,FTAG,FTR,HTHG,HTAG,HTR,Referee,HS,AS,HST,AST,HC,AC,HY,AY,HR,AR"
)


def _result(a: int, b: int) -> str:
    return "H" if a > b else "A" if a < b else "D"


def _csv(matches: list[Match]) -> str:
    out = [_COLUMNS]
    for m in matches:
        e = m.extra
        out.append(
            f"{m.group},{m.when:%d/%m/%Y},{m.when:%H:%M},{m.home},{m.away},{m.hg},{m.ag},"
            f"{_result(m.hg, m.ag)},"
            f"{e['HTHG']},{e['HTAG']},{_result(e['HTHG'], e['HTAG'])},{m.referee},{e['HS']},{e['AS']},"
            f"{e['HST']},{e['AST']},{e['HC']},{e['AC']},{e['HY']},{e['AY']},{e['HR']},{e['AR']}"
        )
    return "\n".join(out) + "\n"


def _league(matches: list[Match]) -> dict:
    def side(code: str, points: int, quarters: list[int]) -> dict:
        return {"teamCode": code, "score": points, "periods": quarters}

    games = [
        {
            "gameId": m.id,
            "tipoff": f"{m.when:%Y-%m-%dT%H:%M}",
            "status": "Final" if len(m.extra["quarters"]) == 4 else f"Final/OT{len(m.extra['quarters']) - 4}",
            "home": side(m.home, m.hg, [q[0] for q in m.extra["quarters"]]),
            "away": side(m.away, m.ag, [q[1] for q in m.extra["quarters"]]),
            "arena": m.extra["arena"],
            "attendance": m.attendance,
        }
        for m in reversed(matches)
    ]
    teams = {
        code: {"fullName": name, "conference": conf, "homeArena": hall}
        for code, name, conf, hall in _TEST_TEAMS
    }
    return {
        "league": {"title": "Continental Basketball League", "season": "2024-25"},
        "teams": teams,
        "games": games,
    }


def _fit(split: str, seed: str, chars: int) -> tuple[list[Match], object]:
    per = 78 if split == "dev" else 330
    n = max(12, chars // per)
    for _ in range(6):
        matches = _dev_matches(seed, n) if split == "dev" else _test_matches(seed, n)
        context = _csv(matches) if split == "dev" else _league(matches)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars or len(matches) < n:
            break
        n = max(12, round(n * chars / size))
    return matches, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None
_NAMES = {code: name for code, name, *_ in _TEST_TEAMS}
_CONFERENCE = {code: conf for code, _, conf, _ in _TEST_TEAMS}


def _ask_points(split: str, rng: random.Random, matches: list[Match]) -> _Asked:
    m = rng.choice(matches)
    team = rng.choice((m.home, m.away))
    if split == "dev":
        n, season = 0, m.extra["season"]
        for x in matches:
            if team in (x.home, x.away) and x.extra["season"] == season:
                mine, theirs = (x.hg, x.ag) if x.home == team else (x.ag, x.hg)
                n += 3 if mine > theirs else 1 if mine == theirs else 0
        q = f"How many league points (3 for a win, 1 for a draw) did {team} collect in the {season} season?"
        return q, n, {"team": team, "season": season}
    n = sum((x.home == team and x.hg > x.ag) or (x.away == team and x.ag > x.hg) for x in matches)
    q = f"Across every game in the feed, count the wins of the {_NAMES[team]}."
    return q, n, {"team": _NAMES[team]}


def _ask_scored(split: str, rng: random.Random, matches: list[Match]) -> _Asked:
    m = rng.choice(matches)
    month = f"{m.when:%Y-%m}"
    if split == "dev":
        n = sum(x.hg for x in matches if x.home == m.home and f"{x.when:%Y-%m}" == month)
        q = f"How many goals did {m.home} score in their home matches in {m.when:%B %Y}?"
        return q, n, {"team": m.home, "month": month}
    n = sum(x.ag for x in matches if x.away == m.away and f"{x.when:%Y-%m}" == month)
    q = (
        f"What is the total number of points the {_NAMES[m.away]} scored on the road (away games) "
        f"in {m.when:%B %Y}?"
    )
    return q, n, {"team": _NAMES[m.away], "month": month}


def _ask_leader(split: str, rng: random.Random, matches: list[Match]) -> _Asked:
    if split == "dev":
        m = rng.choice(matches)
        div, season = m.group, m.extra["season"]
        counts = Counter(
            x.home for x in matches if x.group == div and x.extra["season"] == season and x.hg > x.ag
        )
    else:
        conf = rng.choice(("East", "West"))
        counts = Counter(
            m.home if m.hg > m.ag else m.away
            for m in matches
            if _CONFERENCE[m.home if m.hg > m.ag else m.away] == conf
        )
    ranked = counts.most_common(2)
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    if split == "dev":
        q = f"Which team in division {div} won the most matches at home in the {season} season?"
        return q, ranked[0][0], {"division": div, "season": season}
    q = f"Give the full name of the {conf}ern Conference team with the most wins so far."
    return q, _NAMES[ranked[0][0]], {"conference": conf}


def _ask_lookup(split: str, rng: random.Random, matches: list[Match]) -> _Asked:
    m = rng.choice(matches)
    if split == "dev":
        q = f"Who refereed {m.home} v {m.away} ({m.group}, {m.when:%d %B %Y})?"
        return q, m.referee, {"home": m.home, "away": m.away, "date": f"{m.when:%Y-%m-%d}"}
    q = f"Game {m.id}: what was the attendance?"
    return q, m.attendance, {"gameId": m.id}


_ASK = {"points": _ask_points, "scored": _ask_scored, "leader": _ask_leader, "lookup": _ask_lookup}


@family(
    "fixtures",
    "sports fixtures and results: a football results CSV as a string (dev) or a league's games as a "
    "nested dict (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    matches, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    # other teams, months and divisions, then one fixture's referee or attendance, always there
    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, matches), kind, "lookup", nonzero=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (CSV)" if ref.split == "dev" else "dict (nested JSON)",
        matches=len(matches),
    )
