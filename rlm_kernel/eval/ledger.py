"""Questions about personal accounts: a plain-text Beancount ledger as one string (``dev``), or a
budgeting app's export of transactions as a list of dicts (``test``).

What a notebook holds when someone reviews a year of spending: dated transactions, each moving
money between accounts (or an app's transactions with a payee, a category and an amount), with
opening balances, comments, tags and the odd transfer between one's own accounts. Payees whose
names extend another's stand beside each other. Transactions are added until the text (or the
indented JSON) is about the length asked for. Kinds of question:

- ``count``: transactions with one payee in one month;
- ``total``: what one expense account (``dev``) or category (``test``) took in one month;
- ``top``: the payee paid the most over the whole file (a clear leader);
- ``lookup``: the amount of one payee's transaction on one day.

Every answer is computed from the transactions the generator wrote. Score: ``exact``.

Splits: ``dev`` is a Beancount file (``option`` lines, ``open`` directives, ``*`` and ``!``
transactions with payee and narration, ``#tags``, postings with one amount left for Beancount to
fill in, ``balance`` assertions and comments); ``test`` is a list of transaction dicts
(``id``, ``date``, ``payee_name``, ``category_name``, ``account_name``, ``amount`` in
milliunits, ``memo``, ``cleared``, ``approved``, ``transfer_account_id``, ``deleted``): other
containers, fields, payees and wording.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_DEV_PAYEES = (  # payee, expense account, low, high
    ("Rewe", "Expenses:Food:Groceries", 8, 95),
    ("Rewe City", "Expenses:Food:Groceries", 3, 30),
    ("Edeka", "Expenses:Food:Groceries", 10, 80),
    ("Lieferando", "Expenses:Food:Restaurant", 14, 45),
    ("Cafe Kranzler", "Expenses:Food:Restaurant", 4, 18),
    ("Deutsche Bahn", "Expenses:Transport:Train", 9, 140),
    ("BVG", "Expenses:Transport:Local", 3, 49),
    ("Shell", "Expenses:Transport:Fuel", 35, 90),
    ("Amazon", "Expenses:Shopping", 6, 160),
    ("Amazon Marketplace", "Expenses:Shopping", 5, 60),
    ("Vattenfall", "Expenses:Home:Electricity", 55, 95),
    ("Telekom", "Expenses:Home:Internet", 40, 40),
)
_TEST_PAYEES = (  # payee, category, low, high
    ("Trader Joe's", "Groceries", 12, 110),
    ("Whole Foods", "Groceries", 9, 140),
    ("Whole Foods Market", "Groceries", 20, 90),
    ("Chipotle", "Dining Out", 9, 28),
    ("Starbucks", "Coffee", 4, 12),
    ("Starbucks Reserve", "Coffee", 6, 15),
    ("Shell", "Gas", 30, 75),
    ("Chevron", "Gas", 28, 80),
    ("Target", "Household", 10, 150),
    ("PG&E", "Utilities", 60, 180),
    ("Comcast", "Internet", 80, 80),
    ("Netflix", "Subscriptions", 15.49, 15.49),
)


@dataclass
class Txn:
    day: date
    payee: int
    cents: int
    flag: str = "*"
    tag: str = ""
    memo: str = ""
    id: str = ""


def _txns(split: str, seed: str, n: int) -> list[Txn]:
    rng = random.Random(f"{seed}/{n}")
    payees = _DEV_PAYEES if split == "dev" else _TEST_PAYEES
    weight = [rng.uniform(0.3, 2.0) for _ in payees]
    day = date(2024, 1, 2)
    step = 300 / max(10, n)
    out: list[Txn] = []
    while len(out) < n:
        day += timedelta(days=round(rng.expovariate(1 / step)))
        k = rng.choices(range(len(payees)), weight)[0]
        _, _, low, high = payees[k]
        cents = round(rng.uniform(low, high) * 100)
        t = Txn(day, k, cents)
        if rng.random() < 0.06:
            t.flag = "!"
        if rng.random() < 0.1:
            t.tag = rng.choice(("trip-hamburg", "gift", "work") if split == "dev" else ("reimburse", "split"))
        if rng.random() < 0.15:
            t.memo = rng.choice(("with Anna", "birthday", "refund pending", "card 4411"))
        t.id = f"{rng.getrandbits(64):016x}"
        out.append(t)
    return out


# -- the files ----------------------------------------------------------------------------------


def _money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


def _beancount(txns: list[Txn]) -> str:
    accounts = sorted({a for _, a, _, _ in _DEV_PAYEES})
    out = [
        'option "title" "Household ledger"',
        'option "operating_currency" "EUR"',
        "",
        ";; accounts",
        "2024-01-01 open Assets:Bank:Giro EUR",
        "2024-01-01 open Assets:Bank:Tagesgeld EUR",
        "2024-01-01 open Liabilities:CreditCard EUR",
        "2024-01-01 open Equity:Opening-Balances",
        *(f"2024-01-01 open {a} EUR" for a in accounts),
        "",
        '2024-01-01 * "Opening balance"',
        "  Assets:Bank:Giro                 4210.55 EUR",
        "  Equity:Opening-Balances",
        "",
    ]
    month = None
    for k, t in enumerate(txns):
        if t.day.month != month:
            month = t.day.month
            out += [f";; ---- {t.day:%B %Y} ----", ""]
        payee, account, *_ = _DEV_PAYEES[t.payee]
        source = "Liabilities:CreditCard" if k % 3 == 0 else "Assets:Bank:Giro"
        head = f'{t.day} {t.flag} "{payee}" "{t.memo or "Payment"}"' + (f" #{t.tag}" if t.tag else "")
        amount = f"{_money(t.cents)} EUR"
        if k % 2:
            out += [head, f"  {account:<32} {amount:>12}", f"  {source}", ""]
        else:
            out += [head, f"  {source:<32} {'-' + amount:>12}", f"  {account}", ""]
        if k % 25 == 24:
            out += [f"{t.day} * \"Transfer\" \"to savings\"", "  Assets:Bank:Tagesgeld   200.00 EUR",
                    "  Assets:Bank:Giro", ""]  # fmt: skip
    return "\n".join(out) + "\n"


def _export(txns: list[Txn]) -> list[dict]:
    out = []
    for k, t in enumerate(txns):
        payee, category, *_ = _TEST_PAYEES[t.payee]
        out.append(
            {
                "id": t.id,
                "date": f"{t.day}",
                "amount": -t.cents * 10,
                "memo": t.memo or None,
                "cleared": "cleared" if t.flag == "*" else "uncleared",
                "approved": True,
                "flag_color": "red" if t.tag else None,
                "account_name": "Chase Sapphire" if k % 3 == 0 else "Checking",
                "payee_name": payee,
                "category_name": category,
                "transfer_account_id": None,
                "deleted": False,
            }
        )
        if k % 20 == 19:
            out.append(
                {
                    "id": f"{t.id[::-1]}",
                    "date": f"{t.day}",
                    "amount": 500000,
                    "memo": "paycheck",
                    "cleared": "cleared",
                    "approved": True,
                    "flag_color": None,
                    "account_name": "Checking",
                    "payee_name": "Acme Payroll",
                    "category_name": "Inflow: Ready to Assign",
                    "transfer_account_id": None,
                    "deleted": False,
                }
            )
    return out


def _fit(split: str, seed: str, chars: int) -> tuple[list[Txn], object]:
    per = 110 if split == "dev" else 330
    n = max(10, chars // per)
    for _ in range(6):
        txns = _txns(split, seed, n)
        context = _beancount(txns) if split == "dev" else _export(txns)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(10, round(n * chars / size))
    return txns, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _ask_count(split: str, rng: random.Random, txns: list[Txn]) -> _Asked:
    t = rng.choice(txns)
    payees = _DEV_PAYEES if split == "dev" else _TEST_PAYEES
    n = sum(x.payee == t.payee and (x.day.year, x.day.month) == (t.day.year, t.day.month) for x in txns)
    name = payees[t.payee][0]
    if split == "dev":
        q = f'How many transactions with the payee "{name}" are dated in {t.day:%B %Y}?'
    else:
        q = f"Count the {name} transactions (payee exactly that) from {t.day:%Y-%m}."
    return q, n, {"payee": name, "month": f"{t.day:%Y-%m}"}


def _ask_total(split: str, rng: random.Random, txns: list[Txn]) -> _Asked:
    t = rng.choice(txns)
    payees = _DEV_PAYEES if split == "dev" else _TEST_PAYEES
    where = payees[t.payee][1]
    cents = sum(
        x.cents
        for x in txns
        if payees[x.payee][1] == where and (x.day.year, x.day.month) == (t.day.year, t.day.month)
    )
    if split == "dev":
        q = f"What was posted to {where} in {t.day:%B %Y}, in EUR?"
    else:
        q = f"Add up the outflows in the category {where} for {t.day:%Y-%m}, in dollars."
    return q, round(cents / 100, 2), {"where": where, "month": f"{t.day:%Y-%m}"}


def _ask_top(split: str, rng: random.Random, txns: list[Txn]) -> _Asked:
    payees = _DEV_PAYEES if split == "dev" else _TEST_PAYEES
    spent: dict = {}
    for x in txns:
        spent[payees[x.payee][0]] = spent.get(payees[x.payee][0], 0) + x.cents
    top = _leader(spent)
    if split == "dev":
        q = "To which payee did the most money go over the whole ledger?"
    else:
        q = "Across all outflows, which payee_name received the largest sum?"
    return None if top is None else (q, top, {})


def _ask_lookup(split: str, rng: random.Random, txns: list[Txn]) -> _Asked:
    t = rng.choice(txns)
    if sum(x.payee == t.payee and x.day == t.day for x in txns) > 1:
        return None
    payees = _DEV_PAYEES if split == "dev" else _TEST_PAYEES
    name = payees[t.payee][0]
    if split == "dev":
        q = f'How much, in EUR, was the "{name}" transaction of {t.day}?'
    else:
        q = f"Report, in dollars, the {name} outflow dated {t.day:%m/%d/%Y}, as a positive figure."
    return q, round(t.cents / 100, 2), {"payee": name, "day": f"{t.day}"}


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "ledger",
    "personal accounts: a Beancount ledger as a string (dev), or a budgeting app's transactions as a "
    "list of dicts (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    txns, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, txns), kind, "count", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (Beancount)" if ref.split == "dev" else "list of dicts (budget app export)",
        transactions=len(txns),
    )
