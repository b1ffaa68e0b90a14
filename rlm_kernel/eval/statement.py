"""Questions about an account statement: the context is the bank's export file as one string.

What ``open(path).read()`` gives for the file a bank lets its customers download: a few header
lines, then one transaction after another, with two dates each (when it was booked or posted, and
when it was made or took value). Transactions are written day by day until the text is about the
length asked for. Kinds of question:

- ``total``: the sum of the payments to one payee in one month (by the booking or posting date;
  refunds from the same payee and payees whose names differ by a word or a digit stand beside
  them);
- ``count``: how many transactions (``dev``) or charges (``test``) one payee has (look-alike
  names again);
- ``largest``: who received the largest single card payment (``dev``) or charge (``test``) in one
  month;
- ``lookup``: one figure on the line a reference or transaction id names (neighbouring ids and
  invoice numbers are a digit apart).

Every answer is computed from the transactions the generator wrote. Score: ``exact`` (amounts as
numbers, names without case).

Splits: ``dev`` is a German current account's CSV export (semicolons, every field quoted, a decimal
comma and a thousands point such as ``-1.234,56``, dates ``DD.MM.YYYY``, newest first, a running
balance; payees such as ``EDEKA Center Schmidt``); ``test`` is a US credit card's OFX 1.0.2 file
(SGML tags ``<STMTTRN>``, ``<TRNTYPE>``, ``<DTPOSTED>``, ``<DTUSER>``, ``<TRNAMT>``, ``<FITID>``,
``<NAME>``, oldest first; merchants such as ``STARBUCKS STORE 10234``): other formats, currencies,
fields, payees and wording.
"""

from __future__ import annotations

import calendar
import random
from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta

from .tasks import Task, TaskRef, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("total", "count", "largest", "lookup")


@dataclass
class Txn:
    booked: date  # booked (dev) or posted (test)
    made: date  # value date (dev) or transaction date (test)
    party: str
    kind: str  # booking text (dev) or TRNTYPE (test)
    ref: str  # reference (dev) or FITID (test)
    cents: int  # signed: money out is negative
    memo: str = ""
    balance: int = 0  # after it, in cents (dev)


# payee, weight, smallest and largest amount in cents
_DEV_SHOPS = (
    ("EDEKA Center Schmidt", 8, 900, 9800),
    ("EDEKA Center Schmitt", 5, 700, 8800),
    ("REWE Markt GmbH", 8, 600, 11000),
    ("Lidl Vertriebs GmbH", 6, 500, 6500),
    ("dm-drogerie markt GmbH", 4, 300, 4500),
    ("Rossmann GmbH", 3, 300, 3800),
    ("Aral Station 4411", 3, 3000, 9500),
    ("Aral Station 4471", 3, 3000, 9500),
    ("DB Vertrieb GmbH", 2, 1990, 18990),
    ("DB Fernverkehr AG", 2, 2490, 21990),
    ("Amazon EU S.a r.l.", 4, 899, 24999),
    ("Amazon Payments Europe S.C.A.", 3, 599, 14999),
    ("Apotheke am Markt", 2, 450, 6200),
    ("Apotheke am Marktplatz", 2, 450, 6200),
    ("IKEA Deutschland GmbH", 1, 1500, 29900),
    ("MediaMarkt Köln-Kalk", 1, 1999, 49900),
)
# payee, day of the month, smallest and largest amount, booking text, reference prefix
_DEV_BILLS = (
    ("Hausverwaltung Krüger", 1, 118000, 118000, "Standing order", "Rent"),
    ("Allianz Versicherungs-AG", 1, 8940, 8940, "Direct debit", "VS-NR 40-2291844"),
    ("Allianz Lebensversicherungs-AG", 2, 12500, 12500, "Direct debit", "VS-NR 71-0043215"),
    ("Vodafone GmbH", 5, 3999, 5210, "Direct debit", "Invoice"),
    ("Vodafone Kabel Deutschland GmbH", 9, 2999, 2999, "Direct debit", "Invoice"),
    ("Stadtwerke Köln GmbH", 15, 9800, 14600, "Direct debit", "Invoice"),
    ("Stadtwerke Bonn GmbH", 16, 2100, 2600, "Direct debit", "Invoice"),
    ("FitX Deutschland GmbH", 3, 2499, 2499, "Direct debit", "Membership"),
    ("Spotify AB", 12, 1099, 1099, "Direct debit", "Subscription"),
)
_DEV_PEOPLE = ("Lena Hoffmann", "Lena Hofmann", "Jonas Becker", "Jonas Bäcker", "Mia Wagner")

_TEST_SHOPS = (
    ("STARBUCKS STORE 10234", 7, 450, 1850, "EATING PLACES"),
    ("STARBUCKS STORE 10243", 5, 450, 1850, "EATING PLACES"),
    ("TRADER JOE S #552", 6, 1200, 14500, "GROCERY STORES"),
    ("TRADER JOE S #525", 4, 1200, 14500, "GROCERY STORES"),
    ("WHOLEFDS MKT 10345", 5, 900, 18900, "GROCERY STORES"),
    ("SHELL OIL 57442117", 3, 2500, 7800, "SERVICE STATIONS"),
    ("SHELL OIL 57442171", 3, 2500, 7800, "SERVICE STATIONS"),
    ("CHEVRON 0209871", 3, 2200, 8100, "SERVICE STATIONS"),
    ("UBER *TRIP", 4, 900, 6400, "TAXICABS"),
    ("UBER *EATS", 4, 1500, 5800, "EATING PLACES"),
    ("AMZN Mktp US", 6, 699, 21999, "CATALOG MERCHANT"),
    ("AMAZON.COM", 3, 999, 34999, "CATALOG MERCHANT"),
    ("TARGET 00023416", 3, 1500, 19900, "DEPARTMENT STORES"),
    ("CVS/PHARMACY #04412", 3, 399, 5600, "DRUG STORES"),
    ("COSTCO WHSE #0471", 2, 4500, 38900, "WHOLESALE CLUBS"),
    ("DELTA AIR 0062345", 1, 18900, 98900, "AIRLINES"),
    ("HOME DEPOT #6612", 1, 1200, 45900, "HOME SUPPLY"),
)
_TEST_BILLS = (
    ("NETFLIX.COM", 7, 1549, 1549, "DEBIT", "SUBSCRIPTION"),
    ("SPOTIFY USA", 14, 1199, 1199, "DEBIT", "SUBSCRIPTION"),
    ("COMCAST CABLE COMM", 22, 8999, 10450, "DEBIT", "CABLE SERVICES"),
    ("APPLE.COM/BILL", 3, 299, 999, "DEBIT", "DIGITAL GOODS"),
    ("GEICO AUTO", 18, 13412, 13412, "DEBIT", "INSURANCE"),
)


def _money(rng: random.Random, lo: int, hi: int) -> int:
    return lo if lo == hi else rng.randint(lo, hi)


class _Ledger:
    """Transactions made day by day; their references and ids are never repeated."""

    def __init__(self, split: str, rng: random.Random) -> None:
        self.split, self.rng = split, rng
        self.txns: list[Txn] = []
        self.refs: set[str] = set()
        self.invoice = {p: rng.randint(1000, 90000) for p, *_ in _DEV_BILLS}
        shops = _DEV_SHOPS if split == "dev" else _TEST_SHOPS
        self.shops, self.weights = shops, [shop[1] for shop in shops]

    def unique(self, make) -> str:
        while True:
            ref = make()
            if ref not in self.refs:
                self.refs.add(ref)
                return ref

    def add(self, made: date, party: str, kind: str, cents: int, ref: str = "", memo: str = "") -> None:
        rng = self.rng
        if self.split == "dev":
            booked = made + timedelta(days=rng.choice((0, 0, 1, 1, 2, 3))) if kind == "Card payment" else made
            if not ref:
                ref = self.unique(lambda: f"POS {rng.randint(100000, 999999)} {made:%d.%m} card 4471")
        else:
            booked = made + timedelta(days=rng.choice((0, 1, 1, 2, 3)))
        self.txns.append(Txn(booked, made, party, kind, ref, cents, memo))

    def _bill_ref(self, party: str, prefix: str, d: date) -> str:
        if prefix == "Rent":
            return self.unique(lambda: f"Rent {calendar.month_name[d.month]} {d.year} flat 3 left")
        if prefix != "Invoice":
            return self.unique(lambda: f"{prefix} {d:%m/%Y}")

        def invoice() -> str:
            self.invoice[party] += 1
            return f"Invoice RE-{d.year}-{self.invoice[party]:05d}"

        return self.unique(invoice)

    def day(self, d: date) -> None:
        (self._dev_day if self.split == "dev" else self._test_day)(d)

    def _dev_day(self, d: date) -> None:
        rng = self.rng
        for party, day, lo, hi, text, prefix in _DEV_BILLS:
            if d.day == day:
                self.add(d, party, text, -_money(rng, lo, hi), self._bill_ref(party, prefix, d))
        if d.day == 27:
            self.add(d, "Muster Software GmbH", "Salary", rng.randint(438000, 452000), f"Salary {d:%m/%Y}")
        for _ in range(rng.choice((0, 1, 1, 1, 2, 2, 3))):
            party, _, lo, hi = rng.choices(self.shops, self.weights)[0]
            self.add(d, party, "Card payment", -_money(rng, lo, hi))
        if rng.random() < 0.08:
            party = rng.choice(_DEV_PEOPLE)
            what = ("Dinner", "Concert tickets", "Gift", "Rent share", "Holiday")
            ref = self.unique(lambda: f"{rng.choice(what)} {rng.randint(1, 999)}")
            self.add(d, party, "Transfer", rng.choice((-1, 1)) * rng.randint(1500, 42000), ref)
        if rng.random() < 0.05:
            party = rng.choice(("Amazon EU S.a r.l.", "Amazon Payments Europe S.C.A."))
            ref = self.unique(lambda: f"Refund order 302-{rng.randint(1000000, 9999999)}")
            self.add(d, party, "Credit", rng.randint(899, 9999), ref)

    def _test_day(self, d: date) -> None:
        rng = self.rng
        for party, day, lo, hi, kind, memo in _TEST_BILLS:
            if d.day == day:
                self.add(d, party, kind, -_money(rng, lo, hi), memo=memo)
        if d.day == 25:
            self.add(d, "PAYMENT THANK YOU", "PAYMENT", rng.randint(150000, 420000), memo="ONLINE PAYMENT")
        for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 3, 4, 5))):
            party, _, lo, hi, memo = rng.choices(self.shops, self.weights)[0]
            self.add(d, party, "DEBIT", -_money(rng, lo, hi), memo=memo)
        if rng.random() < 0.06:
            party, _, lo, hi, _ = rng.choices(self.shops, self.weights)[0]
            self.add(d, party, "CREDIT", _money(rng, lo, hi), memo="RETURN")


def _transactions(split: str, rng: random.Random, chars: int) -> list[Txn]:
    ledger = _Ledger(split, rng)
    d = date(2023, 9, rng.randint(1, 20)) if split == "dev" else date(2024, 11, rng.randint(1, 20))
    per = 118 if split == "dev" else 205  # about what a transaction costs as text
    while len(ledger.txns) * per < chars - 400:
        ledger.day(d)
        d += timedelta(days=1)
    txns = sorted(ledger.txns, key=lambda t: t.booked)  # stable: a day's in the order they were made
    if split == "dev":
        balance = rng.randint(150000, 420000)
        for t in txns:
            balance += t.cents
            t.balance = balance
    else:
        per_day: Counter[date] = Counter()
        for t in txns:
            per_day[t.booked] += 1
            t.ref = f"{t.booked:%Y%m%d}{per_day[t.booked]:05d}"
    return txns


# -- the files ----------------------------------------------------------------------------------


def euro(cents: int) -> str:
    """``-1.234,56``: a decimal comma and a thousands point."""
    sign, a = "-" if cents < 0 else "", abs(cents)
    return f"{sign}{a // 100:,}".replace(",", ".") + f",{a % 100:02d}"


def _csv(txns: list[Txn], rng: random.Random) -> str:
    def q(*fields: str) -> str:
        return ";".join(f'"{f}"' for f in fields)

    first, last = txns[0].booked, txns[-1].booked
    head = [
        q("Account", "DE44 5001 0517 5407 3249 31"),
        q("Account holder", "Jana Weber"),
        q("Period", f"{first:%d.%m.%Y} - {last:%d.%m.%Y}"),
        q("Closing balance", euro(txns[-1].balance)),
        q("Currency", "EUR"),
        "",
        q("Booking date", "Value date", "Counterparty", "Booking text", "Reference", "Amount", "Balance"),
    ]
    rows = [
        q(
            f"{t.booked:%d.%m.%Y}",
            f"{t.made:%d.%m.%Y}",
            t.party,
            t.kind,
            t.ref,
            euro(t.cents),
            euro(t.balance),
        )
        for t in reversed(txns)
    ]
    return "\n".join(head + rows) + "\n"


def _ofx(txns: list[Txn], rng: random.Random) -> str:
    first, last = txns[0].booked, txns[-1].booked
    owed = -sum(t.cents for t in txns) + rng.randint(20000, 90000)
    head = (
        "OFXHEADER:100\nDATA:OFXSGML\nVERSION:102\nSECURITY:NONE\nENCODING:USASCII\nCHARSET:1252\n"
        "COMPRESSION:NONE\nOLDFILEUID:NONE\nNEWFILEUID:NONE\n\n<OFX>\n<SIGNONMSGSRSV1>\n<SONRS>\n<STATUS>\n"
        f"<CODE>0\n<SEVERITY>INFO\n</STATUS>\n<DTSERVER>{last:%Y%m%d}080000\n<LANGUAGE>ENG\n</SONRS>\n"
        "</SIGNONMSGSRSV1>\n<CREDITCARDMSGSRSV1>\n<CCSTMTTRNRS>\n<TRNUID>1\n<STATUS>\n<CODE>0\n"
        "<SEVERITY>INFO\n</STATUS>\n<CCSTMTRS>\n<CURDEF>USD\n<CCACCTFROM>\n<ACCTID>XXXXXXXXXXXX8812\n"
        f"</CCACCTFROM>\n<BANKTRANLIST>\n<DTSTART>{first:%Y%m%d}\n<DTEND>{last:%Y%m%d}\n"
    )
    body = "".join(
        f"<STMTTRN>\n<TRNTYPE>{t.kind}\n<DTPOSTED>{t.booked:%Y%m%d}120000.000[-5:EST]\n"
        f"<DTUSER>{t.made:%Y%m%d}120000.000[-5:EST]\n<TRNAMT>{t.cents / 100:.2f}\n<FITID>{t.ref}\n"
        f"<NAME>{t.party}\n<MEMO>{t.memo}\n</STMTTRN>\n"
        for t in txns
    )
    tail = (
        f"</BANKTRANLIST>\n<LEDGERBAL>\n<BALAMT>{-owed / 100:.2f}\n<DTASOF>{last:%Y%m%d}\n</LEDGERBAL>\n"
        "</CCSTMTRS>\n</CCSTMTTRNRS>\n</CREDITCARDMSGSRSV1>\n</OFX>\n"
    )
    return head + body + tail


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _month(d: date) -> str:
    return f"{calendar.month_name[d.month]} {d.year}"


def _is_payment(split: str, t: Txn) -> bool:
    """Money out to a payee: a debit (dev), a charge (test)."""
    return t.cents < 0 and (split == "dev" or t.kind == "DEBIT")


def _alike(txns: list[Txn]) -> set[str]:
    """The payees whose name begins as another one's does."""
    names = {t.party for t in txns}
    return {n for n in names if any(o != n and o[:7] == n[:7] for o in names)}


def _ask_total(split: str, rng: random.Random, txns: list[Txn]) -> _Asked:
    paid = [t for t in txns if _is_payment(split, t)]
    alike = _alike(txns)
    t = rng.choice([t for t in paid if t.party in alike] if alike and rng.random() < 0.75 else paid)
    m = (t.booked.year, t.booked.month)
    mine = [
        x
        for x in txns
        if x.party == t.party and _is_payment(split, x) and (x.booked.year, x.booked.month) == m
    ]
    total = round(-sum(x.cents for x in mine) / 100, 2)
    params = {"party": t.party, "month": f"{m[0]}-{m[1]:02d}"}
    if split == "dev":
        q = (
            f"What is the total of the debits to '{t.party}' booked (by booking date) in {_month(t.booked)}? "
            "Give it as a positive number with a decimal point."
        )
        return q, total, params
    q = (
        f"Add up the charges at {t.party} whose DTPOSTED falls in {_month(t.booked)} (refunds and "
        "payments left out). Answer with a positive dollar amount."
    )
    return q, total, params


def _ask_count(split: str, rng: random.Random, txns: list[Txn]) -> _Asked:
    party = rng.choice(sorted(_alike(txns)) or sorted({t.party for t in txns}))
    if split == "dev":
        n = sum(t.party == party for t in txns)
        return f"How many bookings have '{party}' as the counterparty (in or out)?", n, {"party": party}
    n = sum(t.party == party and t.kind == "DEBIT" for t in txns)
    q = f"Count the charges (TRNTYPE DEBIT, not refunds) at the merchant named exactly {party}."
    return (q, n, {"party": party}) if n else None


def _ask_largest(split: str, rng: random.Random, txns: list[Txn]) -> _Asked:
    d = rng.choice(txns).booked
    kind = "Card payment" if split == "dev" else "DEBIT"
    out = sorted(
        (
            t
            for t in txns
            if t.kind == kind and t.cents < 0 and (t.booked.year, t.booked.month) == (d.year, d.month)
        ),
        key=lambda t: t.cents,
    )
    if len(out) < 2 or out[0].cents == out[1].cents:
        return None
    params = {"month": f"{d.year}-{d.month:02d}"}
    if split == "dev":
        q = f"Which counterparty received the largest single card payment booked in {_month(d)}?"
        return q, out[0].party, params
    q = f"Name the merchant of the biggest single charge that posted in {_month(d)} (its NAME field)."
    return q, out[0].party, params


def _ask_lookup(split: str, rng: random.Random, txns: list[Txn]) -> _Asked:
    if split == "dev":
        t = rng.choice([t for t in txns if t.ref.startswith(("Invoice", "Dinner", "Gift", "Refund", "Rent"))])
        q = f"What was the balance right after the booking with reference '{t.ref}'? Use a decimal point."
        return q, round(t.balance / 100, 2), {"ref": t.ref}
    busy = Counter(t.booked for t in txns)
    t = rng.choice([t for t in txns if busy[t.booked] > 1] or txns)  # its neighbours' ids a digit apart
    q = f"What was the amount of the transaction whose FITID is {t.ref}? Give it as a positive number."
    return q, round(abs(t.cents) / 100, 2), {"fitid": t.ref}


_ASK = {"total": _ask_total, "count": _ask_count, "largest": _ask_largest, "lookup": _ask_lookup}


@family(
    "statement",
    "a bank or card statement file as a string: totals, counts, largest payment, one line (CSV in dev)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    txns = _transactions(ref.split, rng, ref.chars)
    context = _csv(txns, rng) if ref.split == "dev" else _ofx(txns, rng)
    kind = KINDS[ref.index % len(KINDS)]
    # other months and payees, then a lookup, which always has an answer
    kind, asked = draw_question(lambda kind_: _ASK[kind_](ref.split, rng, txns), kind, "lookup", nonzero=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string",
        transactions=len(txns),
    )
