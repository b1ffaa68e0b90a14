"""Questions about invoices and receipts: an accounting API's sales invoices as a list of dicts
(``dev``) or a folder of scanned till receipts as a dict of file name to text (``test``).

What a notebook holds when someone does a small business's books: invoices sent to customers, each
with its lines, VAT, a status and what is still owed (``dev``), or the receipts of a household's
shopping, read from photos into text (``test``). Customer and shop names that extend another's
stand beside each other, and so do products (``Espresso Blend 1kg`` and ``Espresso Blend 250g``).
Invoices or receipts are added until the indented JSON is about the length asked for. Kinds of
question:

- ``total``: what was invoiced to one customer in one month, VAT included, voided and draft
  invoices left out (``dev``), or spent at one shop in one month (``test``);
- ``count``: how many unpaid invoices were past their due date on one day (``dev``), or how many
  receipts hold one product (``test``);
- ``top``: the customer who owes the most (``dev``) or the shop where the most was spent
  (``test``) (a clear leader);
- ``lookup``: how many units of one product one invoice bills (``dev``), or the product of the
  dearest line on one receipt (``test``).

Every answer is computed from the invoices or receipts the generator wrote. Score: ``exact``
(numbers as numbers, names without case).

Splits: ``dev`` is a Xero-like list of ``ACCREC`` invoices of a coffee roaster (``InvoiceNumber``,
``Contact.Name``, ``DateString``, ``DueDateString``, ``Status`` of ``DRAFT``, ``AUTHORISED``,
``PAID`` or ``VOIDED``, ``LineItems`` with ``Quantity``, ``UnitAmount``, ``TaxAmount`` and
``LineAmount``, ``Total``, ``AmountDue``); ``test`` is a dict of OCR'd receipts keyed by the photo's
file name (a shop's header, one line an item with ``qty @ price`` lines under multiples, a
``TOTAL``, the payment, the date as ``dd/mm/yyyy``): other containers, fields, data and wording.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("total", "count", "top", "lookup")

_DEV_CONTACTS = (
    "Harbour Lane Bakery Ltd", "Harbour Lane Bakery (Leeds) Ltd", "The Copper Kettle",
    "The Copper Kettle Cafe", "Northfield Deli", "Bean & Gone Ltd", "Morning Glory Cafes",
    "Morning Glory Cafes Ltd", "Pressroom Coffee", "Little Acorn Nursery", "Station Road Books",
    "Ivy House Hotel", "Riverside Gym Ltd", "Saltmarsh Kitchen", "Tidewater Catering", "Old Mill Tearooms",
)  # fmt: skip
_DEV_ITEMS = (
    ("Espresso Blend 1kg", 1850), ("Espresso Blend 250g", 595), ("House Decaf 1kg", 1990),
    ("Colombia Huila 1kg", 2240), ("Colombia Huila 250g", 720), ("Ethiopia Yirgacheffe 1kg", 2560),
    ("Oat Milk Barista 1L (case of 6)", 1380), ("Paper Cups 8oz (sleeve of 50)", 475),
    ("Paper Cups 12oz (sleeve of 50)", 560), ("Chai Syrup 1L", 890), ("Grinder service", 6500),
    ("Barista training (half day)", 18000), ("Delivery", 850),
)  # fmt: skip

_TEST_SHOPS = (
    ("FRESHWAY", "21 Station Road, Reading RG1 1LX"),
    ("FRESHWAY EXPRESS", "4 Market Place, Reading RG1 2EQ"),
    ("GREENLEAF ORGANICS", "88 London Street, Reading RG1 4QD"),
    ("MEGAMART", "Oxford Retail Park, Reading RG30 1AB"),
    ("MEGAMART LOCAL", "156 Wokingham Road, Reading RG6 1JL"),
    ("CORNER PHARMACY", "2 Erleigh Road, Reading RG1 5LR"),
    ("BAKEHOUSE & CO", "17 Harris Arcade, Reading RG1 1DN"),
    ("HOMEBASE DIY", "Portman Road, Reading RG30 1EA"),
)
_TEST_ITEMS = {
    "FRESHWAY": (("Semi Skimmed Milk 2L", 155), ("Semi Skimmed Milk 1L", 95), ("Bananas Loose", 79),
                 ("Wholemeal Bread", 120), ("Free Range Eggs x6", 210), ("Cheddar Mature 400g", 365),
                 ("Greek Yoghurt 500g", 175), ("Pasta Fusilli 500g", 89), ("Chopped Tomatoes 400g", 55),
                 ("Chicken Breast 650g", 520), ("Basmati Rice 1kg", 195), ("Orange Juice 1L", 165)),
    "FRESHWAY EXPRESS": (("Semi Skimmed Milk 1L", 105), ("Sandwich Meal Deal", 395), ("Bananas Loose", 85),
                         ("Orange Juice 1L", 175), ("Crisps Sea Salt", 125), ("Sparkling Water 500ml", 95)),
    "GREENLEAF ORGANICS": (("Organic Oat Drink 1L", 199), ("Organic Eggs x6", 325), ("Sourdough Loaf", 380),
                           ("Organic Carrots 1kg", 149), ("Almond Butter 340g", 699),
                           ("Organic Apples 6pk", 289), ("Kale 200g", 135)),
    "MEGAMART": (("Semi Skimmed Milk 2L", 149), ("Washing Liquid 1.5L", 650), ("Toilet Roll 9pk", 499),
                 ("Cheddar Mature 400g", 349), ("Frozen Peas 1kg", 145), ("Cat Food Pouches 12pk", 525),
                 ("Pasta Fusilli 500g", 75), ("Free Range Eggs x6", 199), ("Kitchen Roll 2pk", 225),
                 ("Coffee Beans 1kg", 1150), ("Olive Oil 1L", 795)),
    "MEGAMART LOCAL": (("Semi Skimmed Milk 1L", 99), ("Wholemeal Bread", 135), ("Bananas Loose", 82),
                       ("Free Range Eggs x6", 215), ("Chopped Tomatoes 400g", 60)),
    "CORNER PHARMACY": (("Paracetamol 500mg x16", 95), ("Ibuprofen 200mg x16", 110), ("Plasters x20", 245),
                        ("Sun Cream SPF50", 799), ("Toothpaste 75ml", 225), ("Hand Cream 100ml", 350)),
    "BAKEHOUSE & CO": (("Sourdough Loaf", 420), ("Croissant", 185), ("Cinnamon Bun", 265),
                       ("Flat White", 330), ("Sausage Roll", 295), ("Seeded Rye", 450)),
    "HOMEBASE DIY": (("Wood Screws 4x40 x200", 649), ("Masking Tape 25mm", 299), ("Paint Roller Set", 1200),
                     ("Matt Emulsion White 2.5L", 2200), ("Sandpaper Assorted x10", 450),
                     ("Wall Plugs x100", 275)),
}  # fmt: skip
_PAYMENTS = ("VISA CONTACTLESS", "MASTERCARD", "CASH", "DEBIT CARD", "APPLE PAY")


@dataclass
class Doc:
    number: str  # invoice number (dev) or the photo's file name (test)
    party: str  # customer (dev) or shop (test)
    when: datetime
    due: date | None
    status: str
    lines: list[tuple[str, int, int]] = field(default_factory=list)  # item, quantity, unit price in pence
    paid: int = 0  # pence (dev) paid so far
    extra: dict = field(default_factory=dict)

    def net(self) -> int:
        return sum(q * p for _, q, p in self.lines)

    def tax(self) -> int:
        return sum(_vat(q * p) for _, q, p in self.lines)

    def total(self) -> int:
        return self.net() + self.tax()


def _vat(pence: int) -> int:
    return (pence * 20 + 50) // 100


def _pounds(pence: int) -> float:
    return round(pence / 100, 2)


def _dev_docs(seed: str, n: int) -> list[Doc]:
    rng = random.Random(f"{seed}/{n}")
    weights = [rng.uniform(0.3, 3.0) for _ in _DEV_CONTACTS]
    terms = {c: rng.choice((14, 30, 30, 45)) for c in _DEV_CONTACTS}
    when = datetime(2024, 1, 2, 9, 0)
    docs = []
    for i in range(n):
        when += timedelta(hours=rng.randint(3, 40))
        if when.weekday() >= 5:
            when += timedelta(days=7 - when.weekday())
        contact = rng.choices(_DEV_CONTACTS, weights)[0]
        items = rng.sample(_DEV_ITEMS, rng.randint(1, 5))
        lines = [(name, 1 if price > 5000 else rng.randint(1, 24), price) for name, price in items]
        due = when.date() + timedelta(days=terms[contact])
        status = rng.choices(("PAID", "AUTHORISED", "VOIDED", "DRAFT"), (60, 30, 5, 5))[0]
        doc = Doc(f"INV-{1041 + i:05d}", contact, when, due, status, lines)
        if status == "PAID":
            doc.paid = doc.total()
        elif status == "AUTHORISED" and rng.random() < 0.2:  # part paid
            doc.paid = doc.total() // 2
        doc.extra = {
            "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "contact": str(uuid.UUID(int=random.Random(contact).getrandbits(128), version=4)),
            "reference": rng.choice(
                ("", "", f"PO-{rng.randint(1000, 9999)}", "Weekly order", "Standing order")
            ),
        }
        docs.append(doc)
    return docs


def _test_docs(seed: str, n: int) -> list[Doc]:
    rng = random.Random(f"{seed}/{n}")
    shops = [s for s, _ in _TEST_SHOPS]
    weights = [rng.uniform(0.4, 3.0) for _ in shops]
    when = datetime(2024, 3, 1, 8, 0)
    docs, names = [], set()
    for _ in range(n):
        when += timedelta(minutes=rng.randint(240, 2600))
        if not 7 <= when.hour <= 21:
            when = when.replace(hour=rng.randint(8, 19))
        shop = rng.choices(shops, weights)[0]
        pool = _TEST_ITEMS[shop]
        items = rng.sample(pool, rng.randint(1, min(len(pool), 7)))
        lines = [(name, rng.choices((1, 2, 3, 4), (70, 20, 6, 4))[0], price) for name, price in items]
        name = f"IMG_{when:%Y%m%d_%H%M}{rng.randint(0, 59):02d}.txt"
        while name in names:
            name = name[:-6] + f"{rng.randint(0, 59):02d}.txt"
        names.add(name)
        doc = Doc(name, shop, when, None, "", lines)
        doc.extra = {"till": rng.randint(1, 9), "op": rng.randint(100, 480), "pay": rng.choice(_PAYMENTS)}
        docs.append(doc)
    return docs


# -- the files ----------------------------------------------------------------------------------


def _xero(docs: list[Doc]) -> list[dict]:
    out = []
    for d in docs:
        items = [
            {
                "Description": name,
                "Quantity": float(q),
                "UnitAmount": _pounds(p),
                "AccountCode": "200" if p < 5000 else "210",
                "TaxType": "OUTPUT2",
                "TaxAmount": _pounds(_vat(q * p)),
                "LineAmount": _pounds(q * p),
            }
            for name, q, p in d.lines
        ]
        out.append(
            {
                "Type": "ACCREC",
                "InvoiceID": d.extra["id"],
                "InvoiceNumber": d.number,
                "Reference": d.extra["reference"],
                "Contact": {"ContactID": d.extra["contact"], "Name": d.party},
                "DateString": f"{d.when:%Y-%m-%d}T00:00:00",
                "DueDateString": f"{d.due:%Y-%m-%d}T00:00:00",
                "Status": d.status,
                "LineAmountTypes": "Exclusive",
                "LineItems": items,
                "SubTotal": _pounds(d.net()),
                "TotalTax": _pounds(d.tax()),
                "Total": _pounds(d.total()),
                "AmountPaid": _pounds(d.paid),
                "AmountDue": _pounds(0 if d.status in ("VOIDED", "DRAFT") else d.total() - d.paid),
                "CurrencyCode": "GBP",
            }
        )
    return out


def _vat_number(shop: str) -> str:
    n = random.Random(shop).randrange(10**9)
    return f"{n // 10**6:03d} {n // 10**2 % 10**4:04d} {n % 100:02d}"


def _receipt(d: Doc, address: str) -> str:
    width = 38

    def row(left: str, right: str) -> str:
        return f"{left}{right:>{width - len(left)}}"

    out = [
        d.party.center(width).rstrip(),
        address.center(width).rstrip(),
        f"VAT Reg No: GB {_vat_number(d.party)}".center(width).rstrip(),
    ]
    out.append("-" * width)
    for name, q, p in d.lines:
        out.append(row(name, f"£{q * p / 100:.2f}"))
        if q > 1:
            out.append(f"  {q} @ £{p / 100:.2f}")
    out.append("-" * width)
    total = f"£{d.net() / 100:.2f}"
    out.append(row(f"ITEMS {sum(q for _, q, _ in d.lines)}", f"TOTAL {total:>9}"))
    out.append(row(d.extra["pay"], total))
    out.append("-" * width)
    out.append(f"{d.when:%d/%m/%Y  %H:%M}  TILL {d.extra['till']:02d}  OP {d.extra['op']}")
    out.append("Thank you for shopping with us!".center(width).rstrip())
    return "\n".join(out) + "\n"


def _folder(docs: list[Doc]) -> dict[str, str]:
    address = dict(_TEST_SHOPS)
    return {d.number: _receipt(d, address[d.party]) for d in sorted(docs, key=lambda d: d.number)}


def _fit(split: str, seed: str, chars: int) -> tuple[list[Doc], object]:
    per = 1100 if split == "dev" else 560
    n = max(6, chars // per)
    for _ in range(6):
        docs = _dev_docs(seed, n) if split == "dev" else _test_docs(seed, n)
        context = _xero(docs) if split == "dev" else _folder(docs)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(6, round(n * chars / size))
    return docs, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _ask_total(split: str, rng: random.Random, docs: list[Doc]) -> _Asked:
    d = rng.choice([x for x in docs if x.status not in ("VOIDED", "DRAFT")] or docs)
    month = f"{d.when:%Y-%m}"
    mine = [x for x in docs if x.party == d.party and f"{x.when:%Y-%m}" == month]
    if split == "dev":
        pence = sum(x.total() for x in mine if x.status not in ("VOIDED", "DRAFT"))
        q = (
            f"How much was invoiced to {d.party} in {d.when:%B %Y} in all, VAT included? "
            "Leave out voided and draft invoices."
        )
        return q, _pounds(pence), {"contact": d.party, "month": month}
    q = f"Adding up the receipts' totals, how much was spent at {d.party} in {d.when:%B %Y}?"
    return q, _pounds(sum(x.net() for x in mine)), {"shop": d.party, "month": month}


def _ask_count(split: str, rng: random.Random, docs: list[Doc]) -> _Asked:
    if split == "dev":
        day = rng.choice(docs).when.date() + timedelta(days=rng.randint(10, 60))
        n = sum(x.status == "AUTHORISED" and x.due < day for x in docs)
        q = (
            f"On {day:%d %B %Y}, how many invoices still awaiting payment (status AUTHORISED) were past "
            "their due date?"
        )
        return q, n, {"day": f"{day}"}
    item = rng.choice(rng.choice(docs).lines)[0]
    n = sum(any(name == item for name, _, _ in x.lines) for x in docs)
    q = f"Count the receipts that have at least one line for '{item}' (that exact product)."
    return q, n, {"item": item}


def _ask_top(split: str, rng: random.Random, docs: list[Doc]) -> _Asked:
    counts: Counter = Counter()
    for x in docs:
        if split == "test":
            counts[x.party] += x.net()
        elif x.status == "AUTHORISED":
            counts[x.party] += x.total() - x.paid
    ranked = counts.most_common(2)
    if len(ranked) < 2 or ranked[0][1] == ranked[1][1]:
        return None
    if split == "dev":
        q = "Which customer owes the most money on its invoices that are not yet paid (AUTHORISED)?"
        return q, ranked[0][0], {"status": "AUTHORISED"}
    q = "At which shop (as named at the top of its receipts) was the most money spent over all the receipts?"
    return q, ranked[0][0], {}


def _ask_lookup(split: str, rng: random.Random, docs: list[Doc]) -> _Asked:
    d = rng.choice(docs)
    if split == "dev":
        name, q, _ = rng.choice(d.lines)
        text = f"How many units of {name} does invoice {d.number} bill?"
        return text, q, {"invoice": d.number, "item": name}
    prices = sorted(((q * p, name) for name, q, p in d.lines), reverse=True)
    if len(prices) < 2 or prices[0][0] == prices[1][0]:
        return None
    text = f"On the receipt scanned as {d.number}, which product's line cost the most?"
    return text, prices[0][1], {"file": d.number}


_ASK = {"total": _ask_total, "count": _ask_count, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "invoices",
    "invoices and receipts: an accounting API's invoices as a list of dicts (dev) or scanned receipts "
    "as a dict of file name to text (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    docs, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    # other customers, shops, days and products, then one month's total at a place, never zero
    kind, asked = draw_question(lambda kind_: _ASK[kind_](ref.split, rng, docs), kind, "total", nonzero=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="list of dicts" if ref.split == "dev" else "dict of strings (file name -> receipt text)",
        documents=len(docs),
    )
