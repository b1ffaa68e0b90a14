"""Questions about telescope observations: a small observatory's FITS headers, one text a frame, as
a dict of file name to text (``dev``), or a telescope network archive's frame listing loaded into a
pandas DataFrame (``test``).

What a notebook holds when someone sums up an observing run: every frame taken, science exposures
of a few targets through several filters, and the calibration frames around them (bias, darks and
flats, with no target of their own), each with its start time, exposure time, airmass and, where
the reduction measured it, the seeing. Targets whose names extend another's stand beside each other
(``M 5`` and ``M 51``, ``WASP-12`` and ``WASP-121``), and so do a galaxy and the supernova in it.
Frames are added night by night until the text (or the frame as CSV) is about the length asked
for. Kinds of question:

- ``count``: one target's light frames through one filter, or below an airmass (``dev``); one
  target's exposures with a seeing below a value, or taken at one site (``test``);
- ``total``: the exposure time on one target, in minutes, or through one filter, in hours
  (``dev``); the exposure time of one proposal, in hours, or on one target in one band, in minutes
  (``test``);
- ``top``: the target with the most exposure time, or with the most frames through one filter
  (``dev``); the target with the most exposures on one UTC date, or with the most exposure time
  under one proposal (``test``) (a clear leader);
- ``lookup``: the seeing written in one file, or the file of a target's last light frame
  (``dev``); the start of a target's last exposure in one band, or one frame's airmass (``test``).

Every answer is computed from the frames the generator wrote. Score: ``exact``.

Splits: ``dev`` is ``{"20240312/d0042.fits": header}``, each header FITS cards as a camera-control
program writes them, one a line (``DATE-OBS``, ``EXPTIME`` and ``EXPOSURE``, ``IMAGETYP`` such as
``'Light Frame'``, ``FILTER``, ``OBJECT`` with its quotes and padding, ``OBJCTRA``, ``OBJCTDEC``,
``AIRMASS``, ``FWHM`` where measured, ``CCD-TEMP``, ``TELESCOP``, ``INSTRUME``, ``OBSERVER``);
``test`` is a DataFrame (``frame_id`` int64, ``basename``, ``site`` and ``obstype`` categorical,
``target_name`` and ``band`` categorical with NaN for calibrations, ``exposure_s``, ``date_obs_utc``
a UTC datetime, newest first, ``airmass_start`` and ``seeing_arcsec`` floats with NaN, ``proposal_id``):
other containers, fields, targets and wording.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_DEV_TARGETS = (  # object, RA, Dec, how often observed
    ("M 51", "13 29 52.70", "+47 11 42.9", 1.6),
    ("M 5", "15 18 33.22", "+02 04 51.7", 0.8),
    ("M 101", "14 03 12.58", "+54 20 56.2", 1.2),
    ("SN 2023ixf", "14 03 38.56", "+54 18 41.9", 1.4),
    ("M 81", "09 55 33.17", "+69 03 55.1", 1.0),
    ("M 82", "09 55 52.43", "+69 40 46.9", 0.9),
    ("NGC 3077", "10 03 19.07", "+68 44 02.1", 0.5),
    ("M 13", "16 41 41.24", "+36 27 35.5", 1.1),
    ("NGC 4565", "12 36 20.78", "+25 59 15.6", 0.7),
    ("NGC 2903", "09 32 10.11", "+21 30 03.0", 0.6),
)
_DEV_FILTERS = ("L", "R", "G", "B", "Ha", "OIII")
_DEV_OBSERVERS = ("J. Alvarez", "P. Okonkwo", "S. Lindqvist", "M. Tanaka")
_TEST_TARGETS = (  # target, proposal, bands, usual exposure (s)
    ("WASP-12", "LCO2024B-018", ("ip", "zs"), 60.0),
    ("WASP-121", "LCO2024B-018", ("ip", "zs"), 45.0),
    ("HAT-P-32", "LCO2024B-018", ("rp", "ip"), 90.0),
    ("TOI-1431", "LCO2024B-018", ("rp",), 30.0),
    ("SN 2024abfl", "KEY2023B-001", ("gp", "rp", "ip", "B", "V"), 300.0),
    ("SN 2024abfo", "KEY2023B-001", ("gp", "rp", "ip"), 240.0),
    ("AT 2024wpp", "KEY2023B-001", ("gp", "rp", "ip", "zs"), 200.0),
    ("NGC 6397", "EDU2024B-005", ("B", "V"), 120.0),
    ("M 67", "EDU2024B-005", ("B", "V", "rp"), 90.0),
)
_SITES = (
    ("elp", "1m008", "fa05", -6),
    ("lsc", "1m004", "fa15", -4),
    ("cpt", "1m010", "fa16", 2),
    ("coj", "1m011", "fa12", 10),
)  # site, telescope, camera, hours from UTC


@dataclass
class Frame:
    kind: str  # light (science), bias, dark, flat
    target: int  # -1: a calibration frame
    band: str
    exposure: float  # seconds
    start: datetime  # UTC
    airmass: float | None
    seeing: float | None
    file: str = ""
    number: int = 0
    site: int = 0
    observer: int = 0


def _dev_night(rng: random.Random, day: datetime, weight: list[float], short: bool) -> list[Frame]:
    """One night at the observatory (seven hours behind UTC): bias and flats at dusk, two or three
    targets through a few filters each, darks of the same exposures at dawn (fewer of each
    calibration, ``short``, where the whole log is a few dozen frames)."""
    t = day + timedelta(hours=25, minutes=rng.randint(20, 50))  # local evening, the next UTC day
    observer = rng.randrange(len(_DEV_OBSERVERS))
    seq = 0  # the camera numbers each night's files from one
    out: list[Frame] = []

    def add(f: Frame, step: float) -> None:
        nonlocal t, seq
        seq += 1
        f.start, f.observer = t.replace(microsecond=rng.randrange(0, 1000) * 1000), observer
        f.file = f"{day:%Y%m%d}/d{seq:04d}.fits"
        out.append(f)
        t += timedelta(seconds=f.exposure + step)

    for _ in range(rng.randint(1, 2) if short else rng.randint(3, 7)):
        add(Frame("bias", -1, "", 0.0, t, None, None), 6)
    for band in rng.sample(_DEV_FILTERS, 1 if short else rng.randint(2, 4)):
        for _ in range(rng.randint(1, 2) if short else rng.randint(2, 4)):
            add(Frame("flat", -1, band, float(rng.randint(1, 9)), t, None, None), 9)
    t += timedelta(minutes=rng.randint(30, 50))
    used = set()
    for k in rng.choices(range(len(_DEV_TARGETS)), weight, k=rng.randint(2, 3)):
        airmass = rng.uniform(1.0, 2.2)
        for band in rng.sample(_DEV_FILTERS, rng.randint(1, 3)):
            exposure = float(rng.choice((60, 90, 120, 180, 300, 300, 600)))
            used.add(exposure)
            for _ in range(rng.randint(2, 9)):
                airmass = min(2.9, max(1.001, airmass + rng.uniform(-0.04, 0.05)))
                seeing = round(rng.uniform(1.4, 4.2), 2) if rng.random() < 0.85 else None
                add(Frame("light", k, band, exposure, t, round(airmass, 8), seeing), rng.randint(12, 25))
    for exposure in sorted(used):
        for _ in range(1 if short else rng.randint(1, 3)):
            add(Frame("dark", -1, "", exposure, t, None, None), 8)
    return out


def _test_night(rng: random.Random, day: datetime, weight: list[float], number: int) -> list[Frame]:
    """One night's frames at one site of the network: sky flats and bias, then the targets' blocks."""
    site = rng.randrange(len(_SITES))
    t = day + timedelta(hours=19 - _SITES[site][3], minutes=rng.randint(0, 40))
    out: list[Frame] = []

    def add(f: Frame, step: float) -> None:
        nonlocal t, number
        f.start, f.site = t.replace(microsecond=rng.randrange(0, 1000) * 1000), site
        f.number = number = number + rng.randint(1, 3)
        out.append(f)
        t += timedelta(seconds=f.exposure + step)

    for _ in range(rng.randint(2, 5)):
        add(Frame("bias", -1, "", 0.0, t, None, None), 14)
    for band in rng.sample(("gp", "rp", "ip", "zs", "B", "V"), 2):
        for _ in range(rng.randint(1, 3)):
            airmass = round(rng.uniform(1.0, 1.1), 3)
            add(Frame("flat", -1, band, round(rng.uniform(2, 40), 3), t, airmass, None), 20)
    for k in rng.choices(range(len(_TEST_TARGETS)), weight, k=rng.randint(2, 4)):
        _block(rng, k, add)
        t += timedelta(minutes=rng.randint(5, 40))
    if rng.random() < 0.5:
        for _ in range(rng.randint(1, 3)):
            add(Frame("dark", -1, "", 300.0, t, None, None), 10)
    return out


def _block(rng: random.Random, k: int, add: Callable[[Frame, float], None]) -> None:
    """One target's observing block: a few cycles through its bands."""
    _, _, bands, usual = _TEST_TARGETS[k]
    airmass = rng.uniform(1.0, 1.9)
    for _ in range(rng.randint(1, 3)):
        for band in bands:
            for _ in range(rng.randint(1, 4)):
                airmass = min(2.6, max(1.0, airmass + rng.uniform(-0.03, 0.04)))
                seeing = round(rng.uniform(0.9, 3.6), 2) if rng.random() < 0.88 else None
                add(
                    Frame("light", k, band, usual, datetime.min, round(airmass, 3), seeing),
                    rng.randint(28, 40),
                )


def _frames(split: str, seed: str, n: int) -> list[Frame]:
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    targets = _DEV_TARGETS if dev else _TEST_TARGETS
    weight = [rng.uniform(0.4, 2.0) * (t[3] if dev else 1) for t in targets]
    day = datetime(2024, 3, 2) if dev else datetime(2024, 10, 1)
    number = rng.randrange(68_000_000, 74_000_000)
    out: list[Frame] = []
    while len(out) < n:
        if dev:
            out += _dev_night(rng, day, weight, n < 40)
            day += timedelta(days=rng.choice((1, 1, 1, 2, 3)))
        else:
            night = _test_night(rng, day, weight, number)
            number = night[-1].number + rng.randint(5, 400)
            out += night
            day += timedelta(days=rng.choice((0, 1, 1, 1, 2)))
    return out[:n]


# -- the files ----------------------------------------------------------------------------------


def _card(key: str, value: object, comment: str = "") -> str:
    """One header card as FITS writes it: strings quoted from column 11, padded to eight
    characters, numbers and logicals right-aligned to column 30."""
    if isinstance(value, bool):
        text = f"{'T' if value else 'F':>20}"
    elif isinstance(value, str):
        quoted = "'" + value.replace("'", "''").ljust(8) + "'"
        text = f"{quoted:<20}"
    elif isinstance(value, float):
        text = f"{value!r:>20}"
    else:
        text = f"{value:>20}"
    card = f"{key:<8}= {text}" + (f" / {comment}" if comment else "")
    return card.rstrip()


_IMAGETYP = {"light": "Light Frame", "bias": "Bias Frame", "dark": "Dark Frame", "flat": "Flat Field"}


def _header(f: Frame, rng: random.Random) -> str:
    cards = [
        _card("SIMPLE", True, "file does conform to FITS standard"),
        _card("BITPIX", 16, "number of bits per data pixel"),
        _card("NAXIS", 2, "number of data axes"),
        _card("NAXIS1", 4096, "length of data axis 1"),
        _card("NAXIS2", 4096, "length of data axis 2"),
        _card("BZERO", 32768),
        _card("EXPTIME", f.exposure, "[s] duration of exposure"),
        _card("EXPOSURE", f.exposure, "[s] duration of exposure"),
        _card("SET-TEMP", -20.0, "CCD temperature setpoint in C"),
        _card("CCD-TEMP", round(-20 + rng.uniform(-0.3, 0.3), 2), "CCD temperature at start of exposure"),
        _card("XBINNING", 1),
        _card("YBINNING", 1),
        _card("IMAGETYP", _IMAGETYP[f.kind], "type of image"),
        _card("DATE-OBS", f"{f.start:%Y-%m-%dT%H:%M:%S}.{f.start.microsecond // 1000:03d}", "UTC start"),
    ]
    if f.band:
        cards.append(_card("FILTER", f.band, "filter used"))
    if f.kind == "light":
        name, ra, dec, _ = _DEV_TARGETS[f.target]
        cards += [
            _card("OBJECT", name),
            _card("OBJCTRA", ra, "nominal object right ascension"),
            _card("OBJCTDEC", dec, "nominal object declination"),
            _card("AIRMASS", f.airmass, "relative optical path length through atmosphere"),
        ]
        if f.seeing is not None:
            cards.append(_card("FWHM", f.seeing, "[arcsec] median FWHM of stars"))
    elif f.kind in ("bias", "dark"):
        cards.append(_card("OBJECT", f.kind.capitalize()))
    cards += [
        _card("TELESCOP", "PlaneWave CDK24", "telescope used to acquire this image"),
        _card("INSTRUME", "FLI ProLine PL16803", "detector"),
        _card("OBSERVER", _DEV_OBSERVERS[f.observer]),
        _card("SWCREATE", "MaxIm DL Version 6.40", "name of software that created the image"),
        "END",
    ]
    return "\n".join(cards) + "\n"


def _files(frames: list[Frame], seed: str) -> dict[str, str]:
    rng = random.Random(seed)
    return {f.file: _header(f, rng) for f in frames}


def _frame(frames: list[Frame]) -> pd.DataFrame:
    import pandas as pd  # only here: listing and the dev split need no pandas

    rows = sorted(frames, key=lambda f: f.start, reverse=True)  # newest first, as the archive lists them
    nan = float("nan")
    obstype = {"light": "EXPOSE", "bias": "BIAS", "dark": "DARK", "flat": "SKYFLAT"}
    targets = [t[0] for t in _TEST_TARGETS]
    return pd.DataFrame(
        {
            "frame_id": pd.array([f.number for f in rows], dtype="int64"),
            "basename": [
                f"{_SITES[f.site][0]}{_SITES[f.site][1]}-{_SITES[f.site][2]}-{f.start:%Y%m%d}-"
                f"{f.number % 10_000:04d}-e91"
                for f in rows
            ],
            "site": pd.Categorical([_SITES[f.site][0] for f in rows], categories=[s[0] for s in _SITES]),
            "obstype": pd.Categorical([obstype[f.kind] for f in rows]),
            "target_name": pd.Categorical(
                [targets[f.target] if f.target >= 0 else nan for f in rows], categories=targets
            ),
            "band": pd.Categorical([f.band or nan for f in rows]),
            "exposure_s": [f.exposure for f in rows],
            "date_obs_utc": pd.to_datetime([f.start for f in rows]).tz_localize("UTC"),
            "airmass_start": [nan if f.airmass is None else f.airmass for f in rows],
            "seeing_arcsec": [nan if f.seeing is None else f.seeing for f in rows],
            "proposal_id": [_TEST_TARGETS[f.target][1] if f.target >= 0 else "calibrate" for f in rows],
        }
    )


def _fit(split: str, seed: str, chars: int) -> tuple[list[Frame], object]:
    per = 1150 if split == "dev" else 150
    n = max(5, chars // per)
    for _ in range(6):
        frames = _frames(split, seed, n)
        context = _files(frames, seed) if split == "dev" else _frame(frames)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(5, round(n * chars / size))
    return frames, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _lights(frames: list[Frame]) -> list[Frame]:
    return [f for f in frames if f.kind == "light"]


def _name(split: str, f: Frame) -> str:
    return (_DEV_TARGETS if split == "dev" else _TEST_TARGETS)[f.target][0]


def _ask_count(split: str, rng: random.Random, frames: list[Frame]) -> _Asked:
    f = rng.choice(_lights(frames))
    name, lights = _name(split, f), _lights(frames)
    mine = [x for x in lights if x.target == f.target]
    if split == "dev":
        if rng.random() < 0.5:
            n = sum(x.band == f.band for x in mine)
            return (
                f"How many light frames of {name} were taken through the {f.band} filter?",
                n,
                {"object": name, "filter": f.band},
            )
        below = round(f.airmass + rng.uniform(0.002, 0.2), 2)
        n = sum(x.airmass < below for x in mine)
        q = f"How many of the light frames of {name} have an AIRMASS below {below}?"
        return q, n, {"object": name, "below": below}
    if f.seeing is not None and rng.random() < 0.5:
        below = round(f.seeing + rng.uniform(0.005, 0.5), 2)
        n = sum(x.seeing is not None and x.seeing < below for x in mine)
        q = f"Count the EXPOSE frames of {name} whose seeing_arcsec is under {below}."
        return q, n, {"target": name, "below": below}
    site = _SITES[f.site][0]
    n = sum(x.site == f.site for x in mine)
    return (
        f"Count the science (EXPOSE) frames of {name} taken at site {site}.",
        n,
        {"target": name, "site": site},
    )


def _ask_total(split: str, rng: random.Random, frames: list[Frame]) -> _Asked:
    f = rng.choice(_lights(frames))
    name, lights = _name(split, f), _lights(frames)
    if split == "dev":
        if rng.random() < 0.5:
            seconds = sum(x.exposure for x in lights if x.target == f.target)
            q = f"What is the total exposure time of the light frames of {name}, in minutes (one decimal)?"
            return q, round(seconds / 60, 1), {"object": name}
        seconds = sum(x.exposure for x in lights if x.band == f.band)
        q = f"Over every target, how many hours of light frames were exposed through {f.band}? Two decimals."
        return q, round(seconds / 3600, 2), {"filter": f.band}
    if rng.random() < 0.5:
        proposal = _TEST_TARGETS[f.target][1]
        seconds = sum(x.exposure for x in lights if _TEST_TARGETS[x.target][1] == proposal)
        q = f"Add up exposure_s over the EXPOSE frames of proposal {proposal}: how many hours (two decimals)?"
        return q, round(seconds / 3600, 2), {"proposal": proposal}
    seconds = sum(x.exposure for x in lights if x.target == f.target and x.band == f.band)
    q = f"Summed over its EXPOSE frames in band {f.band}, how many minutes was {name} exposed (one decimal)?"
    return q, round(seconds / 60, 1), {"target": name, "band": f.band}


def _ask_top(split: str, rng: random.Random, frames: list[Frame]) -> _Asked:
    f = rng.choice(_lights(frames))
    lights = _lights(frames)
    counts: dict = {}
    wide = rng.random() < 0.5
    if split == "dev":
        for x in lights if wide else [x for x in lights if x.band == f.band]:
            counts[_name(split, x)] = counts.get(_name(split, x), 0) + (x.exposure if wide else 1)
        top = _leader(counts)
        if wide:
            return (
                None
                if top is None
                else ("Which OBJECT has the most light-frame exposure time in all?", top, {})
            )
        q = f"Which object has the most light frames taken through the {f.band} filter?"
        return None if top is None else (q, top, {"filter": f.band})
    if wide:
        day = f"{f.start:%Y-%m-%d}"
        for x in lights:
            if f"{x.start:%Y-%m-%d}" == day:
                counts[_name(split, x)] = counts.get(_name(split, x), 0) + 1
        top = _leader(counts)
        q = f"Which target_name has the most EXPOSE frames with a date_obs_utc on {day}?"
        return None if top is None else (q, top, {"day": day})
    proposal = _TEST_TARGETS[f.target][1]
    for x in lights:
        if _TEST_TARGETS[x.target][1] == proposal:
            counts[_name(split, x)] = counts.get(_name(split, x), 0) + x.exposure
    top = _leader(counts)
    q = f"Under proposal {proposal}, which target got the largest total exposure_s on EXPOSE frames?"
    return None if top is None else (q, top, {"proposal": proposal})


def _ask_lookup(split: str, rng: random.Random, frames: list[Frame]) -> _Asked:
    f = rng.choice(_lights(frames))
    name = _name(split, f)
    if split == "dev":
        if rng.random() < 0.5:
            if f.seeing is None:
                return None
            return (
                f"What FWHM (seeing, in arcseconds) does the header of {f.file} give?",
                f.seeing,
                {"file": f.file},
            )
        last = max((x for x in _lights(frames) if x.target == f.target), key=lambda x: x.start)
        return (
            f"Which file holds the last light frame of {name} (the latest DATE-OBS)?",
            last.file,
            {"object": name},
        )
    if rng.random() < 0.5:
        last = max(
            (x for x in _lights(frames) if x.target == f.target and x.band == f.band), key=lambda x: x.start
        )
        q = f"When did the latest EXPOSE frame of {name} in band {f.band} start (UTC, YYYY-MM-DD HH:MM:SS)?"
        return q, f"{last.start:%Y-%m-%d %H:%M:%S}", {"target": name, "band": f.band}
    return f"What airmass_start is listed for frame_id {f.number}?", f.airmass, {"frame_id": f.number}


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "telescope",
    "telescope observations: FITS headers as a dict of file name to text (dev), or an archive's frame "
    "listing as a pandas DataFrame (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    frames, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, frames), kind, "total", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict of file name to text (FITS headers)" if ref.split == "dev" else "DataFrame (frames)",
        frames=len(frames),
    )
