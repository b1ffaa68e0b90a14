"""Questions about a wiki's edit history: a local history society's wiki exported with every
revision of a few pages, the MediaWiki XML as one string (``dev``), or a few hours of a wiki farm's
stream of recent changes saved as JSON Lines, the text as one string (``test``).

What a notebook holds when someone looks at who edits a wiki and how: each revision's page, its
id and the one it replaced, its time, its editor (a username, or an IP address for an editor not
logged in), whether it was marked minor, its edit summary and the page's size after it. Pages grow
and shrink, vandals blank them and others revert them to an earlier text (whose sha1 comes back),
sizes are in bytes of UTF-8 so a dash or a pound sign counts three or two, and titles whose names
extend another's stand beside each other (``Old Mill`` and ``Old Mill Bridge``). The stream mixes
several wikis, edits with page creations, log entries and category changes (which carry no size),
and bots (the ``bot`` flag, not the name, says which); its times are Unix seconds. Revisions are
added until the text is about the length asked for. Kinds of question:

- ``count``: one page's revisions by editors not logged in, or one user's minor revisions
  (``dev``); one wiki's bot edits, or the pages created on one wiki in one hour (``test``);
- ``total``: the bytes one user's revisions added in all, or how much one page grew from its first
  revision to its last (``dev``); the bytes one user's edits and new pages added over all the
  wikis, or the size of the pages created on one wiki (``test``);
- ``top``: the editor with the most revisions of one page, or the page revised most in one month
  (``dev``); one wiki's most edited title, or the human with the most edits on one wiki (``test``)
  (a clear leader);
- ``lookup``: who made one revision, or the day a page was created (``dev``); one revision's edit
  summary, or the time it was made (``test``).

Every answer is computed from the revisions the generator wrote. Score: ``exact``.

Splits: ``dev`` is a Special:Export file (``mediawiki`` with ``siteinfo``, then ``page`` elements
with ``title``, ``ns``, ``id`` and ``revision`` elements, each with ``id``, ``parentid``,
``timestamp``, ``contributor`` with ``username`` and ``id`` or ``ip``, ``minor``, ``comment``,
``origin``, ``model``, ``format``, ``text`` with its ``bytes`` and ``sha1``); ``test`` is one JSON
event a line (``$schema``, ``meta`` with ``dt`` and ``domain``, ``id``, ``type`` as ``edit``,
``new``, ``log`` or ``categorize``, ``namespace``, ``title``, ``comment``, ``timestamp``, ``user``,
``bot``, ``minor``, ``length`` with ``old`` and ``new``, ``revision`` with ``old`` and ``new``,
``server_name``, ``wiki``, ``parsedcomment``, and ``log_type`` and ``log_action`` on log entries):
other containers, fields, wikis and wording.
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from xml.sax.saxutils import escape

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_PAGES = (  # title, what it is
    ("Old Mill", "a former corn mill on the River Mease"),
    ("Old Mill Bridge", "a packhorse bridge beside the Old Mill"),
    ("St Helen's Church", "the parish church"),
    ("Market Street", "the town's main shopping street"),
    ("Market Street Chapel", "a former Methodist chapel"),
    ("Ashby Railway Station", "a closed station on the Leicester to Burton line"),
    ("The Bull's Head", "a coaching inn"),
    ("Ashby Grammar School", "a school founded in 1567"),
    ("Ivanhoe Baths", "a spa building demolished in 1962"),
    ("War Memorial", "the memorial to the town's dead of both world wars"),
    ("Loudoun Memorial", "a monument to the Countess of Loudoun"),
    ("Ashby Canal", "a canal that never reached the town"),
    ("Royal Hotel", "a hotel built as the Hastings Hotel"),
    ("Bath Street", "a street laid out for the spa"),
)
_USERS = (  # name, id, weight
    ("Hgreaves", 7, 3.0),
    ("Margaret Oakley", 12, 2.0),
    ("Railfan1962", 31, 1.2),
    ("Ashby Archivist", 4, 1.6),
    ("DCollins", 58, 0.8),
    ("Pennyfarthing", 77, 0.7),
    ("Mease Valley Walker", 103, 0.5),
    ("HeritageBot", 2, 0.6),
)
_IPS = (
    "81.2.69.160", "86.143.22.7", "2a00:23c6:1f04:8e01::1b2", "92.40.174.19", "81.2.69.16",
)  # fmt: skip
_FACTS = (
    "In {year} the building was {done} by {who}.",
    "A survey of {year} recorded it as {state}.",
    "It appears on the {year} Ordnance Survey map as \u201c{name}\u201d.",
    "Local tradition holds that {who} stayed here in {year}.",
    "Repairs costing \u00a3{money} were made in {year}.",
    "The {part} was rebuilt in {year} \u2013 the older {part} is said to survive below.",
    "In {year} it was listed at Grade {grade} by Historic England.",
    "Photographs from {year} in the society's collection show {state}.",
)
_FILL = {
    "done": ("bought", "rebuilt", "enlarged", "sold", "restored", "let"),
    "who": (
        "the Hastings family",
        "the Earl of Moira",
        "Thomas Kirkland",
        "the Midland Railway",
        "the town council",
        "Mary Queen of Scots",
        "John Wesley",
        "a local builder",
    ),
    "state": (
        "in poor repair",
        "in use as a store",
        "roofless",
        "newly painted",
        "much altered",
        "a caf\u00e9",
    ),
    "part": ("east wall", "porch", "tower", "frontage", "wheel house", "cellar"),
    "grade": ("II", "II*", "I"),
}
_COMMENTS = (
    "/* History */ add", "ce", "typo", "source", "expand", "/* History */ date from parish register",
    "tidy", "add photo caption", "fix link", "per talk page", "",
)  # fmt: skip


def _fact(rng: random.Random, name: str) -> str:
    template = rng.choice(_FACTS)
    return template.format(
        year=rng.randrange(1560, 2015),
        money=f"{rng.randrange(2, 900) * 50:,}",
        name=name,
        **{k: rng.choice(v) for k, v in _FILL.items()},
    )


def _sha1(text: str) -> str:
    """MediaWiki's: the SHA-1 of the text's bytes in base 36, 31 digits."""
    value = int(hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest(), 16)
    digits = ""
    while value:
        value, r = divmod(value, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
    return digits.rjust(31, "0")


@dataclass
class Rev:
    page: int
    id: int
    parent: int | None
    when: datetime
    user: str  # a username, or an IP
    user_id: int | None
    minor: bool
    comment: str
    text: str

    @property
    def size(self) -> int:
        return len(self.text.encode())


def _render(title: str, what: str, facts: list[str], cats: list[str]) -> str:
    lead = f"'''{title}''' is {what} in [[Ashby de la Zouch]], Leicestershire."
    parts = [lead, "", "== History ==", *facts]
    if cats:
        parts += ["", *[f"[[Category:{c}]]" for c in cats]]
    return "\n".join(parts)


_Edit = tuple[str, str, str, "int | None", bool]  # text, comment, editor, their id, minor
_BOT_CATEGORIES = (
    "Listed buildings in Ashby",
    "Demolished buildings",
    "Pages needing sources",
    "Streets in Ashby",
)


def _pages(rng: random.Random, n: int) -> list[int]:
    pages_n = max(2, min(len(_PAGES), round((n / 2) ** 0.5)))
    pages = rng.sample(range(len(_PAGES)), pages_n)
    if pages_n >= 3 and not {0, 1} <= set(pages):  # the two whose names extend one another come together
        pages = [*rng.sample(range(2, len(_PAGES)), pages_n - 2), 0, 1]
    return pages


def _bot_edit(rng: random.Random, cats: list[str]) -> str:
    """A category added or taken away; the edit summary."""
    cat = rng.choice(_BOT_CATEGORIES)
    if cat in cats:
        cats.remove(cat)
        return f"Bot: removing [[Category:{cat}]]"
    cats.append(cat)
    return f"Bot: adding [[Category:{cat}]]"


def _editor_edit(rng: random.Random, title: str, facts: list[str]) -> tuple[str, bool]:
    """A fact added, taken out or copy-edited; the edit summary and whether it is marked minor."""
    roll = rng.random()
    if roll < 0.5 or len(facts) < 2:
        facts.insert(rng.randrange(len(facts) + 1), _fact(rng, title))
        return rng.choice((*_COMMENTS[:6], "")), False
    if roll < 0.7 and len(facts) > 2:
        facts.pop(rng.randrange(len(facts)))
        return rng.choice(("rm unsourced", "trim", "/* History */ remove dubious claim", "")), False
    k = rng.randrange(len(facts))
    fixed = facts[k].replace(" - ", " \u2013 ").replace("  ", " ")
    facts[k] = fixed if fixed != facts[k] else facts[k].rstrip(".") + " (see below)."
    return rng.choice(("ce", "typo", "tidy", "")), rng.random() < 0.8


def _edit(rng: random.Random, p: int, parent: Rev, state: dict, undo: dict, user: int) -> _Edit:
    """One revision of a page that exists: a revert of vandalism, an edit by someone not logged in
    (now and then vandalism), a bot's or an editor's."""
    title, what = _PAGES[p]
    name, user_id = _USERS[user][:2]
    facts, cats = state[p]
    if p in undo:
        good = undo.pop(p)
        vandal = parent.user
        comment = (
            f"Reverted edits by [[Special:Contributions/{vandal}|{vandal}]] ([[User talk:{vandal}|talk]]) "
            f"to last revision by [[User:{good.user}|{good.user}]]"
        )
        if name == "HeritageBot":
            name, user_id = _USERS[0][:2]
        return good.text, comment, name, user_id, False
    if rng.random() < 0.12:
        ip = rng.choice(_IPS)
        if rng.random() < 0.45:
            undo[p] = parent
            return rng.choice(("lol", "JOSH WAS HERE!!!", f"{title} is boring")), "", ip, None, False
        facts.append(_fact(rng, title))
        return _render(title, what, facts, cats), "", ip, None, False
    if name == "HeritageBot":
        comment = _bot_edit(rng, cats)
        return _render(title, what, facts, cats), comment, name, user_id, True
    comment, minor = _editor_edit(rng, title, facts)
    text = _render(title, what, facts, cats)
    if len(text.encode()) > 1200:
        facts.pop(rng.randrange(len(facts)))
        text = _render(title, what, facts, cats)
    return text, comment, name, user_id, minor


def _dev_history(seed: str, n: int) -> tuple[list[Rev], list[int]]:
    rng = random.Random(f"{seed}/{n}")
    pages = _pages(rng, n)
    user_weight = [u[2] * rng.uniform(0.4, 2.0) for u in _USERS]
    page_weight = [rng.uniform(0.4, 2.0) for _ in pages]
    state: dict[int, tuple[list[str], list[str]]] = {}  # a page's facts and categories
    when = datetime(2021, 1, 4) + timedelta(days=rng.randrange(0, 600))
    revs: list[Rev] = []
    last: dict[int, Rev] = {}
    undo: dict[int, Rev] = {}  # a page's revision before vandalism, waiting for its revert
    order = list(pages)
    while len(revs) < n:
        p = order.pop(0) if order else rng.choices(pages, page_weight)[0]
        when += timedelta(minutes=rng.randrange(5, 60 * 24 * 5))
        parent = last.get(p)
        u = rng.choices(range(len(_USERS)), user_weight)[0]
        if parent is None:
            title, what = _PAGES[p]
            state[p] = ([_fact(rng, title) for _ in range(rng.randrange(1, 3))], [])
            summary = f"Created page with \"'''{title}''' is {what[:30]}\""
            edit: _Edit = (_render(title, what, *state[p]), summary, *_USERS[u][:2], False)
        else:
            edit = _edit(rng, p, parent, state, undo, u)
        text, comment, name, user_id, minor = edit
        rev = Rev(p, 0, parent.id if parent else None, when, name, user_id, minor, comment, text)
        revs.append(rev)
        last[p] = rev
    base = rng.randrange(200, 900)
    latest: dict[int, int] = {}
    for k, rev in enumerate(revs):  # ids in time order, parents the page's previous revision
        rev.id = base + 7 * k + rng.randrange(0, 7)
        rev.parent = latest.get(rev.page)
        latest[rev.page] = rev.id
    return revs, pages


def _xml(revs: list[Rev], pages: list[int], seed: str) -> str:
    rng = random.Random(seed)
    page_ids = dict(zip(pages, rng.sample(range(10, 400), len(pages)), strict=True))
    out = [
        '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xsi:schemaLocation="http://www.mediawiki.org/xml/export-0.11/ '
        'http://www.mediawiki.org/xml/export-0.11.xsd" version="0.11" xml:lang="en">',
        "  <siteinfo>",
        "    <sitename>Ashby Heritage Wiki</sitename>",
        "    <dbname>ashbyheritage</dbname>",
        "    <base>https://wiki.ashbyheritage.org.uk/wiki/Main_Page</base>",
        "    <generator>MediaWiki 1.41.1</generator>",
        "    <case>first-letter</case>",
        "    <namespaces>",
        *[
            f'      <namespace key="{k}" case="first-letter">{name}</namespace>'
            if name
            else f'      <namespace key="{k}" case="first-letter" />'
            for k, name in (
                (-2, "Media"),
                (-1, "Special"),
                (0, ""),
                (1, "Talk"),
                (2, "User"),
                (3, "User talk"),
                (4, "Ashby Heritage Wiki"),
                (6, "File"),
                (14, "Category"),
            )
        ],
        "    </namespaces>",
        "  </siteinfo>",
    ]
    for p in pages:
        title = _PAGES[p][0]
        out += [
            "  <page>",
            f"    <title>{escape(title)}</title>",
            "    <ns>0</ns>",
            f"    <id>{page_ids[p]}</id>",
        ]
        for rev in (r for r in revs if r.page == p):
            out += ["    <revision>", f"      <id>{rev.id}</id>"]
            if rev.parent is not None:
                out.append(f"      <parentid>{rev.parent}</parentid>")
            out.append(f"      <timestamp>{rev.when:%Y-%m-%dT%H:%M:%SZ}</timestamp>")
            if rev.user_id is None:
                out += ["      <contributor>", f"        <ip>{rev.user}</ip>", "      </contributor>"]
            else:
                out += [
                    "      <contributor>",
                    f"        <username>{escape(rev.user)}</username>",
                    f"        <id>{rev.user_id}</id>",
                    "      </contributor>",
                ]
            if rev.minor:
                out.append("      <minor />")
            if rev.comment:
                out.append(f"      <comment>{escape(rev.comment)}</comment>")
            sha = _sha1(rev.text)
            out += [
                f"      <origin>{rev.id}</origin>",
                "      <model>wikitext</model>",
                "      <format>text/x-wiki</format>",
                f'      <text bytes="{rev.size}" sha1="{sha}" xml:space="preserve">{escape(rev.text)}</text>',
                f"      <sha1>{sha}</sha1>",
                "    </revision>",
            ]
        out.append("  </page>")
    out.append("</mediawiki>")
    return "\n".join(out) + "\n"


# -- the test stream ----------------------------------------------------------------------------

_WIKIS = (  # wiki, server, titles, weight
    (
        "enwiki",
        "en.wikipedia.org",
        (
            "Boeing 737",
            "Boeing 737 MAX",
            "Photosynthesis",
            "Mount Everest",
            "UEFA Euro 2024",
            "The Eras Tour",
            "Python (programming language)",
            "List of tallest buildings",
        ),
        3.0,
    ),
    (
        "dewiki",
        "de.wikipedia.org",
        (
            "Berlin",
            "Berliner Mauer",
            "Deutsche Bahn",
            "Fu\u00dfball-Europameisterschaft 2024",
            "Photosynthese",
            "Zugspitze",
        ),
        1.5,
    ),
    (
        "frwiki",
        "fr.wikipedia.org",
        (
            "Paris",
            "Tour Eiffel",
            "Jeux olympiques d'\u00e9t\u00e9 de 2024",
            "Tour de France 2024",
            "Mont Blanc",
        ),
        1.2,
    ),
    (
        "commonswiki",
        "commons.wikimedia.org",
        (
            "File:Eiffel Tower at dusk 2024.jpg",
            "File:Berlin Hauptbahnhof 2024.jpg",
            "File:Mount Everest from Kala Patthar.jpg",
        ),
        0.8,
    ),
    ("wikidatawiki", "www.wikidata.org", ("Q90", "Q64", "Q1490", "Q513", "Q243"), 1.4),
)
_HUMANS = (
    "Quillwright", "Tamsin Arden", "BlueHeron42", "Kurzweiler", "Marianne L.", "Fjordlander",
    "Pénélope M", "Lirazel", "Botany Fan", "Okapi77",
)  # fmt: skip
_BOTS = (
    "CiteCheckBot",
    "ArchiveLinkBot",
    "Sortierhilfe",
    "QSBot",
)  # Sortierhilfe is flagged, not named, a bot
_ANONS = ("2601:646:c200:7f60::3a1", "93.184.216.34", "77.13.201.8", "2a01:cb19:8b6:e00::12")
_NEW_TITLES = {
    "enwiki": (
        "2024 Boeing 737 MAX incident",
        "Harwell Mill",
        "Photosynthesis in algae",
        "Draft:Kala Patthar",
    ),
    "dewiki": ("Bahnhof Berlin Ostkreuz", "Zugspitzbahn"),
    "frwiki": ("Pont de Bir-Hakeim en 2024", "Mont Blanc du Tacul"),
    "commonswiki": (
        "File:Tour Eiffel 14 juillet 2024.jpg",
        "File:Ostkreuz 2024.jpg",
        "File:Zugspitze Gipfel.jpg",
    ),
    "wikidatawiki": ("Q125461234", "Q125461235", "Q125470018"),
}
_EDIT_COMMENTS = {
    "enwiki": (
        "/* History */ copyedit",
        "Rescuing 1 sources and tagging 0 as dead.) #IABot (v2.0.9.5",
        "/* Design */ cite",
        "Undid revision {old} by {other} ([[User talk:{other}|talk]])",
        "fix date format",
        "/* Reception */ add figures",
        "Alter: title. | [[WP:UCB|Use this bot]]",
    ),
    "dewiki": ("/* Geschichte */ erg.", "Tippfehler", "Einzelnachweis erg\u00e4nzt", "Kategorie korrigiert"),
    "frwiki": (
        "/* Histoire */ ajout",
        "typo",
        "Ajout de r\u00e9f\u00e9rences",
        "Annulation de la modification {old}",
    ),
    "commonswiki": (
        "/* Summary */ add location",
        "Adding categories",
        "Removing from [[:Category:Unidentified]]",
    ),
    "wikidatawiki": (
        "/* wbsetclaim-update:2||1 */ [[Property:P1082]]: {n}",
        "/* wbsetlabel-add:1|de */ {t}",
        "/* wbsetreference-add:2| */ [[Property:P1082]]: {n}",
    ),
}


_CATEGORIES = {
    "enwiki": "Category:Living people",
    "dewiki": "Kategorie:Berlin",
    "frwiki": "Cat\u00e9gorie:Paris",
    "commonswiki": "Category:Photographs taken in 2024",
    "wikidatawiki": "Category:Items with P1082",
}
_LABELS = {"Q90": "Paris", "Q64": "Berlin", "Q1490": "Tokio", "Q513": "Mount Everest", "Q243": "Eiffelturm"}


@dataclass
class Change:
    wiki: int
    kind: str  # edit, new, log, categorize
    title: str
    when: int  # Unix seconds
    user: str
    bot: bool
    minor: bool
    comment: str
    old_len: int | None = None
    new_len: int | None = None
    old_rev: int | None = None
    new_rev: int | None = None
    rc: int = 0
    log: tuple[str, str] | None = None


def _test_changes(seed: str, n: int) -> list[Change]:
    rng = random.Random(f"{seed}/{n}")
    start = int(datetime(2024, 6, 3, tzinfo=timezone.utc).timestamp()) + rng.randrange(0, 86400 * 60)
    span = max(1800, min(6 * 3600, n * 60))
    wiki_weight = [w[3] * rng.uniform(0.6, 1.5) for w in _WIKIS]
    title_weight = {(k, t): rng.uniform(0.2, 3.0) for k, w in enumerate(_WIKIS) for t in w[2]}
    human_weight = [rng.uniform(0.3, 2.5) for _ in _HUMANS]
    length = {(k, t): rng.randrange(2_000, 180_000) for k, w in enumerate(_WIKIS) for t in w[2]}
    rev = {
        k: rng.randrange(10**8, 1_300_000_000)
        if w[0] != "commonswiki"
        else rng.randrange(8 * 10**8, 9 * 10**8)
        for k, w in enumerate(_WIKIS)
    }
    rc = {k: rng.randrange(10**8, 2 * 10**9) for k in range(len(_WIKIS))}
    made: set[tuple[int, str]] = set()
    times = sorted(start + rng.randrange(0, span) for _ in range(n))
    out = []
    for when in times:
        k = rng.choices(range(len(_WIKIS)), wiki_weight)[0]
        wiki, _, titles, _ = _WIKIS[k]
        roll = rng.random() if out else 0.5  # the stream opens with an edit
        if rng.random() < 0.25 or (wiki == "wikidatawiki" and rng.random() < 0.5):
            user, bot = rng.choice(_BOTS), True
        elif rng.random() < 0.1:
            user, bot = rng.choice(_ANONS), False
        else:
            user, bot = rng.choices(_HUMANS, human_weight)[0], False
        rc[k] += rng.randrange(1, 400)
        fresh = [t for t in _NEW_TITLES[wiki] if (k, t) not in made]
        if roll < 0.07 and fresh and not user[0].isdigit():
            title = rng.choice(fresh)
            made.add((k, title))
            rev[k] += rng.randrange(1, 3000)
            size = rng.randrange(120, 9000)
            length[(k, title)] = size
            title_weight[(k, title)] = 0.5
            c = Change(
                k,
                "new",
                title,
                when,
                user,
                bot,
                False,
                rng.choice(("Created page", "new article", "Uploaded a work by the uploader", "")),
                None,
                size,
                None,
                rev[k],
                rc[k],
            )
        elif roll < 0.12:
            title = rng.choice(titles)
            action = rng.choice(
                (("patrol", "patrol"), ("delete", "delete"), ("move", "move"), ("protect", "protect"))
            )
            c = Change(
                k,
                "log",
                title,
                when,
                rng.choice(_HUMANS),
                False,
                False,
                rng.choice(("", "Vandalism", "Housekeeping")),
                rc=rc[k],
                log=action,
            )
        elif roll < 0.2:
            title = _CATEGORIES[wiki]
            page = rng.choice(titles)
            c = Change(
                k, "categorize", title, when, user, bot, False, f"[[:{page}]] added to category", rc=rc[k]
            )
        else:
            pool = [t for (w, t) in title_weight if w == k]
            title = rng.choices(pool, [title_weight[(k, t)] for t in pool])[0]
            old = length[(k, title)]
            delta = rng.choice((rng.randrange(-60, 120), rng.randrange(-900, 2500), rng.randrange(1, 40)))
            if delta == 0:
                delta = 7
            new = max(40, old + delta)
            length[(k, title)] = new
            old_rev = rev[k] - rng.randrange(0, 5000)
            rev[k] += rng.randrange(1, 3000)
            template = rng.choice(_EDIT_COMMENTS[wiki])
            comment = template.format(
                old=old_rev,
                other=rng.choice(_ANONS),
                n=f"{rng.randrange(10**5, 10**7):,}",
                t=_LABELS.get(title, title),
            )
            c = Change(
                k,
                "edit",
                title,
                when,
                user,
                bot,
                rng.random() < (0.7 if bot else 0.2),
                comment,
                old,
                new,
                old_rev,
                rev[k],
                rc[k],
            )
        out.append(c)
    return out


def _parsed(comment: str, title: str, server: str) -> str:
    if comment.startswith("/* ") and " */" in comment:
        section, rest = comment[3:].split(" */", 1)
        anchor = section.replace(" ", "_")
        href = f"/wiki/{escape(title.replace(' ', '_'))}#{escape(anchor)}"
        link = f'<a href="{href}" title="{escape(title)}">\u2192\u200e{escape(section)}</a>'
        return f'<span dir="auto"><span class="autocomment">{link}: </span>{escape(rest.strip())}</span>'
    return escape(comment)


def _jsonl(changes: list[Change], seed: str) -> str:
    rng = random.Random(seed)
    offset = rng.randrange(10**9, 5 * 10**9)
    lines = []
    for c in changes:
        wiki, server, *_ = _WIKIS[c.wiki]
        url = f"https://{server}/wiki/{c.title.replace(' ', '_')}"
        offset += rng.randrange(1, 600)
        event: dict = {
            "$schema": "/mediawiki/recentchange/1.0.0",
            "meta": {
                "uri": url,
                "request_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "dt": datetime.fromtimestamp(c.when, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "domain": server,
                "stream": "mediawiki.recentchange",
                "topic": "eqiad.mediawiki.recentchange",
                "partition": 0,
                "offset": offset,
            },
            "id": c.rc,
            "type": c.kind,
            "namespace": 14 if c.kind == "categorize" else 6 if c.title.startswith("File:") else 0,
            "title": c.title,
            "title_url": url,
            "comment": c.comment,
            "timestamp": c.when,
            "user": c.user,
            "bot": c.bot,
        }
        if c.kind == "log":
            event.update(
                {
                    "log_id": c.rc // 7,
                    "log_type": c.log[0],
                    "log_action": c.log[1],
                    "log_params": [],
                    "log_action_comment": c.comment,
                }
            )
        if c.kind in ("edit", "new"):
            event["notify_url"] = (
                f"https://{server}/w/index.php?diff={c.new_rev}&oldid={c.old_rev}"
                if c.kind == "edit"
                else f"https://{server}/w/index.php?oldid={c.new_rev}&rcid={c.rc}"
            )
            event["minor"] = c.minor
            if wiki != "commonswiki":
                event["patrolled"] = c.bot or rng.random() < 0.6
            event["length"] = {"old": c.old_len, "new": c.new_len} if c.kind == "edit" else {"new": c.new_len}
            event["revision"] = (
                {"old": c.old_rev, "new": c.new_rev} if c.kind == "edit" else {"new": c.new_rev}
            )
        event.update(
            {
                "server_url": f"https://{server}",
                "server_name": server,
                "server_script_path": "/w",
                "wiki": wiki,
                "parsedcomment": _parsed(c.comment, c.title, server),
            }
        )
        lines.append(json.dumps(event, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    """The history (or stream) nearest the size asked for, of a few tries: a page's text grows as it
    is revised, so the size of ``n`` revisions varies with what they happen to be."""
    per = 1100 if split == "dev" else 950
    n = max(4, chars // per)
    best: tuple[float, object, object, int] | None = None
    for _ in range(8):
        if split == "dev":
            data: object = _dev_history(seed, n)
            context: object = _xml(*data, seed)
            count = len(data[0])
        else:
            data = _test_changes(seed, n)
            context = _jsonl(data, seed)
            count = len(data)
        size = len(as_text(context))
        miss = abs(size - chars) / chars
        if best is None or miss < best[0]:
            best = (miss, data, context, count)
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(4, round(n * chars / size))
    assert best is not None
    return best[1], best[2], best[3]


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _ask_dev(kind: str, rng: random.Random, data: tuple[list[Rev], list[int]]) -> _Asked:
    revs, _ = data
    rev = rng.choice(revs)
    title = _PAGES[rev.page][0]
    mine = [r for r in revs if r.page == rev.page]
    size = {r.id: r.size for r in revs}
    if kind == "count":
        if rng.random() < 0.5:
            n = sum(r.user_id is None for r in mine)
            q = f'How many revisions of "{title}" were made by editors not logged in (an IP address)?'
            return q, n, {"title": title}
        users = [r for r in revs if r.user_id is not None]
        user = rng.choice(users).user
        n = sum(r.user == user and r.minor for r in revs)
        q = f"How many of {user}'s revisions are marked as minor edits?"
        return q, n, {"user": user}
    if kind == "total":
        if rng.random() < 0.5:
            users = [r for r in revs if r.user_id is not None]
            user = rng.choice(users).user
            n = sum(r.size - (size[r.parent] if r.parent else 0) for r in revs if r.user == user)
            q = (
                f"Adding up, over all of {user}'s revisions, the change in size in bytes from the revision "
                "each one replaced (a page's first revision counting its whole size), what is the net change?"
            )
            return q, n, {"user": user}
        n = mine[-1].size - mine[0].size
        if n <= 0:
            return None
        q = f'How many bytes larger is the latest revision of "{title}" than its first revision?'
        return q, n, {"title": title}
    if kind == "top":
        if rng.random() < 0.5:
            top = _leader(Counter(r.user for r in mine))
            q = f'Who made the most revisions of "{title}"? (An IP address counts as an editor of its own.)'
            return None if top is None else (q, top, {"title": title})
        month = f"{rev.when:%Y-%m}"
        top = _leader(Counter(_PAGES[r.page][0] for r in revs if f"{r.when:%Y-%m}" == month))
        q = f"Which page was revised most often in {rev.when:%B %Y}?"
        return None if top is None else (q, top, {"month": month})
    if rng.random() < 0.5:
        q = f"Who made revision {rev.id}? Give the username, or the IP address."
        return q, rev.user, {"revision": rev.id}
    q = f'On what day was the page "{title}" created? Answer as YYYY-MM-DD.'
    return q, f"{mine[0].when:%Y-%m-%d}", {"title": title}


def _hhmmss(when: int) -> str:
    return datetime.fromtimestamp(when, timezone.utc).strftime("%H:%M:%S")


def _test_count(rng: random.Random, changes: list[Change], c: Change) -> _Asked:
    if rng.random() < 0.5:
        wiki = _WIKIS[c.wiki][0]
        n = sum(x.kind == "edit" and x.wiki == c.wiki and x.bot for x in changes)
        q = f"On {wiki}, tally the edits (type edit) flagged as bot edits."
        return q, n, {"wiki": wiki}
    made = [x for x in changes if x.kind == "new"]
    if not made:
        return None
    c = rng.choice(made)
    wiki = _WIKIS[c.wiki][0]
    hour = datetime.fromtimestamp(c.when, timezone.utc).hour
    n = sum(x.wiki == c.wiki and datetime.fromtimestamp(x.when, timezone.utc).hour == hour for x in made)
    q = f"Count the pages created (type new) on {wiki} between {hour:02d}:00 and {hour:02d}:59:59 UTC."
    return q, n, {"wiki": wiki, "hour": hour}


def _ask_test(kind: str, rng: random.Random, changes: list[Change]) -> _Asked:
    c = rng.choice(changes)
    wiki = _WIKIS[c.wiki][0]
    edits = [x for x in changes if x.kind == "edit"]
    if kind == "count":
        return _test_count(rng, changes, c)
    if kind == "total":
        if rng.random() < 0.5:
            sized = [x for x in changes if x.kind in ("edit", "new")]
            user = rng.choice(sized).user
            n = sum(x.new_len - (x.old_len or 0) for x in sized if x.user == user)
            q = (
                f"Over every wiki in the stream, what net change in bytes did {user}'s edits and page "
                "creations make (length new minus old, a created page counting from zero)?"
            )
            return q, n, {"user": user}
        n = sum(x.new_len for x in changes if x.kind == "new" and x.wiki == c.wiki)
        q = f"Sum the lengths of the pages created on {wiki} in the stream, in bytes."
        return q, n, {"wiki": wiki}
    if kind == "top":
        if rng.random() < 0.5:
            top = _leader(Counter(x.title for x in edits if x.wiki == c.wiki))
            q = f"Name the title with the most edits (type edit) on {wiki}."
            return None if top is None else (q, top, {"wiki": wiki, "by": "title"})
        top = _leader(Counter(x.user for x in edits if x.wiki == c.wiki and not x.bot))
        q = f"Among the edits on {wiki} not flagged bot, which user made the most?"
        return None if top is None else (q, top, {"wiki": wiki, "by": "user"})
    if not edits:
        return None
    c = rng.choice(edits)
    wiki = _WIKIS[c.wiki][0]
    same = [x for x in edits if x.wiki == c.wiki and x.new_rev == c.new_rev]
    if len(same) != 1:
        return None
    if c.comment and rng.random() < 0.5:
        q = f"Give the edit summary (comment) of revision {c.new_rev} on {wiki}."
        return q, c.comment, {"wiki": wiki, "revision": c.new_rev, "field": "comment"}
    q = f"At what time, UTC, was revision {c.new_rev} made on {wiki}? Answer as HH:MM:SS."
    return q, _hhmmss(c.when), {"wiki": wiki, "revision": c.new_rev, "field": "time"}


@family(
    "wiki",
    "a wiki's edit history: a MediaWiki XML export with full history as a string (dev), or a stream of "
    "recent changes saved as JSON Lines, a string (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    data, context, count = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    def ask(kind_: str) -> _Asked:
        return _ask_dev(kind_, rng, data) if ref.split == "dev" else _ask_test(kind_, rng, data)

    kind, asked = draw_question(ask, kind, "lookup", nonzero=True, hidden=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (MediaWiki XML export)"
        if ref.split == "dev"
        else "string (recent changes, JSON Lines)",
        revisions=count,
    )
