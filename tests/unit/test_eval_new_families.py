"""The task families of kinds notebook users hold (issue 33): logs, api, workbook, threads, configs
and series, checked against the context itself.

Every expected answer is found again here from the context as a user would read it (the log
parsed with a regular expression, the pages walked as dicts, the sheets joined with pandas, the
config files read with configparser, yaml and tomllib), not from the generator's bookkeeping;
``meta["params"]`` only says where to look.
"""

from __future__ import annotations

import configparser
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import datetime, timezone

import pandas as pd
import pytest

from rlm_kernel.eval.scoring import score
from rlm_kernel.eval.tasks import TaskRef, as_text, family_names, generate

NEW = ("logs", "api", "workbook", "threads", "configs", "series")
SIZE = 8192  # tokens, the harness's default length: about 32,000 characters
N = 12  # tasks per family and split in the checks below: every kind, and both containers


def _tasks(family: str, split: str, n: int = N, length: int = SIZE):
    return [generate(TaskRef(family, split, length, i)) for i in range(n)]


def _same(a: object, b: object) -> bool:
    if isinstance(a, dict) and a and all(isinstance(v, pd.DataFrame) for v in a.values()):
        return a.keys() == b.keys() and all(a[k].equals(b[k]) for k in a)
    return as_text(a) == as_text(b)


def _wrong(answer: object) -> str:
    if isinstance(answer, (int, float)):
        return str(round(answer * 1.5 + 7, 2))
    return "something else entirely"


@pytest.mark.parametrize("family", NEW)
def test_the_families_are_registered_and_listed(family: str) -> None:
    assert family in family_names()
    out = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.eval", "list"], capture_output=True, text=True, check=True
    ).stdout
    assert re.search(rf"^{family}\s+\S", out, re.M)


def test_listing_and_the_families_but_the_workbook_need_no_pandas() -> None:
    code = (
        "import sys; sys.modules['pandas'] = None; sys.modules['numpy'] = None\n"
        "from rlm_kernel.eval.tasks import TaskRef, family_names, generate\n"
        f"assert set({NEW!r}) <= set(family_names())\n"
        "for name in ('logs', 'api', 'threads', 'configs', 'series'):\n"
        "    generate(TaskRef(name, 'dev', 2048, 0))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("family", NEW)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_a_ref_always_builds_the_same_task_and_its_answer_scores(family: str, split: str) -> None:
    for index in range(4):
        ref = TaskRef(family, split, SIZE, index)
        a, b = generate(ref), generate(ref)
        assert _same(a.context, b.context)
        assert (a.question, a.answer, a.scorer, a.meta) == (b.question, b.answer, b.scorer, b.meta)
        assert a.split == split and a.family == family and a.id == ref.id and a.ref == ref
        assert score(a.scorer, str(a.answer), a.answer) == 1.0
        assert score(a.scorer, _wrong(a.answer), a.answer) == 0.0
        if isinstance(a.answer, str):
            assert a.answer.lower() not in a.question.lower()
            assert score(a.scorer, f"`{a.answer.upper()}`", a.answer) == 1.0  # case and quotes aside
        else:
            assert a.answer not in (0, 0.0)
        assert generate(TaskRef(family, split, SIZE, index + 40)).context is not None


@pytest.mark.parametrize("family", NEW)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_tasks_serialise_as_the_harness_writes_them(family: str, split: str) -> None:
    for task in _tasks(family, split, n=4):
        row = {"task_id": task.id, "expected": task.answer, "meta": task.meta, "length": task.length}
        assert json.loads(json.dumps(row)) == row
        text = as_text(task.context)
        assert isinstance(text, str) and task.context_chars == len(text)
        if not isinstance(task.context, str) and family != "workbook":
            json.loads(text)  # a structured context is JSON as the plain model reads it


def _stems(family: str, split: str) -> set[str]:
    out = set()
    for task in _tasks(family, split):
        q = task.question
        out.add(" ".join(re.sub(r"`[^`]*`|'[^']*'|\d[\d.,]*", "#", q).split()[:4]))
    return out


def _fields(context: object) -> set[str]:
    """The names a context's data is kept under: keys, columns, paths' shapes, a log line's shape."""
    if isinstance(context, str):
        return {re.sub(r"[\w.:-]+", "w", context.splitlines()[0])[:12]}
    if isinstance(context, dict) and all(isinstance(v, pd.DataFrame) for v in context.values()):
        return set(context) | {c for df in context.values() for c in df.columns}
    if isinstance(context, dict) and all(isinstance(v, str) for v in context.values()):
        return {re.sub(r"/[^/]+/", "/*/", p) for p in context}
    if isinstance(context, dict):
        return set(context)
    first = context[0]
    if isinstance(first, dict):
        return set(first) | {k for v in first.values() if isinstance(v, (dict, list)) for k in _keys(v)}
    return {re.sub(r"\d", "#", first[0])}  # pairs: the timestamps' shape


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


_GENERIC = {"id", "type", "name", "page", "next"}  # what any JSON API calls these


@pytest.mark.parametrize("family", NEW)
def test_dev_and_test_differ_in_wording_fields_and_data(family: str) -> None:
    assert not (_stems(family, "dev") & _stems(family, "test"))
    for i in range(2):  # both containers where a family has two
        dev, test = generate(TaskRef(family, "dev", SIZE, i)), generate(TaskRef(family, "test", SIZE, i))
        shared = _fields(dev.context) & _fields(test.context)
        assert shared <= (_GENERIC if family == "api" else set()), shared
        assert as_text(dev.context) != as_text(test.context)


@pytest.mark.parametrize("family", NEW)
def test_sizes_follow_the_length(family: str) -> None:
    small = [t.context_chars for t in _tasks(family, "test", n=2)]
    large = [t.context_chars for t in _tasks(family, "test", n=2, length=4 * SIZE)]
    for chars in small:  # near the length asked for, at four characters a token
        assert 0.55 * SIZE * 4 <= chars <= 1.4 * SIZE * 4, chars
    assert all(big > 3 * little for big, little in zip(large, small, strict=True))


def _kinds(family: str, split: str) -> set[str]:
    return {t.meta["question_type"] for t in _tasks(family, split)}


@pytest.mark.parametrize("family", NEW)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_every_kind_of_question_is_asked(family: str, split: str) -> None:
    module = __import__(f"rlm_kernel.eval.{family}", fromlist=["KINDS"])
    assert _kinds(family, split) == set(module.KINDS)


# -- logs -------------------------------------------------------------------------------------

_DEV_LINE = re.compile(
    r"^(?P<ts>\S+Z) (?P<level>[A-Z]+)\s+(?P<service>\S+) \[req=(?P<id>[0-9a-f]+)\](?: code=(?P<code>\S+))? "
)
_TEST_LINE = re.compile(
    r"^(?P<ts>\w{3} \d\d \d\d:\d\d:\d\d) (?P<host>\S+) (?P<service>[\w-]+)\[\d+\]: "
    r"level=(?P<level>\w+) trace=(?P<id>0x[0-9a-f]+)(?: err=(?P<code>\S+))? msg="
)


def _log(task) -> list[dict]:
    pattern = _DEV_LINE if task.split == "dev" else _TEST_LINE
    rows = []
    for line in task.context.splitlines():
        m = pattern.match(line)
        assert m, line
        row = m.groupdict()
        if task.split == "dev":
            row["when"] = datetime.strptime(row["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
            row["level"] = {"WARN": "warning"}.get(row["level"], row["level"].lower())
        else:
            row["when"] = datetime.strptime(f"2025 {row['ts']}", "%Y %b %d %H:%M:%S")
        rows.append(row)
    return rows


@pytest.mark.parametrize("split", ["dev", "test"])
def test_logs_answers_are_counted_from_the_lines(split: str) -> None:
    for task in _tasks("logs", split):
        rows, kind, p = _log(task), task.meta["question_type"], task.meta["params"]
        assert rows == sorted(rows, key=lambda r: r["when"]) and len(rows) == task.meta["lines"]
        errors = [r for r in rows if r["level"] == "error"]
        assert all(r["code"] for r in errors) and not any(r["code"] for r in rows if r["level"] != "error")
        if kind == "window":
            start, end = datetime.fromisoformat(p["start"]), datetime.fromisoformat(p["end"])
            assert f"{start:%H:%M}" in task.question and f"{end:%H:%M}" in task.question
            want = sum(r["service"] == p["service"] and start <= r["when"] < end for r in errors)
        elif kind == "first":
            assert p["code"] in task.question
            want = next(r["id"] for r in rows if r["code"] == p["code"])
            assert sum(r["id"] == want for r in rows) == 1
        elif kind == "top":
            field = "service" if split == "dev" else "host"
            (want, a), (_, b) = Counter(r[field] for r in rows if r["level"] == "warning").most_common(2)
            assert a > b
        else:
            assert p["service"] in task.question
            want = len({r["code"] for r in errors if r["service"] == p["service"]})
        assert task.answer == want, task.question


# -- api --------------------------------------------------------------------------------------


@pytest.mark.parametrize("split", ["dev", "test"])
def test_api_answers_are_found_by_walking_the_pages(split: str) -> None:
    for task in _tasks("api", split):
        pages, kind, p = task.context, task.meta["question_type"], task.meta["params"]
        if split == "dev":
            items = [x for page in pages for x in page["items"]]
            assert len(items) == pages[0]["total_count"] and pages[-1]["next"] is None
            if kind == "deep":
                (item,) = [x for x in items if x["full_name"] == p["full_name"]]
                want = item["stats"][p["field"]]
            elif kind == "count":
                want = sum(
                    x["license"] is not None and x["license"]["spdx_id"] == p["spdx_id"] and not x["archived"]
                    for x in items
                )
            elif kind == "sum":
                want = sum(x["stats"]["stars"] for x in items if p["topic"] in x["topics"])
            else:
                stars = Counter()
                for x in items:
                    stars[x["owner"]["login"]] += x["stats"]["stars"]
                (want, a), (_, b) = stars.most_common(2)
                assert a > b
        else:
            items = [x for page in pages for x in page["data"]]
            people = {u["id"]: u["attributes"]["name"] for page in pages for u in page["included"]}
            assert pages[-1]["links"]["next"] is None
            if kind == "deep":
                (item,) = [x for x in items if x["attributes"]["display_name"] == p["display_name"]]
                want = item["attributes"]["billing"]["address"]["city"]
            elif kind == "count":
                want = sum(
                    x["attributes"]["tier"] == p["tier"]
                    and x["attributes"]["billing"]["currency"] == p["currency"]
                    for x in items
                )
            elif kind == "sum":
                want = sum(
                    x["attributes"]["seats"]
                    for x in items
                    if x["attributes"]["billing"]["address"]["country_code"] == p["country_code"]
                )
            else:
                mrr = Counter()
                for x in items:
                    mrr[people[x["relationships"]["account_manager"]["data"]["id"]]] += x["attributes"][
                        "mrr_cents"
                    ]
                (want, a), (_, b) = mrr.most_common(2)
                assert a > b
        assert task.answer == want, task.question


# -- workbook ---------------------------------------------------------------------------------


def _top(totals: pd.Series) -> str:
    ranked = totals.sort_values(ascending=False)
    assert ranked.iloc[0] > ranked.iloc[1]
    return str(ranked.index[0])


@pytest.mark.parametrize("split", ["dev", "test"])
def test_workbook_answers_are_joined_with_pandas(split: str) -> None:
    for task in _tasks("workbook", split):
        book, kind, p = task.context, task.meta["question_type"], task.meta["params"]
        assert all(isinstance(df, pd.DataFrame) for df in book.values())
        if split == "dev":
            orders = book["Orders"].merge(book["Customers"], on="customer_id", validate="many_to_one")
            orders = orders.merge(book["Products"], on="sku", validate="many_to_one")
            assert len(orders) == len(book["Orders"])
            if kind == "lookup":
                want = book["Products"].set_index("product").loc[p["product"], "unit_price"]
            elif kind == "join_count":
                want = int((orders["city"] == p["city"]).sum())
            elif kind == "join_sum":
                mine = orders[orders["name"] == p["name"]]
                want = round(float((mine["qty"] * mine["unit_price"]).sum()), 2)
            else:
                want = _top(orders.groupby("category", observed=True)["qty"].sum())
        else:
            rows = book["timesheets"].merge(book["staff"], on="emp_no", validate="many_to_one")
            rows = rows.merge(book["departments"], on="dept", validate="many_to_one")
            assert len(rows) == len(book["timesheets"])
            if kind == "lookup":
                want = book["staff"].set_index("full_name").loc[p["full_name"], "grade"]
            elif kind == "join_count":
                want = int((rows["site"] == p["site"]).sum())
            elif kind == "join_sum":
                want = float(
                    rows.loc[
                        (rows["full_name"] == p["full_name"]) & (rows["project"] == p["project"]), "hours"
                    ].sum()
                )
            else:
                want = _top(rows.groupby("dept_name")["hours"].sum())
        assert task.answer == pytest.approx(want) if isinstance(want, float) else task.answer == want, (
            task.question
        )


# -- threads ----------------------------------------------------------------------------------


@pytest.mark.parametrize("split", ["dev", "test"])
def test_threads_answers_follow_the_replies(split: str) -> None:
    for task in _tasks("threads", split):
        kind, p = task.meta["question_type"], task.meta["params"]
        if split == "dev":
            msgs = [
                {
                    "id": m["id"],
                    "who": m["user"],
                    "where": m["channel"],
                    "text": m["text"],
                    "parent": m["reply_to"],
                }
                for m in task.context
            ]
        else:
            msgs = [
                {
                    "id": m["message_id"],
                    "who": m["from"].split(" <")[0],
                    "where": m["subject"].removeprefix("Re: "),
                    "text": m["body"],
                    "parent": m["in_reply_to"],
                    "when": datetime.strptime(m["date"], "%a, %d %b %Y %H:%M:%S %z"),
                }
                for m in task.context
            ]
            assert [m["when"] for m in msgs] == sorted(m["when"] for m in msgs)
        by_id = {m["id"]: m for m in msgs}
        assert len(by_id) == len(msgs) and all(m["parent"] in by_id for m in msgs if m["parent"])
        if kind == "replies":
            counts = Counter(
                m["who"] for m in msgs if m["parent"] and by_id[m["parent"]]["who"] == p["person"]
            )
            top = counts.most_common(2)
            assert len(top) == 1 or top[0][1] > top[1][1]
            want = top[0][0]
        elif kind == "mention":
            words = [set(re.findall(r"[A-Z]+-\d+", m["text"])) for m in msgs]
            want = sum(p["ref"] in w for w in words)
            near = {r for w in words for r in w if r != p["ref"] and r[:4] == p["ref"][:4]}
            assert near  # look-alike numbers are there too
        elif kind == "count":
            where = p.get("channel") or p["thread"]
            want = sum(m["who"] == p["person"] and m["where"] == where for m in msgs)
        else:
            target = p.get("id") or p["message_id"]
            want = next(m["who"] for m in msgs if m["parent"] == target)
        assert task.answer == want, task.question


# -- configs ----------------------------------------------------------------------------------


def _env(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


@pytest.mark.parametrize("split", ["dev", "test"])
def test_configs_answers_are_read_with_the_formats_parsers(split: str) -> None:
    yaml = pytest.importorskip("yaml")
    tomllib = pytest.importorskip("tomllib")
    for task in _tasks("configs", split):
        files, kind, p = task.context, task.meta["question_type"], task.meta["params"]
        parsed = {}
        for path, text in files.items():
            if path.endswith(".ini"):
                ini = configparser.ConfigParser()
                ini.read_string(text)
                parsed[path] = ini
            elif path.endswith(".yaml"):
                parsed[path] = yaml.safe_load(text)
            elif path.endswith(".toml"):
                parsed[path] = tomllib.loads(text)
            else:
                assert path.endswith("/.env")
                parsed[path] = _env(text)
        service = lambda path: path.split("/")[1]  # noqa: E731
        if kind == "port":
            if split == "dev":
                (want,) = [
                    service(f)
                    for f, c in parsed.items()
                    if f.endswith(".ini") and c.getint("server", "port") == p["port"]
                ]
            else:
                (want,) = [
                    service(f)
                    for f, c in parsed.items()
                    if f.endswith(".toml") and int(c["http"]["listen"].rsplit(":", 1)[1]) == p["port"]
                ]
        elif kind == "value":
            c = parsed[p["path"]]
            if p["path"].endswith(".ini"):
                want = c.getint("database", p["key"])
            elif p["path"].endswith(".yaml"):
                want = c["limits"][p["key"]]
            elif p["path"].endswith(".toml"):
                want = c["telemetry"][p["key"]]
            else:
                want = int(c[p["key"]])
        elif kind == "count":
            if split == "dev":
                want = sum(
                    c.get("logging", "level") == p["level"] for f, c in parsed.items() if f.endswith(".ini")
                )
            else:
                want = sum(
                    c["telemetry"]["enabled"] is True for f, c in parsed.items() if f.endswith(".toml")
                )
        elif split == "dev":
            (want,) = [f for f, c in parsed.items() if f.endswith(".yaml") and p["flag"] in c["flags"]]
        else:
            (want,) = [
                f
                for f, c in parsed.items()
                if f.endswith(".env") and p["flag"] in c["FEATURE_FLAGS"].split(",")
            ]
        assert task.answer == want, task.question


# -- series -----------------------------------------------------------------------------------


def _points(task) -> list[tuple[datetime, float]]:
    ctx = task.context
    if isinstance(ctx, dict):
        if task.split == "dev":
            return [(datetime.fromisoformat(t), v) for t, v in zip(ctx["timestamp"], ctx["kwh"], strict=True)]
        return [
            (datetime.fromtimestamp(t, timezone.utc).replace(tzinfo=None), v)
            for t, v in zip(ctx["time"], ctx["pm25"], strict=True)
        ]
    return [(datetime.fromisoformat(t), v) for t, v in ctx]


@pytest.mark.parametrize("split", ["dev", "test"])
def test_series_answers_are_computed_from_the_readings(split: str) -> None:
    containers = set()
    for task in _tasks("series", split):
        points, kind, p = _points(task), task.meta["question_type"], task.meta["params"]
        containers.add(task.meta["container"])
        assert [t for t, _ in points] == sorted(t for t, _ in points) and len(points) == task.meta["readings"]
        values = [v for _, v in points]
        limit = p.get("threshold", 0)
        above = (lambda v, t=limit: v > t) if split == "dev" else (lambda v, t=limit: v >= t)
        days = defaultdict(list)
        for t, v in points:
            days[t.date().isoformat()].append(v)
        if kind == "max_day":
            stat = {d: sum(vs) if split == "dev" else sum(vs) / len(vs) for d, vs in days.items()}
            want = max(stat, key=stat.get)
        elif kind == "above":
            assert str(p["threshold"]) in task.question
            want = sum(map(above, values))
        elif kind == "day_stat":
            assert f"{datetime.fromisoformat(p['day']):%d %B %Y}" in task.question
            want = round(sum(days[p["day"]]), 2) if split == "dev" else max(days[p["day"]])
        else:
            want = best = 0
            for v in values:
                best = best + 1 if above(v) else 0
                want = max(want, best)
        assert task.answer == pytest.approx(want) if isinstance(want, float) else task.answer == want, (
            task.question
        )
    assert containers == {"dict of lists", "list of pairs"}
