"""Questions about a mailbox: an mbox file as one string (``dev``) or a mail API's messages as a
list of dicts (``test``).

What a notebook holds after exporting a shared team mailbox: messages with a sender, recipients, a
date, a subject and a short body, most of them in threads of replies. Senders whose addresses
extend another's stand beside each other. Threads carry a topic (a tag in the subject in ``dev``,
a category in ``test``). Messages are added until the text (or the indented JSON) is about the
length asked for. Kinds of question:

- ``sent``: how many messages one address sent in one month (``dev``) or between two dates, both
  included (``test``);
- ``busiest``: the sender (an address) of the most messages on one topic (a clear leader);
- ``thread``: how many messages a thread holds, given its first message's subject (replies of
  replies included);
- ``replied``: who (an address) sent the first reply in the thread started by one message.

Every answer is computed from the messages the generator wrote. Score: ``exact`` (numbers as
numbers, addresses without case).

Splits: ``dev`` is a Unix mbox of a product company's operations mailbox (``From `` separator
lines, RFC 5322 headers with ``Message-ID``, ``In-Reply-To`` and ``References``, dates with UTC
offsets, topics as ``[tag]`` prefixes of subjects), oldest first; ``test`` is a Microsoft
Graph-like export of a university office's inbox, newest first (``from.emailAddress``,
``receivedDateTime`` in UTC, ``conversationId``, ``categories``): other containers, fields, people
and wording.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("sent", "busiest", "thread", "replied")

_DEV_PEOPLE = (
    ("Anna Berg", "anna.berg"), ("Anna Bergmann", "anna.bergmann"), ("Jonas Weber", "jonas.weber"),
    ("Jonas Webering", "jonas.webering"), ("Priya Nair", "priya.nair"), ("Priya Nairobi", "p.nairobi"),
    ("Tom Okafor", "tom.okafor"), ("Lena Fischer", "lena.fischer"),
    ("Lena Fischer-Roth", "lena.fischer.roth"), ("Marco Rossi", "marco.rossi"),
    ("Sofia Alves", "sofia.alves"), ("Chen Wei", "chen.wei"), ("Chen Weiss", "chen.weiss"),
    ("Ole Hansen", "ole.hansen"),
)  # fmt: skip
_DEV_DOMAIN = "northwind-labs.io"
_DEV_TAGS = ("ops", "release", "billing", "security", "oncall", "infra")
_DEV_TOPICS = (
    "Disk usage alert on {h}", "Rollout of {v} to {h}", "Certificate renewal for {h}", "Backup failed on {h}",
    "Latency spike in {s}", "Invoice run for {m}", "Access request for {s}", "Postmortem: {s} outage",
    "Migration plan for {s}", "Capacity review {m}", "Patch window {m}", "Cost report {m}",
    "Rotate credentials for {s}", "Flaky deploy of {s}",
)  # fmt: skip
_DEV_HOSTS = ("db-01", "db-02", "db-12", "api-03", "api-13", "cache-2", "queue-7", "edge-4", "edge-14")
_DEV_SERVICES = (
    "payments-api",
    "auth-service",
    "search-indexer",
    "billing-worker",
    "web-frontend",
    "report-builder",
)

_TEST_PEOPLE = (
    ("Dr. Helen Carter", "h.carter"), ("Helen Carterson", "h.carterson"), ("Samuel Osei", "s.osei"),
    ("Samuel Oseiwa", "s.oseiwa"), ("Maria Gonzalez", "m.gonzalez"), ("Mariam Gonzales", "m.gonzales"),
    ("Kevin O'Brien", "k.obrien"), ("Yuki Tanaka", "y.tanaka"), ("Yuki Tanakawa", "y.tanakawa"),
    ("Fatima Haddad", "f.haddad"), ("Lucas Martin", "l.martin"), ("Lucas Martinez", "l.martinez"),
    ("Grace Kim", "g.kim"), ("Ahmed Rahman", "a.rahman"),
)  # fmt: skip
_TEST_DOMAIN = "stonebridge.ac.uk"
_TEST_TAGS = ("Admissions", "Timetabling", "Exams", "Research Grants", "Facilities", "Student Support")
_TEST_TOPICS = (
    "Room booking for {c}", "Exam board minutes {t}", "Marking deadline for {c}", "Extension request, {c}",
    "Grant report due {t}", "Visiting speaker {t}", "Reading list for {c}", "Timetable clash: {c}",
    "Lab access for {c}", "Open day rota {t}", "External examiner for {c}", "Projector fault in {r}",
    "Heating in {r}", "Course handbook {t}",
)  # fmt: skip
_TEST_COURSES = ("CS101", "CS210", "MA112", "PH201", "EC150", "HI230", "BI110", "CH205", "PS120")
_TEST_ROOMS = ("Room 2.14", "Room 3.02", "Lecture Theatre B", "Seminar Room 5", "Lab 1.07")
_TEST_TERMS = ("Michaelmas", "Lent", "Easter", "2024/25", "Semester 2")

_BODIES = (
    "Could you take a look when you have a minute?",
    "Thanks, that works for me.",
    "I have attached the notes from this morning.",
    "Can we move this to next week?",
    "Following up on the message below.",
    "Agreed, let's go ahead.",
    "I think we need more detail before deciding.",
    "Please see my comments inline.",
    "Done on my side, closing this out.",
    "Looping in the rest of the team.",
)


@dataclass
class Message:
    id: str  # Message-ID (dev) or the API's id (test)
    sender: int  # index into the people
    to: list[int]
    when: datetime  # local time (dev) or UTC (test)
    offset: int  # hours east of UTC (dev)
    subject: str
    thread: int  # the index of its first message
    parent: int | None  # the index of the message it answers
    tag: str
    body: str


def _people(split: str) -> tuple[tuple[str, str], ...]:
    return _DEV_PEOPLE if split == "dev" else _TEST_PEOPLE


def _address(split: str, who: int) -> str:
    local = _people(split)[who][1]
    return f"{local}@{_DEV_DOMAIN if split == 'dev' else _TEST_DOMAIN}"


def _topic(split: str, rng: random.Random) -> str:
    if split == "dev":
        month = rng.choice(("March", "April", "May", "June", "Q2", "Q3"))
        return rng.choice(_DEV_TOPICS).format(
            h=rng.choice(_DEV_HOSTS),
            v=f"v{rng.randint(2, 5)}.{rng.randint(0, 19)}.{rng.randint(0, 9)}",
            s=rng.choice(_DEV_SERVICES),
            m=month,
        )
    return rng.choice(_TEST_TOPICS).format(
        c=rng.choice(_TEST_COURSES), t=rng.choice(_TEST_TERMS), r=rng.choice(_TEST_ROOMS)
    )


def _messages(split: str, seed: str, n: int) -> list[Message]:
    rng = random.Random(f"{seed}/{n}")
    people = _people(split)
    tags = _DEV_TAGS if split == "dev" else _TEST_TAGS
    fav = {tag: rng.sample(range(len(people)), 3) for tag in tags}  # who writes most on each topic
    when = datetime(2024, 2, 26 if split == "dev" else 5, 8, 0)
    messages: list[Message] = []
    subjects: set[str] = set()
    for i in range(n):
        when += timedelta(minutes=rng.randint(20, 900))
        if not 7 <= when.hour <= 20:  # office hours, so dates agree in any of the offsets
            when = when.replace(hour=rng.randint(7, 10)) + timedelta(days=1)
        open_threads = [m.thread for m in messages[-14:]]
        subject = _topic(split, rng)
        if not open_threads or rng.random() < 0.4:
            if subject in subjects:  # the same alert again: told apart by its day, then its time
                subject = f"{subject} ({when:%d %b})"
            if subject in subjects:
                subject = f"{subject[:-1]} {when:%H:%M})"
            subjects.add(subject)
            tag = rng.choice(tags)
            sender = rng.choice(fav[tag]) if rng.random() < 0.5 else rng.randrange(len(people))
            to = rng.sample([p for p in range(len(people)) if p != sender], rng.randint(1, 3))
            subject = f"[{tag}] {subject}" if split == "dev" else subject
            messages.append(Message("", sender, to, when, 0, subject, i, None, tag, rng.choice(_BODIES)))
        else:
            thread = rng.choice(open_threads)
            in_thread = [j for j in range(thread, i) if messages[j].thread == thread]
            parent_at = rng.choice(in_thread)
            parent = messages[parent_at]
            root = messages[thread]
            choices = [p for p in range(len(people)) if p != parent.sender]
            favs = [p for p in fav[root.tag] if p != parent.sender]
            sender = rng.choice(favs) if rng.random() < 0.5 else rng.choice(choices)
            to = [parent.sender, *rng.sample([p for p in choices if p != sender], rng.randint(0, 2))]
            subject = f"Re: {root.subject}"
            messages.append(
                Message("", sender, to, when, 0, subject, thread, parent_at, root.tag, rng.choice(_BODIES))
            )
        m = messages[-1]
        if split == "dev":
            m.offset = rng.choice((0, 1, 1, 2))
            m.id = f"<{m.when:%Y%m%d%H%M%S}.{rng.randint(1000, 99999)}@mail.{_DEV_DOMAIN}>"
        else:
            m.id = "AAMkAD" + "".join(
                rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
                for _ in range(22)
            )
    return messages


# -- the files ----------------------------------------------------------------------------------


def _mbox(messages: list[Message]) -> str:
    out = []
    for m in messages:
        name, _ = _DEV_PEOPLE[m.sender]
        addr = _address("dev", m.sender)
        utc = m.when - timedelta(hours=m.offset)
        out.append(f"From {addr} {utc:%a %b} {utc.day:2d} {utc:%H:%M:%S %Y}")
        out.append(f"Return-Path: <{addr}>")
        out.append(f"From: {name} <{addr}>")
        out.append("To: " + ", ".join(f"{_DEV_PEOPLE[t][0]} <{_address('dev', t)}>" for t in m.to))
        out.append(f"Subject: {m.subject}")
        out.append(f"Date: {m.when:%a, %d %b %Y %H:%M:%S} +0{m.offset}00")
        out.append(f"Message-ID: {m.id}")
        if m.parent is not None:
            chain, j = [], m.parent
            while j is not None:
                chain.append(messages[j].id)
                j = messages[j].parent
            out.append(f"In-Reply-To: {messages[m.parent].id}")
            out.append("References: " + " ".join(reversed(chain)))
        out += ["MIME-Version: 1.0", 'Content-Type: text/plain; charset="utf-8"', ""]
        out += [f"Hi {_DEV_PEOPLE[m.to[0]][0].split()[0]},", "", m.body, "", f"-- {name.split()[0]}", ""]
    return "\n".join(out)


def _graph(messages: list[Message]) -> list[dict]:
    out = []
    for m in reversed(messages):  # newest first
        root = messages[m.thread]

        def who(p: int) -> dict:
            return {"emailAddress": {"name": _TEST_PEOPLE[p][0], "address": _address("test", p)}}

        out.append(
            {
                "id": m.id,
                "receivedDateTime": f"{m.when:%Y-%m-%dT%H:%M:%S}Z",
                "subject": m.subject,
                "bodyPreview": f"Dear {_TEST_PEOPLE[m.to[0]][0].split()[-1]}, {m.body}",
                "importance": "high" if "deadline" in m.subject.lower() else "normal",
                "conversationId": "AAQkAD" + root.id[6:18],
                "isRead": m.sender % 3 != 0,
                "from": who(m.sender),
                "toRecipients": [who(p) for p in m.to],
                "categories": [m.tag],
            }
        )
    return out


def _fit(split: str, seed: str, chars: int) -> tuple[list[Message], object]:
    per = 560 if split == "dev" else 900
    n = max(6, chars // per)
    for _ in range(6):
        messages = _messages(split, seed, n)
        context = _mbox(messages) if split == "dev" else _graph(messages)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(6, round(n * chars / size))
    return messages, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _ask_sent(split: str, rng: random.Random, messages: list[Message]) -> _Asked:
    m = rng.choice(messages)
    addr = _address(split, m.sender)
    if split == "dev":
        month = f"{m.when:%Y-%m}"
        n = sum(x.sender == m.sender and f"{x.when:%Y-%m}" == month for x in messages)
        q = f"How many messages did {addr} send in {m.when:%B %Y} (by the Date header)?"
        return q, n, {"address": addr, "month": month}
    first = m.when.date() - timedelta(days=rng.randint(0, 6))
    last = m.when.date() + timedelta(days=rng.randint(0, 10))
    n = sum(x.sender == m.sender and first <= x.when.date() <= last for x in messages)
    q = (
        f"Count the emails from the address {addr} received between {first:%d %B %Y} and {last:%d %B %Y}, "
        "both days included."
    )
    return q, n, {"address": addr, "from": f"{first}", "to": f"{last}"}


def _ask_busiest(split: str, rng: random.Random, messages: list[Message]) -> _Asked:
    tag = rng.choice(messages).tag
    counts: dict[int, int] = {}
    for x in messages:
        if x.tag == tag:
            counts[x.sender] = counts.get(x.sender, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    addr = _address(split, ranked[0][0])
    if split == "dev":
        q = f"Which address sent the most messages whose subject carries the [{tag}] tag (replies included)?"
        return q, addr, {"tag": tag}
    q = f"Among the messages in the category '{tag}', whose email address appears as the sender most often?"
    return q, addr, {"category": tag}


def _ask_thread(split: str, rng: random.Random, messages: list[Message]) -> _Asked:
    roots = [i for i, m in enumerate(messages) if m.parent is None]
    answered = [i for i in roots if any(m.thread == i and m.parent is not None for m in messages)]
    root = rng.choice(answered if answered and rng.random() < 0.8 else roots)
    n = sum(m.thread == root for m in messages)
    subject = messages[root].subject
    if split == "dev":
        q = f'How many messages (the first one included) are in the thread started by "{subject}"?'
        return q, n, {"subject": subject}
    q = f"The conversation that began with the email titled '{subject}': how many emails does it hold in all?"
    return q, n, {"subject": subject}


def _ask_replied(split: str, rng: random.Random, messages: list[Message]) -> _Asked:
    roots = [i for i, m in enumerate(messages) if m.parent is None]
    root = rng.choice(roots)
    replies = [m for m in messages if m.thread == root and m.parent is not None]
    if not replies:
        return None
    first = min(replies, key=lambda m: m.when)
    addr = _address(split, first.sender)
    if split == "dev":
        q = f"Who sent the first reply to the message {messages[root].id}? Give the sender's address."
        return q, addr, {"message_id": messages[root].id}
    subject = messages[root].subject
    q = f"Give the email address of whoever answered first in the conversation that started with '{subject}'."
    return q, addr, {"subject": subject}


_ASK = {"sent": _ask_sent, "busiest": _ask_busiest, "thread": _ask_thread, "replied": _ask_replied}


@family(
    "mailbox",
    "a mailbox: an mbox file as a string (dev) or a mail API's messages as a list of dicts (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    messages, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    # other addresses, topics and threads, then one address's messages, which is never zero
    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, messages), kind, "sent", nonzero=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (mbox)" if ref.split == "dev" else "list of dicts",
        messages=len(messages),
    )
