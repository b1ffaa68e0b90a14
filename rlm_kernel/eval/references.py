"""Questions about a bibliography: a BibTeX file as one string (``dev``) or CSL-JSON items as a list
of dicts (``test``).

What a notebook holds after reading a reference manager's export: one entry per paper, chapter or
book, with its authors, title, venue, year and pages. Authors are written in more than one way
(``Chen, Wei`` and ``Wei Chen``), and people who share a family name or a given name stand side by
side. Entries are added until the text (or the indented JSON) is about the length asked for.
Kinds of question:

- ``author_count``: how many entries have one person among their authors (a look-alike person
  too, and in ``test`` the person also edits some books without being their author);
- ``pages``: how many pages one titled article spans, both end pages counted (titles that differ
  in their last word stand beside it);
- ``venue``: which journal published the most articles from a given year on (a clear leader);
- ``earliest``: the citation key (``dev``) or DOI (``test``) of the earliest work by one person
  (a single entry in that person's first year).

Every answer is computed from the entries the generator wrote. Score: ``exact`` (numbers as
numbers, keys and DOIs without case).

Splits: ``dev`` is a BibTeX file on machine learning (``@article``, ``@inproceedings``,
``@book``, ``@misc``; fields in braces or quotes, a year sometimes bare, acronyms braced inside
titles such as ``{GPU}``, ``pages = {123--145}``); ``test`` is a Zotero CSL-JSON export on ecology
and medicine (``type`` ``article-journal``, ``chapter``, ``paper-conference``, ``report``;
``container-title``, ``author`` and ``editor`` as lists of ``{"family", "given"}``,
``issued.date-parts``, ``page`` ``"211-229"``, ``DOI``): other containers, fields, domains and
wording.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field

from .tasks import Task, TaskRef, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("author_count", "pages", "venue", "earliest")


@dataclass(frozen=True)
class _Domain:
    given: tuple[str, ...]
    family: tuple[str, ...]
    alike: tuple[tuple[tuple[str, str], tuple[str, str]], ...]  # (given, family) pairs that look alike
    adjectives: tuple[str, ...]
    nouns: tuple[str, ...]
    tasks: tuple[str, ...]
    journals: tuple[str, ...]
    conferences: tuple[str, ...]
    books: tuple[str, ...]  # that chapters are in (test)
    publishers: tuple[str, ...]
    doi: tuple[str, ...]


_DEV = _Domain(
    given=("Wei", "Maria", "Anil", "Sofia", "Kenji", "Olga", "David", "Fatima", "Lukas", "Priya", "Tomás",
           "Hannah", "Yusuf", "Elena", "Marco", "Ines"),
    family=("Chen", "Garcia", "Kumar", "Rossi", "Tanaka", "Ivanova", "Smith", "Haddad", "Müller", "Nair",
            "Silva", "Berg", "Demir", "Popescu", "Conti", "Lopez"),
    alike=((("Wei", "Chen"), ("Wen", "Chen")), (("Maria", "Garcia"), ("Mario", "Garcia")),
           (("Anil", "Kumar"), ("Anil", "Kumari")), (("Sofia", "Rossi"), ("Sofia", "Rossini")),
           (("Kenji", "Tanaka"), ("Kenta", "Tanaka")), (("David", "Smith"), ("David", "Smyth"))),
    adjectives=("Sparse", "Efficient", "Robust", "Scalable", "Contrastive", "Hierarchical", "Adaptive",
                "Federated", "Causal", "Differentiable", "Self-Supervised", "Probabilistic"),
    nouns=("Attention", "Transformers", "Graph Networks", "Retrieval", "Quantization", "Distillation",
           "Diffusion Models", "Tokenization", "Pruning", "Embeddings", "Optimizers", "Mixture of Experts"),
    tasks=("Long-Document Summarization", "Code Generation", "Image Segmentation", "Speech Recognition",
           "Question Answering", "Time-Series Forecasting", "Protein Folding", "Machine Translation",
           "Recommendation", "Anomaly Detection", "Dense Retrieval", "Theorem Proving"),
    journals=("Journal of Machine Learning Research", "Machine Learning",
              "Transactions on Machine Learning Research", "Neural Computation", "Pattern Recognition",
              "Artificial Intelligence", "IEEE Transactions on Pattern Analysis and Machine Intelligence",
              "Neural Networks"),
    conferences=("Advances in Neural Information Processing Systems",
                 "International Conference on Machine Learning",
                 "International Conference on Learning Representations", "Proceedings of ACL",
                 "Proceedings of CVPR", "Proceedings of EMNLP"),
    books=(),
    publishers=("MIT Press", "Cambridge University Press", "Springer", "O'Reilly Media"),
    doi=("10.5555/", "10.1007/s10994-", "10.1016/j.patcog.", "10.1162/neco.", "10.1109/TPAMI."),
)  # fmt: skip

_TEST = _Domain(
    given=("Chidi", "Astrid", "Rahul", "Lucía", "Mei", "Jonas", "Amara", "Pieter", "Noor", "Sven", "Keiko",
           "Tariq", "Ana", "Oskar", "Leila", "Bram"),
    family=("Okafor", "Lindqvist", "Mehta", "Fernández", "Zhang", "Kowalski", "Mensah", "de Vries", "Rahman",
            "Eriksen", "Sato", "Aziz", "Pereira", "Nowak", "Karimi", "Jansen"),
    alike=((("Chidi", "Okafor"), ("Chioma", "Okafor")), (("Astrid", "Lindqvist"), ("Astrid", "Lindquist")),
           (("Rahul", "Mehta"), ("Rahul", "Mehra")), (("Mei", "Zhang"), ("Mei", "Chang")),
           (("Pieter", "de Vries"), ("Pieter", "de Vos")), (("Noor", "Rahman"), ("Noor", "Rehman"))),
    adjectives=("Seasonal", "Long-Term", "Regional", "Rapid", "Declining", "Altered", "Population-Level",
                "Microbial", "Hidden", "Cumulative", "Early", "Spatial"),
    nouns=("Nitrogen Deposition", "Pollinator Decline", "Antibiotic Resistance", "Wetland Loss",
           "Soil Carbon", "Heat Exposure", "Air Pollution", "Invasive Species", "Drought Stress",
           "Vaccine Uptake", "Sleep Duration", "Coral Bleaching"),
    tasks=("Alpine Grasslands", "Urban Hospitals", "Boreal Forests", "Coastal Fisheries", "Older Adults",
           "Smallholder Farms", "Primary Care", "River Deltas", "Tropical Reefs", "School Children",
           "Peatlands", "Intensive Care Units"),
    journals=("Ecological Indicators", "Ecology Letters", "Global Change Biology",
              "The Lancet Planetary Health", "BMJ Open", "Journal of Applied Ecology",
              "Environmental Research", "PLOS ONE"),
    conferences=("Proceedings of the ESA Annual Meeting", "International Congress of Ecology",
                 "European Congress of Epidemiology"),
    books=("Handbook of Landscape Ecology", "Methods in Epidemiology", "Climate Change and Human Health",
           "Advances in Soil Science", "Conservation Biology in Practice", "Global Health Perspectives"),
    publishers=("Elsevier", "Springer Nature", "Wiley", "Oxford University Press"),
    doi=("10.1016/j.ecolind.", "10.1111/ele.", "10.1111/gcb.", "10.1136/bmjopen-", "10.1371/journal.pone."),
)  # fmt: skip

_ACRONYMS = ("GPU", "BERT", "LSTM", "CNN", "RL")  # braced in BibTeX titles


@dataclass
class Entry:
    key: str
    kind: str  # article, inproceedings/paper, book/report, misc/chapter
    title: str
    authors: list[tuple[str, str]]  # (given, family)
    year: int
    month: int
    venue: str = ""  # the journal, the proceedings or the book it is in
    pages: tuple[int, int] | None = None
    volume: int = 0
    issue: int = 0
    doi: str = ""
    publisher: str = ""
    editors: list[tuple[str, str]] = field(default_factory=list)


def _people(d: _Domain, rng: random.Random) -> list[tuple[str, str]]:
    pool = list(dict.fromkeys([p for pair in d.alike for p in pair]))
    others = [(g, f) for g in d.given for f in d.family if (g, f) not in pool]
    return pool + rng.sample(others, 40)


class _Writer:
    def __init__(self, split: str, rng: random.Random) -> None:
        self.split, self.rng = split, rng
        self.d = _DEV if split == "dev" else _TEST
        self.people = _people(self.d, rng)
        self.weights = [rng.uniform(0.3, 3.0) for _ in self.people]
        self.titles: list[str] = []
        self.seen_titles: set[str] = set()
        self.keys: set[str] = set()
        self.dois: set[str] = set()

    def title(self) -> str:
        rng, d = self.rng, self.d
        while True:
            if self.titles and rng.random() < 0.3:  # another study of the same thing: the last words differ
                t = f"{rng.choice(self.titles).rsplit(' ', 2)[0]} {rng.choice(d.tasks)}"
            else:
                link = rng.choice(("for", "in", "and"))
                t = f"{rng.choice(d.adjectives)} {rng.choice(d.nouns)} {link} {rng.choice(d.tasks)}"
            if self.split == "dev" and rng.random() < 0.12:
                t = f"{rng.choice(_ACRONYMS)}-Based {t}"
            if t not in self.seen_titles:
                self.seen_titles.add(t)
                self.titles.append(t)
                return t

    def unique(self, seen: set[str], make) -> str:
        k = make()
        base, n = k, 0
        while k in seen:
            n += 1
            k = base + "abcdefghijklmnopqrstuvwxyz"[(n - 1) % 26] * (1 + (n - 1) // 26)
        seen.add(k)
        return k

    def entry(self) -> Entry:
        rng, d = self.rng, self.d
        authors = []
        for p in rng.choices(self.people, self.weights, k=rng.choice((1, 2, 2, 3, 3, 3, 4, 5, 6))):
            if p not in authors:
                authors.append(p)
        kind = rng.choices(("article", "paper", "book", "chapter"), (55, 25, 6, 14))[0]
        title = self.title()
        # more papers every year, as in any field: the early years are thin
        year, month = max(1960, 2025 - int(rng.expovariate(1 / 7))), rng.randint(1, 12)
        if kind == "chapter" and self.split == "dev" and year < 2008:
            kind = (
                "paper"  # the dev file's "chapters" are arXiv preprints, which have these numbers since 2007
            )
        first = authors[0][1].lower().replace(" ", "").replace("ü", "u").replace("á", "a").replace("é", "e")
        key = self.unique(self.keys, lambda: f"{first}{year}{title.split()[0].lower().split('-')[0]}")
        doi = self.unique(self.dois, lambda: f"{rng.choice(d.doi)}{year}.{rng.randint(10000, 999999)}")
        e = Entry(key, kind, title, authors, year, month, doi=doi)
        start = rng.randint(1, 1400)
        e.pages = (start, start + rng.randint(3, 40)) if kind != "book" else None
        if kind == "article":
            e.venue, e.volume, e.issue = rng.choice(d.journals), rng.randint(1, 120), rng.randint(1, 12)
        elif kind == "paper":
            e.venue = rng.choice(d.conferences)
        elif kind == "book":
            e.publisher = rng.choice(d.publishers)
        elif self.split == "test":
            e.venue, e.publisher = rng.choice(d.books), rng.choice(d.publishers)
            e.editors = rng.sample(self.people, 2)
        return e


# -- BibTeX (dev) ---------------------------------------------------------------------------------


_BIBTEX_TYPES = {
    "article": "article",
    "paper": "inproceedings",
    "book": "book",
    "chapter": "misc",
}  # misc: preprints


def _bib_title(title: str) -> str:
    """Acronyms braced, as BibTeX files keep their case."""
    for a in _ACRONYMS:
        title = title.replace(f"{a}-Based", f"{{{a}}}-Based")
    return title


def _bib_name(given: str, fam: str, rng: random.Random) -> str:
    return f"{fam}, {given}" if rng.random() < 0.6 else f"{given} {fam}"


def _bib(e: Entry, rng: random.Random) -> str:
    kind = _BIBTEX_TYPES[e.kind]
    fields = [
        ("author", " and ".join(_bib_name(g, f, rng) for g, f in e.authors)),
        ("title", _bib_title(e.title)),
    ]
    if e.kind == "article":
        fields += [("journal", e.venue), ("volume", str(e.volume)), ("number", str(e.issue))]
    elif e.kind == "paper":
        fields += [("booktitle", e.venue)]
    elif e.kind == "book":
        fields += [("publisher", e.publisher)]
    else:
        fields += [
            ("eprint", f"{e.year % 100:02d}{e.month:02d}.{rng.randint(10000, 29999)}"),
            ("archivePrefix", "arXiv"),
        ]
    if e.pages and e.kind in ("article", "paper"):
        fields.append(("pages", f"{e.pages[0]}--{e.pages[1]}"))
    fields.append(("year", str(e.year)))
    if e.kind != "chapter":
        fields.append(("doi", e.doi))
    lines = []
    for name, value in fields:
        if name == "year" and rng.random() < 0.4:
            lines.append(f"  {name} = {value}")
        elif rng.random() < 0.2 and '"' not in value:
            lines.append(f'  {name} = "{value}"')
        else:
            lines.append(f"  {name} = {{{value}}}")
    return f"@{kind}{{{e.key},\n" + ",\n".join(lines) + "\n}\n"


# -- CSL-JSON (test) ------------------------------------------------------------------------------

_ZOTERO = "ABCDEFGHIJKLMNPQRSTUVWXYZ23456789"  # the letters of an item's key


def _csl(e: Entry, rng: random.Random) -> dict:
    kind = {
        "article": "article-journal",
        "paper": "paper-conference",
        "book": "report",
        "chapter": "chapter",
    }[e.kind]
    item: dict = {
        "id": "http://zotero.org/users/5871203/items/" + "".join(rng.choice(_ZOTERO) for _ in range(8)),
        "type": kind,
        "title": e.title,
    }
    if e.venue:
        item["container-title"] = e.venue
    if e.kind == "article":
        item["volume"], item["issue"] = str(e.volume), str(e.issue)
    if e.pages:
        item["page"] = f"{e.pages[0]}-{e.pages[1]}"
    if e.publisher:
        item["publisher"] = e.publisher
    item["DOI"] = e.doi
    item["author"] = [{"family": f, "given": g} for g, f in e.authors]
    if e.editors:
        item["editor"] = [{"family": f, "given": g} for g, f in e.editors]
    item["issued"] = {"date-parts": [[e.year, e.month]]}
    return item


def _entries(split: str, rng: random.Random, chars: int) -> tuple[list[Entry], object]:
    w = _Writer(split, rng)
    entries: list[Entry] = []
    rendered: list = []
    size = 2
    while size < chars or len(entries) < 12:
        e = w.entry()
        entries.append(e)
        if split == "dev":
            rendered.append(_bib(e, rng))
            size += len(rendered[-1]) + 1
        else:
            rendered.append(_csl(e, rng))
            text = json.dumps(rendered[-1], ensure_ascii=False, indent=1)
            size += len(text) + 2 + text.count("\n")  # one level deeper in the list
    if split == "dev":
        return entries, "% Exported from the reading list\n\n" + "\n".join(rendered)
    return entries, rendered


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _person(rng: random.Random, d: _Domain, entries: list[Entry]) -> tuple[str, str] | None:
    """One of a look-alike pair, when the other one is an author in the file too."""
    pair = list(rng.choice(d.alike))
    rng.shuffle(pair)
    if not any(pair[1] in e.authors for e in entries):
        return None
    return pair[0]


def _ask_author_count(split: str, rng: random.Random, entries: list[Entry]) -> _Asked:
    d = _DEV if split == "dev" else _TEST
    person = _person(rng, d, entries)
    n = sum(person in e.authors for e in entries) if person else 0
    if not n:
        return None
    g, f = person
    params = {"given": g, "family": f}
    if split == "dev":
        q = f"How many entries list {g} {f} as an author (names are written 'Last, First' or 'First Last')?"
        return q, n, params
    q = f"Count the items with {g} {f} (family name {f}) among their authors; editors do not count."
    return q, n, params


def _ask_pages(split: str, rng: random.Random, entries: list[Entry]) -> _Asked:
    e = rng.choice([e for e in entries if e.kind == "article" and e.pages])
    n = e.pages[1] - e.pages[0] + 1
    if split == "dev":
        q = f"How many pages does the article titled '{e.title}' span, first and last page included?"
        return q, n, {"title": e.title}
    q = f'The journal article "{e.title}" runs over how many pages (counting both end pages)?'
    return q, n, {"title": e.title}


def _ask_venue(split: str, rng: random.Random, entries: list[Entry]) -> _Asked:
    articles = [e for e in entries if e.kind == "article"]
    clear = []
    for year in sorted({e.year for e in articles}):
        top = Counter(e.venue for e in articles if e.year >= year).most_common(2)
        if top[0][1] >= 2 and (len(top) == 1 or top[0][1] > top[1][1]):
            clear.append((year, top[0][0]))
    if not clear:
        return None
    year, venue = rng.choice(clear[-8:])  # the recent years, not the whole file since 1960
    if split == "dev":
        q = f"Which journal has the most @article entries from {year} or later? Name it as the field does."
        return q, venue, {"since": year}
    q = f"Among the article-journal items issued in {year} or later, which container-title occurs most often?"
    return q, venue, {"since": year}


def _ask_earliest(split: str, rng: random.Random, entries: list[Entry]) -> _Asked:
    d = _DEV if split == "dev" else _TEST
    person = _person(rng, d, entries)
    mine = sorted((e for e in entries if person in e.authors), key=lambda e: e.year) if person else []
    if not mine or (len(mine) > 1 and mine[0].year == mine[1].year):
        return None
    g, f = person
    params = {"given": g, "family": f}
    if split == "dev":
        q = f"What is the citation key of the earliest entry (by year) with {g} {f} among its authors?"
        return q, mine[0].key, params
    q = f"Give the DOI of the earliest-issued item (by year) that {g} {f} co-authored."
    return q, mine[0].doi, params


_ASK = {
    "author_count": _ask_author_count,
    "pages": _ask_pages,
    "venue": _ask_venue,
    "earliest": _ask_earliest,
}


@family(
    "references",
    "a bibliography (BibTeX string in dev, CSL-JSON list of dicts in test): authors, pages, venues, earliest",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    entries, context = _entries(ref.split, rng, ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    # other people and years, then pages, which always have an answer
    kind, asked = draw_question(lambda kind_: _ASK[kind_](ref.split, rng, entries), kind, "pages")
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string" if ref.split == "dev" else "list of dicts",
        entries=len(entries),
    )
