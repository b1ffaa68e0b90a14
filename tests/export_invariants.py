"""What an export of training data must never do, checked from the recorded events alone.

``check_samples`` holds written samples to the trajectories they came from: every target is a
reply the run's root wrote (or that reply with a human's edit in it), its code ran, no ``rejected``
is the target's text again or another ``rejected`` of the sample, and each ``rejected`` is a reply a
human turned down. Every reply is written with whole code blocks (none left open, as a Markdown
reader sees them); a reply is the recorded one when it is that reply or that reply with its last
block closed. With the export's ``--stats``, "after" must count exactly the samples written, and
its rejected replies. ``check_files`` does all of
that for every trajectory in a folder, through the API and through the CLI with no run filtered
out. The tests of ``rlm_kernel.export`` call it on each trajectory they produce.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rlm_kernel.events import (
    Event,
    HumanEdit,
    ProposalRejected,
    RootReply,
    RunStarted,
    StepFinished,
    StepStarted,
)
from rlm_kernel.export import conversations, read_inputs, samples
from rlm_kernel.export import main as export_main
from rlm_kernel.export_stats import sample_chars
from rlm_kernel.protocol import code_blocks

__all__ = ["plain", "open_fence", "whole", "check_samples", "check_files", "trajectory_files"]


def plain(text: str) -> str:
    """Text as a reader compares it: no trailing spaces, no blank lines at either end."""
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip()


def open_fence(text: str) -> bool:
    """Whether a Markdown reader sees ``text`` end inside a fenced block (a bare fence closes one)."""
    inside = False
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.lstrip().startswith("```"):
            inside = not inside or bool(line.lstrip()[3:].strip())
    return inside


def whole(text: str) -> str:
    """A reply as a reader compares it: plain, with a block left open at its end closed."""
    return plain(text) + ("\n```" if open_fence(text) else "")


class _Run:
    """What one run's events say: code that ran, proposals, replies, what was turned down."""

    def __init__(self, events: list[Event]) -> None:
        self.started = next(e for e in events if isinstance(e, RunStarted))
        self.replies = {whole(e.text) for e in events if isinstance(e, RootReply)}
        self.set_aside = {whole(e.reply) for e in events if isinstance(e, ProposalRejected)}
        self.edited = {e.step: e for e in events if isinstance(e, HumanEdit)}
        self.ran: set[str] = set()  # code of each step that finished, as it ran
        self.proposed: set[str] = set()  # code of each root step proposed, run or not
        self.human: set[str] = set()  # code of the human's own cells
        latest: dict[int, StepStarted] = {}
        for e in events:
            if isinstance(e, StepStarted):
                latest[e.step] = e
                (self.proposed if e.author == "root" else self.human).add(plain(e.code))
            elif isinstance(e, StepFinished) and e.step in latest:
                edit = self.edited.get(e.step)
                ran = edit.executed if edit and latest[e.step].author == "root" else latest[e.step].code
                self.ran.add(plain(ran))
        self.edited_replies = {
            r for r in self.replies if any(plain(e.proposed) in plain(r) for e in self.edited.values())
        }


def _by_run(events: Iterable[Event]) -> dict[str, _Run]:
    grouped: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        grouped[e.run_id].append(e)
    return {
        rid: _Run(found) for rid, found in grouped.items() if any(isinstance(e, RunStarted) for e in found)
    }


def check_samples(
    events: Iterable[Event],
    written: list[dict[str, Any]],
    *,
    min_turns: int | None = None,
    figures: dict[str, Any] | None = None,
) -> None:
    runs = _by_run(events)
    for sample in written:
        run = runs[sample["run_id"]]
        where = f"run {sample['run_id']} turn {sample['turn']}"
        messages = sample["messages"]
        assert messages[-1]["role"] == "assistant", where
        target = messages[-1]["content"]
        for m in [*messages, *sample.get("rejected", [])]:
            assert m["role"] != "assistant" or not open_fence(m["content"]), f"{where}: a block left open"
        # A reply the root wrote; edited or repaired, that reply with the change in it.
        assert whole(target) in run.replies or sample["edited"] or sample.get("repaired"), (
            f"{where}: not a reply"
        )
        # Its code ran (a block after a failing one is skipped by the engine: never proposed).
        for block in code_blocks(target):
            code = plain(block)
            assert code in run.ran or code not in run.proposed, f"{where}: a target whose code never ran"
            assert code not in run.human or code in run.proposed, f"{where}: a human's cell as a target"
        seen = {whole(target)}
        for other in sample.get("rejected", []):
            text = whole(other["content"])
            assert text != whole(target), f"{where}: rejected is the target"
            assert text not in seen, f"{where}: a rejected reply twice"
            seen.add(text)
            parent = runs.get(run.started.parent_run or "")
            turned_down = (
                text in run.set_aside
                or text in run.edited_replies
                or (
                    parent is not None
                    and (text in parent.replies or all(plain(b) in parent.ran for b in code_blocks(text)))
                )
            )
            assert turned_down, f"{where}: a rejected reply no human turned down"
    per_run = Counter(s["run_id"] for s in written)
    if min_turns is not None:
        assert all(n >= min_turns for n in per_run.values()), per_run
    if figures is not None:
        after = figures["after"]
        chars = [sample_chars(s) for s in written]
        assert after["trajectories"] == len(per_run) and after["turns"] == len(written)
        assert after["characters"] == sum(chars)
        assert after["rejected"] == sum(len(s.get("rejected", ())) for s in written)
        assert after["trajectories_by_turns"] == {
            str(n): k for n, k in sorted(Counter(per_run.values()).items())
        }
        if written:
            assert after["turns_per_trajectory"]["min"] == min(per_run.values())
            assert after["chars_per_turn"]["median"] == statistics.median(chars)
            assert after["chars_per_turn"]["max"] == max(chars)


def trajectory_files(root: Path) -> list[Path]:
    """Trajectories under ``root``: JSONL files of events, and notebooks."""
    found = list(root.rglob("*.ipynb"))
    for path in root.rglob("*.jsonl"):
        with path.open(encoding="utf-8") as f:
            first = f.readline()
        try:
            kind = json.loads(first).get("kind") if first.strip() else None
        except (json.JSONDecodeError, AttributeError):
            kind = None
        if kind == "run_started":
            found.append(path)
    return sorted(found)


def check_files(paths: list[Path], scratch: Path) -> int:
    """Every sample of these trajectories, through the API and the CLI (no run filtered out,
    children included), checked; the number of samples the CLI wrote."""
    if not paths:
        return 0
    events = read_inputs(paths)
    check_samples(events, [s for c in conversations(events) for s in samples(c)])
    scratch.mkdir(parents=True, exist_ok=True)
    scores = scratch / "all-scored.json"
    scores.write_text(json.dumps({e.run_id: 1 for e in events if isinstance(e, RunStarted)}))
    out, stats = scratch / "all.jsonl", scratch / "all-stats.json"
    args = [*map(str, paths), "-o", str(out), "--stats", str(stats), "--scores", str(scores)]
    assert export_main([*args, "--min-turns", "0", "--children"]) == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    check_samples(events, written, figures=json.loads(stats.read_text()))
    return len(written)
