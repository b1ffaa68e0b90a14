"""Text made of records (a git log, a mailbox, subtitles, BibTeX), and a dict of files, as rows of
a pandas DataFrame with a column ``text``.

A small model asked to count the commits of a git log that touch a path searches for the
question's words and reads a count off the matches. Shown the records as rows, it writes the
pandas it knows: ``df["text"].str.contains(...)``, ``df["text"].str.extract(...)``. A record starts
after a blank line, where blank lines cut the text into blocks of a like form (subtitles' cues), or at
a line that begins with the same word after a blank line again and again (``commit``, ``From``,
``[[package]]``). Prose, a log of one line per entry, source code and tables are not records.
"""

from __future__ import annotations

import importlib.util
import keyword
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

__all__ = ["records_metadata", "files_load", "first_file", "has_pandas", "sample_of"]

MIN_RECORDS = 5
SCAN_CHARS = 1_000_000  # where a record starts is read off the text's beginning
SAMPLE_CHARS = 800  # of the first records, or the first file, shown to the root
MAX_LINE = 200  # prose is long lines; records are short ones
_BLANK = re.compile(r"\n[ \t]*\n")
# Words that begin code's blocks, not records: a source file is searched, not tabulated.
_CODE = frozenset(keyword.kwlist) | {"function", "func", "fn", "public", "private", "static", "const", "var"}
_HEAD = "import re\nimport pandas as pd\n"


def _form(line: str) -> str:
    """A line's form: its numbers as 0 and its words as a (``00:01:02.5 --> 00:01:04.0`` is
    ``0:0:0.0 --> 0:0:0.0``), the first 40 characters."""
    return re.sub(r"[^\W\d_]+", "a", re.sub(r"\d+", "0", line.strip()))[:40]


def _blocks_alike(text: str) -> bool:
    """Blank lines cut the text into blocks of two lines or more, one of whose first three lines
    has the same form in most of them: records (subtitles' cues, contact cards), not paragraphs."""
    blocks = [b.strip("\n").split("\n") for b in _BLANK.split(text) if b.strip()]
    if len(blocks) < MIN_RECORDS or sum(len(b) >= 2 for b in blocks) < 0.7 * len(blocks):
        return False
    for k in range(3):
        forms = Counter(_form(b[k]) for b in blocks if len(b) > k)
        if forms and forms.most_common(1)[0][1] >= 0.7 * len(blocks):
            form = forms.most_common(1)[0][0]
            line = next(b[k] for b in blocks if len(b) > k and _form(b[k]) == form)
            return (line.split(None, 1) or [""])[0] not in _CODE  # not a source file's functions
    return False


def _first_word(text: str) -> str | None:
    """The word that begins each record: one that begins a line after a blank line at least
    ``MIN_RECORDS`` times and almost nowhere else, the earliest in the text where several do."""
    lines = text.split("\n")
    anywhere: Counter[str] = Counter()
    after_blank: Counter[str] = Counter()
    first_at: dict[str, int] = {}
    for i, line in enumerate(lines):
        if not line.strip() or line[0].isspace():
            continue
        word = line.split(None, 1)[0]
        if not re.search(r"[^\W_]", word) or word in _CODE or re.search(r"[\"\\]", word):
            continue  # a rule between documents, code, or what the load's r"..." cannot hold
        anywhere[word] += 1
        first_at.setdefault(word, i)
        if i == 0 or not lines[i - 1].strip():
            after_blank[word] += 1
    words = [w for w, n in after_blank.items() if n >= MIN_RECORDS and n >= 0.8 * anywhere[w]]
    return min(words, key=first_at.__getitem__) if words else None


def records_metadata(text: str) -> dict[str, Any] | None:
    """For text made of records: ``records`` (how many), ``starts`` (where each one starts, in
    words), ``sample`` (the first ones) and ``load``, the lines that make them the rows of ``df``.
    None for other text, or without pandas."""
    if not has_pandas():
        return None
    head = text[:SCAN_CHARS]
    lines = head.count("\n") + 1
    if lines < 2 * MIN_RECORDS or len(head) / lines > MAX_LINE:
        return None
    if _blocks_alike(head):
        pattern, starts = r"\n\s*\n", "after a blank line"
    elif (word := _first_word(head)) is not None:
        pattern, starts = rf"\n(?={re.escape(word)}\s)", f"at a line that begins with {word!r}"
    else:
        return None
    # Counted, not split: a log of 40 MB is not copied into a list of its records to describe it.
    text = text.strip()
    cuts = [m.group().count("\n") for m in re.finditer(pattern, text)]
    records = len(cuts) + 1
    if records < MIN_RECORDS or text.count("\n") - sum(cuts) < records:
        return None  # records of one line each: lines, not records
    load = f'{_HEAD}df = pd.DataFrame({{"text": re.split(r"{pattern}", context.strip())}})'
    return {"records": records, "starts": starts, "sample": sample_of(text), "load": load}


def has_pandas() -> bool:
    """Whether the load lines can run, without importing pandas to describe a string."""
    return importlib.util.find_spec("pandas") is not None


def files_load() -> str:
    """The lines that make a dict of files the rows of ``df``: a path and a text each."""
    return f'{_HEAD}df = pd.DataFrame({{"path": list(context), "text": list(context.values())}})'


def sample_of(text: str, limit: int = SAMPLE_CHARS) -> str:
    """The start of a text, cut at a line's end, with a mark where it was cut."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > limit // 2 else limit] + "\n[...]"


def first_file(files: Mapping[str, str]) -> tuple[str, str] | None:
    """The first file that is not empty, and its start."""
    for path, text in files.items():
        if text.strip():
            return path, sample_of(text.strip())
    return None
