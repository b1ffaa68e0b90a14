"""Counting and filtering over records: a Python list of dicts, or the same rows as CSV text.

"How many orders are cancelled?" over a few hundred to tens of thousands of records. The answer
needs every record, so a model that reads a sample, or guesses, gets it wrong. Kinds of question:
a count by one field, a count by two fields, a sum, a count in one month, and the name that
occurs most. Score: ``exact`` (numbers as numbers), ``contains`` for the name.

Splits: ``dev`` asks about shop orders, ``test`` about support tickets: other field names, other
values, other wording. Each split has both containers (list of dicts, CSV text).
"""

from __future__ import annotations

import csv
import io
import random
from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta

from .tasks import Task, TaskRef, family

__all__ = ["SCHEMAS", "make"]


@dataclass(frozen=True)
class Schema:
    noun: str  # "orders"
    id_field: str
    who: str  # the field holding a person's name
    group: tuple[str, tuple[str, ...]]  # a field and its values
    state: tuple[str, tuple[str, ...], tuple[float, ...]]  # a field, its values, their weights
    amount: tuple[str, float, float, int]  # a field, its range, its decimals
    when: str  # the date field
    people: tuple[str, ...]


SCHEMAS = {
    "dev": Schema(
        noun="orders",
        id_field="order_id",
        who="customer",
        group=("region", ("north", "south", "east", "west", "central")),
        state=("status", ("pending", "shipped", "delivered", "cancelled", "returned"), (1, 3, 4, 3.5, 1)),
        amount=("amount", 5.0, 900.0, 2),
        when="date",
        people=("Ada Park", "Ben Ortiz", "Chloe Dunn", "Dev Patel", "Eva Novak", "Femi Ade", "Gus Hale",
                "Hana Sato", "Ivo Kral", "Jade Moss", "Kofi Mensah", "Lena Roth"),
    ),
    "test": Schema(
        noun="tickets",
        id_field="ticket",
        who="requester",
        group=("team", ("billing", "network", "accounts", "hardware")),
        state=("state", ("open", "waiting", "escalated", "closed"), (2, 1, 1.5, 4)),
        amount=("hours", 0.5, 40.0, 1),
        when="opened",
        people=("Marta Silva", "Nils Berg", "Oona Kask", "Pavel Sokol", "Quinn Doyle", "Rosa Lind",
                "Sami Haddad", "Tuva Ness", "Uri Levin", "Vera Holm", "Wen Zhou"),
    ),
}  # fmt: skip

_ROW_CHARS = {"dicts": 147, "csv": 51}  # about what a row costs in each container


def _rows(rng: random.Random, s: Schema, n: int) -> list[dict]:
    start = date(2024, 1, 1) if s.noun == "orders" else date(2025, 6, 1)
    weights = [rng.random() + 0.5 for _ in s.people]
    favourite = rng.randrange(len(s.people))
    weights[favourite] *= 1.8  # one person clearly leads, so "who occurs most" has one answer
    low, high, decimals = s.amount[1], s.amount[2], s.amount[3]
    rows = []
    for i in range(n):
        rows.append(
            {
                s.id_field: f"A-{10000 + i}" if s.noun == "orders" else 480000 + i * 7,
                s.who: rng.choices(s.people, weights)[0],
                s.group[0]: rng.choice(s.group[1]),
                s.state[0]: rng.choices(s.state[1], s.state[2])[0],
                s.amount[0]: round(rng.uniform(low, high), decimals),
                s.when: (start + timedelta(days=rng.randrange(365))).isoformat(),
            }
        )
    return rows


def _csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _ask(kind: str, split: str, s: Schema, rng: random.Random, rows: list[dict]) -> tuple[str, object, str]:
    """(question, answer, scorer) for one kind of question."""
    state = rng.choice(s.state[1])
    group = rng.choice(s.group[1])
    if kind == "count":
        n = sum(r[s.state[0]] == state for r in rows)
        q = {"dev": f"How many {s.noun} are {state}?", "test": f"How many {s.noun} have the state '{state}'?"}
        return q[split], n, "exact"
    if kind == "count2":
        n = sum(r[s.state[0]] == state and r[s.group[0]] == group for r in rows)
        q = {
            "dev": f"How many {s.noun} from the {group} region are {state}?",
            "test": f"Among the {group} team's {s.noun}, how many are {state}?",
        }
        return q[split], n, "exact"
    if kind == "sum":
        total = round(sum(r[s.amount[0]] for r in rows if r[s.group[0]] == group), s.amount[3])
        q = {
            "dev": f"What is the total amount of all {s.noun} from the {group} region? Give it to the cent.",
            "test": f"How many hours were logged in total on {s.noun} of the {group} team? Give one decimal.",
        }
        return q[split], total, "exact"
    if kind == "month":
        month = rng.randrange(1, 13)
        dated = [date.fromisoformat(r[s.when]) for r in rows]
        n = sum(d.month == month for d in dated)
        year = next((d.year for d in dated if d.month == month), dated[0].year)
        name = f"{date(2000, month, 1):%B} {year}"
        q = {
            "dev": f"How many {s.noun} were placed in {name}?",
            "test": f"How many {s.noun} were opened during {name}?",
        }
        return q[split], n, "exact"
    counts = Counter(r[s.who] for r in rows).most_common(2)
    q = {
        "dev": f"Which {s.who} placed the most {s.noun}?",
        "test": f"Who is the {s.who} with the largest number of {s.noun}?",
    }
    return q[split], counts[0][0], "contains"


_KINDS = ("count", "count2", "sum", "month", "top")


@family("records", "counting and filtering over a list of dicts or CSV text (orders in dev, tickets in test)")
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    s = SCHEMAS[ref.split]
    container = ("dicts", "csv")[ref.index % 2]
    kind = _KINDS[(ref.index // 2) % len(_KINDS)]
    n = max(20, ref.chars // _ROW_CHARS[container])
    rows = _rows(rng, s, n)
    (first, a), (second, b) = Counter(r[s.who] for r in rows).most_common(2)
    if a == b:  # break a tie, so that "who occurs most" has one answer
        next(r for r in rows if r[s.who] == second)[s.who] = first
    question, answer, scorer = _ask(kind, ref.split, s, rng, rows)
    return Task(
        id=ref.id,
        family="records",
        context=rows if container == "dicts" else _csv(rows),
        question=question,
        answer=answer,
        scorer=scorer,
        split=ref.split,
        length=ref.length,
        meta={"container": container, "question_type": kind, "records": len(rows)},
        ref=ref,
    )
