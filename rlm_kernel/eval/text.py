"""Filler prose for haystacks: seeded, any length, in two styles that never meet.

The ``dev`` split reads like an operations report, the ``test`` split like a naturalist's field
notes, with their own sentence forms and vocabulary. Both carry numbers, names and dates, so a
needle's digits are not the only digits in the text.
"""

from __future__ import annotations

import random

__all__ = ["Prose", "prose"]

_DEV = {
    "forms": [
        "The {team} team reviewed the {thing} and noted {n} open items.",
        "On {day}, {person} moved the {thing} review to the {place}.",
        "Most of the {thing} backlog was closed before the {period} ended.",
        "{person} asked whether the {thing} budget covers {n} more licences.",
        "The {place} reported {n} minor incidents, none of them urgent.",
        "A draft of the {thing} plan went to the {team} group for comments.",
        "Shipping delays in the {place} added {n} days to the {thing} schedule.",
        "The weekly sync covered hiring, the {thing} audit and travel.",
        "{person} will present the {period} figures at the next all-hands.",
        "Nothing changed in the {thing} process since the last review.",
        "The {team} team expects the {thing} migration to finish in {n} weeks.",
        "Feedback from the {place} was mostly about the {thing} tooling.",
    ],
    "team": ["finance", "platform", "support", "legal", "design", "sales", "procurement", "security"],
    "thing": ["vendor", "onboarding", "billing", "inventory", "payroll", "compliance", "network", "archive"],
    "place": ["north office", "warehouse", "east wing", "regional hub", "call centre", "data room"],
    "person": ["Morgan", "Priya", "Tomas", "Elena", "Kwame", "Yuki", "Dana", "Rafael", "Ingrid", "Omar"],
    "period": ["quarter", "sprint", "month", "half-year", "fiscal year"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
}

_TEST = {
    "forms": [
        "Near the {feature} we counted {n} {animals} feeding at dusk.",
        "The {season} rains left the {feature} muddy for {n} days.",
        "{person} sketched {a_plant} growing beside the old {structure}.",
        "By noon the wind had turned, and the {animals} left the {feature}.",
        "{A_plant} in full flower stood {n} paces from the {structure}.",
        "We heard {a_animal} calling from somewhere past the {feature}.",
        "{person} logged the water level at the {feature} twice that morning.",
        "The path to the {structure} was blocked by a fallen {plant}.",
        "In the {season} of that year the {animals} nested early.",
        "Frost covered the {feature} until {person} lit the stove.",
        "Old maps show {a_structure} here as far back as {year}.",
        "The {plant} on the north slope was {n} centimetres taller than last year.",
    ],
    "feature": ["marsh", "ridge", "creek", "meadow", "tidal flat", "birch grove", "cliff edge"],
    "animal": ["heron", "fox", "otter", "curlew", "deer", "badger", "kestrel", "hare"],
    "animals": ["herons", "foxes", "otters", "curlews", "deer", "badgers", "kestrels", "hares"],
    "plant": ["rowan", "foxglove", "sedge", "juniper", "bracken", "sorrel", "alder"],
    "structure": ["mill", "chapel", "lighthouse", "stone bridge", "sheepfold", "watchtower"],
    "person": ["Agnes", "Lorcan", "Maren", "Idris", "Solveig", "Ewan", "Tamsin", "Bram"],
    "season": ["spring", "summer", "autumn", "winter"],
}


class Prose:
    """An endless supply of sentences in one split's style."""

    def __init__(self, rng: random.Random, split: str) -> None:
        self.rng = rng
        self.style = _DEV if split == "dev" else _TEST

    def sentence(self) -> str:
        style, rng = self.style, self.rng
        form = rng.choice(style["forms"])
        values = {k: rng.choice(v) for k, v in style.items() if k != "forms"}
        for k in ("plant", "animal", "structure"):
            if k in values:
                values[f"a_{k}"] = ("an " if values[k][0] in "aeiou" else "a ") + values[k]
                values[f"A_{k}"] = values[f"a_{k}"].capitalize()
        values["n"] = str(rng.choice([rng.randint(2, 19), rng.randint(20, 400)]))
        values["year"] = str(rng.randint(1790, 1960))
        text = form.format(**values)
        return text[0].upper() + text[1:]

    def text(self, chars: int, sep: str = " ") -> str:
        """Sentences joined by ``sep`` up to about ``chars`` characters."""
        parts, total = [], 0
        while total < chars:
            s = self.sentence()
            parts.append(s)
            total += len(s) + len(sep)
        return sep.join(parts)


def prose(rng: random.Random, split: str) -> Prose:
    return Prose(rng, split)
