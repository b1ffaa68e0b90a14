"""Questions about bird observations: a birder's checklists as the checklist service mails them, a
dict of file name to text (``dev``), or the service's API's observations of a region over a few
days as a list of dicts (``test``).

What a notebook holds when someone sums up a season of birding: checklists, each at a place on a
date with a protocol, a duration (none for incidental sightings) and a count for each species seen,
or an ``X`` where it was only noted as present; species comments carry numbers of their own.
Species whose names share words stand beside each other (``Downy Woodpecker``, ``Hairy
Woodpecker`` and ``Downy/Hairy Woodpecker``), and so do places (a park and its sub-areas, written
``Park--Area``). Checklists are added day by day until the text (or the indented JSON) is about
the length asked for. Kinds of question:

- ``count``: the checklists that report one species (``dev``), or one county's checklists that do
  (``test``);
- ``total``: the birds of one species counted at one place (``dev``) or on one day (``test``),
  present-only reports adding nothing;
- ``top``: the place with the most checklists (``dev``), or the species with the most birds counted
  (``test``) (a clear leader);
- ``lookup``: how many minutes one checklist lasted (``dev``), or one species' count on one
  checklist (``test``).

Every answer is computed from the checklists the generator wrote. Score: ``exact``.

Splits: ``dev`` is ``{"checklists/S<id>.txt": text}``, each text the place with county, state and
country, the date and start time, ``Protocol:``, the distance in ``mile(s)``, the duration in
``Minute(s)``, ``Checklist Comments:``, the number of species (and of other taxa, such as ``crow
sp.``), one ``Name  count`` line a taxon with indented comments, and the checklist's link;
``test`` is observation records (``speciesCode``, ``comName``, ``sciName``, ``locId``,
``locName``, ``obsDt``, ``howMany`` left out where only present, ``lat``, ``lng``, ``obsValid``,
``obsReviewed``, ``locationPrivate``, ``subId``, ``subnational2Name``, ``userDisplayName``,
``obsId``, ``presenceNoted``, ``hasRichMedia``): other containers, fields, places, species and
wording.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_DEV_SPECIES = (  # common name, how common, a usual flock
    ("Canada Goose", 0.8, 30), ("Brant", 0.3, 120), ("Mallard", 0.8, 12), ("American Black Duck", 0.3, 6),
    ("Mourning Dove", 0.7, 6), ("Rock Pigeon", 0.6, 20), ("Downy Woodpecker", 0.6, 2),
    ("Hairy Woodpecker", 0.3, 1), ("Downy/Hairy Woodpecker", 0.1, 1), ("Northern Flicker", 0.4, 2),
    ("Blue Jay", 0.7, 4), ("American Crow", 0.6, 5), ("Fish Crow", 0.3, 3), ("crow sp.", 0.1, 2),
    ("Black-capped Chickadee", 0.5, 4), ("Tufted Titmouse", 0.5, 3), ("American Robin", 0.9, 14),
    ("Gray Catbird", 0.6, 5), ("Northern Mockingbird", 0.5, 2), ("European Starling", 0.7, 25),
    ("House Sparrow", 0.6, 18), ("Song Sparrow", 0.6, 5), ("Swamp Sparrow", 0.3, 2),
    ("White-throated Sparrow", 0.5, 12), ("Red-winged Blackbird", 0.6, 20), ("Common Grackle", 0.6, 15),
    ("Northern Cardinal", 0.8, 5), ("Yellow Warbler", 0.4, 3), ("Yellow-rumped Warbler", 0.5, 10),
    ("Palm Warbler", 0.3, 4), ("Great Egret", 0.4, 4), ("Snowy Egret", 0.3, 5), ("Great Blue Heron", 0.4, 2),
    ("Herring Gull", 0.6, 20), ("Great Black-backed Gull", 0.4, 4), ("Laughing Gull", 0.4, 15),
    ("Greater Yellowlegs", 0.3, 4), ("Lesser Yellowlegs", 0.2, 3), ("Osprey", 0.5, 2),
    ("Red-tailed Hawk", 0.4, 1),
)  # fmt: skip
_DEV_PLACES = (  # hotspot, county, how far walked (miles)
    ("Jamaica Bay Wildlife Refuge", "Queens", 2.1),
    ("Jamaica Bay Wildlife Refuge--East Pond", "Queens", 1.2),
    ("Central Park--The Ramble", "New York", 1.0),
    ("Central Park--Reservoir", "New York", 1.6),
    ("Prospect Park", "Kings", 2.4),
    ("Prospect Park--Lookout Hill", "Kings", 0.6),
    ("Pelham Bay Park", "Bronx", 2.8),
)
_TEST_SPECIES = (  # common name, scientific name, code, how common, a usual flock
    ("California Scrub-Jay", "Aphelocoma californica", "cowscj1", 0.8, 3),
    ("Steller's Jay", "Cyanocitta stelleri", "stejay", 0.4, 2),
    ("Anna's Hummingbird", "Calypte anna", "annhum", 0.8, 3),
    ("Allen's Hummingbird", "Selasphorus sasin", "allhum", 0.4, 2),
    ("Rufous/Allen's Hummingbird", "Selasphorus rufus/sasin", "y00478", 0.1, 1),
    ("Western Gull", "Larus occidentalis", "wesgul", 0.6, 25),
    ("California Gull", "Larus californicus", "calgul", 0.3, 12),
    ("Black Phoebe", "Sayornis nigricans", "blkpho", 0.7, 2),
    ("Say's Phoebe", "Sayornis saya", "saypho", 0.2, 1),
    ("White-crowned Sparrow", "Zonotrichia leucophrys", "whcspa", 0.8, 10),
    ("Golden-crowned Sparrow", "Zonotrichia atricapilla", "gocspa", 0.5, 8),
    ("Song Sparrow", "Melospiza melodia", "sonspa", 0.6, 4),
    ("California Towhee", "Melozone crissalis", "caltow", 0.6, 2),
    ("Spotted Towhee", "Pipilo maculatus", "spotow", 0.5, 2),
    ("Dark-eyed Junco", "Junco hyemalis", "daejun", 0.6, 8),
    ("American Crow", "Corvus brachyrhynchos", "amecro", 0.7, 6),
    ("Common Raven", "Corvus corax", "comrav", 0.5, 2),
    ("Brown Pelican", "Pelecanus occidentalis", "brnpel", 0.4, 15),
    ("Double-crested Cormorant", "Nannopterum auritum", "doccor", 0.5, 8),
    ("Brandt's Cormorant", "Urile penicillatus", "bracor", 0.3, 12),
    ("Snowy Egret", "Egretta thula", "snoegr", 0.4, 3),
    ("Great Egret", "Ardea alba", "greegr", 0.5, 3),
    ("Mallard", "Anas platyrhynchos", "mallar3", 0.6, 10),
    ("Acorn Woodpecker", "Melanerpes formicivorus", "acowoo", 0.4, 4),
    ("Nuttall's Woodpecker", "Dryobates nuttallii", "nutwoo", 0.4, 1),
    ("Oak Titmouse", "Baeolophus inornatus", "oaktit", 0.4, 2),
    ("Bushtit", "Psaltriparus minimus", "bushti", 0.6, 14),
    ("Chestnut-backed Chickadee", "Poecile rufescens", "chbchi", 0.5, 4),
    ("House Finch", "Haemorhous mexicanus", "houfin", 0.7, 9),
    ("Lesser Goldfinch", "Spinus psaltria", "lesgol", 0.5, 6),
    ("American Goldfinch", "Spinus tristis", "amegfi", 0.3, 5),
    ("Red-tailed Hawk", "Buteo jamaicensis", "rethaw", 0.5, 1),
    ("Red-shouldered Hawk", "Buteo lineatus", "reshaw", 0.4, 1),
    ("Turkey Vulture", "Cathartes aura", "turvul", 0.5, 4),
)
_TEST_PLACES = (  # location, id, county, lat, lng
    ("Point Reyes NS--Abbotts Lagoon", "L270571", "Marin", 38.1247, -122.9553),
    ("Point Reyes NS--Drakes Beach", "L270572", "Marin", 38.0290, -122.9624),
    ("Las Gallinas Valley Sanitary District Ponds", "L208926", "Marin", 38.0293, -122.5092),
    ("Golden Gate Park--Lloyd Lake", "L445018", "San Francisco", 37.7710, -122.4768),
    ("Golden Gate Park--Stow Lake", "L445021", "San Francisco", 37.7686, -122.4752),
    ("Lake Merced", "L162735", "San Francisco", 37.7223, -122.4918),
    ("Palo Alto Baylands", "L129011", "Santa Clara", 37.4561, -122.1058),
    ("Shoreline Lake and Park", "L129040", "Santa Clara", 37.4305, -122.0862),
    ("Bodega Head", "L197438", "Sonoma", 38.3034, -123.0653),
)
_OBSERVERS = ("Sam Lee", "Sam Li", "Maria Gonzalez", "María González", "Dan Whitaker", "Priya Raman",
              "Jordan Ellis", "Jordan Ellison")  # fmt: skip
_COMMENTS = ("seen flying over", "heard only", "pair, 1 carrying nesting material",
             "flock of 40 passed earlier, not counted", "2 adults, 3 juveniles",
             "continuing bird")  # fmt: skip
_REMARKS = ("Windy, overcast.", "Light rain early, then clearing.",
            "Calm and sunny; 12 birders on the trail.", "High tide around 9.",
            "Dog walkers everywhere.")  # fmt: skip


@dataclass
class Checklist:
    id: str
    place: int
    start: datetime
    protocol: str  # Traveling, Stationary, Incidental
    minutes: int | None
    observer: int
    counts: dict[int, int | None] = field(default_factory=dict)  # species -> count, None for X
    notes: dict[int, str] = field(default_factory=dict)
    comment: str = ""


def _checklists(split: str, seed: str, n: int) -> list[Checklist]:
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    species = _DEV_SPECIES if dev else _TEST_SPECIES
    places = _DEV_PLACES if dev else _TEST_PLACES
    place_weight = [rng.uniform(0.3, 2.0) for _ in places]
    observer_weight = [rng.uniform(0.3, 2.0) for _ in _OBSERVERS]
    day = datetime(2024, 4, 6) if dev else datetime(2024, 12, 14)
    per_day = max(1, round(n / 40)) if dev else max(3, round(n / 5))  # dev: a season; test: a few days
    number = rng.randrange(160_000_000, 190_000_000)
    out: list[Checklist] = []
    while len(out) < n:
        if len(out) % per_day == 0:
            day += timedelta(days=rng.randint(1, 3) if dev else 1)
        number += rng.randint(1, 40_000)
        place = rng.choices(range(len(places)), place_weight)[0]
        start = day.replace(hour=rng.randint(6, 16), minute=rng.randrange(60))
        protocol = rng.choices(("Traveling", "Stationary", "Incidental"), (6, 2, 1))[0]
        minutes = None if protocol == "Incidental" else rng.randrange(15, 240, 5)
        observer = rng.choices(range(len(_OBSERVERS)), observer_weight)[0]
        c = Checklist(f"S{number}", place, start, protocol, minutes, observer)
        effort = 0.2 if minutes is None else min(1.0, 0.35 + minutes / 200) * (1 if dev else 0.45)
        for k, (*_, common, flock) in enumerate(species):
            if rng.random() < common * effort:
                c.counts[k] = None if rng.random() < 0.07 else max(1, round(rng.expovariate(1 / flock)))
                if rng.random() < 0.06:
                    c.notes[k] = rng.choice(_COMMENTS)
        if not c.counts:
            c.counts[rng.randrange(len(species))] = 1
        if rng.random() < 0.3:
            c.comment = rng.choice(_REMARKS)
        out.append(c)
    return out


# -- the files ----------------------------------------------------------------------------------


def _time(t: datetime) -> str:
    return f"{(t.hour - 1) % 12 + 1}:{t.minute:02d} {'AM' if t.hour < 12 else 'PM'}"


def _summary(c: Checklist) -> str:
    place, county, miles = _DEV_PLACES[c.place]
    lines = [f"{place}, {county}, New York, US", f"{c.start:%b} {c.start.day}, {c.start:%Y} {_time(c.start)}"]
    lines.append(f"Protocol: {c.protocol}")
    if c.protocol == "Traveling":
        lines.append(f"{round(miles * (0.6 + (c.minutes or 0) / 200), 2)} mile(s)")
    if c.minutes is not None:
        lines.append(f"{c.minutes} Minute(s)")
    if c.comment:
        lines.append(f"Checklist Comments:     {c.comment}")
    other = sum("/" in _DEV_SPECIES[k][0] or " sp." in _DEV_SPECIES[k][0] for k in c.counts)  # not species
    lines += [f"{len(c.counts) - other} species" + (f" (+{other} other taxa)" if other else ""), ""]
    for k, count in c.counts.items():
        lines.append(f"{_DEV_SPECIES[k][0]}  {'X' if count is None else count}")
        if k in c.notes:
            lines.append(f"     {c.notes[k]}")
    lines += ["", f"View this checklist online at https://ebird.org/checklist/{c.id}", "",
              "This checklist was submitted via eBird for Android."]  # fmt: skip
    return "\n".join(lines) + "\n"


def _files(checklists: list[Checklist]) -> dict[str, str]:
    return {f"checklists/{c.id}.txt": _summary(c) for c in checklists}


def _observations(checklists: list[Checklist], seed: str) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for c in checklists:
        place, loc, county, lat, lng = _TEST_PLACES[c.place]
        for k, count in c.counts.items():
            common, sci, code, *_ = _TEST_SPECIES[k]
            obs: dict = {"speciesCode": code, "comName": common, "sciName": sci, "locId": loc,
                         "locName": place, "obsDt": f"{c.start:%Y-%m-%d %H:%M}"}  # fmt: skip
            if count is not None:
                obs["howMany"] = count
            obs |= {
                "lat": lat,
                "lng": lng,
                "obsValid": True,
                "obsReviewed": False,
                "locationPrivate": False,
                "subId": c.id,
                "subnational2Name": county,
                "userDisplayName": _OBSERVERS[c.observer],
                "obsId": f"OBS{rng.randrange(1_800_000_000, 2_400_000_000)}",
                "presenceNoted": count is None,
                "hasRichMedia": rng.random() < 0.05,
            }
            out.append(obs)
    return out


def _fit(split: str, seed: str, chars: int) -> tuple[list[Checklist], object]:
    per = 560 if split == "dev" else 8000
    n = max(2, chars // per)
    for _ in range(6):
        checklists = _checklists(split, seed, n)
        context = _files(checklists) if split == "dev" else _observations(checklists, seed)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(2, round(n * chars / size))
    return checklists, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _ask_count(split: str, rng: random.Random, checklists: list[Checklist]) -> _Asked:
    c = rng.choice(checklists)
    k = rng.choice(sorted(c.counts))
    if split == "dev":
        name = _DEV_SPECIES[k][0]
        n = sum(k in x.counts for x in checklists)
        q = f"On how many checklists was {name} reported (an X counts as reported)?"
        return q, n, {"species": name}
    name, county = _TEST_SPECIES[k][0], _TEST_PLACES[c.place][2]
    n = sum(k in x.counts and _TEST_PLACES[x.place][2] == county for x in checklists)
    q = f"Count the checklists (subId) from {county} County that include an observation of {name}."
    return q, n, {"species": name, "county": county}


def _ask_total(split: str, rng: random.Random, checklists: list[Checklist]) -> _Asked:
    c = rng.choice(checklists)
    k = rng.choice(sorted(c.counts))
    if split == "dev":
        name, place = _DEV_SPECIES[k][0], _DEV_PLACES[c.place][0]
        n = sum(x.counts.get(k) or 0 for x in checklists if x.place == c.place)
        q = f"How many {name} were counted in all at {place}, over every checklist there (an X adds nothing)?"
        return q, n, {"species": name, "place": place}
    name, day = _TEST_SPECIES[k][0], c.start.date()
    n = sum(x.counts.get(k) or 0 for x in checklists if x.start.date() == day)
    q = (
        f"Summing howMany over the {name} observations dated {day}, how many birds is that (records "
        "without howMany add nothing)?"
    )
    return q, n, {"species": name, "day": f"{day}"}


def _ask_top(split: str, rng: random.Random, checklists: list[Checklist]) -> _Asked:
    counts: dict = {}
    if split == "dev":
        for x in checklists:
            counts[_DEV_PLACES[x.place][0]] = counts.get(_DEV_PLACES[x.place][0], 0) + 1
        top = _leader(counts)
        q = "Which location (the first line of a checklist, before the county) has the most checklists?"
        return None if top is None else (q, top, {})
    for x in checklists:
        for k, count in x.counts.items():
            counts[_TEST_SPECIES[k][0]] = counts.get(_TEST_SPECIES[k][0], 0) + (count or 0)
    top = _leader(counts)
    q = "Which comName has the largest howMany added up over all the observations?"
    return None if top is None else (q, top, {})


def _ask_lookup(split: str, rng: random.Random, checklists: list[Checklist]) -> _Asked:
    c = rng.choice(checklists)
    if split == "dev":
        place, day = _DEV_PLACES[c.place][0], c.start.date()
        if c.minutes is None or sum(x.place == c.place and x.start.date() == day for x in checklists) > 1:
            return None
        q = f"How many minutes did the checklist at {place} on {c.start:%B} {day.day}, {day.year} last?"
        return q, c.minutes, {"place": place, "day": f"{day}"}
    k = rng.choice(sorted(c.counts))
    if c.counts[k] is None:
        return None
    name = _TEST_SPECIES[k][0]
    q = f"What howMany did checklist {c.id} record for {name}?"
    return q, c.counts[k], {"subId": c.id, "species": name}


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "birding",
    "bird observations: mailed checklist summaries as a dict of file name to text (dev), or a bird "
    "observation API's records as a list of dicts (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    checklists, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, checklists), kind, "count", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict of file name to text (checklists)"
        if ref.split == "dev"
        else "list of dicts (observations)",
        checklists=len(checklists),
    )
