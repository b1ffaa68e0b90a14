"""Questions about paginated JSON API responses: the context is a Python list of page dicts.

What ``[requests.get(url).json() for url in pages]`` leaves in a notebook: each page a nested
dict of a few dozen items with links, counts and metadata around them. ``items = max(20, chars //
500)`` (about what an item costs as indented JSON) on pages of 25 (``dev``) or 20 (``test``).
Kinds of question:

- ``deep``: one field deep inside one named item;
- ``count``: how many items across all pages meet a condition on a nested field (some of them
  null);
- ``sum``: a nested number summed over the items that meet a condition;
- ``top``: the owner or manager with the largest total (``dev``: the owner's login is in the item;
  ``test``: the item holds only the manager's id, and the name is in the page's ``included`` list).

Every answer is computed from the items the generator wrote. Score: ``exact``.

Splits: ``dev`` pages list a code host's repositories (``items``, ``stats.stars``,
``license.spdx_id``); ``test`` pages are JSON:API documents of a CRM's accounts (``data``,
``attributes.billing.address.city``, ``relationships.account_manager.data.id``, ``included``): other nesting,
field names and wording.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, asked_task, draw_question, family

__all__ = ["KINDS", "items_for", "make"]

KINDS = ("deep", "count", "sum", "top")

_SYLLABLES = (
    "ka", "lo", "mi", "ren", "tos", "vel", "dra", "pix", "qu", "zen", "bor", "fi", "gal", "hum", "sul",
)  # fmt: skip
_WORDS = (
    "parser", "cache", "router", "sdk", "cli", "lint", "sync", "graph", "store", "auth", "docs", "bench",
    "plugin", "agent", "kit", "proxy", "schema", "queue", "vault", "forms",
)  # fmt: skip
_LICENSES = (("MIT", "MIT License"), ("Apache-2.0", "Apache License 2.0"), ("GPL-3.0", "GNU GPL v3"),
             ("BSD-3-Clause", "BSD 3-Clause"), ("MPL-2.0", "Mozilla Public License 2.0"))  # fmt: skip
_TOPICS = ("python", "rust", "cli", "web", "data", "ml", "devops", "testing", "database", "security")
_LOGINS = (
    "ada-lv", "bmoreno", "chen-w", "dpatel", "eko", "fjord", "gabi-k", "hnaidu", "isko", "jtran", "kmwangi",
)  # fmt: skip

_COMPANIES = ("Northwind", "Bluepeak", "Corvid", "Datum", "Everly", "Fennec", "Granite", "Halcyon", "Ionic",
              "Juniper", "Kestrel", "Lumen", "Meridian", "Nimbus", "Orchard", "Pinnacle", "Quarry", "Redwood",
              "Sable", "Tidewater", "Umbra", "Vantage", "Willow", "Zephyr")  # fmt: skip
_SUFFIXES = (
    "Labs", "Foods", "Logistics", "Health", "Media", "Energy", "Retail", "Systems", "Partners", "Bank",
)  # fmt: skip
_CITIES = (
    ("Lisbon", "PT", "EUR"), ("Porto", "PT", "EUR"), ("Lyon", "FR", "EUR"), ("Ghent", "BE", "EUR"),
    ("Leeds", "GB", "GBP"), ("Cardiff", "GB", "GBP"), ("Austin", "US", "USD"), ("Denver", "US", "USD"),
    ("Oslo", "NO", "NOK"), ("Bergen", "NO", "NOK"), ("Krakow", "PL", "PLN"), ("Toronto", "CA", "CAD"),
)  # fmt: skip
_TIERS = ("free", "starter", "growth", "enterprise")
_MANAGERS = (
    "Marta Silva", "Nils Berg", "Oona Kask", "Pavel Sokol", "Quinn Doyle", "Rosa Lind", "Sami Haddad",
    "Tuva Ness", "Uri Levin",
)  # fmt: skip


def items_for(chars: int) -> int:
    return max(20, chars // 500)


def _names(rng: random.Random, n: int, make) -> list[str]:
    seen: set[str] = set()
    out = []
    while len(out) < n:
        name = make()
        if name not in seen:
            seen.add(name)
            out.append(name)
    return out


def _repos(rng: random.Random, n: int) -> list[dict]:
    weights = [rng.uniform(0.3, 2.0) for _ in _LOGINS]
    start = datetime(2024, 9, 1)
    numbered = n > 1500  # past what the syllables can name
    names = _names(
        rng,
        n,
        lambda: (
            rng.choice(_SYLLABLES)
            + rng.choice(_SYLLABLES)
            + "-"
            + rng.choice(_WORDS)
            + (str(rng.randint(2, 99)) if numbered else "")
        ),
    )
    out = []
    for i, name in enumerate(names):
        login = rng.choices(_LOGINS, weights)[0]
        lic = rng.choices((*_LICENSES, None), (5, 3, 2, 1, 1, 2))[0]
        stars = int(rng.paretovariate(1.2) * 20) - 20 + rng.randint(0, 9)
        out.append(
            {
                "id": 700_000 + i * 37 + rng.randint(0, 30),
                "full_name": f"{login}/{name}",
                "owner": {"login": login, "type": "User", "site_admin": False},
                "description": f"{rng.choice(_WORDS).capitalize()} for {rng.choice(_TOPICS)} projects",
                "stats": {
                    "stars": stars,
                    "forks": stars // rng.randint(3, 12) + rng.randint(0, 3),
                    "watchers": stars // 5 + rng.randint(0, 4),
                    "open_issues": rng.randint(0, 60),
                },
                "license": None if lic is None else {"spdx_id": lic[0], "name": lic[1]},
                "topics": sorted(rng.sample(_TOPICS, rng.randint(0, 3))),
                "default_branch": rng.choice(("main", "main", "master", "develop")),
                "archived": rng.random() < 0.12,
                "pushed_at": (start + timedelta(minutes=rng.randrange(300 * 1440))).isoformat() + "Z",
            }
        )
    return out


def _repo_pages(items: list[dict]) -> list[dict]:
    size, total = 25, len(items)
    pages = []
    for p, at in enumerate(range(0, total, size), 1):
        more = at + size < total
        pages.append(
            {
                "page": p,
                "per_page": size,
                "total_count": total,
                "next": f"https://api.codehost.example/v3/search/repos?page={p + 1}" if more else None,
                "items": items[at : at + size],
            }
        )
    return pages


def _accounts(rng: random.Random, n: int) -> tuple[list[dict], dict[str, str]]:
    managers = {f"usr_{rng.randint(1000, 9999)}{i}": m for i, m in enumerate(_MANAGERS)}
    ids = list(managers)
    weights = [rng.uniform(0.3, 2.0) for _ in ids]
    names = _names(rng, n, lambda: f"{rng.choice(_COMPANIES)} {rng.choice(_SUFFIXES)} {rng.randint(2, 99)}")
    out = []
    for i, name in enumerate(names):
        city, country, currency = rng.choice(_CITIES)
        tier = rng.choices(_TIERS, (3, 4, 3, 2))[0]
        out.append(
            {
                "type": "account",
                "id": f"acc_{i:05d}{rng.randint(10, 99)}",
                "attributes": {
                    "display_name": name,
                    "tier": tier,
                    "seats": rng.randint(1, 12) * (1 + _TIERS.index(tier) * 4),
                    "mrr_cents": rng.randint(0, 900) * 100 * (1 + _TIERS.index(tier)),
                    "billing": {
                        "currency": currency,
                        "address": {
                            "city": city,
                            "country_code": country,
                            "postcode": str(rng.randint(1000, 99999)),
                        },
                        "vat_id": None if rng.random() < 0.4 else f"{country}{rng.randint(10**7, 10**8)}",
                    },
                },
                "relationships": {
                    "account_manager": {"data": {"type": "user", "id": rng.choices(ids, weights)[0]}}
                },
            }
        )
    return out, managers


def _account_pages(items: list[dict], managers: dict[str, str]) -> list[dict]:
    size = 20
    pages = []
    for at in range(0, len(items), size):
        chunk = items[at : at + size]
        owners = sorted({x["relationships"]["account_manager"]["data"]["id"] for x in chunk})
        more = at + size < len(items)
        cursor = f"c{at:06d}"
        pages.append(
            {
                "links": {
                    "self": f"https://crm.example.io/api/accounts?page[cursor]={cursor}",
                    "next": f"https://crm.example.io/api/accounts?page[cursor]=c{at + size:06d}"
                    if more
                    else None,
                },
                "meta": {"page": {"cursor": cursor, "size": size}},
                "data": chunk,
                "included": [{"type": "user", "id": u, "attributes": {"name": managers[u]}} for u in owners],
            }
        )
    return pages


def _ask_dev(kind: str, rng: random.Random, items: list[dict]) -> tuple[str, object, dict] | None:
    if kind == "deep":
        item = rng.choice(items)
        field = rng.choice(("open_issues", "forks", "watchers"))
        words = field.replace("_", " ")
        q = f"How many {words} does the repository {item['full_name']} have (stats.{field})?"
        return q, item["stats"][field], {"full_name": item["full_name"], "field": field}
    if kind == "count":
        spdx = rng.choice(_LICENSES)[0]
        n = sum((x["license"] or {}).get("spdx_id") == spdx and not x["archived"] for x in items)
        q = f"Across all pages, how many repositories that are not archived are licensed {spdx}?"
        return (q, n, {"spdx_id": spdx}) if n else None
    if kind == "sum":
        topic = rng.choice(_TOPICS)
        total = sum(x["stats"]["stars"] for x in items if topic in x["topics"])
        q = f"What is the total number of stars of all repositories tagged with the topic '{topic}'?"
        return (q, total, {"topic": topic}) if total else None
    stars = Counter()
    for x in items:
        stars[x["owner"]["login"]] += x["stats"]["stars"]
    (a, na), (_, nb) = stars.most_common(2)
    if na <= nb:
        return None
    return "Which owner (login) has the most stars summed over their repositories?", a, {}


def _ask_test(kind: str, rng: random.Random, items: list[dict], managers: dict[str, str]):
    if kind == "deep":
        item = rng.choice(items)
        attrs = item["attributes"]
        q = f"In which city is the billing address of the account named '{attrs['display_name']}'?"
        return q, attrs["billing"]["address"]["city"], {"display_name": attrs["display_name"]}
    if kind == "count":
        tier = rng.choice(_TIERS)
        currency = rng.choice(sorted({c[2] for c in _CITIES}))
        n = sum(
            x["attributes"]["tier"] == tier and x["attributes"]["billing"]["currency"] == currency
            for x in items
        )
        q = f"Count the accounts on the '{tier}' tier whose billing currency is {currency}, over every page."
        return (q, n, {"tier": tier, "currency": currency}) if n else None
    if kind == "sum":
        country = rng.choice(sorted({c[1] for c in _CITIES}))
        total = sum(
            x["attributes"]["seats"]
            for x in items
            if x["attributes"]["billing"]["address"]["country_code"] == country
        )
        q = f"Summed over all accounts billed in the country {country}, how many seats are there?"
        return (q, total, {"country_code": country}) if total else None
    mrr = Counter()
    for x in items:
        mrr[managers[x["relationships"]["account_manager"]["data"]["id"]]] += x["attributes"]["mrr_cents"]
    (a, na), (_, nb) = mrr.most_common(2)
    if na <= nb:
        return None
    return "Name the account manager whose accounts add up to the largest mrr_cents.", a, {}


@family(
    "api",
    "paginated JSON API responses as a list of dicts: nested fields, counts across pages (repos in dev)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    n = items_for(ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    if ref.split == "dev":
        items = _repos(rng, n)
        context = _repo_pages(items)

        def ask(k: str):
            return _ask_dev(k, rng, items)
    else:
        items, managers = _accounts(rng, n)
        context = _account_pages(items, managers)

        def ask(k: str):
            return _ask_test(k, rng, items, managers)

    # other parameters, then a deep field, which always exists
    kind, asked = draw_question(ask, kind, "deep")
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="list of pages",
        pages=len(context),
        items=n,
    )
