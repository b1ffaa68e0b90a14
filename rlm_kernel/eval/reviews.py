"""Questions about app store reviews: an app's customer reviews from an app store's developer API,
the JSON:API response with the developer's responses included beside the reviews, as a nested dict
(``dev``), or another app's monthly reviews report from another store's developer console, the CSV
as one string (``test``).

What a notebook holds when someone reads what users say about an app: each review's rating, title,
text, nickname, date and storefront, and the developer's response to it with its state; or each
review's app version, language, device, submission and last update times, star rating and text, with
the developer's reply and a link that carries the review's id. The API writes its dates in the
store's own time zone with their UTC offset (which moves with daylight saving time), keeps the
responses apart under ``included`` (a review points to its response by id, or to none), names
storefronts by three-letter country codes, repeats titles from review to review (``Love it``) and
lets nicknames extend another's (``Sam`` and ``Sam W.``); a bad release brings a burst of one-star
reviews. The console's report writes its times in UTC (``Z``) and again as milliseconds since the
epoch, leaves the title empty, the version empty where it is not known and the device empty on some
rows, keeps the review's id only inside its link, and holds reviews edited after they were written
(the star rating the last one given). Reviews are added until the indented JSON (or the text) is
about the length asked for. Kinds of question:

- ``count``: one storefront's reviews of so many stars, or its low ratings with no response
  (``dev``); one version's low ratings, or one language's reviews with no reply (``test``);
- ``mean``: the average rating of one storefront's reviews, or of one month's (``dev``); of one
  version code's reviews, or of one day's (``test``);
- ``top``: the storefront with the most reviews of so many stars, or the day with the most one-star
  reviews (``dev``); the device with the most one-star reviews, or the version with the most low
  ratings (``test``) (a clear leader);
- ``lookup``: one review's rating, or the day its response was last changed (``dev``); one review's
  star rating, or the hours between it and the developer's reply (``test``).

Every answer is computed from the reviews the generator wrote. Score: ``exact``.

Splits: ``dev`` is the response (``data``, each with ``type``, ``id``, ``attributes`` with
``rating``, ``title``, ``body``, ``reviewerNickname``, ``createdDate`` and ``territory``,
``relationships`` with ``response`` and ``links``; ``included``, each response with ``type``, ``id``,
``attributes`` with ``responseBody``, ``lastModifiedDate`` and ``state``; ``links``; ``meta`` with
``paging``); ``test`` is the report (``Package Name``, ``App Version Code``, ``App Version Name``,
``Reviewer Language``, ``Device``, ``Review Submit Date and Time``, ``Review Submit Millis Since
Epoch``, ``Review Last Update Date and Time``, ``Review Last Update Millis Since Epoch``, ``Star
Rating``, ``Review Title``, ``Review Text``, ``Developer Reply Date and Time``, ``Developer Reply
Millis Since Epoch``, ``Developer Reply Text``, ``Review Link``): other containers, fields, apps and
wording.
"""

from __future__ import annotations

import csv
import io
import random
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from fractions import Fraction

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "mean", "top", "lookup")

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _mean(values: list[int]) -> float | None:
    """The mean of whole numbers, to two decimals; None where it lies on a rounding tie."""
    if not values:
        return None
    exact = Fraction(sum(values) * 100, len(values))
    whole = exact.numerator // exact.denominator
    if exact - whole == Fraction(1, 2):
        return None
    return (whole + (exact - whole > Fraction(1, 2))) / 100


_STARS = (1, 2, 3, 4, 5)
_STAR_WEIGHTS = (24, 8, 8, 13, 47)
_GOOD = (
    "Does exactly what I need and nothing more.",
    "I've tried a dozen of these and this is the one I kept.",
    "Clean design, quick to open, and the widgets are great.",
    "Worth every penny of the subscription, honestly.",
    "Syncs between my phone and tablet without any fuss.",
    "The reminders actually got me into a routine.",
    "Support answered my question within a day, which I did not expect.",
    "Love the dark mode and the little streak animations.",
)
_MIXED = (
    "Good app, but the yearly price went up a lot.",
    "Mostly fine, though the widget sometimes shows yesterday's data.",
    "Would be five stars if I could export my data to CSV.",
    "Nice idea, a bit slow to load on my older phone.",
)
_BAD = (
    "Since the last update it crashes every time I open it.",
    'Lost all my history after the update, "restore" does nothing.',
    "Keeps logging me out, have to sign in every single day.",
    "Too many pop-ups asking me to upgrade, I just want the basics.",
    "Sync is broken, my entries from this week are gone.",
    "Charged twice for the subscription and nobody answers emails.",
)
_FOREIGN = {
    "DEU": ("Super App, nutze sie jeden Tag.", "Seit dem Update stürzt die App ständig ab."),
    "FRA": (
        "Application très pratique, je recommande.",
        "Depuis la mise à jour, impossible de se connecter.",
    ),
    "JPN": ("毎日使っています。とても便利です。", "アップデート後に起動しなくなりました。"),
    "BRA": ("Aplicativo muito bom, uso todo dia.", "Depois da atualização o app fecha sozinho."),
}


def _text(rng: random.Random, stars: int, where: str | None = None) -> str:
    if where in _FOREIGN and rng.random() < 0.6:
        return _FOREIGN[where][stars <= 2]
    pool = _GOOD if stars >= 4 else _MIXED if stars == 3 else _BAD
    return " ".join(rng.sample(pool, rng.randrange(1, 3)))


# -- the dev customer reviews -------------------------------------------------------------------

_TERRITORIES = ("USA", "GBR", "CAN", "AUS", "DEU", "FRA", "JPN", "NLD", "IRL", "IND", "BRA", "NZL")
_TERRITORY_WEIGHTS = (40, 12, 8, 6, 8, 5, 4, 3, 2, 5, 3, 2)
_TITLES = {
    5: ("Love it", "Love it!", "Best habit app", "Five stars", "Life changing", "Perfect", "Great app"),
    4: ("Great app", "Really good", "Almost perfect", "Very handy"),
    3: ("It's okay", "Decent", "Could be better", "Price hike"),
    2: ("Getting worse", "Buggy", "Disappointed"),
    1: ("Crashes on launch", "Lost my data", "Broken after update", "Scam", "Sync broken", "Worst update"),
}
_NICKS = (
    "Sam",
    "Sam W.",
    "jess_runs",
    "TheRealDan",
    "coffee_addict",
    "K8 from Leeds",
    "mike",
    "mike1987",
    "happycamper",
    "Nat",
    "bookworm22",
    "Dr. Rob",
    "amanda_k",
    "RunnerGirl",
    "pixelpusher",
    "dad of 3",
    "Lena",
    "Lena M",
    "oz_traveller",
    "jp_user",
    "Kevin",
    "KevinB",
    "nora",
    "priya.s",
    "zzz",
    "Gabi",
)


@dataclass
class Review:
    ident: str
    rating: int
    title: str
    body: str
    nickname: str
    created: datetime  # UTC
    territory: str
    response: tuple[str, str, datetime, str] | None = None  # id, body, last modified (UTC), state


def _pacific(t: datetime) -> datetime:
    """``t`` (UTC) in the store's zone: US Pacific, daylight time from the second Sunday of March to
    the first Sunday of November."""
    march = date(t.year, 3, 8 + (6 - date(t.year, 3, 8).weekday()) % 7)
    november = date(t.year, 11, 1 + (6 - date(t.year, 11, 1).weekday()) % 7)
    dst = (
        datetime(march.year, march.month, march.day, 10)
        <= t
        < datetime(november.year, november.month, november.day, 9)
    )
    hours = -7 if dst else -8
    return (t + timedelta(hours=hours)).replace(tzinfo=timezone(timedelta(hours=hours)))


def _apple(t: datetime) -> str:
    return _pacific(t).isoformat()


def _nick(rng: random.Random, used: set[str]) -> str:
    free = [n for n in _NICKS if n not in used]
    name = rng.choice(free) if free else f"{rng.choice(_NICKS).strip()}{rng.randrange(10, 10000)}"
    while name in used:
        name = f"{rng.choice(_NICKS).strip()}{rng.randrange(10, 10000)}"
    used.add(name)
    return name


def _review(rng: random.Random, t: datetime, stars: int, used: set[str]) -> Review:
    territory = rng.choices(_TERRITORIES, _TERRITORY_WEIGHTS)[0]
    ident = "-".join(f"{rng.getrandbits(bits):0{bits // 4}x}" for bits in (32, 16, 16, 16))
    r = Review(
        ident + "-" + f"{rng.getrandbits(48):012x}",
        stars,
        rng.choice(_TITLES[stars]),
        _text(rng, stars, territory),
        _nick(rng, used),
        t,
        territory,
    )
    if rng.random() < (0.5 if stars <= 2 else 0.3 if stars == 3 else 0.08):
        reply = (
            "Thanks for the kind words! "
            if stars >= 4
            else "Sorry about this. Please write to support@streakly.app with your account's email."
        )
        when = t + timedelta(minutes=rng.randrange(40, 60 * 24 * 9))
        state = "PENDING_PUBLISH" if rng.random() < 0.12 else "PUBLISHED"
        r.response = (f"{rng.getrandbits(32):08x}-{rng.getrandbits(48):012x}", reply, when, state)
    return r


def _dev_reviews(seed: str, n: int) -> list[Review]:
    rng = random.Random(f"{seed}/{n}")
    days = max(7, min(150, n))
    start = datetime(2023, 1, 2) + timedelta(days=rng.randrange(0, 600))
    bursts = [start + timedelta(days=rng.randrange(days)) for _ in range(1 + days // 40)]
    used: set[str] = set()
    out = []
    for _ in range(n):
        if rng.random() < 0.18:  # a bad release: one-star reviews the day after
            day = rng.choice(bursts) + timedelta(days=1)
            stars = rng.choice((1, 1, 1, 2))
        else:
            day = start + timedelta(days=rng.randrange(days))
            stars = rng.choices(_STARS, _STAR_WEIGHTS)[0]
        t = day + timedelta(seconds=rng.randrange(86400))
        out.append(_review(rng, t, stars, used))
    out.sort(key=lambda r: r.created, reverse=True)  # sort=-createdDate
    return out


def _response(reviews: list[Review], seed: str) -> dict:
    rng = random.Random(seed)
    app = rng.randrange(10**9, 2 * 10**9)
    api = "https://api.appstoreconnect.apple.com/v1"
    data, included = [], []
    for r in reviews:
        link = f"{api}/customerReviews/{r.ident}"
        data.append(
            {
                "type": "customerReviews",
                "id": r.ident,
                "attributes": {
                    "rating": r.rating,
                    "title": r.title,
                    "body": r.body,
                    "reviewerNickname": r.nickname,
                    "createdDate": _apple(r.created),
                    "territory": r.territory,
                },
                "relationships": {
                    "response": {
                        "data": None
                        if r.response is None
                        else {"type": "customerReviewResponses", "id": r.response[0]},
                        "links": {"self": f"{link}/relationships/response", "related": f"{link}/response"},
                    }
                },
                "links": {"self": link},
            }
        )
        if r.response is not None:
            ident, body, when, state = r.response
            included.append(
                {
                    "type": "customerReviewResponses",
                    "id": ident,
                    "attributes": {"responseBody": body, "lastModifiedDate": _apple(when), "state": state},
                    "relationships": {
                        "review": {
                            "links": {"self": f"{api}/customerReviewResponses/{ident}/relationships/review"}
                        }
                    },
                    "links": {"self": f"{api}/customerReviewResponses/{ident}"},
                }
            )
    return {
        "data": data,
        "included": included,
        "links": {"self": f"{api}/apps/{app}/customerReviews?include=response&limit=200&sort=-createdDate"},
        "meta": {"paging": {"total": len(data), "limit": 200}},
    }


# -- the test reviews report --------------------------------------------------------------------

_DEVICES = (
    "a52q",
    "a53x",
    "dm3q",
    "b0q",
    "o1s",
    "panther",
    "oriole",
    "cheetah",
    "lynx",
    "redfin",
    "OnePlus8T",
    "RMX3363",
    "M2101K6G",
    "OP5958L1",
    "ASUS_I005D",
)
_LANGUAGES = ("en", "de", "fr", "es", "pt", "it", "hi", "nl", "ja")
_LANGUAGE_WEIGHTS = (50, 10, 7, 9, 8, 4, 5, 3, 4)
_PLAY_FOREIGN = {"de": "DEU", "fr": "FRA", "ja": "JPN", "pt": "BRA"}
_PLAY_REPLY = (
    "Hi, thanks for the feedback. We've fixed this in the latest version, please update and let us know.",
    "Sorry for the trouble! Please contact us at help@pocketplanner.io and we'll sort it out.",
    "Thank you for your review! We're glad you like it.",
)


@dataclass
class PlayReview:
    code: int | None
    name: str | None
    language: str
    device: str
    submitted: datetime  # UTC
    updated: datetime
    stars: int
    text: str
    reply: tuple[datetime, str] | None
    ident: str


def _versions(rng: random.Random, start: datetime) -> list[tuple[int, str, datetime]]:
    code, major, minor = rng.randrange(300, 900) * 100, rng.randrange(2, 7), rng.randrange(0, 20)
    out = []
    released = start - timedelta(days=rng.randrange(20, 60))
    for _ in range(rng.randrange(4, 7)):
        out.append((code, f"{major}.{minor}.{rng.randrange(0, 4)}", released))
        code += rng.randrange(3, 40)
        minor += 1
        released += timedelta(days=rng.randrange(5, 14))
    return out


def _play_review(rng: random.Random, t: datetime, versions: list, ident: str) -> PlayReview:
    available = [v for v in versions if v[2] <= t] or versions[:1]
    code, name, _ = rng.choice(available[-3:]) if rng.random() < 0.95 else (None, None, None)
    buggy = name is not None and name == versions[-2][1]
    stars = (
        rng.choice((1, 1, 2, 3)) if buggy and rng.random() < 0.5 else rng.choices(_STARS, _STAR_WEIGHTS)[0]
    )
    language = rng.choices(_LANGUAGES, _LANGUAGE_WEIGHTS)[0]
    updated = t if rng.random() < 0.85 else t + timedelta(seconds=rng.randrange(600, 86400 * 5))
    reply = None
    if rng.random() < (0.45 if stars <= 2 else 0.12):
        at = updated + timedelta(seconds=rng.randrange(1800, 86400 * 4))
        reply = (at, _PLAY_REPLY[2] if stars >= 4 else rng.choice(_PLAY_REPLY[:2]))
    return PlayReview(
        code,
        name,
        language,
        "" if rng.random() < 0.06 else rng.choice(_DEVICES),
        t,
        updated,
        stars,
        _text(rng, stars, _PLAY_FOREIGN.get(language)),
        reply,
        ident,
    )


def _test_reviews(seed: str, n: int) -> tuple[list[PlayReview], str]:
    rng = random.Random(f"{seed}/{n}")
    month = date(2023, 1, 1) + timedelta(days=31 * rng.randrange(0, 24))
    start = datetime(month.year, month.month, 1)
    days = ((start + timedelta(days=32)).replace(day=1) - start).days
    versions = _versions(rng, start)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    out = []
    seen: set[datetime] = set()
    while len(out) < n:
        t = start + timedelta(seconds=rng.randrange(days * 86400 - 86400 * 5))
        if t in seen:
            continue
        seen.add(t)
        ident = "gp:AOqpTO" + "".join(rng.choice(alphabet) for _ in range(46))
        out.append(_play_review(rng, t, versions, ident))
    out.sort(key=lambda r: r.submitted)
    return out, f"{month:%Y%m}"


def _z(t: datetime | None) -> str:
    return "" if t is None else f"{t:%Y-%m-%dT%H:%M:%S}Z"


def _ms(t: datetime | None) -> str:
    return "" if t is None else str(round(t.replace(tzinfo=timezone.utc).timestamp() * 1000))


def _report(data: tuple[list[PlayReview], str], seed: str) -> str:
    reviews, _ = data
    rng = random.Random(seed)
    package = "io.pocketplanner.android"
    developer, app = rng.randrange(10**18, 10**19), rng.randrange(10**18, 10**19)
    console = f"http://play.google.com/console/developers/{developer}/app/{app}"
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "Package Name",
            "App Version Code",
            "App Version Name",
            "Reviewer Language",
            "Device",
            "Review Submit Date and Time",
            "Review Submit Millis Since Epoch",
            "Review Last Update Date and Time",
            "Review Last Update Millis Since Epoch",
            "Star Rating",
            "Review Title",
            "Review Text",
            "Developer Reply Date and Time",
            "Developer Reply Millis Since Epoch",
            "Developer Reply Text",
            "Review Link",
        ]
    )
    for r in reviews:
        at, reply = r.reply if r.reply else (None, "")
        w.writerow(
            [
                package,
                "" if r.code is None else r.code,
                r.name or "",
                r.language,
                r.device,
                _z(r.submitted),
                _ms(r.submitted),
                _z(r.updated),
                _ms(r.updated),
                r.stars,
                "",
                r.text,
                _z(at),
                _ms(at),
                reply,
                f"{console}/user-feedback/review-details?reviewId={r.ident}&corpus=PUBLIC_REVIEWS",
            ]
        )
    return buf.getvalue()


def _fit(split: str, seed: str, chars: int) -> tuple[object, object, int]:
    """The reviews nearest the size asked for, of a few tries."""
    per = 760 if split == "dev" else 430
    n = max(6, chars // per)
    best: tuple[float, object, object, int] | None = None
    for _ in range(8):
        if split == "dev":
            data: object = _dev_reviews(seed, n)
            context: object = _response(data, seed)
        else:
            data = _test_reviews(seed, n)
            context = _report(data, seed)
        size = len(as_text(context))
        miss = abs(size - chars) / chars
        if best is None or miss < best[0]:
            best = (miss, data, context, n)
        if 0.9 * chars <= size <= 1.1 * chars:
            break
        n = max(6, round(n * chars / size))
    assert best is not None
    return best[1], best[2], best[3]


# -- questions ----------------------------------------------------------------------------------


def _same(local: object, utc: object) -> object:
    """An answer that reads the same by the written dates and by UTC, else None."""
    return local if local == utc else None


def _dev_count(rng: random.Random, reviews: list[Review]) -> _Asked:
    r = rng.choice(reviews)
    if rng.random() < 0.5:
        n = sum(x.territory == r.territory and x.rating == r.rating for x in reviews)
        q = f"How many {r.rating}-star reviews have the territory {r.territory}?"
        return q, n, {"territory": r.territory, "rating": r.rating}
    low = [x for x in reviews if x.rating <= 2 and x.response is None] or [r]
    t = rng.choice(low).territory
    n = sum(x.territory == t and x.rating <= 2 and x.response is None for x in reviews)
    q = f"How many reviews rated 1 or 2 stars from territory {t} have no developer response at all?"
    return q, n, {"territory": t, "max_rating": 2}


def _dev_mean(rng: random.Random, reviews: list[Review]) -> _Asked:
    r = rng.choice(reviews)
    if rng.random() < 0.5:
        mean = _mean([x.rating for x in reviews if x.territory == r.territory])
        q = f"What is the average rating of the reviews from territory {r.territory}? Two decimals."
        return None if mean is None else (q, mean, {"territory": r.territory})
    month = f"{_pacific(r.created):%Y-%m}"
    local = _mean([x.rating for x in reviews if f"{_pacific(x.created):%Y-%m}" == month])
    utc = _mean([x.rating for x in reviews if f"{x.created:%Y-%m}" == month])
    mean = _same(local, utc)
    q = f"What is the average rating of the reviews created in {_pacific(r.created):%B %Y}? Two decimals."
    return None if mean is None else (q, mean, {"month": month})


def _dev_top(rng: random.Random, reviews: list[Review]) -> _Asked:
    r = rng.choice(reviews)
    if rng.random() < 0.5:
        top = _leader(Counter(x.territory for x in reviews if x.rating == r.rating))
        q = f"Which territory has the most reviews rated {r.rating} stars?"
        return None if top is None else (q, top, {"rating": r.rating, "by": "territory"})
    ones = [x for x in reviews if x.rating == 1]
    local = _leader(Counter(f"{_pacific(x.created):%Y-%m-%d}" for x in ones))
    utc = _leader(Counter(f"{x.created:%Y-%m-%d}" for x in ones))
    top = _same(local, utc)
    q = "On which day were the most 1-star reviews created? Answer as YYYY-MM-DD."
    return None if top is None else (q, top, {"rating": 1, "by": "day"})


def _dev_lookup(rng: random.Random, reviews: list[Review]) -> _Asked:
    answered = [x for x in reviews if x.response is not None]
    r = rng.choice(reviews)
    if answered and rng.random() < 0.5:
        r = rng.choice(answered)
    if sum(x.nickname == r.nickname and x.title == r.title for x in reviews) != 1:
        return None
    params = {"reviewerNickname": r.nickname, "title": r.title}
    if r.response is None:
        q = f"What rating did {r.nickname} give in the review titled '{r.title}'?"
        return q, r.rating, {**params, "field": "rating"}
    when = _same(f"{_pacific(r.response[2]):%Y-%m-%d}", f"{r.response[2]:%Y-%m-%d}")
    q = (
        f"On what date was the developer's response to {r.nickname}'s review titled '{r.title}' last "
        "modified? Answer as YYYY-MM-DD."
    )
    return None if when is None else (q, when, {**params, "field": "lastModifiedDate"})


def _test_count(rng: random.Random, data: tuple) -> _Asked:
    reviews, _ = data
    r = rng.choice(reviews)
    if rng.random() < 0.5:
        low = [x for x in reviews if x.stars <= 2 and x.name] or [r]
        name = rng.choice(low).name
        if not name:
            return None
        n = sum(x.name == name and x.stars <= 2 for x in reviews)
        q = f"Count the reviews of App Version Name {name} with a Star Rating of 1 or 2."
        return q, n, {"App Version Name": name, "max_stars": 2}
    n = sum(x.language == r.language and x.reply is None for x in reviews)
    q = f"Tally the reviews in Reviewer Language '{r.language}' that have no developer reply."
    return q, n, {"Reviewer Language": r.language}


def _test_mean(rng: random.Random, data: tuple) -> _Asked:
    reviews, _ = data
    r = rng.choice(reviews)
    if rng.random() < 0.5:
        if r.code is None:
            return None
        mean = _mean([x.stars for x in reviews if x.code == r.code])
        q = f"Give the average Star Rating of the reviews from App Version Code {r.code}, to two decimals."
        return None if mean is None else (q, mean, {"App Version Code": r.code})
    day = r.submitted.date()
    mean = _mean([x.stars for x in reviews if x.submitted.date() == day])
    q = f"Give the average Star Rating of the reviews submitted on {day.day} {day:%B %Y} (UTC), two decimals."
    return None if mean is None else (q, mean, {"day": day.isoformat()})


def _test_top(rng: random.Random, data: tuple) -> _Asked:
    reviews, _ = data
    if rng.random() < 0.5:
        top = _leader(Counter(x.device for x in reviews if x.stars == 1 and x.device))
        q = "Name the Device with the most 1-star reviews (rows with no device left out)."
        return None if top is None else (q, top, {"stars": 1, "by": "Device"})
    top = _leader(Counter(x.name for x in reviews if x.stars <= 2 and x.name))
    q = "Find the App Version Name whose reviews hold the most Star Ratings of 1 or 2."
    return None if top is None else (q, top, {"max_stars": 2, "by": "App Version Name"})


def _test_lookup(rng: random.Random, data: tuple) -> _Asked:
    reviews, _ = data
    replied = [x for x in reviews if x.reply is not None]
    if replied and rng.random() < 0.5:
        r = rng.choice(replied)
        assert r.reply is not None
        hours = int((r.reply[0] - r.submitted).total_seconds() // 3600)
        q = (
            f"Report how many whole hours (rounded down) passed between the submission of review {r.ident} "
            "and the developer's reply to it."
        )
        return q, hours, {"reviewId": r.ident, "field": "hours to reply"}
    r = rng.choice(reviews)
    q = f"Report the Star Rating of the review whose reviewId is {r.ident}."
    return q, r.stars, {"reviewId": r.ident, "field": "Star Rating"}


_DEV = {"count": _dev_count, "mean": _dev_mean, "top": _dev_top, "lookup": _dev_lookup}
_TEST = {"count": _test_count, "mean": _test_mean, "top": _test_top, "lookup": _test_lookup}


@family(
    "reviews",
    "app store reviews: a developer API's customer reviews with their responses as a nested dict (dev), or "
    "another store's monthly reviews report CSV as a string (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    data, context, count = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]
    asks = _DEV if ref.split == "dev" else _TEST

    def ask(kind_: str) -> _Asked:
        return asks[kind_](rng, data)

    kind, asked = draw_question(ask, kind, "lookup", nonzero=True, hidden=True)
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="nested dict (customer reviews API response)"
        if ref.split == "dev"
        else "string (reviews report CSV)",
        reviews=count,
    )
