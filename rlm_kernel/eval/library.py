"""Questions about a library's loans: a US public library system's circulation report exported as
CSV, the text as one string (``dev``), or a UK library service's checkouts as its catalogue's REST
API gives them, each with its item, title and patron embedded, as a list of dicts (``test``).

What a notebook holds when someone at a library looks at what is borrowed: each checkout's item,
its title and author, the branch it went out from, the borrower's card and type, when it went out,
when it is due and when it came back, how often it was renewed and any fine. Titles and authors
hold commas, so the export quotes them; a title can be out as a book, in large print and as an
audiobook, a film shares its title with the book, and titles whose names extend another's stand
beside each other (``Dune`` and ``Dune Messiah``, ``The Gruffalo`` and ``The Gruffalo's Child``).
Loans still out have no check-in time; the export's dates are American (month first), the API's
carry their UTC offset, which moves when British Summer Time starts and ends. Checkouts are added
until the text (or the indented JSON) is about the length asked for. Kinds of question:

- ``count``: one material type's checkouts at one branch that were renewed, or one branch's
  checkouts not yet checked in (``dev``); one library's loans still out that were due before a
  day, or one patron category's on-site checkouts (``test``);
- ``total``: the fines on one branch's loans, or the renewals of one patron type's loans
  (``dev``); one card's renewals, or the days one item type spent out from one library over its
  returned loans (``test``);
- ``top``: the author most borrowed at one branch, or the title borrowed most in all its copies and
  formats (``dev``); the title borrowed most at one library, or the card with the most loans of one
  item type (``test``) (a clear leader);
- ``lookup``: the day one item was due back, or the patron who borrowed it, on one day (``dev``);
  one checkout's due date, or its title (``test``).

Every answer is computed from the loans the generator wrote. Score: ``exact``.

Splits: ``dev`` is the export (``Item Barcode``, ``Title``, ``Author``, ``Call Number``,
``Material Type``, ``Checkout Branch``, ``Patron Barcode``, ``Patron Type``, ``Checkout Date`` as
``MM/DD/YYYY HH:MM``, ``Due Date`` as ``MM/DD/YYYY``, ``Check In Date``, empty while out,
``Renewals``, ``Fine Amount`` as ``$1.25``, empty where none); ``test`` is the checkouts
(``checkout_id``, ``patron_id``, ``item_id``, ``library_id``, ``checkout_date``, ``due_date``,
``checkin_date`` or null, ``last_renewed_date``, ``renewals_count``, ``auto_renew``,
``onsite_checkout``, ``item`` with ``external_id``, ``callnumber``, ``item_type_id``,
``home_library_id`` and ``biblio`` with ``title`` and ``author``, ``patron`` with ``cardnumber``,
``category_id`` and ``library_id``): other containers, fields, libraries and wording.
"""

from __future__ import annotations

import csv
import io
import random
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_DEV_TITLES = (  # title, author, call number, material type, weight
    ("Guns, Germs, and Steel", "Diamond, Jared", "303.4 DIA", "Book", 1.0),
    ("Dune", "Herbert, Frank", "SF HER", "Book", 1.6),
    ("Dune Messiah", "Herbert, Frank", "SF HER", "Book", 0.8),
    ("Dune: Part Two", "Villeneuve, Denis", "DVD DUN", "DVD", 1.4),
    ("Sapiens: A Brief History of Humankind", "Harari, Yuval Noah", "909 HAR", "Book", 0.9),
    ("Where the Crawdads Sing", "Owens, Delia", "FIC OWE", "Book", 1.0),
    ("Lessons in Chemistry", "Garmus, Bonnie", "FIC GAR", "Book", 1.5),
    ("Lessons in Chemistry", "Garmus, Bonnie", "LP FIC GAR", "Large Print", 0.6),
    ("Lessons in Chemistry", "Garmus, Bonnie", "CD FIC GAR", "Audiobook CD", 0.4),
    ("The Thursday Murder Club", "Osman, Richard", "MYS OSM", "Book", 1.0),
    ("The Man Who Died Twice", "Osman, Richard", "MYS OSM", "Book", 0.7),
    ("Educated", "Westover, Tara", "B WESTOVER", "Book", 0.8),
    ("Atomic Habits", "Clear, James", "158.1 CLE", "Book", 1.2),
    ("Braiding Sweetgrass", "Kimmerer, Robin Wall", "581.6 KIM", "Book", 0.7),
    ("Salt, Fat, Acid, Heat", "Nosrat, Samin", "641.5 NOS", "Book", 0.6),
    ("Eats, Shoots & Leaves", "Truss, Lynne", "428.2 TRU", "Book", 0.3),
    ("Tomorrow, and Tomorrow, and Tomorrow", "Zevin, Gabrielle", "FIC ZEV", "Book", 1.1),
    ("Demon Copperhead", "Kingsolver, Barbara", "FIC KIN", "Book", 1.0),
    ("A Gentleman in Moscow", "Towles, Amor", "FIC TOW", "Book", 0.8),
    ("The Lincoln Highway", "Towles, Amor", "FIC TOW", "Book", 0.7),
    ("Project Hail Mary", "Weir, Andy", "SF WEI", "Book", 1.2),
    ("Project Hail Mary", "Weir, Andy", "CD SF WEI", "Audiobook CD", 0.5),
    ("The Martian", "Weir, Andy", "SF WEI", "Book", 0.6),
    ("Fourth Wing", "Yarros, Rebecca", "FIC YAR", "Book", 1.6),
    ("Iron Flame", "Yarros, Rebecca", "FIC YAR", "Book", 1.1),
    ("The Women", "Hannah, Kristin", "FIC HAN", "Book", 1.3),
    ("The Women", "Hannah, Kristin", "LP FIC HAN", "Large Print", 0.7),
    ("Killers of the Flower Moon", "Grann, David", "976.6 GRA", "Book", 0.6),
    ("Killers of the Flower Moon", "Scorsese, Martin", "DVD KIL", "DVD", 0.9),
    ("Oppenheimer", "Nolan, Christopher", "DVD OPP", "DVD", 1.2),
    ("Hello, Universe", "Kelly, Erin Entrada", "J FIC KEL", "Book", 0.6),
    ("Dog Man", "Pilkey, Dav", "J GN PIL", "Graphic Novel", 1.0),
    ("Dog Man: Twenty Thousand Fleas Under the Sea", "Pilkey, Dav", "J GN PIL", "Graphic Novel", 0.8),
    ("Maus I: A Survivor's Tale", "Spiegelman, Art", "GN 940.53 SPI", "Graphic Novel", 0.3),
    ('The "Everything" Kids\' Science Experiments Book', "Robinson, Tom", "J 507.8 ROB", "Book", 0.3),
)
_LOAN_DAYS = {"Book": 21, "Large Print": 21, "Audiobook CD": 21, "DVD": 7, "Graphic Novel": 14}
_FINE = {"Book": 25, "Large Print": 25, "Audiobook CD": 25, "DVD": 100, "Graphic Novel": 25}  # a day, cents
_FINE_CAP = {"DVD": 1000}
_BRANCHES = (
    ("Central Library", 3.0),
    ("Eastside Branch", 1.5),
    ("Westgate Branch", 1.2),
    ("Bookmobile", 0.3),
)
_PATRON_TYPES = (("Adult", 6.0), ("Juvenile", 2.0), ("Senior", 1.5), ("Teacher", 0.5), ("Non-Resident", 0.4))

_TEST_TITLES = (  # title, author, call number, item type, weight
    ("Wolf Hall", "Mantel, Hilary", "F MAN", "BK", 0.8),
    ("The Mirror & the Light", "Mantel, Hilary", "F MAN", "BK", 0.6),
    ("Normal People", "Rooney, Sally", "F ROO", "BK", 1.0),
    ("Shuggie Bain", "Stuart, Douglas", "F STU", "BK", 0.7),
    ("Small Things Like These", "Keegan, Claire", "F KEE", "BK", 1.0),
    ("The Salt Path", "Winn, Raynor", "914.23 WIN", "BK", 0.8),
    ("Prophet Song", "Lynch, Paul", "F LYN", "BK", 0.9),
    ("Hamnet", "O'Farrell, Maggie", "F OFA", "BK", 1.2),
    ("Hamnet", "O'Farrell, Maggie", "F OFA", "BKLP", 0.5),
    ("Hamnet", "O'Farrell, Maggie", "CD F OFA", "AUDIO", 0.3),
    ("Girl, Woman, Other", "Evaristo, Bernardine", "F EVA", "BK", 1.0),
    ("Klara and the Sun", "Ishiguro, Kazuo", "F ISH", "BK", 0.8),
    ("Never Let Me Go", "Ishiguro, Kazuo", "F ISH", "BK", 0.5),
    ("The Gruffalo", "Donaldson, Julia", "JP DON", "BK", 1.4),
    ("The Gruffalo's Child", "Donaldson, Julia", "JP DON", "BK", 1.0),
    ("Room on the Broom", "Donaldson, Julia", "JP DON", "BK", 0.9),
    ("The Tiger Who Came to Tea", "Kerr, Judith", "JP KER", "BK", 0.8),
    ("Harry Potter and the Philosopher's Stone", "Rowling, J. K.", "JF ROW", "BK", 1.0),
    ("Harry Potter and the Chamber of Secrets", "Rowling, J. K.", "JF ROW", "BK", 0.7),
    ("Life After Life", "Atkinson, Kate", "F ATK", "BK", 0.6),
    ("The Crow Road", "Banks, Iain", "F BAN", "BK", 0.4),
    ("Atonement", "McEwan, Ian", "F MCE", "BK", 0.5),
    ("Saturday", "McEwan, Ian", "F MCE", "BKLP", 0.3),
    ("Paddington", "King, Paul", "DVD PAD", "DVD", 0.8),
    ("Paddington 2", "King, Paul", "DVD PAD", "DVD", 1.0),
    ("Wonka", "King, Paul", "DVD WON", "DVD", 0.9),
    ("Which? Magazine, March 2024", None, "MAG WHI", "MAG", 0.5),
    ("Radio Times, 23-29 March 2024", None, "MAG RAD", "MAG", 0.4),
)
_TEST_LOAN_DAYS = {"BK": 21, "BKLP": 28, "AUDIO": 21, "DVD": 7, "MAG": 7}
_LIBRARIES = (("CEN", 3.0), ("NTH", 1.4), ("STH", 1.2), ("MOB", 0.3))
_CATEGORIES = (("ADULT", 6.0), ("JUNIOR", 2.0), ("TEEN", 0.8), ("HOUSEBOUND", 0.4), ("STAFF", 0.3))
_FIRST = (
    "Amelia", "Oliver", "Isla", "George", "Ava", "Harry", "Mia", "Noah", "Freya", "Jack", "Poppy", "Leo",
    "Ivy", "Arthur", "Rosie", "Oscar", "Evie", "Theo", "Aisha", "Mohammed", "Grace", "Alfie",
)  # fmt: skip
_SURNAMES = (
    "Smith", "Jones", "Taylor", "Brown", "Williams", "Wilson", "Johnson", "Davies", "Patel", "Khan",
    "Robinson", "Wright", "Thompson", "Evans", "Walker", "White", "Roberts", "Green", "Hall", "Wood",
)  # fmt: skip


@dataclass
class Loan:
    item: int  # a copy: its title in ``titles``
    barcode: str
    branch: int
    patron: int
    out: datetime  # local time
    due: date
    back: datetime | None
    renewals: int
    fine: int = 0  # cents
    onsite: bool = False
    last_renewed: datetime | None = None
    ident: int = 0  # test: the checkout's id


def _choices(rng: random.Random, table: tuple, k: int = -1) -> int:
    return rng.choices(range(len(table)), [row[k] for row in table])[0]


def _loans(
    rng: random.Random,
    n: int,
    titles: tuple,
    places: tuple,
    people: tuple,
    loan_days: dict,
    start: datetime,
    end: datetime,
) -> tuple[list[Loan], list[int]]:
    """``n`` checkouts of copies of ``titles`` between ``start`` and ``end``, each copy lent again only
    once it is back; and each patron's type or category (an index into ``people``)."""
    weights = [t[-1] * rng.uniform(0.5, 1.6) for t in titles]
    place_weights = [p[-1] * rng.uniform(0.6, 1.5) for p in places]
    patrons = [_choices(rng, people) for _ in range(max(4, n // 4))]
    active = [rng.uniform(0.2, 3.0) for _ in patrons]
    used: set[str] = set()
    loans: list[Loan] = []
    while len(loans) < n:
        k = rng.choices(range(len(titles)), weights)[0]
        code = f"3{rng.randrange(10**12, 10**13)}"
        if code in used:
            continue
        used.add(code)
        home = rng.choices(range(len(places)), place_weights)[0]
        days = loan_days[titles[k][3]]
        t = start + timedelta(days=rng.uniform(0, 12))
        while t < end and len(loans) < n:
            out = t.replace(hour=rng.randrange(9, 20), minute=rng.randrange(60), second=0, microsecond=0)
            if out >= end:
                break
            renewals = rng.choices((0, 1, 2), (6, 2, 1))[0]
            allowed = days * (1 + renewals)
            kept = rng.choice((rng.uniform(1, allowed - 0.5), rng.uniform(2, allowed + 12)))
            back: datetime | None = out + timedelta(days=kept)
            back = back.replace(
                hour=rng.randrange(9, 20), minute=rng.randrange(60), second=rng.randrange(60), microsecond=0
            )
            if back <= out:
                back = out + timedelta(hours=3)
            if back >= end:
                back = None
            last = None
            if renewals:
                last = (out + timedelta(days=days * renewals - rng.uniform(0, 2))).replace(
                    second=0, microsecond=0
                )
                if last >= end or (back and last >= back):
                    renewals, last = 0, None
            loans.append(
                Loan(
                    k,
                    code,
                    home if rng.random() < 0.85 else rng.choices(range(len(places)), place_weights)[0],
                    rng.choices(range(len(patrons)), active)[0],
                    out,
                    (out + timedelta(days=days * (1 + renewals))).date(),
                    back,
                    renewals,
                    last_renewed=last,
                )
            )
            if back is None:
                break
            t = back + timedelta(days=rng.expovariate(1 / 3))
    loans.sort(key=lambda x: x.out)
    return loans, patrons


# -- the dev export -----------------------------------------------------------------------------


def _dev_loans(seed: str, n: int) -> tuple[list[Loan], list[int], list[str]]:
    rng = random.Random(f"{seed}/{n}")
    start = datetime(2024, 3, 1) + timedelta(days=rng.randrange(0, 150))
    end = start + timedelta(days=max(14, min(90, n // 3)))
    loans, patrons = _loans(rng, n, _DEV_TITLES, _BRANCHES, _PATRON_TYPES, _LOAN_DAYS, start, end)
    cards = [f"2{rng.randrange(10**12, 10**13)}" for _ in patrons]
    for loan in loans:
        if loan.back and loan.back.date() > loan.due and _PATRON_TYPES[patrons[loan.patron]][0] != "Juvenile":
            material = _DEV_TITLES[loan.item][3]
            late = (loan.back.date() - loan.due).days
            loan.fine = min(_FINE_CAP.get(material, 500), late * _FINE[material])
    return loans, patrons, cards


def _us(t: datetime) -> str:
    return f"{t:%m/%d/%Y %H:%M}"


def _export(loans: list[Loan], patrons: list[int], cards: list[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(
        [
            "Item Barcode",
            "Title",
            "Author",
            "Call Number",
            "Material Type",
            "Checkout Branch",
            "Patron Barcode",
            "Patron Type",
            "Checkout Date",
            "Due Date",
            "Check In Date",
            "Renewals",
            "Fine Amount",
        ]
    )
    for x in loans:
        title, author, call, material, _ = _DEV_TITLES[x.item]
        w.writerow(
            [
                x.barcode,
                title,
                author,
                call,
                material,
                _BRANCHES[x.branch][0],
                cards[x.patron],
                _PATRON_TYPES[patrons[x.patron]][0],
                _us(x.out),
                f"{x.due:%m/%d/%Y}",
                _us(x.back) if x.back else "",
                x.renewals,
                f"${x.fine / 100:.2f}" if x.fine else "",
            ]
        )
    return buf.getvalue()


# -- the test checkouts -------------------------------------------------------------------------


def _offset(t: datetime) -> timedelta:
    """London's offset from UTC at a local time in 2024 (BST from 31 March to 27 October)."""
    return timedelta(hours=1) if datetime(2024, 3, 31, 2) <= t < datetime(2024, 10, 27, 2) else timedelta(0)


def _iso(t: datetime) -> str:
    return t.replace(tzinfo=timezone(_offset(t))).isoformat()


def _test_loans(seed: str, n: int) -> tuple[list[Loan], list[int], list[tuple[str, str, str, int]]]:
    rng = random.Random(f"{seed}/{n}")
    start = datetime(2024, 2, 5) + timedelta(days=rng.randrange(0, 40))
    end = start + timedelta(days=max(21, min(120, n // 3)))
    if end < datetime(2024, 4, 8):
        end = datetime(2024, 4, 8)  # over the change to summer time
    loans, patrons = _loans(rng, n, _TEST_TITLES, _LIBRARIES, _CATEGORIES, _TEST_LOAN_DAYS, start, end)
    people = []
    cards: set[str] = set()
    for _ in patrons:
        card = f"2{rng.randrange(10**12, 10**13)}"
        while card in cards:
            card = f"2{rng.randrange(10**12, 10**13)}"
        cards.add(card)
        people.append((card, rng.choice(_FIRST), rng.choice(_SURNAMES), _choices(rng, _LIBRARIES)))
    ident = rng.randrange(150_000, 400_000)
    for loan in loans:
        cat = _CATEGORIES[patrons[loan.patron]][0]
        if _TEST_TITLES[loan.item][3] == "MAG" or (cat == "HOUSEBOUND" and rng.random() < 0.1):
            loan.onsite = rng.random() < 0.7
        if cat in ("STAFF", "ADULT") and rng.random() < 0.04:
            loan.onsite = True
        if loan.onsite:  # read in the library: due that day
            loan.due = loan.out.date()
            loan.renewals, loan.last_renewed = 0, None
            if loan.back is not None:
                loan.back = min(loan.back, loan.out + timedelta(hours=rng.uniform(0.3, 4)))
                loan.back = loan.back.replace(microsecond=0)
    for loan in loans:
        ident += rng.randrange(1, 4)
        loan.ident = ident
    return loans, patrons, people


def _checkouts(loans: list[Loan], patrons: list[int], people: list, seed: str) -> list[dict]:
    rng = random.Random(seed)
    patron_ids = rng.sample(range(1000, 60_000), len(people))
    item_ids: dict[str, int] = {}
    biblio_ids = rng.sample(range(20_000, 90_000), len(_TEST_TITLES))
    out = []
    for x in loans:
        title, author, call, itype, _ = _TEST_TITLES[x.item]
        item_id = item_ids.setdefault(x.barcode, rng.randrange(100_000, 400_000))
        card, firstname, surname, home = people[x.patron]
        due = datetime.combine(x.due, datetime.min.time()).replace(hour=23, minute=59)
        stamp = x.back or x.last_renewed or x.out
        out.append(
            {
                "checkout_id": x.ident,
                "patron_id": patron_ids[x.patron],
                "item_id": item_id,
                "library_id": _LIBRARIES[x.branch][0],
                "checkout_date": _iso(x.out),
                "due_date": _iso(due),
                "checkin_date": _iso(x.back) if x.back else None,
                "last_renewed_date": _iso(x.last_renewed) if x.last_renewed else None,
                "renewals_count": x.renewals,
                "unseen_renewals_count": 0,
                "auto_renew": False,
                "auto_renew_error": None,
                "issuer_id": rng.choice((11, 14, 27, 31, None)),
                "note": None,
                "onsite_checkout": x.onsite,
                "timestamp": _iso(stamp),
                "item": {
                    "item_id": item_id,
                    "external_id": x.barcode,
                    "callnumber": call,
                    "item_type_id": itype,
                    "home_library_id": _LIBRARIES[x.branch][0]
                    if rng.random() < 0.8
                    else rng.choice(_LIBRARIES)[0],
                    "biblio_id": biblio_ids[x.item],
                    "biblio": {"biblio_id": biblio_ids[x.item], "title": title, "author": author},
                },
                "patron": {
                    "patron_id": patron_ids[x.patron],
                    "cardnumber": card,
                    "firstname": firstname,
                    "surname": surname,
                    "category_id": _CATEGORIES[patrons[x.patron]][0],
                    "library_id": _LIBRARIES[home][0],
                },
            }
        )
    return out


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    """The loans nearest the size asked for, of a few tries."""
    per = 160 if split == "dev" else 1250
    n = max(8, chars // per)
    best: tuple[float, object, object] | None = None
    for _ in range(8):
        if split == "dev":
            data: object = _dev_loans(seed, n)
            context: object = _export(*data)
        else:
            data = _test_loans(seed, n)
            context = _checkouts(*data, seed)
        size = len(as_text(context))
        if best is None or abs(size - chars) < best[0]:
            best = (abs(size - chars), data, context)
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(8, round(n * chars / size))
    assert best is not None
    return best[1], best[2], len(best[1][0])


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _ask_dev(kind: str, rng: random.Random, data: tuple) -> _Asked:
    loans, patrons, cards = data
    x = rng.choice(loans)
    branch = _BRANCHES[x.branch][0]
    material = _DEV_TITLES[x.item][3]
    if kind == "count":
        if rng.random() < 0.5:
            n = sum(
                y.branch == x.branch and _DEV_TITLES[y.item][3] == material and y.renewals > 0 for y in loans
            )
            q = f"How many {material} checkouts made at {branch} were renewed at least once?"
            return q, n, {"branch": branch, "material": material}
        n = sum(y.branch == x.branch and y.back is None for y in loans)
        q = f"How many checkouts from {branch} have no check-in date in this export?"
        return q, n, {"branch": branch}
    if kind == "total":
        if rng.random() < 0.5:
            cents = sum(y.fine for y in loans if y.branch == x.branch)
            q = f"What do the fines on loans made at {branch} add up to, in dollars? Two decimals."
            return q, round(cents / 100, 2), {"branch": branch}
        kind_ = _PATRON_TYPES[patrons[x.patron]][0]
        n = sum(y.renewals for y in loans if _PATRON_TYPES[patrons[y.patron]][0] == kind_)
        q = f"What is the total number of renewals on loans to {kind_} patrons?"
        return q, n, {"patron_type": kind_}
    if kind == "top":
        if rng.random() < 0.5:
            top = _leader(Counter(_DEV_TITLES[y.item][1] for y in loans if y.branch == x.branch))
            q = f"Whose works were checked out most often at {branch}? Give the author as the export has it."
            return None if top is None else (q, top, {"branch": branch})
        top = _leader(Counter(_DEV_TITLES[y.item][0] for y in loans))
        q = "Which title was checked out the most times, counting every copy and every format?"
        return None if top is None else (q, top, {"by": "title"})
    day = f"{x.out:%m/%d/%Y}"
    if sum(y.barcode == x.barcode and f"{y.out:%m/%d/%Y}" == day for y in loans) != 1:
        return None
    params = {"barcode": x.barcode, "day": day}
    if rng.random() < 0.5:
        q = f"Item {x.barcode} was checked out on {day}: on what date was it due back? Answer as MM/DD/YYYY."
        return q, f"{x.due:%m/%d/%Y}", {**params, "field": "due"}
    q = f"Which patron barcode borrowed item {x.barcode} on {day}?"
    return q, cards[x.patron], {**params, "field": "patron"}


def _ask_test(kind: str, rng: random.Random, data: tuple) -> _Asked:
    loans, patrons, people = data
    x = rng.choice(loans)
    lib = _LIBRARIES[x.branch][0]
    itype = _TEST_TITLES[x.item][3]
    card = people[x.patron][0]
    if kind == "count":
        if rng.random() < 0.5:
            day = x.due + timedelta(days=rng.randrange(0, 10))
            n = sum(y.branch == x.branch and y.back is None and y.due < day for y in loans)
            q = (
                f"Count the checkouts from library_id {lib} still on loan (no checkin_date) that were due "
                f"before {day}."
            )
            return q, n, {"library": lib, "before": day.isoformat()}
        cat = _CATEGORIES[patrons[x.patron]][0]
        n = sum(y.onsite and _CATEGORIES[patrons[y.patron]][0] == cat for y in loans)
        q = f"Tally the on-site checkouts made by patrons of category {cat}."
        return q, n, {"category": cat}
    if kind == "total":
        if rng.random() < 0.5:
            n = sum(y.renewals for y in loans if y.patron == x.patron)
            q = f"Add up renewals_count over every checkout made on card {card}."
            return q, n, {"cardnumber": card}
        days = sum(
            ((y.back - _offset(y.back)) - (y.out - _offset(y.out))).total_seconds() / 86400
            for y in loans
            if y.back is not None and y.branch == x.branch and _TEST_TITLES[y.item][3] == itype
        )
        q = (
            f"Summing checkin_date minus checkout_date over the returned {itype} checkouts from library_id "
            f"{lib}, how many days were they out in all? Two decimals."
        )
        return q, round(days, 2), {"library": lib, "item_type": itype}
    if kind == "top":
        if rng.random() < 0.5:
            top = _leader(Counter(_TEST_TITLES[y.item][0] for y in loans if y.branch == x.branch))
            q = f"At library_id {lib}, what title was lent the most times?"
            return None if top is None else (q, top, {"library": lib})
        top = _leader(Counter(people[y.patron][0] for y in loans if _TEST_TITLES[y.item][3] == itype))
        q = f"Find the cardnumber with the most checkouts of item_type_id {itype}."
        return None if top is None else (q, top, {"item_type": itype})
    if rng.random() < 0.5:
        q = f"Give the due date of checkout_id {x.ident}, as YYYY-MM-DD."
        return q, x.due.isoformat(), {"checkout_id": x.ident, "field": "due_date"}
    q = f"Name the title of the item lent in checkout_id {x.ident}."
    return q, _TEST_TITLES[x.item][0], {"checkout_id": x.ident, "field": "title"}


@family(
    "library",
    "a library's loans: a circulation report as a CSV string (dev), or a catalogue API's checkouts as a list "
    "of dicts (test)",
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
        container="string (circulation CSV export)" if ref.split == "dev" else "list of dicts (checkouts)",
        checkouts=count,
    )
