"""Telling a root that loops: code that repeats code which failed, the reply run just before it, or
printed output pasted back as code. ``LoopGuard`` keeps what a reply's code is told apart from;
the engine decides what a loop costs (a resample, a note, the run's end)."""

from __future__ import annotations

import ast
from typing import NamedTuple

LOOP_RESAMPLES = 2  # replies a turn may set aside as a loop before one is answered with the note alone
LOOP_TURNS = 2  # turns in a row that end in a loop before the run ends: the root cannot get out of it

__all__ = ["LOOP_RESAMPLES", "LOOP_TURNS", "Loop", "LoopGuard", "distinct", "echoes", "lesson", "normal_code"]

LESSON_CHARS = 400  # of a failed step's error, in a note on the loop that repeats it


class Loop(NamedTuple):
    """Why a reply's code is a loop: for the warning, for the root's note, and the failed step it
    repeats (0: another loop) with its error's lesson."""

    warning: str
    note: str
    failed: int = 0
    error: str = ""


def lesson(error: str) -> str:
    """What a failed step's error says, in a line or a few: the exception, then the hints after
    the traceback (the traceback's frames aside)."""
    lines = [ln.strip() for ln in error.splitlines() if ln.strip() and not ln[:1].isspace()]
    hints = [ln for ln in lines if ln.startswith("Hint:")]
    raised = [ln for ln in lines if not ln.startswith(("Hint:", "Traceback "))][-1:]
    return " ".join([*raised, *hints])[:LESSON_CHARS] or "an error"


class LoopGuard:
    """What the run's code has done, as far as a loop is told by it."""

    def __init__(self) -> None:
        # Code that failed, since a reply last ran whole: each reply's blocks up to the failing one
        # (normalised, see normal_code) -> the failing step and its error's lesson.
        self.failing: dict[tuple[str, ...], tuple[int, str]] = {}
        self.ran: list[str] = []  # the current reply's blocks that ran, normalised
        # The last reply that ran whole without an error (normalised) and its last step: the same
        # code again over the same REPL would print the same output.
        self.last_run: tuple[tuple[str, ...], int] | None = None
        self.resampled = 0  # replies of this turn set aside as loops
        self.set_aside: str | None = None  # the last of them
        self.looped_turns = 0  # turns in a row whose replies all looped

    def reason(self, blocks: list[str], requests: list[str]) -> Loop | None:
        """Why a reply's code is a loop, not run again. ``requests`` are what the root was sent
        after its first request."""
        if not blocks:
            return None
        codes = [normal_code(b) for b in blocks]
        for ran, (step, error) in self.failing.items():
            if tuple(codes[: len(ran)]) == ran:
                return Loop(
                    f"repeated step {step}, which had failed",
                    f"Not run: your code repeats step {step}, which failed ({error}). The same "
                    "code fails the same way: change it.",
                    step,
                    error,
                )
        if self.last_run is not None and tuple(codes) == self.last_run[0]:
            step = self.last_run[1]
            return Loop(
                f"repeated step {step}, which had just run",
                f"Not run: your code is the same as step {step}, which already ran; its output is above. "
                "Use it: answer, or write different code.",
            )
        if echoes(blocks[0], requests):
            return Loop(
                "pasted printed output as code",
                "Not run: your code block is a copy of printed output, not Python. Write code that "
                "works on the value instead.",
            )
        return None

    def reply_taken(self) -> None:
        """A reply's code is about to run: the turn did not end in a loop."""
        self.looped_turns = 0
        self.ran = []

    def step_ran(self, code: str, step: int, failure: str | None, *, whole: bool, answer_ready: bool) -> None:
        """A step of the current reply ran; ``failure`` is its error's lesson, if it raised,
        ``whole`` whether it was the reply's last block."""
        self.ran.append(normal_code(code))
        if failure is not None:
            self.failing[tuple(self.ran)] = (step, failure)
            self.last_run = None
        elif whole:  # the reply ran whole: the REPL is not what it was when code failed
            self.failing.clear()
            # Code that set an answer may be sent again after a doubt: the root insisting, no loop.
            self.last_run = None if answer_ready else (tuple(self.ran), step)

    def forget(self) -> None:
        """The human changed the REPL: code that failed may not fail again, nor code that ran print
        the same."""
        self.failing.clear()
        self.last_run = None


def normal_code(code: str) -> str:
    """Code as a loop is told by: its syntax tree (comments, spacing and quotes aside), or, where it
    does not parse, its words without comment lines."""
    try:
        return ast.dump(ast.parse(code))
    except (SyntaxError, ValueError):
        return " ".join(
            w for line in code.splitlines() if not line.lstrip().startswith("#") for w in line.split()
        )


def distinct(blocks: list[str]) -> list[str]:
    """``blocks`` without each one that repeats the block before it: a reply stopped in a loop."""
    codes = [normal_code(b) for b in blocks]
    return [b for i, b in enumerate(blocks) if i == 0 or codes[i] != codes[i - 1]]


def echoes(code: str, requests: list[str]) -> bool:
    """Whether ``code`` is output pasted back: it does not parse, and most of its lines (of three
    characters or more) are in ``requests``, what the root was sent after its first request."""
    try:
        ast.parse(code)
        return False
    except (SyntaxError, ValueError):
        pass
    seen = "\n".join(" ".join(line.split()) for text in requests for line in text.splitlines())
    lines = [" ".join(line.split()) for line in code.splitlines()]
    lines = [line for line in lines if len(line) >= 3]
    return bool(lines) and 2 * sum(line in seen for line in lines) >= len(lines)
