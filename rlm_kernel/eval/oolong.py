"""OOLONG ``trec_coarse`` and OOLONG-Pairs: aggregation over questions whose labels are hidden.

The context is a list of dated, user-tagged questions from the TREC question-classification set
(shipped in ``data/``); each has a coarse label (``numeric value``, ``location``, …) that the
context does not show, so answering means labelling every line by its meaning, then counting.

- ``oolong`` asks OOLONG's kinds of aggregate question: how many lines have a label, which label
  is the most or least common, how two labels compare, how many of one user's lines (or of the
  lines before or after a date) have a label. Score: ``0.75 ** |error|`` for numbers, exact match
  for labels and comparisons.
- ``pairs`` asks the RLM paper's 20 OOLONG-Pairs tasks (appendix D.1): list every pair of users
  whose lines meet a condition. The answer is a list of pairs, so the work is quadratic. Score: F1
  over pairs.

Splits: ``dev`` and ``test`` draw from alternate halves of the TREC file's distinct questions;
``test`` writes the context in OOLONG's own line format and asks in the benchmark's wording,
``dev`` in a format and wording of its own.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache
from importlib import resources

from .tasks import Task, TaskRef, family

__all__ = ["LABELS", "COMPARISONS", "PAIR_TASKS", "Line", "trec", "build_context", "make", "make_pairs"]

LABELS = {
    "ABBR": "abbreviation",
    "DESC": "description and abstract concept",
    "ENTY": "entity",
    "HUM": "human being",
    "LOC": "location",
    "NUM": "numeric value",
}
COMPARISONS = ("more common than", "less common than", "same frequency as")
_FIRST_DAY, _DAYS = date(2022, 7, 1), 640  # lines are dated from July 2022 to March 2024


@dataclass(frozen=True)
class Line:
    day: date
    user: int
    label: str  # one of LABELS' values
    question: str


@lru_cache(maxsize=2)
def trec(split: str) -> tuple[tuple[str, str], ...]:
    """(label, question) pairs of the split's half of the TREC training set."""
    text = resources.files(__package__).joinpath("data/trec_train_5500.label").read_text("ascii")
    unique: dict[str, str] = {}  # the file repeats some questions: each goes to one split only
    for line in text.splitlines():
        tag, _, question = line.partition(" ")
        if question.strip():
            unique.setdefault(question.strip(), LABELS[tag.split(":")[0]])
    side = 0 if split == "dev" else 1
    return tuple((label, q) for i, (q, label) in enumerate(unique.items()) if i % 2 == side)


def _format(line: Line, split: str) -> str:
    if split == "test":  # OOLONG's own format
        return f"Date: {line.day:%b %d, %Y} || User: {line.user} || Instance: {line.question}"
    return f"{line.day.isoformat()} | user {line.user} | {line.question}"


def build_context(rng: random.Random, split: str, chars: int) -> tuple[str, list[Line]]:
    """About ``chars`` characters of dated, user-tagged questions; labels only in the returned lines."""
    pool = trec(split)
    order = list(range(len(pool)))
    rng.shuffle(order)
    estimate = max(8, chars // 90)
    users = rng.sample(range(10_000, 99_999), max(8, min(400, estimate // 25)))
    lines: list[Line] = []
    total = 0
    while total < chars:
        label, question = pool[order[len(lines) % len(order)]]  # reused only past the split's size
        line = Line(_FIRST_DAY + timedelta(days=rng.randrange(_DAYS)), rng.choice(users), label, question)
        lines.append(line)
        total += len(_format(line, split)) + 1
    return "\n".join(_format(line, split) for line in lines), lines


_LABEL_NOTE = {
    "test": (
        "Each of the questions can be labelled as one of the labels (the data does not provide the "
        "labels, you need to figure out the label from the semantics of the question): "
        "description and abstract concept, entity, human being, numeric value, location, abbreviation."
    ),
    "dev": (
        "The labels are not written in the data: infer each question's label from what it asks. "
        "The possible labels are abbreviation, description and abstract concept, entity, human being, "
        "location and numeric value."
    ),
}


def _day(d: date) -> str:
    return f"{d:%B} {d.day}, {d.year}"


def _question(kind: str, split: str, **v: str) -> str:
    final = {"n": "Give your final answer as a number.", "label": "Give your final answer as a label."}
    test = {
        "count": "In the above data, how many data points should be classified as label '{label}'? "
        + final["n"],
        "most": "In the above data, which of the labels is the most common? " + final["label"],
        "least": "In the above data, which of the labels is the least common? " + final["label"],
        "compare": "In the above data, is label '{a}' more common than, less common than, or the same "
        "frequency as label '{b}'? Give your final answer as 'more common than', 'less common than' "
        "or 'same frequency as'.",
        "user": "In the above data, how many data points for user {user} should be classified as label "
        "'{label}'? " + final["n"],
        "date": "In the above data, how many data points dated {when} {day} should be classified as label "
        "'{label}'? " + final["n"],
    }
    dev = {
        "count": "How many of the questions in the data have the label '{label}'? Answer with a number.",
        "most": "Which label occurs most often among the questions? Answer with the label.",
        "least": "Which label occurs least often among the questions? Answer with the label.",
        "compare": "Compared with label '{b}', is label '{a}' more common than, less common than, or the "
        "same frequency as it? Answer with one of those three phrases.",
        "user": "How many questions from user {user} carry the label '{label}'? Answer with a number.",
        "date": "Counting only questions dated {when} {day}, how many have the label '{label}'? "
        "Answer with a number.",
    }
    return (test if split == "test" else dev)[kind].format(**v) + " " + _LABEL_NOTE[split]


@family("oolong", "OOLONG trec_coarse: count, rank and compare hidden labels of dated, user-tagged questions")
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    context, lines = build_context(rng, ref.split, ref.chars)
    counts = Counter(line.label for line in lines)
    ranked = [label for label in LABELS.values()]
    kinds = ["count", "most", "least", "compare", "user", "date"]
    kind = kinds[ref.index % len(kinds)]
    label = rng.choice(ranked)
    answer: object
    if kind == "count":
        answer, question = counts[label], _question(kind, ref.split, label=label)
    elif kind in ("most", "least"):
        by_count = sorted(ranked, key=lambda x: counts[x], reverse=kind == "most")
        if counts[by_count[0]] == counts[by_count[1]]:  # a tie has no single answer: ask a count instead
            kind, answer, question = "count", counts[label], _question("count", ref.split, label=label)
        else:
            answer, question = by_count[0], _question(kind, ref.split)
    elif kind == "compare":
        a, b = rng.sample(ranked, 2)
        answer = (
            COMPARISONS[0]
            if counts[a] > counts[b]
            else COMPARISONS[1]
            if counts[a] < counts[b]
            else COMPARISONS[2]
        )
        question = _question(kind, ref.split, a=a, b=b)
    elif kind == "user":
        user = rng.choice(sorted({line.user for line in lines}))
        answer = sum(1 for line in lines if line.user == user and line.label == label)
        question = _question(kind, ref.split, user=str(user), label=label)
    else:
        pivot = _FIRST_DAY + timedelta(days=rng.randrange(60, _DAYS - 60))
        when = rng.choice(["before", "after"])
        answer = sum(
            1
            for line in lines
            if line.label == label and (line.day < pivot if when == "before" else line.day > pivot)
        )
        question = _question(kind, ref.split, when=when, day=_day(pivot), label=label)
    return Task(
        id=ref.id,
        family="oolong",
        context=context,
        question=question,
        answer=answer,
        scorer="oolong",
        split=ref.split,
        length=ref.length,
        meta={"question_type": kind, "lines": len(lines), "users": len({line.user for line in lines})},
        ref=ref,
    )


# -- OOLONG-Pairs -------------------------------------------------------------------------------

Condition = tuple[str, str, int]  # (label, ">=" or "==", count)


@dataclass(frozen=True)
class PairTask:
    """Symmetric: both users have at least one line with one of ``any_of`` (and every line of
    ``dated[0]`` is ``dated[1]`` ``dated[2]``). Asymmetric: one user meets ``role_a``, the other
    ``role_b``."""

    number: int
    any_of: tuple[str, ...] = ()
    dated: tuple[str, str, date] | None = None
    role_a: tuple[Condition, ...] = ()
    role_b: tuple[Condition, ...] = ()


_N, _L, _D, _E, _H, _A = (
    "numeric value", "location", "description and abstract concept", "entity", "human being", "abbreviation",
)  # fmt: skip

PAIR_TASKS: tuple[PairTask, ...] = (
    PairTask(1, any_of=(_N, _L)),
    PairTask(2, any_of=(_E, _H)),
    PairTask(3, any_of=(_D, _A)),
    PairTask(4, any_of=(_H, _L), dated=(_H, "after", date(2023, 1, 6))),
    PairTask(5, any_of=(_E, _N), dated=(_E, "before", date(2023, 3, 15))),
    PairTask(6, any_of=(_L, _A)),
    PairTask(7, any_of=(_D, _N), dated=(_N, "after", date(2023, 2, 1))),
    PairTask(8, any_of=(_H, _D)),
    PairTask(9, any_of=(_E, _L), dated=(_L, "after", date(2023, 4, 10))),
    PairTask(10, any_of=(_N, _A), dated=(_A, "before", date(2023, 5, 20))),
    PairTask(11, role_a=((_E, ">=", 1), (_A, ">=", 1)), role_b=((_E, "==", 1),)),
    PairTask(12, role_a=((_N, ">=", 2),), role_b=((_L, ">=", 1), (_H, ">=", 1))),
    PairTask(13, role_a=((_D, "==", 1),), role_b=((_A, ">=", 1), (_E, ">=", 1))),
    PairTask(14, role_a=((_H, ">=", 1), (_N, ">=", 1)), role_b=((_L, "==", 2),)),
    PairTask(15, role_a=((_E, ">=", 1), (_L, ">=", 1), (_A, ">=", 1)), role_b=((_N, "==", 1),)),
    PairTask(16, role_a=((_D, ">=", 1), (_H, ">=", 1)), role_b=((_E, ">=", 2), (_A, "==", 1))),
    PairTask(17, role_a=((_N, "==", 1),), role_b=((_L, ">=", 1), (_D, ">=", 1))),
    PairTask(18, role_a=((_A, ">=", 1), (_H, "==", 1)), role_b=((_E, ">=", 1), (_N, ">=", 1))),
    PairTask(19, role_a=((_L, ">=", 2), (_E, ">=", 1)), role_b=((_D, "==", 1), (_A, "==", 1))),
    PairTask(20, role_a=((_N, ">=", 1), (_H, ">=", 1)), role_b=((_L, ">=", 1), (_E, ">=", 1), (_A, "==", 1))),
)


def _meets(lines: list[Line], conditions: tuple[Condition, ...]) -> bool:
    counts = Counter(line.label for line in lines)
    return all(counts[label] >= n if op == ">=" else counts[label] == n for label, op, n in conditions)


def _eligible(task: PairTask, lines: list[Line]) -> bool:
    if not any(line.label in task.any_of for line in lines):
        return False
    if task.dated is None:
        return True
    label, when, pivot = task.dated
    days = [line.day for line in lines if line.label == label]
    return all(d > pivot for d in days) if when == "after" else all(d < pivot for d in days)


def gold_pairs(task: PairTask, lines: list[Line]) -> list[tuple[int, int]]:
    """The pairs of user ids (lower first) that meet the task, sorted."""
    by_user: dict[int, list[Line]] = defaultdict(list)
    for line in lines:
        by_user[line.user].append(line)
    users = sorted(by_user)
    if task.any_of:
        ok = [u for u in users if _eligible(task, by_user[u])]
        return [(a, b) for i, a in enumerate(ok) for b in ok[i + 1 :]]
    a_users = {u for u in users if _meets(by_user[u], task.role_a)}
    b_users = {u for u in users if _meets(by_user[u], task.role_b)}
    return sorted({(min(a, b), max(a, b)) for a in a_users for b in b_users if a != b})


def _article(label: str) -> str:
    return ("an " if label[0] in "aeiou" else "a ") + label


def _conditions(conds: tuple[Condition, ...], split: str) -> str:
    def one(c: Condition) -> str:
        label, op, n = c
        many = "instance" if n == 1 else "instances"
        if split == "test":
            return f"{'at least' if op == '>=' else 'exactly'} {['', 'one', 'two'][n]} {many} with {label}"
        return (
            f"{'at least' if op == '>=' else 'exactly'} {n} question{'s' if n > 1 else ''} labelled {label}"
        )

    parts = [one(c) for c in conds]
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return f"{parts[0]} and {parts[1]}"
    return ", ".join(parts[:-1]) + ", and " + parts[-1]


def pair_question(task: PairTask, split: str) -> str:
    if split == "test":  # the wording of the paper's appendix D.1
        head = "In the above data, list all pairs of user IDs (no duplicate pairs, list lower ID first) "
        if task.any_of:
            a, b = task.any_of
            body = f"where both users have at least one instance with {_article(a)} or {b}"
            if task.dated:
                label, when, pivot = task.dated
                must = f"must be {when} {_day(pivot)}"
                body += f", and all instances that are {_article(label)} for both users {must}"
        else:
            body = (
                f"such that one user has {_conditions(task.role_a, split)}, and the other user has "
                f"{_conditions(task.role_b, split)}"
            )
        tail = " In your answer, list all pairs in the format (user_id_1, user_id_2), separated by newlines."
        return f"{head}{body}. {_LABEL_NOTE[split]}{tail}"
    head = "Find every pair of users, each pair once with the smaller user ID first, "
    if task.any_of:
        a, b = task.any_of
        body = f"in which each of the two users asked at least one question labelled {a} or {b}"
        if task.dated:
            label, when, pivot = task.dated
            body += f", and every {label} question of either user is dated {when} {_day(pivot)}"
    else:
        body = (
            f"in which one user asked {_conditions(task.role_a, split)} while the other asked "
            f"{_conditions(task.role_b, split)}"
        )
    return f"{head}{body}. {_LABEL_NOTE[split]} Write one pair per line as (first_id, second_id)."


@family("pairs", "OOLONG-Pairs: the paper's 20 tasks that list every pair of users meeting a condition")
def make_pairs(ref: TaskRef) -> Task:
    rng = ref.rng()
    context, lines = build_context(rng, ref.split, ref.chars)
    task = PAIR_TASKS[ref.index % len(PAIR_TASKS)]
    pairs = gold_pairs(task, lines)
    return Task(
        id=ref.id,
        family="pairs",
        context=context,
        question=pair_question(task, ref.split),
        answer=[list(p) for p in pairs],
        scorer="f1_pairs",
        split=ref.split,
        length=ref.length,
        meta={
            "pair_task": task.number,
            "gold_pairs": len(pairs),
            "users": len({line.user for line in lines}),
        },
        ref=ref,
    )
