"""Questions about a shipping manifest: an ocean carrier's cargo manifest of one voyage, bills of
lading with their containers, as a nested dict (``dev``), or a container terminal's printed
discharge lists of a few vessel calls, the report's text as one string (``test``).

What a notebook holds when someone in logistics checks what a ship carries: every container with
its number (the owner's code, a serial and a check digit), its ISO size and type, seals, weight,
the goods and their packages, where it was loaded and where it comes off, the temperature a reefer
is set to and the class of any dangerous goods. Weights come in kilograms or, from some shippers,
pounds, and reefer settings in Celsius or Fahrenheit; shippers, consignees and vessels whose names
extend another's stand beside each other (``HANSA CONCORD`` and ``HANSA CONCORDIA``). The terminal's
report is paged, its header repeated on every page, with each vessel's totals at its end. Containers
are added until the text (or the indented JSON) is about the length asked for. Kinds of question:

- ``count``: the containers for one port of discharge, or those carrying dangerous goods of one
  class (``dev``); the reefers one vessel discharged, or one operator's empty containers
  (``test``);
- ``total``: the gross weight for one port, in tonnes, or the packages one shipper sent
  (``dev``); the gross weight of the full containers loaded at one port, in tonnes, or the TEU one
  vessel discharged for one operator (``test``);
- ``top``: the consignee with the most containers, or the port of discharge taking the most weight
  (``dev``); the operator with the most TEU on one vessel, or the port of loading that sent the most
  weight (``test``) (a clear leader);
- ``lookup``: the bill of lading one container is on, or the temperature a reefer is set to in
  Celsius (``dev``); one container's gross weight, or the vessel that discharged it (``test``).

Every answer is computed from the containers the generator wrote. Score: ``exact``.

Splits: ``dev`` is the carrier's manifest (``carrier``, ``vessel``, ``voyage_number``,
``port_of_loading``, ``departure``, ``port_calls``, ``bills_of_lading`` each with its ``shipper``,
``consignee``, ``port_of_discharge``, ``freight_terms`` and ``containers``, each with
``container_number``, ``iso_size_type``, ``seal_numbers``, ``packages``, ``gross_weight`` as a value
and a unit, ``KGM`` or ``LBR``, ``description``, ``hs_code``, ``reefer`` with its
``temperature_setting`` in ``CEL`` or ``FAH`` or null, ``dangerous_goods``); ``test`` is the
terminal's report, fixed-width columns (``CONTAINER``, ``ISO``, ``ST`` full or empty, ``OPR``,
``POL``, ``POD``, ``GROSS KG`` with thousands separators, ``SEAL NO`` that may hold a space,
``TEMP``, ``IMO``, ``UN``, ``STOW``): other containers, fields, ports and wording.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_POUND = 0.45359237  # kilograms
_TYPES = (  # ISO size and type, TEU, tare in kg, weight
    ("22G1", 1, 2200, 3.0),
    ("42G1", 2, 3750, 2.0),
    ("45G1", 2, 3900, 4.0),
    ("45R1", 2, 4800, 1.2),
    ("22R1", 1, 3050, 0.3),
    ("L5G1", 2, 4900, 0.5),
    ("22T6", 1, 3650, 0.25),
)
_DEV_PORTS = (  # UN/LOCODE, name, weight
    ("NLRTM", "Rotterdam", 3.0),
    ("DEHAM", "Hamburg", 2.6),
    ("BEANR", "Antwerp", 1.8),
    ("GBFXT", "Felixstowe", 1.4),
    ("FRLEH", "Le Havre", 0.9),
    ("PLGDN", "Gdansk", 0.7),
)
_SHIPPERS = (  # name, city, unit of weight, unit of temperature
    ("Ningbo Brightway Textiles Co., Ltd.", "Ningbo", "KGM", "CEL"),
    ("Ningbo Brightway Textile Trading Co., Ltd.", "Ningbo", "KGM", "CEL"),
    ("Shenzhen Lumora Electronics Co., Ltd.", "Shenzhen", "KGM", "CEL"),
    ("Midwest Tooling (Suzhou) Co., Ltd.", "Suzhou", "LBR", "FAH"),
    ("Qingdao Ocean Harvest Foods Co., Ltd.", "Qingdao", "KGM", "CEL"),
    ("Zhejiang Jiahe Furniture Manufacturing Co., Ltd.", "Huzhou", "KGM", "CEL"),
    ("Pacific Coast Cold Chain (Shanghai) Ltd.", "Shanghai", "LBR", "FAH"),
    ("Jiangsu Huatai Chemical Co., Ltd.", "Nanjing", "KGM", "CEL"),
)
_CONSIGNEES = (
    ("Hanse Mode GmbH", "Hamburg", "DE"),
    ("Hanse Mode Outlet GmbH", "Hamburg", "DE"),
    ("Van der Berg Retail B.V.", "Utrecht", "NL"),
    ("Brightline Home Ltd", "Manchester", "GB"),
    ("Delmar Frozen Foods NV", "Ghent", "BE"),
    ("Polmex Electronics Sp. z o.o.", "Warsaw", "PL"),
    ("Maison Lefort SAS", "Rouen", "FR"),
    ("Rheinchem Distribution GmbH", "Duisburg", "DE"),
)
_GOODS = {  # shipper -> (description, HS code, kind of package, packages in a 20-foot box)
    0: [("LADIES COTTON TROUSERS", "6204.62", "CARTONS", 650),
        ("MENS KNITTED SWEATERS", "6110.20", "CARTONS", 540)],
    1: [("POLYESTER FABRIC ROLLS", "5407.61", "ROLLS", 180)],
    2: [("LED PANEL LIGHTS", "9405.42", "CARTONS", 820),
        ("LITHIUM ION POWER BANKS", "8507.60", "CARTONS", 400)],
    3: [("HAND TOOLS, STEEL", "8205.59", "PALLETS", 20), ("DRILL BITS", "8207.50", "PALLETS", 22)],
    4: [("FROZEN SQUID RINGS", "0307.43", "CARTONS", 1300),
        ("FROZEN COD FILLETS", "0304.71", "CARTONS", 1100)],
    5: [("WOODEN DINING CHAIRS", "9401.61", "PIECES", 210),
        ("FLAT PACK WARDROBES", "9403.50", "PACKAGES", 160)],
    6: [("FROZEN MIXED VEGETABLES", "0710.80", "CARTONS", 1250), ("CHILLED GARLIC", "0703.20", "BAGS", 980)],
    7: [("PAINT, FLAMMABLE", "3208.10", "DRUMS", 80),
        ("SODIUM HYDROXIDE SOLUTION", "2815.12", "IBCS", 18)],
}  # fmt: skip
_DANGEROUS = {  # description -> UN number, IMO class, packing group, proper shipping name
    "LITHIUM ION POWER BANKS": ("3480", "9", "", "LITHIUM ION BATTERIES"),
    "PAINT, FLAMMABLE": ("1263", "3", "II", "PAINT"),
    "SODIUM HYDROXIDE SOLUTION": ("1824", "8", "II", "SODIUM HYDROXIDE SOLUTION"),
}
_BUYERS = {4: (4, 4, 2), 6: (4, 2), 7: (7,)}  # who buys a shipper's goods, where not anyone
_OWNERS = ("NRDU", "NRDU", "NRDU", "TGHU", "TCNU", "SEGU", "BMOU", "CAIU", "FCIU")

_VESSELS = (
    "HANSA CONCORD",
    "HANSA CONCORDIA",
    "PACIFIC LODESTAR",
    "CAPE ORANJE",
    "NORTHERN VALOUR",
    "ATLANTIC SERENE",
    "EVER ALTAIR",
    "ARCTIC MERIDIAN",
)
_OPERATORS = ("MSC", "CMA", "HLC", "ONE", "EVG", "COS", "MAE", "YML", "ZIM", "HMM")
_TEST_POLS = ("CNSHA", "CNNGB", "CNYTN", "SGSIN", "KRPUS", "USNYC", "BRSSZ", "INNSA", "TRMER", "MAPTM")
_TEST_PODS = (
    "NLRTM",
    "NLRTM",
    "NLRTM",
    "NLRTM",
    "NLRTM",
    "NLRTM",
    "GBFXT",
    "IEDUB",
    "NOOSL",
)  # and on by feeder


def _check_digit(code: str) -> int:
    """ISO 6346: letters from 10 up, leaving out 11, 22 and 33; each place weighted by 2**i."""
    values, v = {}, 10
    for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        if v % 11 == 0:
            v += 1
        values[letter] = v
        v += 1
    total = sum((values[c] if c.isalpha() else int(c)) * 2**i for i, c in enumerate(code))
    return total % 11 % 10


def _box_number(rng: random.Random, owner: str, used: set[str]) -> str:
    while True:
        code = f"{owner}{rng.randrange(0, 1_000_000):06d}"
        number = f"{code}{_check_digit(code)}"
        if number not in used:
            used.add(number)
            return number


@dataclass
class Box:
    number: str
    iso: int
    kg: float  # gross, in kilograms
    full: bool = True
    seals: list[str] = field(default_factory=list)
    celsius: float | None = None  # a reefer's setting
    dg: str = ""  # the goods' description when they are dangerous, or the IMO class (test)
    un: str = ""
    bl: int = -1  # dev: the bill of lading
    goods: int = 0  # dev: which of the shipper's goods
    packages: int = 0
    pounds: int | None = None  # dev: the weight as a shipper declaring pounds gave it
    fahrenheit: float | None = None
    call: int = 0  # test: the vessel call
    operator: int = 0
    pol: str = ""
    pod: str = ""
    stow: str = ""


@dataclass
class Bill:
    number: str
    shipper: int
    consignee: int
    port: int
    terms: str


def _seal(rng: random.Random) -> str:
    return rng.choice(
        (
            f"CN{rng.randrange(1_000_000, 9_999_999)}",
            f"K{rng.randrange(100_000, 999_999)}",
            f"EU {rng.randrange(10_000, 99_999)}",
            f"ML-CN{rng.randrange(1_000_000, 9_999_999)}",
        )
    )


# -- the dev manifest ---------------------------------------------------------------------------


def _dev_cargo(seed: str, n: int) -> tuple[list[Bill], list[Box]]:
    rng = random.Random(f"{seed}/{n}")
    used: set[str] = set()
    bills: list[Bill] = []
    boxes: list[Box] = []
    port_weight = [p[2] * rng.uniform(0.6, 1.5) for p in _DEV_PORTS]
    shipper_weight = [rng.uniform(0.4, 2.0) for _ in _SHIPPERS]
    while len(boxes) < n:
        s = rng.choices(range(len(_SHIPPERS)), shipper_weight)[0]
        reefer_goods = s in (4, 6)
        bill = Bill(
            f"NRDL24{rng.randrange(0, 10**6):06d}SHA",
            s,
            rng.choice(_BUYERS.get(s, (0, 1, 2, 3, 5, 6))),
            rng.choices(range(len(_DEV_PORTS)), port_weight)[0],
            rng.choice(("PREPAID", "PREPAID", "COLLECT")),
        )
        bills.append(bill)
        for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4, 6))):
            g = rng.randrange(len(_GOODS[s]))
            description, _, _, per_teu = _GOODS[s][g]
            iso = (
                rng.choice((3, 3, 4))
                if reefer_goods
                else 6
                if description == "SODIUM HYDROXIDE SOLUTION"
                else rng.choices((0, 1, 2, 5), (3, 2, 4, 0.5))[0]
            )
            teu = _TYPES[iso][1]
            packages = max(1, round(per_teu * teu * rng.uniform(0.55, 1.0)))
            if _TYPES[iso][0] == "22T6":
                packages = 1
            cargo = rng.uniform(3500, 11_000) * teu
            box = Box(
                _box_number(rng, rng.choice(_OWNERS), used),
                iso,
                round(_TYPES[iso][2] + cargo, 1),
                seals=[_seal(rng) for _ in range(1 if rng.random() < 0.85 else 2)],
                bl=len(bills) - 1,
                goods=g,
                packages=packages,
                dg=description if description in _DANGEROUS else "",
            )
            if _SHIPPERS[s][2] == "LBR":
                box.pounds = round(box.kg / _POUND)
                box.kg = box.pounds * _POUND
            if reefer_goods:
                if _SHIPPERS[s][3] == "FAH":
                    box.fahrenheit = float(rng.choice((-10, -4, 0, 5, 34, 36, 38)))
                    box.celsius = round((box.fahrenheit - 32) * 5 / 9, 1)
                else:
                    box.celsius = float(rng.choice((-25, -20, -18, -18, 2, 4, 13)))
            boxes.append(box)
    return bills, boxes


def _manifest(bills: list[Bill], boxes: list[Box], seed: str) -> dict:
    rng = random.Random(seed)
    departure = datetime(2024, 4, 2, 18) + timedelta(days=rng.randrange(0, 60))
    eta = departure + timedelta(days=29)
    calls = []
    for code, name, _ in _DEV_PORTS:
        calls.append({"unlocode": code, "name": name, "eta": f"{eta:%Y-%m-%dT%H:00:00}+02:00"})
        eta += timedelta(hours=rng.randrange(20, 60))
    out_bills = []
    for k, bill in enumerate(bills):
        name, city, _, _ = _SHIPPERS[bill.shipper]
        consignee, c_city, c_country = _CONSIGNEES[bill.consignee]
        containers = []
        for box in (b for b in boxes if b.bl == k):
            description, hs, kind, _ = _GOODS[bill.shipper][box.goods]
            weight = (
                {"value": box.pounds, "unit": "LBR"}
                if box.pounds is not None
                else {"value": box.kg, "unit": "KGM"}
            )
            reefer = None
            if box.celsius is not None:
                setting = (
                    {"value": box.fahrenheit, "unit": "FAH"}
                    if box.fahrenheit is not None
                    else {"value": box.celsius, "unit": "CEL"}
                )
                reefer = {"temperature_setting": setting, "ventilation": rng.choice(("CLOSED", "25 CBM/H"))}
            dangerous = []
            if box.dg:
                un, imo, group, proper = _DANGEROUS[box.dg]
                dangerous.append(
                    {
                        "un_number": f"UN{un}",
                        "imo_class": imo,
                        "packing_group": group or None,
                        "proper_shipping_name": proper,
                    }
                )
            containers.append(
                {
                    "container_number": box.number,
                    "iso_size_type": _TYPES[box.iso][0],
                    "seal_numbers": box.seals,
                    "packages": {"count": box.packages, "kind": kind},
                    "gross_weight": weight,
                    "description": description,
                    "hs_code": hs,
                    "reefer": reefer,
                    "dangerous_goods": dangerous,
                }
            )
        out_bills.append(
            {
                "bl_number": bill.number,
                "shipper": {"name": name, "city": city, "country": "CN"},
                "consignee": {"name": consignee, "city": c_city, "country": c_country},
                "port_of_discharge": {"unlocode": _DEV_PORTS[bill.port][0], "name": _DEV_PORTS[bill.port][1]},
                "freight_terms": bill.terms,
                "containers": containers,
            }
        )
    return {
        "manifest_id": f"NRDL-418W-CNSHA-{rng.randrange(1000, 9999)}",
        "carrier": {"scac": "NRDL", "name": "Nordhavn Line A/S"},
        "vessel": {"name": "NORDHAVN AURORA", "imo_number": "9784215", "call_sign": "OWKA2", "flag": "DK"},
        "voyage_number": "418W",
        "port_of_loading": {"unlocode": "CNSHA", "name": "Shanghai", "terminal": "Yangshan Phase IV"},
        "departure": f"{departure:%Y-%m-%dT%H:%M:%S}+08:00",
        "port_calls": calls,
        "bills_of_lading": out_bills,
    }


# -- the test report ----------------------------------------------------------------------------


def _test_cargo(seed: str, n: int) -> tuple[list[tuple[str, str, datetime]], list[Box]]:
    rng = random.Random(f"{seed}/{n}")
    used: set[str] = set()
    calls = max(2, min(len(_VESSELS), 1 + n // 90))
    if calls >= 3:  # the two whose names extend one another come together
        names = [0, 1, *rng.sample(range(2, len(_VESSELS)), calls - 2)]
        rng.shuffle(names)
    else:
        names = rng.sample(range(2, len(_VESSELS)), calls)
    start = datetime(2024, 5, 13, 6) + timedelta(hours=rng.randrange(0, 48))
    vessels = []
    for k, v in enumerate(names):
        voyage = f"{rng.randrange(100, 999)}{rng.choice('EWNS')}"
        vessels.append((_VESSELS[v], voyage, start + timedelta(hours=k * rng.randrange(10, 30))))
    op_weight = [rng.uniform(0.3, 2.0) for _ in _OPERATORS]
    pol_weight = [rng.uniform(0.3, 2.0) for _ in _TEST_POLS]
    boxes = []
    for i in range(n):
        call = min(calls - 1, i * calls // n)
        iso = rng.choices(range(len(_TYPES)), [t[3] for t in _TYPES])[0]
        full = rng.random() > 0.15
        teu = _TYPES[iso][1]
        kg = _TYPES[iso][2] + (round(rng.uniform(2000, 13_000) * teu) if full else 0)
        box = Box(
            _box_number(
                rng,
                rng.choice(("MSCU", "CMAU", "HLXU", "ONEU", "EGHU", "CSNU", "MSKU", "YMLU", "ZCSU")),
                used,
            ),
            iso,
            float(kg),
            full=full,
            seals=[_seal(rng)] if full or rng.random() < 0.2 else [],
            call=call,
            operator=rng.choices(range(len(_OPERATORS)), op_weight)[0],
            pol=rng.choices(_TEST_POLS, pol_weight)[0],
            pod=rng.choice(_TEST_PODS),
            stow=f"{rng.randrange(1, 75):02d}{rng.randrange(0, 16):02d}{rng.choice(_TIERS):02d}",
        )
        if full and "R" in _TYPES[iso][0] and rng.random() < 0.9:
            box.celsius = float(rng.choice((-25.0, -20.0, -18.0, -1.5, 0.5, 2.0, 4.0, 13.0)))
        if full and (_TYPES[iso][0] == "22T6" or rng.random() < 0.05):
            box.dg, box.un = rng.choice(
                (("3", "1263"), ("8", "1824"), ("9", "3480"), ("2.1", "1950"), ("6.1", "2810"))
            )
        boxes.append(box)
    return vessels, boxes


_TIERS = (2, 4, 6, 8, 82, 84, 86, 88)  # below deck, and on it
_COLUMNS = (  # name, width
    ("CONTAINER", 13),
    ("ISO", 6),
    ("ST", 4),
    ("OPR", 5),
    ("POL", 7),
    ("POD", 7),
    ("GROSS KG", 10),
    ("", 2),
    ("SEAL NO", 15),
    ("TEMP", 8),
    ("IMO", 5),
    ("UN", 6),
    ("STOW", 7),
)
_PAGE = 48  # lines of containers a page


def _row(box: Box) -> str:
    cells = [
        box.number,
        _TYPES[box.iso][0],
        "F" if box.full else "E",
        _OPERATORS[box.operator],
        box.pol,
        box.pod,
        f"{round(box.kg):>10,}"[-10:],
        "",
        " ".join(box.seals)[:14],
        "" if box.celsius is None else f"{box.celsius:+.1f}C",
        box.dg,
        box.un,
        box.stow,
    ]
    return "".join(f"{c:<{w}}" for c, (_, w) in zip(cells, _COLUMNS, strict=True)).rstrip()


def _report(vessels: list[tuple[str, str, datetime]], boxes: list[Box], seed: str) -> str:
    rng = random.Random(seed)
    run = vessels[-1][2] + timedelta(hours=rng.randrange(6, 30), minutes=rng.randrange(60))
    header = "".join(f"{name:<{w}}" if name != "GROSS KG" else f"{name:>10}" for name, w in _COLUMNS).rstrip()
    rule = "-" * 104
    lines: list[str] = []
    page = 0
    for k, (vessel, voyage, ata) in enumerate(vessels):
        mine = [b for b in boxes if b.call == k]
        for start in range(0, len(mine), _PAGE):
            page += 1
            lines += [
                f"{'EUROMAX TERMINAL ROTTERDAM B.V.':<80}RUN DATE: {run:%d-%b-%Y %H:%M}".upper(),
                f"{'DISCHARGE LIST':<80}PAGE: {page:>4}",
                f"VESSEL: {vessel:<20} VOYAGE: {voyage:<8} CALL: 24-{rng.randrange(1000, 9999)}   "
                f"ATA: {ata:%d-%b-%Y %H:%M}".upper(),
                rule,
                header,
                rule,
            ]
            lines += [_row(b) for b in mine[start : start + _PAGE]]
            lines.append("")
        teu, gross = sum(_TYPES[b.iso][1] for b in mine), round(sum(b.kg for b in mine))
        lines += [
            rule,
            f"TOTAL {vessel}: UNITS {len(mine):>5}   TEU {teu:>5}   GROSS KG {gross:>12,}",
            rule,
            "\f",
        ]
    return "\n".join(lines) + "\n*** END OF REPORT ***\n"


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    per = 560 if split == "dev" else 108
    n = max(4, chars // per)
    for _ in range(6):
        if split == "dev":
            data: object = _dev_cargo(seed, n)
            context: object = _manifest(*data, seed)
        else:
            data = _test_cargo(seed, n)
            context = _report(*data, seed)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(4, round(n * chars / size))
    return data, context, len(data[1])


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _ask_dev(kind: str, rng: random.Random, data: tuple[list[Bill], list[Box]]) -> _Asked:
    bills, boxes = data
    box = rng.choice(boxes)
    bill = bills[box.bl]
    code, port, _ = _DEV_PORTS[bill.port]
    if kind == "count":
        if rng.random() < 0.5:
            n = sum(bills[b.bl].port == bill.port for b in boxes)
            q = f"How many containers on this voyage are to be discharged at {port} ({code})?"
            return q, n, {"port": code}
        dangerous = [b for b in boxes if b.dg]
        if not dangerous:
            return None
        imo = _DANGEROUS[rng.choice(dangerous).dg][1]
        n = sum(bool(b.dg) and _DANGEROUS[b.dg][1] == imo for b in boxes)
        return f"How many containers carry dangerous goods of IMO class {imo}?", n, {"imo_class": imo}
    if kind == "total":
        if rng.random() < 0.5:
            kg = sum(b.kg for b in boxes if bills[b.bl].port == bill.port)
            q = f"What is the total gross weight of the containers for {port} ({code}), in metric tonnes? "
            q += "Two decimals."
            return q, round(kg / 1000, 2), {"port": code}
        shipper = _SHIPPERS[bill.shipper][0]
        n = sum(b.packages for b in boxes if bills[b.bl].shipper == bill.shipper)
        return f"How many packages did {shipper} ship on this voyage, in all?", n, {"shipper": shipper}
    if kind == "top":
        if rng.random() < 0.5:
            top = _leader(Counter(_CONSIGNEES[bills[b.bl].consignee][0] for b in boxes))
            q = "Which consignee has the most containers on this voyage?"
            return None if top is None else (q, top, {"by": "consignee"})
        weights: Counter = Counter()
        for b in boxes:
            weights[_DEV_PORTS[bills[b.bl].port][0]] += b.kg
        top = _leader(dict(weights))
        q = "Which port of discharge takes the most gross weight off this voyage? Give its UN/LOCODE."
        return None if top is None else (q, top, {"by": "port"})
    reefers = [b for b in boxes if b.celsius is not None]
    if reefers and rng.random() < 0.5:
        box = rng.choice(reefers)
        q = f"At what temperature, in degrees Celsius (one decimal), is reefer {box.number} set?"
        return q, box.celsius, {"container": box.number}
    q = f"Which bill of lading is container {box.number} on?"
    return q, bill.number, {"container": box.number}


def _test_top(rng: random.Random, vessels: list, boxes: list[Box], box: Box) -> _Asked:
    vessel = vessels[box.call][0]
    if rng.random() < 0.5:
        teus: Counter = Counter()
        for b in boxes:
            if b.call == box.call:
                teus[_OPERATORS[b.operator]] += _TYPES[b.iso][1]
        top = _leader(dict(teus))
        q = f"On {vessel}, which operator (OPR) has the most TEU (20-foot 1, 40- and 45-foot 2)?"
        return None if top is None else (q, top, {"vessel": vessel})
    weights: Counter = Counter()
    for b in boxes:
        weights[b.pol] += b.kg
    top = _leader(dict(weights))
    q = "Over all the vessels, which port of loading (POL) sent the most gross weight?"
    return None if top is None else (q, top, {"by": "pol"})


def _ask_test(kind: str, rng: random.Random, data: tuple[list, list[Box]]) -> _Asked:
    vessels, boxes = data
    box = rng.choice(boxes)
    vessel, operator = vessels[box.call][0], _OPERATORS[box.operator]
    full = [b for b in boxes if b.full]
    if kind == "count":
        if rng.random() < 0.5:
            n = sum(b.call == box.call and b.celsius is not None for b in boxes)
            q = f"How many reefer containers with a TEMP set were discharged from {vessel}?"
            return q, n, {"vessel": vessel}
        n = sum(not b.full and b.operator == box.operator for b in boxes)
        return (
            f"Count the empty containers (ST E) of operator {operator} in the lists.",
            n,
            {"operator": operator},
        )
    if kind == "total":
        if rng.random() < 0.5:
            kg = sum(b.kg for b in full if b.pol == box.pol)
            q = f"Summing GROSS KG over the full containers loaded at {box.pol}, how many tonnes is that? "
            q += "Two decimals."
            return q, round(kg / 1000, 2), {"pol": box.pol}
        teu = sum(_TYPES[b.iso][1] for b in boxes if b.call == box.call and b.operator == box.operator)
        q = (
            f"How many TEU did {vessel} discharge for operator {operator}? A 20-foot container is 1 TEU, a "
            "40- or 45-foot one 2."
        )
        return q, teu, {"vessel": vessel, "operator": operator}
    if kind == "top":
        return _test_top(rng, vessels, boxes, box)
    if rng.random() < 0.5:
        return (
            f"What GROSS KG is listed for container {box.number}?",
            round(box.kg),
            {"container": box.number},
        )
    return f"Which vessel discharged container {box.number}?", vessel, {"container": box.number}


@family(
    "manifest",
    "a shipping manifest: a carrier's voyage manifest as a nested dict (dev), or a terminal's printed "
    "discharge lists as a string (test)",
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
        container="nested dict (carrier manifest)"
        if ref.split == "dev"
        else "string (terminal discharge lists)",
        containers=count,
    )
