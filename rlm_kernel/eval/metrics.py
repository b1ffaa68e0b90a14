"""Questions about service metrics: a Prometheus HTTP API instant query's response as a nested dict
(``dev``), or a Prometheus federation endpoint's output in the text exposition format as one string
(``test``).

What a notebook holds when someone checks on a few services at one moment: every scrape target's
series (whether it is up, its memory, threads or goroutines, and its request counters by endpoint,
method and status code), each with its labels and one value. A target that is down has only its
``up`` series. Jobs and endpoints whose names extend another's stand beside each other
(``checkout`` and ``checkout-worker``, ``/api/orders`` and ``/api/orders/{id}``). Targets are
added until the indented JSON (or the text) is about the length asked for. Kinds of question:

- ``count``: one job's request series with a 5xx code (``dev``), or the instances of one job with
  at least a number of live threads (``test``);
- ``total``: the requests one job's targets served on one handler (``dev``), or on one URI with
  one status (``test``);
- ``top``: the instance with the most resident memory (``dev``), or one job's URI with the most
  time spent in requests (``test``) (a clear leader);
- ``lookup``: one instance's goroutines (``dev``), or one pod's old-generation heap in bytes
  (``test``).

Every answer is computed from the series the generator wrote. Score: ``exact``.

Splits: ``dev`` is ``{"status": "success", "data": {"resultType": "vector", "result": [...]}}``
with each series' ``metric`` labels (``__name__``, ``job``, ``instance``, ``handler``, ``code``,
``method``) and its ``value`` as ``[unix time, "value as text"]``, in no particular order;
``test`` is the exposition text (``# TYPE`` lines, series sorted by name and labels, values as
Go writes floats, ``1.234567e+06`` from a million up, and a millisecond timestamp on each line,
labels ``application``, ``exception``, ``instance``, ``job``, ``method``, ``outcome``, ``pod``,
``status``, ``uri``, ``area``, ``id``): other containers, fields, services and wording.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from decimal import Decimal

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_DEV_JOBS = (  # job, handlers with their method
    ("checkout", (("/api/v1/cart", "GET"), ("/api/v1/cart/items", "POST"), ("/api/v1/checkout", "POST"),
                  ("/healthz", "GET"))),
    ("checkout-worker", (("/jobs/run", "POST"), ("/healthz", "GET"))),
    ("catalog", (("/api/v1/products", "GET"), ("/api/v1/products/{id}", "GET"), ("/api/v1/search", "GET"),
                 ("/healthz", "GET"))),
    ("payments", (("/api/v1/payments", "POST"), ("/api/v1/payments/{id}/capture", "POST"),
                  ("/api/v1/refunds", "POST"), ("/healthz", "GET"))),
)  # fmt: skip
_DEV_CODES = ("200", "201", "400", "404", "429", "500", "502", "503")
_TEST_JOBS = (  # job, URIs with their method
    ("order-service", (("/api/orders", "GET"), ("/api/orders", "POST"), ("/api/orders/{id}", "GET"),
                       ("/api/orders/{id}/items", "GET"), ("/actuator/health", "GET"))),
    ("order-service-batch", (("/batch/jobs", "POST"), ("/actuator/health", "GET"))),
    ("inventory-service", (("/api/stock", "GET"), ("/api/stock/{sku}", "GET"), ("/api/stock/reserve", "POST"),
                           ("/actuator/health", "GET"))),
    ("billing-service", (("/api/invoices", "GET"), ("/api/invoices/{id}", "GET"),
                         ("/api/invoices/{id}/pdf", "GET"), ("/actuator/health", "GET"))),
)  # fmt: skip
_TEST_STATUSES = (("200", "SUCCESS"), ("201", "SUCCESS"), ("400", "CLIENT_ERROR"), ("404", "CLIENT_ERROR"),
                  ("500", "SERVER_ERROR"), ("503", "SERVER_ERROR"))  # fmt: skip
_POOLS = ("G1 Eden Space", "G1 Old Gen", "Metaspace")
_POD = "bcdfghjklmnpqrstvwxz2456789"  # the letters of a pod name's suffix
_NOW = 1_733_391_000.781  # the moment queried or federated, Unix seconds


@dataclass
class Target:
    job: int
    instance: str
    pod: str
    up: bool
    memory: int  # resident bytes (dev)
    goroutines: int  # goroutines (dev), live threads (test)
    cpu: float  # CPU seconds (dev), usage (test)
    pools: dict[str, int] = field(default_factory=dict)  # test: bytes used by memory pool
    requests: dict[tuple[int, str], int] = field(default_factory=dict)  # (endpoint, code) -> count
    seconds: dict[tuple[int, str], float] = field(default_factory=dict)  # test: time spent


def _profile(rng: random.Random, jobs: tuple) -> tuple[dict, dict]:
    """How busy each endpoint is, and its seconds a request: health checks are quick, batch jobs
    slow, and both are called less than the API."""
    busy, latency = {}, {}
    for j, (_, ends) in enumerate(jobs):
        for e, (path, _) in enumerate(ends):
            slow, quick = path.startswith(("/jobs", "/batch")), path.endswith(("health", "healthz"))
            busy[j, e] = rng.uniform(0.02, 0.1) if slow or quick else rng.uniform(0.05, 3.0)
            if slow:
                latency[j, e] = rng.uniform(1.5, 20.0)
            else:
                latency[j, e] = rng.uniform(0.001, 0.003) if quick else rng.uniform(0.01, 0.35)
    return busy, latency


def _traffic(
    rng: random.Random, t: Target, ends: tuple, busy: float, latency: float, e: int, dev: bool
) -> None:
    """One endpoint's requests by status code: always successes, some client and server errors."""
    path, method = ends[e]
    scale = busy * rng.uniform(0.6, 1.4)
    for k, code in enumerate(_DEV_CODES if dev else [s for s, _ in _TEST_STATUSES]):
        ok = k == 0 or (code == "201" and method == "POST")
        if (code == "201" and not ok) or (path.endswith(("health", "healthz")) and code[0] == "4"):
            continue
        if not ok and rng.random() > (0.35 if code[0] == "4" else 0.25):
            continue
        count = round(scale * (rng.uniform(40_000, 2_500_000) if ok else rng.uniform(1, 600)))
        if count:
            t.requests[e, code] = count
            t.seconds[e, code] = round(count * latency * rng.uniform(0.7, 1.3), 6)


def _targets(split: str, seed: str, n: int) -> list[Target]:
    """``n`` targets; fewer are the first of more (the seed does not depend on ``n``)."""
    rng = random.Random(seed)
    dev = split == "dev"
    jobs = _DEV_JOBS if dev else _TEST_JOBS
    weight = [rng.uniform(0.5, 2.0) for _ in jobs]
    busy, latency = _profile(rng, jobs)
    used: set[str] = set()
    out: list[Target] = []
    while len(out) < n:
        j = rng.choices(range(len(jobs)), weight)[0] if len(out) >= len(jobs) else len(out)
        name, ends = jobs[j]
        instance = ""
        while not instance or instance in used:
            host = f"10.{0 if dev else 244}.{rng.randint(1, 9)}.{rng.randint(2, 254)}"
            instance = f"{host}:{8080 if dev else 8081}"
        used.add(instance)
        pod = f"{name}-{rng.getrandbits(36):09x}-{''.join(rng.choice(_POD) for _ in range(5))}"
        t = Target(j, instance, pod, rng.random() > 0.06 or len(out) < len(jobs), 0, 0, 0.0)
        if dev:
            t.memory = rng.randrange(40, 900) * 1_048_576 + rng.randrange(1_048_576)
            t.goroutines = rng.randint(9, 400)
            t.cpu = round(rng.uniform(20, 90_000), 2)
        else:
            t.goroutines = rng.randint(18, 240)
            t.cpu = rng.uniform(0.001, 0.9)
            t.pools = {
                "G1 Eden Space": rng.randrange(4, 300) * 1_048_576,
                "G1 Old Gen": rng.randrange(20_000_000, 900_000_000),
                "Metaspace": rng.randrange(60_000_000, 140_000_000),
            }
        for e in range(len(ends)):
            _traffic(rng, t, ends, busy[j, e], latency[j, e], e, dev)
        out.append(t)
    return out


# -- the files ----------------------------------------------------------------------------------


def _go(value: float) -> str:
    """A float as Go's ``strconv.FormatFloat(v, 'g', -1, 64)`` writes it (the exposition format)."""
    if value == int(value) and abs(value) < 1e6:
        return str(int(value))
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    exp = len(digits) + exponent - 1
    if -4 <= exp < 6:
        return repr(float(value))
    mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"


def _plain(value: float) -> str:
    """A float as the HTTP API writes it (``'f'``, shortest)."""
    return str(int(value)) if value == int(value) else repr(float(value))


def _vector(targets: list[Target], seed: str) -> dict:
    rng = random.Random(seed)
    result = []

    def add(labels: dict, value: float) -> None:
        result.append({"metric": labels, "value": [_NOW, _plain(value)]})

    for t in targets:
        name, ends = _DEV_JOBS[t.job]
        base = {"instance": t.instance, "job": name}
        add({"__name__": "up"} | base, 1 if t.up else 0)
        if not t.up:
            continue
        add({"__name__": "process_resident_memory_bytes"} | base, t.memory)
        add({"__name__": "process_cpu_seconds_total"} | base, t.cpu)
        add({"__name__": "go_goroutines"} | base, t.goroutines)
        for (e, code), count in t.requests.items():
            handler, method = ends[e]
            add(
                {"__name__": "http_requests_total", "code": code, "handler": handler}
                | base
                | {"method": method},
                count,
            )
    rng.shuffle(result)
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


def _exposition(targets: list[Target]) -> str:
    stamp = round(_NOW * 1000)
    series: dict[str, list[tuple[dict, float]]] = {}

    def add(name: str, labels: dict, value: float) -> None:
        series.setdefault(name, []).append((labels, value))

    for t in targets:
        name, ends = _TEST_JOBS[t.job]
        base = {"application": name, "instance": t.instance, "job": name, "pod": t.pod}
        add("up", {"instance": t.instance, "job": name, "pod": t.pod}, 1 if t.up else 0)
        if not t.up:
            continue
        for pool, used in t.pools.items():
            add(
                "jvm_memory_used_bytes",
                base | {"area": "nonheap" if pool == "Metaspace" else "heap", "id": pool},
                used,
            )
        add("jvm_threads_live_threads", base, t.goroutines)
        add("process_cpu_usage", base, t.cpu)
        outcome = dict(_TEST_STATUSES)
        for (e, status), count in t.requests.items():
            uri, method = ends[e]
            labels = base | {
                "exception": "None",
                "method": method,
                "outcome": outcome[status],
                "status": status,
                "uri": uri,
            }
            add("http_server_requests_seconds_count", labels, count)
            add("http_server_requests_seconds_sum", labels, t.seconds[e, status])
    lines = []
    for name in sorted(series):
        lines.append(f"# TYPE {name} untyped")
        rows = []
        for labels, value in series[name]:
            text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            rows.append(f"{name}{{{text}}} {_go(value)} {stamp}")
        lines += sorted(rows)
    return "\n".join(lines) + "\n"


def _fit(split: str, seed: str, chars: int) -> tuple[list[Target], object]:
    """The first targets of a longer list whose text is nearest the length asked for: each
    target's share of the text is measured alone (the text is about the sum of its targets'), and
    the count so found is stepped by one while the whole text says so."""
    per = 4500 if split == "dev" else 5000
    pool = _targets(split, seed, 2 * max(1, chars // per) + 4)

    def build(targets: list[Target]) -> object:
        return _vector(targets, seed) if split == "dev" else _exposition(targets)

    def share(t: Target) -> int:
        text = as_text(build([t]))
        return len(text) - sum(len(line) + 1 for line in text.splitlines() if line.startswith("#"))

    k, total = 0, len(as_text(build([])))
    for t in pool:
        total += share(t)
        if total > chars:
            break
        k += 1
    k = max(1, k)
    sizes = {k: len(as_text(build(pool[:k])))}
    step = 1 if sizes[k] < chars else -1
    while 1 <= k + step <= len(pool):
        sizes[k + step] = len(as_text(build(pool[: k + step])))
        if (sizes[k + step] < chars) != (sizes[k] < chars):
            break  # the length asked for lies between the two
        k += step
    k = min(sizes, key=lambda m: (abs(sizes[m] / chars - 1), m))
    return pool[:k], build(pool[:k])


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _up(targets: list[Target]) -> list[Target]:
    return [t for t in targets if t.up]


def _ask_count(split: str, rng: random.Random, targets: list[Target]) -> _Asked:
    t = rng.choice(_up(targets))
    if split == "dev":
        job = _DEV_JOBS[t.job][0]
        n = sum(x.job == t.job and code[0] == "5" for x in _up(targets) for _, code in x.requests)
        q = f'How many http_requests_total series of job "{job}" carry a 5xx code label?'
        return q, n, {"job": job}
    job = _TEST_JOBS[t.job][0]
    n = sum(x.job == t.job and x.goroutines >= t.goroutines for x in _up(targets))
    q = f"Count the instances of job {job} whose jvm_threads_live_threads is at least {t.goroutines}."
    return q, n, {"job": job, "at_least": t.goroutines}


def _ask_total(split: str, rng: random.Random, targets: list[Target]) -> _Asked:
    t = rng.choice(_up(targets))
    e, code = rng.choice(sorted(t.requests))
    if split == "dev":
        job, ends = _DEV_JOBS[t.job]
        n = sum(c for x in _up(targets) if x.job == t.job for (f, _), c in x.requests.items() if f == e)
        q = (
            f'What is the total of http_requests_total for handler "{ends[e][0]}" across all instances of '
            f'job "{job}" (every method and code)?'
        )
        return q, n, {"job": job, "handler": ends[e][0]}
    job, ends = _TEST_JOBS[t.job]
    uri = ends[e][0]
    n = sum(
        c
        for x in _up(targets)
        if x.job == t.job
        for (f, s), c in x.requests.items()
        if ends[f][0] == uri and s == code
    )
    q = (
        f"Summed over the instances of {job}, how many requests to uri {uri} ended with status {code} "
        "(http_server_requests_seconds_count, all methods)?"
    )
    return q, n, {"job": job, "uri": uri, "status": code}


def _ask_top(split: str, rng: random.Random, targets: list[Target]) -> _Asked:
    if split == "dev":
        top = _leader({x.instance: x.memory for x in _up(targets)})
        q = "Which instance has the highest process_resident_memory_bytes? Give its instance label."
        return None if top is None else (q, top, {})
    t = rng.choice(_up(targets))
    job, ends = _TEST_JOBS[t.job]
    spent: dict = {}
    for x in _up(targets):
        if x.job == t.job:
            for (e, _), s in x.seconds.items():
                spent[ends[e][0]] = spent.get(ends[e][0], 0.0) + s
    top = _leader(spent)
    q = (
        f"For job {job}, which uri accounts for the most time in http_server_requests_seconds_sum, all "
        "series added up?"
    )
    return None if top is None else (q, top, {"job": job})


def _ask_lookup(split: str, rng: random.Random, targets: list[Target]) -> _Asked:
    t = rng.choice(_up(targets))
    if split == "dev":
        q = f"What value does go_goroutines have for instance {t.instance}?"
        return q, t.goroutines, {"instance": t.instance}
    q = f'Report the jvm_memory_used_bytes of the "G1 Old Gen" pool on pod {t.pod}, in bytes.'
    return q, t.pools["G1 Old Gen"], {"pod": t.pod}


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "metrics",
    "service metrics: a Prometheus query API response as a nested dict (dev), or a federation scrape in "
    "the text exposition format as a string (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    targets, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, targets), kind, "lookup", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="nested dict (query API)" if ref.split == "dev" else "string (exposition format)",
        targets=len(targets),
    )
