"""Questions about cloud costs: a company's cloud billing export table, its rows exported as JSON
and loaded as a list of dicts (``dev``), or another company's cost explorer query for a span of
days, its costs grouped by service and by the ``team`` cost allocation tag, as the SDK returns the
response, a nested dict (``test``).

What a notebook holds when someone looks for where a cloud bill went: each hour's usage of each
SKU by each project, its cost, the credits taken off it (sustained and committed use discounts,
the free tier, promotions), its labels and location; or each day's cost and usage of each service
for each team. The billing rows nest the service, SKU, project and usage in records and keep
labels as lists of key and value, with the project's labels apart from the resource's; projects'
ids extend another's (``web-frontend`` and ``web-frontend-staging``). The cost explorer writes the
tag into each group's keys as ``team$value`` (``team$`` for the costs nobody tagged), amounts as
strings with up to ten decimals, lists services that cost nothing that day, marks its last days as
estimated, and names teams and services that extend another's (``search`` and ``search-infra``,
``Amazon Elastic Container Service`` and ``Amazon Elastic Container Service for Kubernetes``).
Rows (or groups) are added until the indented JSON is about the length asked for. Kinds of
question:

- ``count``: one project's rows that carry one kind of credit, or the SKUs of one service one
  project used (``dev``); the days one team's cost of one service came to more than an amount, or
  the services with a cost for one team on one day (``test``);
- ``total``: one project's cost of one service after credits, or the cost before credits of the
  resources with one label (``dev``); one service's cost over all teams in a span of days, or one
  team's cost over the whole response (``test``);
- ``top``: the SKU that cost one project most after credits, or the project that spent most on
  one service (``dev``); the team that spent most on one service, or one team's costliest service
  (``test``) (a clear leader);
- ``lookup``: one SKU's cost in one project in one hour, or its usage in pricing units (``dev``);
  one team's cost of one service on one day, or its usage quantity (``test``).

Every answer is computed from the costs the generator wrote. Score: ``exact``.

Splits: ``dev`` is the rows (``billing_account_id``, ``service`` and ``sku`` with ``id`` and
``description``, ``usage_start_time`` and ``usage_end_time`` as ``YYYY-MM-DD HH:MM:SS UTC``,
``project`` with ``id``, ``number``, ``name``, ``labels`` and ``ancestry_numbers``, ``labels``,
``system_labels``, ``location`` with ``location``, ``country``, ``region`` and ``zone``,
``export_time``, ``cost``, ``currency``, ``currency_conversion_rate``, ``usage`` with ``amount``,
``unit``, ``amount_in_pricing_units`` and ``pricing_unit``, ``credits`` each with ``name``,
``amount``, ``full_name``, ``id`` and ``type``, ``invoice`` with ``month``, ``cost_type``,
``adjustment_info``); ``test`` is the response (``GroupDefinitions``, ``ResultsByTime`` each with
``TimePeriod`` with ``Start`` and ``End``, ``Total``, ``Groups`` each with ``Keys`` (the service
and the tag) and ``Metrics`` with ``UnblendedCost`` and ``UsageQuantity`` each with ``Amount`` and
``Unit``, and ``Estimated``; ``DimensionValueAttributes``; ``ResponseMetadata``): other
containers, fields, clouds and wording.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


# -- the dev billing export ---------------------------------------------------------------------

_SERVICES = {
    "Compute Engine": "6F81-5844-456A",
    "Cloud Storage": "95FF-2EF5-5EA1",
    "BigQuery": "24E6-581D-38E5",
    "Cloud Run": "152E-C115-5142",
    "Cloud SQL": "9662-B51E-5089",
    "Kubernetes Engine": "CCD8-9BF1-090E",
}
_SKUS = (  # service, SKU id, description, usage unit, pricing unit, usage per pricing unit, dollars a unit
    ("Compute Engine", "2E27-4F75-95CD", "N2 Instance Core running in Americas", "seconds", "hour", 3600,
     0.031611),
    ("Compute Engine", "6E8E-7A72-11C8", "N2 Instance Ram running in Americas", "byte-seconds",
     "gibibyte hour",
     3600 * 2**30, 0.004237),
    ("Compute Engine", "039F-D0DA-4055", "Nvidia Tesla T4 GPU running in Americas", "seconds", "hour", 3600,
     0.35),
    ("Compute Engine", "D973-5D65-BAB2", "Storage PD Capacity", "byte-seconds", "gibibyte month",
     2**30 * 3600 * 730, 0.04),
    ("Compute Engine", "9DE9-9092-B3BC", "Network Internet Egress from Americas to Americas", "bytes",
     "gibibyte", 2**30, 0.12),
    ("Cloud Storage", "E5F0-6A5D-7BAD", "Standard Storage US Multi-region", "byte-seconds", "gibibyte month",
     2**30 * 3600 * 730, 0.026),
    ("Cloud Storage", "1BB4-7FDB-62AC", "Multi-Region Standard Class A Operations", "requests",
     "10 thousand requests", 10_000, 0.1),
    ("BigQuery", "3362-E469-6BEF", "Analysis", "bytes", "tebibyte", 2**40, 6.25),
    ("BigQuery", "9DBD-7C2D-E1F2", "Active Logical Storage", "byte-seconds", "gibibyte month",
     2**30 * 3600 * 730, 0.02),
    ("Cloud Run", "8FF3-3B8C-3ED7", "CPU Allocation Time", "seconds", "vCPU-second", 1, 0.000024),
    ("Cloud Run", "F449-33EC-A5F4", "Memory Allocation Time", "byte-seconds", "gibibyte second", 2**30,
     0.0000025),
    ("Cloud SQL", "D385-1A58-1A0C", "Cloud SQL for PostgreSQL: Zonal - vCPU in Americas", "seconds", "hour",
     3600, 0.0413),
    ("Kubernetes Engine", "B38C-6F4A-E0E6", "Autopilot Pod mCPU Requests (us-central1)", "seconds",
     "hour", 3600, 0.0445),
)  # fmt: skip
_PROJECTS = (  # id, name, team, cost centre, services it uses
    ("web-frontend", "Web Frontend", "web", "cc-104",
     ("Cloud Run", "Cloud Storage", "Cloud SQL", "Compute Engine")),
    ("web-frontend-staging", "Web Frontend Staging", "web", "cc-104",
     ("Cloud Run", "Cloud SQL", "Cloud Storage")),
    ("ml-training", "ML Training", "ml", "cc-221", ("Compute Engine", "Cloud Storage", "BigQuery")),
    ("data-warehouse", "Data Warehouse", "data", "cc-310",
     ("BigQuery", "Cloud Storage", "Kubernetes Engine")),
    ("platform-shared", "Platform Shared", "platform", "cc-100",
     ("Kubernetes Engine", "Compute Engine", "Cloud Storage")),
)  # fmt: skip
_APPS = ("ranker", "checkout", "search", "etl", "feature-store", "batch-scorer", "api-gateway")
_ZONES = ("us-central1-a", "us-central1-b", "us-central1-c", "us-east1-b", "us-west1-a")
_CREDIT_NAMES = {
    "SUSTAINED_USAGE_DISCOUNT": "Sustained Usage Discount",
    "COMMITTED_USAGE_DISCOUNT": "Committed use discount: CPU",
    "FREE_TIER": "Free tier",
    "PROMOTION": "Free Trial Credit",
}


@dataclass
class Stream:
    project: int
    sku: int
    zone: str
    labels: list[tuple[str, str]]
    base: float  # pricing units an hour
    chance: float
    credit: str | None


@dataclass
class Row:
    stream: Stream
    hour: datetime
    usage: float  # pricing units
    cost: int  # micro-dollars
    credits: list[tuple[str, int]] = field(default_factory=list)  # type, micro-dollars (negative)

    @property
    def net(self) -> int:
        return self.cost + sum(a for _, a in self.credits)


def _streams(rng: random.Random, n: int) -> list[Stream]:
    out = []
    projects = rng.sample(range(len(_PROJECTS)), rng.randrange(3, len(_PROJECTS) + 1))
    for p in projects:
        for service in _PROJECTS[p][4]:
            skus = [k for k, s in enumerate(_SKUS) if s[0] == service]
            for k in rng.sample(skus, rng.randrange(1, len(skus) + 1)):
                labels = [
                    ("app", rng.choice(_APPS)),
                    ("env", "staging" if "staging" in _PROJECTS[p][0] else "prod"),
                ]
                credit = None
                if service == "Compute Engine" and k < 2:
                    credit = rng.choice(("SUSTAINED_USAGE_DISCOUNT", "COMMITTED_USAGE_DISCOUNT"))
                elif service == "Cloud Run":
                    credit = "FREE_TIER"
                elif rng.random() < 0.25:
                    credit = "PROMOTION"
                out.append(
                    Stream(
                        p,
                        k,
                        rng.choice(_ZONES),
                        labels[: rng.randrange(0, 3)],
                        rng.uniform(0.5, 60),
                        rng.uniform(0.4, 1.0),
                        credit,
                    )
                )
    rng.shuffle(out)
    return out[: max(3, min(len(out), 4 + n // 8))]


def _dev_rows(seed: str, n: int) -> list[Row]:
    rng = random.Random(f"{seed}/{n}")
    hour = datetime(2024, 1, 3) + timedelta(hours=rng.randrange(0, 24 * 250))
    streams = _streams(rng, n)
    rows: list[Row] = []
    while len(rows) < n:
        for s in streams:
            if len(rows) < n and rng.random() < s.chance:
                usage = round(s.base * rng.uniform(0.5, 1.5), 6)
                cost = round(usage * _SKUS[s.sku][6] * 1e6)
                if cost <= 0:
                    continue
                row = Row(s, hour, usage, cost)
                if s.credit and rng.random() < 0.8:
                    share = {"FREE_TIER": 1.0, "PROMOTION": rng.uniform(0.2, 1.0)}.get(
                        s.credit, rng.uniform(0.15, 0.37)
                    )
                    row.credits.append((s.credit, -max(1, round(cost * share))))
                rows.append(row)
        hour += timedelta(hours=1)
    return rows


def _gcp_time(t: datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S} UTC"


def _bill_row(row: Row, account: str, numbers: dict, rng: random.Random) -> dict:
    s = row.stream
    pid, name, team, centre, _ = _PROJECTS[s.project]
    service, sku_id, description, unit, pricing, per, _ = _SKUS[s.sku]
    region = s.zone[:-2]
    exported = row.hour + timedelta(hours=rng.randrange(2, 9), seconds=rng.randrange(3600))
    credits = [
        {
            "name": _CREDIT_NAMES[kind],
            "amount": amount / 1e6,
            "full_name": None,
            "id": numbers[kind],
            "type": kind,
        }
        for kind, amount in row.credits
    ]
    system = []
    if service == "Compute Engine" and row.stream.sku < 3:
        system = [
            {"key": "compute.googleapis.com/machine_spec", "value": "n2-standard-8"},
            {"key": "compute.googleapis.com/cores", "value": "8"},
        ]
    return {
        "billing_account_id": account,
        "service": {"id": _SERVICES[service], "description": service},
        "sku": {"id": sku_id, "description": description},
        "usage_start_time": _gcp_time(row.hour),
        "usage_end_time": _gcp_time(row.hour + timedelta(hours=1)),
        "project": {
            "id": pid,
            "number": numbers[pid],
            "name": name,
            "labels": [{"key": "team", "value": team}, {"key": "cost-center", "value": centre}],
            "ancestry_numbers": f"/{numbers['']}/{numbers[team]}/",
        },
        "labels": [{"key": k, "value": v} for k, v in s.labels],
        "system_labels": system,
        "location": {
            "location": region,
            "country": "US",
            "region": region,
            "zone": s.zone if service in ("Compute Engine", "Cloud SQL") else None,
        },
        "tags": [],
        "export_time": f"{exported:%Y-%m-%d %H:%M:%S}.{rng.randrange(10**6):06d} UTC",
        "cost": row.cost / 1e6,
        "currency": "USD",
        "currency_conversion_rate": 1.0,
        "usage": {
            "amount": round(row.usage * per, 2) if per > 1 else row.usage,
            "unit": unit,
            "amount_in_pricing_units": row.usage,
            "pricing_unit": pricing,
        },
        "credits": credits,
        "invoice": {"month": f"{row.hour:%Y%m}"},
        "cost_type": "regular",
        "adjustment_info": None,
    }


def _bill_rows(rows: list[Row], seed: str) -> list[dict]:
    rng = random.Random(seed)
    account = f"01{rng.randrange(16**4):04X}-{rng.randrange(16**6):06X}-{rng.randrange(16**6):06X}"
    numbers = {p[0]: str(rng.randrange(10**11, 10**12)) for p in _PROJECTS}
    numbers.update({t: str(rng.randrange(10**11, 10**12)) for t in ("", "web", "ml", "data", "platform")})
    numbers.update({kind: "" for kind in ("SUSTAINED_USAGE_DISCOUNT", "FREE_TIER")})
    numbers.update(
        {kind: str(rng.randrange(10**18, 10**19)) for kind in ("COMMITTED_USAGE_DISCOUNT", "PROMOTION")}
    )
    out = [_bill_row(row, account, numbers, rng) for row in rows]
    return out


# -- the test cost explorer response ------------------------------------------------------------

_AWS_SERVICES = (  # service, dollars a day, usage a dollar, weight
    ("Amazon Elastic Compute Cloud - Compute", 140.0, 11.0, 3.0),
    ("EC2 - Other", 22.0, 40.0, 2.0),
    ("Amazon Simple Storage Service", 18.0, 900.0, 2.5),
    ("Amazon Relational Database Service", 55.0, 6.0, 1.5),
    ("AWS Lambda", 4.0, 250_000.0, 1.6),
    ("Amazon DynamoDB", 9.0, 3000.0, 1.0),
    ("AmazonCloudWatch", 6.0, 30.0, 2.0),
    ("Amazon Elastic Container Service", 30.0, 20.0, 0.9),
    ("Amazon Elastic Container Service for Kubernetes", 24.0, 10.0, 0.8),
    ("Amazon Virtual Private Cloud", 7.5, 60.0, 1.2),
    ("AWS Key Management Service", 1.2, 4000.0, 0.8),
    ("Tax", 0.0, 0.0, 0.0),
)
_TEAMS = ("payments", "search", "search-infra", "identity", "data-platform", "mobile")
_TEN = 10**10  # amounts are kept in ten-billionths of a dollar


@dataclass
class Cost:
    day: date
    team: str  # the tag's value; "" untagged
    service: int
    amount: int  # ten-billionths of a dollar
    usage: str


def _amount(units: int) -> str:
    whole, frac = divmod(units, _TEN)
    text = f"{whole}.{frac:010d}".rstrip("0").rstrip(".")
    return text or "0"


def _test_costs(seed: str, n: int) -> tuple[list[Cost], list[str], date, int]:
    """About ``n`` groups: a few days of the costs of some teams' services (and the untagged ones),
    more of both as ``n`` grows."""
    rng = random.Random(f"{seed}/{n}")
    days = max(1, min(60, round((n / 4) ** 0.5 * 1.2)))
    per_day = max(2, round(n / days))
    start = date(2024, 1, 1) + timedelta(days=rng.randrange(0, 280))
    teams = rng.sample(_TEAMS, min(len(_TEAMS), max(2, per_day // 5)))
    if "search" in teams and "search-infra" not in teams:
        teams[-1 if teams[-1] != "search" else 0] = "search-infra"
    teams.append("")
    pairs = [(t, s) for t in teams for s in range(len(_AWS_SERVICES))]
    weights = [_AWS_SERVICES[s][3] + 0.3 for _, s in pairs]
    chosen: dict[tuple[str, int], float] = {}
    while len(chosen) < min(per_day, len(pairs)):
        chosen[rng.choices(pairs, weights)[0]] = rng.uniform(0.2, 1.8)
    out = []
    for d in range(days):
        day = start + timedelta(days=d)
        for (team, s), scale in chosen.items():
            _, dollars, per_dollar, _ = _AWS_SERVICES[s]
            if not dollars or rng.random() < 0.06:
                out.append(Cost(day, team, s, 0, "0"))
                continue
            units = round(dollars * scale * rng.uniform(0.6, 1.4) * _TEN)
            usage = f"{units / _TEN * per_dollar * rng.uniform(0.9, 1.1):.10f}".rstrip("0").rstrip(".")
            out.append(Cost(day, team, s, units, usage))
    return out, teams, start, days


def _response(costs: list[Cost], teams: list[str], start: date, days: int, seed: str) -> dict:
    rng = random.Random(seed)
    by_day: dict[date, list[Cost]] = {}
    for c in costs:
        by_day.setdefault(c.day, []).append(c)
    results = []
    for d in range(days):
        day = start + timedelta(days=d)
        groups = [
            {
                "Keys": [_AWS_SERVICES[c.service][0], f"team${c.team}"],
                "Metrics": {
                    "UnblendedCost": {"Amount": _amount(c.amount), "Unit": "USD"},
                    "UsageQuantity": {"Amount": c.usage, "Unit": "N/A"},
                },
            }
            for c in sorted(by_day.get(day, []), key=lambda c: (_AWS_SERVICES[c.service][0], c.team))
        ]
        results.append(
            {
                "TimePeriod": {"Start": day.isoformat(), "End": (day + timedelta(days=1)).isoformat()},
                "Total": {},
                "Groups": groups,
                "Estimated": d >= days - 2,
            }
        )
    request = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    sent = datetime.combine(start + timedelta(days=days), datetime.min.time()) + timedelta(
        hours=9, seconds=rng.randrange(3600)
    )
    return {
        "GroupDefinitions": [{"Type": "DIMENSION", "Key": "SERVICE"}, {"Type": "TAG", "Key": "team"}],
        "ResultsByTime": results,
        "DimensionValueAttributes": [],
        "ResponseMetadata": {
            "RequestId": request,
            "HTTPStatusCode": 200,
            "HTTPHeaders": {
                "date": f"{sent:%a, %d %b %Y %H:%M:%S} GMT",
                "content-type": "application/x-amz-json-1.1",
                "content-length": str(rng.randrange(20_000, 900_000)),
                "connection": "keep-alive",
                "x-amzn-requestid": request,
                "cache-control": "no-cache",
            },
            "RetryAttempts": 0,
        },
    }


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    """The rows (or days) nearest the size asked for, of a few tries."""
    per = 1250 if split == "dev" else 310
    n = max(3 if split == "dev" else 1, chars // per)
    best: tuple[float, object, object, int] | None = None
    for _ in range(8):
        if split == "dev":
            data: object = _dev_rows(seed, n)
            context: object = _bill_rows(data, seed)
        else:
            data = _test_costs(seed, n)
            context = _response(*data, seed)
        size = len(as_text(context))
        miss = abs(size - chars) / chars
        if best is None or miss < best[0]:
            best = (miss, data, context, n)
        if 0.9 * chars <= size <= 1.1 * chars:
            break
        n = max(1, round(n * chars / size))
    assert best is not None
    return best[1], best[2], best[3]


# -- questions ----------------------------------------------------------------------------------


def _dollars(units: int, scale: int = 10**6) -> float | None:
    """Two decimals of dollars from whole millionths (or ``scale``-ths), or None on a rounding tie."""
    cents, rest = divmod(units * 100, scale)
    if rest * 2 == scale:
        return None
    return (cents + (rest * 2 > scale)) / 100


def _dev_count(rng: random.Random, rows: list[Row]) -> _Asked:
    row = rng.choice(rows)
    pid = _PROJECTS[row.stream.project][0]
    if rng.random() < 0.5:
        credited = [r for r in rows if r.credits]
        if not credited:
            return None
        r = rng.choice(credited)
        pid, kind = _PROJECTS[r.stream.project][0], r.credits[0][0]
        n = sum(_PROJECTS[x.stream.project][0] == pid and any(k == kind for k, _ in x.credits) for x in rows)
        q = f"How many billing rows of project {pid} carry a credit of type {kind}?"
        return q, n, {"project": pid, "credit": kind}
    service = _SKUS[row.stream.sku][0]
    n = len(
        {
            x.stream.sku
            for x in rows
            if x.stream.project == row.stream.project and _SKUS[x.stream.sku][0] == service
        }
    )
    q = f"How many different {service} SKUs did project {pid} use in this export?"
    return q, n, {"project": pid, "service": service}


def _dev_total(rng: random.Random, rows: list[Row]) -> _Asked:
    row = rng.choice(rows)
    if rng.random() < 0.5 or not row.stream.labels:
        pid = _PROJECTS[row.stream.project][0]
        service = _SKUS[row.stream.sku][0]
        net = sum(
            x.net
            for x in rows
            if x.stream.project == row.stream.project and _SKUS[x.stream.sku][0] == service
        )
        total = _dollars(net)
        q = (
            f"What did {service} cost project {pid} after credits (cost plus the credits' amounts), in USD? "
            "Two decimals."
        )
        return None if total is None or total <= 0 else (q, total, {"project": pid, "service": service})
    key, value = rng.choice(row.stream.labels)
    gross = sum(x.cost for x in rows if (key, value) in x.stream.labels)
    total = _dollars(gross)
    q = (
        f"What is the cost before credits of the rows whose resource label {key} is {value}, in USD? "
        "Two decimals."
    )
    return None if total is None else (q, total, {"label": key, "value": value})


def _dev_top(rng: random.Random, rows: list[Row]) -> _Asked:
    row = rng.choice(rows)
    if rng.random() < 0.5:
        pid = _PROJECTS[row.stream.project][0]
        totals: Counter = Counter()
        for x in rows:
            if x.stream.project == row.stream.project:
                totals[_SKUS[x.stream.sku][2]] += x.net
        top = _leader(totals)
        q = f"Which SKU cost project {pid} the most after credits? Give its description."
        return None if top is None else (q, top, {"project": pid, "by": "sku"})
    service = _SKUS[row.stream.sku][0]
    totals = Counter()
    for x in rows:
        if _SKUS[x.stream.sku][0] == service:
            totals[_PROJECTS[x.stream.project][0]] += x.cost
    top = _leader(totals)
    q = f"Which project id spent the most on {service}, before credits?"
    return None if top is None else (q, top, {"service": service, "by": "project"})


def _dev_lookup(rng: random.Random, rows: list[Row]) -> _Asked:
    row = rng.choice(rows)
    pid = _PROJECTS[row.stream.project][0]
    description = _SKUS[row.stream.sku][2]
    same = [
        x
        for x in rows
        if x.stream.project == row.stream.project and x.stream.sku == row.stream.sku and x.hour == row.hour
    ]
    if len(same) > 1:
        return None
    params = {"project": pid, "sku": description, "hour": _gcp_time(row.hour)}
    if rng.random() < 0.5:
        q = (
            f'What was the cost (before credits) of the SKU "{description}" in project {pid} for the hour '
            f"starting {_gcp_time(row.hour)}?"
        )
        return q, row.cost / 1e6, {**params, "field": "cost"}
    q = (
        f'How much usage, in pricing units, did project {pid} bill for the SKU "{description}" in the hour '
        f"from {_gcp_time(row.hour)}?"
    )
    return q, row.usage, {**params, "field": "amount_in_pricing_units"}


def _tagged(costs: list[Cost], rng: random.Random) -> Cost:
    return rng.choice([c for c in costs if c.amount and c.team] or [c for c in costs if c.team])


def _test_count(rng: random.Random, data: tuple) -> _Asked:
    costs, *_ = data
    c = _tagged(costs, rng)
    service = _AWS_SERVICES[c.service][0]
    if rng.random() < 0.5 and c.amount:
        mine = sorted(x.amount for x in costs if x.team == c.team and x.service == c.service)
        over = round(mine[len(mine) // 2] / _TEN * rng.uniform(0.8, 1.1))
        n = sum(x.team == c.team and x.service == c.service and x.amount > over * _TEN for x in costs)
        q = f"Count the days on which the costs tagged team {c.team} came to more than ${over} on {service}."
        return q, n, {"team": c.team, "service": service, "over": over}
    n = sum(x.team == c.team and x.day == c.day and x.amount > 0 for x in costs)
    q = f"Tally the services with a non-zero UnblendedCost tagged team {c.team} on {c.day:%d %b %Y}."
    return q, n, {"team": c.team, "day": c.day.isoformat()}


def _test_total(rng: random.Random, data: tuple) -> _Asked:
    costs, _, start, days = data
    c = _tagged(costs, rng)
    if rng.random() < 0.5:
        first = start + timedelta(days=rng.randrange(0, days))
        last = min(start + timedelta(days=days - 1), first + timedelta(days=rng.randrange(0, 10)))
        service = _AWS_SERVICES[c.service][0]
        units = sum(x.amount for x in costs if x.service == c.service and first <= x.day <= last)
        total = _dollars(units, _TEN)
        q = (
            f"Add up the UnblendedCost of {service} over every team, untagged costs included, from "
            f"{first:%d %b %Y} to {last:%d %b %Y}, in USD to two decimals."
        )
        params = {"service": service, "from": first.isoformat(), "to": last.isoformat()}
        return None if not total else (q, total, params)
    total = _dollars(sum(x.amount for x in costs if x.team == c.team), _TEN)
    q = f"Sum the UnblendedCost tagged team {c.team} over all the days and services (USD, two decimals)."
    return None if not total else (q, total, {"team": c.team})


def _test_top(rng: random.Random, data: tuple) -> _Asked:
    costs, *_ = data
    c = _tagged(costs, rng)
    totals: Counter = Counter()
    if rng.random() < 0.5:
        service = _AWS_SERVICES[c.service][0]
        for x in costs:
            if x.service == c.service and x.team:
                totals[x.team] += x.amount
        top = _leader(totals)
        q = f"Find the team, by its tag value, whose {service} costs came to the most over the response."
        return None if top is None else (q, top, {"service": service, "by": "team"})
    for x in costs:
        if x.team == c.team:
            totals[_AWS_SERVICES[x.service][0]] += x.amount
    top = _leader(totals)
    q = f"Name the service with the largest UnblendedCost in all among the costs tagged team {c.team}."
    return None if top is None else (q, top, {"team": c.team, "by": "service"})


def _test_lookup(rng: random.Random, data: tuple) -> _Asked:
    costs, *_ = data
    c = _tagged(costs, rng)
    service = _AWS_SERVICES[c.service][0]
    params = {"team": c.team, "service": service, "day": c.day.isoformat()}
    if rng.random() < 0.5 or not c.amount:
        total = _dollars(c.amount, _TEN)
        q = f"Give the UnblendedCost of {service} tagged team {c.team} on {c.day:%d %b %Y}, to the cent."
        return None if not total else (q, total, {**params, "field": "UnblendedCost"})
    q = f"Report the UsageQuantity of {service} tagged team {c.team} on {c.day:%d %b %Y}."
    return q, float(c.usage), {**params, "field": "UsageQuantity"}


_DEV = {"count": _dev_count, "total": _dev_total, "top": _dev_top, "lookup": _dev_lookup}
_TEST = {"count": _test_count, "total": _test_total, "top": _test_top, "lookup": _test_lookup}


@family(
    "cloudcost",
    "cloud costs: a billing export's rows as a list of dicts (dev), or a cost explorer response grouped by "
    "service and team tag as a nested dict (test)",
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
        container="list of dicts (billing export rows)"
        if ref.split == "dev"
        else "nested dict (cost explorer response)",
        **({"rows": count} if ref.split == "dev" else {"groups": count}),
    )
