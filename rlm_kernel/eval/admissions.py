"""Questions about hospital admissions: a US hospital interface engine's archive of HL7 v2 ADT
messages, a file a message, as a dict of file name to text (``dev``), or an English NHS trust's
extract of inpatient spells loaded into a pandas DataFrame (``test``).

What a notebook holds when someone looks at a hospital's patient flow: each stay's admission and
discharge times, the service or specialty and the doctor it is under, the unit or ward the patient
is in, the admitting diagnosis, and where the patient went on discharge. The messages are the
feed as it happened: an admission (``A01``), updates that repeat it (``A08``), transfers between
units (``A02``), discharges (``A03``) and admissions cancelled after the fact (``A11``), segments
ending in carriage returns as the standard has it; a few patients come back for a second stay, and
units and doctors whose names extend another's stand beside each other (``4W`` and ``4WS``,
``Nguyen`` and ``Nguyen-Tran``). The trust's extract holds patients still in hospital (no discharge
time, no destination) and spells not yet coded, consultants who share a surname, and wards whose
names extend another's (``Ward 7`` and ``Ward 7A``). Stays are added until the text (or the frame as
CSV) is about the length asked for. Kinds of question:

- ``count``: one service's admissions, cancelled ones aside, or the patients discharged home on
  one day (``dev``); one specialty's emergency admissions in one month, or the patients still in
  on one ward (``test``);
- ``mean``: the mean length of stay in hours of one service's discharged patients, or of those
  discharged from one unit (``dev``); the mean length of stay in days of one specialty's
  discharged spells, or the mean age of the patients sent to one destination (``test``);
- ``top``: the attending doctor with the most admissions, or the unit receiving the most
  transfers (``dev``); the consultant with the most emergency admissions in one specialty, or one
  specialty's commonest diagnosis (``test``) (a clear leader);
- ``lookup``: one visit's admitting diagnosis code, or the unit one patient was discharged from
  (``dev``); the date one spell ended, or the ward one spell is on (``test``).

Every answer is computed from the stays the generator wrote. Score: ``exact``.

Splits: ``dev`` is ``{"ADT/2024-05-03/SMH_ADT_A01_20240503101512_MSG000123.hl7": message}``,
each message's segments ``MSH`` (with the event in ``MSH-9``), ``EVN``, ``PID`` (the MRN in
``PID-3``, the name in ``PID-5``), ``PV1`` (``PV1-3`` the unit, room and bed, ``PV1-4`` the admission
type, ``PV1-6`` the unit before a transfer, ``PV1-7`` the attending doctor, ``PV1-10`` the hospital
service, ``PV1-19`` the visit number, ``PV1-36`` the discharge disposition, ``PV1-44`` and
``PV1-45`` the admit and discharge times) and, on admission, ``DG1``; ``test`` is a DataFrame
(``spell_id``, ``nhs_number``, ``age_on_admission`` and ``episodes`` int64, ``sex``,
``admission_method`` and ``specialty`` categorical, ``admitted`` and ``discharged`` datetimes with
NaT, ``consultant``, ``ward``, ``primary_diagnosis`` and ``discharge_destination`` with NaN where
there is none): other containers, fields, hospitals and wording.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["KINDS", "make"]

KINDS = ("count", "mean", "top", "lookup")

_FIRST = (
    "James", "Maria", "Robert", "Linda", "Michael", "Patricia", "David", "Barbara", "Carlos", "Susan",
    "Wei", "Dorothy", "Ahmed", "Gloria", "Thomas", "Nancy", "Jamal", "Karen", "Luis", "Betty", "Hiroshi",
    "Ruth", "Dmitri", "Joyce", "Samuel", "Evelyn", "Frank", "Alma", "Victor", "Irene",
)  # fmt: skip
_LAST = (
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez",
    "Martinez", "Hernandez", "Lopez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson",
    "Martin", "Lee", "Thompson", "White", "Harris", "Clark", "Lewis", "Robinson", "Walker", "Young",
    "Allen", "King",
)  # fmt: skip
_UNITS = {  # point of care -> description, rooms
    "4W": ("4 West Med-Surg", range(401, 430)),
    "4WS": ("4 West Step-Down", range(431, 441)),
    "5E": ("5 East Cardiac Telemetry", range(501, 528)),
    "MICU": ("Medical ICU", range(201, 215)),
    "3N": ("3 North Orthopedics", range(301, 326)),
    "6N": ("6 North Neuroscience", range(601, 622)),
    "LD": ("Labor and Delivery", range(101, 118)),
}
_SERVICES = {  # hospital service -> units it admits to, where it transfers, diagnoses
    "MED": (
        ("4W", "4W", "4W", "MICU"),
        ("4WS", "MICU", "4W"),
        (
            ("J18.9", "Pneumonia, unspecified organism"),
            ("N39.0", "Urinary tract infection, site not specified"),
            ("A41.9", "Sepsis, unspecified organism"),
            ("J44.1", "Chronic obstructive pulmonary disease with (acute) exacerbation"),
        ),
    ),
    "CAR": (
        ("5E", "5E", "MICU"),
        ("4WS", "5E"),
        (
            ("I21.4", "Non-ST elevation (NSTEMI) myocardial infarction"),
            ("I50.23", "Acute on chronic systolic (congestive) heart failure"),
            ("I48.91", "Unspecified atrial fibrillation"),
        ),
    ),
    "SUR": (
        ("4W",),
        ("4WS", "MICU"),
        (
            ("K35.80", "Unspecified acute appendicitis"),
            ("K80.00", "Calculus of gallbladder with acute cholecystitis without obstruction"),
            (
                "K56.609",
                "Unspecified intestinal obstruction, unspecified as to partial versus complete obstruction",
            ),
        ),
    ),
    "ORT": (
        ("3N",),
        ("4WS", "3N"),
        (
            (
                "S72.001A",
                "Fracture of unspecified part of neck of right femur, initial encounter for closed fracture",
            ),
            ("M17.11", "Unilateral primary osteoarthritis, right knee"),
            ("M16.12", "Unilateral primary osteoarthritis, left hip"),
        ),
    ),
    "NEU": (
        ("6N", "6N", "MICU"),
        ("4WS", "6N"),
        (
            ("I63.9", "Cerebral infarction, unspecified"),
            ("G40.909", "Epilepsy, unspecified, not intractable, without status epilepticus"),
        ),
    ),
    "OBS": (
        ("LD",),
        ("4W",),
        (
            ("O80", "Encounter for full-term uncomplicated delivery"),
            ("O34.211", "Maternal care for low transverse scar from previous cesarean delivery"),
        ),
    ),
}
_DOCTORS = {  # hospital service -> (NPI, family, given)
    "MED": (
        ("1487652301", "Nguyen", "Linh"),
        ("1932204415", "Nguyen-Tran", "Bao"),
        ("1205998123", "Okafor", "Chidi"),
    ),
    "CAR": (("1669473021", "Patel", "Ravi"), ("1770582210", "Castellano", "Ines")),
    "SUR": (("1356104487", "Brennan", "Kathleen"), ("1841276650", "Abara", "Tunde")),
    "ORT": (("1093817724", "Lindqvist", "Erik"), ("1508264139", "Haddad", "Samir")),
    "NEU": (("1265530948", "Moreau", "Claire"),),
    "OBS": (("1619027385", "Osei", "Ama"), ("1730148296", "Whitaker", "Jane")),
}
_DISPOSITIONS = (("01", 6.0), ("06", 1.5), ("03", 1.2), ("02", 0.4), ("07", 0.15), ("20", 0.15))
_SERVICE_WEIGHT = {"MED": 3.0, "CAR": 1.6, "SUR": 1.2, "ORT": 1.0, "NEU": 0.7, "OBS": 0.9}


@dataclass
class Stay:
    mrn: str
    visit: str
    last: str
    first: str
    middle: str
    dob: str
    sex: str
    service: str
    kind: str  # admission type: E, U, R, L
    doctor: tuple[str, str, str]
    diagnosis: tuple[str, str]
    admitted: datetime
    moves: list[tuple[datetime, str, str]] = field(default_factory=list)  # when, unit, room-bed
    discharged: datetime | None = None
    disposition: str = ""
    cancelled: datetime | None = None
    updated: list[datetime] = field(default_factory=list)  # A08s

    @property
    def unit(self) -> str:
        return self.moves[-1][1]


def _bed(rng: random.Random, unit: str) -> str:
    return f"{rng.choice(_UNITS[unit][1])}^{rng.choice('AB')}"


def _patient(rng: random.Random, service: str, earlier: list[Stay]) -> tuple[str, str, str, str, str, str]:
    """A patient's MRN, last, first and middle name, date of birth and sex: now and then one who has
    been in before."""
    if earlier and rng.random() < 0.05:  # back again
        b = rng.choice(earlier)
        return b.mrn, b.last, b.first, b.middle, b.dob, b.sex
    mrn = f"M{rng.randrange(1_000_000, 9_999_999)}"
    last, first = rng.choice(_LAST), rng.choice(_FIRST)
    middle = rng.choice("ABCDEJKLMRST ")
    born = datetime(1930, 1, 1) + timedelta(days=rng.randrange(0, 365 * 75))
    if service == "OBS":
        born = datetime(1986, 1, 1) + timedelta(days=rng.randrange(0, 365 * 18))
    return mrn, last, first, middle.strip(), f"{born:%Y%m%d}", "F" if service == "OBS" else rng.choice("FM")


def _course(rng: random.Random, stay: Stay, transfers: tuple[str, ...], end: datetime) -> None:
    """A stay's transfers, updates and, where it comes before ``end``, its discharge."""
    when = stay.admitted
    for _ in range(rng.choice((0, 0, 0, 1, 1, 2))):
        when += timedelta(minutes=rng.randrange(180, 3 * 1440))
        choices = [u for u in transfers if u != stay.unit]
        if choices:
            unit = rng.choice(choices)
            stay.moves.append((when, unit, _bed(rng, unit)))
    if rng.random() < 0.18:
        stay.updated.append(stay.admitted + timedelta(minutes=rng.randrange(5, 170)))
    out = when + timedelta(minutes=rng.randrange(300, 6 * 1440))
    if out < end:
        stay.discharged = out
        stay.disposition = rng.choices([d for d, _ in _DISPOSITIONS], [w for _, w in _DISPOSITIONS])[0]


def _dev_stays(seed: str, n: int) -> tuple[list[Stay], datetime]:
    rng = random.Random(f"{seed}/{n}")
    days = max(3, min(28, round(n / 6)))
    start = datetime(2024, 4, 29, 0) + timedelta(days=rng.randrange(0, 60))
    end = start + timedelta(days=days)
    stays: list[Stay] = []
    services = list(_SERVICES)
    weights = [_SERVICE_WEIGHT[s] * rng.uniform(0.6, 1.5) for s in services]
    visits = rng.sample(range(10_000_000, 99_999_999), n)
    favour = {npi: rng.uniform(0.3, 2.0) for doctors in _DOCTORS.values() for npi, *_ in doctors}
    for k in range(n):
        service = rng.choices(services, weights)[0]
        units, transfers, diagnoses = _SERVICES[service]
        mrn, last, first, middle, dob, sex = _patient(rng, service, stays)
        admitted = start + timedelta(minutes=rng.randrange(0, days * 1440))
        doctors = _DOCTORS[service]
        stay = Stay(
            mrn,
            f"V{visits[k]}",
            last,
            first,
            middle,
            dob,
            sex,
            service,
            "L" if service == "OBS" else rng.choices("EUR", (6, 2, 2))[0],
            rng.choices(doctors, [favour[d[0]] for d in doctors])[0],
            rng.choice(diagnoses),
            admitted,
        )
        unit = rng.choice(units)
        stay.moves.append((admitted, unit, _bed(rng, unit)))
        if rng.random() < 0.04:
            stay.cancelled = admitted + timedelta(minutes=rng.randrange(20, 400))
        else:
            _course(rng, stay, transfers, end)
        stays.append(stay)
    # a later admission of the same patient comes after the earlier one's discharge
    seen: dict[str, Stay] = {}
    for stay in sorted(stays, key=lambda s: s.admitted):
        before = seen.get(stay.mrn)
        if before is not None and (
            before.discharged is None or before.cancelled or stay.admitted <= before.discharged
        ):
            stay.mrn = f"M{rng.randrange(1_000_000, 9_999_999)}"  # not the same patient after all
        seen[stay.mrn] = stay
    return stays, end


_FACILITY = "SMH"


def _ts(t: datetime, seconds: bool = True) -> str:
    return f"{t:%Y%m%d%H%M%S}" if seconds else f"{t:%Y%m%d%H%M}"


def _pv1(stay: Stay, unit: str, bed: str, prior: str = "", out: bool = False) -> str:
    f = [""] * 46
    f[0] = "PV1"
    f[1] = "1"
    f[2] = "I"
    room, letter = bed.split("^")
    f[3] = f"{unit}^{room}^{letter}^{_FACILITY}^^^^^{_UNITS[unit][0]}"
    f[4] = stay.kind
    f[6] = prior
    npi, family_, given = stay.doctor
    f[7] = f"{npi}^{family_}^{given}^^^Dr^MD"
    f[10] = stay.service
    f[14] = "7" if stay.kind == "E" else "1"
    f[17] = f[7]
    f[18] = "IP"
    f[19] = f"{stay.visit}^^^{_FACILITY}^VN"
    f[20] = "MEDICARE" if int(stay.dob[:4]) < 1959 else "COMMERCIAL"
    f[44] = _ts(stay.admitted, seconds=False)
    if out:
        f[36] = stay.disposition
        f[45] = _ts(stay.discharged, seconds=False)
    return "|".join(f).rstrip("|")


_STRUCTURE = {"A01": "ADT_A01", "A08": "ADT_A01", "A02": "ADT_A02", "A03": "ADT_A03", "A11": "ADT_A09"}


def _events(stays: list[Stay]) -> list[tuple[datetime, str, Stay, int]]:
    """What the feed sends, in time order: when, the event, the stay and which of its places."""
    events: list[tuple[datetime, str, Stay, int]] = []
    for stay in stays:
        events.append((stay.admitted, "A01", stay, 0))
        events += [(when, "A08", stay, 0) for when in stay.updated]
        events += [(when, "A02", stay, k) for k, (when, *_) in enumerate(stay.moves[1:], 1)]
        if stay.cancelled:
            events.append((stay.cancelled, "A11", stay, 0))
        if stay.discharged:
            events.append((stay.discharged, "A03", stay, len(stay.moves) - 1))
    return sorted(events, key=lambda e: (e[0], e[1]))


def _homes(rng: random.Random, stays: list[Stay]) -> dict[str, str]:
    """Each patient's address and phone, as PID-11 to PID-13 give them."""
    homes: dict[str, str] = {}
    for stay in stays:
        if stay.mrn not in homes:
            street = rng.choice(("OAK", "ELM", "MAPLE", "CEDAR", "PINE", "LINCOLN", "WASHINGTON"))
            homes[stay.mrn] = (
                f"{rng.randrange(10, 9999)} {street} ST^^SPRINGFIELD^IL^627{rng.randrange(10, 99)}^USA||"
                f"(217)555-{rng.randrange(10000):04d}"
            )
    return homes


def _visit(event: str, stay: Stay, k: int) -> list[str]:
    """The PV1 segment of one event, and DG1 where the event carries the diagnosis."""
    _, unit, bed = stay.moves[k]
    if event == "A02":
        prior = stay.moves[k - 1]
        out = [_pv1(stay, unit, bed, prior=f"{prior[1]}^{prior[2]}^{_FACILITY}")]
    else:
        out = [_pv1(stay, unit, bed, out=event == "A03")]
    if event in ("A01", "A08"):
        code, text = stay.diagnosis
        out.append(f"DG1|1||{code}^{text}^I10||{_ts(stay.admitted)}|A")
    return out


def _messages(stays: list[Stay], seed: str) -> dict[str, str]:
    rng = random.Random(seed)
    events = _events(stays)
    control = rng.randrange(100_000, 900_000)
    homes = _homes(rng, stays)
    out: dict[str, str] = {}
    for when, event, stay, k in events:
        control += rng.randrange(1, 40)
        sent = when + timedelta(seconds=rng.randrange(2, 90))
        clerk = rng.choice(("ADMREG1", "ADMREG2", "BEDMGR", "NURSE4W"))
        segments = [
            f"MSH|^~\\&|EPICADT|{_FACILITY}|RHAPSODY|{_FACILITY}|{_ts(sent)}||ADT^{event}^{_STRUCTURE[event]}|"
            f"MSG{control:09d}|P|2.5.1|||AL|NE",
            f"EVN|{event}|{_ts(sent)}|||{clerk}|{_ts(when)}",
            f"PID|1||{stay.mrn}^^^{_FACILITY}^MR||{stay.last.upper()}^{stay.first.upper()}^{stay.middle}||"
            f"{stay.dob}|{stay.sex}|||{homes[stay.mrn]}",
            *_visit(event, stay, k),
        ]
        name = f"ADT/{sent:%Y-%m-%d}/{_FACILITY}_ADT_{event}_{_ts(sent)}_MSG{control:09d}.hl7"
        out[name] = "\r".join(segments) + "\r"
    return out


# -- the test extract ---------------------------------------------------------------------------

_SPECIALTIES = (  # specialty, wards, consultants, diagnoses, emergency share, mean days, weight
    (
        "300 General Medicine",
        ("AMU", "Ward 7", "Ward 7A", "Ward 12"),
        ("Dr A Shah", "Dr R Shah", "Dr K Mensah"),
        ("J18.9", "N39.0", "A41.9", "R06.0"),
        0.9,
        5.0,
        3.0,
    ),
    (
        "320 Cardiology",
        ("CCU", "Ward 9"),
        ("Dr M Okonjo", "Dr P Lindgren"),
        ("I21.4", "I50.0", "I48.9"),
        0.75,
        4.0,
        1.5,
    ),
    (
        "340 Respiratory Medicine",
        ("Ward 12", "Ward 14"),
        ("Dr S Fairbairn", "Dr H Ali"),
        ("J44.1", "J18.1", "J45.9"),
        0.85,
        5.5,
        1.3,
    ),
    (
        "430 Geriatric Medicine",
        ("Ward 7", "Ward 21", "Ward 22"),
        ("Dr E Doyle", "Dr N Varga"),
        ("S72.0", "R29.6", "N39.0", "F05.9"),
        0.95,
        11.0,
        1.6,
    ),
    (
        "100 General Surgery",
        ("Ward 3", "SAU"),
        ("Mr J Patel", "Ms C Rowe", "Mr T Adeyemi"),
        ("K35.8", "K80.0", "K56.6"),
        0.6,
        3.5,
        1.4,
    ),
    (
        "110 Trauma & Orthopaedics",
        ("Ward 5", "Ward 5A"),
        ("Mr D Khan", "Ms L Hartley"),
        ("S72.0", "M17.1", "M16.1", "S82.2"),
        0.55,
        6.0,
        1.3,
    ),
    ("101 Urology", ("Ward 3",), ("Mr P Nowak",), ("N20.0", "N40.X", "C67.9"), 0.35, 2.5, 0.6),
)
_METHODS = (
    ("21 Emergency - A&E", True, 8.0),
    ("22 Emergency - GP", True, 1.5),
    ("28 Emergency - other", True, 0.6),
    ("11 Elective - waiting list", False, 2.0),
    ("12 Elective - booked", False, 1.0),
    ("13 Elective - planned", False, 0.3),
)
_DESTINATIONS = (
    ("19 Usual place of residence", 8.0),
    ("54 NHS run care home", 0.5),
    ("65 Local authority residential accommodation", 0.8),
    ("51 NHS other hospital provider - ward for general patients", 0.6),
    ("79 Not applicable - patient died or still birth", 0.4),
    ("29 Temporary place of residence", 0.3),
)


@dataclass
class Spell:
    spell: str
    nhs: str
    age: int
    sex: str
    method: int
    admitted: datetime
    discharged: datetime | None
    specialty: int
    consultant: str
    ward: str
    diagnosis: str | None
    destination: str | None
    episodes: int


def _nhs_number(rng: random.Random) -> str:
    while True:
        digits = [rng.randrange(10) for _ in range(9)]
        if digits[0] == 0:
            continue
        check = 11 - sum(d * (10 - i) for i, d in enumerate(digits)) % 11
        if check == 10:
            continue
        text = "".join(map(str, digits)) + str(check % 11)
        return f"{text[:3]} {text[3:6]} {text[6:]}"


def _test_spells(seed: str, n: int) -> tuple[list[Spell], datetime]:
    rng = random.Random(f"{seed}/{n}")
    extract = datetime(2024, 3, 31, 23, 59) + timedelta(days=rng.randrange(0, 120))
    weights = [s[6] * rng.uniform(0.6, 1.5) for s in _SPECIALTIES]
    favour = {c: rng.uniform(0.3, 2.0) for s in _SPECIALTIES for c in s[2]}
    ids = rng.sample(range(100_000, 999_999), n)
    out = []
    for k in range(n):
        s = rng.choices(range(len(_SPECIALTIES)), weights)[0]
        name, wards, consultants, diagnoses, emergency, days, _ = _SPECIALTIES[s]
        urgent = rng.random() < emergency
        methods = [m for m in range(len(_METHODS)) if _METHODS[m][1] == urgent]
        method = rng.choices(methods, [_METHODS[m][2] for m in methods])[0]
        admitted = extract - timedelta(minutes=rng.randrange(60, 95 * 1440))
        if not urgent:
            admitted = admitted.replace(hour=rng.choice((7, 7, 8, 12)), minute=rng.choice((0, 15, 30)))
            if admitted > extract - timedelta(hours=1):
                admitted -= timedelta(days=1)
        stay = timedelta(minutes=round(rng.expovariate(1 / days) * 1440) + rng.randrange(120, 600))
        discharged = admitted + stay if admitted + stay < extract else None
        coded = discharged is not None and rng.random() < 0.93
        age = rng.randrange(70, 101) if name.startswith("430") else rng.randrange(18, 96)
        lead = rng.choices(consultants, [favour[c] for c in consultants])[0]
        destination = None
        if discharged is not None:
            destination = rng.choices([d for d, _ in _DESTINATIONS], [w for _, w in _DESTINATIONS])[0]
        out.append(
            Spell(
                f"APC{ids[k]:06d}",
                _nhs_number(rng),
                age,
                rng.choice(("Female", "Male")),
                method,
                admitted,
                discharged,
                s,
                lead,
                rng.choice(wards),
                rng.choice(diagnoses) if coded else None,
                destination,
                rng.choices((1, 2, 3), (8, 2, 0.5))[0],
            )
        )
    out.sort(key=lambda x: x.admitted)
    return out, extract


def _frame(spells: list[Spell], extract: datetime) -> pd.DataFrame:
    import pandas as pd  # only here: listing and the dev split need no pandas

    nan = float("nan")
    return pd.DataFrame(
        {
            "spell_id": [x.spell for x in spells],
            "nhs_number": [x.nhs for x in spells],
            "age_on_admission": pd.array([x.age for x in spells], dtype="int64"),
            "sex": pd.Categorical([x.sex for x in spells], categories=["Female", "Male"]),
            "admission_method": pd.Categorical(
                [_METHODS[x.method][0] for x in spells], categories=[m[0] for m in _METHODS]
            ),
            "admitted": pd.to_datetime([x.admitted for x in spells]),
            "discharged": pd.to_datetime([x.discharged for x in spells]),
            "specialty": pd.Categorical(
                [_SPECIALTIES[x.specialty][0] for x in spells], categories=[s[0] for s in _SPECIALTIES]
            ),
            "consultant": [x.consultant for x in spells],
            "ward": [x.ward for x in spells],
            "episodes": pd.array([x.episodes for x in spells], dtype="int64"),
            "primary_diagnosis": [x.diagnosis or nan for x in spells],
            "discharge_destination": [x.destination or nan for x in spells],
        }
    )


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    """The stays nearest the size asked for, of a few tries (a stay's messages are one to five)."""
    per = 1900 if split == "dev" else 170
    n = max(4, chars // per)
    best: tuple[float, object, object] | None = None
    for _ in range(8):
        if split == "dev":
            data: object = _dev_stays(seed, n)
            context: object = _messages(data[0], seed)
        else:
            data = _test_spells(seed, n)
            context = _frame(*data)
        size = len(as_text(context))
        if best is None or abs(size - chars) < best[0]:
            best = (abs(size - chars), data, context)
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(4, round(n * chars / size))
    assert best is not None
    return best[1], best[2], len(best[1][0])


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _hours(stay: Stay) -> float:
    return (stay.discharged - stay.admitted).total_seconds() / 3600


def _ask_dev(kind: str, rng: random.Random, data: tuple[list[Stay], datetime]) -> _Asked:
    stays, _ = data
    live = [s for s in stays if s.cancelled is None]
    out = [s for s in live if s.discharged is not None]
    stay = rng.choice(live)
    if kind == "count":
        if rng.random() < 0.5:
            n = sum(s.service == stay.service for s in live)
            q = (
                f"How many admissions to hospital service {stay.service} do these ADT messages record, "
                "leaving out admissions that were cancelled?"
            )
            return q, n, {"service": stay.service}
        if not out:
            return None
        day = rng.choice(out).discharged.date()
        n = sum(s.discharged.date() == day and s.disposition == "01" for s in out)
        q = f"How many patients were discharged home (disposition 01) on {day:%B} {day.day}, {day.year}?"
        return q, n, {"day": day.isoformat()}
    if kind == "mean":
        if not out:
            return None
        pick = rng.choice(out)
        if rng.random() < 0.5:
            hours = [_hours(s) for s in out if s.service == pick.service]
            q = (
                "What is the mean length of stay, in hours from admission to discharge, of the "
                f"{pick.service} service's patients discharged in these messages? One decimal."
            )
            return q, round(sum(hours) / len(hours), 1), {"service": pick.service}
        hours = [_hours(s) for s in out if s.unit == pick.unit]
        q = (
            f"For the patients discharged from unit {pick.unit}, what was the mean length of stay in hours? "
            "One decimal."
        )
        return q, round(sum(hours) / len(hours), 1), {"unit": pick.unit}
    if kind == "top":
        if rng.random() < 0.5:
            top = _leader(Counter(s.doctor[1] for s in live))
            q = "Which attending doctor has the most admissions, cancelled ones aside? Give the family name."
            return None if top is None else (q, top, {"by": "attending"})
        top = _leader(Counter(unit for s in stays for _, unit, _ in s.moves[1:]))
        q = "Which unit (the point of care) received the most patients by transfer?"
        return None if top is None else (q, top, {"by": "transfers"})
    once = Counter(s.mrn for s in stays)
    left = [s for s in out if once[s.mrn] == 1]
    moved = [s for s in left if len(s.moves) > 1]  # a patient moved before going home, where there is one
    left = moved or left
    if left and rng.random() < 0.5:
        stay = rng.choice(left)
        q = f"Which unit was the patient with MRN {stay.mrn} in when discharged?"
        return q, stay.unit, {"mrn": stay.mrn}
    q = f"What admitting diagnosis code was sent for visit number {stay.visit}?"
    return q, stay.diagnosis[0], {"visit": stay.visit}


def _ask_test(kind: str, rng: random.Random, data: tuple[list[Spell], datetime]) -> _Asked:
    spells, _ = data
    x = rng.choice(spells)
    specialty = _SPECIALTIES[x.specialty][0]
    out = [s for s in spells if s.discharged is not None]
    if kind == "count":
        if rng.random() < 0.5:
            month = x.admitted.strftime("%Y-%m")
            n = sum(
                s.specialty == x.specialty and _METHODS[s.method][1] and f"{s.admitted:%Y-%m}" == month
                for s in spells
            )
            q = (
                f"Count the emergency admissions (admission methods 21 to 28) under {specialty} admitted in "
                f"{x.admitted:%B %Y}."
            )
            return q, n, {"specialty": specialty, "month": month}
        n = sum(s.ward == x.ward and s.discharged is None for s in spells)
        q = f"Tally the spells on {x.ward} that have no discharge time yet."
        return q, n, {"ward": x.ward}
    if kind == "mean":
        if rng.random() < 0.5:
            days = [
                (s.discharged - s.admitted).total_seconds() / 86400 for s in out if s.specialty == x.specialty
            ]
            if not days:
                return None
            q = (
                f"Among the discharged spells under {specialty}, what is the average length of stay in days "
                "(discharged minus admitted, with fractions of a day)? Two decimals."
            )
            return q, round(sum(days) / len(days), 2), {"specialty": specialty}
        if not out:
            return None
        dest = rng.choice(out).destination
        ages = [s.age for s in out if s.destination == dest]
        q = (
            "Give the average age_on_admission of the patients whose discharge_destination is "
            f"{dest}, to one decimal."
        )
        return q, round(sum(ages) / len(ages), 1), {"destination": dest}
    if kind == "top":
        if rng.random() < 0.5:
            top = _leader(
                Counter(s.consultant for s in spells if s.specialty == x.specialty and _METHODS[s.method][1])
            )
            q = f"Under {specialty}, which consultant has the most emergency admissions?"
            return None if top is None else (q, top, {"specialty": specialty, "by": "consultant"})
        top = _leader(Counter(s.diagnosis for s in spells if s.specialty == x.specialty and s.diagnosis))
        q = f"What primary_diagnosis is most frequent among the coded spells under {specialty}?"
        return None if top is None else (q, top, {"specialty": specialty, "by": "diagnosis"})
    if out and rng.random() < 0.5:
        x = rng.choice(out)
        q = f"On what date did spell {x.spell} end (its discharged date)? Answer as YYYY-MM-DD."
        return q, x.discharged.date().isoformat(), {"spell": x.spell, "field": "discharged"}
    q = f"Which ward does the extract show for spell {x.spell}?"
    return q, x.ward, {"spell": x.spell, "field": "ward"}


@family(
    "admissions",
    "hospital admissions: HL7 v2 ADT messages, a file a message, as a dict of file name to text (dev), or "
    "a trust's inpatient spells as a pandas DataFrame (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    data, context, count = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    def ask(kind_: str) -> _Asked:
        return _ask_dev(kind_, rng, data) if ref.split == "dev" else _ask_test(kind_, rng, data)

    kind, asked = draw_question(ask, kind, "lookup", nonzero=True, hidden=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict of file name to text (HL7 messages)"
        if ref.split == "dev"
        else "DataFrame (inpatient spells)",
        stays=count,
    )
