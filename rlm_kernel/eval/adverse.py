"""Questions about adverse drug events: a clinical trials registry's API answer for some completed
studies with their posted results, each study's adverse events by arm, as a nested dict (``dev``), or
a drug regulator's quarterly adverse event reporting data, its ``$``-delimited ASCII files, as a dict
of file name to text (``test``).

What a notebook holds when someone looks into a drug's safety: each study's arms with the
participants at risk and affected by deaths, serious and other adverse events, and each event's term,
organ system and counts in each arm; or each spontaneous report's patient (age with its unit, sex,
weight), country and dates, the drugs it names with their roles (primary suspect, secondary suspect,
concomitant, interacting), routes and doses, the reactions as preferred terms, the outcomes and the
indications. The registry nests every count in a ``stats`` list by group id (the group's title only
in ``eventGroups``), lists an event's affected participants and its events apart (some studies give
no event counts), holds some terms among the serious events and the other events both, and its terms
extend another's (``Rash`` and ``Rash maculo-papular``); arms are titled alike across studies
(``Placebo``). The regulator's files join on ``primaryid`` (the case id with its version after it),
write dates ``YYYYMMDD`` (or only ``YYYYMM`` or ``YYYY`` where that is all that is known), give ages
in years, decades or months by ``age_cod``, name a drug by brand or ingredient, with a strength or
without (the active ingredient in ``prod_ai``; biosimilars' ingredients extend another's, as
``ADALIMUMAB`` and ``ADALIMUMAB-ADAZ``), list a drug that is suspect in one report as concomitant in
another, and hold no outcome for a report that was not serious. Studies (or reports) are added until
the indented JSON is about the length asked for. Kinds of question:

- ``count``: one study's serious event terms that affected one arm, or its other event terms that
  affected more of one arm than of the placebo arm (``dev``); the reports of one primary suspect with
  a death, or with one reaction (``test``);
- ``share``: the percentage of one arm with a serious adverse event, or with one other event
  (``dev``); the percentage of one primary suspect's reports with a hospitalisation, or of its
  patients who are female (``test``);
- ``top``: one study's other event that affected the most participants, or the study with the most
  participants with a serious adverse event (``dev``); one primary suspect's commonest reaction, or
  the primary suspect of the most reports of patients aged 65 or more (``test``) (a clear leader);
- ``lookup``: the participants of one arm one serious event affected, or the events of one other
  event in one arm (``dev``); one case's event date, or the route of one report's primary suspect
  (``test``).

Every answer is computed from the studies (or reports) the generator wrote. Score: ``exact``.

Splits: ``dev`` is the API answer (``studies``, each with ``protocolSection`` with its
``identificationModule``, ``statusModule``, ``sponsorCollaboratorsModule``, ``conditionsModule`` and
``designModule``, ``resultsSection`` with ``adverseEventsModule`` with ``frequencyThreshold``,
``timeFrame``, ``description``, ``eventGroups`` (``id``, ``title``, ``description``,
``deathsNumAffected``, ``deathsNumAtRisk``, ``seriousNumAffected``, ``seriousNumAtRisk``,
``otherNumAffected``, ``otherNumAtRisk``), ``seriousEvents`` and ``otherEvents`` (``term``,
``organSystem``, ``sourceVocabulary``, ``assessmentType``, ``stats`` of ``groupId``, ``numEvents``,
``numAffected`` and ``numAtRisk``), and ``hasResults``; ``nextPageToken``); ``test`` is
``{"ASCII/DEMO24Q1.txt": text, ...}`` with the ``DEMO``, ``DRUG``, ``REAC``, ``OUTC`` and ``INDI``
files: other containers, fields, sources and wording.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from fractions import Fraction

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "share", "top", "lookup")

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _pct(part: int, whole: int) -> float | None:
    """``part`` of ``whole`` in percent, to one decimal; None where it lies on a rounding tie (or
    there is no whole)."""
    if not whole:
        return None
    exact = Fraction(part * 1000, whole)
    units = exact.numerator // exact.denominator
    if exact - units == Fraction(1, 2):
        return None
    return (units + (exact - units > Fraction(1, 2))) / 10


# -- the dev trial results ----------------------------------------------------------------------

_TERMS = {  # organ system: (term, how common, serious too)
    "Gastrointestinal disorders": (
        ("Nausea", 0.12, False),
        ("Vomiting", 0.06, False),
        ("Diarrhoea", 0.08, False),
        ("Constipation", 0.05, False),
        ("Abdominal pain", 0.04, False),
        ("Abdominal pain upper", 0.03, False),
        ("Pancreatitis acute", 0.004, True),
    ),
    "Nervous system disorders": (
        ("Headache", 0.1, False),
        ("Tension headache", 0.03, False),
        ("Dizziness", 0.05, False),
        ("Somnolence", 0.03, False),
    ),
    "Infections and infestations": (
        ("Nasopharyngitis", 0.09, False),
        ("Upper respiratory tract infection", 0.07, False),
        ("Urinary tract infection", 0.04, True),
        ("Pneumonia", 0.012, True),
        ("COVID-19", 0.03, True),
        ("Sepsis", 0.004, True),
    ),
    "General disorders and administration site conditions": (
        ("Fatigue", 0.06, False),
        ("Pyrexia", 0.03, False),
        ("Injection site reaction", 0.07, False),
        ("Injection site erythema", 0.04, False),
        ("Oedema peripheral", 0.03, False),
    ),
    "Skin and subcutaneous tissue disorders": (
        ("Rash", 0.04, False),
        ("Rash maculo-papular", 0.02, False),
        ("Pruritus", 0.04, False),
    ),
    "Musculoskeletal and connective tissue disorders": (
        ("Arthralgia", 0.05, False),
        ("Back pain", 0.05, False),
        ("Myalgia", 0.03, False),
    ),
    "Cardiac disorders": (
        ("Atrial fibrillation", 0.006, True),
        ("Myocardial infarction", 0.005, True),
        ("Cardiac failure", 0.004, True),
    ),
    "Vascular disorders": (("Hypertension", 0.04, False), ("Deep vein thrombosis", 0.004, True)),
    "Hepatobiliary disorders": (("Cholelithiasis", 0.006, True), ("Cholecystitis acute", 0.004, True)),
    "Psychiatric disorders": (
        ("Insomnia", 0.04, False),
        ("Anxiety", 0.03, False),
        ("Suicidal ideation", 0.003, True),
    ),
    "Respiratory, thoracic and mediastinal disorders": (
        ("Cough", 0.05, False),
        ("Dyspnoea", 0.03, False),
        ("Pulmonary embolism", 0.004, True),
    ),
    "Injury, poisoning and procedural complications": (
        ("Fall", 0.02, True),
        ("Ligament sprain", 0.02, False),
    ),
    "Metabolism and nutrition disorders": (
        ("Hypoglycaemia", 0.03, True),
        ("Decreased appetite", 0.04, False),
    ),
}
_CONDITIONS = (
    ("Type 2 Diabetes Mellitus", "Glycemic Control"),
    ("Plaque Psoriasis", "Skin Clearance"),
    ("Atopic Dermatitis", "Eczema Severity"),
    ("Major Depressive Disorder", "Depressive Symptoms"),
    ("Rheumatoid Arthritis", "Joint Symptoms"),
    ("Chronic Migraine", "Migraine Days"),
    ("Obesity", "Body Weight"),
    ("Hypertension", "Blood Pressure"),
)
_SPONSORS = (
    ("Veridian Therapeutics, Inc.", "INDUSTRY"),
    ("Halcyon Bio AG", "INDUSTRY"),
    ("Northgate Pharmaceuticals", "INDUSTRY"),
    ("University Hospital Heidelberg", "OTHER"),
    ("Kestrel Biosciences", "INDUSTRY"),
)


@dataclass
class Event:
    term: str
    system: str
    serious: bool
    affected: list[int]  # by group
    events: list[int] | None


@dataclass
class Study:
    nct: str
    title: str
    condition: str
    sponsor: tuple[str, str]
    groups: list[str]
    at_risk: list[int]
    deaths: list[int]
    events: list[Event] = field(default_factory=list)
    serious_any: list[int] = field(default_factory=list)
    other_any: list[int] = field(default_factory=list)


def _event(rng: random.Random, term: tuple, system: str, serious: bool, study: Study, counted: bool) -> Event:
    name, rate, _ = term
    lift = rng.uniform(0.8, 2.2)
    affected = []
    for k, n in enumerate(study.at_risk):
        mean = n * rate * (1 if k == 0 else lift) * rng.uniform(0.6, 1.4)
        affected.append(min(n, max(0, round(mean + rng.gauss(0, mean**0.5)))))
    if not any(affected):
        affected[rng.randrange(len(affected))] = 1
    events = [a + sum(rng.random() < 0.3 for _ in range(a)) for a in affected] if counted else None
    return Event(name, system, serious, affected, events)


def _study(rng: random.Random, nct: str, size: int) -> Study:
    condition, outcome = rng.choice(_CONDITIONS)
    code = f"{rng.choice(('VRX', 'HBX', 'NGP', 'KST', 'ZT'))}-{rng.randrange(100, 9999)}"
    doses = rng.sample((5, 10, 20, 30, 50, 100, 200), rng.randrange(1, 4))
    groups = ["Placebo", *(f"{code} {d} mg" for d in sorted(doses))]
    per = rng.randrange(40, 400)
    at_risk = [per + rng.randrange(-per // 8, per // 8 + 1) for _ in groups]
    study = Study(
        nct,
        f"A Study of {code} in Participants With {condition} ({outcome})",
        condition,
        rng.choice(_SPONSORS),
        groups,
        at_risk,
        [sum(rng.random() < 0.004 for _ in range(n)) for n in at_risk],
    )
    counted = rng.random() < 0.75
    serious = [(t, s) for s, terms in _TERMS.items() for t in terms if t[2]]
    other = [(t, s) for s, terms in _TERMS.items() for t in terms if t[1] >= 0.02]
    for t, s in rng.sample(serious, min(len(serious), max(2, size // 3))):
        study.events.append(_event(rng, t, s, True, study, counted))
    for t, s in rng.sample(other, min(len(other), max(3, size - size // 3))):
        study.events.append(_event(rng, t, s, False, study, counted))
    for kind, out in ((True, study.serious_any), (False, study.other_any)):
        for k in range(len(groups)):
            hits = [e.affected[k] for e in study.events if e.serious == kind]
            low, high = max(hits, default=0), min(sum(hits), at_risk[k])
            out.append(rng.randint(low, max(low, high)) if hits else 0)
    return study


def _dev_studies(seed: str, n: int) -> list[Study]:
    """About ``n`` events over a few studies."""
    rng = random.Random(f"{seed}/{n}")
    studies: list[Study] = []
    ids: set[str] = set()
    while sum(len(s.events) for s in studies) < n:
        nct = f"NCT0{rng.randrange(3_000_000, 6_500_000)}"
        if nct in ids:
            continue
        ids.add(nct)
        studies.append(
            _study(rng, nct, max(5, min(34, n - sum(len(s.events) for s in studies), rng.randrange(8, 30))))
        )
    return studies


def _stats(e: Event, study: Study) -> list[dict]:
    out = []
    for k, affected in enumerate(e.affected):
        row: dict = {"groupId": f"EG{k:03d}"}
        if e.events is not None:
            row["numEvents"] = e.events[k]
        row.update({"numAffected": affected, "numAtRisk": study.at_risk[k]})
        out.append(row)
    return out


def _record(study: Study, rng: random.Random) -> dict:
    start = date(2016, 1, 1) + timedelta(days=rng.randrange(0, 1800))
    end = start + timedelta(days=rng.randrange(300, 1100))
    events = [
        {
            "term": e.term,
            "organSystem": e.system,
            "sourceVocabulary": "MedDRA (25.0)",
            "assessmentType": "SYSTEMATIC_ASSESSMENT" if rng.random() < 0.85 else "NON_SYSTEMATIC_ASSESSMENT",
            "stats": _stats(e, study),
        }
        for e in study.events
    ]
    groups = [
        {
            "id": f"EG{k:03d}",
            "title": title,
            "description": "Participants received matching placebo."
            if title == "Placebo"
            else f"Participants received {title} once daily.",
            "deathsNumAffected": study.deaths[k],
            "deathsNumAtRisk": study.at_risk[k],
            "seriousNumAffected": study.serious_any[k],
            "seriousNumAtRisk": study.at_risk[k],
            "otherNumAffected": study.other_any[k],
            "otherNumAtRisk": study.at_risk[k],
        }
        for k, title in enumerate(study.groups)
    ]
    return {
        "protocolSection": {
            "identificationModule": {
                "nctId": study.nct,
                "orgStudyIdInfo": {"id": f"{study.groups[-1].split()[0]}-{rng.randrange(100, 400)}"},
                "organization": {"fullName": study.sponsor[0], "class": study.sponsor[1]},
                "briefTitle": study.title,
            },
            "statusModule": {
                "overallStatus": "COMPLETED",
                "startDateStruct": {"date": f"{start:%Y-%m}"},
                "completionDateStruct": {"date": end.isoformat(), "type": "ACTUAL"},
            },
            "sponsorCollaboratorsModule": {
                "leadSponsor": {"name": study.sponsor[0], "class": study.sponsor[1]}
            },
            "conditionsModule": {"conditions": [study.condition]},
            "designModule": {
                "phases": [rng.choice(("PHASE2", "PHASE3"))],
                "enrollmentInfo": {"count": sum(study.at_risk) + rng.randrange(0, 9), "type": "ACTUAL"},
            },
        },
        "resultsSection": {
            "adverseEventsModule": {
                "frequencyThreshold": "5",
                "timeFrame": f"Baseline up to Week {rng.choice((12, 24, 52))}",
                "description": "Safety population: all randomized participants who received any dose.",
                "eventGroups": groups,
                "seriousEvents": [x for x, e in zip(events, study.events, strict=True) if e.serious],
                "otherEvents": [x for x, e in zip(events, study.events, strict=True) if not e.serious],
            }
        },
        "hasResults": True,
    }


def _registry(studies: list[Study], seed: str) -> dict:
    rng = random.Random(seed)
    token = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=14))
    return {"studies": [_record(s, rng) for s in studies], "nextPageToken": token}


# -- the test spontaneous reports ---------------------------------------------------------------

_SUSPECTS = {  # prod_ai: names, route, dose, unit, form, frequency, application, reactions, indication
    "APIXABAN": (
        ("ELIQUIS", "ELIQUIS 5 MG", "APIXABAN"),
        "ORAL",
        "5",
        "MG",
        "TABLET",
        "BID",
        "202155",
        (
            "Haemorrhage",
            "Gastrointestinal haemorrhage",
            "Epistaxis",
            "Contusion",
            "Cerebrovascular accident",
            "Death",
        ),
        "Atrial fibrillation",
    ),
    "SEMAGLUTIDE": (
        ("OZEMPIC", "WEGOVY", "SEMAGLUTIDE"),
        "SUBCUTANEOUS",
        ".5",
        "MG",
        "INJECTION",
        "/wk",
        "209637",
        (
            "Nausea",
            "Vomiting",
            "Diarrhoea",
            "Constipation",
            "Weight decreased",
            "Pancreatitis",
            "Off label use",
            "Product dose omission issue",
        ),
        "Type 2 diabetes mellitus",
    ),
    "TIRZEPATIDE": (
        ("MOUNJARO", "ZEPBOUND"),
        "SUBCUTANEOUS",
        "5",
        "MG",
        "INJECTION",
        "/wk",
        "215866",
        (
            "Nausea",
            "Injection site pain",
            "Decreased appetite",
            "Product dose omission issue",
            "Off label use",
        ),
        "Weight control",
    ),
    "ADALIMUMAB": (
        ("HUMIRA", "HUMIRA PEN"),
        "SUBCUTANEOUS",
        "40",
        "MG",
        "INJECTION",
        "QOW",
        "125057",
        (
            "Injection site pain",
            "Psoriasis",
            "Crohn's disease",
            "Drug ineffective",
            "Arthralgia",
            "Pneumonia",
        ),
        "Rheumatoid arthritis",
    ),
    "ADALIMUMAB-ADAZ": (
        ("HYRIMOZ",),
        "SUBCUTANEOUS",
        "40",
        "MG",
        "INJECTION",
        "QOW",
        "761071",
        ("Injection site pain", "Drug ineffective", "Arthralgia"),
        "Psoriasis",
    ),
    "DUPILUMAB": (
        ("DUPIXENT", "DUPIXENT 300 MG"),
        "SUBCUTANEOUS",
        "300",
        "MG",
        "INJECTION",
        "Q2W",
        "761055",
        ("Conjunctivitis", "Eczema", "Dry eye", "Injection site reaction", "Arthralgia"),
        "Dermatitis atopic",
    ),
    "PEMBROLIZUMAB": (
        ("KEYTRUDA",),
        "INTRAVENOUS",
        "200",
        "MG",
        "SOLUTION",
        "Q3W",
        "125514",
        ("Pneumonitis", "Colitis", "Hypothyroidism", "Death", "Fatigue"),
        "Non-small cell lung cancer",
    ),
    "METFORMIN HYDROCHLORIDE": (
        ("METFORMIN", "GLUCOPHAGE", "METFORMIN HCL"),
        "ORAL",
        "500",
        "MG",
        "TABLET",
        "BID",
        "020357",
        ("Lactic acidosis", "Diarrhoea", "Nausea", "Acute kidney injury"),
        "Type 2 diabetes mellitus",
    ),
    "ATORVASTATIN CALCIUM": (
        ("LIPITOR", "ATORVASTATIN"),
        "ORAL",
        "40",
        "MG",
        "TABLET",
        "QD",
        "020702",
        ("Myalgia", "Rhabdomyolysis", "Blood creatine phosphokinase increased"),
        "Hypercholesterolaemia",
    ),
    "INSULIN GLARGINE": (
        ("LANTUS", "LANTUS SOLOSTAR"),
        "SUBCUTANEOUS",
        "20",
        "IU",
        "INJECTION",
        "QD",
        "021081",
        ("Hypoglycaemia", "Blood glucose increased", "Device issue"),
        "Type 1 diabetes mellitus",
    ),
    "INSULIN GLARGINE-YFGN": (
        ("SEMGLEE",),
        "SUBCUTANEOUS",
        "20",
        "IU",
        "INJECTION",
        "QD",
        "761201",
        ("Blood glucose increased", "Device issue"),
        "Type 2 diabetes mellitus",
    ),
}
_SUSPECT_WEIGHTS = (5, 5, 3, 4, 1, 3, 2, 2, 2, 2, 1)
_CONCOMITANT = (
    ("ASPIRIN", "ASPIRIN"),
    ("LISINOPRIL", "LISINOPRIL"),
    ("AMLODIPINE", "AMLODIPINE BESYLATE"),
    ("OMEPRAZOLE", "OMEPRAZOLE"),
    ("TYLENOL", "ACETAMINOPHEN"),
    ("VITAMIN D3", "CHOLECALCIFEROL"),
    ("METOPROLOL", "METOPROLOL SUCCINATE"),
    ("FUROSEMIDE", "FUROSEMIDE"),
    ("METFORMIN", "METFORMIN HYDROCHLORIDE"),
    ("LIPITOR", "ATORVASTATIN CALCIUM"),
    ("PREDNISONE", "PREDNISONE"),
)
_COUNTRIES = ("US", "GB", "FR", "DE", "JP", "CA", "BR", "IT", "ES", "COUNTRY NOT SPECIFIED")
_COUNTRY_WEIGHTS = (60, 6, 5, 5, 6, 4, 3, 3, 3, 2)
_SENDERS = (
    "NOVO NORDISK",
    "BRISTOL MYERS SQUIBB",
    "ELI LILLY AND CO",
    "ABBVIE",
    "SANOFI AVENTIS",
    "MERCK SHARP & DOHME",
    "PFIZER",
    "SANDOZ",
    "VIATRIS",
)
_FACTOR = {"YR": 1, "DEC": 10, "MON": Fraction(1, 12), "WK": Fraction(1, 52), "DY": Fraction(1, 365)}


@dataclass
class Drug:
    seq: int
    role: str
    name: str
    ai: str
    route: str


@dataclass
class Report:
    caseid: int
    version: int
    event: str  # YYYYMMDD, YYYYMM, YYYY or ""
    age: str
    age_cod: str
    sex: str
    country: str
    drugs: list[Drug]
    reactions: list[str]
    outcomes: list[str]
    fda: date

    @property
    def primaryid(self) -> str:
        return f"{self.caseid}{self.version}"

    @property
    def suspect(self) -> str:
        return next(d.ai for d in self.drugs if d.role == "PS")

    @property
    def years(self) -> Fraction | None:
        return None if not self.age else int(self.age) * Fraction(_FACTOR[self.age_cod])


def _age(rng: random.Random) -> tuple[str, str]:
    roll = rng.random()
    if roll < 0.08:
        return "", ""
    if roll < 0.11:
        return str(rng.randrange(2, 9)), "DEC"
    if roll < 0.13:
        return str(rng.randrange(2, 23)), "MON"
    return str(round(min(96, max(19, rng.gauss(58, 16))))), "YR"


def _report(rng: random.Random, caseid: int, quarter: date) -> Report:
    ai = rng.choices(list(_SUSPECTS), _SUSPECT_WEIGHTS)[0]
    names, route, *_ = _SUSPECTS[ai]
    drugs = [Drug(1, "PS", rng.choice(names), ai, route)]
    for role in rng.choices(("SS", "C", "C", "C", "I"), k=rng.choice((0, 0, 1, 1, 2, 3))):
        name, other = rng.choice(_CONCOMITANT)
        if other != ai and all(d.ai != other for d in drugs):
            drugs.append(Drug(len(drugs) + 1, role, name, other, "ORAL"))
    pool = _SUSPECTS[ai][7]
    reactions = rng.sample(pool, rng.randrange(1, min(4, len(pool)) + 1))
    outcomes: list[str] = []
    if "Death" in reactions or rng.random() < 0.05:
        outcomes.append("DE")
    if rng.random() < 0.35:
        outcomes.append("HO")
    if rng.random() < 0.25:
        outcomes.append(rng.choice(("OT", "LT", "DS", "RI", "CA")))
    fda = quarter + timedelta(days=rng.randrange(0, 90))
    happened = fda - timedelta(days=rng.randrange(3, 400))
    event = rng.choices((f"{happened:%Y%m%d}", f"{happened:%Y%m}", f"{happened:%Y}", ""), (70, 10, 5, 15))[0]
    age, age_cod = _age(rng)
    sex = rng.choices(("F", "M", ""), (55, 38, 7))[0]
    country = rng.choices(_COUNTRIES, _COUNTRY_WEIGHTS)[0]
    return Report(
        caseid,
        rng.choices((1, 2, 3, 4), (60, 25, 10, 5))[0],
        event,
        age,
        age_cod,
        sex,
        country,
        drugs,
        reactions,
        sorted(set(outcomes), key=outcomes.index),
        fda,
    )


def _test_reports(seed: str, n: int) -> tuple[list[Report], str]:
    rng = random.Random(f"{seed}/{n}")
    year, q = rng.randrange(2021, 2025), rng.randrange(1, 5)
    quarter = date(year, 3 * q - 2, 1)
    out: list[Report] = []
    cases: set[int] = set()
    while len(out) < n:
        caseid = rng.randrange(18_000_000, 24_000_000)
        if caseid in cases:
            continue
        cases.add(caseid)
        out.append(_report(rng, caseid, quarter))
    out.sort(key=lambda r: r.primaryid)
    return out, f"{year % 100:02d}Q{q}"


def _demo(r: Report, rng: random.Random) -> str:
    kind = rng.choices(("EXP", "PER", "DIR"), (60, 25, 15))[0]
    first = r.fda - timedelta(days=rng.randrange(0, 200)) if r.version > 1 else r.fda
    sender = "" if kind == "DIR" else rng.choice(_SENDERS)
    where = r.country if len(r.country) == 2 else "US"
    mfr_num = "" if kind == "DIR" else f"{where}-{sender.split()[0]}-{r.fda.year}{rng.randrange(10**6):06d}"
    group = "" if not r.age else ("E" if (r.years or 0) >= 65 else "A" if (r.years or 0) >= 18 else "C")
    weight, unit = (
        ("", "")
        if rng.random() < 0.45
        else rng.choice(((str(rng.randrange(48, 130)), "KG"), (str(rng.randrange(110, 290)), "LBS")))
    )
    mfr_dt = "" if kind == "DIR" else f"{r.fda - timedelta(days=rng.randrange(1, 15)):%Y%m%d}"
    occurred = r.country if r.country != "COUNTRY NOT SPECIFIED" else "US"
    fields = [
        r.primaryid,
        str(r.caseid),
        str(r.version),
        "I" if r.version == 1 else "F",
        r.event,
        mfr_dt,
        f"{first:%Y%m%d}",
        f"{r.fda:%Y%m%d}",
        kind,
        "",
        mfr_num,
        sender,
        "",
        r.age,
        r.age_cod,
        group,
        r.sex,
        "Y",
        weight,
        unit,
        f"{r.fda - timedelta(days=rng.randrange(0, 5)):%Y%m%d}",
        "N" if kind == "DIR" else "",
        rng.choice(("MD", "HP", "CN", "PH", "LW")),
        r.country,
        occurred,
    ]
    return "$".join(fields)


def _drug(r: Report, d: Drug, rng: random.Random) -> str:
    if d.role == "PS" or (d.ai in _SUSPECTS and rng.random() < 0.5):
        info = _SUSPECTS.get(d.ai)
    else:
        info = None
    if info is None:
        return "$".join(
            [
                r.primaryid,
                str(r.caseid),
                str(d.seq),
                d.role,
                d.name,
                d.ai,
                "1",
                d.route,
                "UNK",
                "",
                "",
                "",
                "",
                "",
                "",
                "",
                "",
                "",
                "",
                "",
            ]
        )
    _, route, amount, unit, form, freq, nda, *_ = info
    verbatim = f"{'0' + amount if amount.startswith('.') else amount} {unit}, {freq}"  # the amount: ".5"
    lot = "" if rng.random() < 0.6 else f"{rng.choice('ABCDEFGHKLMNPRT')}{rng.randrange(1000, 99999)}"
    return "$".join(
        [
            r.primaryid,
            str(r.caseid),
            str(d.seq),
            d.role,
            d.name,
            d.ai,
            "1",
            route,
            verbatim,
            "",
            "",
            rng.choice(("Y", "N", "U", "D")),
            rng.choice(("Y", "N", "U", "D")),
            lot,
            "",
            nda,
            amount,
            unit,
            form,
            freq,
        ]
    )


def _quarterly(data: tuple[list[Report], str], seed: str) -> dict[str, str]:
    reports, quarter = data
    rng = random.Random(seed)
    demo = [
        "primaryid$caseid$caseversion$i_f_code$event_dt$mfr_dt$init_fda_dt$fda_dt$rept_cod$auth_num$mfr_num$"
        "mfr_sndr$lit_ref$age$age_cod$age_grp$sex$e_sub$wt$wt_cod$rept_dt$to_mfr$occp_cod$reporter_country$"
        "occr_country"
    ]
    drug = [
        "primaryid$caseid$drug_seq$role_cod$drugname$prod_ai$val_vbm$route$dose_vbm$cum_dose_chr$cum_dose_unit$"
        "dechal$rechal$lot_num$exp_dt$nda_num$dose_amt$dose_unit$dose_form$dose_freq"
    ]
    reac = ["primaryid$caseid$pt$drug_rec_act"]
    outc = ["primaryid$caseid$outc_cod"]
    indi = ["primaryid$caseid$indi_drug_seq$indi_pt"]
    for r in reports:
        demo.append(_demo(r, rng))
        drug += [_drug(r, d, rng) for d in r.drugs]
        reac += [f"{r.primaryid}${r.caseid}${pt}$" for pt in r.reactions]
        outc += [f"{r.primaryid}${r.caseid}${code}" for code in r.outcomes]
        for d in r.drugs:
            known = _SUSPECTS.get(d.ai)
            why = known[8] if known and rng.random() < 0.7 else "Product used for unknown indication"
            indi.append(f"{r.primaryid}${r.caseid}${d.seq}${why}")
    return {
        f"ASCII/{name}{quarter}.txt": "\n".join(lines) + "\n"
        for name, lines in (("DEMO", demo), ("DRUG", drug), ("REAC", reac), ("OUTC", outc), ("INDI", indi))
    }


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    """The events (or reports) nearest the size asked for, of a few tries."""
    per = 760 if split == "dev" else 720
    n = max(6, chars // per)
    best: tuple[float, object, object, int] | None = None
    for _ in range(8):
        if split == "dev":
            data: object = _dev_studies(seed, n)
            context: object = _registry(data, seed)
        else:
            data = _test_reports(seed, n)
            context = _quarterly(data, seed)
        size = len(as_text(context))
        miss = abs(size - chars) / chars
        if best is None or miss < best[0]:
            best = (miss, data, context, n)
        if 0.9 * chars <= size <= 1.1 * chars:
            break
        n = max(6, round(n * chars / size))
    assert best is not None
    return best[1], best[2], best[3]


# -- questions ----------------------------------------------------------------------------------


def _pick(rng: random.Random, studies: list[Study], serious: bool | None = None) -> tuple[Study, Event, int]:
    study = rng.choice(studies)
    events = [e for e in study.events if serious is None or e.serious == serious] or study.events
    e = rng.choice(events)
    return study, e, rng.randrange(len(study.groups))


def _dev_count(rng: random.Random, studies: list[Study]) -> _Asked:
    study, _, k = _pick(rng, studies, True)
    group = study.groups[k]
    if rng.random() < 0.5:
        n = sum(x.serious and x.affected[k] > 0 for x in study.events)
        q = (
            f"How many serious adverse event terms in study {study.nct} affected at least one participant in "
            f"the '{group}' group?"
        )
        return q, n, {"nctId": study.nct, "group": group}
    k = rng.randrange(1, len(study.groups))  # an arm beside the placebo's
    n = sum(not x.serious and x.affected[k] > x.affected[0] for x in study.events)
    q = (
        f"How many other (non-serious) adverse event terms of study {study.nct} affected more participants "
        f"in the '{study.groups[k]}' group than in the '{study.groups[0]}' group?"
    )
    return q, n, {"nctId": study.nct, "group": study.groups[k], "than": study.groups[0]}


def _dev_share(rng: random.Random, studies: list[Study]) -> _Asked:
    study, e, k = _pick(rng, studies, False)
    group = study.groups[k]
    if rng.random() < 0.5:
        share = _pct(study.serious_any[k], study.at_risk[k])
        q = (
            f"What percentage of the participants at risk in the '{group}' group of study {study.nct} had a "
            "serious adverse event? One decimal."
        )
        return None if not share else (q, share, {"nctId": study.nct, "group": group})
    share = _pct(e.affected[k], study.at_risk[k])
    q = (
        f"In study {study.nct}, what percentage of the '{group}' group's participants at risk were affected "
        f"by '{e.term}' among the other (non-serious) adverse events? One decimal."
    )
    return (
        None if not share or e.serious else (q, share, {"nctId": study.nct, "group": group, "term": e.term})
    )


def _dev_top(rng: random.Random, studies: list[Study]) -> _Asked:
    if rng.random() < 0.5:
        study = rng.choice(studies)
        top = _leader({e.term: sum(e.affected) for e in study.events if not e.serious})
        q = (
            "Which other (non-serious) adverse event term affected the most participants, summed over all "
            f"groups, in study {study.nct}?"
        )
        return None if top is None else (q, top, {"nctId": study.nct, "by": "otherEvents"})
    if len(studies) < 2:
        return None
    top = _leader({s.nct: sum(s.serious_any) for s in studies})
    q = "Which study (NCT id) had the most participants with a serious adverse event, summed over its groups?"
    return None if top is None else (q, top, {"by": "seriousNumAffected"})


def _dev_lookup(rng: random.Random, studies: list[Study]) -> _Asked:
    if rng.random() < 0.5:
        study, e, k = _pick(rng, studies, True)
        q = (
            f"How many participants in the '{study.groups[k]}' group of study {study.nct} were affected by "
            f"the serious adverse event '{e.term}'?"
        )
        params = {"nctId": study.nct, "group": study.groups[k], "term": e.term, "field": "numAffected"}
        return None if not e.serious else (q, e.affected[k], params)
    study, e, k = _pick(rng, [s for s in studies if s.events[0].events is not None] or studies, False)
    if e.events is None or e.serious:
        return None
    q = (
        f"How many events of '{e.term}' were counted among the other adverse events of the "
        f"'{study.groups[k]}' group in study {study.nct}?"
    )
    return (
        q,
        e.events[k],
        {"nctId": study.nct, "group": study.groups[k], "term": e.term, "field": "numEvents"},
    )


def _suspected(reports: list[Report], ai: str) -> list[Report]:
    return [r for r in reports if r.suspect == ai]


def _test_count(rng: random.Random, data: tuple) -> _Asked:
    reports, _ = data
    if rng.random() < 0.5:
        r = rng.choice([x for x in reports if "DE" in x.outcomes] or reports)
        n = sum("DE" in x.outcomes for x in _suspected(reports, r.suspect))
        q = (
            f"Count the reports (primaryid) in which {r.suspect} is the primary suspect drug (role_cod PS) "
            "and one of the outcomes is death (outc_cod DE)."
        )
        return q, n, {"prod_ai": r.suspect, "outc_cod": "DE"}
    r = rng.choice(reports)
    pt = rng.choice(r.reactions)
    n = sum(pt in x.reactions for x in _suspected(reports, r.suspect))
    q = f"Tally the reports with {r.suspect} as primary suspect (role_cod PS) that list the reaction '{pt}'."
    return q, n, {"prod_ai": r.suspect, "pt": pt}


def _test_share(rng: random.Random, data: tuple) -> _Asked:
    reports, _ = data
    ai = rng.choice(reports).suspect
    mine = _suspected(reports, ai)
    if rng.random() < 0.5:
        share = _pct(sum("HO" in x.outcomes for x in mine), len(mine))
        q = (
            f"Give the percentage, to one decimal, of the reports with {ai} as primary suspect (role_cod PS) "
            "that have a hospitalisation outcome (outc_cod HO)."
        )
        return None if not share else (q, share, {"prod_ai": ai, "outc_cod": "HO"})
    known = [x for x in mine if x.sex]
    share = _pct(sum(x.sex == "F" for x in known), len(known))
    q = (
        f"Give the percentage, to one decimal, of female patients (sex F) among the reports with {ai} as "
        "primary suspect (role_cod PS), leaving out the reports that give no sex."
    )
    return None if not share else (q, share, {"prod_ai": ai, "sex": "F"})


def _test_top(rng: random.Random, data: tuple) -> _Asked:
    reports, _ = data
    if rng.random() < 0.5:
        ai = rng.choice(reports).suspect
        top = _leader(Counter(pt for x in _suspected(reports, ai) for pt in x.reactions))
        q = (
            f"Name the reaction (pt) reported most often in the reports with {ai} as primary suspect "
            "(role_cod PS)."
        )
        return None if top is None else (q, top, {"prod_ai": ai, "by": "pt"})
    top = _leader(Counter(x.suspect for x in reports if x.years is not None and x.years >= 65))
    q = (
        "Find the prod_ai that is the primary suspect (role_cod PS) in the most reports of patients aged 65 "
        "years or more (each age read in the unit its age_cod gives)."
    )
    return None if top is None else (q, top, {"min_years": 65, "by": "prod_ai"})


def _test_lookup(rng: random.Random, data: tuple) -> _Asked:
    reports, _ = data
    dated = [x for x in reports if len(x.event) == 8]
    if dated and rng.random() < 0.5:
        r = rng.choice(dated)
        q = f"Report the event date (event_dt) of case {r.caseid}, as YYYY-MM-DD."
        when = f"{r.event[:4]}-{r.event[4:6]}-{r.event[6:]}"
        return q, when, {"caseid": r.caseid, "field": "event_dt"}
    r = rng.choice(reports)
    q = f"Report the route of the primary suspect drug (role_cod PS) in report {r.primaryid}."
    return q, r.drugs[0].route, {"primaryid": r.primaryid, "field": "route"}


_DEV = {"count": _dev_count, "share": _dev_share, "top": _dev_top, "lookup": _dev_lookup}
_TEST = {"count": _test_count, "share": _test_share, "top": _test_top, "lookup": _test_lookup}


@family(
    "adverse",
    "adverse drug events: a trials registry's results of some studies as a nested dict (dev), or a "
    "regulator's quarterly reporting data files as a dict of file name to text (test)",
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
        container="nested dict (trials registry API response)"
        if ref.split == "dev"
        else "dict of file name to text (quarterly reporting data)",
        **({"events": count} if ref.split == "dev" else {"reports": count}),
    )
