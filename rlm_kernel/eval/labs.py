"""Questions about clinical lab results: a hospital lab's HL7 v2 result messages as one string
(``dev``) or a clinic's FHIR search result, a Bundle of Observations and Patients, as a nested dict
(``test``).

What a notebook holds when someone audits lab results or follows patients over time: one result a
line (or a resource), each with the patient, the test, the value and unit, the reference range and
a flag, when the sample was taken, and who ordered it. Patients whose names extend or nearly match
another's stand beside each other, and so do doctors (``Patel`` and ``Patil``); some patients run
high on some tests. Results are added visit by visit until the text (or the indented JSON) is about
the length asked for. Kinds of question:

- ``count``: how many results of one test in one month are flagged high (``dev``), or how many
  final results of one test are at or above a value (``test``);
- ``total``: the mean of one patient's results of one test (``dev``) or of the final ones
  (``test``), to two decimals;
- ``top``: the patient with the highest single result of one test (``dev``, by MRN), or whose most
  recent final result of one test is the highest (``test``, by name) (a clear leader);
- ``lookup``: one patient's result of one test from one day's sample;
- ``hop``: the doctor who ordered the panel holding one patient's highest result of one test
  (``dev``), or the birth year of the patient with the highest final result of one test
  (``test``).

Every answer is computed from the results the generator wrote. Score: ``exact`` (numbers as
numbers, names without case).

Splits: ``dev`` is a batch of HL7 v2.5.1 ``ORU^R01`` messages, one panel each (``MSH``, ``PID``
with the MRN, name and birth date, ``PV1`` with the attending doctor, ``ORC``, ``OBR`` with the
LOINC panel, collection time and ordering doctor, then an ``OBX`` per test with value, unit,
range and flag), segments a line; ``test`` is a FHIR R4 searchset ``Bundle`` (``Observation``
resources with LOINC ``code``, ``subject`` reference, ``effectiveDateTime``, ``valueQuantity``,
``referenceRange``, ``interpretation`` and a ``status`` that is sometimes ``entered-in-error``, and
the included ``Patient`` resources): other containers, fields, tests, people and wording.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from fractions import Fraction

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup", "hop")

# LOINC, name, unit, low, high (None: no bound), mean, sd, decimals, panel
_DEV_TESTS = (
    ("2951-2", "Sodium", "mmol/L", 136, 145, 140, 3, 0, "BMP"),
    ("2823-3", "Potassium", "mmol/L", 3.5, 5.1, 4.3, 0.45, 1, "BMP"),
    ("2075-0", "Chloride", "mmol/L", 98, 107, 102, 3, 0, "BMP"),
    ("2028-9", "Carbon dioxide", "mmol/L", 22, 29, 25, 2.5, 0, "BMP"),
    ("3094-0", "Urea nitrogen", "mg/dL", 7, 20, 14, 5, 0, "BMP"),
    ("2160-0", "Creatinine", "mg/dL", 0.7, 1.3, 1.0, 0.25, 2, "BMP"),
    ("2345-7", "Glucose", "mg/dL", 70, 99, 96, 18, 0, "BMP"),
    ("17861-6", "Calcium", "mg/dL", 8.6, 10.3, 9.4, 0.45, 1, "BMP"),
    ("6690-2", "Leukocytes", "10*3/uL", 4.5, 11.0, 7.5, 2.2, 1, "CBC"),
    ("718-7", "Hemoglobin", "g/dL", 12.0, 17.5, 13.8, 1.5, 1, "CBC"),
    ("4544-3", "Hematocrit", "%", 36.0, 50.0, 41.5, 4.0, 1, "CBC"),
    ("777-3", "Platelets", "10*3/uL", 150, 400, 260, 70, 0, "CBC"),
    ("1742-6", "Alanine aminotransferase", "U/L", 7, 56, 30, 14, 0, "HFP"),
    ("1920-8", "Aspartate aminotransferase", "U/L", 10, 40, 26, 10, 0, "HFP"),
    ("6768-6", "Alkaline phosphatase", "U/L", 44, 147, 85, 28, 0, "HFP"),
    ("1975-2", "Bilirubin total", "mg/dL", 0.1, 1.2, 0.7, 0.3, 1, "HFP"),
    ("1751-7", "Albumin", "g/dL", 3.5, 5.0, 4.2, 0.4, 1, "HFP"),
)
_DEV_PANELS = {
    "BMP": ("51990-0", "Basic metabolic panel - Blood"),
    "CBC": ("58410-2", "CBC panel - Blood by Automated count"),
    "HFP": ("24325-3", "Hepatic function panel - Serum or Plasma"),
}
_SERUM = "[Mass/volume] in Serum or Plasma"
_TEST_TESTS = (
    ("2093-3", f"Cholesterol {_SERUM}", "Total cholesterol", "mg/dL", None, 200, 205, 38, 0, "lipid"),
    ("13457-7", f"Cholesterol in LDL {_SERUM} by calculation", "LDL cholesterol", "mg/dL", None, 130, 125, 32,
     0, "lipid"),
    ("2085-9", f"Cholesterol in HDL {_SERUM}", "HDL cholesterol", "mg/dL", 40, None, 52, 12, 0, "lipid"),
    ("2571-8", f"Triglyceride {_SERUM}", "Triglycerides", "mg/dL", None, 150, 140, 55, 0, "lipid"),
    ("4548-4", "Hemoglobin A1c/Hemoglobin.total in Blood", "HbA1c", "%", 4.0, 5.6, 5.8, 0.8, 1, "a1c"),
    ("3016-3", "Thyrotropin [Units/volume] in Serum or Plasma", "TSH", "mIU/L", 0.45, 4.5, 2.1, 1.1, 2,
     "tsh"),
    ("1989-3", f"25-Hydroxyvitamin D3+25-Hydroxyvitamin D2 {_SERUM}", "Vitamin D", "ng/mL", 30, 100, 31, 11,
     0, "vitd"),
)  # fmt: skip

_DEV_GIVEN = {
    "F": ("Grace", "Denise", "Aaliyah", "Linda", "Lynda", "Tanya", "Mei", "Oksana", "Rosa", "Beverly"),
    "M": ("Graham", "Marcus", "Marcos", "Dennis", "Hector", "Raymond", "Yusuf", "Connor", "Wendell", "Amir"),
}
_DEV_FAMILY = (
    "Okafor", "Okafor-Bell", "Whitfield", "Whitfeld", "Delgado", "Nguyen", "Kowalczyk", "Brennan",
    "Brennan-Shaw", "Haddad", "Ramirez", "Petersen", "Peterson", "Gallagher", "Tran",
)  # fmt: skip
_DEV_DOCTORS = (
    ("1457392816", "Patel", "Anil"), ("1538201947", "Patil", "Sunita"), ("1093847261", "Okoro", "Chidi"),
    ("1265019384", "Okoye", "Amara"), ("1720394851", "Lindgren", "Erik"), ("1982736450", "Brooks", "Hannah"),
    ("1346598721", "Brookes", "Martin"), ("1609238475", "Nakamura", "Ken"),
)  # fmt: skip
_DEV_UNITS = ("MED4^412^A", "ED^BAY07", "CARD2^208^B", "CLINIC^IM", "CLINIC^NEPH")

_TEST_GIVEN = {
    "female": ("Ana", "Anna", "Joana", "Sofia", "Sophie", "Marta", "Inês", "Beatriz", "Carla", "Helena"),
    "male": ("João", "Pedro", "Pieter", "Lucas", "Lukas", "Martin", "Tiago", "Rui", "Nuno", "Bruno"),
}
_TEST_FAMILY = (
    "Costa", "Costas", "Pereira", "Ferreira", "Silva", "Silveira", "Santos", "Sousa", "Souza", "Martins",
    "Oliveira", "Almeida", "Ribeiro", "Carvalho",
)  # fmt: skip


@dataclass
class Patient:
    id: str  # the MRN (dev) or the resource id (test)
    given: str
    family: str
    sex: str
    born: date
    bias: dict[str, float]  # how far from the mean, in sd, this patient's results of each test run

    @property
    def name(self) -> str:
        return f"{self.given} {self.family}"


@dataclass
class Result:
    patient: int
    test: tuple
    value: float
    flag: str
    when: datetime
    panel: int  # the message (dev) or the visit (test)
    doctor: int  # the ordering doctor (dev)
    status: str = "final"
    id: str = ""

    @property
    def code(self) -> str:
        return self.test[0]


def _patients(rng: random.Random, dev: bool, n: int) -> list[Patient]:
    out: list[Patient] = []
    tests = _DEV_TESTS if dev else _TEST_TESTS
    seen: set[str] = set()
    while len(out) < n:
        sex = rng.choice(("F", "M") if dev else ("female", "male"))
        given, family_name = (
            rng.choice((_DEV_GIVEN if dev else _TEST_GIVEN)[sex]),
            rng.choice(_DEV_FAMILY if dev else _TEST_FAMILY),
        )
        ident = f"M{rng.randrange(10**6, 10**7)}" if dev else f"pat-{rng.randrange(1000, 9999)}{len(out)}"
        if f"{given} {family_name}" in seen or ident in seen:
            continue
        seen |= {f"{given} {family_name}", ident}
        high = rng.sample([t[0] for t in tests], 2)  # a condition or two that runs high
        bias = {t[0]: (rng.uniform(1.5, 4.0) if t[0] in high else rng.gauss(0, 0.6)) for t in tests}
        born = date(1935, 1, 1) + timedelta(days=rng.randrange(365 * 70))
        out.append(Patient(ident, given, family_name, sex, born, bias))
    return out


def _value(rng: random.Random, test: tuple, bias: float) -> float:
    *_, mean, sd, decimals, _ = test
    x = max(mean * 0.2, mean + sd * (bias + rng.gauss(0, 0.7)))
    return round(x, decimals) if decimals else float(round(x))


def _flag(test: tuple, value: float) -> str:
    low, high = (test[3], test[4]) if len(test) == 9 else (test[4], test[5])
    return "H" if high is not None and value > high else "L" if low is not None and value < low else "N"


def _results(split: str, seed: str, n: int) -> tuple[list[Patient], list[Result]]:
    """About ``n`` results: visits of patients, each with a panel or two (dev) or some tests (test)."""
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    patients = _patients(rng, dev, max(2, n // (14 if dev else 9)))
    tests = _DEV_TESTS if dev else _TEST_TESTS
    groups = sorted({t[-1] for t in tests}, key=[t[-1] for t in tests].index)
    results: list[Result] = []
    day = datetime(2024, 1, 8, 7, 0)
    step = 100 * 24 * 60 / max(4, n // (9 if dev else 5))  # minutes: about a hundred days in all
    visits: set[tuple[int, date]] = set()
    while len(results) < n:
        day += timedelta(minutes=round(step * rng.uniform(0.2, 1.8)))
        who = rng.randrange(len(patients))
        if (who, day.date()) in visits:
            continue
        visits.add((who, day.date()))
        doctor = rng.randrange(len(_DEV_DOCTORS))
        chosen = [g for g in groups if rng.random() < (0.6 if g in ("BMP", "lipid") else 0.3)] or [groups[0]]
        for group in chosen:
            panel = len({r.panel for r in results})
            for test in (t for t in tests if t[-1] == group):
                value = _value(rng, test, patients[who].bias[test[0]])
                results.append(Result(who, test, value, _flag(test, value), day, panel, doctor))
                if not dev and rng.random() < 0.05:  # a wrong value first, marked as entered in error
                    wrong = _value(rng, test, patients[who].bias[test[0]] + 2.5)
                    results.insert(
                        -1,
                        Result(who, test, wrong, _flag(test, wrong), day, panel, doctor, "entered-in-error"),
                    )
    for r in results:
        r.id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return patients, results


# -- the files ----------------------------------------------------------------------------------


def _segment(name: str, fields: dict[int, str]) -> str:
    width = max(fields)
    return "|".join([name, *(fields.get(i, "") for i in range(1, width + 1))])


def _number(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}"


def _hl7(patients: list[Patient], results: list[Result]) -> str:
    out = []
    panels: dict[int, list[Result]] = {}
    for r in results:
        panels.setdefault(r.panel, []).append(r)
    for k, rows in panels.items():
        first, p = rows[0], patients[rows[0].patient]
        when, reported = first.when, first.when + timedelta(minutes=37 + 11 * (k % 7))
        code, name = _DEV_PANELS[first.test[-1]]
        npi, dfam, dgiven = _DEV_DOCTORS[first.doctor]
        anpi, afam, agiven = _DEV_DOCTORS[(first.doctor + (k % 3 == 0)) % len(_DEV_DOCTORS)]
        placer, filler = f"ORD{700000 + k}", f"L{24000000 + 7 * k}"
        msh = "MSH|^~\\&|SUNQUEST|MERCYLAB|EPIC|MERCYHOSP"
        pid = {1: "1", 3: f"{p.id}^^^MERCY^MR", 5: f"{p.family}^{p.given}^{chr(65 + int(p.id[1:]) % 26)}"}
        obr = {1: "1", 2: placer, 3: filler, 4: f"{code}^{name}^LN", 7: f"{when:%Y%m%d%H%M}"}
        out += [
            f"{msh}|{reported:%Y%m%d%H%M%S}||ORU^R01^ORU_R01|{k + 1:08d}|P|2.5.1",
            _segment("PID", {**pid, 7: f"{p.born:%Y%m%d}", 8: p.sex}),
            _segment(
                "PV1", {1: "1", 2: "OIE"[k % 3], 3: _DEV_UNITS[k % 5], 7: f"{anpi}^{afam}^{agiven}^^^Dr"}
            ),
            _segment("ORC", {1: "RE", 2: placer, 3: filler, 5: "CM"}),
            _segment(
                "OBR", {**obr, 16: f"{npi}^{dfam}^{dgiven}^^^Dr", 22: f"{reported:%Y%m%d%H%M}", 25: "F"}
            ),
        ]
        for i, r in enumerate(rows, 1):
            loinc, test, unit, low, high, *_, decimals, _ = r.test
            span = f"{_number(low, decimals)}-{_number(high, decimals)}"
            fields = {
                1: str(i),
                2: "NM",
                3: f"{loinc}^{test}^LN",
                5: _number(r.value, decimals),
                6: unit,
                7: span,
            }
            out.append(_segment("OBX", {**fields, 8: r.flag, 11: "F", 14: f"{when:%Y%m%d%H%M}"}))
    return "\n".join(out) + "\n"


_FHIR = "https://fhir.clinica-atlantico.pt/r4"
_HL7 = "http://terminology.hl7.org/CodeSystem"


def _quantity(value: float | None, unit: str) -> dict:
    return {"value": value, "unit": unit, "system": "http://unitsofmeasure.org", "code": unit}


def _observation(r: Result, p: Patient) -> dict:
    loinc, display, text, unit, low, high, *_, decimals, _ = r.test
    bounds = {}
    if low is not None:
        bounds["low"] = _quantity(low, unit)
    if high is not None:
        bounds["high"] = _quantity(high, unit)
    value = round(r.value, decimals) if decimals else int(r.value)
    return {
        "fullUrl": f"{_FHIR}/Observation/{r.id}",
        "resource": {
            "resourceType": "Observation",
            "id": r.id,
            "status": r.status,
            "category": [{"coding": [{"system": f"{_HL7}/observation-category", "code": "laboratory"}]}],
            "code": {
                "coding": [{"system": "http://loinc.org", "code": loinc, "display": display}],
                "text": text,
            },
            "subject": {"reference": f"Patient/{p.id}"},
            "effectiveDateTime": f"{r.when:%Y-%m-%dT%H:%M:00+00:00}",
            "valueQuantity": _quantity(value, unit),
            "referenceRange": [bounds],
            "interpretation": [
                {"coding": [{"system": f"{_HL7}/v3-ObservationInterpretation", "code": r.flag}]}
            ],
        },
        "search": {"mode": "match"},
    }


def _bundle(patients: list[Patient], results: list[Result]) -> dict:
    entries = [_observation(r, patients[r.patient]) for r in results]
    for p in patients:
        resource = {
            "resourceType": "Patient",
            "id": p.id,
            "identifier": [{"system": "https://clinica-atlantico.pt/mrn", "value": f"CA{p.id[4:]}"}],
            "name": [{"use": "official", "family": p.family, "given": [p.given]}],
            "gender": p.sex,
            "birthDate": f"{p.born}",
        }
        entries.append(
            {
                "fullUrl": f"{_FHIR}/Patient/{p.id}",
                "resource": resource,
                "search": {"mode": "include"},
            }
        )
    search = f"{_FHIR}/Observation?category=laboratory&_include=Observation:subject"
    return {
        "resourceType": "Bundle",
        "type": "searchset",
        "total": len(results),
        "link": [{"relation": "self", "url": search}],
        "entry": entries,
    }


def _fit(split: str, seed: str, chars: int) -> tuple[list[Patient], list[Result], object]:
    per, least = (105, 8) if split == "dev" else (1500, 3)
    n = max(least, chars // per)
    for _ in range(6):
        patients, results = _results(split, seed, n)
        context = _hl7(patients, results) if split == "dev" else _bundle(patients, results)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(least, round(n * chars / size))
    return patients, results, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _label(test: tuple) -> str:
    return test[1] if len(test) == 9 else test[2]


def _final(results: list[Result]) -> list[Result]:
    return [r for r in results if r.status == "final"]


def _ask_count(split: str, rng: random.Random, patients: list[Patient], results: list[Result]) -> _Asked:
    if split == "dev":
        r = rng.choice([x for x in results if x.flag == "H"] or results)
        month = f"{r.when:%Y-%m}"
        n = sum(x.code == r.code and x.flag == "H" and f"{x.when:%Y-%m}" == month for x in results)
        what = _label(r.test).lower()
        q = f"How many {what} results from samples collected in {r.when:%B %Y} are flagged H?"
        return q, n, {"loinc": r.code, "month": month}
    r = rng.choice(_final(results))
    n = sum(x.code == r.code and x.value >= r.value for x in _final(results))
    q = f"Count the final {_label(r.test)} observations with a value of {r.value:g} {r.test[3]} or more."
    return q, n, {"loinc": r.code, "at_least": r.value}


def _ask_total(split: str, rng: random.Random, patients: list[Patient], results: list[Result]) -> _Asked:
    r = rng.choice(_final(results))
    p = patients[r.patient]
    values = [x.value for x in _final(results) if x.patient == r.patient and x.code == r.code]
    exact = sum(Fraction(f"{v}") for v in values) / len(values)
    if (exact * 100).denominator == 2:
        return None  # half a cent: rounding would be a matter of convention
    mean = round(float(exact), 2)
    if split == "dev":
        what = _label(r.test).lower()
        q = f"What is the mean of all {what} results for {p.name} (MRN {p.id})? Round to two decimals."
        return q, mean, {"mrn": p.id, "loinc": r.code}
    q = f"Average the final {_label(r.test)} values of {p.name} (born {p.born}), to two decimal places."
    return q, mean, {"patient": p.id, "loinc": r.code}


def _ask_top(split: str, rng: random.Random, patients: list[Patient], results: list[Result]) -> _Asked:
    test = rng.choice(results).test
    if split == "dev":
        best: dict = {}
        for x in results:
            if x.code == test[0]:
                best[patients[x.patient].id] = max(best.get(patients[x.patient].id, x.value), x.value)
        top = _leader(best)
        q = f"Which patient had the highest single {_label(test).lower()} result in the file? Give the MRN."
        return None if top is None else (q, top, {"loinc": test[0]})
    latest: dict = {}
    for x in sorted(_final(results), key=lambda x: x.when):
        if x.code == test[0]:
            latest[patients[x.patient].name] = x.value
    top = _leader(latest)
    what = _label(test)
    q = f"Whose most recent final {what} result is the highest? Give the patient's given and family names."
    return None if top is None else (q, top, {"loinc": test[0]})


def _ask_lookup(split: str, rng: random.Random, patients: list[Patient], results: list[Result]) -> _Asked:
    r = rng.choice(_final(results))
    p = patients[r.patient]
    if split == "dev":
        q = (
            f"What {_label(r.test).lower()} value was reported for {p.name} (MRN {p.id}) from the sample "
            f"collected on {r.when.day} {r.when:%B %Y}?"
        )
        return q, r.value, {"mrn": p.id, "loinc": r.code, "day": f"{r.when.date()}"}
    q = f"Report the final {_label(r.test)} value of {p.name} (born {p.born}) from {r.when.date()}."
    return q, r.value, {"patient": p.id, "loinc": r.code, "day": f"{r.when.date()}"}


def _ask_hop(split: str, rng: random.Random, patients: list[Patient], results: list[Result]) -> _Asked:
    r = rng.choice(results)
    if split == "dev":
        mine = {x.panel: x.value for x in results if x.patient == r.patient and x.code == r.code}
        panel = _leader(mine)
        if panel is None:
            return None
        (doctor,) = {x.doctor for x in results if x.panel == panel}
        p = patients[r.patient]
        q = (
            f"What is the family name of the doctor who ordered the panel holding the highest "
            f"{_label(r.test).lower()} result of {p.name} (MRN {p.id})?"
        )
        return q, _DEV_DOCTORS[doctor][1], {"mrn": p.id, "loinc": r.code}
    best = _leader({x.id: x.value for x in _final(results) if x.code == r.code})
    if best is None:
        return None
    (x,) = [x for x in results if x.id == best]
    q = f"In what year was the patient with the highest final {_label(r.test)} value born?"
    return q, patients[x.patient].born.year, {"loinc": r.code}


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup, "hop": _ask_hop}


@family(
    "labs",
    "clinical lab results: HL7 v2 result messages as a string (dev) or a FHIR Bundle of observations "
    "as a nested dict (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    patients, results, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    # other tests, months, patients and days, then one patient's result of one day
    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, patients, results),
        kind,
        "lookup",
        nonzero=True,
        hidden=True,
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (HL7 v2 messages)" if ref.split == "dev" else "nested dict (FHIR Bundle)",
        results=len(results),
    )
