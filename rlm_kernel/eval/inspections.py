"""Questions about restaurant inspections: a city health department's inspection results from its
open data portal's API, the JSON rows loaded as a list of dicts (``dev``), or another city's food
inspections, the portal's CSV export read into a pandas DataFrame (``test``).

What a notebook holds when someone looks into how a city's kitchens fare: each establishment's
name, address, borough and cuisine, each inspection's date, type, action, score and grade, and each
violation cited with its code and whether it is critical; or each inspection's establishment,
licence, facility type and risk, its type and result, and the violations cited, numbered, with the
inspector's comments. The first city's portal writes every value as a string, leaves a key out where
its value is missing, writes one row per violation (the inspection's score and grade repeated on each
of its rows), lists establishments not yet inspected with the date ``1900-01-01``, grades only some
inspections and scores none of the administrative ones; chains share a name across locations and
names extend another's (``JOE'S PIZZA`` and ``JOE'S PIZZA & PASTA``). The second city's export
keeps one row per inspection with its violations in one text, ``" | "`` between them, each opened by
its number (``3.`` and ``33.`` and ``38.`` all occur), writes its dates ``MM/DD/YYYY``, leaves a
space after some addresses, and its licence numbers and zip codes load as floats, missing on some
rows. Rows (or inspections) are added until the JSON (or the frame as CSV) is about the length asked
for. Kinds of question:

- ``count``: the critical violations cited at one establishment, or the separate inspections in one
  borough in one month (``dev``); the failed inspections of one facility type, or the
  inspections that cited one violation number (``test``);
- ``mean``: the mean score of one cuisine's initial cycle inspections, or of one borough's scored
  inspections in one month (``dev``); the mean number of violations cited per inspection of one
  risk level in one month, or per failed inspection in one zip code (``test``);
- ``top``: the violation code cited most in one borough, or the establishment with the highest
  score in one borough (``dev``); the establishment name with the most failed inspections, or the
  zip code with the most canvass inspections in one month (``test``) (a clear leader);
- ``lookup``: one inspection's score, or the date of one establishment's latest inspection
  (``dev``); one inspection's result, or the licence number of the establishment inspected at one
  address on one day (``test``).

Every answer is computed from the inspections the generator wrote. Score: ``exact``.

Splits: ``dev`` is the rows (``camis``, ``dba``, ``boro``, ``building``, ``street``, ``zipcode``,
``phone``, ``cuisine_description``, ``inspection_date`` as ``YYYY-MM-DDT00:00:00.000``, ``action``,
``violation_code``, ``violation_description``, ``critical_flag``, ``score``, ``grade``,
``grade_date``, ``record_date``, ``inspection_type``, ``latitude``, ``longitude``,
``community_board``, ``council_district``, ``census_tract``, ``bin``, ``bbl``, ``nta``); ``test``
is a DataFrame (``Inspection ID`` int64, ``DBA Name``, ``AKA Name``, ``License #`` float,
``Facility Type``, ``Risk``, ``Address``, ``City``, ``State``, ``Zip`` float, ``Inspection Date``,
``Inspection Type``, ``Results``, ``Violations``, ``Latitude`` and ``Longitude`` floats,
``Location``; strings with NaN where missing): other containers, fields, cities and wording.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
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


def _mean(values: list[int]) -> float | None:
    """The mean of whole numbers, to two decimals; None where it lies on a rounding tie."""
    if not values:
        return None
    exact = Fraction(sum(values) * 100, len(values))
    whole = exact.numerator // exact.denominator
    if exact - whole == Fraction(1, 2):
        return None
    return (whole + (exact - whole > Fraction(1, 2))) / 100


def _month(d: date) -> str:
    return f"{d:%B %Y}"


# -- the dev inspection results -----------------------------------------------------------------

_BOROS = {  # name, digit, zip codes, streets, latitude, longitude, NTA codes
    "Manhattan": (
        "1",
        ("10001", "10002", "10003", "10011", "10014", "10016", "10019", "10036"),
        (
            "BROADWAY",
            "8 AVENUE",
            "WEST 14 STREET",
            "BLEECKER STREET",
            "LEXINGTON AVENUE",
            "CARMINE STREET",
            "2 AVENUE",
        ),
        40.745,
        -73.99,
        ("MN13", "MN17", "MN23", "MN24", "MN40"),
    ),
    "Brooklyn": (
        "3",
        ("11201", "11211", "11215", "11217", "11222", "11238"),
        ("BEDFORD AVENUE", "ATLANTIC AVENUE", "5 AVENUE", "FLATBUSH AVENUE", "COURT STREET"),
        40.69,
        -73.96,
        ("BK09", "BK37", "BK73", "BK76"),
    ),
    "Queens": (
        "4",
        ("11101", "11354", "11372", "11375", "11377"),
        ("ROOSEVELT AVENUE", "MAIN STREET", "37 AVENUE", "AUSTIN STREET", "QUEENS BOULEVARD"),
        40.74,
        -73.87,
        ("QN22", "QN28", "QN31", "QN63"),
    ),
    "Bronx": (
        "2",
        ("10451", "10453", "10458", "10461"),
        ("GRAND CONCOURSE", "FORDHAM ROAD", "EAST TREMONT AVENUE", "ARTHUR AVENUE"),
        40.85,
        -73.89,
        ("BX06", "BX41", "BX17"),
    ),
    "Staten Island": (
        "5",
        ("10301", "10304", "10314"),
        ("VICTORY BOULEVARD", "RICHMOND AVENUE", "FOREST AVENUE"),
        40.6,
        -74.12,
        ("SI01", "SI05", "SI37"),
    ),
}
_BORO_WEIGHTS = {"Manhattan": 4, "Brooklyn": 3, "Queens": 2.5, "Bronx": 1.2, "Staten Island": 0.6}
_CUISINES = {  # cuisine, names
    "Pizza": (
        "JOE'S PIZZA",
        "JOE'S PIZZA & PASTA",
        "PRINCE STREET PIZZA",
        "L'INDUSTRIE PIZZERIA",
        "2 BROS PIZZA",
        "ROSA'S PIZZA",
    ),
    "Chinese": (
        "GOLDEN DRAGON",
        "GOLDEN DRAGON KITCHEN",
        "NEW CHINA STAR",
        "JADE GARDEN",
        "XI'AN FAMOUS FOODS",
    ),
    "Coffee/Tea": ("STARBUCKS", "BLUE BOTTLE COFFEE", "JOE COFFEE", "CAFE GRUMPY", "PARIS BAGUETTE"),
    "American": ("THE SMITH", "CORNER BISTRO", "JACKSON HOLE", "BUBBY'S", "DINER 24"),
    "Italian": ("CARBONE", "VIA CAROTA", "ROSSO POMODORO", "LILIA", "TONY'S DI NAPOLI"),
    "Mexican": ("CHIPOTLE MEXICAN GRILL", "LOS TACOS NO. 1", "TACOMBI", "EL SAZON MEXICANO"),
    "Caribbean": ("GOLDEN KRUST", "GOLDEN KRUST CARIBBEAN BAKERY & GRILL", "ROTI SHOP", "JERK CENTER"),
    "Japanese": ("IPPUDO", "SUSHI YASUDA", "TAKAHACHI", "RAMEN SHACK"),
    "Donuts": ("DUNKIN'", "DOUGH", "PETER PAN DONUT & PASTRY SHOP"),
    "Latin American": ("LA ESQUINA", "PIO PIO", "EMPANADA MAMA", "BOGOTA LATIN BISTRO"),
    "Indian": ("ADDA", "DHABA", "BABU JI", "TAJ MAHAL"),
    "Bakery Products/Desserts": ("LEVAIN BAKERY", "MAGNOLIA BAKERY", "DOMINIQUE ANSEL BAKERY"),
}
_CHAINS = ("STARBUCKS", "CHIPOTLE MEXICAN GRILL", "DUNKIN'", "GOLDEN KRUST")
_VIOLATIONS = (  # code, description, flag, points
    ("02B", "Hot TCS food item not held at or above 140 °F.", "Critical", (7, 10)),
    (
        "02G",
        "Cold TCS food item held above 41 °F; smoked or processed fish held above 38 °F; intact raw eggs "
        "held above 45 °F; or reduced oxygen packaged (ROP) TCS foods held above required temperatures "
        "except during active necessary preparation.",
        "Critical",
        (7, 10),
    ),
    (
        "04H",
        "Raw, cooked or prepared food is adulterated, contaminated, cross-contaminated, or not discarded "
        "in accordance with HACCP plan.",
        "Critical",
        (7, 9),
    ),
    ("04L", "Evidence of mice or live mice in establishment's food or non-food areas.", "Critical", (5, 9)),
    (
        "04N",
        "Filth flies or food/refuse/sewage associated with (FRSA) flies or other nuisance pests in "
        "establishment’s food and/or non-food areas.",
        "Critical",
        (5, 9),
    ),
    (
        "06C",
        "Food, supplies, or equipment not protected from potential source of contamination during "
        "storage, preparation, transportation, display, service or at salad bar or buffet.",
        "Critical",
        (5, 7),
    ),
    (
        "06D",
        "Food contact surface not properly washed, rinsed and sanitized after each use and following any "
        "activity when contamination may have occurred.",
        "Critical",
        (5, 7),
    ),
    (
        "06E",
        "Sanitized equipment or utensil, including in-use food dispensing utensil, improperly used or "
        "stored.",
        "Critical",
        (5, 6),
    ),
    (
        "08A",
        "Establishment is not free of harborage or conditions conducive to rodents, insects or other pests.",
        "Not Critical",
        (2, 5),
    ),
    ("09C", "Food contact surface not properly maintained.", "Not Critical", (2, 4)),
    (
        "10B",
        "Anti-siphonage or back-flow prevention device not provided where required; equipment or floor "
        "not properly drained; sewage disposal system in disrepair or not functioning properly.",
        "Not Critical",
        (2, 5),
    ),
    (
        "10F",
        "Non-food contact surface or equipment made of unacceptable material, not kept clean, or not "
        "properly sealed, raised, spaced or movable to allow accessibility for cleaning on all sides, "
        "above and underneath the unit.",
        "Not Critical",
        (2, 5),
    ),
    ("10H", "Proper sanitization not provided for utensil ware washing operation.", "Not Critical", (2, 4)),
)
_ADMIN = (
    ("20-08", "No Choking First Aid Poster posted. “Alcohol and Pregnancy” warning sign not posted."),
    (
        "28-06",
        "Contract with a pest management professional not in place. Record of extermination activities "
        "not kept on premises.",
    ),
)
_INITIAL = "Cycle Inspection / Initial Inspection"
_CITED = "Violations were cited in the following area(s)."
_CLEAN = "No violations were recorded at the time of this inspection."
_CLOSED = (
    "Establishment Closed by DOHMH. Violations were cited in the following area(s) and those conditions "
    "were found to be an imminent health hazard and the establishment was ordered closed."
)
_REOPENED = "Establishment re-opened by DOHMH."


@dataclass
class Place:
    camis: str
    dba: str
    boro: str
    building: str
    street: str
    zipcode: str
    phone: str
    cuisine: str
    geo: dict[str, str]


@dataclass
class Inspection:
    place: Place
    day: date | None  # None: not yet inspected (1900-01-01)
    kind: str = ""
    action: str = ""
    score: int | None = None
    grade: str | None = None
    codes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return max(1, len(self.codes))


def _place(rng: random.Random, camis: str, used: set[str]) -> Place:
    cuisine = rng.choice(list(_CUISINES))
    names = [n for n in _CUISINES[cuisine] if n in _CHAINS or n not in used] or list(_CUISINES[cuisine])
    dba = rng.choice(names)
    used.add(dba)
    boro = rng.choices(list(_BOROS), list(_BORO_WEIGHTS.values()))[0]
    digit, zips, streets, lat, lon, ntas = _BOROS[boro]
    geo = {
        "latitude": f"{lat + rng.uniform(-0.03, 0.03):.6f}",
        "longitude": f"{lon + rng.uniform(-0.03, 0.03):.6f}",
        "community_board": f"{digit}{rng.randrange(1, 13):02d}",
        "council_district": f"{rng.randrange(1, 52):02d}",
        "census_tract": f"{rng.randrange(100, 99999):06d}",
        "bin": f"{digit}{rng.randrange(10**6):06d}",
        "bbl": f"{digit}{rng.randrange(10**9):09d}",
        "nta": rng.choice(ntas),
    }
    if rng.random() < 0.05:  # not geocoded: the portal writes zeros and no lot
        geo = {"latitude": "0", "longitude": "0"}
    phone = f"{rng.choice(('212', '718', '347', '646', '917'))}{rng.randrange(10**7):07d}"
    building = str(rng.randrange(1, 2400))
    if rng.random() < 0.1:
        building = f"{rng.randrange(10, 250)}-{rng.randrange(1, 90):02d}"
    return Place(camis, dba, boro, building, rng.choice(streets), rng.choice(zips), phone, cuisine, geo)


def _cite(rng: random.Random, count: int) -> tuple[list[str], int]:
    picks = rng.sample(range(len(_VIOLATIONS)), count)
    points = sum(rng.randint(*_VIOLATIONS[k][3]) for k in picks)
    return [_VIOLATIONS[k][0] for k in picks], points


def _grade(score: int) -> str:
    return "A" if score <= 13 else "B" if score <= 27 else "C"


def _cycle(rng: random.Random, place: Place, day: date) -> list[Inspection]:
    """An initial inspection, and a re-inspection where it scored 14 or more."""
    out = []
    codes, score = _cite(rng, rng.choices(range(0, 8), (6, 10, 14, 16, 14, 10, 6, 3))[0])
    first = Inspection(place, day, _INITIAL, _CITED if codes else _CLEAN, score, None, codes)
    if score <= 13:
        first.grade = "A"
    elif score >= 28 and rng.random() < 0.35:
        first.action = _CLOSED
    out.append(first)
    if score >= 14:
        later = day + timedelta(days=rng.randrange(7, 45))
        codes, score = _cite(rng, rng.choices(range(0, 5), (10, 16, 12, 6, 3))[0])
        again = Inspection(
            place,
            later,
            "Cycle Inspection / Re-inspection",
            _CITED if codes else _CLEAN,
            score,
            "Z" if rng.random() < 0.08 else _grade(score),
            codes,
        )
        if first.action == _CLOSED:
            again.action, again.kind = _REOPENED, "Cycle Inspection / Reopening Inspection"
        out.append(again)
    return out


def _history(rng: random.Random, place: Place, start: date, days: int) -> list[Inspection]:
    if rng.random() < 0.05:
        return [Inspection(place, None)]
    out: list[Inspection] = []
    day = start + timedelta(days=rng.randrange(0, 120))
    while day < start + timedelta(days=days) and len(out) < 5:
        out += _cycle(rng, place, day)
        if rng.random() < 0.15:
            admin = out[-1].day + timedelta(days=rng.randrange(3, 30))
            code = rng.choice(_ADMIN)[0]
            out.append(
                Inspection(
                    place,
                    admin,
                    "Administrative Miscellaneous / Initial Inspection",
                    _CITED,
                    None,
                    None,
                    [code],
                )
            )
        day = max(i.day for i in out if i.day) + timedelta(days=rng.randrange(150, 400))
    return out


def _dev_inspections(seed: str, n: int) -> list[Inspection]:
    rng = random.Random(f"{seed}/{n}")
    start = date(2021, 1, 4) + timedelta(days=rng.randrange(0, 700))
    days = max(60, min(900, n * 6))
    out: list[Inspection] = []
    used: set[str] = set()
    camis: set[str] = set()
    while sum(i.rows for i in out) < n:
        ident = str(rng.randrange(40_000_000, 50_200_000))
        if ident in camis:
            continue
        camis.add(ident)
        out += _history(rng, _place(rng, ident, used), start, days)
    return out


def _soda(when: date | None) -> str:
    return f"{when or date(1900, 1, 1)}T00:00:00.000"


def _rows(inspections: list[Inspection], seed: str) -> list[dict]:
    rng = random.Random(seed)
    refreshed = max([i.day for i in inspections if i.day] or [date(2024, 1, 1)])
    record = f"{refreshed + timedelta(days=rng.randrange(2, 9))}T06:00:{rng.randrange(10, 60)}.000"
    rows = []
    for i in inspections:
        p = i.place
        head = {
            "camis": p.camis,
            "dba": p.dba,
            "boro": p.boro,
            "building": p.building,
            "street": p.street,
            "zipcode": p.zipcode,
            "phone": p.phone,
            "cuisine_description": p.cuisine,
            "inspection_date": _soda(i.day),
        }
        if i.action:
            head["action"] = i.action
        tail: dict[str, str] = {}
        if i.score is not None:
            tail["score"] = str(i.score)
        if i.grade:
            tail["grade"] = i.grade
            tail["grade_date"] = _soda(i.day)
        tail["record_date"] = record
        if i.kind:
            tail["inspection_type"] = i.kind
        tail.update(p.geo)
        if not i.codes:
            rows.append({**head, "critical_flag": "Not Applicable", **tail})
        for code in i.codes:
            admin = dict(_ADMIN).get(code)
            found = next((v for v in _VIOLATIONS if v[0] == code), None)
            description, flag = (admin, "Not Applicable") if found is None else (found[1], found[2])
            rows.append(
                {
                    **head,
                    "violation_code": code,
                    "violation_description": description,
                    "critical_flag": flag,
                    **tail,
                }
            )
    rng.shuffle(rows)
    return rows


# -- the test food inspections ------------------------------------------------------------------

_CHI_VIOLATIONS = {
    1: "PERSON IN CHARGE PRESENT, DEMONSTRATES KNOWLEDGE, AND PERFORMS DUTIES",
    2: "CITY OF CHICAGO FOOD SERVICE SANITATION CERTIFICATE",
    3: "MANAGEMENT, FOOD EMPLOYEE AND CONDITIONAL EMPLOYEE; KNOWLEDGE, RESPONSIBILITIES AND REPORTING",
    5: "PROCEDURES FOR RESPONDING TO VOMITING AND DIARRHEAL EVENTS",
    10: "ADEQUATE HANDWASHING SINKS PROPERLY SUPPLIED AND ACCESSIBLE",
    16: "FOOD-CONTACT SURFACES: CLEANED & SANITIZED",
    22: "PROPER COLD HOLDING TEMPERATURES",
    33: "PROPER COOLING METHODS USED; ADEQUATE EQUIPMENT FOR TEMPERATURE CONTROL",
    36: "THERMOMETERS PROVIDED & ACCURATE",
    38: "INSECTS, RODENTS, & ANIMALS NOT PRESENT",
    39: "CONTAMINATION PREVENTED DURING FOOD PREPARATION, STORAGE & DISPLAY",
    41: "WIPING CLOTHS: PROPERLY USED & STORED",
    47: "FOOD & NON-FOOD CONTACT SURFACES CLEANABLE, PROPERLY DESIGNED, CONSTRUCTED & USED",
    49: "NON-FOOD/FOOD CONTACT SURFACES CLEAN",
    51: "PLUMBING INSTALLED; PROPER BACKFLOW DEVICES",
    53: "TOILET FACILITIES: PROPERLY CONSTRUCTED, SUPPLIED, & CLEANED",
    55: "PHYSICAL FACILITIES INSTALLED, MAINTAINED & CLEAN",
    56: "ADEQUATE VENTILATION & LIGHTING; DESIGNATED AREAS USED",
    58: "ALLERGEN TRAINING AS REQUIRED",
}
_CHI_WEIGHTS = (3, 4, 5, 1, 4, 3, 3, 3, 2, 5, 3, 2, 5, 7, 3, 2, 8, 4, 3)
_COMMENTS = {  # what inspectors write under each number
    1: "NO CERTIFIED FOOD MANAGER ON SITE WHILE TCS FOODS WERE BEING PREPARED. PRIORITY VIOLATION 7-38-012.",
    2: "FOOD HANDLER WITHOUT A CITY OF CHICAGO SANITATION CERTIFICATE. MUST PROVIDE WITHIN {n} DAYS.",
    3: "NO EMPLOYEE HEALTH POLICY ON SITE. PRIORITY FOUNDATION VIOLATION 7-38-010.",
    5: "NO CLEAN UP KIT FOR VOMITING AND DIARRHEAL EVENTS. MUST PROVIDE.",
    10: "NO HAND SOAP AT THE HANDWASHING SINK IN THE FRONT PREP AREA. PRIORITY FOUNDATION 7-38-030(C).",
    16: "OBSERVED BUILD UP ON THE {n} INCH SLICER BLADE. MUST CLEAN AND SANITIZE AFTER USE.",
    22: "OBSERVED COLD HOLDING TEMPERATURE OF {n} F IN THE PREP COOLER. MUST BE 41F OR BELOW.",
    33: "OBSERVED {n} LBS OF COOKED RICE COOLING IN A DEEP CONTAINER ON THE SHELF.",
    36: "MUST PROVIDE A THERMOMETER IN ALL {n} COOLERS.",
    38: "OBSERVED {n} MOUSE DROPPINGS ALONG THE WALLS OF THE BASEMENT. MUST REMOVE AND SANITIZE.",
    39: "OBSERVED RAW CHICKEN STORED OVER READY-TO-EAT FOODS IN THE WALK-IN COOLER.",
    41: "OBSERVED WIPING CLOTHS STORED ON THE PREP TABLES. MUST STORE IN SANITIZING SOLUTION.",
    47: "MUST REPLACE THE {n} CUTTING BOARDS THAT ARE STAINED AND WORN.",
    49: "MUST CLEAN THE INTERIOR OF THE ICE MACHINE AND THE {n} SHELVES IN THE WALK-IN COOLER.",
    51: "INSTRUCTED TO REPAIR THE LEAKING PIPE UNDER THE 3-COMPARTMENT SINK.",
    53: "NO COVERED RECEPTACLE IN THE WASHROOM. MUST PROVIDE.",
    55: "MUST SEAL THE {n} GAPS AROUND THE REAR DOOR AND REPLACE THE STAINED CEILING TILES.",
    56: "MUST PROVIDE LIGHT SHIELDS IN THE DISH AREA. {n} BULBS OUT IN THE WALK-IN COOLER.",
    58: "NO ALLERGEN TRAINING CERTIFICATES FOR THE CERTIFIED FOOD MANAGERS. MUST PROVIDE.",
}
_FACILITIES = (  # type, names, risk, weight
    (
        "Restaurant",
        (
            "SUBWAY",
            "SUBWAY SANDWICHES",
            "MCDONALD'S",
            "PORTILLO'S HOT DOGS",
            "LOU MALNATI'S PIZZERIA",
            "THE PURPLE PIG",
            "AU CHEVAL",
            "GIORDANO'S",
            "HAROLD'S CHICKEN SHACK",
            "PEQUOD'S PIZZA",
            "TAQUERIA EL MILAGRO",
            "CHIPOTLE MEXICAN GRILL",
            "WENDY'S",
        ),
        "Risk 1 (High)",
        6,
    ),
    (
        "Grocery Store",
        ("JEWEL OSCO", "MARIANO'S", "CERMAK FRESH MARKET", "7-ELEVEN", "ALDI"),
        "Risk 2 (Medium)",
        2,
    ),
    (
        "School",
        ("LINCOLN PARK HIGH SCHOOL", "JONES COLLEGE PREP", "NETTELHORST ELEMENTARY"),
        "Risk 1 (High)",
        1.2,
    ),
    ("Bakery", ("DO-RITE DONUTS", "BOMBON BAKERY", "ALLIANCE BAKERY"), "Risk 2 (Medium)", 1),
    ("Daycare (2 - 6 Years)", ("BRIGHT HORIZONS", "KIDDIE ACADEMY"), "Risk 1 (High)", 0.8),
    ("Mobile Food Dispenser", ("TAMALE SPACESHIP", "THE FAT SHALLOT"), "Risk 3 (Low)", 0.6),
    ("Liquor", ("BINNY'S BEVERAGE DEPOT", "FOODS & LIQUORS"), "Risk 3 (Low)", 0.6),
)
_CHI_STREETS = (
    "N CLARK ST",
    "N BROADWAY",
    "W DIVISION ST",
    "S HALSTED ST",
    "N MILWAUKEE AVE",
    "W MADISON ST",
    "N LINCOLN AVE",
    "S ARCHER AVE",
    "W CERMAK RD",
    "N SHERIDAN RD",
    "E 53RD ST",
)
_CHI_ZIPS = (60601, 60607, 60608, 60610, 60614, 60615, 60616, 60618, 60622, 60625, 60640, 60647, 60657)
_RESULTS = ("Pass", "Pass w/ Conditions", "Fail", "No Entry", "Out of Business", "Not Ready")
_TYPES = (
    "Canvass",
    "Canvass Re-Inspection",
    "License",
    "License Re-Inspection",
    "Complaint",
    "Short Form Complaint",
    "Suspected Food Poisoning",
)


@dataclass
class Facility:
    license: int | None  # None: missing; 0 where the export says 0
    dba: str
    aka: str | None
    kind: str | None
    risk: str | None
    address: str  # as written, a trailing space on some
    zip: int | None
    at: tuple[float, float] | None
    city: str | None = "CHICAGO"


@dataclass
class Visit:
    ident: int
    fac: Facility
    day: date
    kind: str
    result: str
    cited: list[tuple[int, str]]  # number, comment


def _facility(rng: random.Random, licenses: set[int]) -> Facility:
    kind, names, risk, _ = rng.choices(_FACILITIES, [f[3] for f in _FACILITIES])[0]
    dba = rng.choice(names)
    license = rng.randrange(10_000, 2_900_000)
    while license in licenses:
        license = rng.randrange(10_000, 2_900_000)
    licenses.add(license)
    zipcode = rng.choice(_CHI_ZIPS)
    address = f"{rng.randrange(100, 6400)} {rng.choice(_CHI_STREETS)}" + (" " if rng.random() < 0.3 else "")
    at = (round(41.88 + rng.uniform(-0.1, 0.1), 9), round(-87.65 + rng.uniform(-0.08, 0.08), 9))
    city = rng.choices(("CHICAGO", "Chicago", None), (90, 7, 3))[0]
    return Facility(
        None if rng.random() < 0.03 else 0 if rng.random() < 0.02 else license,
        dba,
        dba if rng.random() < 0.6 else (None if rng.random() < 0.5 else f"{dba} #{rng.randrange(2, 40)}"),
        None if rng.random() < 0.03 else kind,
        None if rng.random() < 0.02 else ("All" if rng.random() < 0.03 else risk),
        address,
        None if rng.random() < 0.04 else zipcode,
        None if rng.random() < 0.04 else at,
        city,
    )


def _visit(rng: random.Random, ident: int, fac: Facility, day: date, kind: str) -> Visit:
    result = rng.choices(_RESULTS, (45, 25, 20, 4, 4, 2))[0]
    cited: list[tuple[int, str]] = []
    if result in ("Pass", "Pass w/ Conditions", "Fail"):
        count = {"Pass": rng.choice((0, 0, 1, 1, 2, 3)), "Pass w/ Conditions": rng.randrange(1, 6)}.get(
            result, rng.randrange(2, 8)
        )
        numbers = sorted(set(rng.choices(list(_CHI_VIOLATIONS), _CHI_WEIGHTS, k=count)))
        cited = [(k, _COMMENTS[k].format(n=rng.randrange(2, 48))) for k in numbers]
    return Visit(ident, fac, day, kind, result, cited)


def _test_visits(seed: str, n: int) -> list[Visit]:
    rng = random.Random(f"{seed}/{n}")
    start = date(2022, 1, 3) + timedelta(days=rng.randrange(0, 700))
    days = max(20, min(400, n * 2))
    licenses: set[int] = set()
    facilities = [_facility(rng, licenses) for _ in range(max(4, n // 3))]
    ident = rng.randrange(2_400_000, 2_560_000)
    out: list[Visit] = []
    seen: set[tuple[str, date]] = set()
    while len(out) < n:
        fac = rng.choice(facilities)
        day = start + timedelta(days=rng.randrange(days))
        if (fac.address, day) in seen:
            continue
        seen.add((fac.address, day))
        kind = rng.choices(_TYPES, (40, 12, 12, 6, 14, 8, 2))[0]
        out.append(_visit(rng, 0, fac, day, kind))
    out.sort(key=lambda v: v.day)
    for v in out:
        ident += rng.randrange(1, 400)
        v.ident = ident
    out.reverse()  # the newest first, as the portal lists them
    return out


def _violations(v: Visit) -> str | None:
    if not v.cited:
        return None
    return " | ".join(f"{k}. {_CHI_VIOLATIONS[k]} - Comments: {comment}" for k, comment in v.cited)


def _frame(visits: list[Visit]) -> pd.DataFrame:
    import pandas as pd  # only here: listing and the dev split need no pandas

    nan = float("nan")

    def text(values: list) -> list:
        return [nan if v is None else v for v in values]

    f = [v.fac for v in visits]
    return pd.DataFrame(
        {
            "Inspection ID": pd.array([v.ident for v in visits], dtype="int64"),
            "DBA Name": [x.dba for x in f],
            "AKA Name": text([x.aka for x in f]),
            "License #": [nan if x.license is None else float(x.license) for x in f],
            "Facility Type": text([x.kind for x in f]),
            "Risk": text([x.risk for x in f]),
            "Address": [x.address for x in f],
            "City": text([x.city for x in f]),
            "State": ["IL"] * len(f),
            "Zip": [nan if x.zip is None else float(x.zip) for x in f],
            "Inspection Date": [f"{v.day:%m/%d/%Y}" for v in visits],
            "Inspection Type": [v.kind for v in visits],
            "Results": [v.result for v in visits],
            "Violations": text([_violations(v) for v in visits]),
            "Latitude": [nan if x.at is None else x.at[0] for x in f],
            "Longitude": [nan if x.at is None else x.at[1] for x in f],
            "Location": text([None if x.at is None else f"({x.at[0]}, {x.at[1]})" for x in f]),
        }
    )


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    """The rows (or inspections) nearest the size asked for, of a few tries."""
    per = 900 if split == "dev" else 560
    n = max(6, chars // per)
    best: tuple[float, object, object, int] | None = None
    for _ in range(8):
        if split == "dev":
            data: object = _dev_inspections(seed, n)
            context: object = _rows(data, seed)
            count = len(context)
        else:
            data = _test_visits(seed, n)
            context = _frame(data)
            count = n
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


def _done(inspections: list[Inspection]) -> list[Inspection]:
    return [i for i in inspections if i.day is not None]


def _critical(code: str) -> bool:
    return any(v[0] == code and v[2] == "Critical" for v in _VIOLATIONS)


def _dev_count(rng: random.Random, inspections: list[Inspection]) -> _Asked:
    done = _done(inspections)
    if rng.random() < 0.5:
        flagged = [i for i in done if any(_critical(c) for c in i.codes)] or done
        p = rng.choice(flagged).place
        n = sum(_critical(c) for i in done if i.place.camis == p.camis for c in i.codes)
        q = f"How many critical violations were cited at {p.dba} (CAMIS {p.camis}) over all its inspections?"
        return q, n, {"camis": p.camis}
    i = rng.choice(done)
    month = f"{i.day:%Y-%m}"
    n = sum(x.place.boro == i.place.boro and f"{x.day:%Y-%m}" == month for x in done)
    q = f"How many distinct inspections took place at establishments in {i.place.boro} in {_month(i.day)}?"
    return q, n, {"boro": i.place.boro, "month": month}


def _dev_mean(rng: random.Random, inspections: list[Inspection]) -> _Asked:
    scored = [i for i in _done(inspections) if i.score is not None]
    i = rng.choice(scored)
    if rng.random() < 0.5:
        cuisine = i.place.cuisine
        mean = _mean([x.score for x in scored if x.place.cuisine == cuisine and x.kind == _INITIAL])
        q = (
            f"What is the mean score of the initial cycle inspections ({_INITIAL}) of {cuisine} "
            "establishments, each inspection counted once? Two decimals."
        )
        return None if mean is None else (q, mean, {"cuisine": cuisine, "inspection_type": _INITIAL})
    month = f"{i.day:%Y-%m}"
    mean = _mean([x.score for x in scored if x.place.boro == i.place.boro and f"{x.day:%Y-%m}" == month])
    q = (
        f"What was the mean score of the scored inspections in {i.place.boro} in {_month(i.day)}, each "
        "inspection counted once? Two decimals."
    )
    return None if mean is None else (q, mean, {"boro": i.place.boro, "month": month})


def _dev_top(rng: random.Random, inspections: list[Inspection]) -> _Asked:
    done = _done(inspections)
    boro = rng.choice(done).place.boro
    if rng.random() < 0.5:
        top = _leader(Counter(c for i in done if i.place.boro == boro for c in i.codes))
        q = f"Which violation code was cited most often at establishments in {boro}?"
        return None if top is None else (q, top, {"boro": boro, "by": "violation_code"})
    scores = [(i.score, i.place.dba) for i in done if i.place.boro == boro and i.score is not None]
    ranked = sorted(scores, reverse=True)
    if not ranked or (len(ranked) > 1 and ranked[0][0] == ranked[1][0]):
        return None
    q = f"Which establishment (its dba) got the highest score at a single inspection in {boro}?"
    return q, ranked[0][1], {"boro": boro, "by": "score"}


def _dev_lookup(rng: random.Random, inspections: list[Inspection]) -> _Asked:
    done = _done(inspections)
    scored = [i for i in done if i.score]
    if scored and rng.random() < 0.5:
        i = rng.choice(scored)
        p = i.place
        q = (
            f"What score did {p.dba} at {p.building} {p.street}, {p.boro}, get at its inspection on "
            f"{_day(i.day)}?"
        )
        return q, i.score, {"camis": p.camis, "day": i.day.isoformat(), "field": "score"}
    p = rng.choice(done).place
    last = max(i.day for i in done if i.place.camis == p.camis)
    q = f"On what date was {p.dba} (CAMIS {p.camis}) last inspected? Answer as YYYY-MM-DD."
    return q, last.isoformat(), {"camis": p.camis, "field": "inspection_date"}


def _test_count(rng: random.Random, visits: list[Visit]) -> _Asked:
    v = rng.choice(visits)
    if rng.random() < 0.5:
        failed = [x for x in visits if x.result == "Fail" and x.fac.kind] or [v]
        v = rng.choice(failed)
        if v.fac.kind is None:
            return None
        n = sum(x.fac.kind == v.fac.kind and x.result == "Fail" for x in visits)
        q = f"Count the inspections of facility type '{v.fac.kind}' that resulted in Fail."
        return q, n, {"facility_type": v.fac.kind}
    cited = [x for x in visits if x.cited] or [v]
    v = rng.choice(cited)
    if not v.cited:
        return None
    number = rng.choice(v.cited)[0]
    n = sum(any(k == number for k, _ in x.cited) for x in visits)
    q = f"Tally the inspections at which violation number {number} was cited."
    return q, n, {"violation": number}


def _test_mean(rng: random.Random, visits: list[Visit]) -> _Asked:
    v = rng.choice(visits)
    if rng.random() < 0.5:
        if v.fac.risk is None:
            return None
        month = f"{v.day:%Y-%m}"
        mean = _mean([len(x.cited) for x in visits if x.fac.risk == v.fac.risk and f"{x.day:%Y-%m}" == month])
        q = (
            f"Give the average number of violations cited per inspection of '{v.fac.risk}' establishments in "
            f"{_month(v.day)} (an inspection citing none counts as zero), to two decimals."
        )
        return None if not mean else (q, mean, {"risk": v.fac.risk, "month": month})
    failed = [x for x in visits if x.result == "Fail" and x.fac.zip] or [v]
    v = rng.choice(failed)
    mean = _mean([len(x.cited) for x in visits if x.result == "Fail" and x.fac.zip == v.fac.zip])
    q = (
        f"Give the average number of violations cited per failed inspection in zip code {v.fac.zip}, to two "
        "decimals."
    )
    return None if not mean or v.fac.zip is None else (q, mean, {"zip": v.fac.zip})


def _test_top(rng: random.Random, visits: list[Visit]) -> _Asked:
    v = rng.choice(visits)
    if rng.random() < 0.5:
        top = _leader(Counter(x.fac.dba for x in visits if x.result == "Fail"))
        q = "Name the establishment (DBA Name) with the most inspections that resulted in Fail."
        return None if top is None else (q, top, {"by": "DBA Name"})
    month = f"{v.day:%Y-%m}"
    top = _leader(
        Counter(x.fac.zip for x in visits if x.kind == "Canvass" and f"{x.day:%Y-%m}" == month and x.fac.zip)
    )
    q = f"Find the zip code with the most inspections of type Canvass in {_month(v.day)}."
    return None if top is None else (q, top, {"month": month, "by": "Zip"})


def _test_lookup(rng: random.Random, visits: list[Visit]) -> _Asked:
    v = rng.choice(visits)
    if rng.random() < 0.5 or not v.fac.license:
        q = f"Report the Results value recorded for inspection {v.ident}."
        return q, v.result, {"inspection_id": v.ident, "field": "Results"}
    address = v.fac.address.strip()
    if sum(x.fac.address.strip() == address and x.day == v.day for x in visits) != 1:
        return None
    q = f"Report the License # of the establishment at {address} inspected on {v.day:%m/%d/%Y}."
    return q, v.fac.license, {"address": address, "day": f"{v.day:%m/%d/%Y}", "field": "License #"}


_DEV = {"count": _dev_count, "mean": _dev_mean, "top": _dev_top, "lookup": _dev_lookup}
_TEST = {"count": _test_count, "mean": _test_mean, "top": _test_top, "lookup": _test_lookup}


@family(
    "inspections",
    "restaurant inspections: a health department's inspection results API rows as a list of dicts (dev), or "
    "another city's food inspections as a pandas DataFrame (test)",
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
        container="list of dicts (inspection results API rows)"
        if ref.split == "dev"
        else "DataFrame (food inspections export)",
        **({"rows": count} if ref.split == "dev" else {"inspections": count}),
    )
