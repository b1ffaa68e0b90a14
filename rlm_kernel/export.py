"""``python -m rlm_kernel.export``: turn trajectories (JSONL logs or notebooks) into fine-tuning data.

One sample per root turn, in the chat format most trainers read (``{"messages": [...]}``): the
conversation up to that turn as input, the root's reply as the target (and, where a human had
the root propose a step again, the replies set aside as ``rejected``). Where a human edited a
step before it ran, the target (and the history after it) holds the code that actually ran, so
the data teaches the corrected behaviour. A branch (a rewind, ``rlm_kernel.rewind``) is a
conversation of its own that starts with the turn it asked again; with the run it continues among
the inputs, that run's reply at the turn is the branch's ``rejected``, and that run's samples from
the turn on say which branch the human chose instead (``superseded_by``).

The input may be an evaluation's results folder (``python -m rlm_kernel.eval run --out``): each
rollout's trajectory is read with its score from the folder's rows. Filters follow the RLM paper's
recipe, each counted: runs scored zero and runs of a single turn are dropped, and ``--max-chars``
drops turns longer than a budget (the paper used 100,000 characters for Qwen3-8B). The paper's
repairs of template mistakes (``rlm_kernel.repair``) rewrite the answering turn's target; the
statistics before and after (``rlm_kernel.export_stats``) go to stderr, ``--stats`` and ``--plot``.
Every sample is redacted again (``rlm_kernel.secrets``) with the secrets of the environment the
export runs in, since a run may have printed a key it did not know was one.
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
    AnswerSet,
    Event,
    HumanEdit,
    ProposalRejected,
    RootReply,
    RootRequest,
    RunEnded,
    RunStarted,
    StepStarted,
)
from .export_stats import ExportStats, sample_chars
from .protocol import code_blocks
from .repair import REPAIRS, repair
from .secrets import Redactor, secrets_of
from .trajectory import from_notebook, load

__all__ = ["Turn", "Conversation", "conversations", "samples", "read_inputs", "read_results", "main"]


@dataclass
class Turn:
    user: str
    reply: str
    target: str
    edited: bool = False
    rejected: list[str] = field(default_factory=list)  # replies the human had proposed again
    superseded_by: str | None = None  # the branch a human continued from this turn instead
    repairs: list[str] = field(default_factory=list)  # template mistakes fixed in the target (repair.py)


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
    protocol: str = "both"  # how the run's code could end it: answer, final, both
    answer_source: str | None = None  # the answer_set's: answer, FINAL, FINAL_VAR, final_turn
    steps: dict[int, str] = field(default_factory=dict)  # the code each step ran, by step

    @property
    def code(self) -> list[str]:
        """The code the run's steps ran (a human's edits, and a branch's replayed steps, included)."""
        return list(self.steps.values())

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
                protocol=str(event.settings.get("protocol") or "both"),
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
        elif isinstance(event, StepStarted):
            runs[rid].steps[event.step] = event.code
            if event.author == "root" and not event.replayed:
                step_turn[(rid, event.step)] = len(runs[rid].turns) - 1
        elif isinstance(event, HumanEdit):
            runs[rid].steps[event.step] = event.executed
            if (rid, event.step) in step_turn:
                edits.setdefault((rid, step_turn[(rid, event.step)]), []).append(
                    (event.proposed, event.executed)
                )
        elif isinstance(event, AnswerSet):
            runs[rid].answer_source = event.source
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
    if parent is None or not branch.turns:
        return
    at = branch.first_turn - parent.first_turn
    if not 0 <= at < len(parent.turns):
        return
    branch.turns[0].rejected.insert(0, parent.turns[at].reply)
    for turn in parent.turns[at:]:
        turn.superseded_by = turn.superseded_by or branch.run_id
    # The branch's history is the parent's conversation as the root saw it: the human's edits of
    # the parent's steps are the replies there too, as in the parent's own samples.
    for i, turn in enumerate(parent.turns[:at]):
        k = len(parent.prefix) + 2 * i + 1
        if k < len(branch.prefix) and branch.prefix[k].get("content") == turn.reply:
            branch.prefix[k] = {**branch.prefix[k], "content": turn.target}


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
                **({"repaired": list(turn.repairs)} if turn.repairs else {}),
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


def is_results_folder(path: Path) -> bool:
    """An evaluation's results folder (or its ``results.jsonl``), as ``rlm_kernel.eval`` writes it."""
    return (path / "results.jsonl").is_file() if path.is_dir() else path.name == "results.jsonl"


def _results_folders(path: Path) -> list[Path]:
    return sorted(f.parent for f in path.rglob("results.jsonl")) if path.is_dir() else []


def _inputs_in(path: Path) -> list[Path]:
    return sorted([*path.rglob("*.jsonl"), *path.rglob("*.ipynb")]) if path.is_dir() else [path]


def read_inputs(paths: Iterable[str | Path]) -> list[Event]:
    """Events from JSONL trajectories and notebooks; folders are searched for both."""
    events: list[Event] = []
    for raw in paths:
        for f in _inputs_in(Path(raw)):
            events.extend(from_notebook(f) if f.suffix == ".ipynb" else load(f))
    return events


def _trajectory_of(folder: Path, recorded: str) -> Path | None:
    """A row's trajectory: where the sweep wrote it, else by name in the folder (a folder moved)."""
    for candidate in (Path(recorded), folder / "trajectories" / Path(recorded).name):
        if candidate.is_file():
            return candidate
    return None


def read_results(path: str | Path) -> tuple[list[Event], dict[str, float], list[str]]:
    """Events of each scored rollout in a results folder, each run's score (a rollout's children
    share its score), and the trajectories the rows name that are not there."""
    from .eval.results import ResultsDir

    path = Path(path)
    folder = path.parent if path.suffix == ".jsonl" else path
    events: list[Event] = []
    scores: dict[str, float] = {}
    missing: list[str] = []
    for row in ResultsDir(folder).rows():
        if row.trajectory is None or row.crashed:
            continue  # the plain model's rollouts have no trajectory; a crash is the harness's fault
        found = _trajectory_of(folder, row.trajectory)
        if found is None:
            missing.append(row.trajectory)
            continue
        rollout = load(found)
        scores.update({e.run_id: row.score for e in rollout if isinstance(e, RunStarted)})
        events.extend(rollout)
    return events, scores, missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlm_kernel.export", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "inputs",
        nargs="+",
        help="trajectory .jsonl files, notebooks, folders of them, or evaluation results folders",
    )
    parser.add_argument("-o", "--output", default="-", help="where the JSONL samples go (default: stdout)")
    parser.add_argument(
        "--min-turns", type=int, default=2, help="drop runs with fewer root turns (default 2)"
    )
    parser.add_argument(
        "--max-chars",
        type=int,
        help="drop turns whose sample is longer than this many characters (the paper: 100000 for Qwen3-8B)",
    )
    parser.add_argument(
        "--scores",
        help="JSON file {run_id: score} for trajectories outside a results folder; runs scored 0 are "
        "dropped (without a score, a run scores 0 when it ended without an answer)",
    )
    parser.add_argument(
        "--no-repair",
        action="append",
        default=[],
        choices=[*REPAIRS, "all"],
        metavar="KIND",
        help=f"leave this template mistake as it is: {', '.join(REPAIRS)} or all (repeatable)",
    )
    parser.add_argument("--stats", help="also write the statistics as JSON to this file")
    parser.add_argument(
        "--plot", help="draw turns per trajectory and characters per turn, before and after (PNG; matplotlib)"
    )
    parser.add_argument("--children", action="store_true", help="also export child runs (depth > 0)")
    args = parser.parse_args(argv)

    scores: dict[str, float] = {}
    events: list[Event] = []
    stats = ExportStats(min_turns=args.min_turns, max_chars=args.max_chars)
    for path in (Path(raw) for raw in args.inputs):
        folders = [path] if is_results_folder(path) else _results_folders(path)
        for folder in folders:
            found, rollout_scores, missing = read_results(folder)
            events.extend(found)
            scores.update(rollout_scores)
            stats.unscored.extend(missing)
        if path not in folders:  # trajectories and notebooks outside the results folders in it
            events.extend(
                read_inputs(f for f in _inputs_in(path) if not any(d in f.parents for d in folders))
            )
    if args.scores:
        scores.update(json.loads(Path(args.scores).read_text()))
    enabled = set() if "all" in args.no_repair else set(REPAIRS) - set(args.no_repair)
    # Redacted again, with this environment's secrets: a run may have printed a key it did not know.
    redactor = Redactor(secrets_of())

    written = 0
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    try:
        for conv in conversations(events):
            if conv.depth > 0 and not args.children:
                stats.children += 1
                continue
            repair(conv, enabled)
            every = list(samples(conv))
            stats.before.add(every)
            score = scores.get(conv.run_id, 1.0 if conv.succeeded else 0.0)
            if score == 0:
                stats.scored_zero += 1
                continue
            if conv.length < args.min_turns:
                stats.too_few_turns += 1
                continue
            kept = [s for s in every if args.max_chars is None or sample_chars(s) <= args.max_chars]
            stats.too_long += len(conv.turns) - len(kept)
            stats.after.add(kept)
            for sample in kept:
                out.write(json.dumps(redactor.value(sample), ensure_ascii=False) + "\n")
                written += 1
    finally:
        if out is not sys.stdout:
            out.close()
    print(stats.table(), file=sys.stderr)
    for path in stats.unscored:
        print(f"warning: a row's trajectory is missing, not exported: {path}", file=sys.stderr)
    print(
        f"{written} samples from {stats.after.trajectories} runs "
        f"({stats.scored_zero + stats.too_few_turns} runs dropped by the filters)",
        file=sys.stderr,
    )
    if args.stats:
        stats.write(args.stats)
    if args.plot and stats.plot(args.plot) is None:
        print("warning: --plot needs matplotlib (pip install matplotlib); no plot drawn", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
