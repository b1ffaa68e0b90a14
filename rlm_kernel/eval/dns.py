"""Questions about DNS records: a company's BIND zone file as one string (``dev``), or a DNS
provider's API listing of the records of a few zones as a list of dicts (``test``).

What a notebook holds when someone audits or migrates a domain's DNS: the zone's SOA and name
servers, mail exchangers, SPF, DMARC and DKIM text, then host after host with its IPv4 (and some
IPv6) addresses, services behind shared load-balancer addresses, and aliases that point at other
names in the zone or at hosted services outside it, some through a chain of aliases. Names that
extend another's stand beside each other (``api`` and ``api-internal``, ``web01`` and ``web010``
are not both used, but ``web01.eu`` and ``web01.us`` are). Hosts are added until the text (or the
indented JSON) is about the length asked for. Kinds of question:

- ``count``: the A records at or below one subdomain, or the aliases that point out of the zone
  (``dev``); one zone's proxied address records, or its records created in one year (``test``);
- ``resolve``: the IPv4 address one alias leads to through the zone's aliases (``dev``), or
  through the zones' (``test``);
- ``top``: the address that the most A records point to, or the subdomain with the most A records
  (``dev``); the zone with the most records modified in one month, or the alias target the most
  aliases share (``test``) (a clear leader);
- ``lookup``: the TTL, in seconds, of one name's A record (``dev``); the day one record was last
  modified, or the priority of one mail exchanger (``test``).

Every answer is computed from the records the generator wrote. Score: ``exact``.

Splits: ``dev`` is a zone file as people write them: ``$ORIGIN`` for each subdomain, ``$TTL``
(``1h``, ``300``, ``1d``...) that holds until the next one, even across an ``$ORIGIN``, names
relative to the origin, ``@``, or absolute with their final dot, a blank owner for another record
of the name above, a TTL on some records, the SOA and DKIM records over several lines in
parentheses, and comments after ``;``; ``test`` is the provider's records (``id``, ``zone_id``,
``zone_name``, ``name``, ``type``, ``content``, ``priority`` for MX, ``proxiable``, ``proxied``,
``ttl`` with 1 for automatic, ``locked``, ``meta``, ``comment``, ``tags``, ``created_on``,
``modified_on``): other containers, fields, domains and wording.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "resolve", "top", "lookup")

_DEV_ZONE = "kestrel-analytics.com"
_DEV_SUBS = (  # subdomain, public prefix, private prefix, how busy
    ("eu", "198.51.100", "10.20", 2.0),
    ("us", "203.0.113", "10.30", 1.6),
    ("ap", "192.0.2", "10.40", 0.7),
    ("staging", "198.51.100", "10.50", 1.0),
    ("corp", "203.0.113", "10.60", 0.8),
    ("build", "192.0.2", "10.70", 0.5),
)
_TEST_ZONES = ("brightline.io", "brightline.dev", "brightline-status.com")
_TEST_ENVS = ("", "prod", "eu", "sandbox")  # hosts right under the zone, or under one of these
_ROLES = ("web", "app", "db", "cache", "worker", "mq", "search", "edge", "backup", "log", "k8s-node", "ci")
_SERVICES = (
    "api",
    "api-internal",
    "app",
    "auth",
    "grafana",
    "kibana",
    "jenkins",
    "registry",
    "vault",
    "sentry",
    "minio",
    "s3",
    "vpn",
    "git",
    "wiki",
    "jira",
    "metabase",
    "airflow",
    "argocd",
    "prometheus",
    "alertmanager",
    "portal",
    "admin",
    "sso",
    "ldap",
)
_ALIASES = (
    "www",
    "dashboard",
    "status",
    "docs",
    "blog",
    "help",
    "cdn",
    "static",
    "assets",
    "files",
    "shop",
    "careers",
    "grafana-old",
    "api-v1",
    "login",
    "console",
    "download",
    "mirror",
    "pkg",
    "images",
)
_EXTERNAL = (
    "kestrel-analytics.github.io",
    "cname.vercel-dns.com",
    "d2x9k1m3pqlz7a.cloudfront.net",
    "ghs.googlehosted.com",
    "shops.myshopify.com",
    "hosted.statuspage.io",
    "kestrel.zendesk.com",
    "proxy-ssl.webflow.com",
)
_TEST_EXTERNAL = (
    "brightline.netlify.app",
    "custom.crisp.help",
    "cname.vercel-dns.com",
    "ext-sq.squarespace.com",
    "brightline-docs.readthedocs.io",
    "stats.uptimerobot.com",
    "domains.tumblr.com",
)
_TTLS = (
    ("300", 300),
    ("5m", 300),
    ("600", 600),
    ("15m", 900),
    ("1h", 3600),
    ("4h", 14400),
    ("1d", 86400),
    ("86400", 86400),
)


@dataclass
class Record:
    name: str  # the full name, without its final dot
    type: str
    data: str  # an address, a target's full name, a text; MX: the exchanger
    priority: int = 0  # MX
    ttl: int | None = None  # dev: written on the record (else the $TTL's); test: the API's
    section: int = -1  # dev: the $ORIGIN it is written under (-1: the zone's own); test: the zone
    proxied: bool = False
    created: datetime | None = None
    modified: datetime | None = None


@dataclass
class _Names:
    """The names drawn so far, so that each is used once, and the addresses handed out."""

    rng: random.Random
    used: set[str]
    ips: set[str]
    vips: dict[int, list[str]]  # each subdomain's (or zone's) load-balancer addresses
    vip_weight: dict[int, list[float]]
    targets: list[str] = field(default_factory=list)  # the names an alias may point to

    def fresh(self, candidates: list[str]) -> str | None:
        free = [c for c in candidates if c not in self.used]
        if not free:
            return None
        name = self.rng.choice(free)
        self.used.add(name)
        return name

    def numbered(self, pattern: str) -> str:
        """A new name of a pattern with a number in it (``web{:02d}.eu...``), from 1 to 99 while
        those are not all taken."""
        for numbers in (range(1, 100), range(100, 1000), range(1000, 100_000)):
            for _ in range(40):
                name = pattern.format(self.rng.choice(numbers))
                if name not in self.used:
                    self.used.add(name)
                    return name
        raise AssertionError(pattern)

    def ip(self, prefix: str) -> str:
        ip = ""
        while not ip or ip in self.ips:
            tail = (
                f"{self.rng.randrange(256)}.{self.rng.randrange(2, 255)}"
                if prefix.count(".") == 1
                else (f"{self.rng.randrange(2, 255)}")
            )
            ip = f"{prefix}.{tail}"
        self.ips.add(ip)
        return ip


def _token(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijkLMNOPQRST0123456789_-") for _ in range(43))


def _v6(rng: random.Random, prefix: str) -> str:
    return f"{prefix}:{rng.randrange(1, 0xFFFF):x}::{rng.randrange(1, 0xFFFF):x}"


# -- the dev zone -------------------------------------------------------------------------------


def _dev_apex(names: _Names) -> list[Record]:
    rng, z = names.rng, _DEV_ZONE
    out = [
        Record(z, "NS", f"ns1.{z}"),
        Record(z, "NS", f"ns2.{z}"),
        Record(z, "NS", "ns3.dnsmadeeasy.com"),
        Record(z, "MX", f"mx1.{z}", 10),
        Record(z, "MX", f"mx2.{z}", 20),
        Record(z, "TXT", '"v=spf1 ip4:203.0.113.0/24 include:_spf.google.com ~all"'),
        Record(
            z,
            "TXT",
            f'"google-site-verification={_token(rng)}"',
        ),
        Record(z, "CAA", '0 issue "letsencrypt.org"'),
        Record(z, "A", "203.0.113.10"),
        Record(f"ns1.{z}", "A", "203.0.113.2"),
        Record(f"ns2.{z}", "A", "198.51.100.2"),
        Record(f"mx1.{z}", "A", "203.0.113.25"),
        Record(f"mx2.{z}", "A", "198.51.100.25", ttl=86400),
        Record(f"_dmarc.{z}", "TXT", f'"v=DMARC1; p=quarantine; rua=mailto:dmarc@{z}; pct=100"'),
        Record(f"google._domainkey.{z}", "TXT", "DKIM"),
        Record(f"_sip._tls.{z}", "SRV", "100 1 443 sipdir.online.lync.com"),
        Record(f"www.{z}", "CNAME", z),
        Record(f"portal.{z}", "CNAME", f"lb1.eu.{z}", ttl=300),
    ]
    names.used |= {r.name for r in out}
    names.ips |= {r.data for r in out if r.type == "A"}
    return out


def _dev_entry(names: _Names) -> list[Record]:
    """One more name in the zone: a host, a service behind a load balancer, or an alias."""
    rng = names.rng
    s = rng.choices(range(len(_DEV_SUBS)), [x[3] for x in _DEV_SUBS])[0]
    sub, _, private, _ = _DEV_SUBS[s]
    origin = f"{sub}.{_DEV_ZONE}"
    what = rng.choices(("host", "service", "alias"), (6, 3, 2))[0]
    ttl = rng.choice((60, 300, 900, 86400)) if rng.random() < 0.12 else None
    if what == "service":
        name = names.fresh([f"{x}.{origin}" for x in _SERVICES])
        if name is not None:
            vip = rng.choices(names.vips[s], names.vip_weight[s])[0]
            names.targets.append(name)
            return [Record(name, "A", vip, ttl=ttl, section=s)]
    if what == "alias":
        name = names.fresh([f"{x}.{origin}" for x in _ALIASES])
        if name is not None and names.targets:
            target = rng.choice(_EXTERNAL) if rng.random() < 0.3 else rng.choice(names.targets)
            names.targets.append(name)
            return [Record(name, "CNAME", target, ttl=ttl, section=s)]
    role = rng.choice(_ROLES)
    name = names.numbered(role + "{:02d}." + origin)
    out = [Record(name, "A", names.ip(private), ttl=ttl, section=s)]
    names.targets.append(name)
    if rng.random() < 0.35:
        out.append(Record(name, "AAAA", _v6(rng, f"2001:db8:{s + 1:x}0"), ttl=ttl, section=s))
    if rng.random() < 0.04:
        out.append(Record(name, "A", names.ip(private), ttl=ttl, section=s))  # a second address
    return out


def _dev_records(seed: str, n: int) -> tuple[list[Record], list[tuple[str, int] | None]]:
    """The zone's records, and each section's ``$TTL`` (None: the one before holds)."""
    rng = random.Random(f"{seed}/{n}")
    names = _Names(rng, set(), set(), {}, {})
    for s, (_, public, _, _) in enumerate(_DEV_SUBS):
        names.vips[s] = [names.ip(public) for _ in range(rng.randint(2, 4))]
        names.vip_weight[s] = [rng.uniform(0.3, 2.0) for _ in names.vips[s]]
    records = _dev_apex(names)
    for s, vips in names.vips.items():
        for k, vip in enumerate(vips, 1):
            records.append(Record(f"lb{k}.{_DEV_SUBS[s][0]}.{_DEV_ZONE}", "A", vip, section=s))
            names.used.add(records[-1].name)
            names.targets.append(records[-1].name)
    while len(records) < n:
        records += _dev_entry(names)
    ttls: list[tuple[str, int] | None] = [("1h", 3600)]
    ttls += [rng.choice(_TTLS) if rng.random() < 0.5 else None for _ in _DEV_SUBS]
    return records, ttls


def _owner(name: str, origin: str) -> str:
    if name == origin:
        return "@"
    return name[: -len(origin) - 1] if name.endswith("." + origin) else name + "."


def _target(name: str, origin: str, rng: random.Random) -> str:
    if name.endswith("." + origin) and rng.random() < 0.6:
        return name[: -len(origin) - 1]
    return name + "."


def _dkim(rng: random.Random) -> list[str]:
    key = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + "".join(
        rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(300)
    )
    text = "v=DKIM1; k=rsa; p=" + key
    return (
        ["( " + f'"{text[:120]}"']
        + [f'  "{text[i : i + 120]}"' for i in range(120, len(text), 120)]
        + ["  )"]
    )


def _line(r: Record, origin: str, owner: str, rng: random.Random) -> list[str]:
    ttl = f"{r.ttl} " if r.ttl is not None else ""
    head = f"{owner:<23} {ttl}IN  {r.type:<6}"
    if r.type == "CNAME" or r.type == "NS":
        return [head + _target(r.data, origin, rng)]
    if r.type == "MX":
        return [head + f"{r.priority} {_target(r.data, origin, rng)}"]
    if r.type == "SRV":
        return [head + r.data + "."]
    if r.data == "DKIM":
        body = _dkim(rng)
        return [head + body[0]] + [" " * 34 + b for b in body[1:]]
    return [head + r.data]


def _zone(records: list[Record], ttls: list[tuple[str, int] | None], seed: str) -> str:
    rng = random.Random(seed)
    z = _DEV_ZONE
    lines = [
        f"; {z} - primary zone, kept in git (infra/dns/{z}.zone)",
        "; Do not edit on the server: CI checks it with named-checkzone and reloads.",
        f"$ORIGIN {z}.",
        "$TTL 1h",
        f"@                       IN  SOA   ns1.{z}. hostmaster.{z}. (",
        f"                                  {2024061400 + rng.randint(1, 9)} ; serial",
        "                                  2h         ; refresh",
        "                                  15m        ; retry",
        "                                  14d        ; expire",
        "                                  5m )       ; negative caching TTL",
        "",
    ]
    for section in range(-1, len(_DEV_SUBS)):
        origin = z if section < 0 else f"{_DEV_SUBS[section][0]}.{z}"
        mine = sorted((r for r in records if r.section == section), key=lambda r: r.name != origin)
        if section >= 0:
            lines += ["", f"; --- {_DEV_SUBS[section][0]} ---", f"$ORIGIN {origin}."]
            if ttls[section + 1] is not None:
                lines.append(f"$TTL {ttls[section + 1][0]}")
        before = ""
        for r in _grouped(mine):
            owner = "" if r.name == before else _owner(r.name, origin)
            if owner and owner != "@" and not owner.endswith(".") and rng.random() < 0.04:
                owner = r.name + "."  # written out in full
            lines += _line(r, origin, owner, rng)
            before = r.name
    return "\n".join(lines) + "\n"


def _grouped(records: list[Record]) -> list[Record]:
    """The records in the order first written, a name's records together."""
    order: dict[str, list[Record]] = {}
    for r in records:
        order.setdefault(r.name, []).append(r)
    return [r for rs in order.values() for r in rs]


def _effective(ttls: list[tuple[str, int] | None]) -> dict[int, int]:
    """Each section's default TTL: its own ``$TTL``, else the one written before it."""
    out, current = {}, 3600
    for section in range(-1, len(_DEV_SUBS)):
        if ttls[section + 1] is not None:
            current = ttls[section + 1][1]
        out[section] = current
    return out


# -- the test records ---------------------------------------------------------------------------


def _when(rng: random.Random) -> tuple[datetime, datetime]:
    created = datetime(2021, 3, 1) + timedelta(seconds=rng.randrange(0, 1_200 * 86400))
    created = created.replace(microsecond=rng.randrange(1_000_000))
    if rng.random() < 0.55:
        return created, created
    end = datetime(2024, 6, 30)
    return created, created + (end - created) * rng.random()


def _test_apex(names: _Names, z: int) -> list[Record]:
    rng, zone = names.rng, _TEST_ZONES[z]
    out = [
        Record(zone, "A", names.ip(f"104.21.{rng.randrange(1, 99)}"), proxied=True),
        Record(zone, "MX", "aspmx.l.google.com", 1),
        Record(zone, "MX", "alt1.aspmx.l.google.com", 5),
        Record(zone, "TXT", "v=spf1 include:_spf.google.com include:sendgrid.net ~all"),
    ]
    if rng.random() < 0.5:
        out += [
            Record(zone, "MX", "alt2.aspmx.l.google.com", 5),
            Record(zone, "MX", "alt3.aspmx.l.google.com", 10),
        ]
    if rng.random() < 0.5:
        out.insert(1, Record(zone, "A", names.ip(f"172.67.{rng.randrange(1, 200)}"), proxied=True))
    if rng.random() < 0.6:
        out.append(Record(zone, "AAAA", _v6(rng, "2606:4700:3030"), proxied=True))
    if rng.random() < 0.5:
        out.append(Record(f"_dmarc.{zone}", "TXT", f"v=DMARC1; p=reject; rua=mailto:dmarc-reports@{zone}"))
    if rng.random() < 0.4:
        out.append(Record(zone, "CAA", '0 issue "pki.goog"'))
    names.targets.append(zone)
    for r in out:
        r.section = z
    names.used |= {r.name for r in out}
    return out


def _test_entry(names: _Names, zones: int) -> list[Record]:
    rng = names.rng
    z = rng.choices(range(zones), (3, 2, 1)[:zones])[0]
    env = rng.choices(_TEST_ENVS, (3, 2, 1, 1))[0]
    origin = f"{env}.{_TEST_ZONES[z]}" if env else _TEST_ZONES[z]
    what = rng.choices(("host", "service", "alias"), (4, 3, 3))[0]
    if what == "service":
        name = names.fresh([f"{x}.{origin}" for x in _SERVICES])
        if name is not None:
            vip = rng.choices(names.vips[z], names.vip_weight[z])[0]
            names.targets.append(name)
            return [Record(name, "A", vip, section=z, proxied=rng.random() < 0.7)]
    if what == "alias":
        name = names.fresh([f"{x}.{origin}" for x in _ALIASES])
        if name is not None:
            targets = names.targets
            target = rng.choice(_TEST_EXTERNAL) if rng.random() < 0.45 or not targets else rng.choice(targets)
            names.targets.append(name)
            return [Record(name, "CNAME", target, section=z, proxied=rng.random() < 0.4)]
    role = rng.choice(_ROLES)
    name = names.numbered(role + "-{}." + origin)
    out = [Record(name, "A", names.ip(f"10.{8 + z}"), section=z)]
    names.targets.append(name)
    if rng.random() < 0.3:
        out.append(Record(name, "AAAA", _v6(rng, f"2a05:d014:{z + 1:x}c0"), section=z))
    return out


def _test_records(seed: str, n: int) -> list[Record]:
    rng = random.Random(f"{seed}/{n}")
    names = _Names(rng, set(), set(), {}, {})
    zones = len(_TEST_ZONES) if n >= 40 else 2  # a short listing: two of the zones
    for z in range(zones):
        names.vips[z] = [names.ip(f"34.{rng.randrange(64, 160)}") for _ in range(rng.randint(2, 3))]
        names.vip_weight[z] = [rng.uniform(0.3, 2.0) for _ in names.vips[z]]
    records = [r for z in range(zones) for r in _test_apex(names, z)]
    while len(records) < n:
        records += _test_entry(names, zones)
    for r in records:
        r.created, r.modified = _when(rng)
        if r.proxied:
            r.ttl = 1
        else:
            r.ttl = rng.choice((1, 1, 300, 3600, 120, 86400))
    return records


def _hex(rng: random.Random, k: int = 32) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(k))


def _api(records: list[Record], seed: str) -> list[dict]:
    rng = random.Random(seed)
    zone_ids = [_hex(rng) for _ in _TEST_ZONES]
    out = []
    for r in sorted(records, key=lambda r: (r.section, r.type, r.name)):
        item: dict = {
            "id": _hex(rng),
            "zone_id": zone_ids[r.section],
            "zone_name": _TEST_ZONES[r.section],
            "name": r.name,
            "type": r.type,
            "content": r.data,
        }
        if r.type == "MX":
            item["priority"] = r.priority
        item |= {
            "proxiable": r.type in ("A", "AAAA", "CNAME") and not r.data.startswith("10."),
            "proxied": r.proxied,
            "ttl": r.ttl,
            "locked": False,
            "meta": {
                "auto_added": False,
                "managed_by_apps": False,
                "managed_by_argo_tunnel": False,
                "source": "primary",
            },
            "comment": rng.choice(
                ("migrated from Route 53", "ticket OPS-1432", "temporary, remove after launch")
            )
            if rng.random() < 0.08
            else None,
            "tags": [],
            "created_on": f"{r.created:%Y-%m-%dT%H:%M:%S.%fZ}",
            "modified_on": f"{r.modified:%Y-%m-%dT%H:%M:%S.%fZ}",
        }
        out.append(item)
    return out


def _fit(split: str, seed: str, chars: int) -> tuple[list[Record], list, object]:
    per = 52 if split == "dev" else 470
    n = max(12, chars // per)
    for _ in range(6):
        if split == "dev":
            records, ttls = _dev_records(seed, n)
            context: object = _zone(records, ttls, seed)
        else:
            records, ttls = _test_records(seed, n), []
            context = _api(records, seed)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(12, round(n * chars / size))
    return records, ttls, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _by_name(records: list[Record]) -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {}
    for r in records:
        out.setdefault(r.name, []).append(r)
    return out


def _resolve(index: dict[str, list[Record]], name: str) -> str | None:
    """The one IPv4 address a name leads to through aliases among the records, or None."""
    for _ in range(8):
        mine = index.get(name, [])
        if len(mine) == 1 and mine[0].type == "CNAME":
            name = mine[0].data
            continue
        addresses = [r.data for r in mine if r.type == "A"]
        return addresses[0] if len(addresses) == 1 and not any(r.type == "CNAME" for r in mine) else None
    return None


def _ask_count(split: str, rng: random.Random, records: list[Record], ttls: list) -> _Asked:
    if split == "dev":
        if rng.random() < 0.5:
            sub = f"{rng.choice(_DEV_SUBS)[0]}.{_DEV_ZONE}"
            n = sum(r.type == "A" and (r.name == sub or r.name.endswith("." + sub)) for r in records)
            return f"How many A records are there for {sub} and the names below it?", n, {"subdomain": sub}
        n = sum(r.type == "CNAME" and not r.data.endswith(_DEV_ZONE) for r in records)
        return f"How many CNAME records in the zone point to a name outside {_DEV_ZONE}?", n, {}
    z = rng.choice(records).section
    zone = _TEST_ZONES[z]
    if rng.random() < 0.5:
        n = sum(r.section == z and r.type in ("A", "AAAA") and r.proxied for r in records)
        return f"Count the A and AAAA records of zone {zone} that are proxied.", n, {"zone": zone}
    year = rng.choice([r.created.year for r in records if r.section == z])
    n = sum(r.section == z and r.created.year == year for r in records)
    q = f"Count the records of zone_name {zone} whose created_on falls in {year}."
    return q, n, {"zone": zone, "year": year}


def _ask_resolve(split: str, rng: random.Random, records: list[Record], ttls: list) -> _Asked:
    index = _by_name(records)
    aliases = [r for r in records if r.type == "CNAME" and _resolve(index, r.name) is not None]
    if not aliases:
        return None
    r = rng.choice(aliases)
    if split == "dev":
        q = f"Following CNAMEs inside the zone, which IPv4 address does {r.name} resolve to?"
    else:
        q = f"Following CNAME content from record to record, which IPv4 address does {r.name} end at?"
    return q, _resolve(index, r.name), {"name": r.name}


def _ask_top(split: str, rng: random.Random, records: list[Record], ttls: list) -> _Asked:
    if split == "dev":
        if rng.random() < 0.5:
            top = _leader(Counter(r.data for r in records if r.type == "A"))
            return (
                None
                if top is None
                else ("Which IPv4 address is the target of the most A records?", top, {"by": "address"})
            )
        subs = Counter(
            f"{_DEV_SUBS[r.section][0]}.{_DEV_ZONE}" for r in records if r.type == "A" and r.section >= 0
        )
        top = _leader(subs)
        q = (
            f"Which subdomain directly below {_DEV_ZONE} has the most A records, counting every name "
            "beneath it? Give its full name."
        )
        return None if top is None else (q, top, {"by": "subdomain"})
    if rng.random() < 0.5:
        month = f"{rng.choice(records).modified:%Y-%m}"
        top = _leader(Counter(_TEST_ZONES[r.section] for r in records if f"{r.modified:%Y-%m}" == month))
        q = f"Which zone_name has the most records whose modified_on is in {month}?"
        return None if top is None else (q, top, {"month": month})
    top = _leader(Counter(r.data for r in records if r.type == "CNAME"))
    return (
        None
        if top is None
        else ("Which content is shared by the most CNAME records, over all zones?", top, {})
    )


def _ask_lookup(split: str, rng: random.Random, records: list[Record], ttls: list) -> _Asked:
    """Always a question: a name with one A record is always there."""
    if split == "dev":
        names = Counter(r.name for r in records)
        single = [r for r in records if r.type == "A" and names[r.name] == 1]
        r = rng.choice(single)
        ttl = r.ttl if r.ttl is not None else _effective(ttls)[r.section]
        return f"What TTL, in seconds, applies to the A record of {r.name}?", ttl, {"name": r.name}
    mx = [r for r in records if r.type == "MX"]
    if rng.random() < 0.4 and mx:
        r = rng.choice(mx)
        zone = _TEST_ZONES[r.section]
        q = f"What priority does the MX record of {zone} that points to {r.data} have?"
        return q, r.priority, {"zone": zone, "content": r.data}
    pairs = Counter((r.name, r.type) for r in records)
    single = [r for r in records if pairs[r.name, r.type] == 1]
    r = rng.choice(single)
    q = f"On what date (YYYY-MM-DD) was the {r.type} record of {r.name} last modified?"
    return q, f"{r.modified:%Y-%m-%d}", {"name": r.name, "type": r.type}


_ASK = {"count": _ask_count, "resolve": _ask_resolve, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "dns",
    "DNS records: a BIND zone file as a string (dev), or a DNS provider's API records as a list of dicts "
    "(test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    records, ttls, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, records, ttls), kind, "lookup", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (BIND zone file)" if ref.split == "dev" else "list of dicts (DNS API records)",
        records=len(records),
    )
