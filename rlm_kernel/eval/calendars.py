"""Questions about a calendar export: an iCalendar file as one string (``dev``) or a calendar API's
events as a list of dicts (``test``).

What a notebook holds after exporting a team's shared calendar, or listing its events through the
calendar's API: meetings with a title, a room, an organizer and invitees who accepted, declined or
did not answer; some meetings cancelled, some all-day absences among them, in no particular order.
Events are added day by day until the text (or the indented JSON) is about the length asked for.
Kinds of question:

- ``hours``: how long one person spent in the meetings they accepted over one week (cancelled ones
  left out; people whose names or addresses differ by a letter stand beside them);
- ``count``: how many meetings with one exact title took place in a month (``dev``) or in two
  weeks (``test``), cancelled ones left out (titles that extend another one stand beside it);
- ``busiest``: the room with the most meetings (``dev``) or the most minutes booked (``test``) in a
  month (a clear leader);
- ``lookup``: one event's end time (``dev``) or how many of its invitees accepted (``test``).

Every answer is computed from the events the generator wrote. Score: ``exact`` (numbers as
numbers, names and times without case).

Splits: ``dev`` is an Outlook-like ``.ics`` file (CRLF lines folded at 75 octets, ``VEVENT`` with
``DTSTART;TZID=Europe/Berlin``, ``SUMMARY``, ``LOCATION``, ``STATUS``, ``ORGANIZER``, ``ATTENDEE``
lines with ``CN`` and ``PARTSTAT``); ``test`` is a Google-Calendar-like list of event resources
(``summary``, ``start.dateTime`` with a UTC offset, ``attendees`` as dicts with ``email`` and
``responseStatus``, ``status`` ``cancelled``): other containers, fields, people and wording.
"""

from __future__ import annotations

import calendar
import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from .tasks import Task, TaskRef, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("hours", "count", "busiest", "lookup")

ACCEPTED, DECLINED, TENTATIVE, PENDING = "accepted", "declined", "tentative", "needsAction"
_STATES = (ACCEPTED, DECLINED, TENTATIVE, PENDING)
_STATE_WEIGHTS = (68, 17, 9, 6)
_PARTSTAT = {ACCEPTED: "ACCEPTED", DECLINED: "DECLINED", TENTATIVE: "TENTATIVE", PENDING: "NEEDS-ACTION"}


@dataclass(frozen=True)
class _Domain:
    people: tuple[tuple[str, str], ...]  # (name, address)
    titles: tuple[tuple[str, int, tuple[int, ...]], ...]  # title, weight, durations in minutes
    rooms: tuple[str, ...]
    absences: tuple[str, ...]
    start: date


_DEV = _Domain(
    people=(("Anna Schulz", "anna.schulz@example.de"), ("Anna Schultz", "anna.schultz@example.de"),
            ("Jonas Becker", "jonas.becker@example.de"), ("Jonas Bäcker", "j.baecker@example.de"),
            ("Mia Wagner", "mia.wagner@example.de"), ("Lukas Fischer", "lukas.fischer@example.de"),
            ("Lea Hoffmann", "lea.hoffmann@example.de"), ("Felix Braun", "felix.braun@example.de"),
            ("Sophie Krüger", "sophie.krueger@example.de"), ("Paul Richter", "paul.richter@example.de"),
            ("Emma Wolf", "emma.wolf@example.de"), ("Noah Zimmermann", "noah.zimmermann@example.de")),
    titles=(("Sprint Planning", 3, (60, 90)), ("Sprint Planning Prep", 2, (30,)),
            ("Design Review", 4, (45, 60)), ("Design Review Mobile", 2, (45, 60)),
            ("Daily Standup", 6, (15,)), ("Retrospektive", 2, (60, 90)),
            ("Architektur-Runde", 3, (60,)), ("Architektur-Runde Backend", 2, (60,)),
            ("Kundentermin Stadtwerke", 2, (60, 120)), ("Onboarding", 2, (30, 60)),
            ("Budget Q2", 1, (60,)), ("Budget Q2 Review", 1, (30, 45))),
    rooms=("Raum Spree 2.14", "Raum Spree 2.41", "Raum Havel 3.02", "Raum Elbe 1.10", "Raum Elbe 1.01",
           "Teams-Besprechung"),
    absences=("Urlaub", "Krank", "Homeoffice", "Fortbildung"),
    start=date(2024, 2, 26),
)  # fmt: skip

_TEST = _Domain(
    people=(("Sarah Kim", "sarah.kim@example.com"), ("Sara Kim", "sara.kim@example.com"),
            ("Mike Chen", "mike.chen@example.com"), ("Mike Cheng", "mike.cheng@example.com"),
            ("Priya Patel", "priya@example.com"), ("Dan O'Brien", "dan.obrien@example.com"),
            ("Grace Liu", "grace.liu@example.com"), ("Marcus Reed", "marcus.reed@example.com"),
            ("Olivia Park", "olivia.park@example.com"), ("Tyler Brooks", "tyler@example.com"),
            ("Hannah Scott", "hannah.scott@example.com"), ("Luis Ortega", "luis.ortega@example.com")),
    titles=(("Weekly Sync", 5, (30, 45)), ("Weekly Sync - Growth", 3, (30,)),
            ("Roadmap Review", 3, (60,)), ("Roadmap Review Dry Run", 2, (30, 45)),
            ("Customer Call: Initech", 2, (30, 60)), ("Customer Call: Initech Renewal", 1, (45,)),
            ("Interview Loop", 3, (45, 60)), ("Hiring Debrief", 2, (30,)),
            ("Lunch & Learn", 1, (60,)), ("Incident Postmortem", 2, (45, 60)),
            ("OKR Planning", 1, (90, 120)), ("Design Crit", 3, (45, 60))),
    rooms=("SF-4-Redwood (8)", "SF-4-Redwood Annex (4)", "SF-5-Sequoia (12)", "SF-5-Cypress (6)",
           "NY-12-Hudson (10)", "Zoom Meeting"),
    absences=("Out of office", "PTO", "Offsite", "Conference travel"),
    start=date(2025, 1, 6),
)  # fmt: skip


@dataclass
class Event:
    uid: str
    title: str
    start: datetime  # local time; an all-day event starts at midnight
    end: datetime
    room: str = ""
    organizer: tuple[str, str] = ("", "")
    invitees: list[tuple[tuple[str, str], str]] = field(default_factory=list)  # person, answer
    cancelled: bool = False
    all_day: bool = False

    @property
    def minutes(self) -> int:
        return int((self.end - self.start).total_seconds() // 60)


def _uid(split: str, rng: random.Random) -> str:
    if split == "dev":
        return f"{rng.getrandbits(128):032X}@outlook.example.de"
    alphabet = "abcdefghijklmnopqrstuv0123456789"
    return "".join(rng.choice(alphabet) for _ in range(26))


def _events(split: str, rng: random.Random, chars: int) -> list[Event]:
    d = _DEV if split == "dev" else _TEST
    per = 790 if split == "dev" else 1150  # about what an event costs as text
    weights = [w for _, w, _ in d.titles]
    events: list[Event] = []
    uids: set[str] = set()
    day = d.start + timedelta(days=rng.randint(0, 6))
    while len(events) * per < chars - 600:
        if day.weekday() < 5:
            for _ in range(rng.choice((2, 3, 3, 4, 4, 5, 6))):
                if len(events) * per >= chars - 600:
                    break
                title, _, durations = rng.choices(d.titles, weights)[0]
                slot = rng.randint(8 * 4, 17 * 4)  # quarter hours from 8:00 to 17:00
                start = datetime(day.year, day.month, day.day) + timedelta(minutes=15 * slot)
                end = start + timedelta(minutes=rng.choice(durations))
                organizer = rng.choice(d.people)
                guests = rng.sample([p for p in d.people if p != organizer], rng.randint(1, 6))
                invitees = [(organizer, ACCEPTED)] + [
                    (p, rng.choices(_STATES, _STATE_WEIGHTS)[0]) for p in guests
                ]
                uid = _uid(split, rng)
                while uid in uids:
                    uid = _uid(split, rng)
                uids.add(uid)
                events.append(
                    Event(
                        uid, title, start, end, rng.choice(d.rooms), organizer, invitees, rng.random() < 0.08
                    )
                )
            if rng.random() < 0.12:
                name, address = rng.choice(d.people)
                first = datetime(day.year, day.month, day.day)
                uid = _uid(split, rng)
                while uid in uids:
                    uid = _uid(split, rng)
                uids.add(uid)
                what = rng.choice(d.absences)
                title = f"{what} {name.split()[0]}" if split == "dev" else f"{what} - {name}"
                span = timedelta(days=rng.choice((1, 1, 2, 3)))
                events.append(Event(uid, title, first, first + span, organizer=(name, address), all_day=True))
        day += timedelta(days=1)
    rng.shuffle(events)  # an export lists its events in no particular order
    return events


# -- the files ----------------------------------------------------------------------------------


def _fold(line: str) -> str:
    """An iCalendar content line folded at 75 octets (continuations begin with a space)."""
    data = line.encode("utf-8")
    parts, start, width = [], 0, 75
    while len(data) - start > width:
        end = start + width
        while end > start and (data[end] & 0xC0) == 0x80:  # not inside a UTF-8 character
            end -= 1
        parts.append(data[start:end].decode("utf-8"))
        start, width = end, 74
    parts.append(data[start:].decode("utf-8"))
    return "\r\n ".join(parts)


_VTIMEZONE = (
    "BEGIN:VTIMEZONE", "TZID:Europe/Berlin",
    "BEGIN:STANDARD", "DTSTART:16011028T030000", "RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=10",
    "TZOFFSETFROM:+0200", "TZOFFSETTO:+0100", "END:STANDARD",
    "BEGIN:DAYLIGHT", "DTSTART:16010325T020000", "RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=3",
    "TZOFFSETFROM:+0100", "TZOFFSETTO:+0200", "END:DAYLIGHT",
    "END:VTIMEZONE",
)  # fmt: skip


def _ics(events: list[Event]) -> str:
    lines = [
        "BEGIN:VCALENDAR",
        "PRODID:-//Microsoft Corporation//Outlook 16.0 MIMEDIR//EN",
        "VERSION:2.0",
        "METHOD:PUBLISH",
        "X-WR-CALNAME:Team Plattform",
        *_VTIMEZONE,
    ]
    for e in events:
        lines += ["BEGIN:VEVENT", f"UID:{e.uid}", f"DTSTAMP:{_DEV.start:%Y%m%d}T070000Z"]
        if e.all_day:
            lines += [
                f"DTSTART;VALUE=DATE:{e.start:%Y%m%d}",
                f"DTEND;VALUE=DATE:{e.end:%Y%m%d}",
                f"SUMMARY:{e.title}",
                "TRANSP:TRANSPARENT",
                f"ORGANIZER;CN={e.organizer[0]}:mailto:{e.organizer[1]}",
                "END:VEVENT",
            ]
            continue
        lines += [
            f"DTSTART;TZID=Europe/Berlin:{e.start:%Y%m%dT%H%M%S}",
            f"DTEND;TZID=Europe/Berlin:{e.end:%Y%m%dT%H%M%S}",
            f"SUMMARY:{e.title}",
            f"LOCATION:{e.room}",
            f"STATUS:{'CANCELLED' if e.cancelled else 'CONFIRMED'}",
            f"ORGANIZER;CN={e.organizer[0]}:mailto:{e.organizer[1]}",
        ]
        for (name, address), state in e.invitees:
            role = "CHAIR" if (name, address) == e.organizer else "REQ-PARTICIPANT"
            rsvp = ";RSVP=TRUE" if state == PENDING else ""
            lines.append(f"ATTENDEE;CN={name};PARTSTAT={_PARTSTAT[state]};ROLE={role}{rsvp}:mailto:{address}")
        lines.append("END:VEVENT")
    lines.append("END:VCALENDAR")
    return "\r\n".join(_fold(line) for line in lines) + "\r\n"


def _offset(t: datetime) -> str:
    """Pacific time's offset on that day (daylight time from the second Sunday in March)."""
    march = date(t.year, 3, 1)
    dst = march + timedelta(days=(6 - march.weekday()) % 7 + 7)
    return "-07:00" if t.date() >= dst else "-08:00"


def _google(events: list[Event], rng: random.Random) -> list[dict]:
    items = []
    for e in events:
        made = e.start - timedelta(days=rng.randint(2, 20), minutes=rng.randint(0, 600))
        item: dict = {
            "kind": "calendar#event",
            "id": e.uid,
            "status": "cancelled" if e.cancelled else "confirmed",
            "created": f"{made:%Y-%m-%dT%H:%M:%S}.000Z",
            "summary": e.title,
        }
        if e.all_day:
            item.update(
                creator={"email": e.organizer[1]},
                organizer={"email": e.organizer[1], "displayName": e.organizer[0]},
                start={"date": f"{e.start:%Y-%m-%d}"},
                end={"date": f"{e.end:%Y-%m-%d}"},
                transparency="transparent",
                eventType="outOfOffice",
            )
            items.append(item)
            continue
        item.update(
            location=e.room,
            creator={"email": e.organizer[1]},
            organizer={"email": e.organizer[1], "displayName": e.organizer[0]},
            start={
                "dateTime": f"{e.start:%Y-%m-%dT%H:%M:%S}{_offset(e.start)}",
                "timeZone": "America/Los_Angeles",
            },
            end={"dateTime": f"{e.end:%Y-%m-%dT%H:%M:%S}{_offset(e.end)}", "timeZone": "America/Los_Angeles"},
            attendees=[
                {"email": address, "displayName": name, "responseStatus": state}
                | ({"organizer": True} if (name, address) == e.organizer else {})
                for (name, address), state in e.invitees
            ],
            eventType="default",
        )
        items.append(item)
    return items


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _meetings(events: list[Event]) -> list[Event]:
    return [e for e in events if not e.all_day and not e.cancelled]


def _month(d: date) -> str:
    return f"{calendar.month_name[d.month]} {d.year}"


def _ask_hours(split: str, rng: random.Random, events: list[Event]) -> _Asked:
    d = _DEV if split == "dev" else _TEST
    person = rng.choice(d.people[:4] if rng.random() < 0.6 else d.people)
    e = rng.choice(_meetings(events))
    monday = e.start.date() - timedelta(days=e.start.weekday())
    friday = monday + timedelta(days=4)
    minutes = sum(
        x.minutes
        for x in _meetings(events)
        if monday <= x.start.date() <= friday and (person, ACCEPTED) in x.invitees
    )
    params = {"person": person[0], "email": person[1], "from": f"{monday}", "to": f"{friday}"}
    if split == "dev":
        q = (
            f"How many hours did {person[0]} spend in meetings that {person[0].split()[0]} accepted "
            f"(PARTSTAT=ACCEPTED) from Monday {monday:%d %B} to Friday {friday:%d %B %Y}? Leave cancelled "
            "meetings and all-day entries out; give hours as a decimal number."
        )
        return q, minutes / 60, params
    q = (
        f"Sum the minutes of the non-cancelled events that {person[1]} accepted (responseStatus accepted) "
        f"with a start date from {monday:%Y-%m-%d} through {friday:%Y-%m-%d}."
    )
    return q, minutes, params


def _ask_count(split: str, rng: random.Random, events: list[Event]) -> _Asked:
    d = _DEV if split == "dev" else _TEST
    titles = [t for t, *_ in d.titles]
    extended = [t for t in titles if any(o != t and o.startswith(t) for o in titles)]
    title = rng.choice(extended if rng.random() < 0.75 else titles)
    e = rng.choice(_meetings(events))
    if split == "dev":
        m = (e.start.year, e.start.month)
        n = sum(x.title == title and (x.start.year, x.start.month) == m for x in _meetings(events))
        q = (
            f"How many meetings with the title exactly '{title}' took place in {_month(e.start)}, not "
            "counting cancelled ones?"
        )
        return q, n, {"title": title, "month": f"{m[0]}-{m[1]:02d}"}
    first = e.start.date() - timedelta(days=rng.randint(0, 6))
    last = first + timedelta(days=13)
    n = sum(x.title == title and first <= x.start.date() <= last for x in _meetings(events))
    q = (
        f'Count the events whose summary is exactly "{title}" with a start date from {first:%Y-%m-%d} to '
        f"{last:%Y-%m-%d} inclusive, leaving out those whose status is cancelled."
    )
    return q, n, {"title": title, "from": f"{first}", "to": f"{last}"}


def _ask_busiest(split: str, rng: random.Random, events: list[Event]) -> _Asked:
    e = rng.choice(_meetings(events))
    m = (e.start.year, e.start.month)
    in_month = [x for x in _meetings(events) if (x.start.year, x.start.month) == m]
    params = {"month": f"{m[0]}-{m[1]:02d}"}
    if split == "dev":
        top = Counter(x.room for x in in_month).most_common(2)
        q = f"Which room hosted the most meetings in {_month(e.start)} (cancelled meetings not counted)?"
    else:
        booked: Counter[str] = Counter()
        for x in in_month:
            booked[x.room] += x.minutes
        top = booked.most_common(2)
        q = (
            f"Which location was booked for the most minutes in total by events starting in "
            f"{_month(e.start)}? Cancelled events do not count."
        )
    if len(top) < 2 or top[0][1] == top[1][1]:
        return None
    return q, top[0][0], params


def _ask_lookup(split: str, rng: random.Random, events: list[Event]) -> _Asked:
    e = rng.choice([x for x in events if not x.all_day])
    if split == "dev":
        q = f"At what local time does the event with UID {e.uid} end? Answer as HH:MM."
        return q, f"{e.end:%H:%M}", {"uid": e.uid}
    n = sum(state == ACCEPTED for _, state in e.invitees)
    q = f"For the event with id {e.uid}, how many attendees have accepted (the organizer included)?"
    return q, n, {"id": e.uid}


_ASK = {"hours": _ask_hours, "count": _ask_count, "busiest": _ask_busiest, "lookup": _ask_lookup}


@family(
    "calendars",
    "a calendar export: an iCalendar string (dev) or API events as a list of dicts (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    events = _events(ref.split, rng, ref.chars)
    context: str | list = _ics(events) if ref.split == "dev" else _google(events, rng)
    kind = KINDS[ref.index % len(KINDS)]
    # other weeks, titles and months, then a lookup, which always has an answer
    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, events), kind, "lookup", nonzero=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string" if ref.split == "dev" else "list of dicts",
        events=len(events),
    )
