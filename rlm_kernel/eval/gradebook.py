"""Questions about a course's grades: a learning platform's API listing of a university course's
submissions as a list of dicts (``dev``), or another platform's gradebook export of a school's
course, the CSV text as one string (``test``).

What a notebook holds when a teacher looks over a term's marks: each student's work on each
assignment or quiz, with its score out of the points possible, whether it came in late or not at
all, and the exceptions teachers make. Some work is excused, some submitted but not yet marked,
some missing with a zero from the late policy and some without; late work loses points by the day,
and due dates move an hour in UTC when the clocks change. Items whose names extend another's stand
beside each other (``Problem Set 1`` and ``Problem Set 10``, numbered by the textbook's chapters;
``Quiz: Bonding`` and ``Quiz: Bonding (retake)``), and a school's name in the export holds a
comma. Students are added until the text (or the indented JSON) is about the length
asked for. Kinds of question:

- ``count``: one assignment's late submissions, or one student's missing ones (``dev``); one
  class's students with no grade for one item, or the students with at least a mark on one item
  (``test``);
- ``mean``: one assignment's mean score, or one student's mean percentage (``dev``); one class's
  mean grade on one item, or its mean course total (``test``);
- ``top``: the student with the most points, or the assignment with the most late submissions
  (``dev``); the class with the best mean on one item, or the student with the highest quiz total
  (``test``) (a clear leader);
- ``lookup``: one student's score on one assignment, or how late it came in, in hours (``dev``);
  one e-mail address's grade for one item, or one student's course total (``test``).

Every answer is computed from the grades the generator wrote. Score: ``exact``.

Splits: ``dev`` is the submissions as the platform's API gives them with their assignment and
user (``id``, ``user_id``, ``assignment_id``, ``attempt``, ``score`` after the late deduction,
``entered_score``, ``grade``, ``submitted_at``, ``graded_at``, ``cached_due_date`` in UTC,
``late``, ``missing``, ``excused``, ``late_policy_status``, ``points_deducted``, ``seconds_late``,
``workflow_state``, ``submission_type``, ``assignment`` with ``name`` and ``points_possible``,
``user`` with ``name``, ``sortable_name`` and ``login_id``); ``test`` is the export (``First
name``, ``Last name``, ``ID number``, ``Institution``, ``Department`` with the class,
``Email address``, a ``Quiz: … (Real)`` or ``Assignment: … (Real)`` column an item with ``-``
where there is no grade, ``Course total (Real)``, ``Course total (Letter)``, ``Last downloaded from
this course`` as a Unix time): other containers, fields, courses and wording.
"""

from __future__ import annotations

import csv
import io
import math
import random
import unicodedata
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "mean", "top", "lookup")

_FIRST = (
    "Amara", "Liam", "Sofia", "Noah", "Zoë", "Mateo", "Priya", "Ethan", "Aisha", "Lucas", "Mei", "Oliver",
    "Fatima", "James", "Chloé", "Daniel", "Ananya", "Hugo", "Yuki", "Isaac", "Leila", "Samuel", "Grace",
    "José", "Hannah", "Kwame", "Emily", "Ravi", "Nora", "Tomás", "Ingrid", "Omar", "Ava", "Felix", "Sade",
)  # fmt: skip
_LAST = (
    "Okafor", "Nguyen", "Müller", "Smith", "Lindqvist", "García", "Patel", "O'Neill", "Kowalski", "Chen",
    "Haddad", "Johnson", "Rossi", "Tanaka", "Mensah", "Brown", "Ivanova", "Smith-Jones", "Dubois", "Kaur",
    "Novak", "Andersen", "Okonkwo", "Silva", "Walsh", "Yilmaz", "Murphy", "Schmidt", "Ahmed", "Park",
)  # fmt: skip
_CHAPTERS = (1, 2, 3, 10, 11, 12, 13, 15, 16, 17, 18, 20, 21, 22, 23, 24)  # a week's, in the course's order
_DEV_WEEKLY = (("Problem Set", 20.0, "online_upload"), ("Quiz", 10.0, "online_quiz"))
_TEST_ITEMS = (  # column, the most it can be
    ("Quiz: Atomic structure", 10),
    ("Quiz: Bonding", 20),
    ("Assignment: Titration lab report", 40),
    ("Quiz: Bonding (retake)", 20),
    ("Quiz: Rates of reaction", 15),
    ("Assignment: Electrolysis poster", 25),
    ("Quiz: Organic chemistry", 20),
    ("Assignment: Practical write-up", 30),
    ("Quiz: Energy changes", 10),
)
_CLASSES = ("10A", "10B", "10C", "10D", "10E")
_LETTERS = ((90, "A"), (80, "B+"), (70, "B"), (60, "C+"), (50, "C"), (40, "D"), (0, "F"))


def _names(rng: random.Random, n: int) -> list[tuple[str, str]]:
    """``n`` students, each full name once (a first or last name is often shared; double-barrelled
    last names once the plain ones run short)."""
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    while len(out) < n:
        name = (rng.choice(_FIRST), rng.choice(_LAST))
        if len(seen) >= len(_FIRST) * len(_LAST) // 2:
            name = (name[0], f"{name[1]}-{rng.choice(_LAST)}")
        if name not in seen:
            seen.add(name)
            out.append(name)
    return out


def _plain(text: str) -> str:
    """Lower case ASCII letters (dots and hyphens kept), accents dropped, as an address has it."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if c.isascii() and (c.isalpha() or c in ".-"))


# -- the dev submissions ------------------------------------------------------------------------


@dataclass
class Assignment:
    id: int
    name: str
    points: float
    due: datetime  # UTC
    kind: str


@dataclass
class Submission:
    student: int
    assignment: int
    state: str  # graded, submitted, unsubmitted
    score: float | None
    entered: float | None
    submitted: datetime | None
    late_seconds: int = 0
    deducted: float | None = None
    missing: bool = False
    excused: bool = False


def _assignments(rng: random.Random, m: int) -> list[Assignment]:
    """``m`` assignments: a problem set and a quiz a week, numbered by the textbook's chapter the
    week covers, a lab report every third week, a midterm; due at 23:59 in Chicago (UTC-5, UTC-6
    from 3 November)."""
    out: list[Assignment] = []
    week = 0
    first = 4000 + rng.randrange(0, 900) * 10
    while len(out) < m:
        week += 1
        day = datetime(2024, 10, 2) + timedelta(weeks=week - 1)
        chapter = _CHAPTERS[(week - 1) % len(_CHAPTERS)]
        items = [(f"{name} {chapter}", points, kind) for name, points, kind in _DEV_WEEKLY]
        if week % 3 == 0:
            items.append((f"Lab Report {week // 3}", 25.0, "online_upload"))
        if week == 7:
            items.append(("Midterm Exam", 100.0, "on_paper"))
        for name, points, kind in items:
            local = day + timedelta(days=2 if name.startswith("Quiz") else 0, hours=23, minutes=59)
            utc = local + timedelta(hours=6 if local >= datetime(2024, 11, 3, 2) else 5)
            out.append(Assignment(first + len(out), name, points, utc, kind))
    return out[:m]


def _dev_grades(seed: str, n: int) -> tuple[list[Assignment], list[tuple[str, str]], list[Submission]]:
    rng = random.Random(f"{seed}/{n}")
    m = max(3, min(24, round(math.sqrt(n) * 0.9)))
    students = max(2, math.ceil(n / m))
    assignments = _assignments(rng, m)
    names = _names(rng, students)
    skill = [rng.uniform(0.45, 0.98) for _ in names]
    diligence = [rng.uniform(0.55, 1.0) for _ in names]
    out = []
    for a_index, a in enumerate(assignments):
        for s in range(students):
            out.append(_submission(rng, s, a_index, a, skill[s], diligence[s]))
    return assignments, names, out


def _submission(
    rng: random.Random, s: int, k: int, a: Assignment, skill: float, diligence: float
) -> Submission:
    if rng.random() < 0.03:
        return Submission(s, k, "graded", None, None, None, excused=True)
    if rng.random() > diligence * 1.08:
        zero = rng.random() < 0.5  # the late policy gives some missing work a zero
        return Submission(
            s, k, "graded" if zero else "unsubmitted", 0.0 if zero else None, None, None, missing=True
        )
    if rng.random() < 0.75 + diligence / 4:
        submitted = a.due - timedelta(seconds=rng.randrange(60, 3 * 86400))
        late = 0
    else:
        late = rng.choice(
            (rng.randrange(60, 3600), rng.randrange(3600, 86400), rng.randrange(86400, 4 * 86400))
        )
        submitted = a.due + timedelta(seconds=late)
    if rng.random() < 0.05:
        return Submission(s, k, "submitted", None, None, submitted, late_seconds=late)
    step = 0.5 if a.points <= 25 else 1.0
    entered = min(a.points, max(0.0, round(rng.gauss(skill, 0.12) * a.points / step) * step))
    deducted = None
    if late:
        deducted = round(min(entered, a.points * 0.1 * math.ceil(late / 86400)), 2)
    score = round(entered - (deducted or 0.0), 2)
    return Submission(s, k, "graded", score, entered, submitted, late_seconds=late, deducted=deducted)


def _iso(t: datetime | None) -> str | None:
    return None if t is None else f"{t:%Y-%m-%dT%H:%M:%SZ}"


def _login(name: tuple[str, str]) -> str:
    return _plain(f"{name[0][0]}{name[1]}")


def _listing(
    assignments: list[Assignment], names: list[tuple[str, str]], subs: list[Submission], seed: str
) -> list[dict]:
    rng = random.Random(seed)
    user_ids = rng.sample(range(70000, 99999), len(names))
    first_id = rng.randrange(5_500_000, 6_000_000)
    out = []
    for k, sub in enumerate(subs):
        a, name = assignments[sub.assignment], names[sub.student]
        graded = None
        if sub.state == "graded" and sub.submitted:
            graded = sub.submitted + timedelta(seconds=rng.randrange(3600, 9 * 86400))
        elif sub.state == "graded":
            graded = a.due + timedelta(seconds=rng.randrange(86400, 6 * 86400))
        late = sub.late_seconds > 0
        out.append(
            {
                "id": first_id + k,
                "user_id": user_ids[sub.student],
                "assignment_id": a.id,
                "attempt": (rng.choice((1, 1, 1, 2)) if a.kind == "online_quiz" else 1)
                if sub.submitted
                else None,
                "score": sub.score,
                "entered_score": sub.entered,
                "grade": None if sub.score is None else f"{sub.score:g}",
                "submitted_at": _iso(sub.submitted),
                "graded_at": _iso(graded),
                "cached_due_date": _iso(a.due),
                "late": late,
                "missing": sub.missing,
                "excused": sub.excused,
                "late_policy_status": "missing"
                if sub.missing and sub.score is not None
                else "late"
                if late
                else None,
                "points_deducted": sub.deducted,
                "seconds_late": sub.late_seconds,
                "workflow_state": sub.state,
                "submission_type": a.kind if sub.submitted else None,
                "assignment": {
                    "id": a.id,
                    "name": a.name,
                    "points_possible": a.points,
                    "due_at": _iso(a.due),
                },
                "user": {
                    "id": user_ids[sub.student],
                    "name": f"{name[0]} {name[1]}",
                    "sortable_name": f"{name[1]}, {name[0]}",
                    "login_id": _login(name),
                },
            }
        )
    return out


# -- the test export ----------------------------------------------------------------------------


@dataclass
class Pupil:
    first: str
    last: str
    number: str
    email: str
    group: str
    grades: list[float | None]

    @property
    def total(self) -> float:
        return round(sum(g for g in self.grades if g is not None), 2)

    @property
    def letter(self) -> str:
        most = sum(_TEST_ITEMS[k][1] for k, g in enumerate(self.grades) if g is not None)
        share = 100 * self.total / most if most else 0.0
        return next(letter for at, letter in _LETTERS if share >= at)


def _pupils(seed: str, n: int) -> list[Pupil]:
    rng = random.Random(f"{seed}/{n}")
    classes = _CLASSES[: max(2, min(len(_CLASSES), 1 + n // 30))]
    strength = {c: rng.uniform(-0.12, 0.12) for c in classes}
    out = []
    emails: set[str] = set()
    for first, last in _names(rng, n):
        group = rng.choice(classes)
        skill = rng.uniform(0.35, 0.95) + strength[group]
        grades: list[float | None] = []
        for k, (item, most) in enumerate(_TEST_ITEMS):
            if "retake" in item:  # only some retake, and only those who did badly before
                prior = grades[k - 2]
                taken = prior is not None and prior < 0.6 * most and rng.random() < 0.7
                grades.append(min(most, round(prior + rng.uniform(1, most / 3), 2)) if taken else None)
                continue
            if rng.random() < 0.08:
                grades.append(None)
                continue
            grades.append(round(min(1.0, max(0.0, rng.gauss(skill, 0.15))) * most * 4) / 4)
        base = _plain(f"{first}.{last}")
        email, k = f"{base}@stmarkhams.sch.uk", 1
        while email in emails:
            k += 1
            email = f"{base}{k}@stmarkhams.sch.uk"
        emails.add(email)
        number = "" if rng.random() < 0.06 else f"{rng.randrange(20210000, 20219999)}"
        out.append(Pupil(first, last, number, email, group, grades))
    return sorted(out, key=lambda p: (p.last, p.first))  # as the export lists them


def _export(pupils: list[Pupil], seed: str) -> str:
    rng = random.Random(seed)
    downloaded = 1_716_800_000 + rng.randrange(0, 3_000_000)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "First name",
            "Last name",
            "ID number",
            "Institution",
            "Department",
            "Email address",
            *[f"{item} (Real)" for item, _ in _TEST_ITEMS],
            "Course total (Real)",
            "Course total (Letter)",
            "Last downloaded from this course",
        ]
    )
    for p in pupils:
        w.writerow(
            [
                p.first,
                p.last,
                p.number,
                "St Markham's Academy, Leeds",
                p.group,
                p.email,
                *["-" if g is None else f"{g:.2f}" for g in p.grades],
                f"{p.total:.2f}",
                p.letter,
                str(downloaded),
            ]
        )
    return buf.getvalue()


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    per = 640 if split == "dev" else 175
    n = max(6, chars // per)
    for _ in range(6):
        if split == "dev":
            data: object = _dev_grades(seed, n)
            context: object = _listing(*data, seed)
            count = len(data[1])
        else:
            data = _pupils(seed, n)
            context = _export(data, seed)
            count = len(data)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(6, round(n * chars / size))
    return data, context, count


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _dev_top(
    rng: random.Random, assignments: list[Assignment], names: list[tuple[str, str]], subs: list[Submission]
) -> _Asked:
    if rng.random() < 0.5:
        points: Counter = Counter()
        for x in subs:
            points[" ".join(names[x.student])] += x.score or 0.0
        top = _leader(dict(points))
        q = "Which student has the most points in all, adding up every score?"
        return None if top is None else (q, top, {"by": "student"})
    top = _leader(Counter(assignments[x.assignment].name for x in subs if x.late_seconds > 0))
    q = "Which assignment has the most submissions marked late?"
    return None if top is None else (q, top, {"by": "assignment"})


def _ask_dev(kind: str, rng: random.Random, data: tuple) -> _Asked:
    assignments, names, subs = data
    sub = rng.choice(subs)
    a, student = assignments[sub.assignment], " ".join(names[sub.student])
    if kind == "count":
        if rng.random() < 0.5:
            n = sum(x.assignment == sub.assignment and x.late_seconds > 0 for x in subs)
            return f"How many submissions to {a.name} were marked late?", n, {"assignment": a.name}
        n = sum(x.student == sub.student and x.missing for x in subs)
        return f"How many of {student}'s submissions are marked missing?", n, {"student": student}
    if kind == "mean":
        if rng.random() < 0.5:
            scores = [x.score for x in subs if x.assignment == sub.assignment and x.score is not None]
            if not scores:
                return None
            q = f"What is the mean score on {a.name}, over the submissions that have a score? Two decimals."
            return q, round(sum(scores) / len(scores), 2), {"assignment": a.name}
        shares = [
            100 * x.score / assignments[x.assignment].points
            for x in subs
            if x.student == sub.student and x.score is not None
        ]
        if not shares:
            return None
        q = (
            f"Over the assignments where {student} has a score, what is their average percentage "
            "(score divided by points_possible, times 100)? One decimal."
        )
        return q, round(sum(shares) / len(shares), 1), {"student": student}
    if kind == "top":
        return _dev_top(rng, assignments, names, subs)
    late = [x for x in subs if x.late_seconds > 0 and x.score is not None]
    if late and rng.random() < 0.5:
        sub = rng.choice(late)
        a, student = assignments[sub.assignment], " ".join(names[sub.student])
        q = f"How many hours after the due date did {student} hand in {a.name}? One decimal."
        return q, round(sub.late_seconds / 3600, 1), {"student": student, "assignment": a.name}
    sub = rng.choice([x for x in subs if x.score])
    a, student = assignments[sub.assignment], " ".join(names[sub.student])
    q = f"What score did {student} get on {a.name}?"
    return q, sub.score, {"student": student, "assignment": a.name}


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def _test_top(rng: random.Random, pupils: list[Pupil], k: int) -> _Asked:
    item = _TEST_ITEMS[k][0]
    if rng.random() < 0.5:
        means = {}
        for c in sorted({x.group for x in pupils}):
            mean = _mean([x.grades[k] for x in pupils if x.group == c and x.grades[k] is not None])
            if mean is not None:
                means[c] = mean
        top = _leader(means)
        q = f"Which Department has the highest mean {item} grade, counting only students with a grade?"
        return None if top is None else (q, top, {"item": item})
    quizzes = [j for j, (name, _) in enumerate(_TEST_ITEMS) if name.startswith("Quiz:")]
    totals = {f"{x.first} {x.last}": sum(x.grades[j] or 0.0 for j in quizzes) for x in pupils}
    top = _leader(totals)
    q = "Whose grades on the Quiz: items add up to the most? Give the first and last name."
    return None if top is None else (q, top, {"by": "quizzes"})


def _ask_test(kind: str, rng: random.Random, pupils: list[Pupil]) -> _Asked:
    p = rng.choice(pupils)
    k = rng.randrange(len(_TEST_ITEMS))
    item, group = _TEST_ITEMS[k][0], p.group
    if kind == "count":
        if rng.random() < 0.5:
            n = sum(x.group == group and x.grades[k] is None for x in pupils)
            q = f"In Department {group}, how many students have no grade (a '-') for {item}?"
            return q, n, {"class": group, "item": item}
        if p.grades[k] is None:
            return None
        at_least = round(p.grades[k])
        n = sum(x.grades[k] is not None and x.grades[k] >= at_least for x in pupils)
        q = f"Count the students whose {item} grade is {at_least} or more."
        return q, n, {"item": item, "at_least": at_least}
    if kind == "mean":
        if rng.random() < 0.5:
            mean = _mean([x.grades[k] for x in pupils if x.group == group and x.grades[k] is not None])
            q = f"Among the students of Department {group} who have one, what is the mean {item} grade? "
            q += "Two decimals."
            return None if mean is None else (q, mean, {"class": group, "item": item})
        mean = _mean([x.total for x in pupils if x.group == group])
        q = f"Give the mean Course total (Real) of Department {group}, to two decimals."
        return q, mean, {"class": group}
    if kind == "top":
        return _test_top(rng, pupils, k)
    graded = [x for x in pupils if x.grades[k]]
    if graded and rng.random() < 0.5:
        p = rng.choice(graded)
        q = f"What {item} grade does the student with the email address {p.email} have?"
        return q, p.grades[k], {"email": p.email, "item": item}
    q = f"What Course total (Real) does {p.first} {p.last} of Department {group} have?"
    return q, p.total, {"first": p.first, "last": p.last, "class": group}


@family(
    "gradebook",
    "a course's grades: a learning platform's submissions as a list of dicts (dev), or another's gradebook "
    "export as a CSV string (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    data, context, count = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    def ask(kind_: str) -> _Asked:
        return _ask_dev(kind_, rng, data) if ref.split == "dev" else _ask_test(kind_, rng, data)

    kind, asked = draw_question(ask, kind, "lookup", nonzero=True, hidden=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="list of dicts (submissions)" if ref.split == "dev" else "string (gradebook CSV export)",
        students=count,
    )
