"""Questions about payroll runs: a payroll provider's API listing of a US company's pay runs for a
quarter, each employee's pay with its earnings, benefits and taxes, as a nested dict (``dev``), or
a UK payroll program's printed payroll summary of a few tax months, the paged report's text as one
string (``test``).

What a notebook holds when someone in finance checks what a company paid its staff: each pay run's
period and pay date, and each employee's gross pay, the hours and overtime behind it, the pension
or 401(k) deductions, the taxes withheld and those the employer pays on top, and the net pay. Some
employees start or leave during the quarter, some are paid by paper check, an off-cycle bonus run
stands beside the regular ones, Social Security and Medicare are both withheld and paid by the
employer (the ``employer`` flag tells which), and amounts are strings of dollars and cents. The UK
report repeats its title lines on every page, groups employees by department with a department
total after each, changes some tax codes from one month to the next (emergency ``M1`` codes on
starters), and departments whose names extend another's stand beside each other (``Site`` and
``Site Support``). Employees are added until the text (or the indented JSON) is about the length
asked for. Kinds of question:

- ``count``: the employees paid overtime in one pay run, or one department's employees with a
  401(k) deduction in one pay run (``dev``); one department's employees with a student loan
  deduction in one tax month, or the employees in one NI category in one month (``test``);
- ``total``: one department's gross pay over the quarter, or the federal income tax withheld from
  one employee (``dev``); one department's employer NI over the report's months, or one
  employee's net pay over them (``test``);
- ``top``: the employee with the most overtime hours, or the department costing the most in
  employer taxes (``dev``); the department with the largest gross pay in one month, or the
  employee who paid the most PAYE tax (``test``) (a clear leader);
- ``lookup``: one employee's net pay in one pay run, or the pay date of the regular run for one
  pay period (``dev``); one employee's tax code in one month, or one employee number's net pay in
  one month (``test``).

Every answer is computed from the pay the generator wrote. Score: ``exact``.

Splits: ``dev`` is the provider's listing (``company``, ``pay_schedule``, ``employees`` each with
``uuid``, ``first_name``, ``last_name``, ``department``, ``jobs``; ``payrolls`` each with
``payroll_uuid``, ``check_date``, ``off_cycle``, ``off_cycle_reason``, ``pay_period``, ``totals``
and ``employee_compensations``, each with ``employee_uuid``, ``excluded``, ``gross_pay``,
``net_pay``, ``check_amount``, ``payment_method``, ``fixed_compensations``,
``hourly_compensations`` with ``Regular Hours`` and ``Overtime``, ``paid_time_off``,
``benefits`` with ``employee_deduction`` and ``company_contribution``, ``taxes`` each with
``name``, ``employer`` and ``amount``); ``test`` is the printed report, fixed-width columns
(``Emp No``, ``Name`` as ``Surname, Forename``, ``NI Number``, ``Tax Code``, ``Cat``, ``Gross Pay``,
``PAYE Tax``, ``Ee NI``, ``Er NI``, ``Ee Pension``, ``Er Pension``, ``Stud Loan``, ``Net Pay``, with
thousands separators): other containers, fields, companies and wording.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_US_FIRST = (
    "Maya", "Jordan", "Luis", "Keisha", "Tyler", "Ana", "Marcus", "Hannah", "DeShawn", "Emily", "Rosa",
    "Kevin", "Lauren", "Andre", "Mei", "Brandon", "Jasmine", "Diego", "Caitlin", "Omar", "Brianna", "Eli",
    "Sierra", "Tomas", "Kayla", "Raj", "Megan", "Isaiah", "Alexis", "Nate",
)  # fmt: skip
_US_LAST = (
    "Alvarez", "Brooks", "Chen", "Delgado", "Ellis", "Foster", "Garcia", "Hughes", "Ibarra", "Jensen",
    "Kim", "Lopez", "Morales", "Nakamura", "Okafor", "Price", "Quinn", "Reyes", "Santos", "Tran",
    "Underwood", "Vasquez", "Walker", "Young", "Zimmerman", "Nguyen", "Patel", "Reed", "Ramirez", "Cole",
)  # fmt: skip
_DEV_DEPTS = (  # department, hourly rate in cents (low, high) or None for salaried, weight
    ("Roasting", (2000, 3100), 2.0),
    ("Retail", (1650, 2150), 3.0),
    ("Retail Support", (1800, 2400), 1.0),
    ("Wholesale", None, 1.2),
    ("Admin", None, 0.8),
)
_TITLES = {
    "Roasting": ("Roaster", "Production Assistant", "Packer"),
    "Retail": ("Barista", "Shift Lead"),
    "Retail Support": ("Inventory Associate", "Delivery Driver"),
    "Wholesale": ("Account Manager", "Sales Representative"),
    "Admin": ("Bookkeeper", "Office Manager", "HR Coordinator"),
}

_UK_FIRST = (
    "Daniel", "Siobhan", "Callum", "Priya", "Gareth", "Aisha", "Owen", "Chloe", "Rhys", "Megan", "Tom",
    "Bethany", "Liam", "Niamh", "Kieran", "Zara", "Stuart", "Imogen", "Hamza", "Lucy", "Fraser", "Ellie",
    "Jamal", "Sophie", "Connor", "Hollie", "Ryan", "Amelia", "Dylan", "Freya",
)  # fmt: skip
_UK_LAST = (
    "Ainsworth", "Begum", "Clarke", "Davies", "Evans", "Fletcher", "Gallagher", "Hughes", "Iqbal",
    "Jenkins", "Kaur", "Lloyd", "McKenzie", "Norris", "O'Neill", "Parry", "Quigley", "Rowe", "Sharma",
    "Thomas", "Upton", "Vaughan", "Whitfield", "Yates", "Hughes-Tomlin", "Pritchard", "Morgan", "Ward",
    "Baxter", "Doyle",
)  # fmt: skip
_UK_DEPTS = (  # department, monthly pay in pounds (low, high) or hourly rate, salaried, weight
    ("Workshop", (12.60, 19.50), False, 2.5),
    ("Site", (14.00, 22.00), False, 2.0),
    ("Site Support", (11.44, 14.50), False, 1.0),
    ("Office", (2200, 3600), True, 1.0),
    ("Sales", (2600, 5200), True, 0.8),
)
_MONTHS = ("Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec", "Jan", "Feb", "Mar")


def _money(cents: int) -> str:
    return f"{cents / 100:.2f}"


def _pct(cents: int, rate: float) -> int:
    return round(cents * rate)


# -- the dev listing ----------------------------------------------------------------------------


@dataclass
class Worker:
    uuid: str
    first: str
    last: str
    dept: int
    title: str
    rate: int  # cents an hour, or a year's salary in cents
    hourly: bool
    k401: float  # the share of gross deferred
    medical: bool
    check: bool  # paid by paper check
    fit: float
    state: float
    start: int = 0  # the first regular run paid
    end: int = 10**6  # the last

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


@dataclass
class Pay:
    worker: int
    excluded: bool = False
    regular: tuple[int, int] = (0, 0)  # hours in hundredths, cents
    overtime: tuple[int, int] = (0, 0)
    pto: list[tuple[str, int, int]] = field(default_factory=list)  # name, hours in hundredths, cents
    fixed: list[tuple[str, int]] = field(default_factory=list)  # name, cents
    gross: int = 0
    reimbursed: int = 0
    k401: tuple[int, int] = (0, 0)  # the employee's deduction, the company's
    medical: tuple[int, int] = (0, 0)
    taxes: list[tuple[str, bool, int]] = field(default_factory=list)  # name, employer, cents
    net: int = 0


@dataclass
class Run:
    uuid: str
    start: date
    end: date
    check: date
    off_cycle: bool
    pays: list[Pay]


def _hours(rng: random.Random, low: float, high: float) -> int:
    return round(rng.uniform(low, high) * 4) * 25  # quarter hours, in hundredths


def _settle(pay: Pay, w: Worker) -> None:
    """Benefits, taxes and net pay of a pay whose earnings are set."""
    fixed = sum(c for name, c in pay.fixed if name != "Reimbursement")
    pay.gross = pay.regular[1] + pay.overtime[1] + sum(c for *_, c in pay.pto) + fixed
    pay.reimbursed = sum(c for name, c in pay.fixed if name == "Reimbursement")
    if w.k401:
        pay.k401 = (_pct(pay.gross, w.k401), _pct(pay.gross, min(w.k401, 0.04)))
    if w.medical and pay.regular[0]:
        pay.medical = (4500, 21000)
    pretax = pay.gross - pay.k401[0] - pay.medical[0]
    fica = pay.gross - pay.medical[0]
    pay.taxes = [
        ("Federal Income Tax", False, max(0, _pct(pretax, w.fit))),
        ("Social Security", False, _pct(fica, 0.062)),
        ("Medicare", False, _pct(fica, 0.0145)),
        ("OR Withholding", False, max(0, _pct(pretax, w.state))),
        ("OR Statewide Transit Tax", False, _pct(pay.gross, 0.001)),
        ("Social Security", True, _pct(fica, 0.062)),
        ("Medicare", True, _pct(fica, 0.0145)),
        ("FUTA", True, _pct(pay.gross, 0.006)),
        ("OR SUI", True, _pct(pay.gross, 0.024)),
    ]
    withheld = sum(c for _, employer, c in pay.taxes if not employer)
    pay.net = pay.gross - withheld - pay.k401[0] - pay.medical[0] + pay.reimbursed


def _workers(rng: random.Random, staff: int, runs_n: int) -> list[Worker]:
    """``staff`` employees, one in each department first; with more than two runs, some start after
    the first run or leave before the last."""
    weights = [d[2] * rng.uniform(0.6, 1.4) for d in _DEV_DEPTS]
    workers: list[Worker] = []
    seen: set[tuple[str, str]] = set()
    while len(workers) < staff:
        first, last = rng.choice(_US_FIRST), rng.choice(_US_LAST)
        if (first, last) in seen:
            continue
        seen.add((first, last))
        d = (
            len(workers)
            if len(workers) < len(_DEV_DEPTS)
            else rng.choices(range(len(_DEV_DEPTS)), weights)[0]
        )
        dept, rates, _ = _DEV_DEPTS[d]
        hourly = rates is not None
        workers.append(
            Worker(
                _uuid(rng),
                first,
                last,
                d,
                rng.choice(_TITLES[dept]),
                rng.randrange(rates[0], rates[1], 25) if rates else rng.randrange(52_000, 96_000, 500) * 100,
                hourly,
                rng.choice((0.0, 0.0, 0.03, 0.04, 0.05, 0.06)),
                rng.random() < (0.4 if hourly else 0.85),
                rng.random() < 0.12,
                rng.uniform(0.05, 0.15),
                rng.uniform(0.045, 0.085),
            )
        )
    for w in workers[len(_DEV_DEPTS) :]:
        if runs_n >= 3 and rng.random() < 0.12:
            w.start = rng.randrange(1, runs_n)
        elif runs_n >= 3 and rng.random() < 0.1:
            w.end = rng.randrange(0, runs_n - 1)
    return workers


def _bonus_run(rng: random.Random, workers: list[Worker], runs: list[Run]) -> None:
    """An off-cycle run of bonuses for the period of one regular run, paid a few days after it."""
    k = rng.randrange(1, len(runs))
    base = runs[k]
    pays = []
    for i, w in enumerate(workers):
        if w.start <= k <= w.end and rng.random() < 0.45:
            pay = Pay(i, fixed=[("Bonus", rng.randrange(100, 1500) * 100)])
            _settle(pay, w)
            pays.append(pay)
    if pays:
        check = base.check + timedelta(days=rng.choice((3, 4, 6)))
        runs.insert(k + 1, Run(_uuid(rng), base.start, base.end, check, True, pays))


def _dev_pay(seed: str, n: int) -> tuple[list[Worker], list[Run]]:
    rng = random.Random(f"{seed}/{n}")
    runs_n = max(2, min(7, round((n / 3) ** 0.5)))
    workers = _workers(rng, max(2, round(n / runs_n)), runs_n)
    first_end = date(2024, 7, 14) + timedelta(weeks=2 * rng.randrange(-8, 8))
    runs: list[Run] = []
    for k in range(runs_n):
        end = first_end + timedelta(weeks=2 * k)
        pays = [_regular_pay(rng, i, w) for i, w in enumerate(workers) if w.start <= k <= w.end]
        runs.append(Run(_uuid(rng), end - timedelta(days=13), end, end + timedelta(days=5), False, pays))
    if runs_n >= 3:
        _bonus_run(rng, workers, runs)
    return workers, runs


def _regular_pay(rng: random.Random, i: int, w: Worker) -> Pay:
    pay = Pay(i)
    if rng.random() < 0.03:
        pay.excluded = True
        return pay
    if w.hourly:
        full = rng.random() < 0.6
        hours = 8000 if full and rng.random() < 0.7 else _hours(rng, 24, 80)
        pto = 0
        if rng.random() < 0.15:
            pto = rng.choice((800, 1600, 2400))
            hours = max(0, hours - pto)
            pay.pto.append((rng.choice(("Vacation Hours", "Sick Hours")), pto, round(pto * w.rate / 100)))
        pay.regular = (hours, round(hours * w.rate / 100))
        chance = 0.35 if _DEV_DEPTS[w.dept][0] == "Roasting" else 0.18
        if full and rng.random() < chance:
            ot = _hours(rng, 0.5, 12)
            pay.overtime = (ot, round(ot * w.rate * 1.5 / 100))
        if _DEV_DEPTS[w.dept][0] == "Retail" and rng.random() < 0.8:
            pay.fixed.append(("Paycheck Tips", rng.randrange(2000, 42000)))
    else:
        pay.regular = (8000, round(w.rate / 26))
        if rng.random() < 0.1:
            pay.fixed.append(("Commission", rng.randrange(5000, 90000)))
    if rng.random() < 0.08:
        pay.fixed.append(("Reimbursement", rng.randrange(1500, 25000)))
    _settle(pay, w)
    return pay


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _hrs(hundredths: int) -> str:
    return f"{hundredths / 100:.3f}"


def _listing(workers: list[Worker], runs: list[Run], seed: str) -> dict:
    rng = random.Random(seed)
    company = _uuid(rng)
    schedule = _uuid(rng)
    jobs = {w.uuid: _uuid(rng) for w in workers}
    employees = []
    for w in workers:
        employees.append(
            {
                "uuid": w.uuid,
                "first_name": w.first,
                "middle_initial": rng.choice(("", "", "A", "J", "M", "R")) or None,
                "last_name": w.last,
                "email": f"{w.first.lower()}.{w.last.lower()}@bluefinroasters.com",
                "department": _DEV_DEPTS[w.dept][0],
                "terminated": w.end < 10**6,
                "jobs": [
                    {
                        "uuid": jobs[w.uuid],
                        "title": w.title,
                        "rate": _money(w.rate),
                        "payment_unit": "Hour" if w.hourly else "Year",
                        "flsa_status": "Nonexempt" if w.hourly else "Exempt",
                    }
                ],
            }
        )
    payrolls = []
    for run in runs:
        comps = []
        for pay in run.pays:
            w = workers[pay.worker]
            hourly = []
            if pay.regular[0] or (not pay.excluded and not run.off_cycle):
                hourly.append(
                    {
                        "name": "Regular Hours",
                        "hours": _hrs(pay.regular[0]),
                        "amount": _money(pay.regular[1]),
                        "job_uuid": jobs[w.uuid],
                        "compensation_multiplier": 1.0,
                    }
                )
            if w.hourly and not run.off_cycle and not pay.excluded:
                hourly.append(
                    {
                        "name": "Overtime",
                        "hours": _hrs(pay.overtime[0]),
                        "amount": _money(pay.overtime[1]),
                        "job_uuid": jobs[w.uuid],
                        "compensation_multiplier": 1.5,
                    }
                )
            benefits = []
            if pay.k401[0]:
                benefits.append(
                    {
                        "name": "401(k)",
                        "employee_deduction": _money(pay.k401[0]),
                        "company_contribution": _money(pay.k401[1]),
                        "imputed": False,
                    }
                )
            if pay.medical[0]:
                benefits.append(
                    {
                        "name": "Medical Insurance (Section 125)",
                        "employee_deduction": _money(pay.medical[0]),
                        "company_contribution": _money(pay.medical[1]),
                        "imputed": False,
                    }
                )
            comps.append(
                {
                    "employee_uuid": w.uuid,
                    "excluded": pay.excluded,
                    "gross_pay": _money(pay.gross),
                    "net_pay": _money(pay.net),
                    "check_amount": _money(pay.net),
                    "payment_method": "Check" if w.check else "Direct Deposit",
                    "fixed_compensations": [
                        {"name": name, "amount": _money(c), "job_uuid": jobs[w.uuid]} for name, c in pay.fixed
                    ],
                    "hourly_compensations": hourly,
                    "paid_time_off": [
                        {"name": name, "hours": _hrs(h), "final_payout_unused_hours_input": None}
                        for name, h, _ in pay.pto
                    ],
                    "benefits": benefits,
                    "deductions": [],
                    "taxes": [{"name": n, "employer": e, "amount": _money(c)} for n, e, c in pay.taxes],
                }
            )
        live = [p for p in run.pays if not p.excluded]
        payrolls.append(
            {
                "payroll_uuid": run.uuid,
                "company_uuid": company,
                "processed": True,
                "processed_date": (run.check - timedelta(days=2)).isoformat(),
                "check_date": run.check.isoformat(),
                "off_cycle": run.off_cycle,
                "off_cycle_reason": "Bonus" if run.off_cycle else None,
                "pay_period": {
                    "start_date": run.start.isoformat(),
                    "end_date": run.end.isoformat(),
                    "pay_schedule_uuid": schedule,
                },
                "totals": {
                    "gross_pay": _money(sum(p.gross for p in live)),
                    "net_pay": _money(sum(p.net for p in live)),
                    "employee_taxes": _money(sum(c for p in live for _, e, c in p.taxes if not e)),
                    "employer_taxes": _money(sum(c for p in live for _, e, c in p.taxes if e)),
                    "benefits": _money(sum(p.k401[1] + p.medical[1] for p in live)),
                    "reimbursements": _money(sum(p.reimbursed for p in live)),
                },
                "employee_compensations": comps,
            }
        )
    return {
        "company": {
            "uuid": company,
            "name": "Bluefin Coffee Roasters, LLC",
            "ein": f"93-{rng.randrange(1_000_000, 9_999_999)}",
            "entity_type": "LLC",
            "primary_address": {"city": "Portland", "state": "OR", "zip": "97214"},
        },
        "pay_schedule": {
            "uuid": schedule,
            "frequency": "Every other week",
            "anchor_pay_date": runs[0].check.isoformat(),
        },
        "employees": employees,
        "payrolls": payrolls,
    }


# -- the test report ----------------------------------------------------------------------------


@dataclass
class Staff:
    number: str
    first: str
    last: str
    ni: str
    dept: int
    category: str
    rate: float  # pounds an hour, or a month's salary
    salaried: bool
    pension: bool
    loan: bool
    codes: list[str]  # a tax code a month
    start: int = 0
    end: int = 99

    @property
    def printed(self) -> str:
        return f"{self.last}, {self.first}"


@dataclass
class Slip:
    staff: int
    month: int
    code: str
    gross: int
    paye: int
    ee_ni: int
    er_ni: int
    ee_pension: int
    er_pension: int
    loan: int

    @property
    def net(self) -> int:
        return self.gross - self.paye - self.ee_ni - self.ee_pension - self.loan


def _allowance(code: str) -> int | None:
    """A month's tax-free pay in cents (negative for a K code), or None where the code taxes all of
    it at one rate (BR, D0)."""
    plain = code.split()[0].lstrip("S")
    if plain in ("BR", "D0"):
        return None
    if plain == "0T":
        return 0
    if plain.startswith("K"):
        return -round(int(plain[1:]) * 1000 / 12)
    return round((int(plain[:-1]) * 10 + 9) * 100 / 12)


def _slip(s: Staff, k: int, month: int, gross: int) -> Slip:
    ee_pension = max(0, _pct(gross - 52_000, 0.05)) if s.pension else 0
    er_pension = max(0, _pct(gross - 52_000, 0.03)) if s.pension else 0
    taxable = gross - ee_pension
    code = s.codes[month]
    allowance = _allowance(code)
    if allowance is None:
        paye = _pct(taxable, 0.4 if code.startswith("D0") else 0.2)
    else:
        over = max(0, taxable - allowance)
        paye = _pct(min(over, 314_167), 0.2) + _pct(max(0, over - 314_167), 0.4)
    if s.category == "C":
        ee_ni = 0
    else:
        ee_ni = _pct(max(0, min(gross, 418_900) - 104_800), 0.08) + _pct(max(0, gross - 418_900), 0.02)
    threshold = 75_800 if s.category in ("A", "C") else 418_900
    er_ni = _pct(max(0, gross - threshold), 0.138)
    loan = (max(0, gross - 227_458) * 9 // 100) // 100 * 100 if s.loan else 0  # whole pounds, down
    return Slip(k, month, code, gross, paye, ee_ni, er_ni, ee_pension, er_pension, loan)


def _ni(rng: random.Random) -> str:
    return (
        f"{rng.choice('ABCEHJKLMNPRSTWXYZ')}{rng.choice('ABCEHJKLMNPRSTWXYZ')} {rng.randrange(100):02d} "
        f"{rng.randrange(100):02d} {rng.randrange(100):02d} {rng.choice('ABCD')}"
    )


def _changes(rng: random.Random, s: Staff, first_month: int, months: int, founding: bool) -> None:
    """Some start during the report, on an emergency code until HMRC's notice comes, or leave; now and
    then HMRC changes a code from a month on."""
    if months >= 3 and not founding:
        if rng.random() < 0.12:
            s.start = first_month + rng.randrange(1, months)
            emergency = rng.choice(("1257L M1", "0T M1", "BR"))
            for m in range(s.start, min(12, s.start + rng.choice((1, 1, 2)))):
                s.codes[m] = emergency
        elif rng.random() < 0.1:
            s.end = first_month + rng.randrange(0, months - 1)
    if months >= 2 and rng.random() < 0.06:
        changed = first_month + rng.randrange(1, months)
        new = rng.choice(("1185L", "1257L", "1310L", "K200"))
        for m in range(changed, 12):
            s.codes[m] = new


def _staff(rng: random.Random, people: int, first_month: int, months: int) -> list[Staff]:
    weights = [d[3] * rng.uniform(0.6, 1.5) for d in _UK_DEPTS]
    staff: list[Staff] = []
    seen: set[tuple[str, str]] = set()
    numbers = sorted(rng.sample(range(3, 40 + people * 3), people))
    while len(staff) < people:
        first, last = rng.choice(_UK_FIRST), rng.choice(_UK_LAST)
        if (first, last) in seen:
            continue
        seen.add((first, last))
        d = len(staff) if len(staff) < len(_UK_DEPTS) else rng.choices(range(len(_UK_DEPTS)), weights)[0]
        _, pay, salaried, _ = _UK_DEPTS[d]
        category = rng.choices(("A", "M", "H", "C"), (10, 1.5, 1.0 if not salaried else 0, 0.6))[0]
        codes = ("1257L", "BR", "1100L", "K475", "S1257L", "D0", "1383L")
        code = rng.choices(codes, (30, 2, 2, 1, 2, 0.5, 1))[0]
        s = Staff(
            f"{numbers[len(staff)]:04d}",
            first,
            last,
            _ni(rng),
            d,
            category,
            round(rng.uniform(*pay), 2) if not salaried else round(rng.uniform(*pay) / 10) * 10,
            salaried,
            rng.random() < 0.85,
            rng.random() < 0.25 and category != "C",
            [code] * 12,
        )
        _changes(rng, s, first_month, months, len(staff) < len(_UK_DEPTS))
        staff.append(s)
    return staff


def _gross(rng: random.Random, s: Staff) -> int:
    """A month's gross pay in pence: a salary, now and then with commission or a bonus, or hours."""
    if s.salaried:
        extra = rng.randrange(100, 1500) * 100 if rng.random() < 0.15 else 0
        return round(s.rate * 100) + extra
    hours = rng.choice((162.5, 162.5, 173.33, 151.67, 140, 120)) + rng.choice((0, 0, 0, 6, 12.5, 20))
    return round(hours * s.rate * 100)


def _test_pay(seed: str, n: int) -> tuple[list[Staff], list[Slip], int, int]:
    rng = random.Random(f"{seed}/{n}")
    months = max(2, min(12, round((n / 4) ** 0.5)))
    first_month = rng.randrange(0, 12 - months + 1)
    staff = _staff(rng, max(6, round(n / months)), first_month, months)
    slips = []
    for month in range(first_month, first_month + months):
        for k, s in enumerate(staff):
            if s.start <= month <= s.end:
                slips.append(_slip(s, k, month, _gross(rng, s)))
    return staff, slips, first_month, months


_TEST_COLUMNS = (  # header, width, right aligned
    ("Emp No", 7, False),
    ("Name", 26, False),
    ("NI Number", 15, False),
    ("Tax Code", 10, False),
    ("Cat", 4, False),
    ("Gross Pay", 11, True),
    ("PAYE Tax", 10, True),
    ("Ee NI", 9, True),
    ("Er NI", 9, True),
    ("Ee Pension", 11, True),
    ("Er Pension", 11, True),
    ("Stud Loan", 10, True),
    ("Net Pay", 11, True),
)
_ROWS_A_PAGE = 44


def _pounds(cents: int) -> str:
    return f"{cents / 100:,.2f}"


def _cells(cells: list[str]) -> str:
    out = []
    for c, (_, w, right) in zip(cells, _TEST_COLUMNS, strict=True):
        out.append(f"{c:>{w - 1}} " if right else f"{c:<{w}}")
    return "".join(out).rstrip()


def _amounts(slips: list[Slip]) -> list[str]:
    return [
        _pounds(sum(getattr(s, f) for s in slips))
        for f in ("gross", "paye", "ee_ni", "er_ni", "ee_pension", "er_pension", "loan", "net")
    ]


def _report(staff: list[Staff], slips: list[Slip], first_month: int, months: int, seed: str) -> str:
    rng = random.Random(seed)
    header = _cells([name for name, *_ in _TEST_COLUMNS])
    rule = "-" * len(header)
    lines: list[str] = []
    page = 0
    year = 2024
    paye_ref = f"475/HH{rng.randrange(10000, 99999)}"
    office_ref = f"475PX{rng.randrange(10**7, 10**8):08d}"
    for month in range(first_month, first_month + months):
        calendar = (month + 3) % 12 + 1
        cal_year = year if calendar >= 4 else year + 1
        pay_day = date(cal_year, calendar, 28)
        while pay_day.weekday() >= 5:
            pay_day -= timedelta(days=1)
        printed = pay_day - timedelta(days=rng.randrange(2, 6))
        body: list[str] = []
        mine = [s for s in slips if s.month == month]
        for d, (dept, *_) in enumerate(_UK_DEPTS):
            rows = sorted((s for s in mine if staff[s.staff].dept == d), key=lambda s: staff[s.staff].number)
            if not rows:
                continue
            body.append(f"Department: {dept}")
            for s in rows:
                p = staff[s.staff]
                mark = "" if month != p.end else " L"
                body.append(
                    _cells(
                        [
                            p.number + mark,
                            p.printed,
                            p.ni,
                            s.code,
                            p.category,
                            *[
                                _pounds(getattr(s, f))
                                for f in (
                                    "gross",
                                    "paye",
                                    "ee_ni",
                                    "er_ni",
                                    "ee_pension",
                                    "er_pension",
                                    "loan",
                                )
                            ],
                            _pounds(s.net),
                        ]
                    )
                )
            body.append(_cells(["", f"Total {dept} ({len(rows)})", "", "", "", *_amounts(rows)]))
            body.append("")
        body.append(_cells(["", f"PERIOD TOTAL ({len(mine)} employees)", "", "", "", *_amounts(mine)]))
        chunks = [body[i : i + _ROWS_A_PAGE] for i in range(0, len(body), _ROWS_A_PAGE)]
        for chunk in chunks:
            page += 1
            lines += [
                f"{'Harbour & Hythe Joinery Ltd':<{len(header) - 10}}Page {page:>5}",
                "Payroll Summary - Monthly",
                f"Tax Year {year}/{(year + 1) % 100:02d}    Tax Month {month + 1} ({_MONTHS[month]} "
                f"{cal_year})    Pay Date {pay_day:%d/%m/%Y}",
                f"Employer PAYE Ref: {paye_ref}    Accounts Office Ref: {office_ref}",
                f"Printed {printed:%d/%m/%Y} {rng.randrange(8, 18):02d}:{rng.randrange(60):02d} by payroll",
                "",
                header,
                rule,
                *chunk,
                "",
                "\f",
            ]
    return "\n".join(lines) + "*** End of report ***\n"


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    """The pay nearest the size asked for, of a few tries."""
    per = 2300 if split == "dev" else 150
    n = max(3, chars // per)
    best: tuple[float, object, object, int] | None = None
    for _ in range(8):
        if split == "dev":
            data: object = _dev_pay(seed, n)
            context: object = _listing(*data, seed)
            count = sum(len(r.pays) for r in data[1])
        else:
            data = _test_pay(seed, n)
            context = _report(*data, seed)
            count = len(data[1])
        size = len(as_text(context))
        if best is None or abs(size - chars) < best[0]:
            best = (abs(size - chars), data, context, count)
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(3, round(n * chars / size))
    assert best is not None
    return best[1], best[2], best[3]


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _ask_dev(kind: str, rng: random.Random, data: tuple[list[Worker], list[Run]]) -> _Asked:
    workers, runs = data
    run = rng.choice(runs)
    regular = [r for r in runs if not r.off_cycle]
    pays = [(r, p) for r in runs for p in r.pays if not p.excluded]
    r0, pay = rng.choice(pays)
    w = workers[pay.worker]
    dept = _DEV_DEPTS[w.dept][0]
    if kind == "count":
        if rng.random() < 0.5:
            run = rng.choice(regular)
            n = sum(p.overtime[0] > 0 for p in run.pays)
            q = f"How many employees were paid overtime hours in the payroll with check date {run.check}?"
            return q, n, {"check_date": run.check.isoformat()}
        n = sum(workers[p.worker].dept == w.dept and p.k401[0] > 0 for p in run.pays)
        q = f"How many {dept} employees had a 401(k) deduction in the payroll with check date {run.check}?"
        return q, n, {"check_date": run.check.isoformat(), "department": dept}
    if kind == "total":
        if rng.random() < 0.5:
            cents = sum(p.gross for _, p in pays if workers[p.worker].dept == w.dept)
            q = (
                f"What was the total gross pay of the {dept} department's employees over all the payrolls "
                "listed, off-cycle ones included? In dollars, two decimals."
            )
            return q, round(cents / 100, 2), {"department": dept}
        cents = sum(
            c for _, p in pays if p.worker == pay.worker for n, e, c in p.taxes if n == "Federal Income Tax"
        )
        q = f"How much federal income tax was withheld from {w.name}'s pay in these payrolls? Two decimals."
        return q, round(cents / 100, 2), {"employee": w.name}
    if kind == "top":
        if rng.random() < 0.5:
            hours: Counter = Counter()
            for _, p in pays:
                hours[workers[p.worker].name] += p.overtime[0]
            top = _leader({k: v for k, v in hours.items() if v})
            q = "Which employee worked the most overtime hours over the quarter? Give first and last name."
            return None if top is None else (q, top, {"by": "overtime"})
        cost: Counter = Counter()
        for _, p in pays:
            cost[_DEV_DEPTS[workers[p.worker].dept][0]] += sum(c for _, e, c in p.taxes if e)
        top = _leader(dict(cost))
        q = "Which department cost the company the most in employer-paid taxes, adding up every payroll?"
        return None if top is None else (q, top, {"by": "employer_taxes"})
    if rng.random() < 0.5:
        q = f"What was {w.name}'s net pay in the payroll with check date {r0.check}?"
        return q, round(pay.net / 100, 2), {"employee": w.name, "check_date": r0.check.isoformat()}
    run = rng.choice(regular)
    q = (
        f"On what date were employees paid in the regular (not off-cycle) payroll for the pay period that "
        f"ended {run.end:%B} {run.end.day}, {run.end.year}? Answer as YYYY-MM-DD."
    )
    return q, run.check.isoformat(), {"period_end": run.end.isoformat()}


def _test_top(rng: random.Random, staff: list[Staff], slips: list[Slip], month: int) -> _Asked:
    if rng.random() < 0.5:
        gross: Counter = Counter()
        for s in slips:
            if s.month == month:
                gross[_UK_DEPTS[staff[s.staff].dept][0]] += s.gross
        top = _leader(dict(gross))
        q = f"For tax month {month + 1}, which department had the largest total gross pay?"
        return None if top is None else (q, top, {"month": month + 1})
    paye: Counter = Counter()
    for s in slips:
        paye[staff[s.staff].printed] += s.paye
    top = _leader(dict(paye))
    q = "Across all the months, who paid the most PAYE tax? Give the name as the report prints it."
    return None if top is None else (q, top, {"by": "paye"})


def _ask_test(kind: str, rng: random.Random, data: tuple) -> _Asked:
    staff, slips, *_ = data
    slip = rng.choice(slips)
    p = staff[slip.staff]
    month = slip.month
    dept = _UK_DEPTS[p.dept][0]
    named = f"{p.first} {p.last}"
    tm = f"tax month {month + 1}"
    if kind == "count":
        if rng.random() < 0.5:
            n = sum(s.month == month and s.loan > 0 and staff[s.staff].dept == p.dept for s in slips)
            q = f"Count the {dept} department's employees who had a student loan deduction in {tm}."
            return q, n, {"department": dept, "month": month + 1}
        n = sum(s.month == month and staff[s.staff].category == p.category for s in slips)
        q = f"In {tm}, how many employees were paid under NI category letter {p.category}?"
        return q, n, {"category": p.category, "month": month + 1}
    if kind == "total":
        if rng.random() < 0.5:
            cents = sum(s.er_ni for s in slips if staff[s.staff].dept == p.dept)
            q = (
                f"Add up the employer's NI (Er NI) for the {dept} department across every tax month in the "
                "report. In pounds, two decimals."
            )
            return q, round(cents / 100, 2), {"department": dept}
        cents = sum(s.net for s in slips if s.staff == slip.staff)
        q = f"Summing the months in this report, what net pay did {named} receive? Two decimals."
        return q, round(cents / 100, 2), {"first": p.first, "last": p.last}
    if kind == "top":
        return _test_top(rng, staff, slips, month)
    if rng.random() < 0.5:
        q = f"Under what tax code was {named} paid in {tm}?"
        return q, slip.code, {"first": p.first, "last": p.last, "month": month + 1}
    q = f"Give the Net Pay of employee number {p.number} in {tm}, in pounds."
    return q, round(slip.net / 100, 2), {"number": p.number, "month": month + 1}


@family(
    "payroll",
    "payroll runs: a payroll provider's API listing of a quarter's pay runs as a nested dict (dev), or a "
    "printed monthly payroll summary as a string (test)",
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
        container="nested dict (pay runs)" if ref.split == "dev" else "string (payroll summary report)",
        pays=count,
    )
