"""Training data from an evaluation: a real sweep of ``rlm_kernel.eval`` against the scripted LM
server (the real OpenAI SDK over HTTP), exported from its results folder with the scores of its
rows, the paper's filters and repairs, and the statistics; and the samples rendered by the bundled
model's own chat template through llama.cpp.

Each task's scripted root makes one of the mistakes the paper repaired, or a run a filter drops:

- ``final-var``: binds ``found``, then ends with ``FINAL(found)`` on a line of its own;
- ``final-literal``: ends with ``FINAL_VAR("The answer is ...")`` in code;
- ``prose-final``: reaches the iteration limit and answers the final turn in prose;
- ``one-turn``: answers in its first turn (dropped: one turn);
- ``wrong``: answers wrongly (dropped: scored 0);
- ``long``: prints a long slice of the context in its second turn, so its third (the final turn,
  after ``max_iterations``) passes ``--max-chars``; the run keeps its first two.

Every rollout's trajectory is also held to ``export_invariants``: no target that did not run, no
``rejected`` that is the target's text, and "after" counts exactly what was written.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from export_invariants import check_files, check_samples, trajectory_files
from scripted_server import Reply, Request, ScriptedServer

from rlm_kernel import eval as rlm_eval
from rlm_kernel import export as rlm_export
from rlm_kernel import models
from rlm_kernel.eval.tasks import TaskRef, generate, parse_length

BEHAVIOURS = ["final-var", "final-literal", "prose-final", "one-turn", "wrong", "long"]
MAX_CHARS = 4000


def repl(code: str) -> str:
    return f"Next.\n```repl\n{code}\n```"


class Roots:
    """Root replies by task (found from the question) and by turn (replies so far)."""

    def __init__(self) -> None:
        tasks = [generate(TaskRef("sniah", "test", parse_length("1k"), i)) for i in range(len(BEHAVIOURS))]
        self.tasks = {t.question: (b, str(t.answer)) for t, b in zip(tasks, BEHAVIOURS, strict=True)}

    def __call__(self, request: Request) -> Reply:
        if not request.is_root:
            return Reply(text="no idea")  # the plain model
        first = next(m["content"] for m in request.messages if m["role"] == "user")
        behaviour, answer = next(v for q, v in self.tasks.items() if f"Question: {q}" in first)
        turn = 1 + sum(m["role"] == "assistant" for m in request.messages)
        return Reply(text=self.reply(behaviour, answer, turn))

    @staticmethod
    def reply(behaviour: str, answer: str, turn: int) -> str:
        look = repl("i = str(context).find('?')\nprint(len(context), i)")  # whatever the context's type
        if behaviour == "one-turn":
            return repl(f"FINAL({json.dumps('It is ' + answer)})")
        if behaviour == "long":
            return [look, repl("print(context[:3000])"), f"FINAL({answer})"][turn - 1]
        if behaviour == "final-var":
            return repl(f"found = {answer!r}\nprint(found)") if turn == 1 else "I have it.\nFINAL(found)"
        if turn == 1:
            return look
        if behaviour == "final-literal":
            return repl(f"FINAL_VAR({json.dumps('The answer is ' + answer)})")
        if behaviour == "wrong":
            return "FINAL(nothing found)"
        return look if turn == 2 else f"The answer is {answer}."  # prose-final: turn 3 is the final turn


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("eval") / "results"
    with ScriptedServer(Roots()) as server:
        settings = rlm_eval.Settings(
            backend="openai",
            model_name="gpt-4o-mini",
            backend_kwargs={"base_url": server.openai_base_url, "api_key": "sk-test"},
            max_iterations=2,
            executor="local",
        )
        done = rlm_eval.run(
            ["sniah"],
            ["1k"],
            ["rlm", "base"],
            split="test",
            n=len(BEHAVIOURS),
            out=out,
            settings=settings,
            progress=False,
        )
    rows = {r.task_id: r for r in done.rows if r.method == "rlm"}
    assert len(rows) == len(BEHAVIOURS) and all(r.trajectory for r in rows.values())
    yield out


def export(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rlm_kernel.export", *args], capture_output=True, text=True, check=True
    )


def by_task(results: Path) -> dict[str, str]:
    """Run id of each behaviour's rollout, from the rows and their trajectories."""
    ids = {}
    for row in rlm_eval.load(results).rows:
        if row.method == "rlm":
            first = json.loads(Path(row.trajectory).read_text().splitlines()[0])
            ids[BEHAVIOURS[int(row.task_id[-3:])]] = first["run_id"]
    return ids


def test_a_results_folder_exports_with_its_scores_filters_repairs_and_stats(
    results: Path, tmp_path: Path
) -> None:
    rows = {BEHAVIOURS[int(r.task_id[-3:])]: r for r in rlm_eval.load(results).rows if r.method == "rlm"}
    assert rows["wrong"].score == 0 and all(r.score == 1 for b, r in rows.items() if b != "wrong")
    assert rows["prose-final"].error and "max_iterations" in rows["prose-final"].error  # scored on its answer

    out, stats, plot = tmp_path / "sft.jsonl", tmp_path / "stats.json", tmp_path / "stats.png"
    done = export(
        str(results),
        "-o",
        str(out),
        "--max-chars",
        str(MAX_CHARS),
        "--stats",
        str(stats),
        "--plot",
        str(plot),
    )
    print(done.stderr)  # the table, for the record (pytest -s)
    written = [json.loads(line) for line in out.read_text().splitlines()]
    ids = by_task(results)
    runs = {s["run_id"] for s in written}
    assert runs == {ids[b] for b in ("final-var", "final-literal", "prose-final", "long")}

    def last(behaviour: str) -> dict:
        return [s for s in written if s["run_id"] == ids[behaviour]][-1]

    answer = {b: str(generate(TaskRef("sniah", "test", 1024, i)).answer) for i, b in enumerate(BEHAVIOURS)}
    assert last("final-var")["messages"][-1]["content"] == "I have it.\nFINAL_VAR(found)"
    assert last("final-var")["repaired"] == ["final-var"]
    assert last("final-literal")["messages"][-1]["content"] == repl(
        f"FINAL({json.dumps('The answer is ' + answer['final-literal'])})"
    )
    assert last("prose-final")["messages"][-1]["content"] == f"FINAL(The answer is {answer['prose-final']}.)"
    assert last("prose-final")["turn"] == 3
    assert all(sum(len(m["content"]) for m in s["messages"]) <= MAX_CHARS for s in written)
    assert [s["turn"] for s in written if s["run_id"] == ids["long"]] == [1, 2]  # its third is too long

    figures = json.loads(stats.read_text())
    check_samples(rlm_export.read_results(results)[0], written, min_turns=2, figures=figures)
    assert figures["before"]["trajectories"] == 6 and figures["after"]["trajectories"] == 4
    assert (
        figures["before"]["turns"] == 2 + 2 + 3 + 1 + 2 + 3 and figures["after"]["turns"] == len(written) == 9
    )
    assert figures["after"]["trajectories_by_turns"] == {"2": 3, "3": 1}
    assert figures["dropped"] == {"scored_zero_runs": 1, "too_few_turns_runs": 1, "over_max_chars_turns": 1}
    assert figures["after"]["repairs"] == {"final-var": 1, "final-literal": 1, "prose-final": 1}
    assert figures["before"]["chars_per_turn"]["max"] > MAX_CHARS >= figures["after"]["chars_per_turn"]["max"]
    assert "| repaired: final-var" in done.stderr and "| dropped: runs scored 0" in done.stderr
    assert "9 samples from 4 runs (2 runs dropped by the filters)" in done.stderr
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # Each repair can be left out; the recorded trajectory never changes.
    plain = export(str(results), "--no-repair", "final-var", "--no-repair", "prose-final").stdout
    kept = {json.loads(line)["run_id"]: json.loads(line) for line in plain.splitlines()}
    assert kept[ids["final-var"]]["messages"][-1]["content"] == "I have it.\nFINAL(found)"
    assert kept[ids["prose-final"]]["messages"][-1]["content"] == f"The answer is {answer['prose-final']}."
    assert kept[ids["final-literal"]]["repaired"] == ["final-literal"]
    untouched = export(str(results), "--no-repair", "all").stdout
    assert all("repaired" not in json.loads(line) for line in untouched.splitlines())
    assert "FINAL(found)" in Path(rows["final-var"].trajectory).read_text()


def test_every_rollout_teaches_only_what_ran(results: Path, tmp_path: Path) -> None:
    assert check_files(trajectory_files(results), tmp_path) == 2 + 2 + 3 + 1 + 2 + 3


def test_a_moved_results_folder_still_finds_its_trajectories(results: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere"
    shutil.copytree(results, moved)
    here = export(str(results)).stdout
    assert export(str(results.parent)).stdout == here  # a folder of results folders
    for row in rlm_eval.load(moved).rows:  # rows name trajectories in their folder, wherever it is
        assert row.method == "base" or Path(row.trajectory).parent == moved.resolve() / "trajectories"
    shutil.move(results / "trajectories", tmp_path / "gone")
    try:
        assert export(str(moved)).stdout == here
        lost = subprocess.run(
            [sys.executable, "-m", "rlm_kernel.export", str(results)],
            capture_output=True,
            text=True,
            check=True,
        )
        assert lost.stdout == "" and lost.stderr.count("a row's trajectory is missing") == 6
    finally:
        shutil.move(tmp_path / "gone", results / "trajectories")


# -- the samples through a real chat template, offline --------------------------------------------


@pytest.fixture(scope="module")
def template_server():
    """The bundled model's llama.cpp server (one per process, shared), only if already cached."""
    pytest.importorskip("xllamacpp", reason="llama.cpp (xllamacpp) is not installed")
    path = models.model_path()
    if path is None:
        pytest.skip(
            "the bundled model is not in the cache (python -m rlm_kernel.models fetch); nothing is downloaded"
        )
    from rlm_kernel.lm.llama_server import shared_server

    return shared_server(path, n_ctx=2048)  # the settings tests/integration/test_local_model.py shares


def apply_template(server, messages: list[dict]) -> str:
    request = urllib.request.Request(
        server.url + "/apply-template",
        data=json.dumps({"messages": messages}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.loads(reply.read())["prompt"]


@pytest.mark.local_model  # the real model's template; it is never fetched here: skipped if not cached
def test_samples_render_with_the_bundled_models_chat_template(results: Path, template_server) -> None:
    written = [json.loads(line) for line in export(str(results)).stdout.splitlines()]
    assert written
    for sample in written:
        messages = sample["messages"]
        roles = [m["role"] for m in messages]
        assert roles[0] == "system" and roles[-1] == "assistant"
        assert all(a != b for a, b in itertools.pairwise(roles[1:])), roles  # user and assistant alternate
        prompt = apply_template(template_server, messages)
        # Qwen's ChatML: every turn in order; the target is the assistant turn the prompt ends with.
        expected = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages[:-1])
        assert prompt == expected + f"<|im_start|>assistant\n{messages[-1]['content']}"
