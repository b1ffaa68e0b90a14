"""``python -m rlm_kernel.export``: turn trajectories (JSONL logs or notebooks) into fine-tuning data.

One sample per root turn, in the chat format most trainers read (``{"messages": [...]}``): the
conversation up to that turn as input, the root's reply as the target (and, where a human had
the root propose a step again, the replies set aside as ``rejected``). Where a human edited a
step before it ran, the target (and the history after it) holds the code that actually ran, so
the data teaches the corrected behaviour. A branch (a rewind, ``rlm_kernel.rewind``) is a
conversation of its own that starts with the turn it asked again; with the run it continues among
the inputs, that run's reply at the turn is the branch's ``rejected``, and that run's samples from
the turn on say which branch the human chose instead (``superseded_by``). Filters follow the RLM
paper's recipe: runs scored zero and runs of a single turn are dropped; an optional length cap
drops long samples.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .events import (
    Event,
    HumanEdit,
    ProposalRejected,
    RootReply,
    RootRequest,
    RunEnded,
    RunStarted,
    StepStarted,
)
from .protocol import code_blocks
from .trajectory import from_notebook, load

__all__ = ["Turn", "Conversation", "conversations", "samples", "read_inputs", "main"]


@dataclass
class Turn:
    user: str
    reply: str
    target: str
    edited: bool = False
    rejected: list[str] = field(default_factory=list)  # replies the human had proposed again
    superseded_by: str | None = None  # the branch a human continued from this turn instead


@dataclass
class Conversation:
    run_id: str
    depth: int
    prefix: list[dict[str, Any]]
    turns: list[Turn] = field(default_factory=list)
    answer: str | None = None
    error: str | None = None
    first_turn: int = 1  # a branch's turns begin where it left the run it continues
    parent_run: str | None = None
    branched_at: int | None = None

    @property
    def succeeded(self) -> bool:
        return self.answer is not None and self.error is None

    @property
    def length(self) -> int:
        """Root turns, a branch's inherited ones included."""
        return self.first_turn - 1 + len(self.turns)


def _corrected(reply: str, edits: list[tuple[str, str]]) -> str:
    """The reply with each edited code block replaced by the code that actually ran."""
    for proposed, executed in edits:
        if proposed.strip() in reply:
            reply = reply.replace(proposed.rstrip("\n"), executed.rstrip("\n"), 1)
    return reply


def conversations(events: Iterable[Event]) -> list[Conversation]:
    """Each run's conversation with its root LM (children are runs of their own)."""
    runs: dict[str, Conversation] = {}
    pending_user: dict[str, str] = {}
    rejected: dict[str, list[str]] = {}
    step_turn: dict[tuple[str, int], int] = {}
    edits: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for event in events:
        rid = event.run_id
        if isinstance(event, RunStarted):
            runs[rid] = Conversation(
                rid,
                event.depth,
                [dict(m) for m in event.prompt],
                parent_run=event.parent_run,
                branched_at=event.branched_at,
            )
        elif rid not in runs:
            continue
        elif isinstance(event, RootRequest):
            if rid not in pending_user and not runs[rid].turns:  # the run's first request
                runs[rid].first_turn = event.turn
            pending_user[rid] = event.content
        elif isinstance(event, RootReply):
            turn = Turn(pending_user.pop(rid, ""), event.text, event.text, rejected=rejected.pop(rid, []))
            runs[rid].turns.append(turn)
        elif isinstance(event, ProposalRejected) and runs[rid].turns:
            # The turn is asked again: its next reply answers the same request.
            set_aside = runs[rid].turns.pop()
            pending_user[rid] = set_aside.user
            rejected[rid] = [*set_aside.rejected, set_aside.reply]
        elif isinstance(event, StepStarted) and event.author == "root":
            step_turn[(rid, event.step)] = len(runs[rid].turns) - 1
        elif isinstance(event, HumanEdit) and (rid, event.step) in step_turn:
            edits.setdefault((rid, step_turn[(rid, event.step)]), []).append((event.proposed, event.executed))
        elif isinstance(event, RunEnded):
            runs[rid].answer, runs[rid].error = event.response, event.error
    for (rid, turn), changes in edits.items():
        t = runs[rid].turns[turn]
        t.target, t.edited = _corrected(t.reply, changes), True
    for branch in runs.values():
        _mark_choice(branch, runs.get(branch.parent_run or ""))
    return list(runs.values())


def _mark_choice(branch: Conversation, parent: Conversation | None) -> None:
    """The human continued ``parent`` as ``branch``: the parent's reply at the turn the branch asked
    again is set aside for the branch's, and the parent's turns from there on are superseded."""
    at = branch.first_turn - parent.first_turn if parent is not None else -1
    if parent is None or not branch.turns or not 0 <= at < len(parent.turns):
        return
    branch.turns[0].rejected.insert(0, parent.turns[at].reply)
    for turn in parent.turns[at:]:
        turn.superseded_by = turn.superseded_by or branch.run_id


def samples(conversation: Conversation, max_chars: int | None = None) -> Iterator[dict[str, Any]]:
    """One sample per root turn; the history holds the corrected replies of earlier turns."""
    history = [{"role": m["role"], "content": m["content"]} for m in conversation.prefix]
    for i, turn in enumerate(conversation.turns):
        history.append({"role": "user", "content": turn.user})
        target = {"role": "assistant", "content": turn.target}
        messages = [*history, target]
        if max_chars is None or sum(len(m["content"]) for m in messages) <= max_chars:
            yield {
                "messages": messages,
                "run_id": conversation.run_id,
                "turn": conversation.first_turn + i,
                "edited": turn.edited,
                "has_code": bool(code_blocks(turn.target)),
                # Preference data: replies the human set aside for this one (Regenerate).
                **(
                    {"rejected": [{"role": "assistant", "content": r} for r in turn.rejected]}
                    if turn.rejected
                    else {}
                ),
                **({"superseded_by": turn.superseded_by} if turn.superseded_by else {}),
                **(
                    {"branch_of": {"run_id": conversation.parent_run, "step": conversation.branched_at}}
                    if conversation.parent_run
                    else {}
                ),
            }
        history.append(target)


def read_inputs(paths: Iterable[str | Path]) -> list[Event]:
    """Events from JSONL trajectories and notebooks; folders are searched for both."""
    events: list[Event] = []
    for raw in paths:
        path = Path(raw)
        files = sorted([*path.rglob("*.jsonl"), *path.rglob("*.ipynb")]) if path.is_dir() else [path]
        for f in files:
            events.extend(from_notebook(f) if f.suffix == ".ipynb" else load(f))
    return events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlm_kernel.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="trajectory .jsonl files, notebooks, or folders of them")
    parser.add_argument("-o", "--output", default="-", help="where the JSONL samples go (default: stdout)")
    parser.add_argument(
        "--min-turns", type=int, default=2, help="drop runs with fewer root turns (default 2)"
    )
    parser.add_argument("--max-chars", type=int, help="drop samples longer than this many characters")
    parser.add_argument(
        "--scores",
        help="JSON file {run_id: score}; runs scored 0 are dropped "
        "(without it, a run scores 0 when it ended without an answer)",
    )
    parser.add_argument("--children", action="store_true", help="also export child runs (depth > 0)")
    args = parser.parse_args(argv)

    scores = json.loads(Path(args.scores).read_text()) if args.scores else {}
    kept = dropped = written = 0
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    try:
        for conv in conversations(read_inputs(args.inputs)):
            score = scores.get(conv.run_id, 1.0 if conv.succeeded else 0.0)
            if (conv.depth > 0 and not args.children) or score == 0 or conv.length < args.min_turns:
                dropped += 1
                continue
            kept += 1
            for sample in samples(conv, args.max_chars):
                out.write(json.dumps(sample, ensure_ascii=False) + "\n")
                written += 1
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"{written} samples from {kept} runs ({dropped} runs dropped by the filters)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
