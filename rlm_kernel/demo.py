"""``python -m rlm_kernel.demo``: an RLM finds a needle in a haystack far larger than the model's
window, with the real small local model, offline and with no API key."""

from __future__ import annotations

import argparse
import random
import sys

from . import models
from .console import ConsoleView
from .errors import RLMError
from .rlm import RLM

WORDS = "the of and a to in is was for on that with as by at from his her it an were which be this".split()


def haystack(seed: int, n_chars: int) -> tuple[str, str, str]:
    rng = random.Random(seed)
    lines, total = [], 0
    while total < n_chars:
        line = " ".join(rng.choice(WORDS) for _ in range(12)) + "."
        lines.append(line)
        total += len(line) + 1
    place = rng.choice(["vault", "garden shed", "harbor office", "library annex"])
    code = str(rng.randint(1000, 9999))
    lines.insert(rng.randrange(len(lines)), f"The secret code for the {place} is {code}.")
    return "\n".join(lines), place, code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlm_kernel.demo", description=__doc__)
    parser.add_argument("--chars", type=int, default=200_000, help="haystack size in characters")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    try:
        models.fetch()  # before anything else: its room on disk checked, then a bar with its size
    except RLMError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    context, place, code = haystack(args.seed, args.chars)
    print(f"Context: {len(context):,} characters (about {len(context) // 4:,} tokens); model window: 8,192.")
    question = f"What is the secret code for the {place}?"
    print(f"Question: {question}")
    rlm = RLM("local", max_iterations=6)
    result = rlm.completion(context, question, subscribers=(ConsoleView(),))
    print(f"\nAnswer: {result.response}   (expected {code})")
    print(f"Usage: {result.usage}\nTrajectory: {result.log_path}")
    return 0 if result.response and code in result.response else 1


if __name__ == "__main__":
    raise SystemExit(main())
