"""Questions about parcel tracking: a carrier portal's export of tracking activity as one CSV
string (``dev``), or a carrier's tracking API response, shipments each with their events, as a
nested dict (``test``).

What a notebook holds when a small shop checks on what it sent: every package with its service,
weight and destination, and the scans it went through (label created, picked up, through one or
two hubs, out for delivery, delivered), with the odd exception or failed attempt on the way and a
few packages still on the road. Package numbers run in sequence, so numbers differ in a digit or
two; cities and products whose names nearly match another's stand beside each other. Packages are
added day by day until the text (or the indented JSON) is about the length asked for. Kinds of
question:

- ``count``: the packages of one service with an exception (``dev``), or the shipments to one city
  with a failed delivery attempt (``test``);
- ``total``: the weight of the packages bound for one state, in pounds (``dev``), or of one
  product's shipments, in kilograms (``test``);
- ``top``: the destination city with the most packages delivered in one month (``dev``), or the
  parcel centre with the most processing scans of one kind (``test``) (a clear leader);
- ``lookup``: who signed for one package (``dev``), or the local date one shipment was delivered
  (``test``).

Every answer is computed from the packages the generator wrote. Score: ``exact``.

Splits: ``dev`` is a CSV export, one row an activity, newest first within a package, with the
package's fields repeated on every row (``Tracking Number`` in the ``1Z`` form with its check
digit, ``Reference``, ``Service``, ``Ship Date``, ``Package Weight (LBS)``, ``Destination City``,
``Destination State``, ``Destination ZIP``, ``Activity Date``, ``Activity Time``, ``Status``,
``Activity``, ``Activity Location``, ``Signed By``); ``test`` is a unified tracking API's response
(``shipments`` with ``id``, ``service``, ``origin`` and ``destination`` addresses, ``status``,
``details`` with ``product``, ``weight`` and ``references``, ``events`` with ISO timestamps and
their UTC offsets, ``location``, ``statusCode``, ``status`` and ``description``): other
containers, fields, places and wording.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_DEV_SERVICES = (  # name, code in the number, days on the road
    ("UPS Ground", "03", (2, 5)),
    ("UPS 3 Day Select", "12", (3, 3)),
    ("UPS 2nd Day Air", "02", (2, 2)),
    ("UPS Next Day Air", "01", (1, 1)),
    ("UPS Next Day Air Saver", "13", (1, 1)),
)
_DEV_CITIES = (  # city, state, ZIP, the hub before it
    ("Columbus", "OH", "43215", "Columbus"),
    ("Dayton", "OH", "45402", "Columbus"),
    ("Columbia", "SC", "29201", "Atlanta"),
    ("Atlanta", "GA", "30303", "Atlanta"),
    ("Athens", "GA", "30601", "Atlanta"),
    ("Austin", "TX", "78701", "Dallas"),
    ("Boston", "MA", "02108", "Chelmsford"),
    ("Denver", "CO", "80202", "Commerce City"),
    ("Albany", "NY", "12207", "Parsippany"),
    ("Raleigh", "NC", "27601", "Raleigh"),
)
_HUB_STATE = {"Columbus": "OH", "Atlanta": "GA", "Dallas": "TX", "Chelmsford": "MA", "Commerce City": "CO",
              "Parsippany": "NJ", "Raleigh": "NC", "Louisville": "KY", "Hodgkins": "IL"}  # fmt: skip
_SIGNERS = ("MARTINEZ", "MARTINES", "JOHNSON", "JOHNSTON", "SMITH", "SMYTH", "NGUYEN", "OKAFOR",
            "BROWN", "BRAUN", "GARCIA", "LEE")  # fmt: skip

_TEST_PRODUCTS = ("DHL PAKET", "DHL PAKET Sperrgut", "Warenpost", "DHL Kleinpaket", "DHL Päckchen")
_ANNOUNCED = "The instruction data for this shipment have been provided by the sender to DHL electronically"
_NOT_THERE = "The recipient was not present. A 2nd attempt at delivery is being made"
_DELIVERED = ("The shipment has been successfully delivered", "The shipment has been successfully delivered",
              "The shipment has been delivered to the neighbour.",
              "The shipment has been delivered to the Packstation.")  # fmt: skip
_TEST_ORIGINS = (
    ("Leipzig", "04109", "Radefeld"),
    ("Bremen", "28195", "Bremen"),
    ("Nürnberg", "90402", "Feucht"),
)
_TEST_CITIES = (  # city, postal code, its parcel centre
    ("München", "80331", "Aschheim"),
    ("Köln", "50667", "Köln"),
    ("Hamburg", "20095", "Hamburg"),
    ("Berlin", "10115", "Börnicke"),
    ("Frankfurt am Main", "60311", "Obertshausen"),
    ("Frankfurt (Oder)", "15230", "Börnicke"),
    ("Halle (Saale)", "06108", "Radefeld"),
    ("Halle (Westf.)", "33790", "Bielefeld"),
    ("Dresden", "01067", "Ottendorf-Okrilla"),
    ("Stuttgart", "70173", "Köngen"),
)


@dataclass
class Event:
    when: datetime  # local time
    code: (
        str  # dev: label, transit, out, exception, delivered; test: pre-transit, transit, failure, delivered
    )
    text: str
    place: str  # dev: "CITY, ST"; test: a locality ("" where none)


@dataclass
class Parcel:
    number: str
    ref: str
    service: int  # dev: a service; test: a product
    shipped: datetime
    dest: int
    weight: float  # lbs (dev), kg (test)
    origin: int = 0
    events: list[Event] = field(default_factory=list)  # oldest first
    signer: str = ""


def _check_digit(body: str) -> int:
    """The check digit of a ``1Z`` number: letters read as digits, odd places doubled."""
    total = 0
    for i, c in enumerate(body):
        v = int(c) if c.isdigit() else (ord(c) - 63) % 10
        total += v * (2 if i % 2 else 1)
    return (10 - total % 10) % 10


def _weekday(day: datetime, days: int) -> datetime:
    while days > 0 or day.weekday() >= 5:
        day += timedelta(days=1)
        if day.weekday() < 5:
            days -= 1
    return day


def _dev_events(rng: random.Random, p: Parcel, last: datetime) -> None:
    low, high = _DEV_SERVICES[p.service][2]
    city, state, _, hub = _DEV_CITIES[p.dest]
    here = f"{city.upper()}, {state}"
    t = p.shipped.replace(hour=rng.randint(8, 12), minute=rng.randrange(60))
    add = p.events.append
    add(Event(t, "label", "Shipper created a label, UPS has not received the package yet.", ""))
    t = t.replace(hour=rng.randint(17, 19), minute=rng.randrange(60))
    add(Event(t, "transit", "Pickup Scan", "LEXINGTON, KY"))
    add(Event(t + timedelta(minutes=rng.randint(60, 180)), "transit", "Origin Scan", "LEXINGTON, KY"))
    t += timedelta(minutes=rng.randint(200, 300))
    add(Event(t, "transit", "Departed from Facility", "LEXINGTON, KY"))
    arrive = _weekday(p.shipped, rng.randint(low, high))
    hubs = ["Louisville"] if p.service in (3, 4) or rng.random() < 0.5 else ["Hodgkins"]
    if hub not in hubs:
        hubs.append(hub)
    step = (arrive.replace(hour=4) - t) / (len(hubs) + 1)  # the hubs between leaving and arriving
    for k, h in enumerate(hubs, 1):
        at = t + step * k
        where = f"{h.upper()}, {_HUB_STATE[h]}"
        add(Event(at, "transit", "Arrived at Facility", where))
        if p.service == 0 and rng.random() < 0.06:
            add(Event(at + timedelta(minutes=30), "exception",
                      "A severe weather condition has delayed delivery.", where))  # fmt: skip
            arrive = _weekday(arrive, 1)
        add(Event(at + step * rng.uniform(0.3, 0.7), "transit", "Departed from Facility", where))
    day = arrive
    if rng.random() < 0.12:
        add(Event(day.replace(hour=6, minute=rng.randrange(60)), "transit", "Out For Delivery Today", here))
        add(Event(day.replace(hour=rng.randint(11, 18), minute=rng.randrange(60)), "exception",
                  "The receiver was not available for delivery. We'll make a second attempt the next "
                  "business day.", here))  # fmt: skip
        day = _weekday(day, 1)
    add(
        Event(
            day.replace(hour=rng.randint(4, 5), minute=rng.randrange(60)),
            "transit",
            "Arrived at Facility",
            here,
        )
    )
    add(Event(day.replace(hour=7, minute=rng.randrange(60)), "out", "Out For Delivery Today", here))
    add(
        Event(day.replace(hour=rng.randint(10, 19), minute=rng.randrange(60)), "delivered", "Delivered", here)
    )
    p.events = [e for e in p.events if e.when <= last]
    if p.events[-1].code == "delivered":
        p.signer = rng.choice(_SIGNERS) if rng.random() < 0.7 else ""


def _test_events(rng: random.Random, p: Parcel, last: datetime) -> None:
    origin, _, centre = _TEST_ORIGINS[p.origin]
    city, _, dest_centre = _TEST_CITIES[p.dest]
    t = p.shipped.replace(hour=rng.randint(7, 12), minute=rng.randrange(60))
    add = p.events.append
    add(Event(t, "pre-transit", _ANNOUNCED, ""))
    t = t.replace(hour=rng.randint(15, 18), minute=rng.randrange(60))
    add(Event(t, "transit", "The shipment has been picked up", origin))
    t += timedelta(hours=rng.randint(3, 5), minutes=rng.randrange(60))
    add(Event(t, "transit", "The shipment has been processed in the parcel center of origin", centre))
    day = _weekday(p.shipped, rng.randint(1, 2))
    if dest_centre != centre or rng.random() < 0.5:
        t = day.replace(hour=rng.randint(1, 4), minute=rng.randrange(60))
        add(
            Event(
                t, "transit", "The shipment has been processed in the destination parcel center", dest_centre
            )
        )
    add(Event(day.replace(hour=rng.randint(6, 8), minute=rng.randrange(60)), "transit",
              "The shipment has been loaded onto the delivery vehicle", city))  # fmt: skip
    if rng.random() < 0.15:
        add(Event(day.replace(hour=rng.randint(10, 17), minute=rng.randrange(60)), "failure",
                  _NOT_THERE, city))  # fmt: skip
        day = _weekday(day, 1)
        add(Event(day.replace(hour=7, minute=rng.randrange(60)), "transit",
                  "The shipment has been loaded onto the delivery vehicle", city))  # fmt: skip
    how = rng.choice(_DELIVERED)
    add(Event(day.replace(hour=rng.randint(10, 19), minute=rng.randrange(60)), "delivered", how, city))
    p.events = [e for e in p.events if e.when <= last]


def _parcels(split: str, seed: str, n: int) -> list[Parcel]:
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    cities = _DEV_CITIES if dev else _TEST_CITIES
    city_weight = [rng.uniform(0.3, 2.0) for _ in cities]
    kinds = _DEV_SERVICES if dev else _TEST_PRODUCTS
    kind_weight = [rng.uniform(0.3, 2.0) for _ in kinds]
    origin_weight = [rng.uniform(0.3, 2.0) for _ in _TEST_ORIGINS]
    start = datetime(2024, 4, 1) if dev else datetime(2024, 10, 14)
    days = 42
    last = _weekday(start, days) + timedelta(hours=14)  # the time of the export
    seq = rng.randrange(1_000_000, 8_000_000)
    out: list[Parcel] = []
    while len(out) < n:
        shipped = _weekday(start, (len(out) + 1) * days // n)
        seq += rng.randint(1, 9)
        k = rng.choices(range(len(kinds)), kind_weight)[0]
        dest = rng.choices(range(len(cities)), city_weight)[0]
        if dev:
            body = f"A8R463{_DEV_SERVICES[k][1]}{seq:07d}"
            number = f"1Z{body}{_check_digit(body)}"
            weight = round(rng.uniform(0.4, 38.0), 1)
            ref = f"#{5000 + len(out) * 3 + rng.randint(0, 2)}"
        else:
            number = f"00340434{seq:012d}"
            low, high = ((0.6, 24.0), (5.0, 31.5), (0.1, 1.0), (0.1, 1.0), (0.2, 2.0))[k]
            weight = round(rng.uniform(low, high), 2)
            ref = f"BO-{rng.randrange(100000, 999999)}"
        p = Parcel(number, ref, k, shipped, dest, weight)
        if dev:
            _dev_events(rng, p, last)
        else:
            p.origin = rng.choices(range(len(_TEST_ORIGINS)), origin_weight)[0]
            _test_events(rng, p, last)
        out.append(p)
    return out


# -- the files ----------------------------------------------------------------------------------


def _q(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'


def _ampm(t: datetime) -> str:
    return f"{(t.hour - 1) % 12 + 1}:{t.minute:02d} {'A.M.' if t.hour < 12 else 'P.M.'}"


_STATUS = {"label": "Label Created", "transit": "In Transit", "out": "Out For Delivery",
           "exception": "Exception", "delivered": "Delivered"}  # fmt: skip


def _csv(parcels: list[Parcel]) -> str:
    head = ("Tracking Number", "Reference", "Service", "Ship Date", "Package Weight (LBS)",
            "Destination City", "Destination State", "Destination ZIP", "Activity Date", "Activity Time",
            "Status", "Activity", "Activity Location", "Signed By")  # fmt: skip
    lines = [",".join(_q(h) for h in head)]
    for p in parcels:
        city, state, zip_code, _ = _DEV_CITIES[p.dest]
        for e in reversed(p.events):
            row = (
                p.number, p.ref, _DEV_SERVICES[p.service][0], f"{p.shipped:%m/%d/%Y}", f"{p.weight:.1f}",
                city, state, zip_code, f"{e.when:%m/%d/%Y}", _ampm(e.when), _STATUS[e.code], e.text,
                f"{e.place}, US" if e.place else "US", p.signer if e.code == "delivered" else "",
            )  # fmt: skip
            lines.append(",".join(_q(v) for v in row))
    return "\r\n".join(lines) + "\r\n"


def _offset(t: datetime) -> str:
    """Berlin's UTC offset at a local time: summer time from the last Sunday of March to the last
    Sunday of October."""

    def last_sunday(month: int) -> datetime:
        d = datetime(t.year, month, 31)
        return d - timedelta(days=(d.weekday() + 1) % 7)

    return "+02:00" if last_sunday(3).replace(hour=2) <= t < last_sunday(10).replace(hour=3) else "+01:00"


_STATUS_TEXT = {"pre-transit": "Electronic notification", "transit": "In transit",
                "failure": "Delivery failed", "delivered": "Delivered"}  # fmt: skip


def _event(e: Event) -> dict:
    out: dict = {"timestamp": f"{e.when:%Y-%m-%dT%H:%M:%S}{_offset(e.when)}"}
    if e.place:
        out["location"] = {"address": {"addressLocality": e.place}}
    return out | {"statusCode": e.code, "status": _STATUS_TEXT[e.code], "description": e.text}


def _response(parcels: list[Parcel], seed: str) -> dict:
    rng = random.Random(seed)
    shipments = []
    for p in parcels:
        origin, opc, _ = _TEST_ORIGINS[p.origin]
        city, pc, _ = _TEST_CITIES[p.dest]
        events = [_event(e) for e in reversed(p.events)]
        s: dict = {
            "id": p.number,
            "service": "parcel-de",
            "origin": {"address": {"countryCode": "DE", "postalCode": opc, "addressLocality": origin}},
            "destination": {"address": {"countryCode": "DE", "postalCode": pc, "addressLocality": city}},
            "status": events[0],
        }
        if p.events[-1].code != "delivered":
            s["estimatedTimeOfDelivery"] = f"{_weekday(p.events[-1].when, 1):%Y-%m-%d}"
        s["details"] = {
            "product": {"productName": _TEST_PRODUCTS[p.service]},
            "proofOfDeliverySignedAvailable": p.events[-1].code == "delivered" and rng.random() < 0.3,
            "totalNumberOfPieces": 1,
            "pieceIds": [f"JJD00{rng.randrange(10**17, 10**18)}"],
            "weight": {"value": p.weight, "unitText": "kg"},
            "references": [{"number": p.ref, "type": "customer-reference"}],
        }
        s["events"] = events
        shipments.append(s)
    return {"shipments": shipments, "possibleAdditionalShipmentsUrl": []}


def _fit(split: str, seed: str, chars: int) -> tuple[list[Parcel], object]:
    per = 1900 if split == "dev" else 2900
    n = max(2, chars // per)
    for _ in range(6):
        parcels = _parcels(split, seed, n)
        context = _csv(parcels) if split == "dev" else _response(parcels, seed)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(2, round(n * chars / size))
    return parcels, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _has(p: Parcel, code: str) -> bool:
    return any(e.code == code for e in p.events)


def _ask_count(split: str, rng: random.Random, parcels: list[Parcel]) -> _Asked:
    if split == "dev":
        p = rng.choice([x for x in parcels if _has(x, "exception")] or parcels)
        service = _DEV_SERVICES[p.service][0]
        n = sum(x.service == p.service and _has(x, "exception") for x in parcels)
        q = f"How many packages shipped with {service} show at least one Exception status?"
        return q, n, {"service": service}
    p = rng.choice([x for x in parcels if _has(x, "failure")] or parcels)
    city = _TEST_CITIES[p.dest][0]
    n = sum(x.dest == p.dest and _has(x, "failure") for x in parcels)
    q = f"Count the shipments addressed to {city} that have a failure event (a failed delivery attempt)."
    return q, n, {"city": city}


def _ask_total(split: str, rng: random.Random, parcels: list[Parcel]) -> _Asked:
    p = rng.choice(parcels)
    if split == "dev":
        state = _DEV_CITIES[p.dest][1]
        total = sum(x.weight for x in parcels if _DEV_CITIES[x.dest][1] == state)
        q = f"What is the combined weight, in pounds, of all the packages going to the state {state}?"
        return q, round(total, 1), {"state": state}
    product = _TEST_PRODUCTS[p.service]
    total = sum(x.weight for x in parcels if x.service == p.service)
    q = f'Add up the weight of the shipments whose product is exactly "{product}": how many kg is that?'
    return q, round(total, 2), {"product": product}


def _ask_top(split: str, rng: random.Random, parcels: list[Parcel]) -> _Asked:
    counts: dict = {}
    if split == "dev":
        month = rng.choice([x.events[-1].when for x in parcels if _has(x, "delivered")] or [None])
        if month is None:
            return None
        for x in parcels:
            if _has(x, "delivered") and (x.events[-1].when.year, x.events[-1].when.month) == (
                month.year,
                month.month,
            ):
                counts[_DEV_CITIES[x.dest][0]] = counts.get(_DEV_CITIES[x.dest][0], 0) + 1
        top = _leader(counts)
        q = f"Which destination city received the most packages delivered in {month:%B %Y}?"
        return None if top is None else (q, top, {"month": f"{month:%Y-%m}"})
    which = rng.choice(("parcel center of origin", "destination parcel center"))
    for x in parcels:
        for e in x.events:
            if e.text.endswith(which):
                counts[e.place] = counts.get(e.place, 0) + 1
    top = _leader(counts)
    q = f'At which location were the most events described as processed in the "{which}" recorded?'
    return None if top is None else (q, top, {"centre": which})


def _ask_lookup(split: str, rng: random.Random, parcels: list[Parcel]) -> _Asked:
    if split == "dev":
        p = rng.choice(parcels)
        if not p.signer:
            return None
        q = f"Who signed for package {p.number}?"
        return q, p.signer, {"number": p.number}
    p = rng.choice(parcels)
    if not _has(p, "delivered"):
        return None
    q = f"On what local date (YYYY-MM-DD) was shipment {p.number} delivered?"
    return q, f"{p.events[-1].when:%Y-%m-%d}", {"id": p.number}


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "parcels",
    "parcel tracking: a carrier portal's CSV export of tracking activity as a string (dev), or a tracking "
    "API's response as a nested dict (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    parcels, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, parcels), kind, "total", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (CSV export)" if ref.split == "dev" else "nested dict (tracking API)",
        packages=len(parcels),
    )
