"""Questions about subtitles: a TV series' SubRip files as a dict of file name to text (``dev``) or
a recorded meeting's WebVTT transcript as one string (``test``).

What a notebook holds when someone studies a show's dialogue or a meeting's transcript: numbered
cues with a start and an end time and who speaks (a ``NAME:`` label in the series' subtitles for
the hard of hearing, with sound cues in brackets among them; a voice tag in the transcript, a long
turn split over several cues). Speakers whose names extend another's stand beside each other
(``TOM`` and ``TOMMY``). Cues are added until the indented JSON (or the text) is about the length
asked for. Kinds of question:

- ``lines``: how many cues one character speaks in one episode (``dev``), or one speaker's cues
  that start in a stretch of the meeting (``test``);
- ``time``: how many seconds one character's cues are on screen in one episode (``dev``), or one
  speaker's cues last in all (``test``), to the millisecond;
- ``most``: the character with the most cues over every episode (``dev``), or the speaker of the
  most words (``test``) (a clear leader);
- ``first``: when the first cue of one episode that says a word starts, as written (``dev``), or
  who says a word first (``test``).

Every answer is computed from the cues the generator wrote. Score: ``exact`` (numbers as numbers,
names and times without case).

Splits: ``dev`` holds a season's ``.srt`` files of a coastal drama (cue numbers, ``HH:MM:SS,mmm``
times, upper-case speaker labels, ``[door slams]`` cues, some two-line cues); ``test`` is a
Teams-like ``WEBVTT`` transcript of a council committee (cue ids of a GUID and a counter,
``HH:MM:SS.mmm`` times, ``<v Name>`` voice tags, a ``NOTE`` header): other containers, people and
wording.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("lines", "time", "most", "first")

_DEV_SHOW = "Harbour.Lights"
_DEV_PEOPLE = (
    "MARGARET", "TOM", "TOMMY", "ELSIE", "ARTHUR", "YOUNG ARTHUR", "SGT. DOYLE", "NELL", "MR. PRICE",
    "MRS. PRICE",
)  # fmt: skip
_DEV_LINES = (
    "Where were you last night?", "I told you not to come here.", "You don't get to decide that.",
    "It's nothing. Go back to bed.", "Has anyone seen my coat?", "We can't keep doing this.",
    "Your father would have known what to do.", "Not now, please.", "Then tell me the truth.",
    "The tide's turning. We should go.", "I'll be back before dark.", "Who else knows?",
    "Keep your voice down.", "She's not coming back, is she?", "I never asked for any of this.",
    "You look like you've seen a ghost.", "Sit down. Have some tea.", "That's not what I heard.",
    "Give me one good reason.", "I'm sorry. I truly am.", "Is that blood?", "Leave it with me.",
    "Promise me you won't tell him.", "It was an accident.", "What time is it?",
)  # fmt: skip
_DEV_KEYED = (
    "Did you see the {w} this morning?", "Nobody's touched the {w} in years.", "Tell me about the {w}.",
    "The {w} was gone when I got there.", "Forget the {w}, we've got bigger problems.",
    "I found this by the {w}.",
)  # fmt: skip
_DEV_WORDS = (
    "lighthouse", "ferry", "ledger", "telegram", "lantern", "chapel", "smokehouse", "trawler", "locket",
    "boathouse", "quarry", "signal box",
)  # fmt: skip
_DEV_SOUNDS = (
    "[door slams]", "[gulls crying]", "[phone ringing]", "[thunder rumbles]", "[footsteps approaching]",
    "[engine starts]", "[waves crashing]", "[dog barking]", "[tense music]", "[glass shatters]",
)  # fmt: skip

_TEST_PEOPLE = (
    "Priya Raman", "Priya Ramanathan", "Daniel Okoye", "Helen Marsh", "Helen Marshall", "Tomasz Wójcik",
    "Grace Adeyemi", "Robert Fenn", "Aisha Karim",
)  # fmt: skip
_TEST_LINES = (
    "Can everyone hear me all right?", "I think we should move on to the next item.",
    "Thank you, Chair, just a quick point on that.", "I'd like that noted in the minutes, please.",
    "We did consult residents on this last autumn.", "The officers' report covers that on page twelve.",
    "I'm not sure the numbers add up, to be honest.", "Could we have a show of hands?",
    "That was deferred at the last meeting.", "Sorry, I was on mute.",
    "I'll take that away and come back to you.",
    "Can I just check the recommendation as written?", "We need to be mindful of the budget position.",
    "I second that.", "There's a lot of concern in my ward about this.", "Let's take a five minute break.",
    "The legal advice is fairly clear on that point.", "I'll hand over to the officer to answer that.",
    "So, to summarise where we've got to.", "Any further questions before we vote?",
)  # fmt: skip
_TEST_KEYED = (
    "The {w} keeps coming up in the consultation responses.", "What's the timetable for the {w}?",
    "I have real reservations about the {w}.", "Could officers say more about the {w}?",
    "The {w} was in the original business case.", "We've had letters about the {w} as well.",
)  # fmt: skip
_TEST_WORDS = (
    "cycle lane", "bus gate", "parking levy", "flood barrier", "library hub", "tree survey",
    "viaduct", "allotments", "leisure centre", "skate park", "tram extension", "car club",
)  # fmt: skip


@dataclass
class Cue:
    episode: str  # file name (dev) or "" (test)
    number: int
    start: int  # milliseconds
    end: int
    speaker: str  # "" for a sound
    lines: list[str]

    @property
    def text(self) -> str:
        return " ".join(self.lines)


def _says(cue: Cue, word: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", cue.text, re.I) is not None


def _cues(split: str, seed: str, n: int) -> list[Cue]:
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    people = _DEV_PEOPLE if dev else _TEST_PEOPLE
    weights = [rng.uniform(0.3, 3.0) for _ in people]
    lines, keyed, words = (
        (_DEV_LINES, _DEV_KEYED, _DEV_WORDS) if dev else (_TEST_LINES, _TEST_KEYED, _TEST_WORDS)
    )
    cues: list[Cue] = []
    episode, number, at, per, speaker = 0, 0, 0, 0, ""
    for _ in range(n):
        if dev and (episode == 0 or number >= per):
            episode, number, at, per = episode + 1, 0, rng.randint(2000, 9000), rng.randint(320, 480)
        number += 1
        at += rng.randint(200, 2500) if dev else rng.randint(40, 900)
        if dev and rng.random() < 0.08:
            text, speaker = [rng.choice(_DEV_SOUNDS)], ""
        else:
            if dev or not speaker or rng.random() < 0.45:  # a turn goes on over several cues
                speaker = rng.choices(people, weights)[0]
            say = rng.choice(keyed).format(w=rng.choice(words)) if rng.random() < 0.12 else rng.choice(lines)
            text = [say]
            if rng.random() < 0.3:
                text.append(rng.choice(lines))
        length = 900 + 55 * len(" ".join(text)) + rng.randint(0, 800)
        name = f"{_DEV_SHOW}.S02E{episode:02d}.en.srt" if dev else ""
        cues.append(Cue(name, number, at, at + length, speaker, text))
        at += length
    return cues


# -- the files ----------------------------------------------------------------------------------


def _clock(ms: int, sep: str) -> str:
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}{sep}{ms % 1000:03d}"


def _srt(cues: list[Cue]) -> dict[str, str]:
    files: dict[str, list[str]] = {}
    for c in cues:
        out = files.setdefault(c.episode, [])
        text = list(c.lines)
        if c.speaker:
            text[0] = f"{c.speaker}: {text[0]}"
        out += [str(c.number), f"{_clock(c.start, ',')} --> {_clock(c.end, ',')}", *text, ""]
    return {name: "\n".join(lines) for name, lines in files.items()}


def _vtt(cues: list[Cue], rng: random.Random) -> str:
    guid = f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-"
    guid += f"{rng.getrandbits(16) | 0x8000:04x}-{rng.getrandbits(48):012x}"
    out = [
        "WEBVTT - Planning and Transport Committee, recorded meeting",
        "",
        "NOTE",
        "Transcript generated automatically. Speaker names are shown as they joined the meeting.",
        "",
    ]
    for c in cues:
        lines = [f"<v {c.speaker}>{c.lines[0]}", *c.lines[1:]]
        lines[-1] += "</v>"
        out += [f"{guid}/{c.number}-0", f"{_clock(c.start, '.')} --> {_clock(c.end, '.')}", *lines, ""]
    return "\n".join(out)


def _fit(split: str, seed: str, chars: int) -> tuple[list[Cue], object]:
    per = 82 if split == "dev" else 150
    n = max(20, chars // per)
    for _ in range(6):
        cues = _cues(split, seed, n)
        context = _srt(cues) if split == "dev" else _vtt(cues, random.Random(seed))
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(20, round(n * chars / size))
    return cues, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _spoken(cues: list[Cue]) -> list[Cue]:
    return [c for c in cues if c.speaker]


def _ask_lines(split: str, rng: random.Random, cues: list[Cue]) -> _Asked:
    c = rng.choice(_spoken(cues))
    if split == "dev":
        n = sum(x.episode == c.episode and x.speaker == c.speaker for x in cues)
        q = f"How many subtitle cues are spoken by {c.speaker} in {c.episode}?"
        return q, n, {"file": c.episode, "speaker": c.speaker}
    first = c.start // 60_000 - rng.randint(0, 10)
    first = max(0, first)
    last = c.start // 60_000 + rng.randint(1, 20)
    n = sum(x.speaker == c.speaker and first * 60_000 <= x.start < last * 60_000 for x in cues)
    a, b = _clock(first * 60_000, ".")[:8], _clock(last * 60_000, ".")[:8]
    q = f"Count the transcript cues of {c.speaker} that start at or after {a} and before {b}."
    return q, n, {"speaker": c.speaker, "from_ms": first * 60_000, "to_ms": last * 60_000}


def _ask_time(split: str, rng: random.Random, cues: list[Cue]) -> _Asked:
    c = rng.choice(_spoken(cues))
    if split == "dev":
        ms = sum(x.end - x.start for x in cues if x.episode == c.episode and x.speaker == c.speaker)
        q = (
            f"In {c.episode}, for how many seconds in total are {c.speaker}'s cues on screen "
            "(end minus start, to the millisecond)?"
        )
        return q, round(ms / 1000, 3), {"file": c.episode, "speaker": c.speaker}
    ms = sum(x.end - x.start for x in cues if x.speaker == c.speaker)
    q = f"Summing end minus start over all of {c.speaker}'s cues, how many seconds does that speaker talk?"
    return q, round(ms / 1000, 3), {"speaker": c.speaker}


def _ask_most(split: str, rng: random.Random, cues: list[Cue]) -> _Asked:
    counts: Counter = Counter()
    for x in _spoken(cues):
        counts[x.speaker] += 1 if split == "dev" else len(x.text.split())
    ranked = counts.most_common(2)
    if len(ranked) < 2 or ranked[0][1] == ranked[1][1]:
        return None
    if split == "dev":
        q = "Over every episode's subtitles, which character has the most spoken cues?"
        return q, ranked[0][0], {}
    q = "Who in the transcript speaks the most words (counting the words of their cues)?"
    return q, ranked[0][0], {}


def _ask_first(split: str, rng: random.Random, cues: list[Cue]) -> _Asked:
    words = _DEV_WORDS if split == "dev" else _TEST_WORDS
    c = rng.choice(cues)
    word = rng.choice(words)
    if split == "dev":
        said = [x for x in cues if x.episode == c.episode and _says(x, word)]
        if not said:
            return None
        q = f'In {c.episode}, at what time (as written in the file) does the first cue saying "{word}" start?'
        return q, _clock(said[0].start, ","), {"file": c.episode, "word": word}
    said = [x for x in cues if _says(x, word)]
    if not said:
        return None
    q = f'Which speaker is the first to say "{word}" in the meeting?'
    return q, said[0].speaker, {"word": word}


_ASK = {"lines": _ask_lines, "time": _ask_time, "most": _ask_most, "first": _ask_first}


@family(
    "subtitles",
    "subtitles: a series' SRT files as a dict of file name to text (dev) or a meeting's WebVTT "
    "transcript as a string (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    cues, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    # other speakers, episodes and words, then one speaker's cues in an episode or in the meeting
    kind, asked = draw_question(lambda kind_: _ASK[kind_](ref.split, rng, cues), kind, "time", nonzero=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="dict of strings (file name -> SRT text)" if ref.split == "dev" else "string (WebVTT)",
        cues=len(cues),
    )
