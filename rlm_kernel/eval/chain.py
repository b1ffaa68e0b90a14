"""Two chained facts across many short documents (after BrowseComp-Plus): find one, then the other.

The context is many short documents, a list of strings or a dict ``{id: text}`` (they alternate by
index), each holding one fact among a few sentences of filler. One document links an item to a
record ("Parcel 48213 was handed to courier Velma Strand."); another, at least a quarter of the
documents away, gives that record's value ("Courier Velma Strand's depot is in Ostby."). The
question names only the item, so the answer needs both hops. Distractors: many other items
linked to other records, every record with a value in the same wordings, near misses of the
record (the same first name with another surname, the same surname with another first name, or a
case number with two digits swapped) that have values of their own, and near misses of the item
linked to them. The item and the record occur in exactly those two documents. Score: ``contains``;
the value is never part of the record's name or the item, so naming the record is no answer.

Documents: ``max(40, chars // 275)`` in ``dev``, ``max(40, chars // 250)`` in ``test`` (what a
document costs on average); ``meta`` records the real size.

Splits: ``dev`` follows parcels to couriers to their depots' towns; ``test`` follows lab specimens
to case files to the examiners who lead them. Wordings, filler, names and ids are the split's own.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .tasks import Task, TaskRef, family

__all__ = ["DOMAINS", "make"]


@dataclass(frozen=True)
class Domain:
    links: tuple[str, ...]  # "{item}" -> "{record}"
    values: tuple[str, ...]  # "{record}" -> "{value}"
    questions: tuple[str, ...]
    filler: tuple[str, ...]
    key: str  # the dict's keys: "{i}" formatted
    doc_chars: int  # about what a document costs


DOMAINS = {
    "dev": Domain(
        links=(
            "Parcel {item} was handed to courier {record}.",
            "Courier {record} signed for parcel {item} at the sorting desk.",
            "The scanner shows parcel {item} leaving the hub with {record}.",
            "{record} took parcel {item} out on the morning round.",
            "Parcel {item} went out in the van of {record}.",
        ),
        values=(
            "Courier {record} has a depot in {value}.",
            "{record} works out of the depot in {value}.",
            "The roster lists {record} under the {value} depot.",
            "{record} has been based at the depot in {value} since spring.",
        ),
        questions=(
            "In which town is the depot of the courier who got parcel {item}?",
            "Parcel {item} was given to a courier. In which town is that courier's depot?",
        ),
        filler=(
            "The morning round started {n} minutes late because of roadworks.",
            "Two vans were sent for a tyre check on {day}.",
            "The sorting belt stopped twice before noon and was restarted.",
            "Rain slowed the afternoon deliveries on the coast road.",
            "A customer asked for a redelivery window after {n} o'clock.",
            "The hub manager reminded everyone to scan every label twice.",
            "Fuel cards were renewed for the whole fleet on {day}.",
            "{n} signatures were missing from yesterday's manifests.",
            "The loading bay door is stuck half open again.",
            "New cages for oversized boxes arrived on {day}.",
            "Traffic on the ring road added {n} minutes to the long routes.",
            "The night shift cleared the backlog of returns.",
            "A pallet of garden furniture was left at the wrong dock.",
            "Handheld scanners were charged overnight without problems.",
            "The weekly safety talk was about lifting heavy boxes.",
        ),
        key="slip-{i:05d}",
        doc_chars=275,
    ),
    "test": Domain(
        links=(
            "Specimen {item} was filed under case {record}.",
            "The intake log assigns specimen {item} to case {record}.",
            "Case {record} now holds specimen {item}.",
            "Specimen {item} belongs to the evidence of case {record}.",
        ),
        values=(
            "Case {record} is led by examiner {value}.",
            "Examiner {value} heads the work on case {record}.",
            "{value} was put in charge of case {record}.",
            "The lead on case {record} is {value}.",
        ),
        questions=(
            "Who leads the case that specimen {item} was filed under?",
            "Specimen {item} sits in a case file. Who is in charge of that case?",
        ),
        filler=(
            "The centrifuge in bay {n} was recalibrated this week.",
            "Freezer temperatures stayed within range all night.",
            "A shipment of sterile swabs arrived on {day}.",
            "The fume hood alarm was tested and works again.",
            "{n} slides were relabelled after the printer jammed.",
            "Gloves of the smaller size are out of stock until {day}.",
            "The chain-of-custody forms now need two signatures.",
            "Microscope {n} is booked for maintenance on {day}.",
            "The cold room door must stay closed during transfers.",
            "Reagent lot numbers were copied into the ledger.",
            "A visitor badge was found near the autoclave.",
            "The spectrometer run took {n} minutes longer than planned.",
            "Waste bins for sharps were emptied on {day}.",
            "Backups of the imaging server finished overnight.",
            "Bench space by the window is reserved for training.",
        ),
        key="memo/{i}",
        doc_chars=250,
    ),
}

_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")

_NAMES = {  # dev: couriers (records); test: examiners (values)
    "dev": (
        ("Velma", "Arlo", "Brigid", "Cosmo", "Delphine", "Emrys", "Fenna", "Gideon", "Hester", "Ivo", "Juno",
         "Kasimir", "Liesel", "Magnus", "Nerys", "Orrin", "Petra", "Quill", "Rosalind", "Soren", "Tamsin",
         "Ulric", "Vesna", "Wilder", "Xanthe", "Yorick", "Zelda", "Anouk", "Bram", "Cerys", "Dorian",
         "Elspeth", "Falk", "Greer", "Hollis", "Inka", "Jory", "Kit", "Linnea", "Milo"),
        ("Strand", "Abbott", "Birch", "Calloway", "Dunmore", "Eckhart", "Fairweather", "Garland", "Hale",
         "Ingram", "Jessop", "Kettering", "Lovell", "Marsh", "Nettles", "Oakes", "Pryce", "Quarrie", "Rook",
         "Sutter", "Thorne", "Upfield", "Vance", "Whitlock", "Yardley", "Ashdown", "Blythe", "Crane",
         "Darrow", "Elwood", "Finch", "Gower", "Hartley", "Irwin", "Jarvis", "Kemble", "Lockwood", "Mercer",
         "Norris", "Pell", "Radley", "Sexton", "Tolland", "Voss", "Wren", "Yates"),
    ),
    "test": (
        ("Ilse", "Anselm", "Beatrix", "Casimir", "Dagny", "Evander", "Flora", "Gunnar", "Hedda", "Isak",
         "Jolene", "Konrad", "Lorna", "Matthias", "Nadia", "Osric", "Pia", "Ragnar", "Sabine", "Tobias"),
        ("Marrow", "Achterberg", "Bellweather", "Castellan", "Dreyfus", "Eastwick", "Fogarty", "Grimshaw",
         "Holloway", "Ishikawa", "Jankowski", "Kilbride", "Lindgren", "Montague", "Nakamura", "Ostrander",
         "Penhallow", "Quennell", "Rasmussen", "Salter"),
    ),
}  # fmt: skip

_TOWN = (
    ("Ost", "Kar", "Bel", "Dun", "Wex", "Hal", "Mor", "Tal", "Ferr", "Gal", "Lin", "Nor", "Pen", "Rav", "Sel",
     "Tor", "Ul", "Var", "Wyn", "Yar", "Bram", "Cal", "Dor", "Esk", "Frey"),
    ("by", "wick", "mere", "stead", "holm", "ford", "thorpe", "haven", "dale", "combe", "gate", "ness",
     "ley", "bury", "wold", "garth"),
)  # fmt: skip
_CASE_LETTERS = "KRTMVH"


def _towns() -> list[str]:
    return [a + b for a in _TOWN[0] for b in _TOWN[1]]


def _swap(text: str, rng: random.Random) -> str:
    """The text with two different neighbouring digits swapped."""
    spots = [
        i
        for i in range(len(text) - 1)
        if text[i].isdigit() and text[i + 1].isdigit() and text[i] != text[i + 1]
    ]
    if not spots:
        return ""
    i = rng.choice(spots)
    return text[:i] + text[i + 1] + text[i] + text[i + 2 :]


def _items(rng: random.Random, split: str, n: int) -> list[str]:
    if split == "dev":
        return [str(x) for x in rng.sample(range(10_000, 100_000), n)]
    first, second = "ABCDEFGHJ", "LMNPQRSTX"
    return [f"{first[p % 9]}{second[p // 9 % 9]}-{1000 + p // 81}" for p in rng.sample(range(81 * 9000), n)]


def _records(rng: random.Random, split: str, n: int) -> list[str]:
    if split == "dev":
        first, last = _NAMES["dev"]
        picks = rng.sample(range(len(first) * len(last)), min(n, len(first) * len(last)))
        return [f"{first[p // len(last)]} {last[p % len(last)]}" for p in picks]
    return [f"{_CASE_LETTERS[p % 6]}-{p // 6}" for p in rng.sample(range(6 * 1000, 6 * 10_000), n)]


def _values(rng: random.Random, split: str) -> list[str]:
    if split == "dev":
        return _towns()
    first, last = _NAMES["test"]
    return [f"{a} {b}" for a in first for b in last]


def _near(target: str, records: list[str], split: str, rng: random.Random) -> list[str]:
    """Records that look like the target: same first name or same surname, or two digits swapped
    and another letter."""
    if split == "dev":
        first, last = target.split()
        same = [r for r in records if r != target and (r.split()[0] == first or r.split()[1] == last)]
        rng.shuffle(same)
        return same[:4]
    out = []
    for candidate in (_swap(target, rng), rng.choice(_CASE_LETTERS.replace(target[0], "")) + target[1:]):
        if candidate and candidate not in records:
            out.append(candidate)
    return out


def _doc(rng: random.Random, d: Domain, fact: str | None) -> str:
    """A few sentences of filler with the fact (if any) among them."""
    sentences = [
        s.format(n=rng.randint(2, 95), day=rng.choice(_DAYS)) for s in rng.sample(d.filler, rng.randint(2, 6))
    ]
    if fact:
        sentences.insert(rng.randint(0, len(sentences)), fact)
    return " ".join(sentences)


@family("chain", "two chained facts across many short documents: an item's record, then the record's value")
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    d = DOMAINS[ref.split]
    n_docs = max(40, ref.chars // d.doc_chars)
    n_records = max(12, n_docs // 3)
    records = _records(rng, ref.split, n_records)
    target = records[0]
    near = _near(target, records, ref.split, rng)
    for r in near:
        if r not in records:
            records.append(r)
    pool = _values(rng, ref.split)
    value_of = {r: rng.choice(pool) for r in records}
    taken = {value_of[r] for r in near}
    value_of[target] = rng.choice([v for v in pool if v not in taken and v.lower() not in target.lower()])
    n_links = max(10, n_docs - len(records) - n_docs // 10)
    items = _items(rng, ref.split, n_links)
    item = items[0]
    near_items = [x for x in (_swap(item, rng), _swap(item, rng)) if x and x not in items]
    near_items = list(dict.fromkeys(near_items))
    others = [r for r in records if r != target]
    link_of = {x: rng.choice(others) for x in items[1:]}
    for x in near_items:  # a near-miss item goes to a near-miss record where there is one
        link_of[x] = rng.choice(near or others)

    def fact(templates: tuple[str, ...], **slots: str) -> str:
        return rng.choice(templates).format(**slots)

    docs = [_doc(rng, d, fact(d.values, record=r, value=value_of[r])) for r in records[1:]]
    docs += [_doc(rng, d, fact(d.links, item=x, record=r)) for x, r in link_of.items()]
    docs += [_doc(rng, d, None) for _ in range(n_docs // 10)]
    rng.shuffle(docs)
    link_doc = _doc(rng, d, fact(d.links, item=item, record=target))
    value_doc = _doc(rng, d, fact(d.values, record=target, value=value_of[target]))
    total = len(docs) + 2
    link_at = rng.randrange(total)  # the value's document is a quarter of the documents away or more
    value_at = rng.choice([i for i in range(total) if abs(i - link_at) >= max(1, total // 4)])
    for at, text in sorted([(link_at, link_doc), (value_at, value_doc)]):
        docs.insert(at, text)
    context: object = docs if ref.index % 2 == 0 else {d.key.format(i=i + 1): t for i, t in enumerate(docs)}
    return Task(
        id=ref.id,
        family="chain",
        context=context,
        question=rng.choice(d.questions).format(item=item),
        answer=value_of[target],
        scorer="contains",
        split=ref.split,
        length=ref.length,
        meta={
            "container": "list" if ref.index % 2 == 0 else "dict",
            "item": item,
            "record": target,
            "link_at": link_at,
            "value_at": value_at,
            "near_records": near,
            "near_items": near_items,
            "documents": len(docs),
            "chars": sum(len(t) for t in docs),
        },
        ref=ref,
    )
