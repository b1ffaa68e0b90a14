"""Questions about a family tree: a GEDCOM X export as a nested dict (``dev``) or a GEDCOM 5.5.1
file as one string (``test``).

What a notebook holds when someone researches their family: people with their names, births,
deaths, places and occupations, and the couples and parent-child links between them, over six or
seven generations of emigrants. Given names come back every generation (a boy named after his
grandfather), surnames that extend another's stand beside each other (``Sullivan`` and
``O'Sullivan``, ``Larson`` and ``Larsson``), and so do places; a person is named by full name and
birth date. People are added a family at a time until the indented JSON (or the text) is about the
length asked for. Kinds of question:

- ``count``: how many children one person had (``dev``), or how many grandchildren (``test``);
- ``total``: the mean age at death of the people born in one place (``dev``), or how many children
  the families married in one place had in all (``test``);
- ``top``: the place with the most births in a span of years (``dev``), or the surname most people
  born after a year carry (``test``) (a clear leader);
- ``lookup``: the year one person died (``dev``), or one person's occupation (``test``);
- ``hop``: where one person's mother was born (``dev``), or her birth surname (``test``).

Every answer is computed from the people the generator wrote. Score: ``exact`` (numbers as numbers,
names and places without case).

Splits: ``dev`` is GEDCOM X JSON of an Irish family who went to Massachusetts and Pennsylvania
(``persons`` with ``gender``, ``names[].nameForms[].fullText`` and its parts, ``facts`` of
Birth, Death and Occupation with an ``original`` and a ``formal`` date and a place; and
``relationships``: ``Couple`` with a Marriage fact, ``ParentChild`` from ``person1``, the parent, to
``person2``); ``test`` is a GEDCOM file of a Swedish and Norwegian family who went to Minnesota
(``INDI`` records with ``NAME Given /Surname/``, ``SEX``, ``BIRT``, ``DEAT``, ``OCCU``, ``FAMC``
and ``FAMS``; ``FAM`` records with ``HUSB``, ``WIFE``, ``MARR`` and ``CHIL``; dates as
``14 MAR 1852``): other containers, fields, names, places and wording.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import date, timedelta
from fractions import Fraction

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup", "hop")

_DEV = {
    "M": ("John", "Patrick", "Michael", "James", "Thomas", "Daniel", "Denis", "Timothy", "Cornelius",
          "Jeremiah", "William", "Edward", "Francis", "Joseph"),
    "F": ("Mary", "Margaret", "Bridget", "Catherine", "Ellen", "Johanna", "Honora", "Anne", "Julia",
          "Hannah", "Nora", "Elizabeth", "Mary Ann"),
    "surnames": ("Murphy", "Sullivan", "O'Sullivan", "Donovan", "O'Donovan", "McCarthy", "Driscoll",
                 "O'Driscoll", "Crowley", "Collins", "Hurley", "Daly", "Regan", "O'Regan", "Keane", "Kane",
                 "Mahony", "Walsh", "Burke"),
    "old": ("Skibbereen, County Cork, Ireland", "Clonakilty, County Cork, Ireland",
            "Ennis, County Clare, Ireland", "Ennistymon, County Clare, Ireland",
            "Westport, County Mayo, Ireland", "Castlebar, County Mayo, Ireland",
            "Tralee, County Kerry, Ireland"),
    "new": ("Boston, Suffolk, Massachusetts, USA", "South Boston, Suffolk, Massachusetts, USA",
            "Lowell, Middlesex, Massachusetts, USA", "Lawrence, Essex, Massachusetts, USA",
            "Worcester, Worcester, Massachusetts, USA", "Philadelphia, Philadelphia, Pennsylvania, USA",
            "Scranton, Lackawanna, Pennsylvania, USA"),
    "M jobs": ("Farmer", "Laborer", "Blacksmith", "Mill Operative", "Carpenter", "Shoemaker",
               "Police Officer", "Railroad Worker", "Clerk", "Teacher", "Stonemason"),
    "F jobs": ("Domestic Servant", "Mill Operative", "Dressmaker", "Teacher", "Nurse", "Housekeeper"),
    "moved": 1847,  # the year the family starts leaving the old country
}  # fmt: skip
_TEST = {
    "M": ("Anders", "Lars", "Nils", "Per", "Johan", "Carl", "Erik", "Gustaf", "Olof", "Sven", "Ole",
          "Hans", "Knut"),
    "F": ("Anna", "Maria", "Kristina", "Johanna", "Ingrid", "Karin", "Brita", "Sigrid", "Hilda", "Emma",
          "Elin", "Ida"),
    "surnames": ("Andersson", "Anderson", "Johansson", "Johnson", "Larsson", "Larson", "Nilsson", "Nelson",
                 "Olsson", "Olson", "Lund", "Lundqvist", "Berg", "Bergström", "Halvorsen", "Haugen"),
    "old": ("Gävle, Gävleborg, Sweden", "Växjö, Kronoberg, Sweden", "Karlstad, Värmland, Sweden",
            "Karlskoga, Örebro, Sweden", "Bergen, Hordaland, Norway", "Stavanger, Rogaland, Norway"),
    "new": ("Minneapolis, Hennepin, Minnesota, USA", "St. Paul, Ramsey, Minnesota, USA",
            "Duluth, St. Louis, Minnesota, USA", "Red Wing, Goodhue, Minnesota, USA",
            "Willmar, Kandiyohi, Minnesota, USA", "Moorhead, Clay, Minnesota, USA"),
    "M jobs": ("Farmer", "Lumberjack", "Miner", "Carpenter", "Merchant", "Tailor", "Railroad Laborer",
               "Pastor", "Blacksmith", "Sawmill Worker"),
    "F jobs": ("Seamstress", "Teacher", "Dressmaker", "Nurse", "Domestic Servant", "Milliner"),
    "moved": 1866,
}  # fmt: skip


@dataclass
class Person:
    id: str
    given: str
    surname: str
    sex: str
    born: date
    birthplace: str
    died: date | None = None
    deathplace: str | None = None
    occupation: str | None = None
    parents: int | None = None  # the union they were born to
    unions: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.given} {self.surname}"


@dataclass
class Union:
    id: str
    husband: int
    wife: int
    married: date
    place: str
    children: list[int] = field(default_factory=list)


class _Tree:
    def __init__(self, split: str, seed: str, n: int) -> None:
        self.rng = random.Random(f"{seed}/{n}")
        self.data, self.dev = (_DEV if split == "dev" else _TEST), split == "dev"
        self.people: list[Person] = []
        self.unions: list[Union] = []
        self.ids: set[str] = set()
        pending: deque[int] = deque()
        while len(self.people) < n:
            if not pending:  # a couple of the first generation, or one more line
                pending.append(self._founders(1790 + (25 * len(self.unions)) % 60))
            self._children(pending.popleft(), pending, n)

    def _id(self, kind: str) -> str:
        if not self.dev:
            return f"@{kind}{len(self.people if kind == 'I' else self.unions) + 1}@"
        while True:
            abc = "BCDFGHJKLMNPQRSTVWXZ0123456789"
            new = (
                "".join(self.rng.choice(abc) for _ in range(4))
                + "-"
                + "".join(self.rng.choice(abc) for _ in range(3))
            )
            if new not in self.ids:
                self.ids.add(new)
                return new

    def _place(self, year: int) -> str:
        moved = self.rng.random() < min(1.0, max(0.0, (year - self.data["moved"]) / 20))
        return self.rng.choice(self.data["new" if moved else "old"])

    def _day(self, year: int) -> date:
        return date(year, 1, 1) + timedelta(days=self.rng.randrange(365))

    def _person(self, sex: str, born: date, place: str, surname: str, given: str | None = None) -> int:
        rng = self.rng
        p = Person(self._id("I"), given or rng.choice(self.data[sex]), surname, sex, born, place)
        if born.year > 1935 and rng.random() < 0.7:
            pass  # living
        elif rng.random() < 0.1:
            p.died = born + timedelta(days=rng.randrange(30, 1600))
        else:
            p.died = born + timedelta(days=rng.randrange(30 * 365, 94 * 365))
        if p.died is not None:
            p.deathplace = (
                place if p.died.year < self.data["moved"] or rng.random() < 0.5 else self._place(p.died.year)
            )
        if p.died is None or (p.died - born).days > 16 * 365:
            jobs = self.data[f"{sex} jobs"]
            p.occupation = rng.choice(jobs) if sex == "M" or rng.random() < 0.35 else None
        self.people.append(p)
        return len(self.people) - 1

    def _marry(self, husband: int, wife: int, year: int) -> int:
        u = Union(self._id("F"), husband, wife, self._day(year), self._place(year))
        self.unions.append(u)
        for i in (husband, wife):
            self.people[i].unions.append(len(self.unions) - 1)
            dead = self.people[i].died
            if dead is not None and dead < u.married + timedelta(days=400):
                self.people[i].died = u.married + timedelta(days=self.rng.randrange(400, 40 * 365))
        return len(self.unions) - 1

    def _founders(self, year: int) -> int:
        place = self._place(year)
        man = self._person("M", self._day(year), place, self.rng.choice(self.data["surnames"]))
        woman = self._person(
            "F", self._day(year + self.rng.randint(-3, 4)), place, self.rng.choice(self.data["surnames"])
        )
        return self._marry(man, woman, year + self.rng.randint(19, 28))

    def _children(self, k: int, pending: deque[int], n: int) -> None:
        rng, u = self.rng, self.unions[k]
        father, mother = self.people[u.husband], self.people[u.wife]
        last = min(mother.born.year + 44, 1990)
        year = u.married.year + rng.randint(1, 2)
        for _ in range(rng.choices((1, 2, 3, 4, 5, 6, 7, 8), (2, 3, 4, 5, 5, 4, 3, 2))[0]):
            born = self._day(year)
            late = (mother.died and born > mother.died) or (
                father.died and born > father.died + timedelta(days=270)
            )
            if year > last or late or len(self.people) >= n:
                break
            sex = rng.choice("MF")
            child = self._person(sex, born, u.place, father.surname, self._namesake(u, sex))
            self.people[child].parents = k
            u.children.append(child)
            self._wed(child, pending)
            year += rng.randint(1, 3)

    def _namesake(self, u: Union, sex: str) -> str | None:
        """A grandparent's given name for a first son or daughter; else None (one drawn)."""
        if any(self.people[c].sex == sex for c in u.children) or self.rng.random() < 0.3:
            return None
        side = self.people[u.husband if sex == "M" else u.wife].parents
        if side is None:
            return None
        union = self.unions[side]
        return self.people[union.husband if sex == "M" else union.wife].given

    def _wed(self, child: int, pending: deque[int]) -> None:
        rng, p = self.rng, self.people[child]
        if p.born.year > 1960 or rng.random() > 0.65 or (p.died and (p.died - p.born).days < 24 * 365):
            return
        year = p.born.year + rng.randint(19, 30)
        other = "F" if p.sex == "M" else "M"
        spouse = self._person(
            other,
            self._day(p.born.year + rng.randint(-4, 4)),
            self._place(year - 22),
            rng.choice(self.data["surnames"]),
        )
        pending.append(self._marry(child, spouse, year) if p.sex == "M" else self._marry(spouse, child, year))


# -- the files ----------------------------------------------------------------------------------

_X = "http://gedcomx.org/"


def _fact(kind: str, when: date | None, place: str | None) -> dict:
    out: dict = {"type": _X + kind}
    if when is not None:
        out["date"] = {"original": f"{when.day} {when:%B %Y}", "formal": f"+{when:%Y-%m-%d}"}
    if place is not None:
        out["place"] = {"original": place}
    return out


def _gedcomx(tree: _Tree) -> dict:
    persons = []
    for p in tree.people:
        facts = [_fact("Birth", p.born, p.birthplace)]
        if p.died is not None:
            facts.append(_fact("Death", p.died, p.deathplace))
        if p.occupation:
            facts.append({"type": _X + "Occupation", "value": p.occupation})
        parts = [{"type": _X + "Given", "value": p.given}, {"type": _X + "Surname", "value": p.surname}]
        persons.append(
            {
                "id": p.id,
                "gender": {"type": _X + ("Male" if p.sex == "M" else "Female")},
                "names": [{"nameForms": [{"fullText": p.name, "parts": parts}]}],
                "facts": facts,
            }
        )
    relationships = []
    for u in tree.unions:
        husband, wife = tree.people[u.husband].id, tree.people[u.wife].id
        relationships.append(
            {
                "type": _X + "Couple",
                "person1": {"resource": f"#{husband}"},
                "person2": {"resource": f"#{wife}"},
                "facts": [_fact("Marriage", u.married, u.place)],
            }
        )
        for c in u.children:
            for parent in (husband, wife):
                relationships.append(
                    {
                        "type": _X + "ParentChild",
                        "person1": {"resource": f"#{parent}"},
                        "person2": {"resource": f"#{tree.people[c].id}"},
                    }
                )
    return {"persons": persons, "relationships": relationships}


def _ged_date(when: date) -> str:
    return f"{when.day} {when:%b %Y}".upper()


def _gedcom(tree: _Tree) -> str:
    out = ["0 HEAD", "1 SOUR FAMILY_TREE_APP", "2 VERS 24.1", "1 DATE 3 FEB 2025", "1 GEDC", "2 VERS 5.5.1",
           "2 FORM LINEAGE-LINKED", "1 CHAR UTF-8", "0 @SUBM1@ SUBM", "1 NAME Family Researcher"]  # fmt: skip
    for p in tree.people:
        out += [
            f"0 {p.id} INDI",
            f"1 NAME {p.given} /{p.surname}/",
            f"2 GIVN {p.given}",
            f"2 SURN {p.surname}",
        ]
        out += [f"1 SEX {p.sex}", "1 BIRT", f"2 DATE {_ged_date(p.born)}", f"2 PLAC {p.birthplace}"]
        if p.died is not None:
            out += ["1 DEAT", f"2 DATE {_ged_date(p.died)}", f"2 PLAC {p.deathplace}"]
        if p.occupation:
            out.append(f"1 OCCU {p.occupation}")
        if p.parents is not None:
            out.append(f"1 FAMC {tree.unions[p.parents].id}")
        out += [f"1 FAMS {tree.unions[k].id}" for k in p.unions]
    for u in tree.unions:
        out += [f"0 {u.id} FAM", f"1 HUSB {tree.people[u.husband].id}", f"1 WIFE {tree.people[u.wife].id}"]
        out += ["1 MARR", f"2 DATE {_ged_date(u.married)}", f"2 PLAC {u.place}"]
        out += [f"1 CHIL {tree.people[c].id}" for c in u.children]
    out.append("0 TRLR")
    return "\n".join(out) + "\n"


def _fit(split: str, seed: str, chars: int) -> tuple[_Tree, object]:
    per, least = (1150, 6) if split == "dev" else (205, 10)
    n = max(least, chars // per)
    for _ in range(6):
        tree = _Tree(split, seed, n)
        context = _gedcomx(tree) if split == "dev" else _gedcom(tree)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(least, round(n * chars / size))
    return tree, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: Counter) -> object:
    ranked = counts.most_common(2)
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _who(tree: _Tree, p: Person) -> str | None:
    """How a question names a person: full name and birth date, or None where two share both."""
    same = sum(q.name == p.name and q.born == p.born for q in tree.people)
    if same > 1:
        return None
    return (
        f"{p.name}, born {p.born.day} {p.born:%B %Y}" if tree.dev else f"{p.name} (born {_ged_date(p.born)})"
    )


def _children(tree: _Tree, p: Person) -> list[int]:
    return [c for k in p.unions for c in tree.unions[k].children]


def _age(p: Person) -> int:
    assert p.died is not None
    return p.died.year - p.born.year - ((p.died.month, p.died.day) < (p.born.month, p.born.day))


def _ask_count(split: str, rng: random.Random, tree: _Tree) -> _Asked:
    p = rng.choice([q for q in tree.people if _children(tree, q)])
    who = _who(tree, p)
    if who is None:
        return None
    if split == "dev":
        return f"How many children does the tree record for {who}?", len(_children(tree, p)), {"id": p.id}
    grandchildren = {g for c in _children(tree, p) for g in _children(tree, tree.people[c])}
    return f"Count the grandchildren recorded for {who}.", len(grandchildren), {"id": p.id}


def _ask_total(split: str, rng: random.Random, tree: _Tree) -> _Asked:
    if split == "dev":
        place = rng.choice([p.birthplace for p in tree.people if p.died])
        ages = [_age(p) for p in tree.people if p.birthplace == place and p.died]
        if (Fraction(sum(ages), len(ages)) * 10).denominator == 2:
            return None  # a mean on a half: rounding would be a matter of convention
        q = (
            f"What was the average age at death, in completed years, of the people born in {place}? "
            "Round to one decimal place."
        )
        return q, round(sum(ages) / len(ages), 1), {"place": place}
    place = rng.choice(tree.unions).place
    n = sum(len(u.children) for u in tree.unions if u.place == place)
    q = f"Across the families whose marriage took place in {place}, how many children are listed in all?"
    return q, n, {"place": place}


def _ask_top(split: str, rng: random.Random, tree: _Tree) -> _Asked:
    p = rng.choice(tree.people)
    if split == "dev":
        first = p.born.year - rng.randint(0, 15)
        last = first + rng.choice((20, 25, 30))
        best = _leader(Counter(q.birthplace for q in tree.people if first <= q.born.year <= last))
        q = (
            f"Which place saw the most births in the tree from {first} to {last} (both years included)? "
            "Give the place as the tree writes it."
        )
        return None if best is None else (q, best, {"from": first, "to": last})
    year = p.born.year - 1
    best = _leader(Counter(q.surname for q in tree.people if q.born.year > year))
    q = f"Which surname, as the records write it, do the most people born after {year} have?"
    return None if best is None else (q, best, {"after": year})


def _ask_lookup(split: str, rng: random.Random, tree: _Tree) -> _Asked:
    if split == "dev":
        p = rng.choice([q for q in tree.people if q.died])
        who = _who(tree, p)
        return None if who is None else (f"In what year did {who}, die?", p.died.year, {"id": p.id})
    p = rng.choice([q for q in tree.people if q.occupation])
    who = _who(tree, p)
    return None if who is None else (f"What occupation is recorded for {who}?", p.occupation, {"id": p.id})


def _ask_hop(split: str, rng: random.Random, tree: _Tree) -> _Asked:
    p = rng.choice([q for q in tree.people if q.parents is not None])
    mother = tree.people[tree.unions[p.parents].wife]
    who = _who(tree, p)
    if who is None:
        return None
    if split == "dev":
        q = f"Where was the mother of {who}, born? Give the place as the tree writes it."
        return q, mother.birthplace, {"id": p.id}
    return f"What was the birth surname of the mother of {who}?", mother.surname, {"id": p.id}


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup, "hop": _ask_hop}


@family(
    "genealogy",
    "a family tree: a GEDCOM X export as a nested dict (dev) or a GEDCOM 5.5.1 file as a string (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    tree, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    # other people, places and years, then one person's children (dev) or occupation (test)
    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, tree),
        kind,
        "count" if ref.split == "dev" else "lookup",
        nonzero=True,
        hidden=True,
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="nested dict (GEDCOM X JSON)" if ref.split == "dev" else "string (GEDCOM)",
        people=len(tree.people),
    )
