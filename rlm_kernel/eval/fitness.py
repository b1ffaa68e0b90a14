"""Questions about fitness tracking: a US wearer's fitness tracker account export, the JSON files of
its exercises, sleep and resting heart rate, as a dict of file name to text (``dev``), or a UK
iPhone and watch owner's health app export, the ``export.xml`` as one string (``test``).

What a notebook holds when someone looks back over weeks of workouts and nights: each exercise's
type, start, duration and active time, calories, heart rate, steps and distance; each night's sleep
with its stages; each day's resting heart rate; or the phone's and the watch's step and heart rate
samples, the workouts with their statistics and each day's activity rings. The tracker writes its
exercise times American (month first, two-digit year), its sleep times ISO, its durations in
milliseconds, files its sleep newest first, logs a nap beside the main sleep, and gives a resting
heart rate of 0 on a day it could not measure one; activity names extend another's (``Bike`` and
``Outdoor Bike``). The health export counts steps from the phone and the watch both, each as its
own source, writes each time with its UTC offset (which moves when British Summer Time starts),
names the sources with a typographic apostrophe, and holds workouts from another app with no heart
rate.
Hours are added until the text (or the indented JSON) is about the length asked for, the export
made part way through the last day. Kinds of question:

- ``count``: one activity's exercises in a span of days, or the nights in a span whose main sleep
  gave fewer than so many minutes asleep (``dev``); one workout type's workouts in a span of days,
  or the days in a span that met the move goal (``test``);
- ``total``: the kilometres one activity covered in a span, or the calories it burned (``dev``);
  one source's steps on one day, or the distance of one workout type in a span (``test``);
- ``top``: the activity with the most active time in a span, or the day with the lowest resting
  heart rate (``dev``); the workout type with the longest total duration in a span, or the day with
  the most exercise minutes (``test``) (a clear leader);
- ``lookup``: one exercise's average heart rate, or the minutes asleep of the night ending on one
  day (``dev``); one workout's average heart rate, or one day's stand hours (``test``).

Every answer is computed from the days the generator wrote. Score: ``exact``.

Splits: ``dev`` is ``{"Takeout/Fitbit/Global Export Data/exercise-0.json": text, ...}`` with
exercise files of a hundred logs (``logId``, ``activityName``, ``activityTypeId``,
``activityLevel``, ``averageHeartRate``, ``calories``, ``duration`` and ``activeDuration`` in
milliseconds, ``steps``, ``distance`` with ``distanceUnit``, ``logType``, ``heartRateZones``,
``startTime`` as ``MM/DD/YY HH:MM:SS``, ...), sleep files (``dateOfSleep``, ``startTime``,
``endTime``, ``minutesAsleep``, ``minutesAwake``, ``timeInBed``, ``type``, ``levels`` with its
``summary`` and ``data``, ``mainSleep``) and resting heart rate files (``dateTime``, ``value`` with
``date``, ``value`` and ``error``); ``test`` is the XML (``HealthData`` with ``ExportDate``, ``Me``,
``Record`` elements of ``HKQuantityTypeIdentifierStepCount`` and ``HKQuantityTypeIdentifierHeartRate``
with ``sourceName``, ``device``, ``unit``, ``startDate``, ``endDate`` and ``value``, ``Workout``
elements with ``workoutActivityType``, ``duration``, ``MetadataEntry`` and ``WorkoutStatistics``,
and ``ActivitySummary`` elements with ``dateComponents``, the rings and their goals): other
containers, fields, people and wording.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from xml.sax.saxutils import escape

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _tie(value: float, places: int) -> bool:
    """Whether ``value`` lies on a rounding tie at ``places`` decimals (where readers may round
    either way)."""
    scaled = abs(value) * 10**places
    return abs(scaled - int(scaled) - 0.5) < 1e-6


def _span(rng: random.Random, days: list[date]) -> tuple[date, date]:
    if len(days) <= 3:
        return days[0], days[-1]
    first = rng.randrange(0, len(days) - 2)
    last = min(len(days) - 1, first + rng.randrange(2, 14))
    return days[first], days[last]


# -- the dev export -----------------------------------------------------------------------------

_ACTIVITIES = (  # name, type id, weight, kcal a minute, heart rate, steps a minute, km an hour
    ("Walk", 90013, 3.0, 4.6, 99, 104, 5.1),
    ("Run", 90009, 1.6, 11.2, 151, 164, 10.4),
    ("Outdoor Bike", 90001, 1.0, 8.6, 132, 0, 20.5),
    ("Bike", 1071, 0.5, 7.4, 125, 0, 0.0),
    ("Treadmill", 90019, 0.5, 9.6, 142, 150, 0.0),
    ("Weights", 2131, 0.8, 5.4, 111, 0, 0.0),
    ("Yoga", 52001, 0.6, 3.1, 91, 0, 0.0),
    ("Swim", 90024, 0.4, 9.1, 127, 0, 0.0),
    ("Hike", 90012, 0.3, 6.6, 117, 108, 3.9),
)
_SOURCE = {
    "type": "app",
    "name": "Fitbit for Android",
    "id": "228VSR",
    "url": "https://www.fitbit.com/android",
    "trackerFeatures": ["GPS", "STEPS", "CALORIES", "HEARTRATE", "ELEVATION", "DISTANCE"],
}
_FOLDER = "Takeout/Fitbit/Global Export Data"


@dataclass
class Exercise:
    kind: int
    start: datetime
    seconds: int
    active: int  # seconds moving: less than the duration where a tracked workout was paused
    calories: int
    heart: int | None  # None: logged by hand, no heart rate
    steps: int
    km: float
    log: str  # auto_detected, manual or tracker
    ident: int


@dataclass
class Night:
    ident: int
    start: datetime
    stages: list[tuple[str, int]]  # level, minutes
    main: bool

    @property
    def minutes(self) -> int:
        return sum(m for _, m in self.stages)

    @property
    def end(self) -> datetime:
        return self.start + timedelta(minutes=self.minutes)

    @property
    def asleep(self) -> int:
        return sum(m for level, m in self.stages if level not in ("wake", "awake"))


@dataclass
class Tracked:
    exercises: list[Exercise] = field(default_factory=list)
    nights: list[Night] = field(default_factory=list)
    resting: list[tuple[date, float, float]] = field(default_factory=list)  # day, rate, error


def _exercise(rng: random.Random, day: datetime, favour: list[float], ident: int) -> Exercise:
    k = rng.choices(range(len(_ACTIVITIES)), favour)[0]
    name, _, _, kcal, heart, cadence, speed = _ACTIVITIES[k]
    start = day + timedelta(minutes=rng.randrange(6 * 60, 20 * 60), seconds=rng.randrange(60))
    seconds = rng.randrange(12 * 60, 95 * 60)
    log = rng.choices(("auto_detected", "tracker", "manual"), (5, 3, 1))[0]
    if name == "Walk" and log == "manual":
        log = "auto_detected"
    active = seconds - (rng.randrange(0, seconds // 8) if log == "tracker" else 0)
    minutes = active / 60
    km = round(speed * active / 3600 * rng.uniform(0.8, 1.2), 6) if speed else 0.0
    return Exercise(
        k,
        start,
        seconds,
        active,
        round(kcal * minutes * rng.uniform(0.8, 1.2)),
        None if log == "manual" else round(heart * rng.uniform(0.9, 1.1)),
        round(cadence * minutes * rng.uniform(0.85, 1.1)),
        km,
        log,
        ident,
    )


def _stages(rng: random.Random, minutes: int) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = [("wake", rng.randrange(2, 12))]
    cycle = ("light", "deep", "light", "rem", "wake")
    k = 0
    while sum(m for _, m in out) < minutes:
        level = cycle[k % len(cycle)]
        length = rng.randrange(1, 6) if level == "wake" else rng.randrange(20, 75)
        out.append((level, length))
        k += 1
    over = sum(m for _, m in out) - minutes
    level, length = out[-1]
    out[-1] = (level, length - over)
    return [s for s in out if s[1] > 0]


def _nap(rng: random.Random, minutes: int) -> list[tuple[str, int]]:
    out = []
    left = minutes
    while left > 0:
        level = rng.choices(("asleep", "restless", "awake"), (6, 2, 1))[0]
        length = min(left, rng.randrange(2, 20))
        out.append((level, length))
        left -= length
    return out


def _dev_tracked(seed: str, hours: int) -> tuple[Tracked, datetime]:
    rng = random.Random(f"{seed}/{hours}")
    start = datetime(2024, 1, 8) + timedelta(days=rng.randrange(0, 230))
    cutoff = start + timedelta(hours=hours, minutes=rng.randrange(60))
    favour = [a[2] * rng.uniform(0.4, 1.8) for a in _ACTIVITIES]
    base = rng.uniform(52, 66)
    out = Tracked()
    exercise_id, sleep_id = (
        rng.randrange(40_000_000_000, 60_000_000_000),
        rng.randrange(40_000_000_000, 45_000_000_000),
    )
    day = start
    while day < cutoff:
        if day == start or rng.random() < 0.94:
            bed = day - timedelta(minutes=rng.randrange(0, 130))
            night = Night(sleep_id, bed, _stages(rng, rng.randrange(330, 560)), True)
            sleep_id += rng.randrange(100, 9000)
            if night.end < cutoff:
                out.nights.append(night)
        for _ in range(rng.choices((0, 1, 2), (4, 5, 2))[0]):
            ex = _exercise(rng, day, favour, exercise_id)
            exercise_id += rng.randrange(1000, 90_000)
            if ex.start + timedelta(seconds=ex.seconds) < cutoff:
                out.exercises.append(ex)
        if rng.random() < 0.12:
            nap = Night(
                sleep_id,
                day + timedelta(minutes=rng.randrange(780, 960)),
                _nap(rng, rng.randrange(20, 95)),
                False,
            )
            sleep_id += rng.randrange(100, 9000)
            if nap.end < cutoff:
                out.nights.append(nap)
        if day + timedelta(days=1) <= cutoff:
            if rng.random() < 0.06:
                out.resting.append((day.date(), 0.0, 0.0))
            else:
                rate = base + rng.gauss(0, 1.6)
                out.resting.append((day.date(), round(rate, 14), round(rng.uniform(5.5, 8.5), 14)))
        day += timedelta(days=1)
    out.exercises.sort(key=lambda e: e.start)
    out.nights.sort(key=lambda n: n.start)
    return out, cutoff


def _us(t: datetime) -> str:
    return f"{t:%m/%d/%y %H:%M:%S}"


def _ms(t: datetime) -> str:
    return f"{t:%Y-%m-%dT%H:%M:%S}.000"


def _levels(seconds: int, rng: random.Random) -> list[dict]:
    """Activity level minutes that add up to the exercise's."""
    minutes = round(seconds / 60)
    shares = [rng.uniform(0.1, 1.0) for _ in range(4)]
    split = [int(minutes * s / sum(shares)) for s in shares]
    split[2] += minutes - sum(split)
    return [
        {"minutes": m, "name": n}
        for m, n in zip(split, ("sedentary", "lightly", "fairly", "very"), strict=True)
    ]


def _zones(seconds: int, heart: int, rng: random.Random) -> list[dict]:
    minutes = round(seconds / 60)
    peak = min(3, max(0, (heart - 120) // 10))
    shares = [rng.uniform(0.2, 1.0) * (1 + (k == peak) * 3) for k in range(4)]
    split = [int(minutes * s / sum(shares)) for s in shares]
    split[peak] += minutes - sum(split)
    bounds = ((30, 97), (97, 121), (121, 148), (148, 220))
    names = ("Out of Range", "Fat Burn", "Cardio", "Peak")
    return [
        {"name": n, "min": lo, "max": hi, "minutes": m}
        for n, (lo, hi), m in zip(names, bounds, split, strict=True)
    ]


def _exercise_log(ex: Exercise, rng: random.Random) -> dict:
    name, type_id, *_ = _ACTIVITIES[ex.kind]
    rec: dict = {
        "logId": ex.ident,
        "activityName": name,
        "activityTypeId": type_id,
        "activityLevel": _levels(ex.seconds, rng),
    }
    if ex.heart is not None:
        rec["averageHeartRate"] = ex.heart
    rec.update({"calories": ex.calories, "duration": ex.seconds * 1000, "activeDuration": ex.active * 1000})
    if ex.steps:
        rec["steps"] = ex.steps
    rec["logType"] = ex.log
    rec["manualValuesSpecified"] = {"calories": False, "distance": ex.log == "manual", "steps": False}
    if ex.heart is not None:
        rec["heartRateZones"] = _zones(ex.seconds, ex.heart, rng)
    if ex.log == "tracker":
        rec["source"] = _SOURCE
        rec["tcxLink"] = f"https://www.fitbit.com/activities/exercise/{ex.ident}?export=tcx"
    if ex.km:
        rec.update({"distance": ex.km, "distanceUnit": "Kilometer"})
    end = ex.start + timedelta(seconds=ex.seconds)
    rec.update(
        {
            "lastModified": _us(end + timedelta(minutes=rng.randrange(1, 90))),
            "startTime": _us(ex.start),
            "originalStartTime": _us(ex.start),
            "originalDuration": ex.seconds * 1000,
            "elevationGain": round(rng.uniform(0, 60), 1) if ex.km else 0.0,
            "hasGps": ex.log == "tracker",
            "shouldFetchDetails": ex.log == "tracker",
            "hasActiveZoneMinutes": ex.heart is not None,
        }
    )
    return rec


def _summary(night: Night) -> dict:
    out: dict = {}
    for level, minutes in night.stages:
        entry = out.setdefault(level, {"count": 0, "minutes": 0})
        entry["count"] += 1
        entry["minutes"] += minutes
    levels = ("deep", "wake", "light", "rem") if night.main else ("asleep", "awake", "restless")
    return {
        level: {
            **out.get(level, {"count": 0, "minutes": 0}),
            **({"thirtyDayAvgMinutes": 0} if night.main else {}),
        }
        for level in levels
    }


def _sleep_log(night: Night) -> dict:
    awake = night.minutes - night.asleep
    data, t = [], night.start
    for level, minutes in night.stages:
        data.append({"dateTime": _ms(t), "level": level, "seconds": minutes * 60})
        t += timedelta(minutes=minutes)
    return {
        "logId": night.ident,
        "dateOfSleep": night.end.date().isoformat(),
        "startTime": _ms(night.start),
        "endTime": _ms(night.end),
        "duration": night.minutes * 60_000,
        "minutesToFallAsleep": 0,
        "minutesAsleep": night.asleep,
        "minutesAwake": awake,
        "minutesAfterWakeup": 0,
        "timeInBed": night.minutes,
        "efficiency": round(100 * night.asleep / night.minutes),
        "type": "stages" if night.main else "classic",
        "infoCode": 0,
        "logType": "auto_detected",
        "levels": {"summary": _summary(night), "data": data, "shortData": []},
        "mainSleep": night.main,
    }


def _jackson(records: list[dict]) -> str:
    return json.dumps(records, indent=2, separators=(",", " : "))


def _export(tracked: Tracked, seed: str) -> dict[str, str]:
    rng = random.Random(seed)
    files: dict[str, str] = {}
    for k in range(0, len(tracked.exercises), 100):
        logs = [_exercise_log(ex, rng) for ex in tracked.exercises[k : k + 100]]
        files[f"{_FOLDER}/exercise-{k}.json"] = _jackson(logs)
    months: dict[str, list] = {}
    for night in tracked.nights:
        months.setdefault(f"{night.end:%Y-%m}-01", []).append(_sleep_log(night))
    for first, logs in months.items():
        files[f"{_FOLDER}/sleep-{first}.json"] = _jackson(logs[::-1])  # newest first
    rates: dict[str, list] = {}
    for day, rate, error in tracked.resting:
        stamp = f"{day:%m/%d/%y}"
        rates.setdefault(f"{day:%Y-%m}-01", []).append(
            {"dateTime": f"{stamp} 00:00:00", "value": {"date": stamp, "value": rate, "error": error}}
        )
    for first, logs in rates.items():
        files[f"{_FOLDER}/resting_heart_rate-{first}.json"] = _jackson(logs)
    return dict(sorted(files.items()))


# -- the test export ----------------------------------------------------------------------------

_WORKOUTS = (  # type, weight, kcal a minute, heart rate, km an hour, distance statistic
    ("Running", 1.6, 11.0, 153, 10.2, "DistanceWalkingRunning"),
    ("Walking", 2.6, 4.4, 101, 5.2, "DistanceWalkingRunning"),
    ("Hiking", 0.4, 6.2, 116, 4.1, "DistanceWalkingRunning"),
    ("Cycling", 1.1, 8.2, 131, 21.0, "DistanceCycling"),
    ("TraditionalStrengthTraining", 0.9, 5.6, 112, 0.0, ""),
    ("FunctionalStrengthTraining", 0.5, 6.4, 121, 0.0, ""),
    ("Yoga", 0.6, 3.0, 90, 0.0, ""),
    ("HighIntensityIntervalTraining", 0.5, 10.4, 149, 0.0, ""),
)
_OWNERS = ("Sam", "Priya", "Callum", "Niamh", "Tomasz", "Hannah", "Oluwaseun", "Freya")
_PHONE_HW, _WATCH_HW = ("iPhone15,2", "17.4.1"), ("Watch6,1", "10.4")


@dataclass
class Sample:
    kind: str  # StepCount or HeartRate
    phone: bool
    start: datetime
    end: datetime
    value: int
    made: datetime


@dataclass
class Workout:
    kind: int
    start: datetime
    seconds: float
    kcal: float
    heart: float | None  # None: recorded by another app
    km: float
    made: datetime
    indoor: bool


@dataclass
class Rings:
    day: date
    energy: float
    energy_goal: int
    exercise: int
    exercise_goal: int
    stand: int
    stand_goal: int


@dataclass
class Health:
    owner: str
    samples: list[Sample] = field(default_factory=list)
    workouts: list[Workout] = field(default_factory=list)
    rings: list[Rings] = field(default_factory=list)
    exported: datetime = datetime(2024, 1, 1)


def _bst(t: datetime) -> bool:
    """Whether a London local time in 2024 is in British Summer Time (31 March to 27 October)."""
    return datetime(2024, 3, 31, 2) <= t < datetime(2024, 10, 27, 2)


def _apple(t: datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S} {'+0100' if _bst(t) else '+0000'}"


def _samples(rng: random.Random, day: datetime, cutoff: datetime) -> list[Sample]:
    out = []
    for phone in (True, False):
        for _ in range(rng.randrange(2, 5)):
            start = day + timedelta(minutes=rng.randrange(7 * 60, 22 * 60), seconds=rng.randrange(60))
            end = start + timedelta(seconds=rng.randrange(60, 900))
            made = end + timedelta(seconds=rng.randrange(20, 1800))
            if made < cutoff:
                out.append(Sample("StepCount", phone, start, end, rng.randrange(18, 1400), made))
    for _ in range(rng.randrange(1, 4)):
        start = day + timedelta(minutes=rng.randrange(0, 24 * 60), seconds=rng.randrange(60))
        made = start + timedelta(seconds=rng.randrange(5, 600))
        if made < cutoff:
            out.append(Sample("HeartRate", False, start, start, rng.randrange(52, 118), made))
    return out


def _workout(rng: random.Random, day: datetime, favour: list[float]) -> Workout:
    k = rng.choices(range(len(_WORKOUTS)), favour)[0]
    _, _, kcal, heart, speed, _ = _WORKOUTS[k]
    seconds = rng.randrange(15 * 60, 100 * 60) + rng.randrange(1, 10**6) / 10**6
    start = day + timedelta(minutes=rng.randrange(6 * 60, 21 * 60), seconds=rng.randrange(60))
    other = rng.random() < 0.12
    km = round(speed * seconds / 3600 * rng.uniform(0.85, 1.15), 4) if speed else 0.0
    return Workout(
        k,
        start,
        seconds,
        round(kcal * seconds / 60 * rng.uniform(0.8, 1.2), 3),
        None if other else round(heart * rng.uniform(0.9, 1.1), 3),
        km,
        start + timedelta(seconds=seconds + rng.randrange(5, 300)),
        k in (4, 5, 6, 7) or (k == 0 and rng.random() < 0.2),
    )


def _test_health(seed: str, hours: int) -> Health:
    rng = random.Random(f"{seed}/{hours}")
    start = datetime(2024, 2, 12) + timedelta(days=rng.randrange(0, 200))
    cutoff = start + timedelta(hours=hours, minutes=rng.randrange(60))
    favour = [w[1] * rng.uniform(0.4, 1.8) for w in _WORKOUTS]
    out = Health(rng.choice(_OWNERS), exported=cutoff)
    goal = rng.choice((400, 450, 500, 550, 600))
    day = start
    while day < cutoff:
        out.samples += _samples(rng, day, cutoff)
        for _ in range(rng.choices((0, 1, 2), (3, 5, 2))[0]):
            w = _workout(rng, day, favour)
            if w.made < cutoff:
                out.workouts.append(w)
        if day + timedelta(days=1) <= cutoff:
            if rng.random() < 0.08:
                goal = rng.choice((400, 450, 500, 550, 600, 650))
            minutes = sum(w.seconds for w in out.workouts if w.start.date() == day.date()) / 60
            out.rings.append(
                Rings(
                    day.date(),
                    round(goal * rng.uniform(0.45, 1.6), 4),
                    goal,
                    round(minutes * rng.uniform(0.8, 1.0)) + rng.randrange(0, 25),
                    30,
                    rng.randrange(4, 16),
                    12,
                )
            )
        day += timedelta(days=1)
    out.samples.sort(key=lambda s: (s.kind != "StepCount", s.start))
    out.workouts.sort(key=lambda w: w.start)
    return out


_DTD = """<!DOCTYPE HealthData [
<!-- HealthKit Export Version: 14 -->
<!ELEMENT HealthData (ExportDate,Me,(RECORDS)*)>
<!ATTLIST HealthData
  locale CDATA #REQUIRED
>
<!ELEMENT ExportDate EMPTY>
<!ATTLIST ExportDate
  value CDATA #REQUIRED
>
<!ELEMENT Me EMPTY>
<!ATTLIST Me
  HKCharacteristicTypeIdentifierDateOfBirth                 CDATA #REQUIRED
  HKCharacteristicTypeIdentifierBiologicalSex               CDATA #REQUIRED
  HKCharacteristicTypeIdentifierBloodType                   CDATA #REQUIRED
  HKCharacteristicTypeIdentifierFitzpatrickSkinType         CDATA #REQUIRED
  HKCharacteristicTypeIdentifierCardioFitnessMedicationsUse CDATA #REQUIRED
>
<!ELEMENT Record ((MetadataEntry|HeartRateVariabilityMetadataList)*)>
<!ATTLIST Record
  type          CDATA #REQUIRED
  unit          CDATA #IMPLIED
  value         CDATA #IMPLIED
  sourceName    CDATA #REQUIRED
  sourceVersion CDATA #IMPLIED
  device        CDATA #IMPLIED
  creationDate  CDATA #IMPLIED
  startDate     CDATA #REQUIRED
  endDate       CDATA #REQUIRED
>
<!ELEMENT MetadataEntry EMPTY>
<!ATTLIST MetadataEntry
  key   CDATA #REQUIRED
  value CDATA #REQUIRED
>
<!ELEMENT Workout ((MetadataEntry|WorkoutEvent|WorkoutRoute|WorkoutStatistics)*)>
<!ATTLIST Workout
  workoutActivityType   CDATA #REQUIRED
  duration              CDATA #IMPLIED
  durationUnit          CDATA #IMPLIED
  sourceName            CDATA #REQUIRED
  sourceVersion         CDATA #IMPLIED
  device                CDATA #IMPLIED
  creationDate          CDATA #IMPLIED
  startDate             CDATA #REQUIRED
  endDate               CDATA #REQUIRED
>
<!ELEMENT WorkoutStatistics EMPTY>
<!ATTLIST WorkoutStatistics
  type      CDATA #REQUIRED
  startDate CDATA #REQUIRED
  endDate   CDATA #REQUIRED
  average   CDATA #IMPLIED
  minimum   CDATA #IMPLIED
  maximum   CDATA #IMPLIED
  sum       CDATA #IMPLIED
  unit      CDATA #IMPLIED
>
<!ELEMENT ActivitySummary EMPTY>
<!ATTLIST ActivitySummary
  dateComponents           CDATA #IMPLIED
  activeEnergyBurned       CDATA #IMPLIED
  activeEnergyBurnedGoal   CDATA #IMPLIED
  activeEnergyBurnedUnit   CDATA #IMPLIED
  appleMoveTime            CDATA #IMPLIED
  appleMoveTimeGoal        CDATA #IMPLIED
  appleExerciseTime        CDATA #IMPLIED
  appleExerciseTimeGoal    CDATA #IMPLIED
  appleStandHours          CDATA #IMPLIED
  appleStandHoursGoal      CDATA #IMPLIED
>
]>""".replace(
    "RECORDS", "Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription"
)


def _attr(value: str) -> str:
    return escape(value, {'"': "&quot;"})


def _device(phone: bool, made: datetime) -> str:
    hardware, software = _PHONE_HW if phone else _WATCH_HW
    name, model = ("iPhone", "iPhone") if phone else ("Apple Watch", "Watch")
    return _attr(
        f"<<HKDevice: 0x28{'3c5' if phone else '1f0'}a{made:%H%M}0>, name:{name}, manufacturer:Apple Inc., "
        f"model:{model}, hardware:{hardware}, software:{software}>"
    )


def _record(s: Sample, owner: str) -> list[str]:
    source = f"{owner}\u2019s {'iPhone' if s.phone else 'Apple Watch'}"
    version = _PHONE_HW[1] if s.phone else _WATCH_HW[1]
    unit = "count" if s.kind == "StepCount" else "count/min"
    head = (
        f' <Record type="HKQuantityTypeIdentifier{s.kind}" sourceName="{_attr(source)}" '
        f'sourceVersion="{version}" '
        f'device="{_device(s.phone, s.made)}" unit="{unit}" creationDate="{_apple(s.made)}" '
        f'startDate="{_apple(s.start)}" endDate="{_apple(s.end)}" value="{s.value}"'
    )
    if s.kind == "StepCount":
        return [head + "/>"]
    return [
        head + ">",
        '  <MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="0"/>',
        " </Record>",
    ]


def _statistic(kind: str, w: Workout, values: str) -> str:
    end = w.start + timedelta(seconds=w.seconds)
    return (
        f'  <WorkoutStatistics type="HKQuantityTypeIdentifier{kind}" startDate="{_apple(w.start)}" '
        f'endDate="{_apple(end)}" {values}/>'
    )


def _clock(t: datetime) -> str:
    """``7.05am``, as the export names a route's file."""
    return f"{(t.hour - 1) % 12 + 1}.{t.minute:02d}{'am' if t.hour < 12 else 'pm'}"


def _workout_xml(w: Workout, owner: str) -> list[str]:
    name, *_, statistic = _WORKOUTS[w.kind]
    end = w.start + timedelta(seconds=w.seconds)
    if w.heart is None:
        source, version, device = "Strava", "38420", ""
    else:
        source, version = f"{owner}\u2019s Apple Watch", _WATCH_HW[1]
        device = f' device="{_device(False, w.made)}"'
    out = [
        f' <Workout workoutActivityType="HKWorkoutActivityType{name}" duration="{w.seconds / 60!r}" '
        f'durationUnit="min" sourceName="{_attr(source)}" sourceVersion="{version}"{device} '
        f'creationDate="{_apple(w.made)}" startDate="{_apple(w.start)}" endDate="{_apple(end)}">',
        f'  <MetadataEntry key="HKIndoorWorkout" value="{int(w.indoor)}"/>',
    ]
    if w.heart is not None:
        out.append('  <MetadataEntry key="HKTimeZone" value="Europe/London"/>')
    out.append(_statistic("ActiveEnergyBurned", w, f'sum="{w.kcal}" unit="kcal"'))
    if w.km:
        out.append(_statistic(statistic, w, f'sum="{w.km}" unit="km"'))
    if w.heart is not None:
        lo, hi = round(w.heart * 0.7), round(w.heart * 1.18)
        out.append(
            _statistic("HeartRate", w, f'average="{w.heart}" minimum="{lo}" maximum="{hi}" unit="count/min"')
        )
    if w.km and not w.indoor and w.heart is not None:
        out += [
            f'  <WorkoutRoute sourceName="{_attr(source)}" sourceVersion="{version}" '
            f'creationDate="{_apple(w.made)}" startDate="{_apple(w.start)}" endDate="{_apple(end)}">',
            f'   <FileReference path="/workout-routes/route_{w.start:%Y-%m-%d}_{_clock(w.start)}.gpx"/>',
            "  </WorkoutRoute>",
        ]
    out.append(" </Workout>")
    return out


def _rings(r: Rings) -> str:
    return (
        f' <ActivitySummary dateComponents="{r.day}" activeEnergyBurned="{r.energy}" '
        f'activeEnergyBurnedGoal="{r.energy_goal}" activeEnergyBurnedUnit="kcal" appleMoveTime="0" '
        f'appleMoveTimeGoal="0" appleExerciseTime="{r.exercise}" appleExerciseTimeGoal="{r.exercise_goal}" '
        f'appleStandHours="{r.stand}" appleStandHoursGoal="{r.stand_goal}"/>'
    )


def _xml(health: Health, seed: str) -> str:
    rng = random.Random(seed)
    born = date(1970, 1, 1) + timedelta(days=rng.randrange(0, 365 * 30))
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        _DTD,
        '<HealthData locale="en_GB">',
        f' <ExportDate value="{_apple(health.exported)}"/>',
        f' <Me HKCharacteristicTypeIdentifierDateOfBirth="{born}" '
        f'HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSex{rng.choice(("Female", "Male"))}" '
        'HKCharacteristicTypeIdentifierBloodType="HKBloodTypeNotSet" '
        'HKCharacteristicTypeIdentifierFitzpatrickSkinType="HKFitzpatrickSkinTypeNotSet" '
        'HKCharacteristicTypeIdentifierCardioFitnessMedicationsUse="None"/>',
    ]
    for s in health.samples:
        lines += _record(s, health.owner)
    for w in health.workouts:
        lines += _workout_xml(w, health.owner)
    lines += [_rings(r) for r in health.rings]
    lines.append("</HealthData>")
    return "\n".join(lines) + "\n"


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    """The hours nearest the size asked for, of a few tries."""
    per = 120 if split == "dev" else 160
    least = 12 if split == "dev" else 24  # a night, or a whole day
    n = max(least, chars // per)
    best: tuple[float, object, object, int] | None = None
    for _ in range(8):
        if split == "dev":
            data: object = _dev_tracked(seed, n)
            context: object = _export(data[0], seed)
        else:
            data = _test_health(seed, n)
            context = _xml(data, seed)
        size = len(as_text(context))
        miss = abs(size - chars) / chars
        if best is None or miss < best[0]:
            best = (miss, data, context, n)
        if 0.9 * chars <= size <= 1.1 * chars:
            break
        n = max(least, round(n * chars / size))
    assert best is not None
    return best[1], best[2], best[3]


# -- questions ----------------------------------------------------------------------------------


def _dev_days(tracked: Tracked) -> list[date]:
    days = {e.start.date() for e in tracked.exercises} | {n.end.date() for n in tracked.nights}
    return sorted(days)


def _dev_count(rng: random.Random, tracked: Tracked) -> _Asked:
    a, b = _span(rng, _dev_days(tracked))
    if rng.random() < 0.5 and tracked.exercises:
        k = rng.choice(tracked.exercises).kind
        name = _ACTIVITIES[k][0]
        n = sum(e.kind == k and a <= e.start.date() <= b for e in tracked.exercises)
        q = f"How many {name} exercises were logged between {a} and {b}, both days included?"
        return q, n, {"activity": name, "from": a.isoformat(), "to": b.isoformat()}
    under = rng.choice((360, 390, 420, 450))
    n = sum(x.main and a <= x.end.date() <= b and x.asleep < under for x in tracked.nights)
    q = (
        f"On how many nights with a dateOfSleep from {a} to {b} did the main sleep give fewer than {under} "
        "minutes asleep?"
    )
    return q, n, {"from": a.isoformat(), "to": b.isoformat(), "under": under}


def _dev_total(rng: random.Random, tracked: Tracked) -> _Asked:
    if not tracked.exercises:
        return None
    a, b = _span(rng, _dev_days(tracked))
    pick = rng.choice(tracked.exercises)
    name = _ACTIVITIES[pick.kind][0]
    mine = [e for e in tracked.exercises if e.kind == pick.kind and a <= e.start.date() <= b]
    params = {"activity": name, "from": a.isoformat(), "to": b.isoformat()}
    if pick.km and rng.random() < 0.6:
        km = sum(e.km for e in mine)
        if _tie(km, 2):
            return None
        q = f"What distance in kilometres do the {name} exercises from {a} to {b} cover in all? Two decimals."
        return q, round(km, 2), {**params, "field": "distance"}
    n = sum(e.calories for e in mine)
    q = f"What calories did the {name} exercises between {a} and {b} burn altogether?"
    return q, n, {**params, "field": "calories"}


def _dev_top(rng: random.Random, tracked: Tracked) -> _Asked:
    if rng.random() < 0.5:
        a, b = _span(rng, _dev_days(tracked))
        totals: Counter = Counter()
        for e in tracked.exercises:
            if a <= e.start.date() <= b:
                totals[_ACTIVITIES[e.kind][0]] += e.active
        top = _leader(totals)
        q = f"Which activity had the most active time (not counting pauses) between {a} and {b}?"
        return None if top is None else (q, top, {"from": a.isoformat(), "to": b.isoformat(), "by": "active"})
    rates = [(rate, day) for day, rate, _ in tracked.resting if rate > 0]
    if len(rates) < 2:
        return None
    rates.sort()
    q = "What day had the lowest resting heart rate in this export? Answer as YYYY-MM-DD."
    return q, rates[0][1].isoformat(), {"by": "resting"}


def _dev_lookup(rng: random.Random, tracked: Tracked) -> _Asked:
    timed = [e for e in tracked.exercises if e.heart is not None]
    if timed and rng.random() < 0.5:
        e = rng.choice(timed)
        name = _ACTIVITIES[e.kind][0]
        q = (
            f"What was the average heart rate of the {name} exercise that started at {e.start:%H:%M:%S} on "
            f"{e.start:%B} {e.start.day}, {e.start.year}?"
        )
        return q, e.heart, {"start": e.start.isoformat(), "activity": name}
    nights = [x for x in tracked.nights if x.main]
    if not nights:
        return None
    x = rng.choice(nights)
    day = x.end.date()
    q = (
        f"How many minutes asleep did the main sleep that ended on the morning of {day:%B} {day.day}, "
        f"{day.year} give?"
    )
    return q, x.asleep, {"dateOfSleep": day.isoformat()}


def _test_days(health: Health) -> list[date]:
    return [r.day for r in health.rings] or sorted({w.start.date() for w in health.workouts})


def _uk(d: date) -> str:
    return f"{d.day} {d:%B %Y}"


def _test_count(rng: random.Random, health: Health) -> _Asked:
    days = _test_days(health)
    if not days:
        return None
    a, b = _span(rng, days)
    span = {"from": a.isoformat(), "to": b.isoformat()}
    if rng.random() < 0.5 and health.workouts:
        k = rng.choice(health.workouts).kind
        name = f"HKWorkoutActivityType{_WORKOUTS[k][0]}"
        n = sum(w.kind == k and a <= w.start.date() <= b for w in health.workouts)
        q = f"Count the {name} workouts that started from {_uk(a)} to {_uk(b)} (local dates)."
        return q, n, {**span, "type": name}
    n = sum(a <= r.day <= b and r.energy >= r.energy_goal for r in health.rings)
    q = (
        f"Tally the days from {_uk(a)} to {_uk(b)} whose activeEnergyBurned reached that day's "
        "activeEnergyBurnedGoal."
    )
    return q, n, {**span, "by": "move"}


def _test_total(rng: random.Random, health: Health) -> _Asked:
    if rng.random() < 0.5:
        s = rng.choice([s for s in health.samples if s.kind == "StepCount"] or [None])
        if s is None:
            return None
        day = s.start.date()
        source = f"{health.owner}\u2019s {'iPhone' if s.phone else 'Apple Watch'}"
        n = sum(
            x.value
            for x in health.samples
            if x.kind == "StepCount" and x.phone == s.phone and x.start.date() == day
        )
        q = f"Add up the StepCount values that the source {source} recorded with a startDate on {_uk(day)}."
        return q, n, {"source": source, "day": day.isoformat()}
    moving = [w for w in health.workouts if w.km]
    if not moving:
        return None
    a, b = _span(rng, _test_days(health))
    k = rng.choice(moving).kind
    name = f"HKWorkoutActivityType{_WORKOUTS[k][0]}"
    km = sum(w.km for w in health.workouts if w.kind == k and a <= w.start.date() <= b)
    if _tie(km, 2):
        return None
    q = (
        f"Summing the distance statistics of the {name} workouts from {_uk(a)} to {_uk(b)}, how many km? "
        "Two decimals."
    )
    return q, round(km, 2), {"type": name, "from": a.isoformat(), "to": b.isoformat()}


def _test_top(rng: random.Random, health: Health) -> _Asked:
    days = _test_days(health)
    if not days:
        return None
    a, b = _span(rng, days)
    span = {"from": a.isoformat(), "to": b.isoformat()}
    if rng.random() < 0.5:
        totals: Counter = Counter()
        for w in health.workouts:
            if a <= w.start.date() <= b:
                totals[f"HKWorkoutActivityType{_WORKOUTS[w.kind][0]}"] += w.seconds
        top = _leader(totals)
        q = f"Find the workoutActivityType with the greatest total duration from {_uk(a)} to {_uk(b)}."
        return None if top is None else (q, top, {**span, "by": "duration"})
    top = _leader({r.day.isoformat(): r.exercise for r in health.rings if a <= r.day <= b})
    q = f"Give the dateComponents of the day from {_uk(a)} to {_uk(b)} with the most appleExerciseTime."
    return None if top is None else (q, top, {**span, "by": "exercise"})


def _test_lookup(rng: random.Random, health: Health) -> _Asked:
    timed = [w for w in health.workouts if w.heart is not None]
    if timed and rng.random() < 0.5:
        w = rng.choice(timed)
        q = (
            "Report the average heart rate in the HeartRate statistics of the workout with startDate "
            f"{_apple(w.start)}."
        )
        return q, w.heart, {"startDate": _apple(w.start)}
    r = rng.choice(health.rings) if health.rings else None
    if r is None:
        return None
    q = f"Give the appleStandHours of the activity summary for {_uk(r.day)}."
    return q, r.stand, {"day": r.day.isoformat()}


_DEV = {"count": _dev_count, "total": _dev_total, "top": _dev_top, "lookup": _dev_lookup}
_TEST = {"count": _test_count, "total": _test_total, "top": _test_top, "lookup": _test_lookup}


@family(
    "fitness",
    "fitness tracking: a tracker's account export of exercises, sleep and resting heart rate as a dict of "
    "file name to JSON text (dev), or a health app's export.xml as a string (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    data, context, hours = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    tracked = data[0] if ref.split == "dev" else data
    asks = _DEV if ref.split == "dev" else _TEST

    def ask(kind_: str) -> _Asked:
        return asks[kind_](rng, tracked)

    kind, asked = draw_question(ask, kind, "lookup", nonzero=True, hidden=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict of file name to text (tracker export)"
        if ref.split == "dev"
        else "string (health app XML export)",
        hours=hours,
    )
