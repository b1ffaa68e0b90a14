"""The task generators of rlm_kernel.eval, checked against answers worked out independently.

Each expected answer is recomputed here from the context itself (and, for OOLONG, from the TREC
file's own labels), not from the generator's bookkeeping; OOLONG-Pairs is also checked on small
cases worked out by hand.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter, defaultdict
from datetime import date, datetime
from pathlib import Path

import pytest

from rlm_kernel.errors import ConfigError
from rlm_kernel.eval import oolong, records, sniah
from rlm_kernel.eval.oolong import LABELS, PAIR_TASKS, Line, PairTask, gold_pairs
from rlm_kernel.eval.tasks import TaskRef, as_text, generate, generated_tasks, load_jsonl, parse_length

TREC = Path(oolong.__file__).parent / "data" / "trec_train_5500.label"


def test_lengths_read_as_the_paper_writes_them() -> None:
    assert [parse_length(x) for x in ("8k", "32K", "1m", "5000", " 2k ")] == [
        8192,
        32768,
        1048576,
        5000,
        2048,
    ]
    with pytest.raises(ConfigError, match="8k, 128k, 1m"):
        parse_length("eight thousand")


def test_unknown_names_are_one_line_errors() -> None:
    with pytest.raises(ConfigError, match=r"Unknown task family 'needles'.*sniah"):
        generated_tasks(["needles"], [1024], "test", 1)
    with pytest.raises(ConfigError, match="Unknown split 'train'"):
        generated_tasks(["sniah"], [1024], "train", 1)


@pytest.mark.parametrize("family", ["sniah", "oolong", "pairs", "records", "verbatim"])
def test_a_ref_always_builds_the_same_task_and_splits_differ(family: str) -> None:
    a, b = generate(TaskRef(family, "test", 2048, 3)), generate(TaskRef(family, "test", 2048, 3))
    assert (as_text(a.context), a.question, a.answer) == (as_text(b.context), b.question, b.answer)
    dev = generate(TaskRef(family, "dev", 2048, 3))
    assert as_text(dev.context) != as_text(a.context)
    for length in (2048, 16384):
        task = generate(TaskRef(family, "test", length, 1))
        assert 0.8 * length * 4 <= task.context_chars <= 1.3 * length * 4, (
            family,
            length,
            task.context_chars,
        )


# -- S-NIAH ----------------------------------------------------------------------------------


def _needle_count(context: object, sentence: str) -> int:
    return as_text(context).count(sentence.rstrip("."))


@pytest.mark.parametrize("split", ["dev", "test"])
def test_sniah_hides_one_needle_that_holds_the_answer(split: str) -> None:
    shapes, kinds = set(), set()
    for i in range(10):
        task = generate(TaskRef("sniah", split, 4096, i))
        needle = task.meta["needle"]
        assert _needle_count(task.context, needle) == 1
        assert task.answer in needle and task.answer not in task.question
        assert as_text(task.context).count(task.answer) == 1  # the filler never holds the answer
        shapes.add(task.meta["shape"])
        kinds.add(task.meta["kind"])
        if i == 4:  # any five in a row: every shape and every kind
            assert shapes == set(sniah.SHAPES) and kinds == set(sniah.KINDS)


def test_sniah_shapes_are_what_they_say() -> None:
    by_shape = {
        generate(TaskRef("sniah", s, 4096, i)).meta["shape"]: None for s in ("dev",) for i in range(5)
    }
    assert set(by_shape) == set(sniah.SHAPES)
    for split in ("dev", "test"):
        tasks = {
            generate(TaskRef("sniah", split, 4096, i)).meta["shape"]: generate(
                TaskRef("sniah", split, 4096, i)
            )
            for i in range(5)
        }
        assert isinstance(tasks["line"].context, str) and "\n" not in tasks["line"].context
        assert tasks["lines"].context.count("\n") > 100
        assert isinstance(tasks["documents"].context, list) and len(tasks["documents"].context) > 5
        assert isinstance(tasks["records"].context, dict) and len(tasks["records"].context) > 5
        assert isinstance(json.loads(tasks["json"].context), (list, dict))
    test_lines = generate(TaskRef("sniah", "test", 4096, 1)).context.splitlines()
    assert all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z]{4} ", line) for line in test_lines)
    assert isinstance(generate(TaskRef("sniah", "test", 4096, 2)).context[0], dict)  # documents with titles


def test_sniah_wordings_of_the_splits_never_meet() -> None:
    def wordings(split: str) -> set[str]:
        return {
            re.sub(r"\d[\d.-]*|[A-Z]{2}-\d+", "#", generate(TaskRef("sniah", split, 1024, i)).question)
            for i in range(60)
        }

    dev, test = wordings("dev"), wordings("test")
    stems = lambda qs: {q.split()[0] + " " + q.split()[1] for q in qs}  # noqa: E731
    assert not (dev & test)
    assert stems(dev) != stems(test)


def test_sniah_needles_sit_at_every_depth() -> None:
    depths = [generate(TaskRef("sniah", "test", 2048, i)).meta["depth"] for i in range(40)]
    assert min(depths) < 0.15 and max(depths) > 0.85
    task = generate(TaskRef("sniah", "test", 4096, 0))  # one long line: the needle is where depth says
    at = task.context.index(task.meta["needle"]) / len(task.context)
    assert abs(at - task.meta["depth"]) < 0.1


# -- OOLONG -----------------------------------------------------------------------------------


def _trec_labels() -> dict[str, str]:
    out = {}
    for line in TREC.read_text("ascii").splitlines():
        tag, _, question = line.partition(" ")
        out[question.strip()] = LABELS[tag.split(":")[0]]
    return out


def _parse(context: str) -> list[tuple[date, int, str]]:
    """(day, user, label) of every line, read from the text and labelled from the TREC file."""
    labels, rows = _trec_labels(), []
    for line in context.splitlines():
        m = re.match(r"Date: (\w{3} \d\d, \d{4}) \|\| User: (\d+) \|\| Instance: (.*)$", line)
        if m:
            day = datetime.strptime(m.group(1), "%b %d, %Y").date()
        else:
            m = re.match(r"(\d{4}-\d\d-\d\d) \| user (\d+) \| (.*)$", line)
            day = date.fromisoformat(m.group(1))
        rows.append((day, int(m.group(2)), labels[m.group(3)]))
    return rows


def _answer(question: str, rows: list[tuple[date, int, str]]) -> object:
    counts = Counter(label for _, _, label in rows)
    quoted = re.findall(r"'([a-z ]+)'", question)
    if "most common" in question or "most often" in question:
        return counts.most_common(1)[0][0]
    if "least common" in question or "least often" in question:
        return min(counts, key=counts.get)
    if "more common than" in question:
        a, b = (quoted[1], quoted[0]) if question.startswith("Compared with") else (quoted[0], quoted[1])
        if counts[a] == counts[b]:
            return "same frequency as"
        return "more common than" if counts[a] > counts[b] else "less common than"
    label = quoted[-1] if quoted else None
    user = re.search(r"user (\d+)", question)
    if user:
        return sum(1 for _, u, lab in rows if u == int(user.group(1)) and lab == label)
    when = re.search(r"dated (before|after) (\w+ \d+, \d{4})", question)
    if when:
        pivot = datetime.strptime(when.group(2), "%B %d, %Y").date()
        keep = (lambda d: d < pivot) if when.group(1) == "before" else (lambda d: d > pivot)
        return sum(1 for d, _, lab in rows if keep(d) and lab == label)
    return counts[label]


@pytest.mark.parametrize("split", ["dev", "test"])
def test_oolong_answers_match_the_context_and_the_trec_labels(split: str) -> None:
    kinds = set()
    for i in range(12):
        task = generate(TaskRef("oolong", split, 4096, i))
        assert task.answer == _answer(task.question, _parse(task.context)), task.question
        kinds.add(task.meta["question_type"])
    assert kinds >= {"count", "most", "least", "compare", "user", "date"}


def test_oolong_hides_the_labels_and_keeps_the_splits_apart() -> None:
    task = generate(TaskRef("oolong", "test", 8192, 0))
    assert not re.search(r"\b(ABBR|DESC|ENTY|HUM|LOC|NUM):", task.context)
    assert all(
        re.fullmatch(r"Date: .+ \|\| User: \d+ \|\| Instance: .+", x) for x in task.context.splitlines()
    )
    dev_q = {q for _, q in oolong.trec("dev")}
    test_q = {q for _, q in oolong.trec("test")}
    assert not (dev_q & test_q) and len(dev_q) + len(test_q) > 5300


def _line(user: int, label: str, day: date = date(2023, 6, 1)) -> Line:
    return Line(day, user, label, "q?")


def test_pairs_on_cases_worked_out_by_hand() -> None:
    n, loc, ent, hum, abbr = "numeric value", "location", "entity", "human being", "abbreviation"
    lines = [
        _line(1, n), _line(1, ent),
        _line(2, loc),
        _line(3, ent), _line(3, ent),
        _line(4, hum, date(2022, 12, 1)), _line(4, loc),
    ]  # fmt: skip
    # Task 1: both users have a numeric value or a location: users 1, 2 and 4.
    assert gold_pairs(PAIR_TASKS[0], lines) == [(1, 2), (1, 4), (2, 4)]
    # Task 4: a human being or a location, and every human being after 2023-01-06: 4's is before.
    assert gold_pairs(PAIR_TASKS[3], lines) == []
    # Task 11: one has an entity and an abbreviation (nobody), the other exactly one entity.
    assert gold_pairs(PAIR_TASKS[10], lines) == []
    lines.append(_line(3, abbr))
    # Now user 3 (two entities, an abbreviation) takes role A; user 1 (one entity) role B.
    assert gold_pairs(PAIR_TASKS[10], lines) == [(1, 3)]
    # Exactly two locations (task 14's role B): nobody; at least two numeric values (task 12's A): nobody.
    assert gold_pairs(PAIR_TASKS[13], lines) == [] and gold_pairs(PAIR_TASKS[11], lines) == []
    # A user meeting both roles pairs with the others, never with itself.
    both = PairTask(0, role_a=((ent, ">=", 1),), role_b=((ent, ">=", 1),))
    assert gold_pairs(both, lines) == [(1, 3)]


def test_pairs_tasks_cover_the_twenty_and_score_against_the_context() -> None:
    seen = set()
    for i in range(20):
        task = generate(TaskRef("pairs", "test", 4096, i))
        seen.add(task.meta["pair_task"])
        assert task.question.startswith("In the above data, list all pairs of user IDs")
        rows = _parse(task.context)
        by_user: dict[int, list[tuple[date, str]]] = defaultdict(list)
        for day, user, label in rows:
            by_user[user].append((day, label))
        lines = [Line(d, u, lab, "") for d, u, lab in rows]
        assert [list(p) for p in gold_pairs(PAIR_TASKS[i], lines)] == task.answer
        assert all(a < b for a, b in task.answer)
    assert seen == set(range(1, 21))
    dev = generate(TaskRef("pairs", "dev", 4096, 0))
    assert dev.question.startswith("Find every pair of users")


# -- records and verbatim ------------------------------------------------------------------


def _rows(task) -> list[dict]:
    if isinstance(task.context, list):
        return task.context
    return list(csv.DictReader(io.StringIO(task.context)))


@pytest.mark.parametrize("split", ["dev", "test"])
def test_records_answers_match_the_rows(split: str) -> None:
    schema = records.SCHEMAS[split]
    for i in range(10):
        task = generate(TaskRef("records", split, 4096, i))
        rows = _rows(task)
        state_f, group_f, amount_f, who_f, when_f = (
            schema.state[0],
            schema.group[0],
            schema.amount[0],
            schema.who,
            schema.when,
        )
        q, kind = task.question, task.meta["question_type"]
        state = next((s for s in schema.state[1] if re.search(rf"\b{s}\b", q)), None)
        group = next((g for g in schema.group[1] if re.search(rf"\b{g}\b", q)), None)
        if kind == "count":
            expected = sum(r[state_f] == state for r in rows)
        elif kind == "count2":
            expected = sum(r[state_f] == state and r[group_f] == group for r in rows)
        elif kind == "sum":
            expected = round(sum(float(r[amount_f]) for r in rows if r[group_f] == group), schema.amount[3])
        elif kind == "month":
            month = datetime.strptime(
                re.search(
                    r"(January|February|March|April|May|June|July|August|September|October|November|December) \d{4}",
                    q,
                ).group(0),
                "%B %Y",
            )
            expected = sum(r[when_f][:7] == f"{month:%Y-%m}" for r in rows)
        else:
            top = Counter(r[who_f] for r in rows).most_common(2)
            assert top[0][1] > top[1][1]
            expected = top[0][0]
        assert task.answer == pytest.approx(expected) if kind == "sum" else task.answer == expected, q
    assert {generate(TaskRef("records", split, 4096, i)).meta["container"] for i in range(2)} == {
        "dicts",
        "csv",
    }


def test_records_sizes_span_the_issue_range() -> None:
    small = generate(TaskRef("records", "test", parse_length("8k"), 0))
    large = generate(TaskRef("records", "test", parse_length("128k"), 1))
    assert 150 <= small.meta["records"] <= 300 and large.meta["records"] >= 5000


def test_verbatim_answers_are_the_context() -> None:
    kinds = set()
    for i in range(4):
        task = generate(TaskRef("verbatim", "dev", 1024, i))
        assert task.answer == task.context and task.scorer == "verbatim"
        kinds.add(task.meta["kind"])
    assert kinds == {"json", "csv", "codes", "words"}
    json.loads(generate(TaskRef("verbatim", "test", 1024, 0)).context)


# -- your own tasks --------------------------------------------------------------------------


def test_own_tasks_from_jsonl(tmp_path: Path) -> None:
    (tmp_path / "doc.txt").write_text("The launch window opens on day 12.")
    lines = [
        {
            "id": "inline",
            "context": ["a", "b"],
            "question": "How many items?",
            "answer": 2,
            "scorer": "exact",
        },
        {"context_path": "doc.txt", "question": "When does it open?", "answer": "day 12"},
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    first, second = load_jsonl(path)
    assert (first.id, first.context, first.scorer) == ("inline", ["a", "b"], "exact")
    assert (second.id, second.context, second.scorer, second.family) == (
        "mine-0002",
        "The launch window opens on day 12.",
        "contains",
        "custom",
    )


def test_own_tasks_have_their_contexts_length_unless_the_file_gives_one(tmp_path: Path) -> None:
    lines = [
        {"context": "x" * 4000, "question": "q", "answer": "a"},
        {"context": ["ab"] * 100, "question": "q", "answer": "a"},
        {"context": "short", "question": "q", "answer": "a", "length": "8k"},
        {"context": "", "question": "q", "answer": "a"},
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    text, items, stated, empty = load_jsonl(path)
    assert text.length == 1000  # four characters a token, as the generated tasks are counted
    assert items.length == round(len(as_text(["ab"] * 100)) / 4)
    assert stated.length == 8192
    assert empty.length == 1
    path.write_text(json.dumps({"context": "c", "question": "q", "answer": "a", "length": "lots"}))
    with pytest.raises(ConfigError, match=r"line 1: Cannot read the length 'lots'"):
        load_jsonl(path)


@pytest.mark.parametrize(
    ("args", "families"),
    [
        (["--task-file", "TASKS"], []),
        (["--task-file", "TASKS", "--tasks", "records"], ["records"]),
        ([], ["sniah"]),
    ],
)
def test_the_command_line_runs_only_the_files_tasks_unless_families_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], families: list[str]
) -> None:
    from rlm_kernel.eval import sweep
    from rlm_kernel.eval.__main__ import main
    from rlm_kernel.eval.results import Results

    tasks = tmp_path / "x.jsonl"
    tasks.write_text(json.dumps({"context": "c", "question": "q", "answer": "a"}) + "\n")
    asked: dict = {}

    async def arun(tasks: list[str], lengths: list[str], methods: list[str], **kw: object) -> Results:
        asked.update(tasks=tasks, task_files=kw["task_files"])
        return Results([])

    monkeypatch.setattr(sweep, "arun", arun)
    args = [str(tasks) if a == "TASKS" else a for a in args]
    assert main(["run", *args, "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    assert asked["tasks"] == families
    assert asked["task_files"] == ([str(tasks)] if "--task-file" in args else [])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "line 1: not JSON"),
        ('{"question": "q"}', "needs at least 'question' and 'answer'"),
        ('{"question": "q", "answer": 1}', "give the task's 'context' or its 'context_path'"),
        ('{"question": "q", "answer": 1, "context_path": "missing.txt"}', "cannot read"),
        ('{"question": "q", "answer": 1, "context": "c", "scorer": "nope"}', "Unknown scorer 'nope'"),
    ],
)
def test_own_tasks_with_mistakes_are_one_line_errors(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_jsonl(path)


_DIGEST = """
import hashlib, sys
from rlm_kernel.eval.tasks import TaskRef, as_text, family_names, generate
for name in family_names():
    for split in ("dev", "test"):
        for index in range(2):
            t = generate(TaskRef(name, split, 2048, index))
            text = as_text(t.context) + t.question + repr(t.answer)
            print(name, split, index, hashlib.sha256(text.encode()).hexdigest())
"""


def test_a_ref_builds_the_same_task_in_any_process() -> None:
    """A resumed sweep and each Ray worker build a task again in a process of their own, where
    sets of strings iterate in another order (PYTHONHASHSEED)."""
    import os
    import subprocess
    import sys

    def digests(seed: str) -> str:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        return subprocess.run(
            [sys.executable, "-c", _DIGEST], env=env, capture_output=True, text=True, check=True
        ).stdout

    first = digests("1")
    assert first.count("\n") > 40 and first == digests("2")
