"""Questions about a time series: values with their timestamps, as plain Python lists.

What a meter's or a sensor's export looks like once loaded: either a dict of two parallel lists
(timestamps, values) or a list of ``(timestamp, value)`` pairs (they alternate by index). A few
readings are missing, so a day does not always hold the same number of them.
``readings = max(200, chars // 22 to 37)`` (about what a reading costs as indented JSON in the
split's container). Kinds of question:

- ``max_day``: the calendar day with the largest daily total (``dev``) or mean (``test``), a
  clear leader, as ``YYYY-MM-DD``;
- ``above``: how many readings pass a threshold;
- ``day_stat``: one day's total (``dev``) or peak (``test``);
- ``run``: the longest run of consecutive readings (next to each other in the data) that pass a
  threshold.

Every answer is computed from the values the generator wrote. Score: ``exact`` (numbers as
numbers).

Splits: ``dev`` is a building's hourly electricity use in kWh (``timestamp`` as ISO text,
``kwh``); ``test`` is a street sensor's PM2.5 every ten minutes (``time`` in Unix seconds in the
dict of lists, ``YYYY-MM-DD HH:MM`` text in the pairs; ``pm25``, "at or above" thresholds):
other units, steps, stamps, statistics and wording.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from datetime import datetime, timedelta, timezone

from .tasks import Task, TaskRef, asked_task, draw_question, family

__all__ = ["KINDS", "readings_for", "make"]

KINDS = ("max_day", "above", "day_stat", "run")


# about what a reading costs as indented JSON, by split and container
_READING_CHARS = {
    ("dev", "columns"): 31,
    ("dev", "pairs"): 37,
    ("test", "columns"): 22,
    ("test", "pairs"): 35,
}


def readings_for(chars: int, split: str = "dev", shape: str = "columns") -> int:
    return max(200, chars // _READING_CHARS[split, shape])


def _readings(split: str, rng: random.Random, n: int) -> list[tuple[datetime, float]]:
    """(UTC time, value) in time order, a few missing."""
    out = []
    if split == "dev":
        start, step = datetime(2024, 1, 8), timedelta(hours=1)
        day_factor = [rng.uniform(0.8, 1.25) for _ in range(n // 24 + 2)]
        for i in range(n):
            t = start + i * step
            office = 1.0 if t.weekday() < 5 and 8 <= t.hour < 19 else 0.35
            value = 12 + 30 * office * day_factor[i // 24] + rng.gauss(0, 2.5)
            out.append((t, round(max(0.5, value), 2)))
    else:
        start, step = datetime(2025, 7, 14), timedelta(minutes=10)
        level, episode = 9.0, 0
        for i in range(n):
            t = start + i * step
            if episode == 0 and rng.random() < 0.004:
                episode = rng.randint(12, 60)
            episode = max(0, episode - 1)
            level += 0.05 * (9 - level) + rng.gauss(0, 0.6) + (rng.uniform(0.5, 3) if episode else 0)
            rush = 4 * math.exp(-(((t.hour + t.minute / 60) - 8.5) ** 2) / 2)
            out.append((t, round(max(0.5, level + rush + rng.gauss(0, 1)), 1)))
    return [r for r in out if rng.random() > 0.03]


def _days(readings: list[tuple[datetime, float]]) -> dict[str, list[float]]:
    days: dict[str, list[float]] = defaultdict(list)
    for t, v in readings:
        days[t.date().isoformat()].append(v)
    return days


def _longest(values: list[float], passes) -> int:
    best = run = 0
    for v in values:
        run = run + 1 if passes(v) else 0
        best = max(best, run)
    return best


def _ask(kind: str, split: str, rng: random.Random, readings: list[tuple[datetime, float]]):
    values = [v for _, v in readings]
    days = _days(readings)
    dev = split == "dev"
    threshold = sorted(values)[int(len(values) * rng.uniform(0.6, 0.97))]
    threshold = round(threshold) if dev else round(threshold, 1)
    if dev:
        passes = lambda v: v > threshold  # noqa: E731
    else:
        passes = lambda v: v >= threshold  # noqa: E731
    if kind == "max_day":
        stat = {d: (sum(vs) if dev else sum(vs) / len(vs)) for d, vs in days.items()}
        ranked = sorted(stat.items(), key=lambda kv: -kv[1])
        if ranked[0][1] <= 1.005 * ranked[1][1]:
            return None
        if dev:
            return "Which day (YYYY-MM-DD) used the most electricity in total?", ranked[0][0], {}
        return "Give the UTC date, as YYYY-MM-DD, whose mean PM2.5 was the highest.", ranked[0][0], {}
    if kind == "above":
        n = sum(map(passes, values))
        if dev:
            return f"How many hourly readings are above {threshold} kWh?", n, {"threshold": threshold}
        return f"Count the PM2.5 readings at or above {threshold}.", n, {"threshold": threshold}
    if kind == "day_stat":
        day = rng.choice(sorted(days))
        when = datetime.fromisoformat(day)
        if dev:
            total = round(sum(days[day]), 2)
            q = f"What was the total consumption in kWh on {when:%A %d %B %Y}? Round to 2 decimals."
            return q, total, {"day": day}
        return f"What was the highest PM2.5 reading on {when:%d %B %Y} (UTC)?", max(days[day]), {"day": day}
    n = _longest(values, passes)
    if dev:
        q = f"What is the longest run of consecutive readings above {threshold} kWh (count of readings)?"
    else:
        q = f"How many readings long is the longest streak of consecutive PM2.5 values >= {threshold}?"
    return (q, n, {"threshold": threshold}) if n else None


def _container(split: str, shape: str, readings: list[tuple[datetime, float]]):
    if split == "dev":
        stamps = [f"{t:%Y-%m-%dT%H:%M}" for t, _ in readings]
        if shape == "columns":
            return {"timestamp": stamps, "kwh": [v for _, v in readings]}
        return [(s, v) for s, (_, v) in zip(stamps, readings, strict=True)]
    if shape == "columns":
        return {
            "time": [int(t.replace(tzinfo=timezone.utc).timestamp()) for t, _ in readings],
            "pm25": [v for _, v in readings],
        }
    return [(f"{t:%Y-%m-%d %H:%M}", v) for t, v in readings]


@family(
    "series", "a time series as lists with timestamps: peak day, counts over a threshold, runs (kWh in dev)"
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    shape = ("columns", "pairs")[ref.index % 2]
    readings = _readings(ref.split, rng, readings_for(ref.chars, ref.split, shape))
    kind = KINDS[(ref.index // 2) % len(KINDS)]
    # other thresholds and days, then a count, which always has an answer
    kind, asked = draw_question(lambda kind_: _ask(kind_, ref.split, rng, readings), kind, "above")
    context = _container(ref.split, shape, readings)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict of lists" if shape == "columns" else "list of pairs",
        readings=len(readings),
    )
