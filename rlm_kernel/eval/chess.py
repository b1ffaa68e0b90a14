"""Questions about chess games: a club tournament's games as one PGN file (``dev``), or an online
player's games as a chess site's JSON export, a list of dicts (``test``).

What a notebook holds when someone looks back over a season's games: who played whom, with which
colour, the result, the ratings, the opening and the moves. Players whose names nearly match
another's stand beside each other (``Nowak, Pawel`` and ``Novak, Pavel``). Games are added round by
round (or day by day) until the text (or the indented JSON) is about the length asked for. Kinds of
question:

- ``count``: the games one player won with the black pieces (``dev``), or lost on time (``test``);
- ``total``: one player's score, a point a win and half a draw (``dev``), or the sum of one user's
  rating changes in rated games (``test``);
- ``top``: the player with the most wins (``dev``), or the user with the most blitz wins
  (``test``) (a clear leader);
- ``lookup``: the opening code of one round's game between two players (``dev``), or one user's
  rating in one game (``test``).

Every answer is computed from the games the generator wrote. Score: ``exact``.

Splits: ``dev`` is a PGN file (the seven tag roster with ``WhiteElo``, ``BlackElo``, ``ECO``,
``TimeControl``, ``PlyCount`` and sometimes ``Opening`` or ``Annotator``, then the movetext with
move numbers and the odd comment); ``test`` is a list of game dicts (``id``, ``rated``, ``speed``,
``createdAt``, ``status``, ``players`` with ``user``, ``rating`` and ``ratingDiff``, ``winner``,
``opening``, ``moves``, ``clock``): other containers, fields, players and wording.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_LINES = (  # ECO, opening, a real line
    ("C50", "Italian Game", "e4 e5 Nf3 Nc6 Bc4 Bc5 c3 Nf6 d3 d6 O-O O-O Re1 a6 Bb3 Ba7 h3 h6"),
    (
        "B90",
        "Sicilian Defense: Najdorf Variation",
        "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6 Be3 e5 Nb3 Be6 f3 Be7",
    ),
    ("D37", "Queen's Gambit Declined", "d4 d5 c4 e6 Nc3 Nf6 Nf3 Be7 Bf4 O-O e3 c5 dxc5 Bxc5 Qc2 Nc6"),
    ("E92", "King's Indian Defense", "d4 Nf6 c4 g6 Nc3 Bg7 e4 d6 Nf3 O-O Be2 e5 O-O Nc6 d5 Ne7"),
    ("A29", "English Opening: Four Knights", "c4 e5 Nc3 Nf6 Nf3 Nc6 g3 d5 cxd5 Nxd5 Bg2 Nb6 O-O Be7 d3 O-O"),
    ("C01", "French Defense: Exchange Variation", "e4 e6 d4 d5 exd5 exd5 Nf3 Nf6 Bd3 Bd6 O-O O-O Bg5 Bg4"),
    (
        "B12",
        "Caro-Kann Defense: Advance Variation",
        "e4 c6 d4 d5 e5 Bf5 Nf3 e6 Be2 c5 Be3 Nd7 O-O Ne7 c3 Nc6",
    ),
    (
        "C67",
        "Ruy Lopez: Berlin Defense",
        "e4 e5 Nf3 Nc6 Bb5 Nf6 O-O Nxe4 d4 Nd6 Bxc6 dxc6 dxe5 Nf5 Qxd8+ Kxd8",
    ),
    ("D02", "Queen's Pawn Game: London System", "d4 d5 Nf3 Nf6 Bf4 e6 e3 c5 c3 Nc6 Nbd2 Bd6 Bg3 O-O Bd3 b6"),
    ("A45", "Trompowsky Attack", "d4 Nf6 Bg5 e6 e4 h6 Bxf6 Qxf6 Nc3 d6 Qd2 g5 O-O-O Nc6"),
)

_DEV_PLAYERS = (
    "Nowak, Pawel", "Novak, Pavel", "Kovacs, Anna", "Kovac, Ana", "Berger, Tom", "Bergmann, Tom",
    "Ivanova, Daria", "Ivanov, Dmitri", "Okafor, Chinedu", "Lindqvist, Sara", "Lindquist, Sam",
    "Moreau, Luc", "Morel, Lucie", "Haas, Jonas", "Fischer, Lena", "Fisher, Leon",
)  # fmt: skip
_TEST_USERS = (
    "pawnstorm77", "pawnstorm7", "KnightOwl_22", "knight_owl", "Zugzwang_Zoe", "zugzwangzack", "BishopPair",
    "bishop_pairs", "endgame_ed", "EndgameEddie", "rookie_riya", "castle_queen", "castlequeen99",
)  # fmt: skip


@dataclass
class Game:
    white: int
    black: int
    result: str  # 1-0, 0-1, 1/2-1/2
    line: int
    plies: int
    when: datetime
    round: str
    welo: int
    belo: int
    status: str = "resign"
    rated: bool = True
    speed: str = "blitz"
    wdiff: int = 0
    bdiff: int = 0
    id: str = ""


def _games(split: str, seed: str, n: int) -> list[Game]:
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    names = _DEV_PLAYERS if dev else _TEST_USERS
    strength = [rng.uniform(-1, 1) for _ in names]
    elo = [round(1650 + 250 * s + rng.gauss(0, 60)) for s in strength]
    games: list[Game] = []
    when = datetime(2024, 9, 3, 19, 0) if dev else datetime(2024, 6, 1, 8, 12)
    rnd = 0
    ids: set[str] = set()
    alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    while len(games) < n:
        if dev:  # a round: everyone paired
            rnd += 1
            order = rng.sample(range(len(names)), len(names))
            pairs = [(order[i], order[i + 1]) for i in range(0, len(order) - 1, 2)]
            when += timedelta(days=7)
        else:
            pairs = [tuple(rng.sample(range(len(names)), 2))]
            when += timedelta(minutes=rng.randint(9, 600))
        for board, (w, b) in enumerate(pairs, 1):
            edge = strength[w] - strength[b] + 0.1
            x = rng.random()
            result = "1-0" if x < 0.42 + 0.25 * edge else "1/2-1/2" if x < 0.58 + 0.2 * edge else "0-1"
            line = rng.randrange(len(_LINES))
            plies = rng.randint(8, len(_LINES[line][2].split()))
            g = Game(w, b, result, line, plies, when, f"{rnd}.{board}", elo[w], elo[b])
            if not dev:
                g.speed = rng.choice(("blitz", "blitz", "rapid", "bullet"))
                g.rated = rng.random() < 0.8
                if result == "1/2-1/2":
                    g.status = rng.choice(("draw", "stalemate", "draw"))
                else:
                    g.status = rng.choice(("resign", "resign", "mate", "outoftime"))
                while not g.id or g.id in ids:
                    g.id = "".join(rng.choice(alphabet) for _ in range(8))
                ids.add(g.id)
                if g.rated:
                    score = 1.0 if result == "1-0" else 0.5 if result != "0-1" else 0.0
                    expected = 1 / (1 + 10 ** ((elo[b] - elo[w]) / 400))
                    g.wdiff = round(20 * (score - expected)) or rng.choice((1, -1))
                    g.bdiff = -g.wdiff + rng.choice((-1, 0, 1))
                    elo[w] += g.wdiff
                    elo[b] += g.bdiff
            games.append(g)
    return games


# -- the files ----------------------------------------------------------------------------------


def _movetext(line: int, plies: int, result: str, rng: random.Random) -> str:
    moves = _LINES[line][2].split()[:plies]
    out = []
    for i, m in enumerate(moves):
        if i % 2 == 0:
            out.append(f"{i // 2 + 1}.")
        out.append(m)
        if i == 5 and rng.random() < 0.2:
            out.append(rng.choice(("{Book}", "{Still theory}", "{A new move for me}")))
    out.append(result)
    text, width = [], 0
    for token in out:  # lines of at most 80 characters, as export formats write them
        if width + len(token) + 1 > 80:
            text.append("\n")
            width = 0
        elif text:
            text.append(" ")
            width += 1
        text.append(token)
        width += len(token)
    return "".join(text)


def _pgn(games: list[Game], seed: str) -> str:
    rng = random.Random(seed)
    out = []
    for k, g in enumerate(games):
        tags = [
            ("Event", "Riverside Chess Club Autumn Championship 2024"),
            ("Site", "Riverside CC"),
            ("Date", f"{g.when:%Y.%m.%d}"),
            ("Round", g.round),
            ("White", _DEV_PLAYERS[g.white]),
            ("Black", _DEV_PLAYERS[g.black]),
            ("Result", g.result),
            ("WhiteElo", str(g.welo)),
            ("BlackElo", str(g.belo)),
            ("ECO", _LINES[g.line][0]),
        ]
        if rng.random() < 0.5:
            tags.append(("Opening", _LINES[g.line][1].split(":")[0]))
        tags += [("TimeControl", "5400+30"), ("PlyCount", str(g.plies))]
        if k % 11 == 3:
            tags.append(("Annotator", "Club bulletin"))
        out.append(
            "\n".join(f'[{t} "{v}"]' for t, v in tags) + "\n\n" + _movetext(g.line, g.plies, g.result, rng)
        )
    return "\n\n".join(out) + "\n"


def _json(games: list[Game]) -> list[dict]:
    out = []
    clocks = {"blitz": (300, 3), "rapid": (600, 5), "bullet": (60, 0)}
    for g in games:
        eco, name, line = _LINES[g.line]
        initial, inc = clocks[g.speed]
        ms = int((g.when - datetime(1970, 1, 1)).total_seconds() * 1000)
        side = {}
        for colour, who, rating, diff in (
            ("white", g.white, g.welo, g.wdiff),
            ("black", g.black, g.belo, g.bdiff),
        ):
            user = _TEST_USERS[who]
            side[colour] = {"user": {"name": user, "id": user.lower()}, "rating": rating}
            if g.rated:
                side[colour]["ratingDiff"] = diff
        game = {
            "id": g.id,
            "rated": g.rated,
            "variant": "standard",
            "speed": g.speed,
            "perf": g.speed,
            "createdAt": ms,
            "lastMoveAt": ms + 1000 * (initial + 40 * g.plies),
            "status": g.status,
            "players": side,
        }
        if g.result != "1/2-1/2":
            game["winner"] = "white" if g.result == "1-0" else "black"
        game["opening"] = {"eco": eco, "name": name, "ply": min(g.plies, 8)}
        game["moves"] = " ".join(line.split()[: g.plies])
        game["clock"] = {"initial": initial, "increment": inc, "totalTime": initial + 40 * inc}
        out.append(game)
    return out


def _fit(split: str, seed: str, chars: int) -> tuple[list[Game], object]:
    per = 390 if split == "dev" else 720
    n = max(8, chars // per)
    for _ in range(6):
        games = _games(split, seed, n)
        context = _pgn(games, seed) if split == "dev" else _json(games)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(8, round(n * chars / size))
    return games, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _winner(g: Game) -> int | None:
    return g.white if g.result == "1-0" else g.black if g.result == "0-1" else None


def _ask_count(split: str, rng: random.Random, games: list[Game]) -> _Asked:
    g = rng.choice(games)
    if split == "dev":
        who = rng.choice((g.white, g.black))
        n = sum(x.black == who and x.result == "0-1" for x in games)
        q = f"How many games did {_DEV_PLAYERS[who]} win with the black pieces?"
        return q, n, {"player": _DEV_PLAYERS[who]}
    who = rng.choice((g.white, g.black))
    n = sum(x.status == "outoftime" and who in (x.white, x.black) and _winner(x) != who for x in games)
    q = f"Count the games user {_TEST_USERS[who]} lost on time."
    return q, n, {"user": _TEST_USERS[who]}


def _ask_total(split: str, rng: random.Random, games: list[Game]) -> _Asked:
    g = rng.choice(games)
    who = rng.choice((g.white, g.black))
    if split == "dev":
        points = sum(
            (1.0 if _winner(x) == who else 0.5 if _winner(x) is None else 0.0)
            for x in games
            if who in (x.white, x.black)
        )
        answer = int(points) if points == int(points) else points
        q = f"What was {_DEV_PLAYERS[who]}'s total score in the tournament, counting 1 a win and 1/2 a draw?"
        return q, answer, {"player": _DEV_PLAYERS[who]}
    net = sum(
        (x.wdiff if x.white == who else x.bdiff) for x in games if x.rated and who in (x.white, x.black)
    )
    q = f"Summing ratingDiff over the rated games of {_TEST_USERS[who]}, what is the net rating change?"
    return q, net, {"user": _TEST_USERS[who]}


def _ask_top(split: str, rng: random.Random, games: list[Game]) -> _Asked:
    if split == "dev":
        wins = {}
        for x in games:
            if _winner(x) is not None:
                wins[_DEV_PLAYERS[_winner(x)]] = wins.get(_DEV_PLAYERS[_winner(x)], 0) + 1
        top = _leader(wins)
        q = "Which player won the most games? Give the name as the PGN tags write it."
        return None if top is None else (q, top, {})
    speed = rng.choice(("blitz", "rapid"))
    wins = {}
    for x in games:
        if _winner(x) is not None and x.speed == speed:
            wins[_TEST_USERS[_winner(x)]] = wins.get(_TEST_USERS[_winner(x)], 0) + 1
    top = _leader(wins)
    q = f"Among {speed} games, whose user name has the most wins?"
    return None if top is None else (q, top, {"speed": speed})


def _ask_lookup(split: str, rng: random.Random, games: list[Game]) -> _Asked:
    g = rng.choice(games)
    if split == "dev":
        rnd = g.round.split(".")[0]
        q = (
            f"In round {rnd}, {_DEV_PLAYERS[g.white]} had White against {_DEV_PLAYERS[g.black]}. "
            "What ECO code does that game carry?"
        )
        return q, _LINES[g.line][0], {"round": rnd, "white": _DEV_PLAYERS[g.white]}
    who = rng.choice((g.white, g.black))
    rating = g.welo if who == g.white else g.belo
    q = f"Report the rating {_TEST_USERS[who]} played at in game {g.id}."
    return q, rating, {"id": g.id, "user": _TEST_USERS[who]}


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "chess",
    "chess games: a club tournament's PGN file as a string (dev), or a chess site's JSON export as a "
    "list of dicts (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    games, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, games), kind, "lookup", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="string (PGN)" if ref.split == "dev" else "list of dicts (game export JSON)",
        games=len(games),
    )
