"""Questions about survey responses: a survey tool's CSV export of an employee survey as one string
(``dev``), or a form service's API responses to a customer feedback form as a list of dicts
(``test``).

What a notebook holds when someone analyses a survey: one response a respondent, with when it was
taken, the choices picked, ratings on scales and free-text comments (with commas, quotes and line
breaks of their own). Some respondents stop halfway or skip questions, and a few responses are the
author's previews. Departments, stores and statements whose names share words stand beside each
other (``Customer Support`` and ``Customer Success``, ``Bergen Sentrum`` and ``Bergen Bryggen``,
two statements about one's manager). Responses are added until the text (or the indented JSON) is
about the length asked for. Kinds of question:

- ``count``: one department's finished responses that strongly agree with one statement, or the
  finished responses of one tenure (``dev``); one store's responses that found the staff helpful,
  or the responses of one visit reason in one month (``test``);
- ``mean``: one department's average recommendation score, or its average time to finish, in
  minutes (``dev``); one store's average satisfaction, or its Net Promoter Score (``test``);
- ``top``: the department with the highest average recommendation score, or one department's
  most chosen tenure (``dev``); the visit reason most chosen by unsatisfied customers, or the store
  with the most responses in one month (``test``) (a clear leader);
- ``lookup``: one response's answer to one statement, or its department (``dev``); one response's
  store, or the recommendation score given by one e-mail address (``test``).

Every answer is computed from the responses the generator wrote. Score: ``exact``.

Splits: ``dev`` is the export with its three header rows (column names such as ``StartDate``,
``Status``, ``Progress``, ``Duration (in seconds)``, ``Finished``, ``ResponseId``, ``Q1``,
``Q3_2``; each question's text; each column's ``ImportId`` as JSON), ``Status`` ``IP Address`` or
``Survey Preview``, answers as choice texts; ``test`` is the responses (``landing_id``, ``token``,
``response_id``, ``landed_at``, ``submitted_at``, ``metadata``, ``hidden`` with the store,
``calculated``, ``answers`` each with its ``field`` (``id``, ``ref``, ``type``) and a typed value
such as ``choice.label``, ``number``, ``boolean``, ``email`` or ``text``; skipped questions left
out): other containers, fields, questions and wording.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "mean", "top", "lookup")

_DEPARTMENTS = (
    "Engineering",
    "Customer Support",
    "Customer Success",
    "Sales",
    "Marketing",
    "Finance",
    "People Operations",
    "Operations",
    "Product",
)
_TENURES = ("Less than 1 year", "1-2 years", "3-5 years", "6-10 years", "More than 10 years")
_LIKERT = (
    "Strongly disagree",
    "Somewhat disagree",
    "Neither agree nor disagree",
    "Somewhat agree",
    "Strongly agree",
)
_STATEMENTS = (
    "I have the tools I need to do my job well",
    "My manager gives me useful feedback",
    "I see myself working here in two years",
    "I understand how my work contributes to the company's goals",
    "My workload is manageable",
    "I feel comfortable raising concerns with my manager",
)
_DEV_COMMENTS = (
    "More flexibility on remote days, please.",
    'The "open door" policy is not open at all.',
    "Great team, but the on-call rotation, honestly, is burning people out.",
    "Onboarding was rushed.\nI learned most things from colleagues, not the wiki.",
    "Salary bands should be public.",
    "Love the people here!",
    "n/a",
    "Too many meetings; 10 a week is normal for me.",
    "Please fix the coffee machine on floor 3.",
)
_STORES = (
    "Oslo Grünerløkka",
    "Oslo Majorstuen",
    "Bergen Sentrum",
    "Bergen Bryggen",
    "Trondheim Solsiden",
    "Stavanger",
    "Tromsø",
)
_REASONS = (
    "Buy a new bike",
    "Repair or service",
    "Pick up an online order",
    "Accessories or clothing",
    "Return or exchange",
    "Just browsing",
)
_TEST_COMMENTS = (
    "Fast service, bike was ready the same day.",
    "Waited 40 minutes to be helped.",
    "The mechanic explained everything, thanks!",
    "Prices are higher than online.",
    "Couldn't find my size in the shoes.",
    "Great advice on the e-bike, will be back.",
    "Parking is a nightmare.",
)
_FIRST = (
    "ingrid",
    "ola",
    "kari",
    "lars",
    "sofie",
    "magnus",
    "nora",
    "emil",
    "ida",
    "jonas",
    "thea",
    "henrik",
)
_LAST = ("hansen", "johansen", "olsen", "larsen", "andersen", "pedersen", "nilsen", "berg", "haugen", "dahl")
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@dataclass
class Response:
    id: str
    group: int  # department (dev) or store (test)
    start: datetime
    seconds: int
    finished: bool = True
    preview: bool = False
    choice: int | None = None  # tenure (dev) or visit reason (test)
    likert: dict[int, int] = field(default_factory=dict)  # dev: statement -> answer
    score: int | None = None  # the 0-10 recommendation
    rating: int | None = None  # test: satisfaction, 1-5
    helpful: bool | None = None  # test
    email: str = ""  # test
    comment: str = ""


def _word(rng: random.Random, k: int, alphabet: str = _B62) -> str:
    return "".join(rng.choice(alphabet) for _ in range(k))


def _ip(rng: random.Random) -> str:
    return (
        f"{rng.choice((73, 98, 174, 75))}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    )


def _dev_answers(rng: random.Random, r: Response, mood: float) -> None:
    """An employee's answers, as far as they got (``Progress``)."""
    answered = 9 if r.finished else rng.randint(1, 8)  # department, tenure, six statements, the score
    r.choice = rng.choices(range(len(_TENURES)), (3, 4, 4, 2, 1))[0] if answered >= 2 else None
    for k in range(len(_STATEMENTS)):
        if 2 + k < answered and rng.random() > 0.03:
            r.likert[k] = max(0, min(4, round(rng.gauss(2.4 + mood, 1.1))))
    if answered >= 9 and rng.random() > 0.04:
        r.score = max(0, min(10, round(rng.gauss(6.6 + 2 * mood, 2.2))))
    if r.finished and rng.random() < 0.35:
        r.comment = rng.choice(_DEV_COMMENTS)


def _test_answers(rng: random.Random, r: Response, mood: float) -> None:
    r.choice = rng.choices(range(len(_REASONS)), (3, 4, 3, 2, 1, 1))[0]
    if rng.random() > 0.05:
        r.rating = max(1, min(5, round(rng.gauss(3.7 + mood, 1.0))))
    if rng.random() > 0.08:
        r.score = max(0, min(10, round(rng.gauss(7.4 + 2 * mood, 2.0))))
    if rng.random() > 0.15:
        r.helpful = rng.random() < 0.75 + mood / 2
    if rng.random() < 0.4:
        host = rng.choice(("gmail.com", "online.no", "hotmail.com"))
        r.email = f"{rng.choice(_FIRST)}.{rng.choice(_LAST)}{rng.randint(1, 999)}@{host}"
    if rng.random() < 0.3:
        r.comment = rng.choice(_TEST_COMMENTS)


def _responses(split: str, seed: str, n: int) -> list[Response]:
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    groups = _DEPARTMENTS if dev else _STORES
    weight = [rng.uniform(0.4, 2.0) for _ in groups]
    mood = [rng.uniform(-0.5, 0.5) for _ in groups]
    t = datetime(2024, 5, 6, 7, 0) if dev else datetime(2024, 3, 1, 8, 0)
    span = (14 if dev else 120) * 86400
    out: list[Response] = []
    emails: set[str] = set()
    while len(out) < n:
        t += timedelta(seconds=round(rng.expovariate(n / span)) + 30)
        g = rng.choices(range(len(groups)), weight)[0]
        if dev:
            r = Response(f"R_{_word(rng, 15)}", g, t, rng.randint(95, 1500))
            r.preview = rng.random() < 0.025
            r.finished = r.preview or rng.random() > 0.12
            _dev_answers(rng, r, mood[g])
        else:
            r = Response(_word(rng, 32, "0123456789abcdefghijklmnopqrstuvwxyz"), g, t, rng.randint(25, 400))
            _test_answers(rng, r, mood[g])
            if r.email in emails:
                r.email = ""
            emails.add(r.email)
        out.append(r)
    return out


# -- the files ----------------------------------------------------------------------------------


def _export(responses: list[Response], seed: str) -> str:
    rng = random.Random(seed)
    names = (
        [
            "StartDate",
            "EndDate",
            "Status",
            "IPAddress",
            "Progress",
            "Duration (in seconds)",
            "Finished",
            "RecordedDate",
            "ResponseId",
            "RecipientLastName",
            "RecipientFirstName",
            "RecipientEmail",
            "ExternalReference",
            "LocationLatitude",
            "LocationLongitude",
            "DistributionChannel",
            "UserLanguage",
            "Q1",
            "Q2",
        ]
        + [f"Q3_{k + 1}" for k in range(len(_STATEMENTS))]
        + ["Q4", "Q5"]
    )
    texts = (
        [
            "Start Date",
            "End Date",
            "Response Type",
            "IP Address",
            "Progress",
            "Duration (in seconds)",
            "Finished",
            "Recorded Date",
            "Response ID",
            "Recipient Last Name",
            "Recipient First Name",
            "Recipient Email",
            "External Data Reference",
            "Location Latitude",
            "Location Longitude",
            "Distribution Channel",
            "User Language",
            "Which department do you work in?",
            "How long have you worked at Northwind?",
        ]
        + [f"How much do you agree with each statement? - {s}" for s in _STATEMENTS]
        + [
            "How likely are you to recommend Northwind as a place to work? "
            "(0 = not at all likely, 10 = extremely likely)",
            "Anything else you would like to tell us?",
        ]
    )
    ids = [
        {"ImportId": k}
        for k in (
            "startDate",
            "endDate",
            "status",
            "ipAddress",
            "progress",
            "duration",
            "finished",
            "recordedDate",
            "_recordId",
            "recipientLastName",
            "recipientFirstName",
            "recipientEmail",
            "externalDataReference",
            "locationLatitude",
            "locationLongitude",
            "distributionChannel",
            "userLanguage",
            "QID1",
            "QID2",
        )
    ]
    ids = [i | ({"timeZone": "America/Denver"} if "Date" in i["ImportId"] else {}) for i in ids]
    ids += [{"ImportId": f"QID3_{k + 1}"} for k in range(len(_STATEMENTS))]
    ids += [{"ImportId": "QID4"}, {"ImportId": "QID5_TEXT"}]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerows([names, texts, [json.dumps(i, separators=(",", ":")) for i in ids]])
    for r in responses:
        end = r.start + timedelta(seconds=r.seconds)
        progress = 100 if r.finished else round(100 * (2 + len(r.likert)) / 9)
        lat, lng = (f"{rng.uniform(39.5, 40.2):.4f}", f"{rng.uniform(-105.3, -104.6):.4f}")
        row = [
            f"{r.start:%Y-%m-%d %H:%M:%S}",
            f"{end:%Y-%m-%d %H:%M:%S}",
            "Survey Preview" if r.preview else "IP Address",
            "" if r.preview else _ip(rng),
            progress,
            r.seconds,
            "True" if r.finished else "False",
            f"{end + timedelta(seconds=rng.randint(0, 4)):%Y-%m-%d %H:%M:%S}",
            r.id,
            "",
            "",
            "",
            "",
            lat,
            lng,
            "preview" if r.preview else "anonymous",
            "EN",
            _DEPARTMENTS[r.group],
            "" if r.choice is None else _TENURES[r.choice],
        ]
        row += [_LIKERT[r.likert[k]] if k in r.likert else "" for k in range(len(_STATEMENTS))]
        row += ["" if r.score is None else r.score, r.comment]
        writer.writerow(row)
    return out.getvalue()


def _answer(ref: str, kind: str, field_id: str, value: object) -> dict:
    key = {
        "multiple_choice": "choice",
        "opinion_scale": "number",
        "nps": "number",
        "yes_no": "boolean",
        "email": "email",
        "long_text": "text",
    }[kind]
    typed = {"choice": "choice", "number": "number", "boolean": "boolean", "email": "email", "text": "text"}[
        key
    ]
    return {
        "field": {"id": field_id, "ref": ref, "type": kind},
        "type": typed,
        key: {"label": value} if key == "choice" else value,
    }


def _items(responses: list[Response], seed: str) -> list[dict]:
    rng = random.Random(seed)
    fields = {
        ref: _word(random.Random(f"{seed}/{ref}"), 12)
        for ref in ("visit_reason", "satisfaction", "nps", "staff_helpful", "email", "comments")
    }
    out = []
    for r in reversed(responses):  # newest first, as the API pages them
        landed = r.start
        answers = [_answer("visit_reason", "multiple_choice", fields["visit_reason"], _REASONS[r.choice])]
        if r.rating is not None:
            answers.append(_answer("satisfaction", "opinion_scale", fields["satisfaction"], r.rating))
        if r.score is not None:
            answers.append(_answer("nps", "nps", fields["nps"], r.score))
        if r.helpful is not None:
            answers.append(_answer("staff_helpful", "yes_no", fields["staff_helpful"], r.helpful))
        if r.email:
            answers.append(_answer("email", "email", fields["email"], r.email))
        if r.comment:
            answers.append(_answer("comments", "long_text", fields["comments"], r.comment))
        mobile = rng.random() < 0.7
        out.append(
            {
                "landing_id": r.id,
                "token": r.id,
                "response_id": r.id,
                "landed_at": f"{landed:%Y-%m-%dT%H:%M:%SZ}",
                "submitted_at": f"{landed + timedelta(seconds=r.seconds):%Y-%m-%dT%H:%M:%SZ}",
                "metadata": {
                    "user_agent": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X)"
                    if mobile
                    else "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/123.0.0.0",
                    "platform": "mobile" if mobile else "other",
                    "referer": "https://fjordcycles.typeform.com/to/Qm7xT2",
                    "network_id": _word(rng, 10, "0123456789abcdef"),
                    "browser": "default",
                },
                "hidden": {"store": _STORES[r.group], "utm_source": rng.choice(("receipt", "sms", "email"))},
                "calculated": {"score": 0},
                "answers": answers,
            }
        )
    return out


def _fit(split: str, seed: str, chars: int) -> tuple[list[Response], object]:
    per = 420 if split == "dev" else 1900
    n = max(4, chars // per)
    for _ in range(6):
        responses = _responses(split, seed, n)
        context = _export(responses, seed) if split == "dev" else _items(responses, seed)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(4, round(n * chars / size))
    return responses, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _real(responses: list[Response]) -> list[Response]:
    """The finished responses that are not previews."""
    return [r for r in responses if r.finished and not r.preview]


def _nps(scores: list[int]) -> float:
    promoters, detractors = sum(s >= 9 for s in scores), sum(s <= 6 for s in scores)
    return round(100 * (promoters - detractors) / len(scores), 1)


def _ask_count(split: str, rng: random.Random, responses: list[Response]) -> _Asked:
    r = rng.choice(responses)
    if split == "dev":
        dept, real = _DEPARTMENTS[r.group], _real(responses)
        if rng.random() < 0.5:
            k = rng.randrange(len(_STATEMENTS))
            n = sum(x.group == r.group and x.likert.get(k) == 4 for x in real)
            q = (
                f"Among finished responses (no previews), how many people in {dept} answered "
                f'"Strongly agree" to "{_STATEMENTS[k]}"?'
            )
            return q, n, {"department": dept, "statement": _STATEMENTS[k]}
        if r.choice is None:
            return None
        tenure = _TENURES[r.choice]
        n = sum(x.choice == r.choice for x in real)
        q = f'How many finished responses (previews aside) say they have worked at Northwind "{tenure}"?'
        return q, n, {"tenure": tenure}
    store = _STORES[r.group]
    if rng.random() < 0.5:
        n = sum(x.group == r.group and x.helpful is True for x in responses)
        q = f"Count the responses from the {store} store that answered yes to staff_helpful."
        return q, n, {"store": store}
    reason, month = _REASONS[r.choice], f"{r.start + timedelta(seconds=r.seconds):%Y-%m}"
    n = sum(
        x.choice == r.choice and f"{x.start + timedelta(seconds=x.seconds):%Y-%m}" == month for x in responses
    )
    q = f'Count the responses submitted in {month} whose visit_reason is "{reason}".'
    return q, n, {"reason": reason, "month": month}


def _ask_mean(split: str, rng: random.Random, responses: list[Response]) -> _Asked:
    r = rng.choice(responses)
    if split == "dev":
        dept = _DEPARTMENTS[r.group]
        mine = [x for x in _real(responses) if x.group == r.group]
        if rng.random() < 0.5:
            scores = [x.score for x in mine if x.score is not None]
            if not scores:
                return None
            q = (
                f"What is the average answer to the recommend question (0-10) over the finished responses "
                f"of {dept}, previews left out? Two decimals."
            )
            return q, round(sum(scores) / len(scores), 2), {"department": dept, "of": "recommend"}
        if not mine:
            return None
        q = f"On average, how many minutes did finished responses from {dept} take (no previews)? 1 decimal."
        return (
            q,
            round(sum(x.seconds for x in mine) / len(mine) / 60, 1),
            {"department": dept, "of": "minutes"},
        )
    store = _STORES[r.group]
    mine = [x for x in responses if x.group == r.group]
    if rng.random() < 0.5:
        ratings = [x.rating for x in mine if x.rating is not None]
        if not ratings:
            return None
        q = f"Average the satisfaction ratings (1 to 5) of the {store} store's responses, to two decimals."
        return q, round(sum(ratings) / len(ratings), 2), {"store": store, "of": "satisfaction"}
    scores = [x.score for x in mine if x.score is not None]
    if not scores:
        return None
    q = (
        f"Compute the Net Promoter Score of {store} from the nps answers (percent of 9-10 minus percent "
        f"of 0-6, over those who answered), to one decimal."
    )
    return q, _nps(scores), {"store": store, "of": "nps"}


def _ask_top(split: str, rng: random.Random, responses: list[Response]) -> _Asked:
    r = rng.choice(responses)
    if split == "dev":
        real = _real(responses)
        if rng.random() < 0.5:
            scores: dict = {}
            for x in real:
                if x.score is not None:
                    scores.setdefault(_DEPARTMENTS[x.group], []).append(x.score)
            top = _leader({k: sum(v) / len(v) for k, v in scores.items()})
            q = "Which department gives the highest average recommend score (finished, no previews)?"
            return None if top is None else (q, top, {})
        dept = _DEPARTMENTS[r.group]
        top = _leader(
            Counter(_TENURES[x.choice] for x in real if x.group == r.group and x.choice is not None)
        )
        q = f"In {dept}, which answer to how long they have worked at Northwind is most common (finished)?"
        return None if top is None else (q, top, {"department": dept})
    if rng.random() < 0.5:
        top = _leader(
            Counter(_REASONS[x.choice] for x in responses if x.rating is not None and x.rating <= 2)
        )
        q = "For the responses with a satisfaction of 2 or less, which visit_reason label is most common?"
        return None if top is None else (q, top, {})
    month = _month(r)
    top = _leader(Counter(_STORES[x.group] for x in responses if _month(x) == month))
    q = f"Going by submitted_at, which store (the hidden field) got the most responses in {month}?"
    return None if top is None else (q, top, {"month": month})


def _month(r: Response) -> str:
    """The month a response was submitted in."""
    return f"{r.start + timedelta(seconds=r.seconds):%Y-%m}"


def _ask_lookup(split: str, rng: random.Random, responses: list[Response]) -> _Asked:
    """Always a question: the other template where the first has nothing to ask."""
    if split == "dev":
        r = rng.choice(responses)
        if r.likert and rng.random() < 0.5:
            k = rng.choice(sorted(r.likert))
            q = f'What did response {r.id} answer to the statement "{_STATEMENTS[k]}"?'
            return q, _LIKERT[r.likert[k]], {"response": r.id, "statement": _STATEMENTS[k]}
        return (
            f"Which department does the person behind response {r.id} work in?",
            _DEPARTMENTS[r.group],
            {"response": r.id},
        )
    known = [x for x in responses if x.email and x.score is not None]
    if known and rng.random() < 0.5:
        r = rng.choice(known)
        q = f"What nps number did the customer who left the e-mail {r.email} give?"
        return q, r.score, {"email": r.email}
    r = rng.choice(responses)
    return (
        f"Which store's form was response_id {r.id} filled in for?",
        _STORES[r.group],
        {"response_id": r.id},
    )


_ASK = {"count": _ask_count, "mean": _ask_mean, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "survey",
    "survey responses: a survey tool's CSV export as a string (dev), or a form service's responses as a "
    "list of dicts (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    responses, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, responses), kind, "lookup", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (CSV export)" if ref.split == "dev" else "list of dicts (form responses)",
        responses=len(responses),
    )
