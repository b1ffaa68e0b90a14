"""Whether a committed answer is supported by what the run's code printed. Pure functions, no I/O.

Small models often commit a value that is in their outputs without having computed it (the match
count in a ``search()`` report's header, a number off one of its hits) or that only repeats the
question. :func:`unsupported` says why an answer looks like that, in one line; a right answer
normally appears as a value the code printed, so it passes. With ``verify`` on, a sub-model is
asked as well (:func:`verify_prompt`, :func:`verdict`). The engine sends an unsupported answer
back to the root once (:func:`send_back_note`), then keeps it with a warning.

The rules, in order, each with the reason it gives (3 to 5 only for an answer the root wrote out
itself, in its code or its reply: one its code computed and did not print is not a copy; 7 only
for one its code computed):

1. The question asks for a quantity (how many, how much, number of, count, total, sum, average,
   mean) and the answer has no number, in digits or words: "the question asks for a quantity and
   the answer has no number"; or it is several lines, a printed table or list: "... is a printed
   table or list of lines, not one value".
2. The answer's words and numbers are all the question's (an echo), and the question offers no
   choice ("X or Y?", "between", "which of A and B?"): "it only repeats words of the question".
3. The answer is not in the outputs. With numbers that are not the question's: not all of them
   (of more than three, not two thirds) appear as numbers (1,234.50 is 1234.5; a printed 3.3333 is
   an answer of 3.33; 2024-03-14 is 14 March 2024). Without: the answer is not there as a whole
   (case and spacing aside), nor are half of its own words: "not in anything the code printed".
4. A count (how many, number of, count, tally) whose answer's numbers appear only in ``search()``
   reports (the header line ``search(...): N passages match`` and the ``[k] `` hit lines under
   it): "a number read from search matches, not computed".
5. A question in two hops (``worked.two_hops``: "the depot of the courier who took parcel 82709")
   whose answer is printed only on lines that hold the question's own number: it is the thing the
   item points to, the first hop, "not the value asked for". (Checked before rule 3's passes.)

6. The code found nothing: the answer is a count of 0 (or a 0 where a name is asked for: "who",
   "give the name"), an empty or missing value (``None``, ``nan``, ``[]``, ``Counter()``, an
   empty DataFrame, Series or array), or says that nothing was found: "the code found nothing".
   A filter that matches no item most often writes a value otherwise than the data does
   (its case, spelling or format), so the root is sent back to look once; a true zero keeps its
   warning. This holds for computed answers too.

7. The question names a value the code never used: a quoted name or phrase ('Lena Hoffmann',
   "Seasonality", `load_refunds_v2`), a proper name of two capitalised words or more after the
   question's first word (Grant Whitaker, City Council; used whole or by its longest word of five
   letters or more), a year, or a month of a year ("March 2024": its name or
   number) that the run's code does not hold (case aside; a phrase counts as used when its
   longest word is): "the code never used ...". Code that answers a question about one
   account, title or month and never names it has answered another question. Checked only for
   an answer the code computed (one written out was read, and rule 3 holds it), and not where
   the answer is one of the question's phrases (a choice among them); a phrase shorter than five
   characters, an argument list (``*args``) or a format (``YYYY-MM-DD``) is not held to it.
   A name written in camel case (``DOLocationID``, ``howMany``, ``UnblendedCost``) is held to it
   where the data shows it, in what the root was shown of the context (``shown``) or in what the
   code printed: a column, key or type the question asks about, which code that answers it reads
   by name. A name the data does not show (``DataFrame``, ``JupyterLab``) is not.

8. The question asks in a unit of time, size or length ("how many minutes", "in MB", "in km") and
   the run's code reads a field named in another unit of the same measure (``duration_ms``,
   ``size_bytes``, ``distance_m``) with no arithmetic on a number and no conversion
   (``timedelta``, ``total_seconds``): "the question asks in minutes and the code reads
   duration_ms (milliseconds) without converting". A sum in the data's own unit is not the one
   asked for. Checked for any answer with a number, computed or written out.

9. The answer is a whole collection as Python prints it: a pandas Series (its ``dtype:`` footer),
   a long DataFrame (``[n rows x m columns]``), or a Counter or defaultdict that holds something,
   where the question does not ask for several values (list, each, per, for every): "it is a
   whole Series, DataFrame or Counter as Python prints it, not the one value asked for". So is a
   computed answer of text values run together, as ``sum()`` joins a column of text: no space,
   and its first characters (``p.``, ``NGS24-``) coming again twice more or more
   (``p.Thr594Glyp.Ser2816=p.Ser822Phe``), or decimal numbers end to end, which no one number
   is (``-8945.05-9591.75``, ``-7035.9917056.32``): "it is several values run together".

Yes/no answers are not held to rule 3.

Error text and the tools' own words are no support for any answer: before the rules, the lines of
the outputs that are a search report's header (its counts), a search's "no match" line, the note
on a cut output, a traceback or an exception's line, the REPL's hint under it, a Python error
message, or a sub-call's error are set aside (``_noise``). An answer that is itself such a line is
"an error message or a tool's report, not an answer", however it was given (computed too).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from .subcalls import ERROR_PREFIX
from .worked import two_hops

__all__ = [
    "FOUND_NOTHING",
    "WHOLE_COLLECTION",
    "unsupported",
    "written_in",
    "verify_prompt",
    "verdict",
    "send_back_note",
    "VERIFY_CHARS",
    "VERIFY_TOKENS",
]

VERIFY_CHARS = 4000  # of the latest outputs, in the verifier's prompt
VERIFY_TOKENS = 256  # the verifier's reply: one line

_STOP = frozenset(
    """a an the of to in on for at by with from and or is are was were be been being it its this
    that these those there their they them as into about than then what which who whom whose when
    where why how do does did has have had not no yes can could should would will may might one
    answer answers result results value values total number numbers count sum average mean amount
    approximately about around roughly exactly only just so per each all any some many much
    i we you he she his her our your my me us""".split()
)
_NUMBER_WORDS = frozenset(
    """zero none no one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty
    ninety hundred thousand million billion dozen once twice half""".split()
)
_SPELLED = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
} | {"none": 0, "once": 1, "twice": 2, "dozen": 12, "thirty": 30, "forty": 40, "fifty": 50}
_MONTHS = "january february march april may june july august september october november december".split()
_NUMBER = re.compile(r"(?<![\w.])(-?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?!\d)")
_WORD = re.compile(r"[^\W\d_]{2,}")
_QUANTITY = re.compile(
    r"\bhow (?:many|much)\b|(?:^|[^\w\s]\s*|\b(?:the|a|total|what)\s+)number of\b|\bcount\b|\btally\b"
    r"|\btotal\b|\bsum\b(?! up)|\badd(?:s|ing)? up\b|\baverage\b|\b(?:the|a|its|their)\s+mean\b"
    r"|\bmean (?:of|value)\b",
    re.IGNORECASE,
)
_NOT_QUANTITY = re.compile(r"\b(?:which|who|whom|whose|where|when|name)\b", re.IGNORECASE)
_DIRECT_QUANTITY = re.compile(r"\bhow (?:many|much)\b", re.IGNORECASE)
# A count, which code computes: not an amount ("how much did she receive?"), which a hit may state.
_COUNT = re.compile(r"\bhow many\b|\bnumber of\b|\bcount\b|\btally\b", re.IGNORECASE)
# A question whose answer is someone's or something's name: no name is 0.
_NAMED_ANSWER = re.compile(r"\bwho(?:se|m)?\b|\bname\b", re.IGNORECASE)
# The most or the least of something, which code finds among all the items: search finds passages
# that hold words, not the one that is the most of anything.
_MOST = re.compile(
    r"\b(?:most|least|fewest|largest|smallest|biggest|highest|lowest|longest|shortest|greatest"
    r"|maximum|minimum)\b",
    re.IGNORECASE,
)
# Options offered in the question itself: "X or Y?" in one sentence, "between", "which of A and B?".
_CHOICE = re.compile(
    r"\b(?:or|between|either|whether)\b[^.?!]*\?|\bwhich of\b[^.?!]*\band\b[^.?!]*\?", re.IGNORECASE
)
_YES_NO = re.compile(r"(?:yes|no|true|false)\b", re.IGNORECASE)
_NOTHING = re.compile(
    r"\b(?:not (?:found|mentioned|given|stated|available|in the (?:context|text|data))|no (?:match|such)"
    r"|unknown|cannot be determined|can't be determined|n/a)\b|^no\b[^.\n]{0,60}\bfound\b",
    re.IGNORECASE,
)
_HEADER = re.compile(r"search\(.*\): (?:[\d,]+ passages match|1 passage matches)")
_HEADER_KEPT = "\x00search"  # a header set aside, in its place: the hits under it are still a report's
# Python's own error messages as ``print(e)`` prints them: the whole line, without the class.
_PY_ERROR = (
    r"name '\w+' is not defined|'\w+' object has no attribute '\w+'|'\w+' object is not "
    r"(?:subscriptable|callable|iterable)|unsupported operand type\(s\) for .*|(?:\w+ )?index out of range"
    r"|\S+\(\) (?:got an unexpected keyword argument|takes \d+ positional argument|missing \d+ required) .*"
    r"|could not convert string to \w+: .*|invalid literal for int\(\) with base \d+: .*"
    r"|can only concatenate .*|invalid syntax.*"
)
# Lines that support no answer (see the module's docstring), matched at a line's start.
_NOISE = re.compile(
    r"^(?:search\(.*\): (?:[\d,]+ passages match|1 passage matches)|search\(\) needs words"
    r"|No match for .*Try other words|\.\.\. \[[\d,]+ characters cut\] \.\.\."
    r"|Traceback \(most recent call last\)|[ \t]*\^+[ \t]*$|Hint: "
    r"|[ \t]+File \".*\", line \d+.*(?:\n[ \t]+(?!File ).*)?"  # a frame: where, and the code there
    r"|(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Warning): \S|\S+:\d+: [A-Z]\w*Warning: |Error: "
    rf"|[ \t]*{re.escape(ERROR_PREFIX)}|(?:{_PY_ERROR})[ \t]*$)",
    re.MULTILINE,
)
_HIT = re.compile(r"\[\d+\] ")


def unsupported(
    question: str | None,
    answer: str,
    outputs: Sequence[str],
    *,
    written: bool = True,
    code: str | None = None,
    shown: str = "",
) -> str | None:
    """Why ``answer`` is not supported by ``outputs`` (what the run's steps printed), or None.
    ``written``: the root wrote the answer out (see :func:`written_in`), rather than code computing it.
    ``code``: the run's code, all its steps (rules 7 and 8). ``shown``: what the root was shown of
    the data before its first step (see :func:`shown_of`; rule 7)."""
    text = answer.strip().strip("\"'`\u2018\u2019\u201c\u201d").strip()
    if not text:
        return None  # the engine reports an empty answer itself
    if _noise(answer.strip().splitlines()[0]) or _noise(text.splitlines()[0]) or _copied_noise(text, outputs):
        return "it is an error message or a tool's report, not an answer"
    question = question or ""
    if _found_nothing(question, text):
        return FOUND_NOTHING
    if not _MANY.search(question) and (several := _collection(text, computed=not written)):
        return several
    if code is not None and (unconverted := _unconverted(question, code)) and _NUMBER.search(text):
        return unconverted
    if code is not None and not written and (unused := _unused(question, code, text, [shown, *outputs])):
        return f"the code never used {unused}, which the question names"
    quantity = _asks_quantity(question)
    if quantity and (several := _several_values(question, text, computed=not written)):
        return several
    why, numbers, own = _read_answer(question, text, quantity)
    if why is not None or _YES_NO.match(text):
        return why
    if not written or not (numbers or own):
        return None  # computed by the code, or nothing of its own to look for
    return _not_printed(question, text, outputs, quantity, numbers, own)


WHOLE_COLLECTION = (
    "it is a whole Series, DataFrame or Counter as Python prints it, not the one value asked for; "
    "take that value out of it"
)
# How pandas and the standard library print a collection of several values: a Series' or a long
# frame's footer, a Counter or defaultdict that holds something.
_WHOLE_COLLECTION = re.compile(
    r"^(?:Name: [^\n]*, )?(?:Length: \d+, )?dtype: \w+$|^\[\d+ rows x \d+ columns\]$"
    r"|\A(?:Counter|defaultdict|OrderedDict)\(.*:",
    re.MULTILINE,
)
# A question that asks for several values, which a printed collection may answer.
_MANY = re.compile(r"\b(?:list|each|per|breakdown|table|counts|for every)\b", re.IGNORECASE)
# Units a question asks in and a field's name may carry, by what they measure (a word of the
# question; a part of a name, split at ``_``, ``.``, ``-`` and lower-to-upper case).
_UNITS = {
    "time": {
        "milliseconds": ("milliseconds", "ms millis milliseconds"),
        "seconds": ("seconds secs", "s sec secs seconds"),
        "minutes": ("minutes mins", "min mins minutes"),
        "hours": ("hours hrs", "h hr hrs hours"),
    },
    "size": {
        "bytes": ("bytes", "bytes"),
        "kilobytes": ("kilobytes kb kib", "kb kib kilobytes"),
        "megabytes": ("megabytes mb mib", "mb mib megabytes"),
        "gigabytes": ("gigabytes gb gib", "gb gib gigabytes"),
    },
    "length": {
        "metres": ("metres meters", "m meters metres"),
        "kilometres": ("kilometres kilometers km", "km kilometers kilometres"),
        "miles": ("miles", "mi miles"),
    },
}
_NAME = re.compile(r"[A-Za-z_][\w.-]*")
_NAME_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# Arithmetic with a number, or a library's conversion: code that may have changed the unit.
_CONVERTS = re.compile(r"[*/]\s*\(?\s*\d|\d\s*\)?\s*[*/]|timedelta|total_seconds", re.IGNORECASE)
_CALLED = re.compile(r"\w+(?=\()")  # a function's or method's name (``.min()``), not a field's


def _unconverted(question: str, code: str) -> str | None:
    """Why the code's number is in a unit other than the one asked (rule 8), or None: the question
    asks in one unit (minutes) and the code reads a field named in another of the same measure
    (``duration_ms``) with no arithmetic on any number and no conversion."""
    if _CONVERTS.search(code):
        return None
    words = {w.lower() for w in re.findall(r"(?<![\w.])[A-Za-z]+(?![\w.])", question)}
    names = [n for n in dict.fromkeys(_NAME.findall(_CALLED.sub(" ", code))) if len(n) > 2]
    parts = {name: {p.lower() for p in _NAME_PART.findall(name)} for name in names}
    for units in _UNITS.values():
        asked = [u for u, (said, _) in units.items() if words & set(said.split())]
        if len(asked) != 1:
            continue
        for name in names:
            held = [u for u, (_, parts_of) in units.items() if parts[name] & set(parts_of.split())]
            if held and asked[0] not in held:
                said = f"the question asks in {asked[0]} and the code reads {name} ({held[0]})"
                return f"{said} without converting"
    return None


TABLE = "the question asks for a quantity and the answer is a printed table or list of lines, not one value"
RUN_TOGETHER = (
    "the question asks for one quantity and the answer holds many numbers run together (a sum over text "
    "joins the values end to end); make the values numbers first, then add them"
)
RUN_TOGETHER_NUMBERS = 6  # a total of time ("1 days 02:03:04.5") holds four
JOINED = (
    "it is several values run together (a sum over a column of text joins them end to end), not the one "
    "value asked for; take that value out of the rows"
)
JOINED_CHARS = 20  # of an answer that may be values run together


def _collection(text: str, *, computed: bool) -> str | None:
    """Why an answer to a question of one value is several (rule 9), or None."""
    if _WHOLE_COLLECTION.search(text):
        return WHOLE_COLLECTION
    return JOINED if computed and _joined(text) else None


# Decimal numbers end to end: a fraction then a sign (``05-9591``), or digits between two points
# more than a part of an address or a version has (``.9917056.``)
_GLUED_NUMBERS = re.compile(r"-?\d[\d.-]*\d")
_GLUE = re.compile(r"\d\.\d+-\d|\.\d{4,}\.")


def _joined(text: str) -> bool:
    """Whether an answer is values joined end to end, as ``sum()`` joins a column of text: decimal
    numbers with no one number's form, or no space and its beginning (``p.``, ``NGS24-``) coming
    again two more times or more."""
    if _GLUED_NUMBERS.fullmatch(text) and _GLUE.search(text):
        return True
    if len(text) < JOINED_CHARS or re.search(r"\s", text):
        return False
    for k in (6, 5, 4, 3, 2):
        start = text[:k]
        if (
            start[0].isalnum()
            and len(set(start)) > 1
            and text.count(start) >= 3
            and (k > 2 or not start.isalnum())
        ):
            return True
    return False


FOUND_NOTHING = (
    "the code found nothing (a count of 0, or an empty value); a filter that matches no item often "
    "writes a value otherwise than the data does, so print the values it compares"
)
# Nothing, as Python, pandas and numpy print it: an empty collection of the standard library's
# (``Counter()``, ``deque([])``, ``defaultdict(<class 'int'>, {})``), an empty frame, series, index
# or array
_EMPTY_VALUE = re.compile(
    r"(?:none|nan|nat|null|\[\]|\{\}|\(\)|(?:set|frozenset|counter|ordereddict)\(\)|deque\(\[\].*\)"
    r"|defaultdict\(.*, \{\}\)|(?:dict_keys|dict_values|dict_items)\(\[\]\)"
    r"|empty (?:dataframe|series)\b.*|(?:series|index|array)\(\[\].*)",
    re.IGNORECASE | re.DOTALL,
)
_ZERO = re.compile(r"0(?:\.0+)?")


def _found_nothing(question: str, text: str) -> bool:
    """Whether the answer says the code found nothing: see rule 6."""
    if _EMPTY_VALUE.fullmatch(text) or _NOTHING.search(text):
        return True
    return bool(_ZERO.fullmatch(text) and (_COUNT.search(question) or _NAMED_ANSWER.search(question)))


_QUOTED = re.compile(r"""(?<!\w)(['"`\u2018\u201c])([^'"`\u2019\u201d\n]{5,80})['"`\u2019\u201d](?!\w)""")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_MONTH = re.compile(
    r"\b(January|February|March|April|May|June|July|August|September|October|November|December)\s+(?:of\s+)?\d{4}\b"
)
# A name of one thing: a word with / @ or _ in it (``sara.kim@example.com``, ``src/x.py``,
# ``user_id``), or letters then digits (``IR13``); not a sentence's words, dates or times
_TOKEN = re.compile(r"[\w./@:-]+")
_CODE_LIKE = re.compile(r"[A-Za-z]+\d+[A-Za-z\d]*")


def _names(question: str) -> list[str]:
    """The names of single things the question gives (see above), as it writes them."""
    names = [t.strip(".:-") for t in _TOKEN.findall(question)]
    return [
        t
        for t in names
        if re.search(r"[A-Za-z]", t) and (re.search(r"[/@_]", t) or (len(t) >= 4 and _CODE_LIKE.fullmatch(t)))
    ]


_FORMAT = re.compile(r"[YMDhms\W_]+|\*.*")  # YYYY-MM-DD, *args: how a value is written, not one
# A proper name of two words or more, each capitalised (``Grant Whitaker``, ``City Council``), not
# the question's first word
_PROPER = re.compile(r"(?<=[\w,;:(] )[A-Z][a-z]+(?:[ -][A-Z][a-z]+)+\b")


def _not_given(values: list[str], answer: str) -> list[str]:
    """``values``, or none where the answer is one of them: a choice among the question's own."""
    return [] if any(v.lower() in answer.lower() for v in values) else values


# A name in camel case: a lower-case letter before a capital (``howMany``, ``DOLocationID``)
_CAMEL = re.compile(r"\w*[a-z][A-Z]\w*")


def shown_of(meta: Mapping[str, Any]) -> str:
    """What the root is shown of the data, from the context's metadata: its columns, keys and
    preview, not its kind (``DataFrame``) or size."""
    return "\n".join(str(v) for k, v in meta.items() if k not in ("type", "shape"))


def _unused(question: str, code: str, answer: str, seen: Sequence[str] = ()) -> str | None:
    """The first value the question names that the code does not use (rule 7), quoted, or None.
    ``seen``: the data as the root saw it, for the names in camel case that it shows (read only
    where the question has such a name the code does not use)."""
    low = code.lower()
    camel = [n for n in _not_given(_CAMEL.findall(question), answer) if n.lower() not in low]
    data = "\n".join(seen).lower() if camel else ""
    for name in camel:
        if _bounded(name.lower(), data):
            return name
    phrases = _not_given([p for _, p in _QUOTED.findall(question) if not _FORMAT.fullmatch(p)], answer)
    names = _not_given(_names(question), answer)
    proper = _not_given(_PROPER.findall(question), answer)
    named = [(repr(p), p, 1) for p in phrases] + [(n, n, 5) for n in names] + [(p, p, 5) for p in proper]
    for shown, value, shortest in named:  # used whole, or by its longest word
        longest = max(re.findall(r"\w+", value.lower()), key=len, default="")
        if value.lower() not in low and not (len(longest) >= shortest and _bounded(longest, low)):
            return shown
    for year in _YEAR.findall(question):
        if year not in code:
            return year
    for month in _MONTH.findall(question):
        number = _MONTHS.index(month.lower()) + 1
        if month.lower()[:3] not in low and not any(_bounded(n, low) for n in {str(number), f"{number:02d}"}):
            return month
    return None


_Numbers = list[tuple[Decimal, int]]


def _read_answer(question: str, text: str, quantity: bool) -> tuple[str | None, _Numbers, list[str]]:
    """Why the answer says nothing the question did not (or None), with its own numbers and words."""
    asked_numbers = {v for v, _ in _numbers(question)}
    asked_words = {_stem(w) for w in _WORD.findall(question.lower())}
    given = _numbers(text)
    words = list(dict.fromkeys(_WORD.findall(text.lower())))
    numbers = [(v, d) for v, d in given if v not in asked_numbers]
    spelled = [w for w in words if w in _NUMBER_WORDS and _stem(w) not in asked_words]
    if quantity and not numbers:
        if not spelled:
            if given:
                return (
                    "the question asks for a quantity and the answer's only number is the question's",
                    [],
                    [],
                )
            return "the question asks for a quantity and the answer has no number", [], []
        numbers = [(Decimal(_SPELLED[w]), 0) for w in spelled if w in _SPELLED]
    content = [w for w in words if w not in _STOP]
    own = [w for w in content if _stem(w) not in asked_words]
    if question and (content or given) and not (numbers or own or spelled) and not _CHOICE.search(question):
        return "it only repeats words of the question", numbers, own
    return None, numbers, own


def _not_printed(
    question: str, text: str, outputs: Sequence[str], quantity: bool, numbers: _Numbers, own: list[str]
) -> str | None:
    """Why the answer's numbers or words are not what the steps printed, or None."""
    printed, noise = _support(outputs)
    low = printed.lower()
    if _first_hop(question, text, printed):
        return "it is what the question's item points to (the first of two hops), not the value asked for"
    whole = " ".join(text.lower().split()).rstrip(".")
    if quantity and _a_hit(whole, printed):
        return "it is a whole passage that search found, not a quantity computed from it"
    if _MOST.search(question) and _only_in_search(whole, printed):
        return "it is read from search matches: a search finds passages, not the most or least of anything"
    if not (quantity and numbers) and _bounded(whole, low):
        return None  # as a whole (not for a count: its number may be a search report's)
    if numbers:
        return _numbers_not_printed(question, numbers[:12], printed, noise, quantity)
    own = own[:24]
    if sum(_bounded(w, low) for w in own) < math.ceil(len(own) / 2):
        return "not in anything the code printed"
    return None


def _numbers_not_printed(
    question: str, numbers: _Numbers, printed: str, noise: list[str], quantity: bool
) -> str | None:
    """Why more than a third of the answer's numbers (any, for three or fewer) are not printed, or None."""
    missing = 0 if len(numbers) <= 3 else len(numbers) - math.ceil(len(numbers) * 2 / 3)
    seen = []
    for value, places in numbers:
        seen.append(_where(value, places, printed, months=not quantity))
        if seen.count(None) > missing:
            return _read_from(noise, value, places) or "not in anything the code printed"
    if quantity and _COUNT.search(question) and "computed" not in seen:
        return "a number read from search matches, not computed"
    return None


def _several_values(question: str, text: str, *, computed: bool) -> str | None:
    """Why an answer given for a quantity holds several values, or None. Values run together are
    what code computed (a sum of strings); numbers written out are checked against the outputs."""
    if "\n" in text:
        return TABLE
    many = len(_NUMBER.findall(text)) >= RUN_TOGETHER_NUMBERS and not _MANY.search(question)
    if computed and many:
        return RUN_TOGETHER
    return None


def _copied_noise(text: str, outputs: Sequence[str]) -> bool:
    """Whether the answer is a sentence of error text or a tool's report (a hint the REPL gave),
    copied without the words that began it, and nowhere else in the outputs."""
    if len(text.split()) < 4:
        return False  # a value: a hint may quote the data's values
    printed, noise = _support(outputs)
    whole = " ".join(text.split())
    return whole not in " ".join(printed.split()) and any(whole in " ".join(line.split()) for line in noise)


def _noise(line: str) -> bool:
    """Whether ``line`` is error text or a tool's report about itself."""
    return _NOISE.match(line) is not None


def _read_from(noise: list[str], value: Decimal, places: int) -> str | None:
    """Why a number not in the outputs' support is there all the same: on a line set aside."""
    for line in noise:
        if _where(value, places, line, months=False) is not None:
            if _HEADER.match(line):
                return "a number read from search matches, not computed"
            return "it is read from an error message or a tool's report, not from the data"
    return None


def _support(outputs: Sequence[str]) -> tuple[str, list[str]]:
    """The outputs with the lines that support no answer set aside (``_noise``), and those lines.
    A search report's header leaves a mark, so the hits under it are still known as a report's."""
    text = "\n".join(outputs)
    found = [(m.start(), m.end()) for m in _NOISE.finditer(text)]
    if not found:
        return text, []
    kept, noise, at = [], [], 0
    for start, end in found:  # a traceback's frame is two lines: where, and the code there
        end = text.find("\n", end)
        end = len(text) if end == -1 else end
        line = text[start:end]
        kept.append(text[at:start] + (_HEADER_KEPT if _HEADER.match(line) else ""))
        noise.append(line)
        at = end
    kept.append(text[at:])
    return "".join(kept), noise


def _first_hop(question: str, answer: str, printed: str) -> bool:
    """A question in two hops ("the depot of the courier who took parcel 82709") answered with
    the thing its item points to: every printed line that holds the answer also holds the
    question's own number, so the answer came from the first passage, not from a second."""
    anchors = [m.group(2) for m in _NUMBER.finditer(question)]
    if not anchors or not two_hops(question):
        return False
    answer = " ".join(answer.lower().split())
    lines = [line for line in printed.lower().splitlines() if _bounded(answer, " ".join(line.split()))]
    return bool(lines) and all(any(a in line for a in anchors) for line in lines)


def written_in(answer: str, source: str) -> bool:
    """Whether ``answer`` is written out in ``source`` (the code that set it, a FINAL's argument),
    as a literal, rather than computed there."""
    return _bounded(" ".join(answer.lower().split()), source.lower())


def _asks_quantity(question: str) -> bool:
    """How many / how much; or a quantity word (count, total, ...) before any which/who/where."""
    if _DIRECT_QUANTITY.search(question):
        return True
    wanted = _QUANTITY.search(question)
    other = _NOT_QUANTITY.search(question)
    return wanted is not None and (other is None or wanted.start() < other.start())


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _numbers(text: str) -> list[tuple[Decimal, int]]:
    """The numbers in ``text``: value, and how many decimal places it was written with."""
    out = []
    for m in _NUMBER.finditer(text):
        sign, whole, frac = m.group(1), m.group(2).replace(",", ""), m.group(3) or ""
        out.append((Decimal(sign + whole + frac), len(frac) - 1 if frac else 0))
    return out


def _matches(answer: Decimal, places: int, printed: Decimal) -> bool:
    """The printed value is the answer, or rounds to it at the answer's precision."""
    if printed == answer:
        return True
    exponent = printed.as_tuple().exponent
    finer = isinstance(exponent, int) and -exponent > places
    return finer and abs(printed - answer) <= Decimal(5) * Decimal(10) ** (-places - 1)


def _where(value: Decimal, places: int, printed: str, *, months: bool) -> str | None:
    """Where ``value`` is in the outputs: "computed" on a line of the code's own, "search" only
    in search() reports, None nowhere. With ``months``, 3 is also a printed "March"."""
    slack = Decimal(5) * Decimal(10) ** (-places - 1) if places < 6 else Decimal(0)
    wholes = {int(abs(value - slack)), int(abs(value)), int(abs(value + slack))}
    where = None
    for whole in sorted(wholes):
        forms = {str(whole), f"{whole:,}"}
        if not any(f in printed for f in forms):
            continue
        body = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
        # The digits first, so the search skips ahead to them; what comes before is read by hand.
        for m in re.finditer(rf"(?:{body})(?:\.\d+)?(?!\d)", printed):
            start = m.start()
            while start > 0 and printed[start - 1] == "0":
                start -= 1
            if start > 0 and _glued(printed[start - 1]):
                continue
            sign = start > 0 and printed[start - 1] == "-" and not (start > 1 and _glued(printed[start - 2]))
            if not _matches(value, places, Decimal(("-" if sign else "") + m.group(0).replace(",", ""))):
                continue
            if not _in_search_report(printed, start):
                return "computed"
            where = "search"
    if months and where is None and value == int(value) and 1 <= value <= 12:
        if re.search(rf"\b{_MONTHS[int(value) - 1]}\b", printed, re.IGNORECASE):
            return "computed"
    return where


def _glued(char: str) -> bool:
    """Whether a number right after ``char`` is part of a word or of another number."""
    return char.isalnum() or char in "._"


def _a_hit(answer: str, printed: str) -> bool:
    """Whether the answer is the whole text of a search() hit (of three words or more)."""
    if len(answer.split()) < 3:
        return False
    for line in printed.lower().splitlines():
        if _HIT.match(line) and " ".join(line.split(": ", 1)[-1].split()).rstrip(".") == answer:
            return True
    return False


def _only_in_search(answer: str, printed: str) -> bool:
    """Whether the answer is printed, and only on lines of search() reports."""
    low = printed.lower()
    found = [
        m.start()
        for m in re.finditer(re.escape(answer), low)
        if _bounded(answer, low[max(m.start() - 1, 0) : m.end() + 2])
    ]
    return bool(found) and all(_in_search_report(printed, at) for at in found)


def _in_search_report(text: str, at: int) -> bool:
    """Whether position ``at`` is on a line of a search() report: its header, or a hit under it."""
    start = text.rfind("\n", 0, at) + 1
    if text.startswith(_HEADER_KEPT, start):
        return True
    for _ in range(100):  # up the hits to the header
        if not _HIT.match(text, start, start + 8) or start == 0:
            return False
        start = text.rfind("\n", 0, start - 1) + 1
        if text.startswith(_HEADER_KEPT, start):
            return True
    return False


def _bounded(needle: str, low: str) -> bool:
    """Whether ``needle`` is in ``low`` not as part of a longer word or number."""
    if not needle or needle not in low:
        return False
    for m in re.finditer(re.escape(needle), low):
        before, after = low[m.start() - 1 : m.start()], low[m.end() : m.end() + 2]
        if after[:1] == "." and not after[1:].isdigit():
            after = ""  # a full stop
        if not ((before and _glued(before)) or (after and _glued(after[0]))):
            return True
    return False


# -- the sub-model's verdict (verify=True) -------------------------------------------------------
def verify_prompt(
    question: str | None, answer: str, outputs: Sequence[str], limit: int = VERIFY_CHARS
) -> str:
    """One short request: is ``answer`` supported by the latest ``outputs``?"""
    shown: list[str] = []
    left = limit
    for output in reversed([o for o in outputs if o.strip()]):
        if left <= 0:
            break
        piece = output.strip()
        if len(piece) > left:
            piece = "…" + piece[len(piece) - left :]
        shown.append(piece)
        left -= len(piece)
    printed = "\n---\n".join(reversed(shown)) or "(nothing)"
    return (
        "A program worked on a question with code, printed the outputs below, then gave an answer. "
        "Judge only whether the outputs support the answer: the answer's value is printed there, or "
        "follows directly from what is printed (a count that was computed, not the number of search "
        "matches; not a value copied from the question).\n\n"
        f"Question: {question or '(none: the task is in the data)'}\n"
        f"Answer: {answer[:1000]}\n\n"
        f"The program's latest outputs:\n<outputs>\n{printed}\n</outputs>\n\n"
        "Reply with one line: SUPPORTED, or UNSUPPORTED: and a short reason."
    )


_VERDICT = re.compile(r"\b(UNSUPPORTED|NOT SUPPORTED|SUPPORTED)\b[\s:.*\-\u2013\u2014]*(.*)", re.IGNORECASE)


def verdict(reply: str) -> str | None:
    """The reason a verifier's ``reply`` gives when it finds the answer unsupported; None when it
    finds it supported, or gives no verdict (a failed call, another reply)."""
    m = _VERDICT.search(reply)
    if m is None or m.group(1).upper() == "SUPPORTED":
        return None
    reason = m.group(2).strip().splitlines()[0].strip() if m.group(2).strip() else ""
    return reason[:300] or "no reason given"


EMPTY = "it is empty"


def send_back_note(answer: str, reason: str) -> str:
    """What the root is told when its answer is sent back."""
    shown = answer.strip()
    if not shown:
        return (
            "Your answer is empty: the run was ended without a value. Put the value in the answer "
            "(answer['content'] = ..., then answer['ready'] = True; or FINAL(value))."
        )
    if len(shown) > 200:
        shown = shown[:200] + "…"
    return (
        f'Your answer "{shown}" is not supported by what your code printed: {reason}. '
        "Check it with code, then set the answer again (the same one if you are sure)."
    )
