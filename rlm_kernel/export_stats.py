"""What an export kept: trajectories, turns and characters before and after the paper's filters.

The RLM paper reports its fine-tuning data this way (Figure 5: turns per trajectory and characters
per turn, before and after filtering), so a user can see what the filters and repairs did to their
own runs before training on them. A turn's characters are its sample's: the conversation up to and
including the turn, which is what ``--max-chars`` caps. "Before" is every sample the runs give
(repaired, redacted); "after" is exactly the samples written, so its turns per trajectory never go
below ``--min-turns``. The filters run in this order, each counting what it dropped: runs scored 0,
turns over ``--max-chars``, runs left with fewer than ``--min-turns`` turns.

Each count says what it counts, and counts each thing once: "rejected replies" are the distinct
ones in the samples (as written: whole, each once per sample); what was left out before the
filters is counted by why, a rejected reply of its target's text apart from one that repeats
another rejected reply of the same sample.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .repair import REPAIRS

__all__ = ["Side", "ExportStats", "sample_chars"]


def sample_chars(sample: Mapping[str, Any]) -> int:
    return sum(len(m["content"]) for m in sample["messages"])


@dataclass
class Side:
    """One column of the table: the runs before filtering, or the samples written."""

    trajectories: int = 0
    turns_per_trajectory: list[int] = field(default_factory=list)
    chars_per_turn: list[int] = field(default_factory=list)
    repairs: Counter[str] = field(default_factory=Counter)
    rejected: int = 0  # rejected replies in the samples (distinct within each one)

    def add(self, samples: Iterable[Mapping[str, Any]]) -> None:
        """One trajectory's samples (none: the trajectory is not counted)."""
        rows = list(samples)
        if not rows:
            return
        self.trajectories += 1
        self.turns_per_trajectory.append(len(rows))
        for sample in rows:
            self.chars_per_turn.append(sample_chars(sample))
            self.repairs.update(sample.get("repaired", ()))
            self.rejected += len(sample.get("rejected", ()))

    @property
    def turns(self) -> int:
        return len(self.chars_per_turn)

    def to_dict(self) -> dict[str, Any]:
        return {
            "trajectories": self.trajectories,
            "turns": self.turns,
            "characters": sum(self.chars_per_turn),
            "turns_per_trajectory": _summary(self.turns_per_trajectory),
            # The plot's left histogram: how many trajectories have each number of turns.
            "trajectories_by_turns": {
                str(n): k for n, k in sorted(Counter(self.turns_per_trajectory).items())
            },
            "chars_per_turn": _summary(self.chars_per_turn),
            "repairs": {kind: self.repairs.get(kind, 0) for kind in REPAIRS},
            "rejected": self.rejected,
        }


def _summary(values: list[int]) -> dict[str, float]:
    if not values:
        return {"min": 0, "median": 0, "mean": 0, "max": 0}
    return {
        "min": min(values),
        "median": statistics.median(values),
        "mean": round(statistics.fmean(values), 1),
        "max": max(values),
    }


@dataclass
class ExportStats:
    """Before and after the filters, and what each filter dropped."""

    min_turns: int = 2
    max_chars: int | None = None
    before: Side = field(default_factory=Side)
    after: Side = field(default_factory=Side)
    scored_zero: int = 0  # runs
    too_few_turns: int = 0  # runs left with fewer samples than min_turns (after too_long)
    too_long: int = 0  # turns
    children: int = 0  # child runs, not exported without --children
    # Turns whose proposal never ran: still waiting when the run ended, or edited in a way that
    # cannot be put back in the reply. No sample. (A proposal Regenerate set aside is not a turn:
    # it is a rejected reply of the turn asked again.)
    never_ran: int = 0
    rejected_same_as_target: int = 0  # rejected replies of their target's text, compared whole: not written
    rejected_repeated: int = 0  # rejected replies repeating an earlier one of the same sample: not written
    unscored: list[str] = field(default_factory=list)  # rollouts whose trajectory was not found

    def to_dict(self) -> dict[str, Any]:
        return {
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "dropped": {
                "scored_zero_runs": self.scored_zero,
                "too_few_turns_runs": self.too_few_turns,
                "over_max_chars_turns": self.too_long,
            },
            "left_out": {
                "never_ran_turns": self.never_ran,
                "rejected_same_as_target": self.rejected_same_as_target,
                "rejected_repeated": self.rejected_repeated,
            },
            "min_turns": self.min_turns,
            "max_chars": self.max_chars,
            "child_runs_not_exported": self.children,
            "missing_trajectories": self.unscored,
        }

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return path

    def table(self) -> str:
        """A Markdown table, as printed to stderr."""
        b, a = self.before.to_dict(), self.after.to_dict()

        def spread(side: dict[str, Any], key: str) -> str:
            return f"{round(side[key]['median']):,} / {side[key]['max']:,}"

        rows = [
            ("trajectories", f"{b['trajectories']:,}", f"{a['trajectories']:,}"),
            ("turns (samples)", f"{b['turns']:,}", f"{a['turns']:,}"),
            (
                "turns per trajectory, median / max",
                spread(b, "turns_per_trajectory"),
                spread(a, "turns_per_trajectory"),
            ),
            ("characters, all samples", f"{b['characters']:,}", f"{a['characters']:,}"),
            ("characters per turn, median / max", spread(b, "chars_per_turn"), spread(a, "chars_per_turn")),
            *(
                (f"repaired: {kind}", f"{b['repairs'][kind]:,}", f"{a['repairs'][kind]:,}")
                for kind in REPAIRS
            ),
            ("rejected replies", f"{b['rejected']:,}", f"{a['rejected']:,}"),
            ("dropped: runs scored 0", "", f"{self.scored_zero:,}"),
        ]
        if self.max_chars is not None:
            rows.append((f"dropped: turns over {self.max_chars:,} characters", "", f"{self.too_long:,}"))
        rows.append((f"dropped: runs of fewer than {self.min_turns} turns", "", f"{self.too_few_turns:,}"))
        if self.never_ran:
            rows.append(("left out: turns that never ran", f"{self.never_ran:,}", ""))
        if self.rejected_same_as_target:
            rows.append(("left out: rejected = target", f"{self.rejected_same_as_target:,}", ""))
        if self.rejected_repeated:
            rows.append(("left out: rejected repeated", f"{self.rejected_repeated:,}", ""))
        widths = [max(len(r[i]) for r in [("export", "before", "after"), *rows]) for i in range(3)]
        lines = [
            f"| {'export':<{widths[0]}} | {'before':>{widths[1]}} | {'after':>{widths[2]}} |",
            f"|{'-' * (widths[0] + 2)}|{'-' * (widths[1] + 1)}:|{'-' * (widths[2] + 1)}:|",
        ]
        lines += [f"| {n:<{widths[0]}} | {x:>{widths[1]}} | {y:>{widths[2]}} |" for n, x, y in rows]
        if self.children:
            lines.append(f"({self.children} child runs not exported: --children exports them)")
        return "\n".join(lines)

    def plot(self, path: str | Path) -> Path | None:
        """The two distributions of the paper's Figure 5, before and after; None without matplotlib."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return None
        fig, (turns, chars) = plt.subplots(1, 2, figsize=(10, 3.8))
        top_turns = max(self.before.turns_per_trajectory or [1])
        top_chars = max(self.before.chars_per_turn or [1])
        char_bins = [top_chars * i / 30 for i in range(31)]  # both sides on the same bins
        for side, label, colour in ((self.before, "before", "#9aa5b1"), (self.after, "after", "#1f6feb")):
            if side.turns_per_trajectory:
                turns.hist(
                    side.turns_per_trajectory,
                    bins=range(1, top_turns + 2),
                    alpha=0.7,
                    label=label,
                    color=colour,
                )
            if side.chars_per_turn:
                chars.hist(side.chars_per_turn, bins=char_bins, alpha=0.7, label=label, color=colour)
        if self.max_chars is not None and self.max_chars <= top_chars:
            chars.axvline(self.max_chars, color="#cf222e", linestyle="--", label="--max-chars")
        turns.set(xlabel="root turns per trajectory", ylabel="trajectories", title="Turns per trajectory")
        chars.set(
            xlabel="characters per turn (the sample's conversation)",
            ylabel="turns",
            title="Characters per turn",
        )
        for ax in (turns, chars):
            ax.legend()
        fig.tight_layout()
        path = Path(path)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path
