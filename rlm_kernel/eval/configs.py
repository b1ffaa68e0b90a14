"""Questions about configuration files: the context is a dict of files, path -> text.

What a notebook holds after reading a deployment's folder (``{p: open(p).read() for p in
paths}``): two files per service, in two formats. ``services = max(8, chars // 500)`` (``// 420`` in
``test``: about what a service's two files cost). Kinds of question:

- ``port``: which service listens on a port (other ports stand beside it: metrics, the
  database's);
- ``value``: one setting in one named file;
- ``count``: how many services set something a given way;
- ``which_file``: the path of the one file that names a feature flag.

Every answer is computed from the settings the generator wrote. Score: ``exact`` (numbers as
numbers, names and paths without case).

Splits: ``dev`` is ``etc/<service>/<service>.ini`` (INI: ``[server] port``, ``[database]
pool_size``, ``[logging] level``) and ``etc/<service>/features.yaml`` (flags, limits); ``test`` is
``deploy/<service>/config.toml`` (TOML: ``[http] listen = "host:port"``, ``[telemetry]``) and
``deploy/<service>/.env`` (``MAX_CONNECTIONS=...``, ``FEATURE_FLAGS=a,b``): other formats, keys,
paths and wording.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from .tasks import Task, TaskRef, draw_question, family

__all__ = ["KINDS", "services_for", "make"]

KINDS = ("port", "value", "count", "which_file")

_FIRST = (
    "amber", "basalt", "cedar", "delta", "ember", "falcon", "garnet", "harbor", "indigo", "juniper", "kelp",
    "lumen", "marble", "nova", "onyx", "pine", "quartz", "raven", "sierra", "tundra",
)  # fmt: skip
_SECOND = (
    "api", "worker", "gateway", "billing", "search", "auth", "ledger", "notifier", "scheduler", "export",
    "ingest", "cache", "media", "reports", "profile", "catalog", "payments", "inbox", "audit", "metrics",
)  # fmt: skip
_FLAG_A = (
    "new", "fast", "beta", "legacy", "async", "smart", "bulk", "safe", "lazy", "shadow", "dark", "early",
)  # fmt: skip
_FLAG_B = ("checkout", "search", "upload", "retry", "cache", "login", "export", "billing", "preview", "sync",
           "reports", "pricing", "invites", "thumbnails")  # fmt: skip
_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


@dataclass(frozen=True)
class Service:
    name: str
    port: int
    metrics_port: int | None
    db_host: str
    pool_size: int
    timeout: int
    level: str
    flags: tuple[str, ...]
    rpm: int
    upload_mb: int
    telemetry: bool
    sample_rate: float


def services_for(chars: int, split: str = "dev") -> int:
    return max(8, chars // (500 if split == "dev" else 420))


def _services(rng: random.Random, n: int) -> list[Service]:
    names = [f"{a}-{b}" for a in _FIRST for b in _SECOND]
    names = rng.sample(names, min(n, len(names)))
    names += [f"{rng.choice(_FIRST)}-{rng.choice(_SECOND)}-{i}" for i in range(n - len(names))]
    ports = rng.sample(range(8000, 8000 + max(1000, 2 * n)), n)
    metrics = rng.sample(range(9100, 9100 + max(900, 2 * n)), n)
    flags = [f"{a}_{b}" for a in _FLAG_A for b in _FLAG_B]
    out = []
    for name, port, mport in zip(names, ports, metrics, strict=True):
        out.append(
            Service(
                name=name,
                port=port,
                metrics_port=mport if rng.random() < 0.5 else None,
                db_host=f"db-{rng.randint(1, 6)}.internal",
                pool_size=rng.choice((4, 5, 8, 10, 12, 16, 20, 24, 32)),
                timeout=rng.choice((5, 10, 15, 30, 45, 60, 90)),
                level=rng.choices(_LEVELS, (2, 6, 3, 1))[0],
                flags=tuple(rng.sample(flags, rng.randint(0, 4))),
                rpm=rng.choice((60, 120, 300, 600, 1200, 2400)),
                upload_mb=rng.choice((5, 10, 25, 50, 100)),
                telemetry=rng.random() < 0.45,
                sample_rate=rng.choice((0.01, 0.05, 0.1, 0.25, 0.5, 1.0)),
            )
        )
    return out


def _dev_files(s: Service) -> dict[str, str]:
    ini = [
        f"; {s.name} service settings",
        "[server]",
        "host = 0.0.0.0",
        f"port = {s.port}",
        f"workers = {2 + s.pool_size % 7}",
        "",
        "[database]",
        f"url = postgresql://{s.db_host}:5432/{s.name.replace('-', '_')}",
        f"pool_size = {s.pool_size}",
        f"timeout_s = {s.timeout}",
        "",
        "[logging]",
        f"level = {s.level}",
        f"file = /var/log/{s.name}/{s.name}.log",
    ]
    if s.metrics_port:
        ini += ["", "[metrics]", "enabled = true", f"port = {s.metrics_port}"]
    flags = "\n".join(f"  - {f}" for f in s.flags) if s.flags else "  []"
    yaml = (
        f"# feature flags and limits for {s.name}\n"
        f"flags:{'' if s.flags else ' []'}\n{flags if s.flags else ''}"
        f"{chr(10) if s.flags else ''}"
        f"limits:\n  requests_per_minute: {s.rpm}\n  max_upload_mb: {s.upload_mb}\n"
        f"owner: team-{s.name.split('-')[1]}\n"
    )
    return {f"etc/{s.name}/{s.name}.ini": "\n".join(ini) + "\n", f"etc/{s.name}/features.yaml": yaml}


def _test_files(s: Service) -> dict[str, str]:
    toml = [
        f"# {s.name}",
        "[http]",
        f'listen = "0.0.0.0:{s.port - 1000}"',
        f'read_timeout = "{s.timeout}s"',
        "",
        "[storage]",
        f'backend = "{"s3" if s.pool_size % 2 else "gcs"}"',
        f'bucket = "tidewater-{s.name}"',
        "",
        "[telemetry]",
        f"enabled = {'true' if s.telemetry else 'false'}",
        f"sample_rate = {s.sample_rate}",
    ]
    if s.metrics_port:
        toml += ["", "[telemetry.prometheus]", f'listen = "127.0.0.1:{s.metrics_port - 1000}"']
    env = [
        f"LOG_LEVEL={s.level.lower()}",
        f"MAX_CONNECTIONS={s.pool_size * 8}",
        f"TIMEOUT_SECONDS={s.timeout}",
        f"DATABASE_URL=postgres://{s.db_host}:6432/{s.name}",
        f"FEATURE_FLAGS={','.join(s.flags)}",
    ]
    return {
        f"deploy/{s.name}/config.toml": "\n".join(toml) + "\n",
        f"deploy/{s.name}/.env": "\n".join(env) + "\n",
    }


_Asked = tuple[str, object, dict] | None


def _ask(kind: str, split: str, rng: random.Random, services: list[Service]) -> _Asked:
    s = rng.choice(services)
    return _KINDS.get(kind, _ask_flag)(split, rng, s, services)


def _ask_port(split: str, rng: random.Random, s: Service, services: list[Service]) -> _Asked:
    if split == "dev":
        q = f"Which service's [server] section listens on port {s.port}? Give its folder name under etc/."
        return q, s.name, {"port": s.port}
    q = f"Name the service (its folder under deploy/) whose HTTP listener binds port {s.port - 1000}."
    return q, s.name, {"port": s.port - 1000}


def _ask_value(split: str, rng: random.Random, s: Service, services: list[Service]) -> _Asked:
    if split == "dev":
        if rng.random() < 0.5:
            q = f"What is pool_size in the [database] section of etc/{s.name}/{s.name}.ini?"
            return q, s.pool_size, {"path": f"etc/{s.name}/{s.name}.ini", "key": "pool_size"}
        q = f"What requests_per_minute limit does etc/{s.name}/features.yaml set?"
        return q, s.rpm, {"path": f"etc/{s.name}/features.yaml", "key": "requests_per_minute"}
    if rng.random() < 0.5:
        q = f"Read deploy/{s.name}/.env: to what is MAX_CONNECTIONS set?"
        return q, s.pool_size * 8, {"path": f"deploy/{s.name}/.env", "key": "MAX_CONNECTIONS"}
    q = f"Read deploy/{s.name}/config.toml: what is the telemetry sample_rate?"
    return q, s.sample_rate, {"path": f"deploy/{s.name}/config.toml", "key": "sample_rate"}


def _ask_count(split: str, rng: random.Random, s: Service, services: list[Service]) -> _Asked:
    if split == "dev":
        level = rng.choice(_LEVELS)
        n = sum(x.level == level for x in services)
        if not n:
            return None
        return f"How many services log at level {level} ([logging] level)?", n, {"level": level}
    n = sum(x.telemetry for x in services)
    return "Count the services whose config.toml has telemetry enabled = true.", n, {}


def _ask_flag(split: str, rng: random.Random, s: Service, services: list[Service]) -> _Asked:
    counts: dict[str, list[Service]] = {}
    for x in services:
        for f in x.flags:
            counts.setdefault(f, []).append(x)
    once = sorted(f for f, holders in counts.items() if len(holders) == 1)
    if not once:
        return None
    flag = rng.choice(once)
    holder = counts[flag][0].name
    if split == "dev":
        q = f"Which file turns on the feature flag {flag}? Give its path as it is written in the dict's keys."
        return q, f"etc/{holder}/features.yaml", {"flag": flag}
    q = f"Give the path (the dict's key) of the only file whose FEATURE_FLAGS include {flag}."
    return q, f"deploy/{holder}/.env", {"flag": flag}


_KINDS: dict[str, Callable[[str, random.Random, Service, list[Service]], _Asked]] = {
    "port": _ask_port,
    "value": _ask_value,
    "count": _ask_count,
}


@family(
    "configs", "a dict of config files (path -> text): ports, one value, counts, which file (INI/YAML in dev)"
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    services = _services(rng, services_for(ref.chars, ref.split))
    kind = KINDS[ref.index % len(KINDS)]
    # other parameters, then a port, which always has an answer
    kind, (question, answer, params) = draw_question(
        lambda asked: _ask(asked, ref.split, rng, services), kind, "port"
    )
    files: dict[str, str] = {}
    write = _dev_files if ref.split == "dev" else _test_files
    for s in sorted(services, key=lambda s: s.name):
        files.update(write(s))
    return Task(
        id=ref.id,
        family="configs",
        context=files,
        question=question,
        answer=answer,
        scorer="exact",
        split=ref.split,
        length=ref.length,
        meta={
            "question_type": kind,
            "container": "dict of files",
            "files": len(files),
            "chars": sum(len(p) + len(t) for p, t in files.items()),
            "params": params,
        },
        ref=ref,
    )
