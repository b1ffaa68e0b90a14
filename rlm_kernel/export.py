"""``python -m rlm_kernel.export``: turn trajectories (JSONL logs or notebooks) into fine-tuning data.

One sample per root turn, in the chat format most trainers read (``{"messages": [...]}``): the
conversation up to that turn as input, the root's reply as the target. The data teaches only
what ran:

- A target is a reply of the root whose code, if any, ran. Where a human edited a step before it
  ran, the target (and the history after it) holds the code that actually ran. A proposal that
  never ran (set aside by Regenerate, or still waiting when the run ended) is never a target.
- Every reply is written with whole code blocks: the small profile's stop sequence (a line of
  three backticks) ends a reply at its first block's closing fence and drops that fence, so a
  block left open at the end of a reply is closed (``whole_code_blocks``). Only the export changes, never the
  trajectory, and never the code: the blocks are the ones the engine ran.
- ``rejected`` holds replies the human turned down for the target: proposals set aside by
  Regenerate, the proposal as it was before the human's edit, and the reply a branch replaced.
  Replies are compared whole, without line endings, trailing spaces, blank lines at either end or
  spaces around a fence: each distinct one is kept once, none is the target's text again; the
  others are left out (and counted), the sample kept.
- A cell the human ran during the run is part of the conversation the root saw (a user turn),
  never a target.

A branch (a rewind, ``rlm_kernel.rewind``) is a conversation of its own that starts with the turn
it asked again; with the run it continues among the inputs, that run's reply at the turn is among
the branch's ``rejected``, and that run's samples from the turn on say which branch the human chose
instead (``superseded_by``). A run read twice (its JSONL log and its notebook) is exported once.

The input may be an evaluation's results folder (``python -m rlm_kernel.eval run --out``): each
rollout's trajectory is read with its score from the folder's rows. Filters follow the RLM paper's
recipe, each counted, and are applied last, to the samples as they are written (repaired and
redacted): runs scored zero are dropped, ``--max-chars`` drops turns longer than a budget (the
paper used 100,000 characters for Qwen3-8B), then runs left with fewer than ``--min-turns``
samples are dropped. The paper's repairs of template mistakes (``rlm_kernel.repair``) rewrite the
answering turn's target; the statistics before and after (``rlm_kernel.export_stats``) go to
stderr, ``--stats`` and ``--plot``, and "after" counts exactly the samples written. Every sample is
redacted again (``rlm_kernel.secrets``) with the secrets of the environment the export runs in,
since a run may have printed a key it did not know was one.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .events import (
    AnswerSet,
    Compacted,
    Event,
    HumanEdit,
    ProposalRejected,
    RootReply,
    RootRequest,
    RunEnded,
    RunStarted,
    StepFinished,
    StepStarted,
)
from .export_stats import ExportStats, sample_chars
from .protocol import (
    _FENCE,
    _FENCE_LINE,
    _OPEN,
    code_blocks,
    whole_code_blocks,
)  # the engine's own patterns: its blocks, found alike
from .repair import REPAIRS, repair
from .secrets import Redactor, secrets_of
from .trajectory import from_notebook, load, strict_json

__all__ = [
    "Turn",
    "Conversation",
    "conversations",
    "samples",
    "whole_code_blocks",
    "read_inputs",
    "read_results",
    "main",
]


@dataclass
class Turn:
    user: str
    reply: str
    target: str
    number: int = 0  # the root turn (a branch's go on from the run it continues)
    edited: bool = False
    # Every step the reply proposed ran. False: one still waited when the run ended (or its edit
    # could not be put back in the reply); the turn is history, never a target.
    ran: bool = True
    rejected: list[str] = field(default_factory=list)  # replies the human turned down for this one
    superseded_by: str | None = None  # the branch a human continued from this turn instead
    repairs: list[str] = field(default_factory=list)  # template mistakes fixed in the target (repair.py)
    # The conversation before this turn's request, where a compaction replaced the older turns by notes.
    history: list[dict[str, Any]] | None = None


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
    started_at: float = 0.0  # the run_started's time: the first branch from a turn is the one chosen

    @property
    def code(self) -> list[str]:
        """The code the run's steps ran (a human's edits and cells, and a branch's replayed steps,
        included; a proposal that never ran is not)."""
        return list(self.steps.values())

    @property
    def succeeded(self) -> bool:
        return self.answer is not None and self.error is None

    @property
    def never_ran(self) -> int:
        """Turns whose proposal never ran: history at most, never a sample."""
        return sum(not t.ran for t in self.turns)


def _normal(text: str) -> str:
    """A reply as compared for sameness: whole code blocks; line endings, trailing spaces, blank
    lines at either end and spaces around a fence do not count. A preference pair of one text
    teaches nothing but noise."""
    lines = whole_code_blocks(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.strip() if _FENCE_LINE.match(line) else line.rstrip() for line in lines).strip()


def _alternatives(rejected: Iterable[str], target: str) -> tuple[list[str], Counter[str]]:
    """The replies turned down for ``target``, whole, each once, none with the target's text; and
    how many were left out, by why (``rejected_same_as_target``, ``rejected_repeated``)."""
    same, seen, kept = _normal(target), set(), []
    left_out: Counter[str] = Counter()
    for reply in rejected:
        if (key := _normal(reply)) == same:
            left_out["rejected_same_as_target"] += 1
        elif key in seen:
            left_out["rejected_repeated"] += 1
        else:
            seen.add(key)
            kept.append(whole_code_blocks(reply))
    return kept, left_out


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Where the code of each runnable block is, as ``protocol.code_blocks`` finds them."""
    spans, end = [], 0
    for m in _FENCE.finditer(text):
        spans.append(m.span(2))
        end = m.end()
    if m := _OPEN.search(text, end):  # a last block left open
        spans.append(m.span(2))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def _corrected(reply: str, edits: list[tuple[int, str, str]]) -> str | None:
    """The reply with each edited block (its index among the reply's blocks, the code proposed,
    the code that ran) holding the code that ran; None if an edit's block is not in the reply."""
    for index, proposed, executed in sorted(edits, reverse=True):  # the last first: earlier spans hold
        old = proposed.rstrip()
        spans = _code_spans(reply)
        if index < len(spans) and reply[slice(*spans[index])].rstrip() == old:
            start, end = spans[index]
            body = reply[start:end]
            reply = reply[:start] + executed.rstrip() + body[len(body.rstrip()) :] + reply[end:]
        elif old and old in reply:  # a block the parser saw otherwise: its first occurrence
            reply = reply.replace(old, executed.rstrip(), 1)
        else:
            return None
    return reply


def _copies(events: Iterable[Event]) -> dict[str, list[Event]]:
    """Each run's events from its ``run_started`` on. A run read twice (its JSONL log and the
    notebook that keeps it) is taken once: the longer copy."""
    copies: dict[str, list[list[Event]]] = {}
    for event in events:
        if isinstance(event, RunStarted):
            copies.setdefault(event.run_id, []).append([event])
        elif event.run_id in copies:
            copies[event.run_id][-1].append(event)
    return {rid: max(found, key=len) for rid, found in copies.items()}


class _Fold:
    """One run's conversation with its root LM, folded from its events in order: a method per kind."""

    def __init__(self, started: RunStarted) -> None:
        self.started = started
        self.conv = Conversation(
            started.run_id,
            started.depth,
            [dict(m) for m in started.prompt],
            parent_run=started.parent_run,
            branched_at=started.branched_at,
            protocol=str(started.settings.get("protocol") or "both"),
            started_at=started.ts,
        )
        self.asked: str | None = None  # the request the next reply answers
        self.set_aside: list[str] = []  # replies Regenerate set aside, for the turn asked again
        self.latest: dict[int, StepStarted] = {}  # each step number's latest start: the one a finish ends
        self.proposer: dict[int, Turn] = {}  # a root step that waits, and the turn whose reply proposed it
        self.proposed: dict[int, list[int]] = {}  # by id(turn): the root steps its reply proposed, in order
        self.edits: dict[int, list[tuple[int, str, str]]] = {}  # by id(turn): (block, proposed, executed)
        self.executed: dict[int, str] = {}  # a human's edit of a step, until the step finishes
        self.compacted: list[dict[str, Any]] | None = None  # the next turn's history, after a compaction

    def root_request(self, event: RootRequest) -> None:
        conv = self.conv
        if self.asked is None and not conv.turns:  # the run's first request
            conv.first_turn = event.turn
        self.asked = event.content
        # The root is asked again only once its reply's steps are done: a trajectory written
        # without their step_finished (by hand, or by an older version) still shows they ran.
        for step in self.proposer:
            conv.steps.setdefault(step, self.executed.pop(step, self.latest[step].code))
        self.proposer = {}

    def root_reply(self, event: RootReply) -> None:
        turn = Turn(self.asked or "", event.text, event.text, number=event.turn, rejected=self.set_aside)
        turn.history, self.compacted = self.compacted, None
        self.conv.turns.append(turn)
        self.asked, self.set_aside = None, []

    def compacted_(self, event: Compacted) -> None:
        """The prefix up to the first request, then the notes on."""
        fixed = self.started.fixed or len(self.started.prompt) + 1
        self.compacted = [*self.conv.prefix[: fixed - 1], *(dict(m) for m in event.messages)]

    def proposal_rejected(self, event: ProposalRejected) -> None:
        if not self.conv.turns:
            return
        # The turn is asked again, with what came while its step waited: the next reply answers it.
        # Rewound, the turn before is asked again (its reply ran and failed: history no more).
        gone = self.conv.turns[-2 if event.rewound and len(self.conv.turns) > 1 else -1 :]
        del self.conv.turns[-len(gone) :]
        turn = gone[0]
        self.compacted = turn.history  # the request asked again follows the same history
        self.asked = f"{turn.user}\n\n{event.added}" if event.added else turn.user
        self.set_aside = [*(r for t in gone for r in t.rejected), gone[-1].reply]
        for t in gone:
            self.proposer = {step: p for step, p in self.proposer.items() if p is not t}
            self.proposed.pop(id(t), None)  # its id may be a later turn's once it is gone

    def step_started(self, event: StepStarted) -> None:
        self.latest[event.step] = event
        turns = self.conv.turns
        if event.author == "root" and not event.replayed and turns:
            self.proposer[event.step] = turns[-1]
            self.proposed.setdefault(id(turns[-1]), []).append(event.step)

    def human_edit(self, event: HumanEdit) -> None:
        self.executed[event.step] = event.executed
        if (owner := self.proposer.get(event.step)) is not None:
            block = self.proposed[id(owner)].index(event.step)
            self.edits.setdefault(id(owner), []).append((block, event.proposed, event.executed))

    def step_finished(self, event: StepFinished) -> None:
        start = self.latest.get(event.step)
        if start is not None:  # the code that ran: a human's edit of the proposal, or the proposal
            self.conv.steps[event.step] = self.executed.pop(event.step, start.code)
            if start.author == "root" and not start.replayed:
                self.proposer.pop(event.step, None)

    def answer_set(self, event: AnswerSet) -> None:
        self.conv.answer_source = event.source

    def run_ended(self, event: RunEnded) -> None:
        self.conv.answer, self.conv.error = event.response, event.error

    def end(self) -> Conversation:
        """Mark the turns whose code never ran, and those a human corrected."""
        waiting = {id(t) for t in self.proposer.values()}  # proposed, never run: the run ended first
        for turn in self.conv.turns:
            if id(turn) in waiting:
                turn.ran = False
            elif changes := self.edits.get(id(turn)):
                corrected = _corrected(turn.reply, changes)
                if corrected is None:
                    turn.ran = False  # the code that ran cannot be shown as this reply's
                else:
                    # The proposal as the root wrote it is the one the human turned down.
                    turn.target, turn.edited = corrected, True
                    turn.rejected.append(turn.reply)
        return self.conv


_FOLDS: dict[type, Callable[[_Fold, Any], None]] = {
    RootRequest: _Fold.root_request,
    RootReply: _Fold.root_reply,
    Compacted: _Fold.compacted_,
    ProposalRejected: _Fold.proposal_rejected,
    StepStarted: _Fold.step_started,
    HumanEdit: _Fold.human_edit,
    StepFinished: _Fold.step_finished,
    AnswerSet: _Fold.answer_set,
    RunEnded: _Fold.run_ended,
}


def _conversation(events: list[Event]) -> Conversation:
    """One run's conversation with its root LM, from its events in order."""
    started = events[0]
    assert isinstance(started, RunStarted)
    fold = _Fold(started)
    for event in events[1:]:
        if (method := _FOLDS.get(type(event))) is not None:
            method(fold, event)
    return fold.end()


def conversations(events: Iterable[Event]) -> list[Conversation]:
    """Each run's conversation with its root LM (children are runs of their own)."""
    runs = {rid: _conversation(found) for rid, found in _copies(events).items()}
    for branch in sorted(runs.values(), key=lambda c: c.started_at):  # files come in any order
        _mark_choice(branch, runs.get(branch.parent_run or ""))
    return list(runs.values())


def _mark_choice(branch: Conversation, parent: Conversation | None) -> None:
    """The human continued ``parent`` as ``branch``: the parent's reply at the turn the branch asked
    again is turned down for the branch's, and the parent's turns from there on are superseded."""
    if parent is None or not branch.turns:
        return
    at = next((i for i, t in enumerate(parent.turns) if t.number == branch.first_turn), None)
    if at is None:
        return
    replaced = parent.turns[at]  # as it ran (a human's edit in it), and as the root wrote it
    branch.turns[0].rejected[:0] = [replaced.target, *([replaced.reply] if replaced.edited else [])]
    for turn in parent.turns[at:]:
        turn.superseded_by = turn.superseded_by or branch.run_id
    # The branch's history is the parent's conversation as the root saw it: the human's edits of
    # the parent's steps are the replies there too, as in the parent's own samples.
    for i, turn in enumerate(parent.turns[:at]):
        k = len(parent.prefix) + 2 * i + 1
        if k < len(branch.prefix) and branch.prefix[k].get("content") == turn.reply:
            branch.prefix[k] = {**branch.prefix[k], "content": turn.target}


def _as_is(text: str) -> str:
    return text


def samples(
    conversation: Conversation,
    max_chars: int | None = None,
    *,
    redact: Callable[[str], str] = _as_is,
    left_out: Counter[str] | None = None,
) -> Iterator[dict[str, Any]]:
    """One sample per root turn that ran; the history holds the corrected replies of earlier turns.

    Every text passes ``redact`` once, before replies are compared: two replies that differ only in
    a secret are one. ``left_out`` adds up the rejected replies not written, by why."""

    def message(role: str, content: str) -> dict[str, str]:
        content = redact(content)
        return {"role": role, "content": whole_code_blocks(content) if role == "assistant" else content}

    history = [message(m["role"], m["content"]) for m in conversation.prefix]
    for turn in conversation.turns:
        if turn.history is not None:  # the root saw its notes in place of the turns before
            history = [message(m["role"], m["content"]) for m in turn.history]
        history.append(message("user", turn.user))
        target = message("assistant", turn.target)
        messages = [*history, target]
        history.append(target)
        if not turn.ran:
            continue
        if max_chars is not None and sum(len(m["content"]) for m in messages) > max_chars:
            continue
        rejected, dropped = _alternatives(map(redact, turn.rejected), target["content"])
        if left_out is not None:
            left_out.update(dropped)
        yield {
            "messages": messages,
            "run_id": conversation.run_id,
            "turn": turn.number,
            "edited": turn.edited,
            "has_code": bool(code_blocks(target["content"])),
            **({"repaired": list(turn.repairs)} if turn.repairs else {}),
            # Preference data: replies the human turned down for this one.
            **({"rejected": [{"role": "assistant", "content": r} for r in rejected]} if rejected else {}),
            **({"superseded_by": turn.superseded_by} if turn.superseded_by else {}),
            **(
                {"branch_of": {"run_id": conversation.parent_run, "step": conversation.branched_at}}
                if conversation.parent_run
                else {}
            ),
        }


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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rlm_kernel.export", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "inputs",
        nargs="+",
        help="trajectory .jsonl files, notebooks, folders of them, or evaluation results folders",
    )
    parser.add_argument("-o", "--output", default="-", help="where the JSONL samples go (default: stdout)")
    parser.add_argument(
        "--min-turns",
        type=int,
        default=2,
        help="drop runs left with fewer samples (root turns that ran), after --max-chars (default 2)",
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
    return parser


def _gather(inputs: list[str], stats: ExportStats) -> tuple[list[Event], dict[str, float]]:
    """Every run's events from the inputs, and the scores their results folders give."""
    scores: dict[str, float] = {}
    events: list[Event] = []
    for path in (Path(raw) for raw in inputs):
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
    return events, scores


def _kept(
    conv: Conversation,
    args: argparse.Namespace,
    scores: dict[str, float],
    stats: ExportStats,
    redactor: Redactor,
) -> list[dict[str, Any]]:
    """The run's samples as they will be written (repaired, redacted, whole, each rejected reply once
    and none of the target's text); the filters come last, on these, so what they promise holds."""
    left_out: Counter[str] = Counter()
    every = list(samples(conv, redact=redactor.text, left_out=left_out))
    stats.never_ran += conv.never_ran
    stats.rejected_same_as_target += left_out["rejected_same_as_target"]
    stats.rejected_repeated += left_out["rejected_repeated"]
    stats.before.add(every)
    if scores.get(conv.run_id, 1.0 if conv.succeeded else 0.0) == 0:
        stats.scored_zero += 1
        return []
    kept = [s for s in every if args.max_chars is None or sample_chars(s) <= args.max_chars]
    stats.too_long += len(every) - len(kept)
    if len(kept) < args.min_turns:
        stats.too_few_turns += 1
        return []
    stats.after.add(kept)
    return kept


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    stats = ExportStats(min_turns=args.min_turns, max_chars=args.max_chars)
    events, scores = _gather(args.inputs, stats)
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
            kept = _kept(conv, args, scores, stats, redactor)
            for sample in kept:
                out.write(strict_json(sample, ensure_ascii=False) + "\n")
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
