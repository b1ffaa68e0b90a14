"""Questions about weather observations: airport stations' METAR reports, one file of text a
station (``dev``), or an ASOS download's table of hourly observations as a dict of columns, as
``DataFrame.to_dict("list")`` gives them (``test``).

What a notebook holds when someone studies a few days of weather at nearby stations: routine
hourly reports (and, in ``dev``, special reports between them), each with the wind, gusts when
there were any, visibility, clouds, temperature and dew point, pressure and the hour's
precipitation. Stations near each other stand side by side. Kinds of question:

- ``count``: reports of one station with a gust (``dev``, routine reports only), or observations
  of one station at or below a temperature (``test``);
- ``total``: one station's precipitation over one day, in inches;
- ``top``: the station with the strongest gust (``dev``) or the highest temperature (``test``) (a
  clear leader);
- ``lookup``: one station's temperature (``dev``) or dew point (``test``) at one time.

Every answer is computed from the observations the generator wrote. Score: ``exact``.

Splits: ``dev`` is a dict of file name to METAR text (``METAR``/``SPECI`` lines with ``AUTO``,
variable winds, weather groups and remarks with ``SLP``, ``P`` and ``T`` groups); ``test`` is a
dict of columns (``station``, ``valid``, ``tmpf``, ``dwpf``, ``drct``, ``sknt``, ``gust``,
``p01i``, ``alti``, ``vsby``, ``skyc1``, ``skyl1``, ``wxcodes``) with ``None`` where missing:
other containers, fields, stations and wording.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_DEV_STATIONS = ("KBOS", "KBED", "KBVY", "KOWD", "KPVD", "KPSM", "KORH", "KLWM", "KBAF", "KHYA")
_TEST_STATIONS = ("DSM", "AMW", "ALO", "CID", "DBQ", "IOW", "MCW", "OTM", "SUX", "FOD")


@dataclass
class Obs:
    station: int
    when: datetime
    special: bool
    temp: float  # degrees C, to tenths
    dew: float
    drct: int | None  # None: variable
    sknt: int
    gust: int | None
    vis: float
    precip: int  # hundredths of an inch in the hour
    alti: float
    sky: tuple[str, int | None]
    wx: str


def _observations(split: str, seed: str, n: int) -> list[Obs]:
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    stations = min(10, 3 + n // 300)
    hours = max(8, n // (stations * (1.08 if dev else 1)))
    start = datetime(2024, 3, 2, 0, 0) if dev else datetime(2024, 11, 9, 0, 0)
    base = [rng.uniform(-4, 8) for _ in range(stations)]
    windy = [rng.uniform(0.6, 1.5) for _ in range(stations)]
    wet = [rng.uniform(0.3, 1.2) for _ in range(stations)]
    minute = [rng.choice((51, 52, 53, 54, 56)) for _ in range(stations)]
    out: list[Obs] = []
    raining = [False] * stations
    for h in range(int(hours)):
        for s in range(stations):
            when = start + timedelta(hours=h, minutes=minute[s])
            day = 6 * math.sin((when.hour - 9) / 24 * 2 * math.pi)
            temp = round(base[s] + day + rng.gauss(0, 1.2) + 0.08 * h % 5, 1)
            if rng.random() < 0.08:
                raining[s] = not raining[s]
            rain = raining[s] and rng.random() < wet[s]
            dew = round(temp - (rng.uniform(0.3, 2) if rain else rng.uniform(2, 9)), 1)
            sknt = max(0, round(rng.gauss(9, 5) * windy[s]))
            gust = sknt + rng.randint(6, 16) if sknt >= 12 and rng.random() < 0.45 else None
            drct = None if sknt <= 5 and rng.random() < 0.4 else rng.randrange(1, 37) * 10
            precip = rng.choice((1, 1, 2, 3, 4, 6, 9, 12, 17)) if rain else 0
            vis = (
                rng.choice((1.5, 2.0, 3.0, 5.0, 7.0))
                if rain
                else 10.0
                if rng.random() < 0.85
                else rng.choice((6.0, 8.0, 9.0))
            )
            cover = rng.choice(("BKN", "OVC")) if rain else rng.choice(("CLR", "FEW", "SCT", "BKN"))
            sky = (cover, None if cover == "CLR" else rng.choice((8, 15, 25, 35, 45, 60, 120, 250)))
            wx = (
                ("-" if precip < 5 else "" if precip < 12 else "+") + ("SN" if temp < 0 else "RA")
                if rain
                else ""
            )
            alti = round(29.92 + 0.3 * math.sin(h / 30 + s) + rng.gauss(0, 0.02), 2)
            out.append(Obs(s, when, False, temp, dew, drct, sknt, gust, vis, precip, alti, sky, wx))
            if dev and rng.random() < 0.07:  # a special report between the hours
                later = when + timedelta(minutes=rng.randint(9, 40))
                g = sknt + rng.randint(8, 18)
                out.append(
                    Obs(
                        s,
                        later,
                        True,
                        round(temp - 0.6, 1),
                        dew,
                        drct or 270,
                        sknt + 3,
                        g,
                        4.0,
                        0,
                        alti,
                        sky,
                        wx,
                    )
                )
    return out


# -- the files ----------------------------------------------------------------------------------


def _c(value: float) -> str:
    v = round(value)
    return f"M{-v:02d}" if v < 0 else f"{v:02d}"


def _tenths(value: float) -> str:
    return f"{1 if value < 0 else 0}{abs(round(value * 10)):03d}"


def _metar(o: Obs, k: int) -> str:
    icao = _DEV_STATIONS[o.station]
    wind = f"{'VRB' if o.drct is None else f'{o.drct:03d}'}{o.sknt:02d}"
    wind += f"G{o.gust:02d}KT" if o.gust else "KT"
    if o.sknt == 0:
        wind = "00000KT"
    vis = f"{o.vis:g}SM".replace("1.5SM", "1 1/2SM")
    sky = "CLR" if o.sky[0] == "CLR" else f"{o.sky[0]}{o.sky[1]:03d}"
    parts = ["SPECI" if o.special else "METAR", icao, f"{o.when:%d%H%M}Z"]
    if k % 5 == 0:
        parts.append("AUTO")
    parts += (
        [wind, vis] + ([o.wx] if o.wx else []) + [sky, f"{_c(o.temp)}/{_c(o.dew)}", f"A{round(o.alti * 100)}"]
    )
    remarks = ["RMK", "AO2"]
    if o.gust and o.gust >= 25 and not o.special:
        remarks.append(f"PK WND {o.drct or 270:03d}{o.gust:02d}/{(o.when.minute - 20) % 60:02d}")
    if not o.special:
        slp = round((o.alti * 33.8639 - 0.2) * 10) % 1000
        remarks.append(f"SLP{slp:03d}")
        if o.precip:
            remarks.append(f"P{o.precip:04d}")
    remarks.append(f"T{_tenths(o.temp)}{_tenths(o.dew)}")
    if o.special:
        remarks.append("$")
    return " ".join(parts + remarks) + "="


def _files(obs: list[Obs]) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    for k, o in enumerate(obs):
        out.setdefault(o.station, []).append(_metar(o, k))
    files = {}
    for s, lines in out.items():
        icao = _DEV_STATIONS[s]
        head = f"# {icao} METAR/SPECI archive, issue times UTC, oldest first\n"
        files[f"metar/{icao}_2024-03.txt"] = head + "\n".join(lines) + "\n"
    return files


def _f(c: float) -> float:
    return round(c * 9 / 5 + 32, 1)


def _columns(obs: list[Obs]) -> dict[str, list]:
    cols: dict[str, list] = {
        k: []
        for k in (
            *("station", "valid", "tmpf", "dwpf", "drct", "sknt", "gust", "p01i"),
            *("alti", "vsby", "skyc1", "skyl1", "wxcodes"),
        )
    }
    for o in sorted(obs, key=lambda o: (o.station, o.when)):
        cols["station"].append(_TEST_STATIONS[o.station])
        cols["valid"].append(f"{o.when:%Y-%m-%d %H:%M}")
        cols["tmpf"].append(_f(o.temp))
        cols["dwpf"].append(_f(o.dew))
        cols["drct"].append(o.drct if o.drct is not None else None)
        cols["sknt"].append(float(o.sknt))
        cols["gust"].append(float(o.gust) if o.gust else None)
        cols["p01i"].append(round(o.precip / 100, 2))
        cols["alti"].append(o.alti)
        cols["vsby"].append(o.vis)
        cols["skyc1"].append(o.sky[0])
        cols["skyl1"].append(None if o.sky[1] is None else o.sky[1] * 100.0)
        cols["wxcodes"].append(o.wx or None)
    return cols


def _fit(split: str, seed: str, chars: int) -> tuple[list[Obs], object]:
    per = 80 if split == "dev" else 105
    n = max(30, chars // per)
    for _ in range(6):
        obs = _observations(split, seed, n)
        context = _files(obs) if split == "dev" else _columns(obs)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(30, round(n * chars / size))
    return obs, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _name(split: str, s: int) -> str:
    return (_DEV_STATIONS if split == "dev" else _TEST_STATIONS)[s]


def _routine(obs: list[Obs]) -> list[Obs]:
    return [o for o in obs if not o.special]


def _ask_count(split: str, rng: random.Random, obs: list[Obs]) -> _Asked:
    o = rng.choice(_routine(obs))
    st = _name(split, o.station)
    if split == "dev":
        n = sum(x.station == o.station and x.gust is not None for x in _routine(obs))
        q = f"How many routine hourly METAR reports (not SPECI) from {st} report a wind gust?"
        return q, n, {"station": st}
    limit = _f(o.temp)
    n = sum(x.station == o.station and _f(x.temp) <= limit for x in obs)
    q = f"Count the observations at station {st} with tmpf at or below {limit:g} °F."
    return q, n, {"station": st, "at_most": limit}


def _ask_total(split: str, rng: random.Random, obs: list[Obs]) -> _Asked:
    o = rng.choice([x for x in _routine(obs) if x.precip] or _routine(obs))
    st, day = _name(split, o.station), o.when.date()
    total = sum(x.precip for x in _routine(obs) if x.station == o.station and x.when.date() == day)
    if split == "dev":
        q = (
            f"What was the total precipitation at {st} on {day:%d %B %Y} (UTC), in inches, "
            "from the hourly P groups?"
        )
    else:
        q = f"Add up p01i at {st} over the UTC day {day}: how many inches of precipitation fell?"
    return q, round(total / 100, 2), {"station": st, "day": f"{day}"}


def _ask_top(split: str, rng: random.Random, obs: list[Obs]) -> _Asked:
    stations = sorted({o.station for o in obs})
    if split == "dev":
        best = {
            _name(split, s): max((o.gust or 0 for o in obs if o.station == s), default=0) for s in stations
        }
        q = (
            "Which station's reports (METAR or SPECI) carry the highest gust (the G value of the wind "
            "group)? Give the ICAO code."
        )
        top = _leader(best)
        return None if top is None or best[top] == 0 else (q, top, {})
    best = {_name(split, s): max(_f(o.temp) for o in obs if o.station == s) for s in stations}
    top = _leader(best)
    q = "At which station was the highest tmpf of the table observed? Give the station id."
    return None if top is None else (q, top, {})


def _ask_lookup(split: str, rng: random.Random, obs: list[Obs]) -> _Asked:
    o = rng.choice(_routine(obs))
    st = _name(split, o.station)
    if split == "dev":
        q = (
            f"What temperature, in whole degrees Celsius as in the report's temperature group, did {st} "
            f"report in its routine METAR issued at {o.when:%H%M}Z on {o.when:%d %B %Y}?"
        )
        return q, round(o.temp), {"station": st, "time": f"{o.when:%Y-%m-%d %H:%M}"}
    q = f"Report the dwpf of station {st} at {o.when:%Y-%m-%d %H:%M} UTC, in °F."
    return q, _f(o.dew), {"station": st, "time": f"{o.when:%Y-%m-%d %H:%M}"}


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "weather",
    "weather observations: METAR reports, a file a station, as a dict of file name to text (dev), or "
    "an ASOS table as a dict of columns (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    obs, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, obs), kind, "lookup", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict of file name to text (METAR)" if ref.split == "dev" else "dict of columns (ASOS)",
        observations=len(obs),
    )
