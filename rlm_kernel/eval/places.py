"""Questions about map data: a GeoJSON feature collection as a nested dict (``dev``) or a KML file as
one string (``test``).

What a notebook holds after loading a city's open-data layer or a map exported from a mapping
tool: points of several categories, each with a name, coordinates and a few attributes (a number,
a district or operator, a date). Names that extend another's stand beside each other. Points are
added until the indented JSON (or the text) is about the length asked for. Kinds of question:

- ``inside``: how many points of one category lie inside a longitude and latitude box;
- ``total``: the sum of one attribute over the points of one category in one district (``dev``),
  or of one operator (``test``);
- ``nearest``: the name of the point of one category closest to a given position (clearly closer
  than the next one, by great-circle distance and by plain degrees alike);
- ``opened``: how many points of one category opened (``dev``) or were commissioned (``test``)
  between two dates, both included.

Every answer is computed from the points the generator wrote. Score: ``exact`` (numbers as
numbers, names without case).

Splits: ``dev`` is a city's GeoJSON ``FeatureCollection`` of amenities (``features`` with
``geometry.coordinates`` as ``[lon, lat]`` and ``properties`` ``name``, ``amenity``, ``district``,
``capacity``, ``opened`` as ``YYYY-MM-DD``); ``test`` is a KML 2.2 document of a region's charging
and rental stations (``<Folder>`` per category, ``<Placemark>`` with ``<name>``, ``<ExtendedData>``
``<Data name="operator|points|power_kw|commissioned">`` with dates as ``DD/MM/YYYY``, and
``<coordinates>lon,lat,0</coordinates>``): other containers, fields, places and wording.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import date, timedelta
from xml.sax.saxutils import escape

from .tasks import Task, TaskRef, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("inside", "total", "nearest", "opened")


@dataclass(frozen=True)
class _Domain:
    categories: tuple[tuple[str, str, tuple[int, int]], ...]  # category, its word in names, number range
    groups: tuple[str, ...]  # districts (dev) or operators (test)
    words: tuple[str, ...]  # the second word of names
    box: tuple[float, float, float, float]  # west, south, east, north


_DEV = _Domain(
    categories=(("cafe", "Café", (12, 80)), ("library", "Library", (40, 400)),
                ("playground", "Playground", (10, 60)), ("pharmacy", "Pharmacy", (2, 8)),
                ("bicycle_parking", "Bike Parking", (8, 120)), ("theatre", "Theatre", (80, 900))),
    groups=("Mitte", "Kreuzberg", "Neukölln", "Pankow", "Wedding", "Moabit", "Friedrichshain", "Schöneberg"),
    words=("Linde", "Linden", "Sonne", "Sonnenhof", "Spree", "Spreeufer", "Kiez", "Kiezecke", "Am Park",
           "Am Parkring", "Morgenrot", "Nordstern", "Eiche", "Eichengrund", "Rosen", "Rosengarten",
           "Mühle", "Mühlenweg", "Hafen", "Hafenblick", "Brücke", "Brückenhaus", "Ufer", "Uferweg",
           "Markt", "Marktplatz", "Schloss", "Schlossgarten", "Turm", "Turmblick"),
    box=(13.28, 52.44, 13.52, 52.58),
)  # fmt: skip

_TEST = _Domain(
    categories=(("Fast chargers", "Supercharge", (4, 20)), ("Destination chargers", "Charge Point", (2, 8)),
                ("Bike rental", "Bike Station", (6, 40)), ("Car sharing", "Car Share", (2, 12)),
                ("Scooter hubs", "Scooter Hub", (5, 30))),
    groups=("VoltNet", "VoltNet Plus", "GreenCharge", "CityRide", "Alpha Mobility", "Alpha Mobility Pro"),
    words=("Lakeview", "Lakeview North", "Old Mill", "Old Mill Yard", "Harbor", "Harbor Point", "Summit",
           "Summit Ridge", "Pine Hollow", "Pine", "Cedar", "Cedar Park", "Union", "Union Square", "Maple",
           "Maple Grove", "Riverside", "Riverside Mall", "Station", "Station Plaza", "Granite",
           "Granite Falls", "Meadow", "Meadowbrook", "Bay", "Bayfront", "Oak", "Oakridge"),
    box=(-122.55, 47.45, -122.15, 47.75),
)  # fmt: skip


@dataclass
class Place:
    id: str
    name: str
    category: str
    group: str  # district (dev) or operator (test)
    number: int  # capacity (dev) or charging/rental points (test)
    opened: date
    lon: float
    lat: float
    extra: int = 0  # power in kW (test, chargers)


def _places(split: str, rng: random.Random, chars: int) -> list[Place]:
    d = _DEV if split == "dev" else _TEST
    per = 362 if split == "dev" else 452  # about what a point costs as text
    west, south, east, north = d.box
    names: set[str] = set()
    places: list[Place] = []
    while len(places) * per < chars - 500:
        category, word, (lo, hi) = rng.choice(d.categories)
        name = f"{word} {rng.choice(d.words)}"
        n = 2
        while name in names:  # a second one of a name gets a number, as map layers do
            name = f"{name.rsplit(' #', 1)[0]} #{n}"
            n += 1
        names.add(name)
        lon = round(rng.uniform(west, east), 6)
        lat = round(rng.uniform(south, north), 6)
        opened = date(2008, 1, 1) + timedelta(days=rng.randint(0, 16 * 365))
        if split == "dev":  # districts follow the map: a grid of them
            col = min(3, int((lon - west) / (east - west) * 4))
            row = min(1, int((lat - south) / (north - south) * 2))
            group = d.groups[row * 4 + col]
        else:
            group = rng.choice(d.groups)
        pid = f"node/{rng.randint(10**9, 10**10)}" if split == "dev" else f"pm-{len(places) + 1:04d}"
        extra = (
            rng.choice((50, 150, 250) if category == "Fast chargers" else (11, 22))
            if "charg" in category
            else 0
        )
        places.append(Place(pid, name, category, group, rng.randint(lo, hi), opened, lon, lat, extra))
    return places


# -- the files ----------------------------------------------------------------------------------


def _geojson(places: list[Place], rng: random.Random) -> dict:
    features = []
    for p in places:
        properties = {
            "name": p.name,
            "amenity": p.category,
            "district": p.group,
            "capacity": p.number,
            "opened": f"{p.opened:%Y-%m-%d}",
            "wheelchair": rng.choice(("yes", "no", "limited")),
        }
        if rng.random() < 0.3:
            properties["website"] = f"https://example.berlin/{p.id.split('/')[1]}"
        features.append(
            {
                "type": "Feature",
                "id": p.id,
                "geometry": {"type": "Point", "coordinates": [p.lon, p.lat]},
                "properties": properties,
            }
        )
    return {
        "type": "FeatureCollection",
        "name": "amenities_berlin",
        "crs": {"type": "name", "properties": {"name": "urn:ogc:def:crs:OGC:1.3:CRS84"}},
        "features": features,
    }


def _kml(places: list[Place], rng: random.Random) -> str:
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<kml xmlns="http://www.opengis.net/kml/2.2">',
        "<Document>",
        "  <name>Puget Sound mobility stations</name>",
        "  <description>Exported from the regional mobility map</description>",
    ]
    for category, *_ in _TEST.categories:
        mine = [p for p in places if p.category == category]
        if not mine:
            continue
        out += ["  <Folder>", f"    <name>{escape(category)}</name>"]
        for p in mine:
            data = [("operator", p.group), ("points", str(p.number))]
            if p.extra:
                data.append(("power_kw", str(p.extra)))
            data.append(("commissioned", f"{p.opened:%d/%m/%Y}"))
            out += [
                f'    <Placemark id="{p.id}">',
                f"      <name>{escape(p.name)}</name>",
                "      <styleUrl>#icon-" + str(rng.randint(1000, 1999)) + "</styleUrl>",
                "      <ExtendedData>",
                *(f'        <Data name="{k}"><value>{escape(v)}</value></Data>' for k, v in data),
                "      </ExtendedData>",
                f"      <Point><coordinates>{p.lon:.6f},{p.lat:.6f},0</coordinates></Point>",
                "    </Placemark>",
            ]
        out.append("  </Folder>")
    out += ["</Document>", "</kml>"]
    return "\n".join(out) + "\n"


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def haversine_km(lon1: float, lat1: float, lon2: float, lat2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6371.0088 * math.asin(math.sqrt(a))


def _category(split: str, rng: random.Random, places: list[Place]) -> str:
    return rng.choice(places).category


def _ask_inside(split: str, rng: random.Random, places: list[Place]) -> _Asked:
    west, south, east, north = (_DEV if split == "dev" else _TEST).box
    category = _category(split, rng, places)
    w = round(rng.uniform(west, (west + east) / 2), 3)
    e = round(rng.uniform(w + (east - west) / 5, east), 3)
    s = round(rng.uniform(south, (south + north) / 2), 3)
    n = round(rng.uniform(s + (north - south) / 5, north), 3)
    if any(p.lon in (w, e) or p.lat in (s, n) for p in places):
        return None  # none on the edge
    count = sum(p.category == category and w < p.lon < e and s < p.lat < n for p in places)
    params = {"category": category, "west": w, "east": e, "south": s, "north": n}
    if split == "dev":
        q = (
            f"How many features with amenity '{category}' lie inside the box from longitude {w} to {e} "
            f"and latitude {s} to {n}?"
        )
        return q, count, params
    q = (
        f"Count the placemarks in the folder {category} that fall between the south-west corner "
        f"(lat {s}, lon {w}) and the north-east corner (lat {n}, lon {e})."
    )
    return q, count, params


def _ask_total(split: str, rng: random.Random, places: list[Place]) -> _Asked:
    p = rng.choice(places)
    if split == "dev":
        total = sum(x.number for x in places if x.category == p.category and x.group == p.group)
        q = f"What is the total capacity of all '{p.category}' amenities in the district {p.group}?"
        return q, total, {"category": p.category, "district": p.group}
    total = sum(x.number for x in places if x.group == p.group)
    q = f"Add up the points (the 'points' data field) of every placemark whose operator is exactly {p.group}."
    return q, total, {"operator": p.group}


def _ask_nearest(split: str, rng: random.Random, places: list[Place]) -> _Asked:
    west, south, east, north = (_DEV if split == "dev" else _TEST).box
    category = _category(split, rng, places)
    lon, lat = round(rng.uniform(west, east), 4), round(rng.uniform(south, north), 4)
    mine = [p for p in places if p.category == category]
    if len(mine) < 2:
        return None
    by_km = sorted(mine, key=lambda p: haversine_km(lon, lat, p.lon, p.lat))
    by_deg = sorted(mine, key=lambda p: math.hypot(p.lon - lon, p.lat - lat))
    first, second = (haversine_km(lon, lat, p.lon, p.lat) for p in by_km[:2])
    if by_km[0] is not by_deg[0] or second < 1.25 * first:
        return None  # a clear answer however the distance is measured
    params = {"category": category, "lon": lon, "lat": lat}
    if split == "dev":
        q = f"Which '{category}' (its name) is closest to the point at longitude {lon}, latitude {lat}?"
        return q, by_km[0].name, params
    q = f"Name the placemark in {category} nearest to {lat}° N, {abs(lon)}° W (lat, lon {lat}, {lon})."
    return q, by_km[0].name, params


def _ask_opened(split: str, rng: random.Random, places: list[Place]) -> _Asked:
    category = _category(split, rng, places)
    first = date(2008, 1, 1) + timedelta(days=rng.randint(0, 12 * 365))
    last = first + timedelta(days=rng.randint(200, 4 * 365))
    n = sum(p.category == category and first <= p.opened <= last for p in places)
    params = {"category": category, "from": f"{first}", "to": f"{last}"}
    if split == "dev":
        q = (
            f"How many '{category}' features opened between {first:%Y-%m-%d} and {last:%Y-%m-%d}, both "
            "days included?"
        )
        return q, n, params
    q = (
        f"In the folder {category}, how many stations were commissioned from {first.day} {first:%B %Y} "
        f"to {last.day} {last:%B %Y} inclusive?"
    )
    return q, n, params


_ASK = {"inside": _ask_inside, "total": _ask_total, "nearest": _ask_nearest, "opened": _ask_opened}


@family(
    "places",
    "map data: a GeoJSON feature collection as a dict (dev) or a KML string (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    places = _places(ref.split, rng, ref.chars)
    context: dict | str = _geojson(places, rng) if ref.split == "dev" else _kml(places, rng)
    kind = KINDS[ref.index % len(KINDS)]
    # other categories, boxes, points and dates, then a total, which is never zero
    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, places), kind, "total", nonzero=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict (GeoJSON)" if ref.split == "dev" else "string",
        places=len(places),
    )
