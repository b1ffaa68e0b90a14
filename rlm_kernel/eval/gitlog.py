"""Questions about a repository's history: a code host's commits as a list of dicts (``dev``) or
``git log --numstat`` output as one string (``test``).

What a notebook holds after pulling a project's recent history to see who changed what: commits
with an author, a date, a message, and the files each changed with the lines added and deleted;
merge commits that change nothing of their own, binary files without line counts, and paths that
extend another's (``api.py`` beside ``api_client.py``). Commits are added until the indented JSON
(or the text) is about the length asked for. Kinds of question:

- ``touched``: how many commits changed one file (its exact path);
- ``added``: how many lines one author added to the files under one directory, in all;
- ``top``: the author of the most commits that changed something under one directory (a clear
  leader);
- ``first``: the earliest commit in the history that changed one file: its full hash (``dev``) or
  its hash's first seven characters (``test``).

Every answer is computed from the commits the generator wrote. Score: ``exact`` (numbers as
numbers, names and hashes without case).

Splits: ``dev`` is a GitHub REST-like list of a Python library's commits, newest first (``sha``,
``commit.author.name``/``date``, ``commit.message``, ``parents``, ``stats``, ``files`` with
``filename``, ``status``, ``additions``, ``deletions``, ``changes``); ``test`` is
``git log --numstat`` text of a TypeScript web app, newest first (``commit``, ``Merge:``,
``Author:``, ``Date:`` lines, the indented message, then ``added<TAB>deleted<TAB>path`` lines with
``-`` for binary files): other containers, fields, paths, people and wording.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("touched", "added", "top", "first")

_DEV_FILES = (
    "src/tallyho/__init__.py", "src/tallyho/api.py", "src/tallyho/api_client.py", "src/tallyho/models.py",
    "src/tallyho/models_legacy.py", "src/tallyho/cli.py", "src/tallyho/config.py", "src/tallyho/io/csv.py",
    "src/tallyho/io/csv_writer.py", "src/tallyho/io/parquet.py", "src/tallyho/io/__init__.py",
    "src/tallyho/utils.py", "tests/test_api.py", "tests/test_api_client.py", "tests/test_models.py",
    "tests/io/test_csv.py", "tests/io/test_parquet.py", "tests/test_cli.py", "docs/index.md",
    "docs/usage.md", "docs/img/logo.png", "docs/img/architecture.png", "pyproject.toml", "README.md",
    "CHANGELOG.md", ".github/workflows/ci.yml",
)  # fmt: skip
_DEV_DIRS = ("src/tallyho/", "src/tallyho/io/", "tests/", "tests/io/", "docs/")
_DEV_AUTHORS = (
    ("Maya Lindqvist", "maya@lindqvist.dev"), ("Maya Lind", "mlind@users.noreply.github.com"),
    ("Daniel Osei", "dosei@tallyho.org"), ("Daniela Oseiwa", "daniela.o@gmail.com"),
    ("Ravi Kumar", "ravi.kumar@tallyho.org"), ("Ravi Kumaran", "rkumaran@outlook.com"),
    ("Emily Zhou", "emily.zhou@tallyho.org"),
    ("dependabot[bot]", "49699333+dependabot[bot]@users.noreply.github.com"),
)  # fmt: skip
_DEV_VERBS = ("Fix", "Add", "Refactor", "Speed up", "Document", "Test", "Handle", "Drop", "Support")
_DEV_OBJECTS = (
    "empty CSV files", "timezone-aware dates", "retry on 429", "the --dry-run flag", "nested models",
    "Python 3.13", "large Parquet row groups", "config from env vars", "pagination", "decimal rounding",
)  # fmt: skip

_TEST_FILES = (
    "src/components/Button.tsx", "src/components/ButtonGroup.tsx", "src/components/Modal.tsx",
    "src/components/ModalHeader.tsx", "src/pages/Checkout.tsx", "src/pages/CheckoutSuccess.tsx",
    "src/pages/Home.tsx", "src/hooks/useCart.ts", "src/hooks/useCartTotals.ts", "src/api/client.ts",
    "src/api/clientConfig.ts", "src/api/orders.ts", "src/store/cart.ts", "src/styles/theme.css",
    "src/__tests__/Button.test.tsx", "src/__tests__/useCart.test.ts", "src/__tests__/Checkout.test.tsx",
    "public/favicon.ico", "public/images/hero.webp", "package.json", "package-lock.json", "vite.config.ts",
    "tsconfig.json", "README.md",
)  # fmt: skip
_TEST_DIRS = ("src/components/", "src/pages/", "src/hooks/", "src/api/", "src/__tests__/", "src/")
_TEST_AUTHORS = (
    ("Chloé Martin", "chloe.martin@basketly.com"), ("Chloe Martins", "cmartins@basketly.com"),
    ("Kwame Mensah", "kwame@basketly.com"), ("Kwame Mensah-Bonsu", "kmb@contractor.basketly.com"),
    ("Ines Duarte", "ines.duarte@basketly.com"), ("Jakub Nowak", "jakub.nowak@basketly.com"),
    ("Jakub Nowakowski", "jnowakowski@basketly.com"), ("renovate[bot]", "bot@renovateapp.com"),
)  # fmt: skip
_TEST_VERBS = ("fix", "feat", "refactor", "chore", "test", "perf", "style")
_TEST_OBJECTS = (
    "cart badge count",
    "modal focus trap",
    "checkout validation",
    "order polling",
    "dark theme",
    "coupon input",
    "api error toasts",
    "lazy images",
    "button loading state",
    "session refresh",
)

_BINARY = (".png", ".ico", ".webp")


@dataclass
class Commit:
    sha: str
    author: int
    when: datetime  # UTC
    offset: int  # hours east of UTC, where the author was
    subject: str
    parents: list[str]
    files: list[tuple[str, int, int, str]]  # path, added, deleted, status (added lines 0 for binaries)


def _commits(split: str, seed: str, n: int) -> list[Commit]:
    """Oldest first."""
    rng = random.Random(f"{seed}/{n}")
    files = list(_DEV_FILES if split == "dev" else _TEST_FILES)
    authors = _DEV_AUTHORS if split == "dev" else _TEST_AUTHORS
    dirs = _DEV_DIRS if split == "dev" else _TEST_DIRS
    # each author keeps mostly to a directory or two
    home = {a: rng.sample(dirs, 2) for a in range(len(authors))}
    weights = [rng.randint(2, 9) for _ in authors]
    seen: set[str] = set(rng.sample(files, len(files) * 2 // 3))  # already in the repository
    when = datetime(2024, 1, 8, 9, 0) if split == "dev" else datetime(2023, 9, 4, 9, 0)
    commits: list[Commit] = []
    for _ in range(n):
        when += timedelta(minutes=rng.randint(30, 1800))
        sha = f"{rng.getrandbits(160):040x}"
        author = rng.choices(range(len(authors)), weights)[0]
        parents = [commits[-1].sha] if commits else [f"{rng.getrandbits(160):040x}"]
        if commits and rng.random() < 0.12:  # a merge: changes nothing of its own
            parents.append(f"{rng.getrandbits(160):040x}")
            pr = rng.randint(100, 999)
            branch = rng.choice(_DEV_OBJECTS if split == "dev" else _TEST_OBJECTS).replace(" ", "-").lower()
            subject = f"Merge pull request #{pr} from {authors[author][1].split('@')[0]}/{branch}"
            commits.append(Commit(sha, author, when, rng.choice((0, 1, 2, -5)), subject, parents, []))
            continue
        if split == "dev":
            subject = f"{rng.choice(_DEV_VERBS)} {rng.choice(_DEV_OBJECTS)}"
        else:
            subject = f"{rng.choice(_TEST_VERBS)}: {rng.choice(_TEST_OBJECTS)}"
        preferred = [f for f in files if any(f.startswith(d) for d in home[author])]
        k = rng.randint(1, 4)
        chosen = {
            rng.choice(preferred) if preferred and rng.random() < 0.7 else rng.choice(files) for _ in range(k)
        }
        changed = []
        for path in sorted(chosen):
            status = "modified" if path in seen else "added"
            seen.add(path)
            if path.endswith(_BINARY):
                changed.append((path, 0, 0, status))
            elif status == "added":
                changed.append((path, rng.randint(10, 220), 0, status))
            else:
                changed.append((path, rng.randint(0, 60), rng.randint(0, 40), status))
        commits.append(Commit(sha, author, when, rng.choice((0, 1, 2, -5)), subject, parents, changed))
    return commits


# -- the files ----------------------------------------------------------------------------------


def _iso(c: Commit) -> str:
    return f"{c.when:%Y-%m-%dT%H:%M:%S}Z"


def _github(commits: list[Commit]) -> list[dict]:
    out = []
    for c in reversed(commits):
        name, email = _DEV_AUTHORS[c.author]
        login = email.split("@")[0].split("+")[-1]
        adds, dels = sum(f[1] for f in c.files), sum(f[2] for f in c.files)
        body = "" if c.parents[1:] else f"\n\nSigned-off-by: {name} <{email}>"
        out.append(
            {
                "sha": c.sha,
                "commit": {
                    "author": {"name": name, "email": email, "date": _iso(c)},
                    "committer": {"name": "GitHub", "email": "noreply@github.com", "date": _iso(c)},
                    "message": c.subject + body,
                },
                "author": {"login": login, "type": "Bot" if "[bot]" in name else "User"},
                "parents": [{"sha": p} for p in c.parents],
                "stats": {"total": adds + dels, "additions": adds, "deletions": dels},
                "files": [
                    {"filename": p, "status": s, "additions": a, "deletions": d, "changes": a + d}
                    for p, a, d, s in c.files
                ],
            }
        )
    return out


def _gitlog(commits: list[Commit]) -> str:
    out = []
    for c in reversed(commits):
        name, email = _TEST_AUTHORS[c.author]
        out.append(f"commit {c.sha}")
        if len(c.parents) > 1:
            out.append(f"Merge: {c.parents[0][:7]} {c.parents[1][:7]}")
        sign = "+" if c.offset >= 0 else "-"
        out += [
            f"Author: {name} <{email}>",
            f"Date:   {c.when + timedelta(hours=c.offset):%a %b %d %H:%M:%S %Y} {sign}{abs(c.offset):02d}00",
            "",
        ]
        out += [f"    {c.subject}", ""]
        if c.files:
            for p, a, d, _ in c.files:
                out.append(f"-\t-\t{p}" if p.endswith(_BINARY) else f"{a}\t{d}\t{p}")
            out.append("")
    return "\n".join(out)


def _fit(split: str, seed: str, chars: int) -> tuple[list[Commit], object]:
    per = 720 if split == "dev" else 230
    n = max(8, chars // per)
    for _ in range(6):
        commits = _commits(split, seed, n)
        context = _github(commits) if split == "dev" else _gitlog(commits)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(8, round(n * chars / size))
    return commits, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _paths(commits: list[Commit]) -> list[str]:
    return sorted({f[0] for c in commits for f in c.files})


def _author(split: str, a: int) -> str:
    return (_DEV_AUTHORS if split == "dev" else _TEST_AUTHORS)[a][0]


def _ask_touched(split: str, rng: random.Random, commits: list[Commit]) -> _Asked:
    path = rng.choice(_paths(commits))
    n = sum(any(f[0] == path for f in c.files) for c in commits)
    if split == "dev":
        return f"How many commits changed the file {path}?", n, {"path": path}
    return f"Count the commits in this log whose changes include exactly the path {path}.", n, {"path": path}


def _ask_added(split: str, rng: random.Random, commits: list[Commit]) -> _Asked:
    c = rng.choice([c for c in commits if c.files])
    directory = rng.choice(_DEV_DIRS if split == "dev" else _TEST_DIRS)
    total = sum(f[1] for x in commits if x.author == c.author for f in x.files if f[0].startswith(directory))
    name = _author(split, c.author)
    params = {"author": name, "directory": directory}
    if split == "dev":
        q = f"In all, how many lines did {name} add to files under {directory} (subdirectories included)?"
        return q, total, params
    q = f"Sum the added lines of every file below {directory} (at any depth) in commits authored by {name}."
    return q, total, params


def _ask_top(split: str, rng: random.Random, commits: list[Commit]) -> _Asked:
    directory = rng.choice(_DEV_DIRS if split == "dev" else _TEST_DIRS)
    counts: dict[int, int] = {}
    for c in commits:
        if any(f[0].startswith(directory) for f in c.files):
            counts[c.author] = counts.get(c.author, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    name = _author(split, ranked[0][0])
    if split == "dev":
        q = f"Which author (by name) made the most commits that changed at least one file under {directory}?"
        return q, name, {"directory": directory}
    q = f"Who authored the largest number of commits touching anything below {directory}? Give the name."
    return q, name, {"directory": directory}


def _ask_first(split: str, rng: random.Random, commits: list[Commit]) -> _Asked:
    path = rng.choice(_paths(commits))
    first = next(c for c in commits if any(f[0] == path for f in c.files))
    if split == "dev":
        q = f"What is the full SHA of the earliest commit in this history that changed {path}?"
        return q, first.sha, {"path": path}
    q = f"Give the first 7 characters of the hash of the oldest commit in the log that modified {path}."
    return q, first.sha[:7], {"path": path}


_ASK = {"touched": _ask_touched, "added": _ask_added, "top": _ask_top, "first": _ask_first}


@family(
    "gitlog",
    "a repository's history: commits as a list of dicts (dev) or git log --numstat text (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    commits, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    # other paths, authors and directories, then a file's commits, which is never zero
    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, commits), kind, "touched", nonzero=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="list of dicts" if ref.split == "dev" else "string (git log)",
        commits=len(commits),
    )
