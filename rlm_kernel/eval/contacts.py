"""Questions about an address book: a contacts service's API response, people with their names,
emails, phones, organizations, addresses and groups, as a nested dict (``dev``), or a phone's
exported vCard file as one string (``test``).

What a notebook holds when someone cleans up or mines their contacts: a record a person, with some
fields missing and some repeated (a work and a home email, a mobile and a work phone). People whose
names nearly match another's stand beside each other. Contacts are added until the indented JSON
(or the text) is about the length asked for. Kinds of question:

- ``count``: the contacts at one organization (``dev``), or the cards of one category living in
  one city (``test``);
- ``total``: the phone numbers listed for one organization's (``dev``) or one city's (``test``)
  contacts;
- ``top``: the organization (``dev``) or city (``test``) with the most contacts (a clear leader);
- ``lookup``: one person's mobile number (``dev``) or work email (``test``).

Every answer is computed from the contacts the generator wrote. Score: ``exact``.

Splits: ``dev`` is a ``people.connections.list``-like response (``connections`` of people with
``resourceName``, ``etag``, ``names``, ``emailAddresses``, ``phoneNumbers``, ``organizations``,
``addresses``, ``birthdays`` and ``memberships``); ``test`` is a vCard 3.0 file (``FN``, ``N``,
``ORG``, ``TITLE``, ``EMAIL``, ``TEL`` and ``ADR`` with ``TYPE`` parameters, ``BDAY``,
``CATEGORIES``, ``NOTE``, folded long lines): other containers, fields, people and wording.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_DEV_GIVEN = (
    "Maria",
    "Mariana",
    "Jon",
    "John",
    "Aisha",
    "Ayesha",
    "Kenji",
    "Priya",
    "Tomasz",
    "Elena",
    "Omar",
)
_DEV_FAMILY = ("Schmidt", "Schmitt", "Lopez", "Lopes", "Khan", "Okoro", "Sato", "Müller", "Miller", "Varga")
_DEV_ORGS = ("Northwind Traders", "Northwind Trading", "Contoso Ltd", "Fabrikam", "Tailspin Toys", "Litware")
_DEV_CITIES = ("Berlin", "Hamburg", "Munich", "Leipzig")
_GROUPS = ("friends", "family", "coworkers", "myContacts")
_TEST_GIVEN = ("Sean", "Shaun", "Claire", "Clare", "Rhys", "Niamh", "Ewan", "Isla", "Callum", "Fiona", "Ruth")
_TEST_FAMILY = ("MacLeod", "McLeod", "Campbell", "Stewart", "Stuart", "Fraser", "Murray", "Reid", "Byrne")
_TEST_ORGS = ("Acme Corp", "Globex", "Initech", "Umbrella Health", "Hooli", "Soylent")
_TEST_CITIES = ("Edinburgh", "Glasgow", "Aberdeen", "Dundee", "Inverness", "Stirling")
_CATEGORIES = ("Work", "Family", "Climbing club", "School", "Neighbours")


@dataclass
class Person:
    given: str
    family: str
    org: int | None
    title: str
    city: int | None
    phones: list[tuple[str, str]] = field(default_factory=list)
    emails: list[tuple[str, str]] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    born: date | None = None
    id: str = ""

    @property
    def name(self) -> str:
        return f"{self.given} {self.family}"


def _people(split: str, seed: str, n: int) -> list[Person]:
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    given, family_, orgs, cities = (
        (_DEV_GIVEN, _DEV_FAMILY, _DEV_ORGS, _DEV_CITIES)
        if dev
        else (_TEST_GIVEN, _TEST_FAMILY, _TEST_ORGS, _TEST_CITIES)
    )
    org_weight = [rng.uniform(0.3, 2.0) for _ in orgs]
    city_weight = [rng.uniform(0.3, 2.0) for _ in cities]
    out: list[Person] = []
    seen: set[str] = set()
    while len(out) < n:
        p = Person(rng.choice(given), rng.choice(family_), None, "", None)
        if len(seen) < len(given) * len(family_) - 2:
            if p.name in seen:
                continue
        else:
            p.given = f"{p.given} {chr(65 + len(out) % 26)}."
            if p.name in seen:
                continue
        seen.add(p.name)
        if rng.random() < 0.8:
            p.org = rng.choices(range(len(orgs)), org_weight)[0]
            p.title = rng.choice(("Engineer", "Account Manager", "Director", "Analyst", "Designer", ""))
        if rng.random() < 0.85:
            p.city = rng.choices(range(len(cities)), city_weight)[0]
        _reach(rng, p, dev, orgs)
        p.groups = rng.sample(_GROUPS if dev else _CATEGORIES, rng.randint(1, 2))
        if rng.random() < 0.5:
            p.born = date(1950, 1, 1) + timedelta(days=rng.randrange(365 * 50))
        p.id = f"c{rng.getrandbits(60)}"
        out.append(p)
    return out


def _reach(rng: random.Random, p: Person, dev: bool, orgs: tuple[str, ...]) -> None:
    """A person's phones and emails."""
    prefix = "+49 " if dev else "+44 "
    for kind in ("mobile", "work", "home"):
        if rng.random() < (0.9 if kind == "mobile" else 0.35):
            digits = f"{rng.randrange(100, 999)} {rng.randrange(1000000, 9999999)}"
            p.phones.append((kind, prefix + ("1" if kind == "mobile" else "3") + digits))
    slug = f"{p.given.split()[0].lower()}.{p.family.lower().replace('ü', 'ue')}"
    if p.org is not None:
        domain = orgs[p.org].split()[0].lower() + (".de" if dev else ".co.uk")
        p.emails.append(("work", f"{slug}{rng.choice(('', '', '2'))}@{domain}"))
    if rng.random() < 0.6:
        p.emails.append(
            (
                "home",
                f"{slug}{rng.randrange(10, 99)}@{rng.choice(('gmail.com', 'posteo.de', 'fastmail.com'))}",
            )
        )


# -- the files ----------------------------------------------------------------------------------


def _connections(people: list[Person], seed: str) -> dict:
    rng = random.Random(seed)
    conns = []
    for p in people:
        person: dict = {
            "resourceName": f"people/{p.id}",
            "etag": "%EgU"
            + "".join(
                rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
                for _ in range(16)
            ),
            "names": [
                {
                    "displayName": p.name,
                    "familyName": p.family,
                    "givenName": p.given,
                    "displayNameLastFirst": f"{p.family}, {p.given}",
                }
            ],
        }
        if p.emails:
            person["emailAddresses"] = [
                {"value": v, "type": t, "formattedType": t.title()} for t, v in p.emails
            ]
        if p.phones:
            person["phoneNumbers"] = [
                {"value": v, "canonicalForm": v.replace(" ", ""), "type": t, "formattedType": t.title()}
                for t, v in p.phones
            ]
        if p.org is not None:
            org = {"name": _DEV_ORGS[p.org]}
            if p.title:
                org["title"] = p.title
            person["organizations"] = [org]
        if p.city is not None:
            person["addresses"] = [
                {"type": "home", "city": _DEV_CITIES[p.city], "country": "Germany", "countryCode": "DE"}
            ]
        if p.born:
            person["birthdays"] = [{"date": {"year": p.born.year, "month": p.born.month, "day": p.born.day}}]
        person["memberships"] = [
            {"contactGroupMembership": {"contactGroupResourceName": f"contactGroups/{g}"}} for g in p.groups
        ]
        conns.append(person)
    return {
        "connections": conns,
        "totalPeople": len(conns),
        "totalItems": len(conns),
        "nextSyncToken": seed[2:14],
    }


def _fold(line: str) -> str:
    out = [line[:75]]
    rest = line[75:]
    while rest:
        out.append(" " + rest[:74])
        rest = rest[74:]
    return "\r\n".join(out)


def _vcards(people: list[Person], seed: str) -> str:
    rng = random.Random(seed)
    cards = []
    for p in people:
        lines = ["BEGIN:VCARD", "VERSION:3.0", f"N:{p.family};{p.given};;;", f"FN:{p.name}"]
        if p.org is not None:
            lines.append(f"ORG:{_TEST_ORGS[p.org]}")
            if p.title:
                lines.append(f"TITLE:{p.title}")
        for t, v in p.emails:
            lines.append(f"EMAIL;TYPE=INTERNET,{t.upper()}:{v}")
        for t, v in p.phones:
            lines.append(f"TEL;TYPE={'CELL' if t == 'mobile' else t.upper()},VOICE:{v}")
        if p.city is not None:
            road = rng.choice(("High Street", "Queen Street", "Mill Lane", "Bank Road"))
            street = f"{rng.randrange(1, 140)} {road}"
            lines.append(f"ADR;TYPE=HOME:;;{street};{_TEST_CITIES[p.city]};;;United Kingdom")
        if p.born:
            lines.append(f"BDAY:{p.born}")
        lines.append(f"CATEGORIES:{','.join(p.groups)}")
        if rng.random() < 0.2:
            lines.append(
                "NOTE:Met at the "
                + rng.choice(
                    ("conference in Glasgow", "climbing wall", "school gate", "Aberdeen office party")
                )
                + "; prefers to be reached by email in the mornings\\, not by phone."
            )
        lines += [f"UID:{p.id}", "END:VCARD"]
        cards.append("\r\n".join(_fold(x) for x in lines))
    return "\r\n".join(cards) + "\r\n"


def _fit(split: str, seed: str, chars: int) -> tuple[list[Person], object]:
    per = 700 if split == "dev" else 330
    n = max(8, chars // per)
    for _ in range(6):
        people = _people(split, seed, n)
        context = _connections(people, seed) if split == "dev" else _vcards(people, seed)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(8, round(n * chars / size))
    return people, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _ask_count(split: str, rng: random.Random, people: list[Person]) -> _Asked:
    p = rng.choice(people)
    if split == "dev":
        if p.org is None:
            return None
        n = sum(x.org == p.org for x in people)
        q = f"How many contacts list {_DEV_ORGS[p.org]} as their organization?"
        return q, n, {"org": _DEV_ORGS[p.org]}
    if p.city is None:
        return None
    cat = rng.choice(p.groups)
    n = sum(x.city == p.city and cat in x.groups for x in people)
    q = f"Count the cards in the category {cat} whose home address is in {_TEST_CITIES[p.city]}."
    return q, n, {"category": cat, "city": _TEST_CITIES[p.city]}


def _ask_total(split: str, rng: random.Random, people: list[Person]) -> _Asked:
    p = rng.choice(people)
    if split == "dev":
        if p.org is None:
            return None
        n = sum(len(x.phones) for x in people if x.org == p.org)
        q = f"What is the total number of phone numbers listed across the contacts at {_DEV_ORGS[p.org]}?"
        return q, n, {"org": _DEV_ORGS[p.org]}
    if p.city is None:
        return None
    n = sum(len(x.phones) for x in people if x.city == p.city)
    where = _TEST_CITIES[p.city]
    q = f"Add up the TEL entries of all cards with a home address in {where}: how many are there?"
    return q, n, {"city": _TEST_CITIES[p.city]}


def _ask_top(split: str, rng: random.Random, people: list[Person]) -> _Asked:
    if split == "dev":
        top = _leader({o: sum(x.org == i for x in people) for i, o in enumerate(_DEV_ORGS)})
        q = "Which organization do the most contacts work for?"
        return None if top is None else (q, top, {})
    top = _leader({c: sum(x.city == i for x in people) for i, c in enumerate(_TEST_CITIES)})
    q = "In which city do the most cards have their home address?"
    return None if top is None else (q, top, {})


def _ask_lookup(split: str, rng: random.Random, people: list[Person]) -> _Asked:
    p = rng.choice(people)
    if split == "dev":
        mobile = [v for t, v in p.phones if t == "mobile"]
        if not mobile:
            return None
        q = f"What is {p.name}'s mobile phone number, as written in the contact?"
        return q, mobile[0], {"name": p.name}
    work = [v for t, v in p.emails if t == "work"]
    if not work:
        return None
    q = f"Give the work email address on the card of {p.name}."
    return q, work[0], {"name": p.name}


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "contacts",
    "an address book: a contacts API response as a nested dict (dev), or a vCard file as a string (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    people, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, people), kind, "count", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="nested dict (contacts API)" if ref.split == "dev" else "string (vCard)",
        contacts=len(people),
    )
