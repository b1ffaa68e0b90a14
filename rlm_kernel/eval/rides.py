"""Questions about trip records: a bike share system's monthly trip data, the CSV as one string
(``dev``), or a city's yellow taxi trip records, as a parquet file of them loads into a pandas
DataFrame (``test``).

What a notebook holds when someone studies how a city moves: each bike ride's start and end time
and station, the bike's type and whether the rider is a member; or each taxi trip's pickup and
dropoff time and zone, its distance, passengers, rate code and how it was paid, with the fare and
every surcharge, tip and toll. Bike rides carry their times to the millisecond, electric bikes can
be left away from a station (no end station, the position to two decimals), some rides last
seconds and end where they began, and stations' names extend another's (``W 52 St & 11 Ave`` and
``W 52 St & 11 Ave (NW Corner)``). Taxi trips know their zones only by number, leave the
passengers, rate code and surcharges missing on some trips, record tips on card payments only, and
follow a disputed or voided trip with a row that takes its amounts back (negative). Rides (or
trips) are added until the text (or the frame as CSV) is about the length asked for. Kinds of
question:

- ``count``: the rides members started at one station on one day, or the electric bikes left away
  from a station on one day (``dev``); the card-paid trips from one zone in one hour, or the trips
  with no passenger count on one day (``test``);
- ``mean``: the mean length in minutes of one bike type's rides from one station, or of casual
  riders' rides on one day (``dev``); the mean tip of card-paid trips to one zone, or the mean
  distance of one vendor's paid trips on one day (``test``);
- ``top``: the station most rides from one station end at, or the station with the most
  departures in a few hours of one day (``dev``); the commonest dropoff zone of one pickup zone,
  or the busiest pickup hour of one day (``test``) (a clear leader);
- ``lookup``: the station one ride ended at, or the time it started (``dev``); one trip's total
  amount, or its dropoff zone (``test``).

Every answer is computed from the trips the generator wrote. Score: ``exact``.

Splits: ``dev`` is the trip data (``ride_id``, ``rideable_type``, ``started_at`` and ``ended_at``
as ``YYYY-MM-DD HH:MM:SS.mmm``, ``start_station_name``, ``start_station_id``,
``end_station_name``, ``end_station_id``, ``start_lat``, ``start_lng``, ``end_lat``, ``end_lng``,
``member_casual``); ``test`` is a DataFrame (``VendorID``, ``PULocationID`` and ``DOLocationID``
int32, ``tpep_pickup_datetime`` and ``tpep_dropoff_datetime`` datetimes, ``passenger_count`` and
``RatecodeID`` floats with NaN, ``trip_distance``, ``store_and_fwd_flag`` with NaN, ``payment_type``
int64, ``fare_amount``, ``extra``, ``mta_tax``, ``tip_amount``, ``tolls_amount``,
``improvement_surcharge``, ``total_amount``, ``congestion_surcharge`` and ``Airport_fee`` floats):
other containers, fields, cities and wording.
"""

from __future__ import annotations

import csv
import io
import random
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction
from typing import TYPE_CHECKING

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["KINDS", "make"]

KINDS = ("count", "mean", "top", "lookup")

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _mean(values: list[int], scale: int) -> float | None:
    """The mean of whole ``1/scale``-ths, to two decimals; None where it lies on a rounding tie."""
    if not values:
        return None
    exact = Fraction(sum(values) * 100, len(values) * scale)
    whole = exact.numerator // exact.denominator
    if exact - whole == Fraction(1, 2):
        return None
    return (whole + (exact - whole > Fraction(1, 2))) / 100


# -- the dev trip data --------------------------------------------------------------------------

_STATIONS = (  # name, id, latitude, longitude, weight
    ("W 52 St & 11 Ave", "6926.01", 40.767272, -73.993929, 1.6),
    ("W 52 St & 11 Ave (NW Corner)", "6926.02", 40.767431, -73.994217, 0.7),
    ("12 Ave & W 40 St", "6765.01", 40.760875, -74.002777, 1.4),
    ("Broadway & W 58 St", "7023.04", 40.766953, -73.981693, 1.5),
    ("Central Park S & 6 Ave", "6948.10", 40.765909, -73.976342, 2.0),
    ("W 54 St & 9 Ave", "6920.05", 40.765849, -73.986905, 1.1),
    ("W 45 St & 8 Ave", "6676.02", 40.759291, -73.988597, 1.3),
    ("8 Ave & W 31 St", "6450.05", 40.750585, -73.994685, 1.8),
    ("W 33 St & 7 Ave", "6392.01", 40.750196, -73.990933, 1.5),
    ("Pier 40 - Hudson River Park", "5696.03", 40.727714, -74.011296, 1.2),
    ("West St & Chambers St", "5329.03", 40.717548, -74.013221, 1.3),
    ("Christopher St & Greenwich St", "5847.06", 40.732916, -74.007114, 0.9),
    ("E 17 St & Broadway", "6223.08", 40.737050, -73.990093, 1.4),
    ("Broadway & E 14 St", "6022.04", 40.734546, -73.990741, 1.2),
    ("Lafayette St & E 8 St", "5788.13", 40.730207, -73.991026, 1.0),
    ("1 Ave & E 68 St", "6822.09", 40.765005, -73.958185, 1.1),
    ("E 72 St & York Ave", "6824.07", 40.766638, -73.953483, 0.8),
    ("Grand Army Plaza & Central Park S", "6839.10", 40.764397, -73.973715, 1.5),
)


@dataclass
class Ride:
    ident: str
    electric: bool
    start: datetime
    end: datetime
    origin: int
    dest: int | None  # None: an electric bike left away from a station
    member: bool
    dest_at: tuple[float, float] | None = None
    origin_at: tuple[float, float] | None = None

    @property
    def ms(self) -> int:
        return round((self.end - self.start).total_seconds() * 1000)


def _near(a: int, weights: list[float], rng: random.Random) -> int:
    _, _, lat, lng, _ = _STATIONS[a]
    scores = [
        w / (0.002 + ((lat - s[2]) ** 2 + (lng - s[3]) ** 2) ** 0.5) if k != a else w * 2
        for k, (s, w) in enumerate(zip(_STATIONS, weights, strict=True))
    ]
    return rng.choices(range(len(_STATIONS)), scores)[0]


def _ride(rng: random.Random, t: datetime, weights: list[float], ident: str) -> Ride:
    origin = rng.choices(range(len(_STATIONS)), weights)[0]
    electric = rng.random() < 0.42
    member = rng.random() < 0.74
    dest: int | None = _near(origin, weights, rng)
    seconds = rng.lognormvariate(6.5 if member else 7.0, 0.6) * (0.75 if electric else 1.0)
    if rng.random() < 0.03:  # a false start: docked again where it began
        dest, seconds = origin, rng.uniform(8, 70)
    ride = Ride(ident, electric, t, t + timedelta(seconds=seconds), origin, dest, member)
    _, _, lat, lng, _ = _STATIONS[origin]
    if electric:
        ride.origin_at = (round(lat + rng.uniform(-2e-4, 2e-4), 6), round(lng + rng.uniform(-2e-4, 2e-4), 6))
        if rng.random() < 0.08:
            d = _STATIONS[ride.dest or 0]
            ride.dest, ride.dest_at = (
                None,
                (round(d[2] + rng.uniform(-0.01, 0.01), 2), round(d[3] + rng.uniform(-0.01, 0.01), 2)),
            )
    return ride


def _dev_rides(seed: str, n: int) -> list[Ride]:
    rng = random.Random(f"{seed}/{n}")
    days = max(1, min(30, round(n / 60)))
    first = datetime(2024, 4, 1) + timedelta(days=rng.randrange(0, 150))
    weights = [s[4] * rng.uniform(0.5, 1.7) for s in _STATIONS]
    rides = []
    ids: set[str] = set()
    for _ in range(n):
        day = first + timedelta(days=rng.randrange(days))
        hour = rng.choices(
            range(24), [1, 0.5, 0.3, 0.2, 0.2, 0.5, 2, 5, 8, 6, 4, 4, 5, 5, 5, 6, 7, 9, 8, 6, 4, 3, 2, 1.5]
        )[0]
        t = day + timedelta(hours=hour, seconds=rng.uniform(0, 3600))
        t = t.replace(microsecond=t.microsecond // 1000 * 1000)
        ident = f"{rng.getrandbits(64):016X}"
        while ident in ids:
            ident = f"{rng.getrandbits(64):016X}"
        ids.add(ident)
        ride = _ride(rng, t, weights, ident)
        ride.end = ride.end.replace(microsecond=ride.end.microsecond // 1000 * 1000)
        rides.append(ride)
    return rides


def _stamp(t: datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S}.{t.microsecond // 1000:03d}"


def _trip_csv(rides: list[Ride]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        ["ride_id", "rideable_type", "started_at", "ended_at", "start_station_name", "start_station_id",
         "end_station_name", "end_station_id", "start_lat", "start_lng", "end_lat", "end_lng",
         "member_casual"]
    )  # fmt: skip
    for r in rides:
        origin = _STATIONS[r.origin]
        start_at = r.origin_at or (origin[2], origin[3])
        if r.dest is None:
            end_name, end_id, end_at = "", "", r.dest_at
        else:
            d = _STATIONS[r.dest]
            end_name, end_id, end_at = d[0], d[1], (d[2], d[3])
        w.writerow(
            [r.ident, "electric_bike" if r.electric else "classic_bike", _stamp(r.start), _stamp(r.end),
             origin[0], origin[1], end_name, end_id, *start_at, *end_at, "member" if r.member else "casual"]
        )  # fmt: skip
    return buf.getvalue()


# -- the test taxi trips ------------------------------------------------------------------------

_ZONES = (  # LocationID, weight as a pickup, airport fee
    (132, 1.2, True),  # JFK Airport
    (138, 1.0, True),  # LaGuardia Airport
    (161, 2.2, False),  # Midtown Center
    (162, 1.9, False),  # Midtown East
    (230, 1.8, False),  # Times Sq/Theatre District
    (236, 2.0, False),  # Upper East Side North
    (237, 2.1, False),  # Upper East Side South
    (186, 1.6, False),  # Penn Station/Madison Sq West
    (170, 1.5, False),  # Murray Hill
    (142, 1.5, False),  # Lincoln Square East
    (48, 1.4, False),  # Clinton East
    (79, 1.3, False),  # East Village
    (234, 1.4, False),  # Union Sq
    (68, 1.3, False),  # East Chelsea
    (249, 1.0, False),  # West Village
    (264, 0.3, False),  # Unknown
)


@dataclass
class Trip:
    vendor: int
    pickup: datetime
    dropoff: datetime
    passengers: int | None
    miles: int  # hundredths
    rate: int | None
    flag: str | None
    pu: int
    do: int
    payment: int
    fare: int  # cents
    extra: int
    tip: int
    tolls: int
    congestion: int | None
    airport: int | None

    @property
    def total(self) -> int:
        return (
            self.fare
            + self.extra
            + 50 * self.sign
            + self.tip
            + self.tolls
            + 100 * self.sign
            + (self.congestion or 0)
            + (self.airport or 0)
        )

    @property
    def sign(self) -> int:
        return -1 if self.fare < 0 else 1


def _taxi(rng: random.Random, t: datetime) -> Trip:
    zones = [z[0] for z in _ZONES]
    pu = rng.choices(zones, [z[1] for z in _ZONES])[0]
    airport = pu in (132, 138)
    do = rng.choices(zones, [z[1] * (0.2 if airport and z[2] else 1) for z in _ZONES])[0]
    miles = round((rng.uniform(9, 20) if airport or do in (132, 138) else rng.lognormvariate(0.5, 0.6)) * 100)
    minutes = miles / 100 * rng.uniform(3, 6) + rng.uniform(1, 6)
    flat = pu == 132 and do != 132 and rng.random() < 0.7
    fare = 7000 if flat else round((300 + 350 * miles / 100 + 35 * minutes) / 10) * 10
    evening = t.hour >= 20 or t.hour < 6
    rush = 16 <= t.hour < 20 and t.weekday() < 5
    flex = rng.random() < 0.05
    payment = 0 if flex else rng.choices((1, 2, 3, 4), (75, 20, 1, 1))[0]
    tip = round(
        (fare * rng.choice((0.15, 0.2, 0.25, 0.3)) + rng.randrange(0, 60))
        if payment == 1 and rng.random() < 0.85
        else 0
    )
    return Trip(
        rng.choices((1, 2), (1, 3))[0],
        t,
        (t + timedelta(minutes=minutes, seconds=rng.randrange(60))).replace(microsecond=0),
        None if flex else rng.choices((1, 2, 3, 4, 5, 6, 0), (70, 15, 4, 2, 3, 2, 1))[0],
        miles,
        None if flex else (2 if flat else rng.choices((1, 5, 99), (60, 1, 0.3))[0]),
        None if flex else rng.choices(("N", "Y"), (99, 1))[0],
        pu,
        do,
        payment,
        fare,
        0 if flat else (100 if evening else 250 if rush else 0),
        tip,
        694 if (airport or do in (132, 138)) and rng.random() < 0.4 else 0,
        None if flex else (250 if not airport or do not in (132, 138) else 0),
        None if flex else (175 if pu in (132, 138) else 0),
    )


def _reverse(trip: Trip) -> Trip:
    """The row that takes a disputed or voided trip's amounts back."""
    return Trip(
        trip.vendor, trip.pickup, trip.dropoff, trip.passengers, trip.miles, trip.rate, trip.flag, trip.pu,
        trip.do, 4 if trip.payment != 3 else 3, -trip.fare, -trip.extra, -trip.tip, -trip.tolls,
        None if trip.congestion is None else -trip.congestion,
        None if trip.airport is None else -trip.airport,
    )  # fmt: skip


def _test_trips(seed: str, n: int) -> list[Trip]:
    rng = random.Random(f"{seed}/{n}")
    days = max(1, min(31, round(n / 150)))
    first = datetime(2024, 1, 1) + timedelta(days=rng.randrange(0, 300))
    trips: list[Trip] = []
    while len(trips) < n:
        day = first + timedelta(days=rng.randrange(days))
        hour = rng.choices(
            range(24),
            [3, 2, 1.5, 1, 0.7, 0.8, 2, 4, 6, 6, 5.5, 5.5, 6, 6, 6.5, 7, 7, 7.5, 8, 7.5, 6.5, 6, 5, 4],
        )[0]
        t = day + timedelta(hours=hour, seconds=rng.randrange(3600))
        trip = _taxi(rng, t)
        trips.append(trip)
        if trip.payment in (3, 4) and rng.random() < 0.7:
            trips.append(_reverse(trip))
    trips = trips[:n]
    trips.sort(key=lambda x: x.pickup)
    return trips


def _frame(trips: list[Trip]) -> pd.DataFrame:
    import pandas as pd  # only here: listing and the dev split need no pandas

    nan = float("nan")

    def money(values: list) -> list[float]:
        return [nan if v is None else v / 100 for v in values]

    return pd.DataFrame(
        {
            "VendorID": pd.array([x.vendor for x in trips], dtype="int32"),
            "tpep_pickup_datetime": pd.to_datetime([x.pickup for x in trips]).astype("datetime64[us]"),
            "tpep_dropoff_datetime": pd.to_datetime([x.dropoff for x in trips]).astype("datetime64[us]"),
            "passenger_count": [nan if x.passengers is None else float(x.passengers) for x in trips],
            "trip_distance": [x.miles / 100 for x in trips],
            "RatecodeID": [nan if x.rate is None else float(x.rate) for x in trips],
            "store_and_fwd_flag": [nan if x.flag is None else x.flag for x in trips],
            "PULocationID": pd.array([x.pu for x in trips], dtype="int32"),
            "DOLocationID": pd.array([x.do for x in trips], dtype="int32"),
            "payment_type": pd.array([x.payment for x in trips], dtype="int64"),
            "fare_amount": money([x.fare for x in trips]),
            "extra": money([x.extra for x in trips]),
            "mta_tax": money([50 * x.sign for x in trips]),
            "tip_amount": money([x.tip for x in trips]),
            "tolls_amount": money([x.tolls for x in trips]),
            "improvement_surcharge": money([100 * x.sign for x in trips]),
            "total_amount": money([x.total for x in trips]),
            "congestion_surcharge": money([x.congestion for x in trips]),
            "Airport_fee": money([x.airport for x in trips]),
        }
    )


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    """The rides (or trips) nearest the size asked for, of a few tries."""
    per = 205 if split == "dev" else 150
    n = max(8, chars // per)
    best: tuple[float, object, object, int] | None = None
    for _ in range(8):
        if split == "dev":
            data: object = _dev_rides(seed, n)
            context: object = _trip_csv(data)
        else:
            data = _test_trips(seed, n)
            context = _frame(data)
        size = len(as_text(context))
        miss = abs(size - chars) / chars
        if best is None or miss < best[0]:
            best = (miss, data, context, n)
        if 0.9 * chars <= size <= 1.1 * chars:
            break
        n = max(8, round(n * chars / size))
    assert best is not None
    return best[1], best[2], best[3]


# -- questions ----------------------------------------------------------------------------------


def _name(k: int) -> str:
    return _STATIONS[k][0]


def _day(t: datetime) -> str:
    return f"{t:%B} {t.day}, {t.year}"


def _dev_count(rng: random.Random, rides: list[Ride]) -> _Asked:
    r = rng.choice(rides)
    day = r.start.date()
    if rng.random() < 0.5:
        n = sum(x.origin == r.origin and x.member and x.start.date() == day for x in rides)
        q = f"How many rides did members start at {_name(r.origin)} on {_day(r.start)}?"
        return q, n, {"station": _name(r.origin), "day": day.isoformat()}
    left = [x for x in rides if x.dest is None]
    if left:
        r = rng.choice(left)
        day = r.start.date()
    n = sum(x.dest is None and x.start.date() == day for x in rides)
    q = f"How many electric bike rides that started on {_day(r.start)} ended away from any station?"
    return q, n, {"day": day.isoformat()}


def _dev_mean(rng: random.Random, rides: list[Ride]) -> _Asked:
    r = rng.choice(rides)
    if rng.random() < 0.5:
        kind = "electric" if r.electric else "classic"
        mean = _mean([x.ms for x in rides if x.origin == r.origin and x.electric == r.electric], 60_000)
        q = (
            f"What is the mean duration in minutes, ended_at minus started_at, of the {kind} bike rides "
            f"that started at {_name(r.origin)}? Two decimals."
        )
        return None if mean is None else (q, mean, {"station": _name(r.origin), "type": f"{kind}_bike"})
    casual = [x for x in rides if not x.member] or [r]
    day = rng.choice(casual).start.date()
    mean = _mean([x.ms for x in rides if not x.member and x.start.date() == day], 60_000)
    q = f"What was the mean duration in minutes of the casual riders' rides started on {day}? Two decimals."
    return None if mean is None else (q, mean, {"day": day.isoformat()})


def _dev_top(rng: random.Random, rides: list[Ride]) -> _Asked:
    r = rng.choice(rides)
    if rng.random() < 0.5:
        top = _leader(Counter(_name(x.dest) for x in rides if x.origin == r.origin and x.dest is not None))
        q = f"Which station did the most rides that started at {_name(r.origin)} end at?"
        return None if top is None else (q, top, {"station": _name(r.origin), "by": "destination"})
    day = r.start.date()
    first = max(0, r.start.hour - rng.randrange(0, 3))
    last = min(24, first + rng.randrange(2, 5))
    top = _leader(
        Counter(_name(x.origin) for x in rides if x.start.date() == day and first <= x.start.hour < last)
    )
    q = f"Which station had the most departures on {_day(r.start)} from {first:02d}:00 to {last:02d}:00?"
    params = {"day": day.isoformat(), "from": first, "to": last, "by": "departures"}
    return None if top is None else (q, top, params)


def _dev_lookup(rng: random.Random, rides: list[Ride]) -> _Asked:
    r = rng.choice(rides)
    if r.dest is not None and rng.random() < 0.5:
        q = f"At which station did ride {r.ident} end?"
        return q, _name(r.dest), {"ride_id": r.ident, "field": "end_station_name"}
    q = f"At what time of day did ride {r.ident} start? Answer as HH:MM:SS."
    return q, f"{r.start:%H:%M:%S}", {"ride_id": r.ident, "field": "started_at"}


def _test_count(rng: random.Random, trips: list[Trip]) -> _Asked:
    t = rng.choice(trips)
    day = t.pickup.date()
    if rng.random() < 0.5:
        n = sum(
            x.pu == t.pu and x.payment == 1 and x.pickup.date() == day and x.pickup.hour == t.pickup.hour
            for x in trips
        )
        q = (
            f"Count the credit card trips (payment_type 1) picked up in PULocationID {t.pu} on {day} between "
            f"{t.pickup.hour:02d}:00 and {t.pickup.hour:02d}:59."
        )
        return q, n, {"PULocationID": t.pu, "day": day.isoformat(), "hour": t.pickup.hour}
    missing = [x for x in trips if x.passengers is None] or [t]
    day = rng.choice(missing).pickup.date()
    n = sum(x.passengers is None and x.pickup.date() == day for x in trips)
    q = f"Tally the trips picked up on {day.day} {day:%B %Y} whose passenger_count is missing."
    return q, n, {"day": day.isoformat()}


def _test_mean(rng: random.Random, trips: list[Trip]) -> _Asked:
    t = rng.choice(trips)
    if rng.random() < 0.5:
        mean = _mean([x.tip for x in trips if x.payment == 1 and x.do == t.do], 100)
        q = (
            "Give the average tip_amount of the card-paid trips (payment_type 1) dropped off in DOLocationID "
            f"{t.do}, to the cent."
        )
        return None if not mean else (q, mean, {"DOLocationID": t.do, "field": "tip_amount"})
    day = t.pickup.date()
    mean = _mean(
        [x.miles for x in trips if x.vendor == t.vendor and x.payment in (1, 2) and x.pickup.date() == day],
        100,
    )
    q = (
        f"Find the average trip_distance of VendorID {t.vendor}'s trips paid by card or cash (payment_type 1 "
        "or 2) "
        f"picked up on {day.day} {day:%B %Y}, to two decimals."
    )
    return (
        None
        if not mean
        else (q, mean, {"VendorID": t.vendor, "day": day.isoformat(), "field": "trip_distance"})
    )


def _test_top(rng: random.Random, trips: list[Trip]) -> _Asked:
    t = rng.choice(trips)
    if rng.random() < 0.5:
        top = _leader(Counter(x.do for x in trips if x.pu == t.pu))
        q = f"Find the DOLocationID that trips picked up in PULocationID {t.pu} most often went to."
        return None if top is None else (q, top, {"PULocationID": t.pu, "by": "DOLocationID"})
    day = t.pickup.date()
    top = _leader(Counter(x.pickup.hour for x in trips if x.pickup.date() == day))
    q = f"Name the hour of the day (0 to 23) with the most pickups on {day.day} {day:%B %Y}."
    return None if not top else (q, top, {"day": day.isoformat(), "by": "hour"})


def _test_lookup(rng: random.Random, trips: list[Trip]) -> _Asked:
    t = rng.choice([x for x in trips if x.fare > 0] or trips)
    if sum(x.pu == t.pu and x.pickup == t.pickup for x in trips) != 1:
        return None
    stamp = f"{t.pickup:%Y-%m-%d %H:%M:%S}"
    params = {"PULocationID": t.pu, "pickup": stamp}
    if rng.random() < 0.5:
        q = f"Report the total_amount of the trip picked up in PULocationID {t.pu} at {stamp}."
        return q, t.total / 100, {**params, "field": "total_amount"}
    q = f"Report the DOLocationID of the trip picked up at {stamp} in PULocationID {t.pu}."
    return q, t.do, {**params, "field": "DOLocationID"}


_DEV = {"count": _dev_count, "mean": _dev_mean, "top": _dev_top, "lookup": _dev_lookup}
_TEST = {"count": _test_count, "mean": _test_mean, "top": _test_top, "lookup": _test_lookup}


@family(
    "rides",
    "trip records: a bike share system's trip data CSV as a string (dev), or a city's taxi trip records as a "
    "pandas DataFrame (test)",
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
        container="string (bike share trip CSV)" if ref.split == "dev" else "DataFrame (taxi trip records)",
        trips=count,
    )
