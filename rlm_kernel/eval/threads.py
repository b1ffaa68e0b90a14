"""Questions about conversations: the context is a list of message dicts (sender, time, body, and
the message each one answers).

What an export of a chat workspace or a mailbox looks like once loaded: messages in time order,
threaded by reference to an earlier message's id. ``messages = max(40, chars // 210)`` in ``dev``
and ``max(40, chars // 400)`` in ``test`` (about what a message costs as indented JSON). Kinds of
question:

- ``replies``: who replied most often to one person (the reply's parent has to be looked up by
  id; a clear leader);
- ``mention``: how many messages mention one ticket or invoice number, written exactly (others
  of the same shape, a digit apart, are mentioned too);
- ``count``: how many messages one person sent in one channel (``dev``) or thread (``test``);
- ``first_reply``: who sent the earliest reply to a given message.

Every answer is computed from the messages the generator wrote. Score: ``exact`` (names without
case).

Splits: ``dev`` is a team chat (``id``, ``channel``, ``user``, ``ts``, ``text``, ``reply_to``;
handles such as ``ada``, tickets ``OPS-1423``); ``test`` is a mailbox (``message_id``,
``subject``, ``from``, ``date`` in RFC 2822, ``body``, ``in_reply_to``; full names with
addresses, invoices ``INV-20931``): other fields, people, wording and lengths.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

from .tasks import Task, TaskRef, asked_task, draw_question, family

__all__ = ["KINDS", "messages_for", "make"]

KINDS = ("replies", "mention", "count", "first_reply")

_HANDLES = ("ada", "ben", "chloe", "dev", "eva", "femi", "gus", "hana", "ivo", "jade", "kofi", "lena")
_CHANNELS = ("#release", "#infra", "#oncall", "#design", "#data", "#random")
_CHAT = (
    "deploy of {svc} is done", "can someone look at {ref}?", "lgtm, merging", "+1", "on it",
    "rolled back {svc}, see {ref}", "{svc} latency is up again", "is {ref} still blocked?",
    "moved the standup to {hh}:30", "flaky test in {svc} again", "thanks!", "closing {ref}, fixed in {svc}",
    "who owns {svc} this week?", "pairing on {ref} after lunch",
)  # fmt: skip
_SERVICES = ("billing", "search", "gateway", "ledger", "auth", "uploader", "mailer", "reports")

_PEOPLE = ("Marta Silva", "Nils Berg", "Oona Kask", "Pavel Sokol", "Quinn Doyle", "Rosa Lind", "Sami Haddad",
           "Tuva Ness", "Uri Levin", "Vera Holm", "Wen Zhou")  # fmt: skip
_SUBJECTS = (
    "Q3 budget", "Supplier contract renewal", "Office move", "Audit findings", "Travel policy",
    "Year-end close", "New hire onboarding", "Vendor payments", "Board pack", "Expense claims",
)  # fmt: skip
_MAIL = (
    "Please find the figures for {ref} attached.", "I have approved {ref}; finance will pay it on Friday.",
    "Could you check whether {ref} was paid twice?", "Thanks, that works for me.",
    "Let us discuss this at Thursday's meeting.", "The supplier disputes {ref}, can we talk?",
    "I agree with the proposal, with one change to section {hh}.", "Noted, I will update the tracker.",
    "We are still waiting for the signed copy.", "{ref} is on hold until the audit is closed.",
)  # fmt: skip


@dataclass(frozen=True)
class Message:
    ident: str
    where: str  # the channel or the subject
    who: str
    when: datetime
    text: str
    parent: str | None


def messages_for(chars: int, split: str) -> int:
    return max(40, chars // (210 if split == "dev" else 400))


def _refs(split: str, rng: random.Random, n: int) -> list[str]:
    """Ticket or invoice numbers, some a digit apart from another one."""
    if split == "dev":
        base = rng.sample(range(1000, 9999), n)
        near = [b + 1 if b < 9998 else b - 1 for b in rng.sample(base, max(1, n // 3))]
        return [f"OPS-{x}" for x in dict.fromkeys(base + near)]
    base = rng.sample(range(20000, 99999), n)
    near = [b + 10 if b < 99989 else b - 10 for b in rng.sample(base, max(1, n // 3))]
    return [f"INV-{x}" for x in dict.fromkeys(base + near)]


def _messages(split: str, rng: random.Random, n: int) -> list[Message]:
    people = _HANDLES if split == "dev" else _PEOPLE
    places = _CHANNELS if split == "dev" else _SUBJECTS
    texts = _CHAT if split == "dev" else _MAIL
    refs = _refs(split, rng, max(6, n // 12))
    ref_weights = [rng.uniform(0.2, 2.0) for _ in refs]
    speak = [rng.uniform(0.3, 2.0) for _ in people]
    affinity = {p: [rng.uniform(0.05, 1.5) ** 2 for _ in people] for p in people}
    when = datetime(2024, 5, 6, 8, 30) if split == "dev" else datetime(2025, 3, 3, 9, 0)
    out: list[Message] = []
    for i in range(n):
        when += timedelta(seconds=rng.randint(20, 2400) if split == "dev" else rng.randint(600, 14000))
        parent = None
        if out and rng.random() < 0.6:
            parent = out[max(0, len(out) - 1 - int(rng.expovariate(1 / 8)))]
        if parent is None:
            who, where = rng.choices(people, speak)[0], rng.choice(places)
        else:
            weights = [0 if p == parent.who else w for p, w in zip(people, affinity[parent.who], strict=True)]
            who, where = rng.choices(people, weights)[0], parent.where
        text = rng.choice(texts).format(
            svc=rng.choice(_SERVICES), ref=rng.choices(refs, ref_weights)[0], hh=rng.randint(9, 17)
        )
        if split == "test":
            to = parent.who.split()[0] if parent else "all"
            text = f"Hi {to},\n\n{text}\n\nBest,\n{who.split()[0]}"
        ident = f"m{i:05d}" if split == "dev" else f"<{rng.getrandbits(40):010x}.{i}@mail.tidewater.example>"
        out.append(Message(ident, where, who, when, text, parent.ident if parent else None))
    return out


def _render(split: str, m: Message, subjects: dict[str, str]) -> dict:
    if split == "dev":
        return {"id": m.ident, "channel": m.where, "user": m.who, "ts": f"{m.when:%Y-%m-%d %H:%M:%S}",
                "text": m.text, "reply_to": m.parent}  # fmt: skip
    address = m.who.lower().replace(" ", ".") + "@tidewater.example"
    return {
        "message_id": m.ident,
        "subject": subjects[m.ident],
        "from": f"{m.who} <{address}>",
        "date": format_datetime(m.when.replace(tzinfo=timezone.utc)),
        "body": m.text,
        "in_reply_to": m.parent,
    }


def _subjects(messages: list[Message]) -> dict[str, str]:
    """Each message's subject line: the thread's, with "Re: " on replies."""
    return {m.ident: ("Re: " if m.parent else "") + m.where for m in messages}


def mentions(text: str, ref: str) -> bool:
    """Whether the text names the number exactly (not as part of a longer one)."""
    return re.search(rf"(?<![\w-]){re.escape(ref)}(?![\w-])", text) is not None


def _ask(
    kind: str, split: str, rng: random.Random, messages: list[Message]
) -> tuple[str, object, dict] | None:
    by_id = {m.ident: m for m in messages}
    people = sorted({m.who for m in messages})
    person = rng.choice(people)
    if kind == "replies":
        counts = Counter(m.who for m in messages if m.parent and by_id[m.parent].who == person).most_common(2)
        if not counts or (len(counts) == 2 and counts[0][1] <= counts[1][1]):
            return None
        if split == "dev":
            return f"Who replied most often to messages posted by {person}?", counts[0][0], {"person": person}
        q = f"Which colleague answered emails from {person} the greatest number of times? Give the full name."
        return q, counts[0][0], {"person": person}
    if kind == "mention":
        found = sorted({r for m in messages for r in re.findall(r"(?:OPS|INV)-\d+", m.text)})
        ref = rng.choice(found)
        n = sum(mentions(m.text, ref) for m in messages)
        if split == "dev":
            return f"How many messages mention the ticket {ref} (that exact number)?", n, {"ref": ref}
        return f"Count the emails whose body refers to invoice {ref} exactly.", n, {"ref": ref}
    if kind == "count":
        place = rng.choice(sorted({m.where for m in messages}))
        n = sum(m.who == person and m.where == place for m in messages)
        if split == "dev":
            return f"How many messages did {person} post in {place}?", n, {"person": person, "channel": place}
        q = f"In the thread '{place}' (replies included), how many emails were sent by {person}?"
        return (q, n, {"person": person, "thread": place}) if n else None
    answered = Counter(m.parent for m in messages if m.parent)
    many = sorted(ident for ident, k in answered.items() if k >= 2) or sorted(answered)
    target = by_id[rng.choice(many)]
    first = next(m for m in messages if m.parent == target.ident)
    if split == "dev":
        return (
            f"Who was the first to reply to the message with id {target.ident}?",
            first.who,
            {"id": target.ident},
        )
    q = f"Who sent the earliest reply to the email whose message_id is {target.ident}? Give the full name."
    return q, first.who, {"message_id": target.ident}


@family(
    "threads", "chat or email threads as a list of dicts: who replied to whom, exact mentions (chat in dev)"
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    messages = _messages(ref.split, rng, messages_for(ref.chars, ref.split))
    kind = KINDS[ref.index % len(KINDS)]
    # other people, then the first reply, which always exists
    kind, asked = draw_question(
        lambda kind_: _ask(kind_, ref.split, rng, messages), kind, "first_reply", nonzero=True
    )
    subjects = _subjects(messages)
    context = [_render(ref.split, m, subjects) for m in messages]
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="list of dicts",
        messages=len(messages),
    )
