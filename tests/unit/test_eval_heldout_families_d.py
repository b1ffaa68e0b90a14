"""The fourth set of held-out task families, checked against the context itself: mailbox, gitlog,
sqldump and lockfile (what every held-out family must be is checked in
test_eval_heldout_families.py).

Every expected answer is found again here from the context as a user would read it (the mbox split
into messages and read with the standard library's ``email`` parser, the mail API's messages walked
as dicts; the code host's commits walked as dicts and ``git log --numstat`` parsed with regular
expressions; both SQL dumps loaded into SQLite and asked in SQL; ``poetry.lock`` read with
``tomllib`` and ``package-lock.json`` walked as a dict), not from the generator's bookkeeping;
``meta["params"]`` only says where to look.
"""

from __future__ import annotations

import email
import re
import sqlite3
from collections import Counter
from datetime import date, datetime
from email.utils import parseaddr, parsedate_to_datetime

import pytest
from heldout_tasks import SIZE
from heldout_tasks import tasks as _tasks

from rlm_kernel.eval.tasks import TaskRef, generate

FOURTH = ("mailbox", "gitlog", "sqldump", "lockfile")


_CONTAINERS = {
    "mailbox": (str, list),
    "gitlog": (list, str),
    "sqldump": (str, dict),
    "lockfile": (str, dict),
}


@pytest.mark.parametrize("family", FOURTH)
def test_containers_per_split(family: str) -> None:
    dev, test = _CONTAINERS[family]
    assert all(isinstance(t.context, dev) for t in _tasks(family, "dev"))
    assert all(isinstance(t.context, test) for t in _tasks(family, "test"))
    if family == "sqldump":  # a dict of file name -> SQL text
        context = _tasks(family, "test")[0].context
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in context.items())
    if family in ("mailbox", "gitlog"):
        lists = [t.context for t in _tasks(family, "test" if family == "mailbox" else "dev")]
        assert all(isinstance(item, dict) for ctx in lists for item in ctx)


@pytest.mark.parametrize("family", FOURTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_what_they_hold_grows_with_the_length(family: str, split: str) -> None:
    small = generate(TaskRef(family, split, SIZE // 4, 0))
    big = generate(TaskRef(family, split, 8 * SIZE, 0))
    assert 0.5 * SIZE <= small.context_chars <= 1.5 * SIZE, small.context_chars
    key = {"mailbox": "messages", "gitlog": "commits", "sqldump": "rows", "lockfile": "packages"}[family]
    assert small.meta[key] < _tasks(family, split)[0].meta[key] < big.meta[key]


def _check(task, want: object) -> None:
    if isinstance(want, float):
        assert task.answer == pytest.approx(want, abs=1e-6), task.question
    else:
        assert task.answer == want, task.question


def _leader(counts: Counter) -> object:
    (first, n1), (_, n2) = [*counts.most_common(2), (None, -1)][:2]
    assert n1 > n2  # a clear leader
    return first


# -- mailbox ----------------------------------------------------------------------------------

_FROM_LINE = re.compile(r"^From \S+ \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\n", re.M)


def _mbox_messages(text: str) -> list[dict]:
    out = []
    for chunk in _FROM_LINE.split(text)[1:]:
        m = email.message_from_string(chunk)
        out.append(
            {
                "from": parseaddr(m["From"])[1],
                "when": parsedate_to_datetime(m["Date"]),  # the sender's local time, as written
                "subject": m["Subject"],
                "id": m["Message-ID"],
                "parent": m["In-Reply-To"],
            }
        )
    by_id = {m["id"]: m for m in out}
    assert len(by_id) == len(out)
    for m in out:
        root = m
        while root["parent"]:
            root = by_id[root["parent"]]
        m["thread"] = root["id"]
    return out


def _graph_messages(items: list[dict]) -> list[dict]:
    out = [
        {
            "from": i["from"]["emailAddress"]["address"],
            "when": datetime.fromisoformat(i["receivedDateTime"].replace("Z", "+00:00")),
            "subject": i["subject"],
            "id": i["id"],
            "thread": i["conversationId"],
            "tags": i["categories"],
        }
        for i in items
    ]
    assert [m["when"] for m in out] == sorted((m["when"] for m in out), reverse=True)  # newest first
    return out


def _mailbox_answer(task) -> object:
    kind, p, dev = task.meta["question_type"], task.meta["params"], task.split == "dev"
    msgs = _mbox_messages(task.context) if dev else _graph_messages(task.context)
    if kind == "sent":
        if dev:
            return sum(m["from"] == p["address"] and f"{m['when']:%Y-%m}" == p["month"] for m in msgs)
        first, last = date.fromisoformat(p["from"]), date.fromisoformat(p["to"])
        return sum(m["from"] == p["address"] and first <= m["when"].date() <= last for m in msgs)
    if kind == "busiest":
        if dev:
            return _leader(Counter(m["from"] for m in msgs if f"[{p['tag']}]" in m["subject"]))
        return _leader(Counter(m["from"] for m in msgs if p["category"] in m["tags"]))
    if dev and kind == "replied":
        (root,) = [m for m in msgs if m["id"] == p["message_id"]]
    else:
        (root,) = [m for m in msgs if m["subject"] == p["subject"]]  # the first message: no "Re:"
    thread = sorted((m for m in msgs if m["thread"] == root["thread"]), key=lambda m: m["when"])
    assert thread[0] is root
    if kind == "thread":
        return len(thread)
    return thread[1]["from"]


# -- gitlog -----------------------------------------------------------------------------------


def _github_commits(items: list[dict]) -> list[dict]:
    out = [
        {
            "sha": c["sha"],
            "author": c["commit"]["author"]["name"],
            "when": datetime.fromisoformat(c["commit"]["author"]["date"].replace("Z", "+00:00")),
            "files": [(f["filename"], f["additions"]) for f in c["files"]],
            "merge": len(c["parents"]) > 1,
        }
        for c in items
    ]
    for c, item in zip(out, items, strict=True):
        assert item["stats"]["additions"] == sum(a for _, a in c["files"])
    return out


def _numstat_commits(text: str) -> list[dict]:
    out = []
    for block in re.split(r"^(?=commit [0-9a-f]{40}$)", text, flags=re.M):
        if not block.strip():
            continue
        sha = re.match(r"commit ([0-9a-f]{40})", block).group(1)
        author = re.search(r"^Author: (.*?) <", block, re.M).group(1)
        when = datetime.strptime(
            re.search(r"^Date:\s+(.*)$", block, re.M).group(1), "%a %b %d %H:%M:%S %Y %z"
        )
        files = [
            (path, 0 if added == "-" else int(added))
            for added, _, path in re.findall(r"^(\d+|-)\t(\d+|-)\t(.+)$", block, re.M)
        ]
        out.append(
            {"sha": sha, "author": author, "when": when, "files": files, "merge": "\nMerge: " in block}
        )
    return out


def _gitlog_answer(task) -> object:
    kind, p, dev = task.meta["question_type"], task.meta["params"], task.split == "dev"
    commits = _github_commits(task.context) if dev else _numstat_commits(task.context)
    assert [c["when"] for c in commits] == sorted((c["when"] for c in commits), reverse=True)  # newest first
    assert all(not c["files"] for c in commits if c["merge"])
    if kind == "touched":
        return sum(any(f == p["path"] for f, _ in c["files"]) for c in commits)
    if kind == "added":
        return sum(
            a
            for c in commits
            if c["author"] == p["author"]
            for f, a in c["files"]
            if f.startswith(p["directory"])
        )
    if kind == "top":
        return _leader(
            Counter(c["author"] for c in commits if any(f.startswith(p["directory"]) for f, _ in c["files"]))
        )
    first = min((c for c in commits if any(f == p["path"] for f, _ in c["files"])), key=lambda c: c["when"])
    return first["sha"] if dev else first["sha"][:7]


# -- sqldump ----------------------------------------------------------------------------------


def _sqlite_from_mysql(text: str) -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    for table, body in re.findall(r"^CREATE TABLE `(\w+)` \((.*?)\n\) ENGINE", text, re.M | re.S):
        columns = re.findall(r"^\s+`(\w+)` ", body, re.M)
        con.execute(f"CREATE TABLE {table} ({', '.join(columns)})")
    statements = re.findall(r"^INSERT INTO `(\w+)` VALUES (.*);$", text, re.M)
    assert any(v.count("),(") > 0 for _, v in statements)  # multi-row statements
    for table, values in statements:
        con.execute(f"INSERT INTO {table} VALUES {values.replace(chr(92) + chr(39), chr(39) * 2)}")
    return con


def _sqlite_from_pg(files: dict[str, str]) -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    con.execute("ATTACH ':memory:' AS public")
    for table, body in re.findall(
        r"^CREATE TABLE public\.(\w+) \((.*?)\n\);", files["schema.sql"], re.M | re.S
    ):
        columns = re.findall(r"^\s+(\w+) ", body, re.M)
        con.execute(f"CREATE TABLE public.{table} ({', '.join(columns)})")
    for name, text in files.items():
        for statement in re.findall(r"^INSERT INTO .*;$", text, re.M):
            assert name == "schema.sql" or statement.startswith(f"INSERT INTO public.{name[:-4]} ")
            con.execute(statement)
    return con


def _sqldump_answer(task) -> object:
    kind, p, dev = task.meta["question_type"], task.meta["params"], task.split == "dev"
    if dev:
        con = _sqlite_from_mysql(task.context)
        join = "FROM orders o JOIN customers c ON c.customer_id = o.customer_id"
        if kind == "count":
            sql = f"SELECT COUNT(*) {join} WHERE c.city = ? AND o.status = ?"
            return con.execute(sql, (p["city"], p["status"])).fetchone()[0]
        if kind == "lookup":
            return con.execute(f"SELECT c.city {join} WHERE o.order_id = ?", (p["order_id"],)).fetchone()[0]
        if kind == "total":
            sql = (
                "SELECT SUM(o.quantity * p.unit_price) FROM orders o JOIN products p ON p.product_id = o.product_id "
                "WHERE p.category = ? AND substr(o.order_date, 1, 7) = ? AND o.status != 'cancelled'"
            )
            return round(con.execute(sql, (p["category"], p["month"])).fetchone()[0], 2)
        sql = (
            f"SELECT c.first_name || ' ' || c.last_name, COUNT(*) {join} "
            "WHERE substr(o.order_date, 1, 7) = ? GROUP BY c.customer_id"
        )
        return _leader(Counter(dict(con.execute(sql, (p["month"],)).fetchall())))
    con = _sqlite_from_pg(task.context)
    join = "FROM public.enrollments e JOIN public.courses c ON c.course_id = e.course_id"
    if kind == "count":
        sql = f"SELECT COUNT(*) {join} WHERE c.code = ? AND e.final_mark >= ?"
        return con.execute(sql, (p["code"], p["mark"])).fetchone()[0]
    if kind == "lookup":
        sql = (
            "SELECT s.email FROM public.enrollments e JOIN public.students s ON s.student_id = e.student_id "
            "WHERE e.enrollment_id = ?"
        )
        return con.execute(sql, (p["enrollment_id"],)).fetchone()[0]
    if kind == "total":
        sql = f"SELECT SUM(c.ects) {join} WHERE e.student_id = ? AND e.final_mark >= 40"
        return con.execute(sql, (p["student_id"],)).fetchone()[0]
    sql = f"SELECT c.code, COUNT(*) {join} WHERE e.term = ? GROUP BY c.code"
    return _leader(Counter(dict(con.execute(sql, (p["term"],)).fetchall())))


# -- lockfile ---------------------------------------------------------------------------------


def _lockfile_answer(task) -> object:
    kind, p = task.meta["question_type"], task.meta["params"]
    if task.split == "dev":
        tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
        lock = tomllib.loads(task.context)
        packages = lock["package"]
        assert len({q["name"] for q in packages}) == len(packages)
        if kind == "version":
            (version,) = [q["version"] for q in packages if q["name"] == p["name"]]
            return version
        if kind == "dependents":
            return sum(p["name"] in q.get("dependencies", {}) for q in packages)
        group = [q for q in packages if q["category"] == p["category"]]
        if kind == "count":
            return sum(len(q["files"]) >= p["files"] for q in group)
        return _leader(Counter({q["name"]: len(q.get("dependencies", {})) for q in group}))
    entries = {k: v for k, v in task.context["packages"].items() if k}  # the project's own entry aside
    if kind == "version":
        return entries[f"node_modules/{p['name']}"]["version"]
    if kind == "dependents":
        return sum(p["name"] in e.get("dependencies", {}) for e in entries.values())
    if kind == "count":
        return sum(e.get("dev", False) and e["license"] == p["license"] for e in entries.values())
    mine = {
        k.rsplit("node_modules/", 1)[1]: len(e.get("dependencies", {}))
        for k, e in entries.items()
        if not e.get("dev") and e["license"] == p["license"]
    }
    return _leader(Counter(mine))


_ANSWER = {
    "mailbox": _mailbox_answer,
    "gitlog": _gitlog_answer,
    "sqldump": _sqldump_answer,
    "lockfile": _lockfile_answer,
}


@pytest.mark.parametrize("family", FOURTH)
@pytest.mark.parametrize("split", ["dev", "test"])
def test_answers_are_read_from_the_context(family: str, split: str) -> None:
    tasks = _tasks(family, split) + _tasks(family, split, 8, SIZE // 4) + _tasks(family, split, 4, SIZE * 4)
    for task in tasks:
        _check(task, _ANSWER[family](task))


def test_the_traps_are_there() -> None:
    mbox = _tasks("mailbox", "dev")[0].context
    senders = {parseaddr(m)[1] for m in re.findall(r"^From: (.*)$", mbox, re.M)}
    assert any(a != b and b.startswith(a.split("@")[0]) for a in senders for b in senders)  # look-alikes
    assert "In-Reply-To: " in mbox and len(set(re.findall(r"^Date: .* ([+-]\d{4})$", mbox, re.M))) > 1
    items = _tasks("mailbox", "test")[0].context
    assert len({i["conversationId"] for i in items}) < len(items)  # threads
    github = [c for t in _tasks("gitlog", "dev")[:4] for c in t.context]
    assert any(len(c["parents"]) > 1 and not c["files"] for c in github)  # merges change nothing
    paths = {f["filename"] for c in github for f in c["files"]}
    assert any(a != b and b.startswith(a[:-3]) for a in paths for b in paths)  # api.py, api_client.py
    log = _tasks("gitlog", "test")[0].context
    assert re.search(r"^-\t-\t", log, re.M) and re.search(r"^Merge: ", log, re.M)
    dump = _tasks("sqldump", "dev")[0].context
    assert "\\'" in dump and "LOCK TABLES" in dump
    files = _tasks("sqldump", "test")[0].context
    assert set(files) == {"schema.sql", "students.sql", "courses.sql", "enrollments.sql"}
    assert "''" in files["students.sql"] and "NULL" in files["enrollments.sql"]
    lock = "".join(t.context for t in _tasks("lockfile", "dev")[:4])
    assert "markers = " in lock
    npm = _tasks("lockfile", "test")[0].context["packages"]
    nested = [k for k in npm if k.count("node_modules/") > 1]
    assert nested
    for k in nested:
        top = "node_modules/" + k.rsplit("node_modules/", 1)[1]
        assert npm[k]["version"] != npm[top]["version"]  # another copy at another version
