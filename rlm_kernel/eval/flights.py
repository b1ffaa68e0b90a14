"""Questions about flights: a transport statistics bureau's on-time performance data for some days of
airline flights, the CSV download as one string (``dev``), or a flight tracking network's API
answers, the departures it saw from a few airports over some days, as a list of dicts (``test``).

What a notebook holds when someone studies how flights run: each scheduled flight's carrier, number,
aircraft, route, scheduled and actual times, taxi times, delays and their causes, and whether it was
cancelled or diverted; or each flight the network's receivers followed, with its aircraft's address,
its callsign, when it was first and last seen and which airports it probably left and reached. The
bureau writes its dates ``M/D/YYYY 12:00:00 AM``, its times as quoted ``hhmm`` strings in local time
(midnight ``2400``), its delays and flags as decimals (``7.00``, ``1.00``), leaves every time and
delay empty on a cancelled flight and the arrival empty on a diverted one, gives the causes of a
delay only where the flight arrived 15 minutes late or more, names two airports' cities alike
(``New York, NY``), runs one flight number over two legs in a day, and ends every line with a comma.
The network pads its callsigns with spaces to eight characters, writes its times as seconds since the
epoch, leaves the arrival airport (and its distances) null where it could not tell, and follows small
aircraft with a registration for a callsign, or none. Flights are added until the text (or the
indented JSON) is about the length asked for. Kinds of question:

- ``count``: the flights that reached one airport 15 minutes late or more, or one carrier's
  cancelled flights (``dev``); the flights that left one airport in a few hours of one day, or one
  airport's departures with no arrival airport (``test``);
- ``mean``: the mean departure delay of one carrier's flights from one airport, or the mean arrival
  delay on one route (``dev``); the mean time in the air of one airline's flights on one route, or of
  one route's flights on one day (``test``);
- ``top``: the carrier with the most late arrivals among one airport's departures, or the commonest
  destination from one airport (``dev``); the commonest arrival airport from one airport, or the
  airline with the most departures from one airport on one day (``test``) (a clear leader);
- ``lookup``: one flight's arrival delay, or its tail number (``dev``); one flight's aircraft
  address, or the time it was first seen (``test``).

Every answer is computed from the flights the generator wrote. Score: ``exact``.

Splits: ``dev`` is the CSV (``YEAR``, ``MONTH``, ``DAY_OF_MONTH``, ``FL_DATE``,
``OP_UNIQUE_CARRIER``, ``TAIL_NUM``, ``OP_CARRIER_FL_NUM``, ``ORIGIN``, ``ORIGIN_CITY_NAME``,
``DEST``, ``DEST_CITY_NAME``, ``CRS_DEP_TIME``, ``DEP_TIME``, ``DEP_DELAY``, ``TAXI_OUT``,
``WHEELS_OFF``, ``WHEELS_ON``, ``TAXI_IN``, ``CRS_ARR_TIME``, ``ARR_TIME``, ``ARR_DELAY``,
``CANCELLED``, ``CANCELLATION_CODE``, ``DIVERTED``, ``DISTANCE``, ``CARRIER_DELAY``,
``WEATHER_DELAY``, ``NAS_DELAY``, ``SECURITY_DELAY``, ``LATE_AIRCRAFT_DELAY``); ``test`` is the
flights (``icao24``, ``firstSeen``, ``estDepartureAirport``, ``lastSeen``, ``estArrivalAirport``,
``callsign``, ``estDepartureAirportHorizDistance``, ``estDepartureAirportVertDistance``,
``estArrivalAirportHorizDistance``, ``estArrivalAirportVertDistance``,
``departureAirportCandidatesCount``, ``arrivalAirportCandidatesCount``): other containers, fields,
countries and wording.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from fractions import Fraction

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "mean", "top", "lookup")

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _mean(values: list[int], scale: int = 1) -> float | None:
    """The mean of whole ``1/scale``-ths, to two decimals; None where it lies on a rounding tie."""
    if not values:
        return None
    exact = Fraction(sum(values) * 100, len(values) * scale)
    whole = exact.numerator // exact.denominator
    if exact - whole == Fraction(1, 2):
        return None
    return (whole + (exact - whole > Fraction(1, 2))) / 100


def _km(a: tuple[float, float], b: tuple[float, float]) -> float:
    dp, dl = math.radians(b[0] - a[0]), math.radians(b[1] - a[1])
    h = (
        math.sin(dp / 2) ** 2
        + math.cos(math.radians(a[0])) * math.cos(math.radians(b[0])) * math.sin(dl / 2) ** 2
    )
    return 2 * 6371.0 * math.asin(math.sqrt(h))


# -- the dev on-time performance data -----------------------------------------------------------

_AIRPORTS = {  # code: city, UTC offset, latitude, longitude
    "ATL": ("Atlanta, GA", -5, 33.64, -84.43),
    "DFW": ("Dallas/Fort Worth, TX", -6, 32.90, -97.04),
    "DEN": ("Denver, CO", -7, 39.86, -104.67),
    "ORD": ("Chicago, IL", -6, 41.98, -87.90),
    "MDW": ("Chicago, IL", -6, 41.79, -87.75),
    "LAX": ("Los Angeles, CA", -8, 33.94, -118.41),
    "JFK": ("New York, NY", -5, 40.64, -73.78),
    "LGA": ("New York, NY", -5, 40.78, -73.87),
    "EWR": ("Newark, NJ", -5, 40.69, -74.17),
    "SFO": ("San Francisco, CA", -8, 37.62, -122.38),
    "SEA": ("Seattle, WA", -8, 47.45, -122.31),
    "BOS": ("Boston, MA", -5, 42.36, -71.01),
    "MIA": ("Miami, FL", -5, 25.80, -80.29),
    "CLT": ("Charlotte, NC", -5, 35.21, -80.94),
    "PHX": ("Phoenix, AZ", -7, 33.43, -112.01),
    "LAS": ("Las Vegas, NV", -8, 36.08, -115.15),
    "MSP": ("Minneapolis, MN", -6, 44.88, -93.22),
    "DTW": ("Detroit, MI", -5, 42.21, -83.35),
    "IAH": ("Houston, TX", -6, 29.98, -95.34),
    "HOU": ("Houston, TX", -6, 29.65, -95.28),
    "DAL": ("Dallas, TX", -6, 32.85, -96.85),
}
_CARRIERS = {  # code: hubs, tail number pattern, weight
    "AA": (("DFW", "CLT", "MIA", "ORD"), "N{n}AA", 3.0),
    "DL": (("ATL", "MSP", "DTW", "JFK", "SEA"), "N{n}DN", 3.0),
    "UA": (("ORD", "DEN", "EWR", "SFO", "IAH"), "N{n}", 2.6),
    "WN": (("DEN", "LAS", "PHX", "DAL", "HOU", "MDW"), "N{n}WN", 2.6),
    "B6": (("JFK", "BOS"), "N{n}JB", 1.0),
    "AS": (("SEA", "SFO", "LAX"), "N{n}AS", 0.9),
    "NK": (("LAS", "MIA", "DFW"), "N{n}NK", 0.7),
    "OO": (("DEN", "SFO", "ORD", "MSP"), "N{n}SY", 1.2),
}


@dataclass
class Leg:
    day: date
    carrier: str
    number: int
    tail: str
    origin: str
    dest: str
    crs_dep: int  # minutes after local midnight
    block: int  # scheduled minutes, gate to gate
    dep_delay: int | None = None  # None: cancelled
    taxi_out: int = 0
    air: int = 0
    taxi_in: int = 0
    cancel: str = ""
    diverted: bool = False
    causes: tuple[int, int, int, int, int] | None = None

    @property
    def shift(self) -> int:
        return (_AIRPORTS[self.dest][1] - _AIRPORTS[self.origin][1]) * 60

    @property
    def crs_arr(self) -> int:
        return self.crs_dep + self.block + self.shift

    @property
    def arr_delay(self) -> int | None:
        if self.dep_delay is None or self.diverted:
            return None
        return self.dep_delay + self.taxi_out + self.air + self.taxi_in - self.block

    @property
    def miles(self) -> int:
        a, b = _AIRPORTS[self.origin], _AIRPORTS[self.dest]
        return round(_km(a[2:], b[2:]) / 1.609344)


def _schedule(rng: random.Random, per_day: int) -> list[list[tuple]]:
    """Each scheduled flight: its legs as (carrier, number, origin, dest, departure, block)."""
    out: list[list[tuple]] = []
    numbers: set[tuple[str, int]] = set()
    carriers = list(_CARRIERS)
    while sum(len(f) for f in out) < per_day:
        carrier = rng.choices(carriers, [c[2] for c in _CARRIERS.values()])[0]
        hub = rng.choice(_CARRIERS[carrier][0])
        stops = [hub, *rng.sample([a for a in _AIRPORTS if a != hub], 2)]
        if rng.random() < 0.5:
            stops[0], stops[1] = stops[1], stops[0]
        legs = 2 if carrier == "WN" and rng.random() < 0.35 else 1
        number = rng.randrange(100, 3000) if carrier != "OO" else rng.randrange(3000, 6000)
        if (carrier, number) in numbers:
            continue
        numbers.add((carrier, number))
        flight, t = [], rng.randrange(5 * 12, 21 * 12) * 5
        for k in range(legs):
            a, b = stops[k], stops[k + 1]
            km = _km(_AIRPORTS[a][2:], _AIRPORTS[b][2:])
            block = round((35 + km / 12.5) / 5) * 5
            flight.append((carrier, number, a, b, t % 1440, block))
            t += block + _AIRPORTS[b][1] * 60 - _AIRPORTS[a][1] * 60 + rng.randrange(30, 70)
        out.append(flight)
    return out


def _fly(rng: random.Random, leg: Leg, stormy: str) -> None:
    storm = leg.origin == stormy
    if rng.random() < (0.2 if storm else 0.025):
        leg.cancel = "B" if storm else rng.choice("AAC")
        return
    roll = rng.random()
    late = 0.35 if storm else 0.15
    if roll < late:
        leg.dep_delay = round(min(400, 15 + rng.lognormvariate(3.3, 0.8)))
    elif roll < late + 0.25:
        leg.dep_delay = rng.randrange(1, 15)
    else:
        leg.dep_delay = rng.randrange(-12, 1)
    leg.taxi_out = rng.randrange(9, 38 if storm else 28)
    leg.taxi_in = rng.randrange(3, 16)
    leg.air = max(20, leg.block - 27 + rng.randrange(-14, 12))
    leg.diverted = rng.random() < 0.006
    late_by = leg.arr_delay
    if late_by is not None and late_by >= 15:
        weather = min(late_by, rng.randrange(0, late_by + 1)) if storm else 0
        rest = late_by - weather
        nas = min(rest, max(0, leg.taxi_out - 18 + rng.randrange(0, 10)))
        rest -= nas
        carrier = rng.randrange(0, rest + 1)
        leg.causes = (carrier, weather, nas, 0, rest - carrier)


def _dev_legs(seed: str, n: int) -> list[Leg]:
    rng = random.Random(f"{seed}/{n}")
    days = max(1, min(31, round((n / 6) ** 0.5)))
    per_day = max(2, math.ceil(n / days))
    first = date(2023, 1, 1) + timedelta(days=rng.randrange(0, 700))
    first = first.replace(day=1) + timedelta(days=rng.randrange(0, 29 - min(28, days)))
    flights = _schedule(rng, per_day)
    stormy = rng.choice(list(_AIRPORTS))
    storm_day = first + timedelta(days=rng.randrange(days))
    legs: list[Leg] = []
    for d in range(days):
        day = first + timedelta(days=d)
        for flight in flights:
            carrier = flight[0][0]
            n_tail = rng.randrange(100, 999) if carrier != "UA" else rng.randrange(10000, 99999)
            tail = _CARRIERS[carrier][1].format(n=n_tail)
            for carrier, number, a, b, t, block in flight:
                leg = Leg(day, carrier, number, tail, a, b, t, block)
                _fly(rng, leg, stormy if day == storm_day else "")
                legs.append(leg)
    legs.sort(key=lambda x: (x.day, x.carrier, x.number, x.crs_dep))
    return legs


def _hhmm(minutes: int) -> str:
    m = minutes % 1440
    return "2400" if m == 0 else f"{m // 60:02d}{m % 60:02d}"


def _row(leg: Leg) -> list[str]:
    q = '"{}"'.format

    def num(v: int | None) -> str:
        return "" if v is None else f"{v}.00"

    o, d = _AIRPORTS[leg.origin], _AIRPORTS[leg.dest]
    head = [
        str(leg.day.year),
        str(leg.day.month),
        str(leg.day.day),
        q(f"{leg.day.month}/{leg.day.day}/{leg.day.year} 12:00:00 AM"),
        q(leg.carrier),
        q(leg.tail),
        str(leg.number),
        q(leg.origin),
        q(o[0]),
        q(leg.dest),
        q(d[0]),
        q(_hhmm(leg.crs_dep)),
    ]
    if leg.dep_delay is None:
        middle = ["", "", "", "", "", "", q(_hhmm(leg.crs_arr)), "", "", "1.00", q(leg.cancel), "0.00"]
    else:
        out = leg.crs_dep + leg.dep_delay
        off = out + leg.taxi_out
        on = off + leg.air + leg.shift
        arrived = not leg.diverted
        middle = [
            q(_hhmm(out)),
            num(leg.dep_delay),
            num(leg.taxi_out),
            q(_hhmm(off)),
            q(_hhmm(on)) if arrived else "",
            num(leg.taxi_in) if arrived else "",
            q(_hhmm(leg.crs_arr)),
            q(_hhmm(on + leg.taxi_in)) if arrived else "",
            num(leg.arr_delay),
            "0.00",
            "",
            "1.00" if leg.diverted else "0.00",
        ]
    causes = [num(c) for c in leg.causes] if leg.causes else [""] * 5
    return [*head, *middle, num(leg.miles), *causes]


_COLUMNS = (
    "YEAR",
    "MONTH",
    "DAY_OF_MONTH",
    "FL_DATE",
    "OP_UNIQUE_CARRIER",
    "TAIL_NUM",
    "OP_CARRIER_FL_NUM",
    "ORIGIN",
    "ORIGIN_CITY_NAME",
    "DEST",
    "DEST_CITY_NAME",
    "CRS_DEP_TIME",
    "DEP_TIME",
    "DEP_DELAY",
    "TAXI_OUT",
    "WHEELS_OFF",
    "WHEELS_ON",
    "TAXI_IN",
    "CRS_ARR_TIME",
    "ARR_TIME",
    "ARR_DELAY",
    "CANCELLED",
    "CANCELLATION_CODE",
    "DIVERTED",
    "DISTANCE",
    "CARRIER_DELAY",
    "WEATHER_DELAY",
    "NAS_DELAY",
    "SECURITY_DELAY",
    "LATE_AIRCRAFT_DELAY",
)


def _ontime(legs: list[Leg]) -> str:
    lines = [",".join(f'"{c}"' for c in _COLUMNS) + ","]
    lines += [",".join(_row(leg)) + "," for leg in legs]
    return "\r\n".join(lines) + "\r\n"


# -- the test tracked flights -------------------------------------------------------------------

_FIELDS = {  # ICAO: latitude, longitude
    "EDDF": (50.03, 8.56),
    "EDDM": (48.35, 11.79),
    "EHAM": (52.31, 4.76),
    "LSZH": (47.46, 8.55),
    "EGLL": (51.47, -0.45),
    "EGKK": (51.15, -0.19),
    "LFPG": (49.01, 2.55),
    "LEMD": (40.47, -3.56),
    "LEBL": (41.30, 2.08),
    "LIRF": (41.80, 12.25),
    "LOWW": (48.11, 16.57),
    "EKCH": (55.62, 12.65),
    "EIDW": (53.42, -6.27),
    "ESSA": (59.65, 17.92),
    "LPPT": (38.77, -9.13),
    "EPWA": (52.17, 20.97),
    "EDDB": (52.36, 13.50),
    "EDDH": (53.63, 9.99),
    "LKPR": (50.10, 14.26),
    "LGAV": (37.94, 23.94),
    "EDFE": (49.96, 8.64),
    "EDMA": (48.43, 10.93),
}
_AIRLINES = {  # callsign prefix: how its aircraft addresses start, where it is based
    "DLH": ("3c", ("EDDF", "EDDM")),
    "EWG": ("3c", ("EDDF", "EDDM", "EDDH")),
    "BAW": ("40", ("EGLL",)),
    "AFR": ("39", ("LFPG",)),
    "KLM": ("48", ("EHAM",)),
    "EZY": ("44", ("EGKK", "LSZH", "EHAM")),
    "RYR": ("4c", ("EIDW", "LEBL")),
    "SWR": ("4b", ("LSZH",)),
    "AUA": ("44", ("LOWW",)),
    "CFG": ("3c", ("EDDF",)),
    "TRA": ("48", ("EHAM",)),
}
_SUFFIX = "ABCDEFGHJKLMNPRTUVWXYZ"


@dataclass
class Track:
    icao24: str
    first: int  # epoch seconds
    dep: str
    last: int
    arr: str | None
    callsign: str | None  # unpadded
    near: tuple[int, int, int | None, int | None]  # metres from the airports
    candidates: tuple[int, int]


def _callsign(rng: random.Random, prefix: str) -> str:
    if rng.random() < 0.5:
        return f"{prefix}{rng.randrange(1, 2000)}"
    return f"{prefix}{rng.randrange(1, 99)}{''.join(rng.choices(_SUFFIX, k=rng.randrange(1, 3)))}"


_SMALL = ("EDFE", "EDMA")  # airfields of small aircraft


def _routes(rng: random.Random, base: str, count: int) -> list[tuple[str, str, int]]:
    """``count`` daily departures from ``base``: callsign, destination, minute of the day."""
    here = [p for p, a in _AIRLINES.items() if base in a[1]]
    visiting = ["EZY", "RYR", "BAW", "AFR"]
    out: list[tuple[str, str, int]] = []
    used: set[str] = set()
    while len(out) < count:
        prefix = rng.choice(here) if rng.random() < 0.7 else rng.choice(visiting)
        callsign = _callsign(rng, prefix)
        if callsign in used:
            continue
        used.add(callsign)
        dest = rng.choice([f for f in _FIELDS if f != base and f not in _SMALL])
        out.append((callsign, dest, rng.randrange(5 * 60 + 30, 22 * 60)))
    return out


def _test_tracks(seed: str, n: int) -> tuple[list[Track], list[str]]:
    rng = random.Random(f"{seed}/{n}")
    bases = rng.sample(("EDDF", "EDDM", "EHAM", "LSZH"), rng.randrange(2, 4))
    days = max(1, min(7, round(n / 45)))
    start = datetime(2023, 3, 1, tzinfo=timezone.utc) + timedelta(days=rng.randrange(0, 600))
    per_day = max(2, math.ceil(n / days / len(bases)))
    fleets: dict[str, list[str]] = {}
    out: list[Track] = []
    for base in bases:
        routes = _routes(rng, base, max(2, round(per_day * 0.93)))
        for d in range(days):
            day = start + timedelta(days=d)
            for callsign, dest, minute in routes:
                if rng.random() < 0.04:
                    continue  # not flown, or not seen, that day
                when = day + timedelta(minutes=minute + rng.randrange(-5, 40), seconds=rng.randrange(60))
                out.append(_track(rng, when, base, dest, callsign, fleets))
            for _ in range(per_day - len(routes)):  # small aircraft
                callsign = f"DE{''.join(rng.choices(_SUFFIX, k=3))}" if rng.random() < 0.7 else None
                when = day + timedelta(minutes=rng.randrange(7 * 60, 20 * 60), seconds=rng.randrange(60))
                out.append(_track(rng, when, base, rng.choice((*_SMALL, None)), callsign, fleets))
    return out, bases


def _track(
    rng: random.Random, when: datetime, base: str, dest: str | None, callsign: str | None, fleets: dict
) -> Track:
    prefix = callsign[:3] if callsign and callsign[:3] in _AIRLINES else "GA"
    fleet = fleets.setdefault(prefix, [])
    if len(fleet) < 3 or rng.random() < 0.4:
        head = _AIRLINES[prefix][0] if prefix in _AIRLINES else "3d"
        fleet.append(f"{head}{rng.getrandbits(16):04x}")
    icao24 = rng.choice(fleet)
    first = int(when.timestamp())
    lost = dest is None or rng.random() < 0.05
    km = _km(_FIELDS[base], _FIELDS[dest or "EDFE"])
    minutes = 12 + km / 12.8 + rng.uniform(-6, 9)
    return Track(
        icao24,
        first,
        base,
        first + round(minutes * 60 * (rng.uniform(0.3, 0.8) if lost else 1)),  # lost: seen for part of it
        None if lost else dest,
        callsign,
        (
            rng.randrange(200, 2600),
            rng.randrange(10, 90),
            None if lost else rng.randrange(150, 3200),
            None if lost else rng.randrange(0, 60),
        ),
        (rng.randrange(1, 3), 0 if lost else rng.randrange(1, 4)),
    )


def _tracks(data: tuple[list[Track], list[str]]) -> list[dict]:
    tracks, bases = data
    out = []
    for base in bases:
        for t in sorted((t for t in tracks if t.dep == base), key=lambda t: (t.first, t.icao24)):
            out.append(
                {
                    "icao24": t.icao24,
                    "firstSeen": t.first,
                    "estDepartureAirport": t.dep,
                    "lastSeen": t.last,
                    "estArrivalAirport": t.arr,
                    "callsign": None if t.callsign is None else t.callsign.ljust(8),
                    "estDepartureAirportHorizDistance": t.near[0],
                    "estDepartureAirportVertDistance": t.near[1],
                    "estArrivalAirportHorizDistance": t.near[2],
                    "estArrivalAirportVertDistance": t.near[3],
                    "departureAirportCandidatesCount": t.candidates[0],
                    "arrivalAirportCandidatesCount": t.candidates[1],
                }
            )
    return out


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    """The flights nearest the size asked for, of a few tries."""
    per = 245 if split == "dev" else 440
    n = max(6, chars // per)
    best: tuple[float, object, object, int] | None = None
    for _ in range(8):
        if split == "dev":
            data: object = _dev_legs(seed, n)
            context: object = _ontime(data)
            count = len(data)
        else:
            data = _test_tracks(seed, n)
            context = _tracks(data)
            count = len(context)
        size = len(as_text(context))
        miss = abs(size - chars) / chars
        if best is None or miss < best[0]:
            best = (miss, data, context, count)
        if 0.9 * chars <= size <= 1.1 * chars:
            break
        n = max(6, round(n * chars / size))
    assert best is not None
    return best[1], best[2], best[3]


# -- questions ----------------------------------------------------------------------------------


def _day(d: date) -> str:
    return f"{d:%B} {d.day}, {d.year}"


def _late(leg: Leg) -> bool:
    return leg.arr_delay is not None and leg.arr_delay >= 15


def _dev_count(rng: random.Random, legs: list[Leg]) -> _Asked:
    if rng.random() < 0.5:
        leg = rng.choice([x for x in legs if _late(x)] or legs)
        n = sum(x.dest == leg.dest and _late(x) for x in legs)
        q = f"How many flights arrived at {leg.dest} 15 or more minutes late in this file?"
        return q, n, {"DEST": leg.dest}
    leg = rng.choice([x for x in legs if x.cancel] or legs)
    n = sum(x.carrier == leg.carrier and bool(x.cancel) for x in legs)
    q = f"How many flights did carrier {leg.carrier} cancel in this file?"
    return q, n, {"OP_UNIQUE_CARRIER": leg.carrier}


def _dev_mean(rng: random.Random, legs: list[Leg]) -> _Asked:
    leg = rng.choice(legs)
    if rng.random() < 0.5:
        mean = _mean(
            [
                x.dep_delay
                for x in legs
                if x.carrier == leg.carrier and x.origin == leg.origin and x.dep_delay is not None
            ]
        )
        q = (
            f"What was the mean departure delay, in minutes, of {leg.carrier} flights from {leg.origin} that "
            "were not cancelled? Two decimals."
        )
        return None if not mean else (q, mean, {"OP_UNIQUE_CARRIER": leg.carrier, "ORIGIN": leg.origin})
    mean = _mean(
        [
            x.arr_delay
            for x in legs
            if (x.origin, x.dest) == (leg.origin, leg.dest) and x.arr_delay is not None
        ]
    )
    q = (
        f"What was the mean arrival delay, in minutes, of the flights from {leg.origin} to {leg.dest} that "
        "arrived (neither cancelled nor diverted)? Two decimals."
    )
    return None if not mean else (q, mean, {"ORIGIN": leg.origin, "DEST": leg.dest})


def _dev_top(rng: random.Random, legs: list[Leg]) -> _Asked:
    leg = rng.choice(legs)
    if rng.random() < 0.5:
        top = _leader(Counter(x.carrier for x in legs if x.origin == leg.origin and _late(x)))
        q = (
            f"Which carrier code had the most flights out of {leg.origin} that arrived 15 or more minutes "
            "late?"
        )
        return None if top is None else (q, top, {"ORIGIN": leg.origin, "by": "late"})
    top = _leader(Counter(x.dest for x in legs if x.origin == leg.origin))
    q = f"Which airport code did the most flights out of {leg.origin} fly to?"
    return None if top is None else (q, top, {"ORIGIN": leg.origin, "by": "DEST"})


def _dev_lookup(rng: random.Random, legs: list[Leg]) -> _Asked:
    leg = rng.choice(legs)
    params = {
        "OP_UNIQUE_CARRIER": leg.carrier,
        "OP_CARRIER_FL_NUM": leg.number,
        "ORIGIN": leg.origin,
        "DEST": leg.dest,
        "day": leg.day.isoformat(),
    }
    what = f"{leg.carrier} flight {leg.number} from {leg.origin} to {leg.dest} on {_day(leg.day)}"
    if rng.random() < 0.5 and leg.arr_delay:
        q = f"What was the arrival delay, in minutes, of {what}?"
        return q, leg.arr_delay, {**params, "field": "ARR_DELAY"}
    q = f"Which tail number flew {what}?"
    return q, leg.tail, {**params, "field": "TAIL_NUM"}


def _stamp(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)


def _on(t: Track) -> str:
    return _stamp(t.first).date().isoformat()


def _airline(t: Track) -> str | None:
    return t.callsign[:3] if t.callsign and t.callsign[:3] in _AIRLINES else None


def _test_count(rng: random.Random, data: tuple) -> _Asked:
    tracks, _ = data
    if rng.random() < 0.5:
        t = rng.choice(tracks)
        day = _stamp(t.first)
        first = max(0, day.hour - rng.randrange(0, 3))
        last = min(24, first + rng.randrange(3, 7))
        n = sum(x.dep == t.dep and _on(x) == _on(t) and first <= _stamp(x.first).hour < last for x in tracks)
        q = (
            f"Count the flights that left {t.dep} on {day.day} {day:%B %Y} first seen from {first:02d}:00 to "
            f"{last:02d}:00 UTC."
        )
        return q, n, {"from": t.dep, "day": _on(t), "hours": [first, last]}
    t = rng.choice([x for x in tracks if x.arr is None] or tracks)
    n = sum(x.dep == t.dep and x.arr is None for x in tracks)
    q = f"Tally the departures from {t.dep} for which no arrival airport was estimated."
    return q, n, {"from": t.dep}


def _test_mean(rng: random.Random, data: tuple) -> _Asked:
    tracks, _ = data
    t = rng.choice([x for x in tracks if x.arr and _airline(x)] or tracks)
    if not t.arr:
        return None
    if rng.random() < 0.5:
        prefix = _airline(t)
        mean = _mean(
            [x.last - x.first for x in tracks if _airline(x) == prefix and (x.dep, x.arr) == (t.dep, t.arr)],
            60,
        )
        q = (
            "Give the mean time in the air, in minutes (lastSeen minus firstSeen), of the flights with a "
            f"callsign starting {prefix} from {t.dep} to {t.arr}, to two decimals."
        )
        return None if not mean else (q, mean, {"airline": prefix, "from": t.dep, "to": t.arr})
    day = _stamp(t.first)
    mean = _mean(
        [x.last - x.first for x in tracks if (x.dep, x.arr) == (t.dep, t.arr) and _on(x) == _on(t)], 60
    )
    q = (
        f"Give the mean time in the air, in minutes (lastSeen minus firstSeen), of the flights from {t.dep} "
        f"to {t.arr} first seen on {day.day} {day:%B %Y} (UTC), to two decimals."
    )
    return None if not mean else (q, mean, {"from": t.dep, "to": t.arr, "day": _on(t)})


def _test_top(rng: random.Random, data: tuple) -> _Asked:
    tracks, _ = data
    t = rng.choice(tracks)
    if rng.random() < 0.5:
        top = _leader(Counter(x.arr for x in tracks if x.dep == t.dep and x.arr))
        q = f"Name the arrival airport (ICAO code) that the most flights from {t.dep} went to."
        return None if top is None else (q, top, {"from": t.dep, "by": "estArrivalAirport"})
    top = _leader(Counter(_airline(x) for x in tracks if x.dep == t.dep and _on(x) == _on(t) and _airline(x)))
    day = _stamp(t.first)
    q = (
        "Find the airline, by the three letters its callsigns start with, with the most departures from "
        f"{t.dep} on {day.day} {day:%B %Y} (UTC)."
    )
    return None if top is None else (q, top, {"from": t.dep, "day": _on(t), "by": "airline"})


def _test_lookup(rng: random.Random, data: tuple) -> _Asked:
    tracks, _ = data
    t = rng.choice([x for x in tracks if x.callsign] or tracks)
    if not t.callsign:
        return None
    if sum(x.callsign == t.callsign and x.dep == t.dep and _on(x) == _on(t) for x in tracks) != 1:
        return None
    day = _stamp(t.first)
    params = {"callsign": t.callsign, "from": t.dep, "day": _on(t)}
    if rng.random() < 0.5:
        q = (
            f"Report the icao24 address of the aircraft that flew callsign {t.callsign} from {t.dep} on "
            f"{day:%d %B %Y}."
        )
        return q, t.icao24, {**params, "field": "icao24"}
    q = (
        f"Report the UTC time, as HH:MM, at which callsign {t.callsign} leaving {t.dep} on {day:%d %B %Y} "
        "was first seen."
    )
    return q, f"{day:%H:%M}", {**params, "field": "firstSeen"}


_DEV = {"count": _dev_count, "mean": _dev_mean, "top": _dev_top, "lookup": _dev_lookup}
_TEST = {"count": _test_count, "mean": _test_mean, "top": _test_top, "lookup": _test_lookup}


@family(
    "flights",
    "flights: a statistics bureau's on-time performance CSV as a string (dev), or a flight tracking "
    "network's departures as a list of dicts (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    data, context, count = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    asks = _DEV if ref.split == "dev" else _TEST

    def ask(kind_: str) -> _Asked:
        return asks[kind_](rng, data)

    kind, asked = draw_question(ask, kind, "lookup", nonzero=True, hidden=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (on-time performance CSV)"
        if ref.split == "dev"
        else "list of dicts (tracked departures)",
        flights=count,
    )
