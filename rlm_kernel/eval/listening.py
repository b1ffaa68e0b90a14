"""Questions about a music listening history: a streaming service's extended streaming history
export as a list of dicts (``dev``), or a scrobbling service's scrobbles loaded into a pandas
DataFrame (``test``).

What a notebook holds when someone looks back at what they listened to: one record a play, with
when it ended, the track, artist and album, and (in ``dev``) how long it played, how it started
and ended, shuffle and skip flags, the platform, and podcast episodes whose track fields are
empty; or (in ``test``) one row a scrobble, with the track's length where the service knows it
and the album where the player sent one. Artists whose names extend another's and tracks that
share a title with a remaster stand beside each other. Plays are added session by session over a
few months until the text (the indented JSON, or the frame as CSV) is about the length asked
for. Kinds of question:

- ``count``: the streams of one track that played for at least 30 seconds (``dev``), or one
  artist's scrobbles on one day (``test``);
- ``total``: the minutes spent on one artist in one month (``dev``), or the minutes of one
  album's scrobbles from their track lengths (``test``);
- ``top``: the artist with the most listening time (``dev``), or the most scrobbles in one month
  (``test``) (a clear leader);
- ``lookup``: how long one stream played (``dev``), or the album one track was scrobbled from
  (``test``).

Every answer is computed from the plays the generator wrote. pandas is needed only to build the
``test`` frame. Score: ``exact``.

Splits: ``dev`` is the export's records (``ts`` in UTC with ``Z``, ``platform``, ``ms_played``,
``conn_country``, ``master_metadata_track_name``, ``master_metadata_album_artist_name``,
``master_metadata_album_album_name``, ``spotify_track_uri``, ``episode_name``,
``episode_show_name``, ``spotify_episode_uri``, ``reason_start``, ``reason_end``, ``shuffle``,
``skipped``, ``offline``, ``incognito_mode``); ``test`` is a DataFrame, newest first (``uts``
int64, ``utc_time`` datetime64 in UTC, ``artist`` categorical, ``album`` with NaN where the
scrobble has none, ``track``, ``track_mbid`` with NaN, ``loved`` bool, ``duration_ms`` float with
NaN where unknown): other containers, fields, artists and wording.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_Album = tuple[str, str, tuple[tuple[str, int], ...]]  # artist, album, (track, length in ms)

_DEV_ALBUMS: tuple[_Album, ...] = (
    ("Fleetwood Mac", "Rumours (Super Deluxe)", (
        ("Dreams - 2004 Remaster", 257800), ("The Chain - 2004 Remaster", 270213),
        ("Go Your Own Way - 2004 Remaster", 223613), ("Never Going Back Again - 2004 Remaster", 134400),
    )),
    ("Fleetwood Mac", "50 Years - Don't Stop", (
        ("Dreams", 254960), ("Everywhere", 227826), ("Landslide", 199493), ("Little Lies", 219373),
    )),
    ("Fleet Foxes", "Helplessness Blues", (
        ("Montezuma", 217546), ("Helplessness Blues", 302826), ("The Shrine / An Argument", 485053),
        ("Lorelai", 266013),
    )),
    ("Tame Impala", "Currents", (
        ("Let It Happen", 467586), ("The Less I Know The Better", 216320), ("Eventually", 318586),
        ("New Person, Same Old Mistakes", 362240),
    )),
    ("Tame Impala", "The Slow Rush", (("Borderline", 237800), ("Lost in Yesterday", 249946))),
    ("Arctic Monkeys", "AM", (
        ("Do I Wanna Know?", 272394), ("R U Mine?", 201726),
        ("Why'd You Only Call Me When You're High?", 161124), ("Arabella", 207213),
    )),
    ("Arctic Monkeys", "Favourite Worst Nightmare", (("Fluorescent Adolescent", 172866), ("505", 253586))),
    ("Khruangbin", "Mordechai", (
        ("Time (You and I)", 253040), ("Pelota", 208000), ("So We Won't Forget", 262986),
    )),
    ("Khruangbin & Leon Bridges", "Texas Sun", (("Texas Sun", 251373), ("C-Side", 200320))),
    ("Phoebe Bridgers", "Punisher", (
        ("Kyoto", 184440), ("Garden Song", 221200), ("Savior Complex", 242773), ("I Know The End", 344226),
    )),
    ("boygenius", "the record", (("Not Strong Enough", 234306), ("$20", 222693), ("Cool About It", 197240))),
    ("Daft Punk", "Random Access Memories", (
        ("Get Lucky (feat. Pharrell Williams and Nile Rodgers)", 369626),
        ("Instant Crush (feat. Julian Casablancas)", 337560), ("Lose Yourself to Dance", 353893),
    )),
    ("Daft Punk", "Discovery", (
        ("One More Time", 320357), ("Digital Love", 301373), ("Harder, Better, Faster, Stronger", 224693),
    )),
)  # fmt: skip
_DEV_SHOWS = (  # show, episodes
    ("The Daily", ("The Sunday Read: 'The Fish Farm'", "A Cease-Fire Deal", "The Election Map, Explained")),
    ("Song Exploder", ("Phoebe Bridgers - Kyoto", "Tame Impala - Let It Happen")),
)
_TEST_ALBUMS: tuple[_Album, ...] = (
    ("Radiohead", "In Rainbows", (
        ("Weird Fishes/Arpeggi", 318186), ("Reckoner", 290213), ("Nude", 255093), ("House of Cards", 328280),
    )),
    ("Radiohead", "OK Computer", (
        ("Karma Police", 264066), ("Paranoid Android", 387186), ("No Surprises", 229120),
    )),
    ("Thom Yorke", "ANIMA", (("Dawn Chorus", 272733), ("Not the News", 352573))),
    ("Beach House", "Bloom", (("Myth", 258373), ("Wild", 300040), ("Lazuli", 301320))),
    ("Beach House", "Depression Cherry", (("Space Song", 320466), ("Levitation", 387080))),
    ("Beach Fossils", "Clash the Truth", (("Sleep Apnea", 170866), ("Generational Synthetic", 171280))),
    ("The National", "High Violet", (
        ("Bloodbuzz Ohio", 276733), ("England", 340533), ("Terrible Love", 279893),
    )),
    ("The National", "Boxer", (("Fake Empire", 205373), ("Slow Show", 247400), ("Apartment Story", 212573))),
    ("Bon Iver", "For Emma, Forever Ago", (
        ("Skinny Love", 238493), ("Flume", 219120), ("Re: Stacks", 401466),
    )),
    ("Bon Iver", "Bon Iver, Bon Iver", (("Holocene", 336973), ("Perth", 262826), ("Calgary", 250973))),
    ("Japanese Breakfast", "Jubilee", (
        ("Be Sweet", 230666), ("Kokomo, IN", 214373), ("Savage Good Boy", 218000),
    )),
    ("Alvvays", "Blue Rev", (
        ("Belinda Says", 191906), ("Pharmacist", 141453), ("After the Earthquake", 185080),
    )),
    ("Caribou", "Our Love", (("Can't Do Without You", 235586), ("Silver", 252226), ("Back Home", 195106))),
    ("Caribou", "Suddenly", (("Home", 200333), ("Never Come Back", 268693), ("You and I", 216546))),
    ("Fred again..", "Actual Life 3 (January 1 - September 9 2022)", (
        ("Delilah (pull me out of this)", 249000), ("Danielle (smile on my face)", 234833),
    )),
    ("Fred again.. & Brian Eno", "Secret Life", (("Enough", 214120), ("Trust", 198426))),
)  # fmt: skip
_PLATFORMS = ("android", "ios", "osx", "windows", "web_player chrome", "not_applicable")
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@dataclass
class Play:
    end: datetime  # UTC
    album: int  # -1: a podcast episode
    track: int  # the track of the album, or the episode of the show
    ms: int  # how long it played (dev); the track's length (test)
    start: str = "trackdone"
    why: str = "trackdone"
    shuffle: bool = False
    skipped: bool | None = False
    platform: str = "android"
    offline: bool = False
    show_album: bool = True  # test: the scrobble carries its album


def _albums(split: str) -> tuple[_Album, ...]:
    return _DEV_ALBUMS if split == "dev" else _TEST_ALBUMS


def _plays(split: str, seed: str, n: int) -> list[Play]:
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    albums = _albums(split)
    liking = [rng.uniform(0.2, 2.5) for _ in albums]
    start = datetime(2024, 1, 3, 6, 40) if dev else datetime(2024, 2, 1, 7, 15)
    when = start
    span = 150 * 86400  # a few months, whatever the length
    sessions = max(3, n // 2)  # about two plays a session
    out: list[Play] = []
    while len(out) < n:
        when += timedelta(seconds=round(rng.expovariate(sessions / span)) + 600)
        platform = rng.choice(_PLATFORMS[:5])
        if dev and rng.random() < 0.08:  # a podcast episode
            show = rng.randrange(len(_DEV_SHOWS))
            ms = rng.randint(600_000, 2_400_000)
            when += timedelta(milliseconds=ms)
            p = Play(when, -1, show * 10 + rng.randrange(len(_DEV_SHOWS[show][1])), ms, "clickrow", "endplay")
            p.skipped, p.platform = None, platform
            out.append(p)
            continue
        a = rng.choices(range(len(albums)), liking)[0]
        tracks = list(range(len(albums[a][2])))
        shuffle = rng.random() < 0.3
        if shuffle:
            rng.shuffle(tracks)
        first = True
        for t in tracks[: rng.randint(1, len(tracks))]:
            length = albums[a][2][t][1]
            p = Play(when, a, t, length, "clickrow" if first else "trackdone", "trackdone", shuffle)
            p.platform = platform
            if dev:
                x = rng.random()
                if x < 0.22:
                    p.why, p.ms, p.skipped = "fwdbtn", rng.randint(1_200, min(length, 75_000)), True
                elif x < 0.28:
                    p.why, p.ms = rng.choice(("endplay", "logout")), rng.randint(5_000, length)
                else:
                    p.ms = length - rng.randint(0, 900)
                if rng.random() < 0.1:
                    p.skipped = None
                p.offline = rng.random() < 0.05
            else:
                p.show_album = rng.random() > 0.07
            when += timedelta(milliseconds=p.ms + rng.randint(0, 4_000))
            p.end = when.replace(microsecond=0)
            out.append(p)
            first = False
            if len(out) >= n:
                break
    return out


# -- the files ----------------------------------------------------------------------------------


def _id(rng: random.Random, k: int) -> str:
    return "".join(rng.choice(_B62) for _ in range(k))


def _export(plays: list[Play], seed: str) -> list[dict]:
    rng = random.Random(seed)
    uris = {
        (a, t): f"spotify:track:{_id(random.Random(f'{name}/{track}'), 22)}"
        for a, (_, name, tracks) in enumerate(_DEV_ALBUMS)
        for t, (track, _) in enumerate(tracks)
    }
    out = []
    for p in plays:
        row: dict = {"ts": f"{p.end:%Y-%m-%dT%H:%M:%SZ}", "platform": p.platform, "ms_played": p.ms}
        row["conn_country"] = "DE" if rng.random() < 0.9 else rng.choice(("AT", "NL", "FR"))
        none = {"master_metadata_track_name": None, "master_metadata_album_artist_name": None,
                "master_metadata_album_album_name": None, "spotify_track_uri": None}  # fmt: skip
        if p.album < 0:
            show, episode = _DEV_SHOWS[p.track // 10][0], _DEV_SHOWS[p.track // 10][1][p.track % 10]
            row |= none | {
                "episode_name": episode,
                "episode_show_name": show,
                "spotify_episode_uri": f"spotify:episode:{_id(random.Random(episode), 22)}",
            }
        else:
            artist, album, tracks = _DEV_ALBUMS[p.album]
            row |= {
                "master_metadata_track_name": tracks[p.track][0],
                "master_metadata_album_artist_name": artist,
                "master_metadata_album_album_name": album,
                "spotify_track_uri": uris[p.album, p.track],
                "episode_name": None,
                "episode_show_name": None,
                "spotify_episode_uri": None,
            }
        row |= {
            "reason_start": p.start,
            "reason_end": p.why,
            "shuffle": p.shuffle,
            "skipped": p.skipped,
            "offline": p.offline,
            "offline_timestamp": int(p.end.replace(tzinfo=timezone.utc).timestamp()) if p.offline else None,
            "incognito_mode": False,
        }
        out.append(row)
    return out


def _track_facts(split: str) -> dict[tuple[int, int], tuple[str | None, bool, bool]]:
    """Each test track's MusicBrainz id (or None), whether it is loved, whether its length is known."""
    out = {}
    for a, (artist, _, tracks) in enumerate(_TEST_ALBUMS):
        for t, (track, _) in enumerate(tracks):
            r = random.Random(f"{split}/{artist}/{track}")
            mbid = "-".join(_hex(r, k) for k in (8, 4, 4, 4, 12)) if r.random() < 0.6 else None
            out[a, t] = (mbid, r.random() < 0.2, r.random() > 0.12)
    return out


def _hex(rng: random.Random, k: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(k))


def _frame(plays: list[Play]) -> pd.DataFrame:
    import pandas as pd  # only here: listing and the dev split need no pandas

    facts = _track_facts("test")
    rows = sorted(plays, key=lambda p: p.end, reverse=True)  # newest first, as the export lists them
    uts = [int(p.end.replace(tzinfo=timezone.utc).timestamp()) for p in rows]
    nan = float("nan")
    return pd.DataFrame(
        {
            "uts": pd.array(uts, dtype="int64"),
            "utc_time": pd.to_datetime(uts, unit="s", utc=True),
            "artist": pd.Categorical([_TEST_ALBUMS[p.album][0] for p in rows]),
            "album": [_TEST_ALBUMS[p.album][1] if p.show_album else nan for p in rows],
            "track": [_TEST_ALBUMS[p.album][2][p.track][0] for p in rows],
            "track_mbid": [facts[p.album, p.track][0] or nan for p in rows],
            "loved": [facts[p.album, p.track][1] for p in rows],
            "duration_ms": [float(p.ms) if facts[p.album, p.track][2] else nan for p in rows],
        }
    )


def _fit(split: str, seed: str, chars: int) -> tuple[list[Play], object]:
    per = 780 if split == "dev" else 112
    n = max(10, chars // per)
    for _ in range(6):
        plays = _plays(split, seed, n)
        context = _export(plays, seed) if split == "dev" else _frame(plays)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(10, round(n * chars / size))
    return plays, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _music(plays: list[Play]) -> list[Play]:
    return [p for p in plays if p.album >= 0]


def _ask_count(split: str, rng: random.Random, plays: list[Play]) -> _Asked:
    p = rng.choice(_music(plays))
    artist, _, tracks = _albums(split)[p.album]
    if split == "dev":
        track = tracks[p.track][0]
        n = sum(
            x.album >= 0
            and _DEV_ALBUMS[x.album][2][x.track][0] == track
            and _DEV_ALBUMS[x.album][0] == artist
            and x.ms >= 30_000
            for x in plays
        )
        q = (
            f'How many times was "{track}" by {artist} streamed for at least 30 seconds (ms_played of 30000 '
            "or more)?"
        )
        return q, n, {"track": track, "artist": artist}
    day = p.end.date()
    n = sum(_TEST_ALBUMS[x.album][0] == artist and x.end.date() == day for x in plays)
    q = f"Count the scrobbles of {artist} on {day} (by utc_time)."
    return q, n, {"artist": artist, "day": f"{day}"}


def _ask_total(split: str, rng: random.Random, plays: list[Play]) -> _Asked:
    p = rng.choice(_music(plays))
    if split == "dev":
        artist = _DEV_ALBUMS[p.album][0]
        month = f"{p.end:%Y-%m}"
        ms = sum(
            x.ms for x in _music(plays) if _DEV_ALBUMS[x.album][0] == artist and f"{x.end:%Y-%m}" == month
        )
        q = (
            f"How many minutes did I spend listening to {artist} in {p.end:%B %Y} (UTC), adding up "
            "ms_played? Round to one decimal."
        )
        return q, round(ms / 60_000, 1), {"artist": artist, "month": month}
    if not p.show_album:
        return None
    facts = _track_facts("test")
    album = _TEST_ALBUMS[p.album][1]
    ms = sum(x.ms for x in plays if x.album == p.album and x.show_album and facts[x.album, x.track][2])
    if not ms:
        return None
    q = (
        f'Summing duration_ms over every scrobble of the album "{album}" (rows without a duration add '
        "nothing), how many minutes is that, to one decimal?"
    )
    return q, round(ms / 60_000, 1), {"album": album}


def _ask_top(split: str, rng: random.Random, plays: list[Play]) -> _Asked:
    albums = _albums(split)
    if split == "dev":
        spent: dict = {}
        for x in _music(plays):
            spent[albums[x.album][0]] = spent.get(albums[x.album][0], 0) + x.ms
        top = _leader(spent)
        q = (
            "Which artist (master_metadata_album_artist_name) has the largest total ms_played in the whole "
            "history?"
        )
        return None if top is None else (q, top, {})
    month = f"{rng.choice(plays).end:%Y-%m}"
    counts: dict = {}
    for x in plays:
        if f"{x.end:%Y-%m}" == month:
            counts[albums[x.album][0]] = counts.get(albums[x.album][0], 0) + 1
    top = _leader(counts)
    q = f"Who is the most scrobbled artist in {month} (utc_time)?"
    return None if top is None else (q, top, {"month": month})


def _ask_lookup(split: str, rng: random.Random, plays: list[Play]) -> _Asked:
    p = rng.choice(_music(plays))
    artist, album, tracks = _albums(split)[p.album]
    track = tracks[p.track][0]
    if split == "dev":
        ts = f"{p.end:%Y-%m-%dT%H:%M:%SZ}"
        if sum(f"{x.end:%Y-%m-%dT%H:%M:%SZ}" == ts for x in plays) > 1:
            return None
        q = f'What was the ms_played of the stream of "{track}" whose ts is {ts}?'
        return q, p.ms, {"track": track, "ts": ts}
    if not p.show_album:
        return None
    q = f'On which album is "{track}" by {artist} scrobbled?'
    return q, album, {"track": track, "artist": artist}


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "listening",
    "a music listening history: a streaming service's export as a list of dicts (dev), or scrobbles as "
    "a pandas DataFrame (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    plays, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, plays), kind, "count", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="list of dicts (streaming history)" if ref.split == "dev" else "DataFrame (scrobbles)",
        plays=len(plays),
    )
