"""The task families documents, repo, frames, chain and meaning, checked against the context itself.

Every expected answer is found again here from the context (the documents' text, the files'
syntax trees, the data frame through pandas, the notes matched back to their templates), not
taken from the generator's bookkeeping; ``meta`` is only used to say where to look.
"""

from __future__ import annotations

import ast
import re
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from rlm_kernel.eval import chain, documents, frames, meaning, repo
from rlm_kernel.eval.scoring import score
from rlm_kernel.eval.tasks import TaskRef, as_text, family_names, generate

NEW = ("documents", "repo", "frames", "chain", "meaning")
SMALL = 16384  # tokens: about 65k characters


def _same(a: object, b: object) -> bool:
    if isinstance(a, (pd.DataFrame, pd.Series)):
        return a.equals(b)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return as_text(a) == as_text(b)


def _wrong(answer: object) -> str:
    if isinstance(answer, (int, float)):
        return str(round(answer * 1.5 + 7, 2))
    return "something else entirely"


@pytest.mark.parametrize("family", NEW)
def test_the_families_are_registered(family: str) -> None:
    assert family in family_names()


@pytest.mark.parametrize("family", NEW)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_a_ref_always_builds_the_same_task_and_its_answer_scores(family: str, split: str) -> None:
    for index in (0, 1):
        ref = TaskRef(family, split, SMALL, index)
        a, b = generate(ref), generate(ref)
        assert _same(a.context, b.context)
        assert (a.question, a.answer, a.scorer, a.meta) == (b.question, b.answer, b.scorer, b.meta)
        assert a.split == split and a.family == family and a.id == ref.id
        assert score(a.scorer, str(a.answer), a.answer) == 1.0
        assert score(a.scorer, _wrong(a.answer), a.answer) == 0.0
        assert str(a.answer).lower() not in a.question.lower()


def _stems(family: str, split: str, n: int = 10) -> set[str]:
    out = set()
    for i in range(n):
        q = generate(TaskRef(family, split, SMALL, i)).question
        out.add(" ".join(re.sub(r"`[^`]*`|'[^']*'|\d[\d.,]*", "#", q).split()[:4]))
    return out


@pytest.mark.parametrize("family", NEW)
def test_dev_and_test_differ_in_wording_and_data(family: str) -> None:
    assert not (_stems(family, "dev") & _stems(family, "test"))
    dev, test = generate(TaskRef(family, "dev", SMALL, 0)), generate(TaskRef(family, "test", SMALL, 0))
    if family == "frames":
        assert set(dev.context.columns).isdisjoint(test.context.columns)
    else:
        assert as_text(dev.context) != as_text(test.context)


# -- documents --------------------------------------------------------------------------------


def _docs(context: object) -> dict[int, str]:
    """Document number -> text, read from the headers or the keys."""
    if isinstance(context, dict):
        return {int(re.match(r"\[?(\d+)", k).group(1)): v for k, v in context.items()}
    parts = re.split(r"^(?:=== (\d+): .+ ===|----- \[(\d+)\] .+ -----)$", context, flags=re.M)
    out = {}
    for i in range(1, len(parts), 3):
        out[int(parts[i] or parts[i + 1])] = parts[i + 2].strip("\n")
    return out


def _quoted(question: str) -> str:
    return next(p.strip() for p in question.split("\n\n")[1:] if p.strip() and "?" not in p[-3:])


@pytest.mark.parametrize("split", ["dev", "test"])
def test_documents_answers_are_found_in_the_context(split: str) -> None:
    kinds = set()
    for i in range(6):
        task = generate(TaskRef("documents", split, 32768, i))
        docs = _docs(task.context)
        assert len(docs) == task.meta["documents"] and task.meta["chars"] > 0.9 * 32768 * 4
        kind = task.meta["question_type"]
        kinds.add(kind)
        if kind == "cloze":
            blanked = task.question.split("\n\n")[1]  # the line, after the instructions
            before, after = blanked.split(documents.BLANK)
            pattern = re.escape(before) + "([A-Za-z]+)" + re.escape(after)
            hits = [m.group(1) for text in docs.values() for m in re.finditer(pattern, text)]
            assert hits == [task.answer]
            word = task.answer.lower()
            assert sum(text.lower().count(word) for text in docs.values()) <= 3
        elif kind == "locate":
            line = _quoted(task.question)
            holders = [n for n, text in docs.items() if line in text]
            assert holders == [task.answer] and sum(t.count(line) for t in docs.values()) == 1
        elif kind == "heading":
            number, n = map(int, re.search(r"document (\d+).*section (\d+)", task.question, re.S).groups())
            rows = docs[number].splitlines()
            heads = [rows[j] for j in range(len(rows) - 1) if rows[j] and set(rows[j + 1]) == {"="}]
            assert heads[n - 1] == task.answer
        else:  # owner
            line = _quoted(task.question)
            holders = [n for n, text in docs.items() if line in text]
            assert len(holders) == 1
            tree = ast.parse(docs[holders[0]])
            owners = {
                node.name
                for node in ast.walk(tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and line in (ast.get_docstring(node, clean=False) or "")
            }
            assert owners == {task.answer}
    assert kinds == set(documents.KINDS[split])


def test_documents_splits_read_different_corpora() -> None:
    dev = {d.title for d in documents.corpus("dev")}
    test = {d.title for d in documents.corpus("test")}
    assert not (dev & test)
    assert any(t.startswith("reference/") for t in dev) and not any(t.startswith("reference/") for t in test)
    assert sum(len(d.text) for d in documents.corpus("test")) > 3_000_000
    big = generate(TaskRef("documents", "dev", 1024 * 1024, 0))
    assert big.meta["chars"] > 3_500_000  # a 1m task is near its length


# -- repo -------------------------------------------------------------------------------------


def _function(tree: ast.Module, qualname: str) -> ast.FunctionDef:
    scope: list[ast.stmt] = tree.body
    *outer, name = qualname.split(".")
    for cls in outer:
        scope = next(n for n in scope if isinstance(n, ast.ClassDef) and n.name == cls).body
    return next(n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name)


def _value_of(files: dict[str, str], path: str, name: str, cls: str | None = None) -> object:
    """The literal a module (or class body) assigns to a name, evaluated."""
    tree = ast.parse(files[path])
    body = tree.body
    if cls:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == cls).body
    (node,) = [
        s.value
        for s in body
        if isinstance(s, ast.Assign) and [getattr(t, "id", None) for t in s.targets] == [name]
    ]
    return eval(compile(ast.Expression(node), path, "eval"), {"__builtins__": {}})  # literals and arithmetic


@pytest.mark.parametrize("split", ["dev", "test"])
def test_repo_answers_are_read_from_the_code(split: str) -> None:
    kinds, hops = set(), set()
    for i in range(10):
        task = generate(TaskRef("repo", split, 65536, i))
        files, meta = task.context, task.meta
        path, subject = meta["path"], meta["subject"]
        assert f"`{path}`" in task.question and f"`{subject}`" in task.question
        tree = ast.parse(files[path])
        kind = meta["question_type"]
        kinds.add(kind)
        if kind in ("default", "compare"):
            hops.add(meta["hop"])
            fn = _function(tree, subject)
            name = meta["name"]
            if kind == "default":
                args = fn.args
                positional = [a.arg for a in args.posonlyargs + args.args]
                tail = positional[len(positional) - len(args.defaults) :]
                defaults = dict(zip(tail, args.defaults, strict=True))
                defaults.update(
                    {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d}
                )
                assert ast.unparse(defaults[meta["parameter"]]) == name
            else:
                compared = {
                    ast.unparse(x)
                    for node in ast.walk(fn)
                    if isinstance(node, ast.Compare)
                    for x in [node.left, *node.comparators]
                }
                assert name in compared
            cls = subject.split(".")[0] if meta["hop"] == "class body" else None
            assert _value_of(files, meta["defined_in"], name.rpartition(".")[2], cls) == task.answer
            assert str(task.answer) not in task.question
        elif kind == "base":
            (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == subject]
            (base,) = cls.bases
            assert ast.unparse(base).rpartition(".")[2] == task.answer
        elif kind == "params":
            a = _function(tree, subject).args
            assert len(a.posonlyargs + a.args + a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg) == task.answer
        else:  # line
            line = files[path].splitlines()[task.answer - 1]
            assert re.match(rf"\s*(async )?def {subject.split('.')[-1]}\(", line)
    assert kinds == set(repo.KINDS)
    assert hops >= {"same file"}


def test_repo_splits_read_different_packages() -> None:
    dev = {p for _, unit in repo.stdlib_files("dev") for p, _ in unit}
    test = {p for _, unit in repo.stdlib_files("test") for p, _ in unit}
    assert not (dev & test)
    assert "email/utils.py" in dev and "json/decoder.py" in dev
    assert "asyncio/tasks.py" in test and "unittest/case.py" in test
    assert not any(p.startswith(("test/", "tkinter/", "idlelib/")) or "/test/" in p for p in dev | test)


def test_repo_hops_reach_other_files() -> None:
    hops = Counter(generate(TaskRef("repo", "test", 262144, i)).meta.get("hop") for i in range(0, 40, 5))
    assert hops["other file"] >= 1


# -- frames -----------------------------------------------------------------------------------


def _recompute(task) -> object:
    df, p, kind = task.context, task.meta["params"], task.meta["question_type"]
    if task.split == "dev":
        at = df["station"] == p.get("station")
        if kind == "count":
            return int(at.sum())
        if kind == "count2":
            return int((at & (df["rain_mm"] > p["rain_above"])).sum())
        if kind == "aggregate":
            rows = df[at & (df["observed_at"].dt.month == p["month"])][p["column"]]
            return round(float(rows.mean() if p["op"] == "mean" else rows.sum()), 2)
        if kind == "top":
            month = df[df["observed_at"].dt.month == p["month"]]
            return month.groupby("station", observed=True)["rain_mm"].sum().idxmax()
        rows = df[at & df["frost"] & (df["wind_kmh"] > p["wind_above"])]
        return rows["observed_at"].dt.date.nunique()
    at = df["branch"] == p.get("branch")
    if kind == "count":
        return int((df["format"] == p["format"]).sum())
    if kind == "count2":
        return int((at & (df["days_out"] >= p["days_at_least"])).sum())
    if kind == "aggregate":
        if p["op"] == "sum":
            return round(float(df[at & df["renewed"]]["late_fee"].sum()), 2)
        return round(float(df[at & (df["format"] == p["format"])]["days_out"].mean()), 2)
    if kind == "top":
        month = df[df["loan_date"].dt.month == p["month"]]
        return month.groupby("branch", observed=True)["late_fee"].sum().idxmax()
    return df[at & (df["format"] == p["format"]) & df["renewed"]]["borrower_id"].nunique()


@pytest.mark.parametrize("split", ["dev", "test"])
def test_frames_answers_match_pandas(split: str) -> None:
    kinds, containers = set(), set()
    for i in range(14):
        task = generate(TaskRef("frames", split, SMALL, i))
        kind = task.meta["question_type"]
        kinds.add(kind)
        containers.add(task.meta["container"])
        for value in task.meta["params"].values():
            if not isinstance(value, bool) and kind not in ("top", "aggregate"):
                assert str(value) in task.question
        data = task.context
        if isinstance(data, pd.DataFrame):
            assert len(data) == task.meta["rows"] == frames.rows_for(task.ref.chars)
            types = pd.api.types
            for check in (
                types.is_datetime64_any_dtype,
                types.is_bool_dtype,
                types.is_float_dtype,
                types.is_integer_dtype,
                types.is_string_dtype,
            ):
                assert any(check(t) for t in data.dtypes), check
            assert any(isinstance(t, pd.CategoricalDtype) for t in data.dtypes)
            assert _recompute(task) == task.answer
            assert task.answer not in (0, 0.0)
        else:
            values = np.asarray(data)
            if kind == "exceed":
                assert int((values > task.meta["params"]["above"]).sum()) == task.answer
            else:
                assert (values == values.max()).sum() == 1
                expected = (
                    data.index[values.argmax()] if isinstance(data, pd.Series) else int(values.argmax())
                )
                assert expected == task.answer
    assert kinds == set(frames.KINDS) and containers == {"DataFrame", "ndarray", "Series"}


def test_frames_rows_follow_the_length() -> None:
    assert frames.rows_for(4 * 1024) == 3000
    assert frames.rows_for(4 * 262144) == 262144 * 4 // 60
    assert frames.rows_for(4 * 4 * 1024 * 1024) == 100_000


# -- chain ------------------------------------------------------------------------------------


def _holding(docs: list[str], word: str) -> list[int]:
    pattern = re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])")
    return [i for i, d in enumerate(docs) if pattern.search(d)]


@pytest.mark.parametrize("split", ["dev", "test"])
def test_chain_needs_two_far_apart_documents(split: str) -> None:
    for i in range(6):
        task = generate(TaskRef("chain", split, SMALL, i))
        docs = task.context if isinstance(task.context, list) else list(task.context.values())
        item, record = task.meta["item"], task.meta["record"]
        assert item in task.question and record not in task.question
        assert task.question in {q.format(item=item) for q in chain.DOMAINS[split].questions}
        (link,) = _holding(docs, item)
        assert record in docs[link]
        held = _holding(docs, record)
        assert len(held) == 2 and link in held
        (value,) = [j for j in held if j != link]
        assert task.answer in docs[value]
        assert abs(value - link) >= len(docs) // 4
        assert task.answer.lower() not in record.lower() and task.answer.lower() not in item.lower()
        assert score("contains", record, task.answer) == 0.0  # naming the record is no answer
        assert task.meta["near_records"]
        for near in task.meta["near_records"]:
            assert near != record
            (own,) = [
                j for j in _holding(docs, near) if not re.search(r"\b(parcel|specimen)\b", docs[j], re.I)
            ]
            assert task.answer not in docs[own]
        if split == "dev":
            first, last = record.split()
            assert any(n.split()[0] == first or n.split()[1] == last for n in task.meta["near_records"])
        assert task.meta["chars"] > 0.8 * SMALL * 4


# -- meaning ----------------------------------------------------------------------------------


def _template_topic(split: str) -> list[tuple[re.Pattern, str]]:
    out = []
    for topic, templates in meaning.TOPICS[split].items():
        for t in templates:
            out.append((re.compile(re.sub(r"\\\{\w+\\\}", ".+?", re.escape(t))), topic))
    return out


@pytest.mark.parametrize("split", ["dev", "test"])
def test_meaning_counts_match_the_notes(split: str) -> None:
    patterns = _template_topic(split)
    for i in range(4):
        task = generate(TaskRef("meaning", split, SMALL, i))
        if isinstance(task.context, str):
            notes = [
                re.sub(r"^(\S+ \| note \d+ \| |\[#\d+\] \S+: )", "", x) for x in task.context.splitlines()
            ]
        else:
            notes = task.context
        assert len(notes) == task.meta["notes"] == meaning.items_for(task.length)
        found = Counter()
        for text in notes:
            topics = {topic for pattern, topic in patterns if pattern.match(text)}
            assert len(topics) == 1, text  # every note reads as one topic
            found[topics.pop()] += 1
        assert dict(found) == {k: v for k, v in task.meta["counts"].items() if v}
        assert task.answer == found[task.meta["topic"]]
        names = {"finance": "personal finance", "repairs": "home repairs"}
        assert names.get(task.meta["topic"], task.meta["topic"]) in task.question
        labels = r"\b(travel|cook|garden|financ|health|repair|pets?\b|music|sport)"
        assert sum(bool(re.search(labels, n, re.I)) for n in notes) <= 0.05 * len(notes)


def test_meaning_splits_share_no_topic_and_the_count_grows_with_length() -> None:
    assert not set(meaning.TOPICS["dev"]) & set(meaning.TOPICS["test"])
    assert [meaning.items_for(n) for n in (1024, 50_000, 1024 * 1024)] == [300, 500, 1000]


# -- the approx scorer ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected", "want"),
    [
        ("255", 250, 1.0),  # 2% of 250 is 5
        ("245 notes", 250, 1.0),
        ("256", 250, 0.0),
        ("244", 250, 0.0),
        ("11", 10, 1.0),  # below 50, one off is still right
        ("9", 10, 1.0),
        ("12", 10, 0.0),
        ("1", 0, 1.0),
        ("2", 0, 0.0),
        ("1,020", 1000, 1.0),
        ("1,021", 1000, 0.0),
        ("no idea", 10, 0.0),
    ],
)
def test_approx_allows_two_percent_and_at_least_one(answer: str, expected: int, want: float) -> None:
    assert score("approx", answer, expected) == want


def test_approx_of_a_missing_answer_is_zero() -> None:
    assert score("approx", None, 10) == 0.0
