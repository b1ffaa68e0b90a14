"""Questions about a timetable: a GTFS feed as a dict of CSV texts (``dev``) or a rail operator's
timetable as a nested dict (``test``).

What a notebook holds after unzipping a transit feed into a dict (file name -> text) or loading an
operator's timetable JSON: stops or stations, lines, and trips that call at a sequence of them,
with times. Some trips turn back early or skip stops, so not every trip of a line calls everywhere
the line goes; stops whose names extend another's stand beside them. Trips are added line by line
until the text (or the indented JSON) is about the length asked for. Kinds of question:

- ``calls``: how many trips of one line on one kind of day call at one named stop (a join of
  trips, their days, their calls and the stops' names);
- ``next``: the departure time of the first trip of a line from a named stop after a given time,
  in one direction (``dev``) or on one day (``test``);
- ``duration``: how many minutes one trip takes from its first departure to its last arrival;
- ``busiest``: the stop with the most departures in a window of the day (a clear leader).

Every answer is computed from the trips the generator wrote. Score: ``exact`` (numbers as
numbers, names and times without case).

Splits: ``dev`` is a city bus network's GTFS feed (``stops.txt``, ``routes.txt``, ``trips.txt``,
``stop_times.txt``, ``calendar.txt``, ``agency.txt``; ids such as ``S017`` and
``R4_WKD_012``, ``HH:MM:SS`` times, service ids for weekdays, Saturdays and Sundays); ``test`` is a
regional rail operator's timetable (``stations`` keyed by a code, ``services`` keyed by a train
number with ``line``, ``operatingDays`` and ``calls`` of ``{"station", "arr", "dep", "track"}``
with ``HH:MM`` times, express trains passing some stations): other containers, fields, names and
wording.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from .tasks import Task, TaskRef, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("calls", "next", "duration", "busiest")

_DEV_STOPS = (
    "Central Station", "Central Station North", "Market Square", "Market Street", "City Hall",
    "Hospital", "Hospital East", "University", "University West", "Riverside", "Riverside Park",
    "Old Town", "Harbour", "Harbour Gate", "Stadium", "Zoo", "Airport", "Airport Terminal 2",
    "Industrial Estate", "Library", "Museum Quarter", "Northgate", "Southgate", "Elm Road",
    "Elm Road Depot", "Mill Lane", "Church Street", "Victoria Park", "Victoria Road", "Tech Park",
    "Greenfield", "Greenfield Shops", "Hillcrest", "Lakeside", "Orchard Way", "Bridge Street",
    "Castle Hill", "Station Road", "Kings Cross Road", "Meadowbank",
)  # fmt: skip
_DEV_ROUTES = ("1", "2", "4", "7", "12", "14", "21", "24", "41", "70")

_TEST_STATIONS = (
    ("ZHB", "Zurich HB"), ("ZOE", "Zurich Oerlikon"), ("ZAF", "Zurich Airport"), ("WIN", "Winterthur"),
    ("WIG", "Winterthur Grüze"), ("BAD", "Baden"), ("BRU", "Brugg AG"), ("AAR", "Aarau"),
    ("OLT", "Olten"), ("OLH", "Olten Hammer"), ("BSL", "Basel SBB"), ("BSB", "Basel Bad Bf"),
    ("LIE", "Liestal"), ("SIS", "Sissach"), ("BER", "Bern"), ("BWA", "Bern Wankdorf"),
    ("LUZ", "Luzern"), ("ZUG", "Zug"), ("ARB", "Arth-Goldau"), ("SGA", "St. Gallen"),
    ("SGH", "St. Gallen St. Fiden"), ("FRA", "Frauenfeld"), ("WIL", "Wil SG"), ("LEN", "Lenzburg"),
    ("SUR", "Sursee"), ("LAN", "Langenthal"), ("BIE", "Biel/Bienne"), ("SOL", "Solothurn"),
)  # fmt: skip
_TEST_LINES = ("IR36", "IR37", "IC1", "IC3", "RE5", "RE50", "S3", "S12", "S23", "IR13")
_DAYS = ("Mo", "Tu", "We", "Th", "Fr", "Sa", "Su")
_DEV_SERVICES = (("WKD", "weekday"), ("SAT", "Saturday"), ("SUN", "Sunday"))
_TEST_DAYSETS = (
    ("Mo-Fr", ("Mo", "Tu", "We", "Th", "Fr")),
    ("Sa", ("Sa",)),
    ("Su", ("Su",)),
    ("daily", _DAYS),
)
_DAY_NAMES = {"Mo": "Monday", "Tu": "Tuesday", "We": "Wednesday", "Th": "Thursday", "Fr": "Friday",
              "Sa": "Saturday", "Su": "Sunday"}  # fmt: skip


@dataclass
class Line:
    name: str  # route_short_name (dev), line (test)
    id: str
    stops: list[str]  # stop ids (dev) or station codes (test), in direction 0
    gaps: list[int]  # minutes between consecutive stops
    dwell: set[str]  # stops where a vehicle waits a minute


@dataclass
class Trip:
    id: str  # trip_id (dev) or train number (test)
    line: Line
    days: str  # service id (dev) or operating days (test)
    direction: int
    calls: list[tuple[str, int, int]]  # stop, arrival and departure in minutes after midnight


def _network(split: str, rng: random.Random, size: int) -> tuple[dict[str, str], list[Line]]:
    """The stops (id -> name) and the lines; ``size`` lines."""
    if split == "dev":
        names = list(_DEV_STOPS)
        ids = [f"S{i:03d}" for i in rng.sample(range(1, 400), len(names))]
        stops = dict(zip(ids, names, strict=True))
        route_names = rng.sample(_DEV_ROUTES, size)
    else:
        stops = dict(_TEST_STATIONS)
        route_names = rng.sample(_TEST_LINES, size)
    codes = list(stops)
    hubs = rng.sample(codes, 4)
    lines = []
    for name in route_names:
        length = rng.randint(8, 14) if split == "dev" else rng.randint(6, 11)
        chosen = rng.sample([c for c in codes if c not in hubs], length - 2) + rng.sample(hubs, 2)
        rng.shuffle(chosen)
        gaps = [rng.randint(1, 4) if split == "dev" else rng.randint(6, 22) for _ in chosen[1:]]
        dwell = {c for c in chosen if c in hubs}
        lines.append(Line(name, f"R{name}" if split == "dev" else name, chosen, gaps, dwell))
    return stops, lines


def _trip(split: str, rng: random.Random, line: Line, days: str, direction: int, start: int, n: int) -> Trip:
    stops, gaps = (line.stops, line.gaps) if direction == 0 else (line.stops[::-1], line.gaps[::-1])
    keep = list(range(len(stops)))
    if split == "dev" and rng.random() < 0.3:  # a short working: turns back early
        keep = keep[: rng.randint(len(stops) // 2, len(stops) - 1)]
    if split == "test" and rng.random() < 0.35:  # an express: passes some stations
        inner = keep[1:-1]
        passed = set(rng.sample(inner, rng.randint(1, max(1, len(inner) // 3))))
        keep = [k for k in keep if k not in passed]
    calls, t = [], start
    for i in range(len(stops)):
        if i > 0:
            t += gaps[i - 1]
        if i in keep:
            wait = 1 if stops[i] in line.dwell and 0 < i < len(stops) - 1 else 0
            calls.append((stops[i], t, t + wait))
            t += wait
    trip_id = f"{line.id}_{days}_{n:03d}" if split == "dev" else ""
    return Trip(trip_id, line, days, direction, calls)


def _trips(split: str, rng: random.Random, chars: int) -> tuple[dict[str, str], list[Trip]]:
    """Trips added to the lines' days and directions in turn until the text is about the length asked for."""
    per_call, per_trip = (40, 50) if split == "dev" else (96, 90)  # about what they cost as text
    n_lines = 2 if chars < 12000 else 4 if chars < 40000 else 8
    stops, lines = _network(split, rng, n_lines)
    sets = [s for s, _ in _DEV_SERVICES] if split == "dev" else [s for s, _ in _TEST_DAYSETS]
    groups = [(line, days, d) for days in sets for line in lines for d in (0, 1)]
    counts = Counter()
    cost = 600 + 70 * len({c for line in lines for c in line.stops})  # the other files, the stops
    while cost < chars:
        for group in groups:
            if cost >= chars:
                break
            counts[groups.index(group)] += 1
            cost += per_trip + per_call * len(group[0].stops)
    trips: list[Trip] = []
    numbers = rng.sample(range(1000, 9999), sum(counts.values()))
    for g, (line, days, direction) in enumerate(groups):
        count = counts[g]
        first, last = rng.randint(5 * 60, 7 * 60), rng.randint(19 * 60, 21 * 60)
        headway = (last - first) // max(1, count)
        for j in range(count):
            start = first + j * headway + rng.randint(0, min(3, headway - 1))
            trip = _trip(split, rng, line, days, direction, start, len(trips) + 1)
            if split == "test":
                prefix = "".join(ch for ch in line.name if ch.isalpha())
                trip.id = f"{prefix} {numbers.pop()}"
            trips.append(trip)
    rng.shuffle(trips)
    return stops, trips


# -- the files ----------------------------------------------------------------------------------


def _hms(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def _hm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _gtfs(stops: dict[str, str], trips: list[Trip], rng: random.Random) -> dict[str, str]:
    lines = list({t.line.id: t.line for t in trips}.values())
    used = {s for line in lines for s in line.stops}
    stop_rows = ["stop_id,stop_code,stop_name,stop_lat,stop_lon,wheelchair_boarding"]
    for sid, name in sorted(stops.items()):
        if sid not in used:
            continue
        lat, lon = 51.42 + rng.random() * 0.12, -2.65 + rng.random() * 0.2
        stop_rows.append(f'{sid},{int(sid[1:]) + 4000},"{name}",{lat:.6f},{lon:.6f},{rng.choice((0, 1, 1))}')
    route_rows = ["route_id,agency_id,route_short_name,route_long_name,route_type,route_color"]
    for line in sorted(lines, key=lambda x: x.id):
        ends = f"{stops[line.stops[0]]} - {stops[line.stops[-1]]}"
        route_rows.append(f'{line.id},CTB,{line.name},"{ends}",3,{rng.randint(0, 0xFFFFFF):06X}')
    trip_rows = ["route_id,service_id,trip_id,trip_headsign,direction_id,block_id"]
    time_rows = ["trip_id,arrival_time,departure_time,stop_id,stop_sequence,pickup_type"]
    for t in trips:
        headsign = stops[t.calls[-1][0]]
        trip_rows.append(f'{t.line.id},{t.days},{t.id},"{headsign}",{t.direction},B{rng.randint(100, 999)}')
        for seq, (stop, arr, dep) in enumerate(t.calls, 1):
            time_rows.append(f"{t.id},{_hms(arr)},{_hms(dep)},{stop},{seq},{1 if seq == len(t.calls) else 0}")
    calendar = [
        "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date",
        "WKD,1,1,1,1,1,0,0,20240902,20241221",
        "SAT,0,0,0,0,0,1,0,20240902,20241221",
        "SUN,0,0,0,0,0,0,1,20240902,20241221",
    ]
    return {
        "agency.txt": "agency_id,agency_name,agency_url,agency_timezone\n"
        "CTB,City Transit Bus,https://transit.example.org,Europe/London\n",
        "stops.txt": "\n".join(stop_rows) + "\n",
        "routes.txt": "\n".join(route_rows) + "\n",
        "trips.txt": "\n".join(trip_rows) + "\n",
        "stop_times.txt": "\n".join(time_rows) + "\n",
        "calendar.txt": "\n".join(calendar) + "\n",
    }


def _timetable(stops: dict[str, str], trips: list[Trip], rng: random.Random) -> dict:
    used = {s for t in trips for s in t.line.stops}
    services = {}
    for t in sorted(trips, key=lambda t: t.calls[0][2]):
        calls = []
        for k, (code, arr, dep) in enumerate(t.calls):
            calls.append(
                {
                    "station": code,
                    "arr": None if k == 0 else _hm(arr),
                    "dep": None if k == len(t.calls) - 1 else _hm(dep),
                    "track": str(rng.randint(1, 12)) + rng.choice(("", "", "", "A", "B")),
                }
            )
        services[t.id] = {"line": t.line.name, "operatingDays": t.days, "calls": calls}
    return {
        "operator": {"name": "Mittelland Regio AG", "timezone": "Europe/Zurich", "validFrom": "2024-12-15"},
        "stations": {
            code: {"name": stops[code], "uic": 8500000 + rng.randint(100, 999)} for code in sorted(used)
        },
        "services": services,
    }


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _runs_on(split: str, days: str, day: str) -> bool:
    """Whether a trip of these service days runs on ``day`` (a service id in dev, a weekday in test)."""
    return days == day if split == "dev" else day in dict(_TEST_DAYSETS)[days]


def _day(split: str, rng: random.Random) -> tuple[str, str]:
    if split == "dev":
        return rng.choice(_DEV_SERVICES)
    day = rng.choice(_DAYS)
    return day, _DAY_NAMES[day]


def _ask_calls(split: str, rng: random.Random, stops: dict[str, str], trips: list[Trip]) -> _Asked:
    t = rng.choice(trips)
    stop = rng.choice(t.calls)[0]
    day, day_name = _day(split, rng)
    n = sum(
        x.line is t.line and _runs_on(split, x.days, day) and any(s == stop for s, *_ in x.calls)
        for x in trips
    )
    params = {"line": t.line.name, "stop": stops[stop], "day": day}
    if split == "dev":
        q = f"How many {day_name} trips of bus route {t.line.name} call at the stop named '{stops[stop]}'?"
        return q, n, params
    q = f"On a {day_name}, how many {t.line.name} trains stop at {stops[stop]}?"
    return q, n, params


def _ask_next(split: str, rng: random.Random, stops: dict[str, str], trips: list[Trip]) -> _Asked:
    t = rng.choice(trips)
    k = rng.randrange(len(t.calls) - 1)
    stop = t.calls[k][0]
    day, day_name = _day(split, rng)
    after = rng.randint(6 * 60, 20 * 60)
    found = sorted(
        dep
        for x in trips
        if x.line is t.line
        and _runs_on(split, x.days, day)
        and (split == "test" or x.direction == t.direction)
        for i, (s, _, dep) in enumerate(x.calls)
        if s == stop and i < len(x.calls) - 1 and dep > after
    )
    if not found:
        return None
    params = {"line": t.line.name, "stop": stops[stop], "day": day, "after": _hm(after)}
    if split == "dev":
        headsign = stops[t.line.stops[-1] if t.direction == 0 else t.line.stops[0]]
        params["direction"] = t.direction
        q = (
            f"On a {day_name} service day, when does the first route {t.line.name} bus in direction_id "
            f"{t.direction} (towards {headsign}) leave '{stops[stop]}' after {_hm(after)}? Answer as "
            "HH:MM:SS."
        )
        return q, _hms(found[0]), params
    q = (
        f"What is the departure time of the first {t.line.name} train from {stops[stop]} after "
        f"{_hm(after)} on a {day_name}?"
    )
    return q, _hm(found[0]), params


def _ask_duration(split: str, rng: random.Random, stops: dict[str, str], trips: list[Trip]) -> _Asked:
    t = rng.choice(trips)
    minutes = t.calls[-1][1] - t.calls[0][2]
    if split == "dev":
        q = f"How many minutes does trip {t.id} take from its first departure to its last arrival?"
        return q, minutes, {"trip": t.id}
    q = (
        f"Train {t.id}: how long, in minutes, from its departure at the first station to its arrival "
        "at the last?"
    )
    return q, minutes, {"train": t.id}


def _ask_busiest(split: str, rng: random.Random, stops: dict[str, str], trips: list[Trip]) -> _Asked:
    day, day_name = _day(split, rng)
    start = rng.randint(6, 18) * 60
    end = start + rng.choice((60, 120, 180))
    counts = Counter(
        s
        for x in trips
        if _runs_on(split, x.days, day)
        for i, (s, _, dep) in enumerate(x.calls)
        if i < len(x.calls) - 1 and start <= dep < end
    )
    top = counts.most_common(2)
    if len(top) < 2 or top[0][1] == top[1][1]:
        return None
    params = {"day": day, "from": _hm(start), "to": _hm(end)}
    if split == "dev":
        q = (
            f"Which stop (its stop_name) has the most {day_name} departures from {_hms(start)} up to but "
            f"not including {_hms(end)}, all routes together? A trip's last stop is not a departure."
        )
        return q, stops[top[0][0]], params
    q = (
        f"Which station sees the most train departures on {day_name}s between {_hm(start)} and "
        f"{_hm(end - 1)} (inclusive)? Give its name; a train's final stop is not a departure."
    )
    return q, stops[top[0][0]], params


_ASK = {"calls": _ask_calls, "next": _ask_next, "duration": _ask_duration, "busiest": _ask_busiest}


@family(
    "transit",
    "a timetable: a GTFS feed as a dict of CSV texts (dev) or a rail timetable as nested dicts (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    stops, trips = _trips(ref.split, rng, ref.chars)
    context = _gtfs(stops, trips, rng) if ref.split == "dev" else _timetable(stops, trips, rng)
    kind = KINDS[ref.index % len(KINDS)]
    # other lines, stops, days and windows, then a trip's length, which is always there
    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, stops, trips), kind, "duration", nonzero=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict of CSV texts" if ref.split == "dev" else "dict of dicts",
        trips=len(trips),
    )
