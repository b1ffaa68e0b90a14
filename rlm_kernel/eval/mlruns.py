"""Questions about experiment tracking: the context is a dict of training runs, each a nested dict.

What a notebook holds after pulling an experiment's runs from a tracking server: run -> its
settings, its state and the metrics it logged, one value per epoch or per logged step. Some runs
failed or were stopped early, so their curves are shorter than their settings say. Runs are added
until the JSON (indented, as a plain model reads it) is about the length asked for. Kinds of
question:

- ``best``: which run reached the highest value of a metric at any point (a clear leader, and not
  the run with the highest last value where it could be otherwise: the best run diverged late);
- ``epoch``: the epoch (counted from 1, ``dev``) or step (``test``) at which one run's
  validation loss was lowest;
- ``count``: how many finished runs used two given settings (others share one of them, or
  failed);
- ``final``: the last value of a metric that one run logged (often a run that stopped early; run
  names differ from others by a digit).

Every answer is computed from the runs the generator wrote. Score: ``exact`` (numbers as numbers,
run names without case).

Splits: ``dev`` is MLflow-like image classification (keyed by run name such as
``brave-finch-417``; ``params`` as strings: ``lr``, ``batch_size``, ``optimizer``; ``metrics`` of
lists per epoch: ``train_loss``, ``val_loss``, ``val_acc``; ``status`` ``FINISHED``); ``test`` is
Weights & Biases-like language-model fine-tuning (keyed by an 8-character run id, with the name
inside; ``config`` with numbers: ``model_name``, ``learning_rate``,
``per_device_train_batch_size``; ``history`` as a list of step dicts where ``eval/loss`` and
``eval/f1`` appear only every other row; ``state`` ``finished``): other nesting, keys, types and
wording.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("best", "epoch", "count", "final")

_ADJ = tuple(
    "brave calm clever eager gentle honest jolly lucky merry nimble quiet rapid shy sunny tidy witty "
    "bold keen proud wise".split()
)
_ANIMALS = tuple("finch otter lynx heron badger moth carp wren ibis yak mole newt".split())
_NOUNS = tuple(
    "sunset river meadow glade comet harbor forest dune canyon breeze valley ember frost lagoon".split()
)
_WANDB_ADJ = tuple(
    "fluent sage misty stellar dainty crimson hardy lively polished vivid glowing rosy earthy driven".split()
)

_DEV_SETTINGS = {
    "model": ("resnet18", "resnet34", "resnet50", "vit_small", "convnext_tiny"),
    "optimizer": ("sgd", "adam", "adamw"),
    "lr": ("0.1", "0.01", "0.001", "0.0001", "0.0003"),
    "batch_size": ("64", "128", "256"),
}
_TEST_SETTINGS = {
    "model_name": ("bert-base-uncased", "roberta-base", "deberta-v3-base", "distilbert-base-uncased"),
    "learning_rate": (1e-05, 2e-05, 3e-05, 5e-05),
    "per_device_train_batch_size": (8, 16, 32),
    "warmup_ratio": (0.0, 0.06, 0.1),
}


@dataclass
class Run:
    name: str
    ident: str
    done: bool  # finished; else failed, crashed or stopped
    state: str
    settings: dict
    steps: list[int]  # the epoch (dev, from 1) or the step (test) of each logged value
    loss: list[float]  # validation loss
    score: list[float]  # validation accuracy (dev) or F1 (test)
    train: list[float]
    extra: dict = field(default_factory=dict)


def _curves(rng: random.Random, n: int, ceiling: float) -> tuple[list[float], list[float], list[float]]:
    """Validation loss, validation score and training loss for n points: learning, then overfitting."""
    tau = rng.uniform(1.5, 0.25 * n + 2)
    turn = rng.uniform(0.4, 0.9) * n
    slope = rng.uniform(0.002, 0.03)
    floor = rng.uniform(0.18, 0.55) + (1 - ceiling)
    loss, score, train = [], [], []
    for e in range(1, n + 1):
        over = max(0.0, e - turn)
        learned = 1 - math.exp(-e / tau)
        loss.append(round(floor + 1.8 * (1 - learned) + slope * over + rng.gauss(0, 0.012), 4))
        score.append(round(min(0.9999, ceiling * learned - 0.6 * slope * over + rng.gauss(0, 0.006)), 4))
        train.append(round(max(0.001, 0.03 + 2.1 * math.exp(-e / (0.8 * tau)) + rng.gauss(0, 0.01)), 4))
    return loss, score, train


class _Names:
    def __init__(self, rng: random.Random) -> None:
        self.rng, self.seen = rng, set()

    def add(self, name: str) -> str | None:
        if name in self.seen:
            return None
        self.seen.add(name)
        return name


def _dev_run(rng: random.Random, names: _Names, prev: Run | None) -> Run:
    name = None
    if prev is not None and rng.random() < 0.35:  # a look-alike of the run before: its digits swapped
        stem, digits = prev.name.rsplit("-", 1)
        name = names.add(f"{stem}-{digits[::-1]}") if digits[::-1] != digits else None
    while name is None:
        name = names.add(f"{rng.choice(_ADJ)}-{rng.choice(_ANIMALS)}-{rng.randint(100, 999)}")
    settings = {k: rng.choice(v) for k, v in _DEV_SETTINGS.items()}
    epochs = rng.choice((10, 15, 20, 25, 30, 40))
    status = rng.choices(("FINISHED", "FAILED", "KILLED"), (70, 15, 15))[0]
    ran = epochs if status == "FINISHED" else rng.randint(2, epochs - 1)
    ceiling = rng.uniform(0.55, 0.95)
    loss, score, train = _curves(rng, epochs, ceiling)
    return Run(
        name=name,
        ident=f"{rng.getrandbits(128):032x}",
        done=status == "FINISHED",
        state=status,
        settings={
            **settings,
            "epochs": str(epochs),
            "weight_decay": rng.choice(("0.0005", "0.0001", "0.05")),
        },
        steps=list(range(1, ran + 1)),
        loss=loss[:ran],
        score=score[:ran],
        train=train[:ran],
    )


def _test_run(rng: random.Random, names: _Names, k: int, stems: list[str]) -> Run:
    name = None
    while name is None:
        if stems and rng.random() < 0.3:  # the same two words as an earlier run
            name = names.add(f"{rng.choice(stems)}-{k}")
        else:
            stem = f"{rng.choice(_WANDB_ADJ)}-{rng.choice(_NOUNS)}"
            name = names.add(f"{stem}-{k}")
            stems.append(stem)
    settings = {key: rng.choice(v) for key, v in _TEST_SETTINGS.items()}
    rows = rng.randint(10, 24)  # logged every 100 steps, evaluated every 200
    state = rng.choices(("finished", "crashed", "killed"), (72, 18, 10))[0]
    kept = rows if state == "finished" else rng.randint(4, rows - 1)
    loss, score, train = _curves(rng, rows // 2, rng.uniform(0.6, 0.94))
    steps = [100 * (i + 1) for i in range(kept)]
    return Run(
        name=name,
        ident="".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(8)),
        done=state == "finished",
        state=state,
        settings={**settings, "num_train_epochs": 3, "seed": rng.choice((13, 42, 1234))},
        steps=[s for s in steps if s % 200 == 0],
        loss=loss[: kept // 2],
        score=score[: kept // 2],
        train=[round(t + rng.gauss(0, 0.02), 4) for t in _interleave(train, kept)],
        extra={"rows": steps},
    )


def _interleave(train: list[float], kept: int) -> list[float]:
    """A training loss for every logged row (twice as many as the evaluations)."""
    out = []
    for i in range(kept):
        a = train[min(i // 2, len(train) - 1)]
        out.append(max(0.001, a + (0.02 if i % 2 == 0 else 0.0)))
    return out


# -- the dicts ----------------------------------------------------------------------------------


def _dev_dict(r: Run, start: datetime) -> dict:
    return {
        "run_id": r.ident,
        "experiment": "cifar10-baselines",
        "status": r.state,
        "start_time": f"{start:%Y-%m-%d %H:%M:%S}",
        "params": r.settings,
        "metrics": {"train_loss": r.train, "val_loss": r.loss, "val_acc": r.score},
        "tags": {"mlflow.user": "jana", "mlflow.source.name": "train.py"},
    }


def _test_dict(r: Run, start: datetime) -> dict:
    history = []
    for i, step in enumerate(r.extra["rows"]):
        row = {"_step": step, "train/loss": r.train[i]}
        if step % 200 == 0:
            row["eval/loss"], row["eval/f1"] = r.loss[step // 200 - 1], r.score[step // 200 - 1]
        history.append(row)
    last_eval = {"eval/loss": r.loss[-1], "eval/f1": r.score[-1]}
    return {
        "name": r.name,
        "state": r.state,
        "created_at": f"{start:%Y-%m-%dT%H:%M:%S}",
        "config": r.settings,
        "summary": {"_step": r.extra["rows"][-1], "train/loss": r.train[-1], **last_eval},
        "history": history,
    }


def _runs(split: str, rng: random.Random, chars: int) -> tuple[list[Run], dict]:
    names = _Names(rng)
    runs: list[Run] = []
    context: dict = {}
    stems: list[str] = []
    start = datetime(2024, 6, 3, 9, 12) if split == "dev" else datetime(2025, 2, 10, 14, 3)
    size = 10
    starts: list[datetime] = []
    while size < chars or len(runs) < 6:
        start += timedelta(minutes=rng.randint(20, 400))
        if split == "dev":
            r = _dev_run(rng, names, runs[-1] if runs else None)
            entry = _dev_dict(r, start)
        else:
            r = _test_run(rng, names, len(runs) + 1, stems)
            entry = _test_dict(r, start)
        runs.append(r)
        starts.append(start)
        text = json.dumps(entry, indent=1)
        size += len(text) + len(r.ident) + 8 + text.count("\n")  # one level deeper in the dict
    _diverge(rng, runs)
    for r, start in zip(runs, starts, strict=True):
        if split == "dev":
            context[r.name] = _dev_dict(r, start)
        else:
            context[r.ident] = _test_dict(r, start)
    return runs, context


def _diverge(rng: random.Random, runs: list[Run]) -> None:
    """The run with the best score at any point diverged after it, if its last score would
    otherwise be the best last score too: the best run is not the one that ends best."""
    best = max(runs, key=lambda r: max(r.score))
    peak = best.score.index(max(best.score))
    if max(runs, key=lambda r: r.score[-1]) is not best or peak == len(best.score) - 1:
        return
    for i in range(max(peak + 1, len(best.score) - 3), len(best.score)):
        best.score[i] = round(best.score[i] * rng.uniform(0.45, 0.75), 4)
        best.loss[i] = round(best.loss[i] + rng.uniform(0.4, 1.2), 4)
    per = len(best.train) // len(best.score)  # training losses per score: 1 (dev) or 2 (test)
    for i in range(max(peak + 1, len(best.score) - 3) * per, len(best.train)):
        best.train[i] = round(best.train[i] + rng.uniform(0.3, 1.0), 4)


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _ask_best(split: str, rng: random.Random, runs: list[Run]) -> _Asked:
    peaks = sorted(((max(r.score), r.name) for r in runs), reverse=True)
    if peaks[0][0] == peaks[1][0]:
        return None
    if split == "dev":
        return "Which run reached the highest val_acc at any epoch (not only the last one)?", peaks[0][1], {}
    q = "Which run logged the highest eval/f1 at any step of its history? Answer with its name, not its id."
    return q, peaks[0][1], {}


def _ask_epoch(split: str, rng: random.Random, runs: list[Run]) -> _Asked:
    r = rng.choice([r for r in runs if len(r.loss) >= 3])
    low = min(r.loss)
    if r.loss.count(low) > 1:
        return None
    at = r.steps[r.loss.index(low)]
    if split == "dev":
        q = f"For the run '{r.name}', at which epoch (counting from 1) was val_loss lowest?"
        return q, at, {"run": r.name}
    q = f"At which _step did the run named {r.name} log its lowest eval/loss?"
    return q, at, {"run": r.name}


def _ask_count(split: str, rng: random.Random, runs: list[Run]) -> _Asked:
    r = rng.choice([r for r in runs if r.done])
    a, b = ("optimizer", "batch_size") if split == "dev" else ("model_name", "learning_rate")
    n = sum(x.done and x.settings[a] == r.settings[a] and x.settings[b] == r.settings[b] for x in runs)
    params = {a: r.settings[a], b: r.settings[b]}
    if split == "dev":
        q = (
            f"How many runs with optimizer {r.settings[a]} and batch_size {r.settings[b]} have the status "
            "FINISHED?"
        )
        return q, n, params
    q = (
        f"Count the runs whose state is finished and whose config has model_name {r.settings[a]} and "
        f"learning_rate {r.settings[b]}."
    )
    return q, n, params


def _ask_final(split: str, rng: random.Random, runs: list[Run]) -> _Asked:
    stopped = [r for r in runs if not r.done]
    r = rng.choice(stopped if stopped and rng.random() < 0.7 else runs)
    if split == "dev":
        return f"What was the last val_acc recorded for the run '{r.name}'?", r.score[-1], {"run": r.name}
    q = f"What is the last eval/f1 value in the history of the run named {r.name}?"
    return q, r.score[-1], {"run": r.name}


_ASK = {"best": _ask_best, "epoch": _ask_epoch, "count": _ask_count, "final": _ask_final}


@family(
    "mlruns",
    "runs as a dict of dicts (settings, metric curves): best run, best epoch, counts (MLflow in dev)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    runs, context = _runs(ref.split, rng, ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    # other runs, then a last value, which always has an answer
    kind, asked = draw_question(lambda kind_: _ASK[kind_](ref.split, rng, runs), kind, "final", nonzero=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict of dicts",
        runs=len(runs),
    )
