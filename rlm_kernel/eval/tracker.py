"""Questions about an issue tracker's export: a Jira XML export as one string (``dev``) or a
Linear-like API's issues as a list of dicts (``test``).

What a notebook holds when someone reviews a team's backlog: issues with a key, a type or labels,
a priority, a status, an assignee, an estimate, a sprint or cycle, and when they were created and
resolved. People whose names extend another's stand beside each other. Issues are added until the
text (or the indented JSON) is about the length asked for. Kinds of question:

- ``count``: how many unresolved bugs of one priority one component holds (``dev``), or how many
  open issues of one team carry one label (``test``);
- ``points``: the story points of the issues resolved in one sprint (``dev``), or the estimate of
  one team's issues completed in one cycle (``test``);
- ``most``: who is assigned the most issues in one sprint (``dev``), or who completed the most
  issues with one label (``test``) (a clear leader);
- ``lookup``: how many days one issue took from created to resolved (``dev``), or the email of
  whoever is assigned one issue's parent (``test``).

Every answer is computed from the issues the generator wrote. Score: ``exact`` (numbers as numbers,
names and addresses without case).

Splits: ``dev`` is a Jira Cloud "XML" export of a payments project (an RSS ``channel`` of ``item``
elements with ``key``, ``type``, ``priority``, ``status``, ``resolution``, ``assignee``,
``component``, RFC 822 ``created`` and ``resolved`` dates, story points and the sprint as
``customfield`` values); ``test`` is a Linear-like GraphQL result's issue nodes (``identifier``,
``state`` with a ``type``, ``priorityLabel``, ``estimate``, ``assignee`` with ``email``, ``team``,
``cycle.number``, ``labels``, ``parent``, ISO ``createdAt`` and ``completedAt``): other
containers, fields, people and wording.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from xml.sax.saxutils import escape

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "points", "most", "lookup")

_DEV_PEOPLE = (
    "Oliver Grant", "Olivia Grant", "Sanjay Mehta", "Sanjay Mehra", "Ruth Okonkwo", "Ben Hollis",
    "Ben Hollister", "Clara Lind", "Mateo Ruiz", "Ingrid Solberg",
)  # fmt: skip
_DEV_COMPONENTS = (
    "Checkout",
    "Refunds",
    "Payouts",
    "Fraud Rules",
    "Webhooks",
    "Reconciliation",
    "Card Vault",
)
_DEV_TYPES = (("Bug", 40), ("Story", 35), ("Task", 20), ("Spike", 5))
_DEV_PRIORITIES = ("Highest", "High", "Medium", "Low", "Lowest")
_DEV_STATUS = (("To Do", 1), ("In Progress", 2), ("In Review", 2), ("Done", 3), ("Won't Do", 3))
_DEV_SUMMARIES = (
    "{c}: timeout when the acquirer responds slowly", "{c}: retry job processes the same event twice",
    "Add audit log entries to {c}", "{c} dashboard shows wrong currency for GBP merchants",
    "Migrate {c} to the new ledger API", "{c}: 500 on empty batch upload", "Document {c} error codes",
    "Rate limit {c} endpoints per merchant", "{c}: race condition on concurrent updates",
    "Alert when {c} queue depth exceeds threshold", "Spike: evaluate a new provider for {c}",
    "{c}: rounding error on three-decimal currencies", "Remove feature flag for {c} v2",
)  # fmt: skip

_TEST_PEOPLE = (
    ("Hannah Cole", "hannah.cole"), ("Hannah Coleman", "hannah.coleman"), ("Kwame Asante", "kwame"),
    ("Lucía Romero", "lucia.romero"), ("Lucia Romano", "lucia.romano"), ("Jakob Berg", "jakob"),
    ("Mei Lin", "mei.lin"), ("Mei Lindqvist", "mei.lindqvist"), ("Oscar Nilsen", "oscar"),
)  # fmt: skip
_TEST_DOMAIN = "tidepool.app"
_TEST_TEAMS = (("WEB", "Web"), ("MOB", "Mobile"), ("PLT", "Platform"), ("DAT", "Data"))
_TEST_LABELS = ("Bug", "Feature", "Improvement", "Tech debt", "Design", "Performance", "Security")
_TEST_STATES = (
    ("Backlog", "backlog", 3), ("Todo", "unstarted", 3), ("In Progress", "started", 3),
    ("In Review", "started", 2), ("Done", "completed", 9), ("Canceled", "canceled", 1),
)  # fmt: skip
_TEST_PRIORITIES = ("No priority", "Urgent", "High", "Medium", "Low")
_TEST_TITLES = (
    "Onboarding flow drops users on step {n}", "Sync fails offline after {n} retries",
    "Dark mode contrast on the {w} screen", "Add export to CSV on the {w} page", "Crash when opening {w}",
    "Slow query behind the {w} view", "Refactor the {w} store", "Push notifications for {w}",
    "Accessibility audit of {w}", "Paginate the {w} endpoint", "Flaky end-to-end test for {w}",
)  # fmt: skip
_TEST_WHAT = ("settings", "billing", "search", "profile", "inbox", "reports", "calendar", "team admin")


@dataclass
class Issue:
    key: str
    project: str  # the component (dev) or team key (test)
    kind: str  # the type (dev) or "" (test)
    labels: list[str]
    priority: str
    status: str
    done: bool  # resolved (dev) or completed (test)
    closed: bool  # resolved in any way (dev) or completed or canceled (test)
    assignee: int | None
    reporter: int
    points: int | None
    sprint: int
    created: datetime
    resolved: datetime | None
    title: str
    parent: str | None = None
    extra: dict = field(default_factory=dict)


def _issues(split: str, seed: str, n: int) -> list[Issue]:
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    people = _DEV_PEOPLE if dev else _TEST_PEOPLE
    weights = [rng.uniform(0.4, 3.0) for _ in people]
    counters: Counter = Counter()
    issues: list[Issue] = []
    start = datetime(2024, 1, 8, 9, 0)
    created = start
    for i in range(n):
        created += timedelta(minutes=rng.randint(360, 2400) if dev else rng.randint(120, 1200))
        sprint = (created - start).days // 14 + (14 if dev else 31)
        if dev:
            project = rng.choice(_DEV_COMPONENTS)
            counters["PAY"] += 1
            key = f"PAY-{counters['PAY'] + 210}"
            kind = rng.choices([t for t, _ in _DEV_TYPES], [w for _, w in _DEV_TYPES])[0]
            status, category = rng.choices(_DEV_STATUS, [5, 2, 1, 8, 1])[0] if i else ("Done", 3)
            done, closed = category == 3 and status == "Done", category == 3
            title = rng.choice(_DEV_SUMMARIES).format(c=project)
            labels = rng.sample(
                ("backend", "frontend", "pci", "customer-reported", "tech-debt"), rng.randint(0, 2)
            )
            priority = rng.choices(_DEV_PRIORITIES, (1, 3, 6, 3, 1))[0]
            points = (
                rng.choice((1, 2, 3, 5, 8, 13)) if kind in ("Story", "Task") or rng.random() < 0.3 else None
            )
            points = (
                points if i else 3
            )  # the first issue is done and estimated: a sprint's points are never 0
        else:
            project = rng.choice(_TEST_TEAMS)[0]
            counters[project] += 1
            key = f"{project}-{counters[project] + 100}"
            kind = ""
            name, state_type, _ = (
                rng.choices(_TEST_STATES, [w for *_, w in _TEST_STATES])[0] if i else _TEST_STATES[4]
            )
            status, done, closed = name, state_type == "completed", state_type in ("completed", "canceled")
            title = rng.choice(_TEST_TITLES).format(n=rng.randint(2, 6), w=rng.choice(_TEST_WHAT))
            labels = rng.sample(_TEST_LABELS, rng.choice((1, 1, 1, 2)))
            priority = rng.choices(_TEST_PRIORITIES, (1, 1, 3, 4, 3))[0]
            points = rng.choice((None, 1, 2, 3, 5, 8)) if i else 2
        assignee = None if rng.random() < 0.1 else rng.choices(range(len(people)), weights)[0]
        resolved = created + timedelta(days=rng.randint(1, 30), hours=rng.randint(0, 8)) if closed else None
        issue = Issue(key, project, kind, labels, priority, status, done, closed, assignee,
                      rng.randrange(len(people)), points, sprint, created, resolved, title)  # fmt: skip
        if not dev and rng.random() < 0.35:
            mine = [x for x in issues[-40:] if x.project == project and x.parent is None]
            if mine:
                issue.parent = rng.choice(mine).key
        issues.append(issue)
    return issues


# -- the files ----------------------------------------------------------------------------------


def _rfc822(when: datetime) -> str:
    return f"{when:%a}, {when.day} {when:%b %Y %H:%M:%S} +0000"


def _account(who: int) -> str:
    return f"5f{random.Random(_DEV_PEOPLE[who]).getrandbits(80):020x}"


def _jira(issues: list[Issue]) -> str:
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<rss version="0.92">',
        "  <channel>",
        "    <title>Northwind Jira</title>",
        "    <link>https://northwind.atlassian.net/issues/?jql=project+%3D+PAY+ORDER+BY+created+ASC</link>",
        "    <description>An XML representation of a search request</description>",
        "    <language>en-uk</language>",
        f'    <issue start="0" end="{len(issues)}" total="{len(issues)}"/>',
    ]
    for x in issues:
        resolution = "Unresolved" if not x.closed else "Done" if x.done else escape(x.status)
        category = "done" if x.closed else "indeterminate" if x.status != "To Do" else "new"
        if x.assignee is None:
            assignee = '<assignee accountid="-1">Unassigned</assignee>'
        else:
            assignee = f'<assignee accountid="{_account(x.assignee)}">{_DEV_PEOPLE[x.assignee]}</assignee>'
        out += [
            "    <item>",
            f"      <title>[{x.key}] {escape(x.title)}</title>",
            f"      <link>https://northwind.atlassian.net/browse/{x.key}</link>",
            '      <project id="10031" key="PAY">Payments Platform</project>',
            f'      <key id="{int(x.key[4:]) + 40000}">{x.key}</key>',
            f"      <summary>{escape(x.title)}</summary>",
            f"      <type>{x.kind}</type>",
            f"      <priority>{x.priority}</priority>",
            f"      <status>{escape(x.status)}</status>",
            f'      <statusCategory key="{category}"/>',
            f"      <resolution>{resolution}</resolution>",
            f"      {assignee}",
            f'      <reporter accountid="{_account(x.reporter)}">{_DEV_PEOPLE[x.reporter]}</reporter>',
            f"      <created>{_rfc822(x.created)}</created>",
            f"      <updated>{_rfc822(x.resolved or x.created + timedelta(hours=3))}</updated>",
        ]
        if x.resolved:
            out.append(f"      <resolved>{_rfc822(x.resolved)}</resolved>")
        if x.labels:
            out += [
                "      <labels>",
                *[f"        <label>{lab}</label>" for lab in x.labels],
                "      </labels>",
            ]
        out.append(f"      <component>{x.project}</component>")
        out.append("      <customfields>")
        if x.points is not None:
            out += _field("customfield_10016", "float", "Story point estimate", f"{x.points}.0")
        out += _field("customfield_10020", "gh-sprint", "Sprint", f"PAY Sprint {x.sprint}")
        out += ["      </customfields>", "    </item>"]
    out += ["  </channel>", "</rss>", ""]
    return "\n".join(out)


def _field(key: str, kind: str, name: str, value: str) -> list[str]:
    plugin = (
        "com.pyxis.greenhopper.jira"
        if kind == "gh-sprint"
        else "com.atlassian.jira.plugin.system.customfieldtypes"
    )
    return [
        f'        <customfield id="{key}" key="{plugin}:{kind}">',
        f"          <customfieldname>{name}</customfieldname>",
        f"          <customfieldvalues><customfieldvalue>{value}</customfieldvalue></customfieldvalues>",
        "        </customfield>",
    ]


def _iso(when: datetime | None) -> str | None:
    return None if when is None else f"{when:%Y-%m-%dT%H:%M:%S}.000Z"


def _linear(issues: list[Issue]) -> list[dict]:
    state_type = {name: t for name, t, _ in _TEST_STATES}
    teams = dict(_TEST_TEAMS)
    out = []
    for x in issues:
        person = None
        if x.assignee is not None:
            name, local = _TEST_PEOPLE[x.assignee]
            person = {"displayName": name, "email": f"{local}@{_TEST_DOMAIN}"}
        out.append(
            {
                "identifier": x.key,
                "title": x.title,
                "state": {"name": x.status, "type": state_type[x.status]},
                "priorityLabel": x.priority,
                "estimate": x.points,
                "assignee": person,
                "team": {"key": x.project, "displayName": teams[x.project]},
                "cycle": {"number": x.sprint},
                "labels": {"nodes": [{"name": lab} for lab in x.labels]},
                "parent": None if x.parent is None else {"identifier": x.parent},
                "createdAt": _iso(x.created),
                "completedAt": _iso(x.resolved) if x.done else None,
                "canceledAt": _iso(x.resolved) if x.closed and not x.done else None,
            }
        )
    return out


def _fit(split: str, seed: str, chars: int) -> tuple[list[Issue], object]:
    per = 1450 if split == "dev" else 760
    n = max(4, chars // per)
    for _ in range(6):
        issues = _issues(split, seed, n)
        context = _jira(issues) if split == "dev" else _linear(issues)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(4, round(n * chars / size))
    return issues, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _ask_count(split: str, rng: random.Random, issues: list[Issue]) -> _Asked:
    x = rng.choice(issues)
    if split == "dev":
        x = rng.choice([y for y in issues if y.kind == "Bug" and not y.closed] or issues)
        priority = x.priority
        n = sum(
            y.kind == "Bug" and not y.closed and y.priority == priority and y.project == x.project
            for y in issues
        )
        q = f"How many unresolved bugs with {priority} priority does the {x.project} component have?"
        return q, n, {"component": x.project, "priority": priority}
    label = rng.choice(x.labels)
    n = sum(y.project == x.project and not y.closed and label in y.labels for y in issues)
    q = f"In team {x.project}, count the issues labelled '{label}' that are neither completed nor canceled."
    return q, n, {"team": x.project, "label": label}


def _ask_points(split: str, rng: random.Random, issues: list[Issue]) -> _Asked:
    x = rng.choice([y for y in issues if y.done and y.points] or issues)  # never 0: the first is one
    if split == "dev":
        n = sum(y.points or 0 for y in issues if y.sprint == x.sprint and y.done)
        q = f"What do the story points of the issues in PAY Sprint {x.sprint} resolved as Done add up to?"
        return q, n, {"sprint": x.sprint}
    n = sum(y.points or 0 for y in issues if y.sprint == x.sprint and y.project == x.project and y.done)
    q = f"Sum the estimates of team {x.project}'s completed issues in cycle {x.sprint}."
    return q, n, {"team": x.project, "cycle": x.sprint}


def _ask_most(split: str, rng: random.Random, issues: list[Issue]) -> _Asked:
    x = rng.choice(issues)
    if split == "dev":
        counts = Counter(y.assignee for y in issues if y.sprint == x.sprint and y.assignee is not None)
    else:
        label = rng.choice(x.labels)
        counts = Counter(
            y.assignee for y in issues if y.done and label in y.labels and y.assignee is not None
        )
    ranked = counts.most_common(2)
    if len(ranked) < 2 or ranked[0][1] == ranked[1][1]:
        return None
    if split == "dev":
        q = f"Who is the assignee of the most issues in PAY Sprint {x.sprint}?"
        return q, _DEV_PEOPLE[ranked[0][0]], {"sprint": x.sprint}
    q = f"Which person (display name) is assignee on the most completed issues with the label '{label}'?"
    return q, _TEST_PEOPLE[ranked[0][0]][0], {"label": label}


def _ask_lookup(split: str, rng: random.Random, issues: list[Issue]) -> _Asked:
    if split == "dev":
        x = rng.choice([y for y in issues if y.resolved] or issues)
        if x.resolved is None:
            return None
        days = (x.resolved.date() - x.created.date()).days
        q = f"How many calendar days passed between the creation and the resolution of {x.key}?"
        return q, days, {"key": x.key}
    by_key = {y.key: y for y in issues}
    x = rng.choice([y for y in issues if y.parent] or issues)
    if x.parent is None or by_key[x.parent].assignee is None:
        return None
    _, local = _TEST_PEOPLE[by_key[x.parent].assignee]
    q = f"What is the email address of the person assigned to the parent issue of {x.key}?"
    return q, f"{local}@{_TEST_DOMAIN}", {"identifier": x.key}


_ASK = {"count": _ask_count, "points": _ask_points, "most": _ask_most, "lookup": _ask_lookup}


@family(
    "tracker",
    "an issue tracker's export: a Jira XML export as a string (dev) or a Linear-like API's issues as a "
    "list of dicts (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    issues, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    # other components, teams, sprints and labels, then one issue's lookup, nearly always there
    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, issues), kind, "points", nonzero=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (Jira XML)" if ref.split == "dev" else "list of dicts",
        issues=len(issues),
    )
