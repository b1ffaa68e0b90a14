"""The REPL scaffold: the names the root LM's code sees, shared by every executor.

``context``, ``llm_query``, ``llm_query_batched``, ``rlm_query``, ``rlm_query_batched``,
``answer``, ``FINAL``, ``FINAL_VAR`` and ``SHOW_VARS`` (and ``SubcallTooLarge``, which
``llm_query`` raises for a prompt over the sub-model's window) are bound into a namespace for
the run and put back after each step if code overwrote them. The user's own values
under those names are saved first and restored when the run ends.
"""

from __future__ import annotations

import ast
import difflib
import linecache
import re
import sys
import traceback
import types
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from .errors import SubcallTooLarge
from .protocol import FinalDirective, resolve_final
from .subcall_api import REPL_FUNCTIONS, SubcallAPI, SubcallError

__all__ = [
    "RESERVED",
    "Answer",
    "SubcallAPI",
    "Scaffold",
    "truncate",
    "cut_note",
    "compact_traceback",
    "filter_hint",
    "key_error_hint",
    "no_match_hint",
    "step_filename",
]

RESERVED = (
    "context",
    *REPL_FUNCTIONS,  # llm_query, llm_query_batched, rlm_query, rlm_query_batched
    "answer",
    "FINAL",
    "FINAL_VAR",
    "SHOW_VARS",
    "SubcallTooLarge",
)

_MISSING = object()


class Answer(dict):  # type: ignore[type-arg]
    """The ``answer`` dict of a run. It stays in the namespace after the run, so the user can read
    it; the next run knows it for a previous run's, not the user's own."""


class Scaffold:
    """Binds the run's names into ``namespace`` and reads the answer back out of it."""

    def __init__(
        self,
        namespace: MutableMapping[str, Any],
        context: Any,
        subcalls: SubcallAPI | None,
        helpers: Mapping[str, Callable[..., Any]] | None = None,
    ) -> None:
        self.namespace = namespace
        self.answer: dict[str, Any] = Answer(content="", ready=False)
        self._saved = {name: namespace.get(name, _MISSING) for name in (*RESERVED, *(helpers or {}))}
        if isinstance(self._saved["answer"], Answer):  # a previous run's, not the user's
            self._saved["answer"] = _MISSING
        self._names: dict[str, Any] = {
            "context": context,
            "answer": self.answer,
            "FINAL": self.final,
            "FINAL_VAR": self.final_var,
            "SHOW_VARS": self.show_vars,
        }
        if subcalls is not None:
            self._names.update({name: getattr(subcalls, name) for name in REPL_FUNCTIONS})
            self._names["SubcallTooLarge"] = SubcallTooLarge  # so that the code can catch it by name
        self._names.update(helpers or {})  # reserved like the others while the run lasts
        namespace.update(self._names)

    # -- functions the code calls ------------------------------------------------
    def final(self, value: Any) -> None:
        """FINAL(value): set the answer and finish."""
        self.answer["content"] = str(value)
        self.answer["ready"] = True

    def final_var(self, name: Any) -> None:
        """FINAL_VAR(name): finish with the value of the variable called ``name``."""
        if isinstance(name, str) and name.isidentifier():
            if name not in self.namespace:
                raise NameError(f"FINAL_VAR: there is no variable named {name!r}")
            name = self.namespace[name]
        self.final(name)

    def show_vars(self) -> dict[str, str]:
        """The variables the run has made, by name and type."""
        own = {
            k: _type_name(v)
            for k, v in self.namespace.items()
            if not k.startswith("_") and k not in self._names and not isinstance(v, types.ModuleType)
        }
        print("\n".join(f"{k}: {t}" for k, t in own.items()) or "(no variables yet)")
        return own

    # -- what the driver asks ------------------------------------------------------
    def restore(self) -> tuple[str, ...]:
        """Put back reserved names that code replaced; an ``answer`` dict the code rebuilt is adopted."""
        fixed = []
        ns = self.namespace
        current = ns.get("answer", _MISSING)
        if current is not self.answer:
            if isinstance(current, dict):
                self.answer.clear()
                self.answer.update({"content": "", "ready": False, **current})
            else:
                fixed.append("answer")
            ns["answer"] = self.answer
        for name, value in self._names.items():
            if name != "answer" and ns.get(name, _MISSING) is not value:
                ns[name] = value
                fixed.append(name)
        return tuple(fixed)

    @property
    def ready(self) -> bool:
        return bool(self.answer.get("ready"))

    @property
    def content(self) -> str:
        return str(self.answer.get("content", ""))

    def resolve(self, directive: FinalDirective) -> tuple[str | None, str | None]:
        return resolve_final(directive, dict(self.namespace))

    def close(self) -> list[str]:
        """Put the user's own values back under the reserved names; returns the names restored."""
        restored = []
        for name, value in self._saved.items():
            if value is _MISSING:
                if name != "answer":  # the answer stays, so the user can read it
                    self.namespace.pop(name, None)
            else:
                self.namespace[name] = value
                restored.append(name)
        return restored


def _type_name(value: Any) -> str:
    """A variable's type as SHOW_VARS names it: a failed sub-call's reply is text to the code, a str."""
    return "str" if isinstance(value, SubcallError) else type(value).__name__


def truncate(text: str, limit: int) -> tuple[str, int]:
    """Cut ``text`` to about ``limit`` characters, keeping the head and the tail; returns (text, cut)."""
    if len(text) <= limit:
        return text, 0
    cut = len(text) - limit
    head = limit * 2 // 3
    tail = limit - head
    marker = f"\n... [{cut:,} characters cut] ...\n"
    return text[:head] + marker + text[len(text) - tail :], cut


def cut_note(full: str, cut: int, question: str | None, *, small: bool = False) -> str:
    """What the root is told when a step's output was cut (by :func:`truncate`): how much, where
    the question's words were in the part it did not see, and what to print instead."""
    from .helpers import terms_of

    start = (len(full) - cut) * 2 // 3  # where truncate's cut begins
    end = start + cut
    hidden = full[start:end].lower()
    found = []
    for term in terms_of(question or "")[:6]:
        at = hidden.find(term)
        if at != -1:
            found.append(f"{term!r} at character {start + at:,}")
    where = f" The part not shown holds {', '.join(found[:3])} of the output." if found else ""
    advice = (
        'Print a window around what you look for instead: search("words"), or text[i - 150:i + 150].'
        if small
        else "Print slices or summaries instead of everything."
    )
    return f"Your output was cut: {cut:,} of its {len(full):,} characters were not shown.{where} {advice}"


TRACEBACK_FRAMES = 40
_RUN_TAG = re.compile(r"<rlm-step-(\d+)-[0-9a-f]+>")


def step_filename(step: int, run_id: str = "") -> str:
    return f"<rlm-step-{step}{'-' + run_id if run_id else ''}>"


def register_source(filename: str, source: str) -> None:
    """Let tracebacks show the lines of code that was never in a file."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def compact_traceback(
    exc: BaseException, keep: Callable[[str], bool] = lambda f: f.startswith("<rlm-step")
) -> str:
    """A traceback of the step's own frames (plus the innermost one), without colour. An exception
    it was raised from inside a library (pandas' ``KeyError`` from its hash table) is left out:
    the same error twice, in frames the step never wrote, is noise to the model that reads it."""
    # The innermost frames only: a recursion thousands deep would take seconds to format.
    te = traceback.TracebackException.from_exception(exc, capture_locals=False, limit=-TRACEBACK_FRAMES)
    seen: set[int] = set()
    part: traceback.TracebackException | None = te
    while part is not None and id(part) not in seen:  # and of the exceptions it was raised from
        seen.add(id(part))
        frames = list(part.stack)
        kept = [f for i, f in enumerate(frames) if keep(f.filename) or i == len(frames) - 1]
        part.stack = traceback.StackSummary.from_list(kept)
        cause = part.__cause__ or part.__context__
        if cause is not None and not any(keep(f.filename) for f in cause.stack):
            part.__cause__ = part.__context__ = None
        part = part.__cause__ or part.__context__
    # Step files carry the run's id so concurrent runs keep their sources apart; the root need not see
    # it (and a replayed run must see the same text as the recorded one).
    return _RUN_TAG.sub(r"<rlm-step-\1>", "".join(te.format()).rstrip() + "\n")


HINT_FRAMES = 6  # DataFrames a hint names the columns of
HINT_LINES = 3  # lines of a text a hint shows


_SEARCHED = re.compile(r"""\bre\.(search|match|fullmatch)\(\s*r?(['"])(.+?)\2\s*,\s*([A-Za-z_]\w*)\s*[,)]""")


def _failing_line(exc: BaseException) -> str:
    """The line of the step's own code that raised ``exc``."""
    tb, line = exc.__traceback__, ""
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename.startswith("<rlm-step"):
            line = linecache.getline(code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return line


def no_match_hint(exc: BaseException, namespace: Mapping[str, Any]) -> str:
    """For ``re.search(pattern, text).group(1)`` that found nothing (``'NoneType' object has no
    attribute 'group'``): the lines of ``text`` that hold the pattern's words in any case, which
    a user would print next to see how the text writes it. A small model otherwise runs the
    pattern it copied from an example (``Total: ``) again on text that writes ``TOTAL``."""
    if not isinstance(exc, AttributeError) or "'NoneType' object has no attribute 'group" not in str(exc):
        return ""
    found = _SEARCHED.search(_failing_line(exc))
    text = namespace.get(found[4]) if found else None
    if not found or not isinstance(text, str):
        return ""
    words = re.findall(r"[^\W\d_]{3,}", re.sub(r"\\[A-Za-z]", " ", found[3]))
    if not words:
        return ""
    said = ", ".join(map(repr, words))
    held = [line.strip() for line in text.splitlines() if any(w.lower() in line.lower() for w in words)]
    shown = "; ".join(repr(line[:120]) for line in held[:HINT_LINES])
    where = (
        f"Lines of {found[4]} with {said} in any case: {shown}."
        if held
        else f"No line of {found[4]} holds {said}, in any case."
    )
    call = found[0][:-1].rstrip() + ")"  # as the step wrote it
    return f"Hint: {call} found no match and gave None. {where}\n"


def _raised_by(exc: BaseException, package: str) -> bool:
    """Whether ``exc`` was raised in the code of ``package`` (its innermost frame is there)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and f"{package}/" in tb.tb_frame.f_code.co_filename.replace("\\", "/")


def key_error_hint(exc: BaseException, namespace: Mapping[str, Any]) -> str:
    """For a ``KeyError`` on a column name (or ``df.name`` that is not one), the line a pandas user
    would print next: which of the REPL's DataFrames have that column, the closest names, or the
    column whose values the name is (``df["HET"]`` for rows whose ``zygosity`` is ``HET``), and
    each frame's columns. A small model otherwise writes the same failing lookup again."""
    pd = sys.modules.get("pandas")
    key = _asked_column(exc)
    if pd is None or key is None:
        return ""
    frames = [
        (name, value)
        for name, value in namespace.items()
        if isinstance(value, pd.DataFrame) and not name.startswith("_") and name not in RESERVED
    ][:HINT_FRAMES]
    if not frames:
        return ""
    columns = {name: [str(c) for c in frame.columns] for name, frame in frames}
    holders = [name for name, names in columns.items() if key in names]
    every = sorted({c for names in columns.values() for c in names})
    leaves = [c for c in every if c.rsplit(".", 1)[-1] == key]  # json_normalize's "a.b" for "b"
    inside = [c for c in every if "." in key and c.startswith(key.rsplit(".", 1)[0] + ".")]
    close = leaves or difflib.get_close_matches(key, every, n=3) or inside[:6]
    if holders:
        said = f"{key!r} is a column of {', '.join(holders)}."
    elif value_of := _value_of(pd, frames, key):
        name, column, value = value_of
        said = (
            f"{key!r} is not a column but a value of {name}[{column!r}]: "
            f"its rows are {name}[{name}[{column!r}] == {value!r}]."
        )
    elif close:
        said = f"Close column names: {', '.join(map(repr, close))}."
    elif _raised_by(exc, "pandas") and isinstance(exc, KeyError):
        said = f"No DataFrame has a column {key!r}."
    else:
        return ""  # no column like it, and not looked up by pandas: the key was not meant for one
    shown = "; ".join(f"{name}: {', '.join(names[:24])}" for name, names in columns.items())
    return f"Hint: {said} Columns of the DataFrames: {shown}.\n"


_NO_ATTRIBUTE = re.compile(r"'DataFrame' object has no attribute '([^'\n]+)'")


def _asked_column(exc: BaseException) -> str | None:
    """The column a failed lookup asked for: ``df["x"]``'s key, or ``df.x``'s name."""
    if isinstance(exc, KeyError) and exc.args and isinstance(exc.args[0], str):
        return exc.args[0].removeprefix("Column not found: ")  # as groupby(...)[key] says it
    if isinstance(exc, AttributeError) and (found := _NO_ATTRIBUTE.fullmatch(str(exc))):
        return found.group(1)
    return None


def _value_of(pd: Any, frames: list[tuple[str, Any]], key: str) -> tuple[str, str, Any] | None:
    """The first frame and text column with a row whose value is ``key`` (or ``key`` in another
    case), and that value as the column writes it."""
    folded = key.casefold()
    for name, frame in frames:
        for column in frame.columns[:64]:
            series = frame[column].head(FILTER_ROWS)
            if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_datetime64_any_dtype(series):
                continue
            try:
                texts = dict.fromkeys(series.dropna().astype(str))
            except (TypeError, ValueError):
                continue
            same = [t for t in texts if t == key] or [t for t in texts if t.casefold() == folded]
            if same:
                return name, str(column), same[0]
    return None


FILTER_HINTS = 3  # filters a step's hint speaks of
FILTER_ROWS = 200_000  # rows of a frame whose other columns a hint looks through
_FEW_VALUES = 12  # a column of no more distinct values than this is shown whole


def _filters(code: str) -> list[tuple[str, str, str]]:
    """``(frame, column, value)`` of each ``frame["column"] == "value"`` (or ``frame.column``,
    either side of ``==``) in ``code``, in order, once each."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found: dict[tuple[str, str, str], None] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)):
            continue
        for side, other in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
            if not (isinstance(other, ast.Constant) and isinstance(other.value, str)):
                continue
            if isinstance(side, ast.Subscript) and isinstance(side.value, ast.Name):
                key = side.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    found[(side.value.id, key.value, other.value)] = None
            elif isinstance(side, ast.Attribute) and isinstance(side.value, ast.Name):
                found[(side.value.id, side.attr, other.value)] = None
    return list(found)


def _date_form(value: str) -> str | None:
    """How ``strftime`` writes a datetime as ``value`` writes its year, month or day (``2024``,
    ``2024-04``, ``2024-04-07``), else None."""
    found = re.fullmatch(r"(?:19|20)\d\d(-[01]\d(-[0-3]\d)?)?", value.strip())
    if not found:
        return None
    return "%Y-%m-%d" if found.group(2) else "%Y-%m" if found.group(1) else "%Y"


# A day, as a question writes one: 01/17/2024, 2024.01.17, 17 Jan 2024, January 17, 2024.
_A_DAY = re.compile(
    r"\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}|\d{1,2} [A-Za-z]{3,9},? \d{4}|[A-Za-z]{3,9} \d{1,2},? \d{4}"
)


def _same_date(pd: Any, texts: list[str], value: str) -> str | None:
    """The text among ``texts`` (a column's, all of them dates without a time) that is the day
    ``value`` names written otherwise (``'2024-01-17'`` for ``'01/17/2024'``, read month first
    as pandas reads it), else None."""
    if not _A_DAY.fullmatch(value.strip()):
        return None
    try:
        day = pd.Timestamp(pd.to_datetime(value.strip()))
        dates = pd.to_datetime(pd.Series(texts[:2000]), errors="coerce", format="mixed")
    except (ValueError, TypeError, OverflowError):
        return None
    if dates.isna().mean() > 0.5 or (dates.dropna() != dates.dropna().dt.normalize()).any():
        return None
    same = [t for t, d in zip(texts, dates, strict=False) if d == day]
    return same[0] if same else None


def _part_of(frame: Any, value: str) -> tuple[str, str] | None:
    """A column of ``frame`` and a text of it whose words are some of ``value``'s, or that holds
    all of them (``'Sonoma'`` for ``'Sonoma County'``): the same thing written shorter or longer.
    The longest such text of the first column that has one."""
    words = set(re.findall(r"\w+", value.casefold()))
    if len(words) < 2 and len(value) < 4:
        return None
    for column in frame.columns:
        texts = [t for t in dict.fromkeys(frame[column].dropna().astype(str)) if len(t) >= 3][:2000]
        fits = [
            t
            for t in texts
            if (own := set(re.findall(r"\w+", t.casefold())))
            and (own < words or (words < own and len(own) <= len(words) + 2))
            and not all(w.isdigit() for w in own)
        ]
        if fits:
            return str(column), max(fits, key=len)
    return None


def filter_hint(code: str, namespace: Mapping[str, Any]) -> str:
    """For a step that compared a DataFrame's column to a value none of its rows hold
    (``df["method"] == "Measure T"``): where that value is (in another column, or written
    otherwise in this one) or what the column holds, as a pandas user looks next with
    ``df[column].unique()``. A small model otherwise answers the 0 or NaN an empty filter gives."""
    pd = sys.modules.get("pandas")
    if pd is None:
        return ""
    try:
        said = _misses(pd, _filters(code), namespace)
    except Exception:  # noqa: BLE001 - a frame of odd values costs the hint, never the step
        return ""
    return "".join(f"Hint: {line}\n" for line in said)


def _misses(pd: Any, asked: list[tuple[str, str, str]], namespace: Mapping[str, Any]) -> list[str]:
    """What the hint says of each filter whose value no row of its frame's column holds."""
    said: list[str] = []
    for name, column, value in asked:
        frame = namespace.get(name)
        if not isinstance(frame, pd.DataFrame) or column not in frame.columns or len(said) == FILTER_HINTS:
            continue
        if frame.empty:  # a frame an earlier filter emptied: that one's hint says why
            continue
        held = frame[column].dropna()
        if (held.astype(str) == value).any() or (held == value).any():
            continue
        said.append(
            f"No row of {name}[{column!r}] is {value!r}{_where_it_is(pd, name, frame, column, value)}"
        )
    return said


# What a file writes for "no value", which pandas reads as NaN (by default, or by the load's na_values)
_NO_VALUE = frozenset({"", "-", "--", "\u2013", "\u2014", "?", "na", "n/a", "nan", "null", "none"})


def _where_it_is(pd: Any, name: str, frame: Any, column: str, value: str) -> str:
    """The rest of the hint on a value no row of ``frame[column]`` is: where it is (in another
    column, written otherwise, with fewer or more words), how a column of datetimes is compared,
    or what the column holds."""
    where = f"{name}[{column!r}]"
    held = frame[column].dropna()
    if value.strip().casefold() in _NO_VALUE and (missing := int(frame[column].isna().sum())):
        return f": a missing value is NaN in it, not {value!r}; {where}.isna() matches {missing:,} rows."
    if pd.api.types.is_datetime64_any_dtype(held) and (form := _date_form(value)):
        hits = int((held.dt.strftime(form) == value).sum())
        return (
            f": it holds datetimes, and == compares whole ones; "
            f"{where}.dt.strftime({form!r}) == {value!r} matches {hits:,} rows."
        )
    looked = frame.columns if len(frame) <= FILTER_ROWS else []
    others = [f"{name}[{c!r}]" for c in looked if c != column and (frame[c].astype(str) == value).any()]
    if others:
        return f"; {' and '.join(others)} {'hold' if len(others) > 1 else 'holds'} it."
    distinct = list(dict.fromkeys(held.astype(str)))
    close = [v for v in distinct if v.strip().casefold() == value.strip().casefold()]
    close = close or difflib.get_close_matches(value, distinct[:2000], n=3, cutoff=0.75)
    if close:
        return f"; close values in it: {', '.join(map(repr, close))}."
    if same := _same_date(pd, distinct, value):
        return f"; the same date in it: {same!r}."
    if part := _part_of(frame[looked], value):
        return f"; {name}[{part[0]!r}] holds {part[1]!r}."
    if len(distinct) <= _FEW_VALUES:
        return f"; its values: {', '.join(map(repr, distinct))}."
    return f"; {len(distinct):,} values, such as {', '.join(map(repr, distinct[:5]))}."
