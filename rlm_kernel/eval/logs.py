"""Questions about application logs: the context is one string, a log line a line.

A notebook user pastes or reads a service's log and asks about it. ``lines = max(60, chars //
110)`` (about what a line costs), over a day in ``dev`` and two in ``test``, in time order. A
tenth of the lines are errors, each with an error code of its service and a request (``dev``)
or trace (``test``) id of its own. Kinds of question:

- ``window``: how many error lines one service logged in a time window (from its start,
  inclusive, to its end, exclusive);
- ``first``: the request or trace id of the first line that carries an error code;
- ``top``: the service (``dev``) or host (``test``) with the most warnings (a clear leader);
- ``distinct``: how many different error codes one service logged.

Every answer is counted from the lines the generator wrote. Score: ``exact`` (numbers as numbers,
ids without case).

Splits: ``dev`` is a web shop's backend in ISO-timestamped lines (``2024-03-14T09:12:33.481Z ERROR
checkout [req=7f3a9c21] code=E2041 ...``); ``test`` is a data pipeline in syslog lines with
logfmt fields (``Jun 03 14:05:11 node-7 ingest[2211]: level=error trace=0x9a3f21 err=ING-404
msg="..."``): other services, codes, ids, levels and wording.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, asked_task, draw_question, family

__all__ = ["KINDS", "lines_for", "make"]

KINDS = ("window", "first", "top", "distinct")

_DEV_SERVICES = (
    "api-gateway", "checkout", "payments", "inventory", "search", "auth", "mailer", "recommender",
)  # fmt: skip
_TEST_SERVICES = ("ingest", "scheduler", "exporter", "ledger", "notifier", "tiler", "dedupe")
_HOSTS = tuple(f"node-{i}" for i in range(1, 10))

_DEV_MESSAGES = {
    "DEBUG": ("cache lookup key={k} hit={b}", "pool stats active={n} idle={m}", "feature flag {k} evaluated"),
    "INFO": ("GET /api/v2/items/{n} 200 in {m}ms", "order {n} created", "user {n} signed in",
             "POST /api/v2/cart 201 in {m}ms", "reindexed {n} documents in {m}ms"),
    "WARN": ("slow query took {m}ms on table {k}", "retrying upstream call (attempt {a})",
             "rate limit at {n}% for client {k}", "deprecated endpoint /api/v1/{k} called"),
    "ERROR": ("payment authorisation failed for order {n}", "upstream timed out after {m}ms",
              "could not reserve stock for sku {n}", "template {k} failed to render",
              "token signature invalid for user {n}"),
}  # fmt: skip
_TEST_MESSAGES = {
    "debug": ("offset committed partition={a} offset={n}", "heartbeat ok lag={m}"),
    "info": ("batch {n} accepted rows={m}", "job {k} finished in {m}s", "exported {n} tiles to bucket {k}",
             "schedule tick jobs={a}"),
    "warning": ("consumer lag {m} above soft limit", "disk usage {a}0% on /var/lib/{k}",
                "late record dropped window={k}", "schema field {k} is deprecated"),
    "error": ("batch rejected: schema mismatch on field {k}", "write to ledger failed after {a} retries",
              "could not reach broker {k}:9092", "duplicate key {n} in partition {a}"),
}  # fmt: skip
_WORDS = ("orders", "sessions", "stock", "users", "tiles", "events", "reports", "carts", "invoices")


@dataclass(frozen=True)
class Line:
    when: datetime
    level: str  # "error", "warning", "info" or "debug" in both splits (written the split's way)
    service: str
    host: str
    ident: str  # the request or trace id
    code: str | None
    text: str


def lines_for(chars: int) -> int:
    return max(60, chars // 110)


def _codes(split: str, services: tuple[str, ...], rng: random.Random) -> dict[str, list[str]]:
    out = {}
    for i, s in enumerate(services):
        if split == "dev":
            base = 1000 * (i + 1) + 40
            out[s] = [f"E{base + j}" for j in rng.sample(range(1, 60), rng.randint(3, 7))]
        else:
            prefix = s[:3].upper()
            out[s] = [f"{prefix}-{n}" for n in rng.sample(range(400, 520), rng.randint(3, 7))]
    return out


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        k=rng.choice(_WORDS),
        n=rng.randint(100, 99999),
        m=rng.randint(2, 9000),
        a=rng.randint(1, 9),
        b=rng.choice(("true", "false")),
    )


def _lines(split: str, rng: random.Random, n: int) -> list[Line]:
    services = _DEV_SERVICES if split == "dev" else _TEST_SERVICES
    codes = _codes(split, services, rng)
    weights = [rng.uniform(0.4, 2.0) for _ in services]
    host_weights = [rng.uniform(0.4, 2.0) for _ in _HOSTS]
    start = datetime(2024, 3, 14) if split == "dev" else datetime(2025, 6, 3)
    span = 86400 if split == "dev" else 2 * 86400
    seconds = sorted(rng.uniform(0, span) for _ in range(n))
    idents: set[str] = set()
    lines = []
    for s in seconds:
        level = rng.choices(("debug", "info", "warning", "error"), (2, 11, 3, 2))[0]
        service = rng.choices(services, weights)[0]
        ident = ""
        while not ident or ident in idents:
            ident = f"{rng.getrandbits(32):08x}" if split == "dev" else f"0x{rng.getrandbits(24):06x}"
        idents.add(ident)
        table = _DEV_MESSAGES if split == "dev" else _TEST_MESSAGES
        key = (
            {"warning": "WARN", "error": "ERROR", "info": "INFO", "debug": "DEBUG"}[level]
            if split == "dev"
            else level
        )
        lines.append(
            Line(
                when=start + timedelta(seconds=s),
                level=level,
                service=service,
                host=rng.choices(_HOSTS, host_weights)[0],
                ident=ident,
                code=rng.choice(codes[service]) if level == "error" else None,
                text=_fill(rng.choice(table[key]), rng),
            )
        )
    return lines


def _render(split: str, line: Line, pids: dict[str, int]) -> str:
    if split == "dev":
        level = {"warning": "WARN", "error": "ERROR", "info": "INFO", "debug": "DEBUG"}[line.level]
        stamp = line.when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{line.when.microsecond // 1000:03d}Z"
        code = f" code={line.code}" if line.code else ""
        return f"{stamp} {level:5} {line.service} [req={line.ident}]{code} {line.text}"
    err = f" err={line.code}" if line.code else ""
    return (
        f"{line.when:%b %d %H:%M:%S} {line.host} {line.service}[{pids[line.service]}]: "
        f'level={line.level} trace={line.ident}{err} msg="{line.text}"'
    )


def _clock(split: str, when: datetime) -> str:
    return f"{when:%H:%M}" if split == "dev" else f"{when:%H:%M} on {when:%b %d}"


def _ask(kind: str, split: str, rng: random.Random, lines: list[Line]) -> tuple[str, object, dict] | None:
    """(question, answer, parameters), or None when the data give this kind no clear answer."""
    services = sorted({x.service for x in lines})
    service = rng.choice(services)
    errors = [x for x in lines if x.level == "error"]
    if kind == "window":
        first, last = lines[0].when, lines[-1].when
        hours = rng.choice((1, 2, 3, 4, 6))
        start = first.replace(minute=0, second=0, microsecond=0) + timedelta(
            hours=rng.randrange(max(1, int((last - first).total_seconds() // 3600) - hours))
        )
        end = start + timedelta(hours=hours)
        n = sum(x.service == service and start <= x.when < end for x in errors)
        params = {"service": service, "start": start.isoformat(), "end": end.isoformat()}
        if split == "dev":
            q = (
                f"How many ERROR lines did the {service} service log from {_clock(split, start)} "
                f"(inclusive) to {_clock(split, end)} (exclusive)?"
            )
        else:
            q = (
                f"Count the error-level entries written by {service} between {_clock(split, start)} "
                f"and {_clock(split, end)} (the start included, the end not)."
            )
        return (q, n, params) if n else None
    if kind == "first":
        counts = Counter(x.code for x in errors)
        code = rng.choice(sorted(counts))
        line = next(x for x in lines if x.code == code)
        if split == "dev":
            q = f"What is the request id (req=...) of the first line that logs error code {code}?"
        else:
            q = f"Give the trace id of the earliest entry with err={code}."
        return q, line.ident, {"code": code}
    if kind == "top":
        field = "service" if split == "dev" else "host"
        (a, na), (_, nb) = Counter(getattr(x, field) for x in lines if x.level == "warning").most_common(2)
        if na <= nb:
            return None
        if split == "dev":
            return "Which service logged the most WARN lines?", a, {"field": field}
        return "On which host were the most warning-level entries written?", a, {"field": field}
    n = len({x.code for x in errors if x.service == service})
    if split == "dev":
        q = f"How many different error codes (code=...) appear on the {service} service's ERROR lines?"
    else:
        q = f"Across the whole log, {service} reported how many distinct err= codes?"
    return (q, n, {"service": service}) if n else None


@family(
    "logs", "application logs as one text: errors in a time window, first code, top service (shop in dev)"
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    lines = _lines(ref.split, rng, lines_for(ref.chars))
    pids = {s: rng.randint(300, 32000) for s in sorted({x.service for x in lines})}  # not in hash order
    kind = KINDS[ref.index % len(KINDS)]
    # other parameters, then the id of a first code, which always exists
    kind, asked = draw_question(lambda kind_: _ask(kind_, ref.split, rng, lines), kind, "first")
    context = "\n".join(_render(ref.split, x, pids) for x in lines) + "\n"
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="str",
        lines=len(lines),
    )
