"""Text made of records, and a dict of files, as rows of a DataFrame the root is told how to load."""

from __future__ import annotations

import re

import pytest

from rlm_kernel.prompts import context_metadata, describe_context
from rlm_kernel.text_records import records_metadata, sample_of
from rlm_kernel.worked import example_turns, reply_start

pd = pytest.importorskip("pandas")

AUTHORS = ["Ada Byron", "Lin Wei", "Omar Haddad", "Sofia Reyes"]
SENTENCES = [
    "The harbour office opens at seven on weekdays,",
    "and the ferry leaves when the tide allows it.",
    "Tickets for the museum boat cost more this season",
    "because the council voted for new benches in the park.",
    "Road works on Mill Street will last until the spring;",
    "nobody expects them to end on time.",
    "Volunteers planted trees along the canal.",
]


def _git_log(n: int = 30) -> str:
    commits = []
    for i in range(n):
        files = "\n".join(f"{i % 7 + k}\t{k}\tsrc/mod_{(i + k) % 5}.py" for k in range(1 + i % 3))
        commits.append(
            f"commit {i:040x}\nAuthor: {AUTHORS[i % 4]} <a{i % 4}@x.org>\nDate:   Mon Jan {i % 28 + 1:02d} "
            f"10:00:00 2024 +0000\n\n    fix: part {i}\n\n{files}\n"
        )
    return "\n".join(commits)


def _cues(n: int = 40) -> str:
    cues = ["WEBVTT\n\nNOTE made by a recorder"]
    for i in range(n):
        text = "Yes." if i % 3 else "We start.\nThen we go on."  # cues of one line and of two
        cues.append(
            f"{i + 1}\n00:{i // 60:02d}:{i % 60:02d}.000 --> 00:{i // 60:02d}:{i % 60:02d}.900\n{text}"
        )
    return "\n\n".join(cues)


def _load(meta: dict, context: object) -> pd.DataFrame:
    namespace = {"context": context}
    exec(meta["load"], namespace)  # the lines the root is given, as given
    return namespace["df"]


def test_a_git_log_is_a_record_per_commit_loaded_with_re_split() -> None:
    log = _git_log()
    meta = records_metadata(log)
    assert (
        meta is not None and meta["records"] == 30 and meta["starts"] == "at a line that begins with 'commit'"
    )
    df = _load(meta, log)
    assert len(df) == 30 and all(t.startswith("commit ") for t in df["text"])
    authors = df["text"].str.extract(r"Author: (.+?) <")[0]
    assert authors.value_counts()["Ada Byron"] == 8


def test_cues_between_blank_lines_are_records_though_their_sizes_differ() -> None:
    text = _cues()
    meta = records_metadata(text)
    assert meta is not None and meta["starts"] == "after a blank line"
    df = _load(meta, text)
    assert df["text"].str.contains("-->").sum() == 40  # and the header's two blocks


@pytest.mark.parametrize(
    "text",
    [
        # prose in paragraphs, wrapped
        "\n\n".join("\n".join(SENTENCES[(p + k) % 7] for k in range(4)) for p in range(30)),
        # a log of one line per entry
        "\n".join(f"2024-01-{i % 28 + 1:02d} INFO job {i} done in {i % 9}s" for i in range(300)),
        # source code: functions after blank lines
        "\n\n".join(f"def f{i}(x):\n    y = x + {i}\n    return y * 2" for i in range(30)),
        # a table
        "id,name\n" + "\n".join(f"{i},n{i}" for i in range(100)),
    ],
    ids=["prose", "one-line-log", "code", "csv"],
)
def test_prose_a_log_of_lines_code_and_tables_are_not_records(text: str) -> None:
    assert records_metadata(text) is None


def test_the_load_lines_run_whatever_word_starts_the_records() -> None:
    for word in ("[[package]]", "@article{", "From", "*** Entry"):
        text = "\n\n".join(f"{word} {i}\nname = n{i}\nsize = {i}" for i in range(12))
        meta = records_metadata(text)
        assert meta is not None and len(_load(meta, text)) == 12, word
    quoted = "\n\n".join(f'"id": {i},\n\n    "x": {i}\n    "y": {i}' for i in range(12))  # not in r"..."
    meta = records_metadata(quoted)
    assert meta is None or len(_load(meta, quoted)) == 12


def test_the_description_shows_the_first_records_and_ends_with_the_lines_that_load_them() -> None:
    log = _git_log()
    text = describe_context(context_metadata(log))
    assert text.startswith(
        f"The variable `context` holds text ({len(log):,} characters, {log.count(chr(10)) + 1:,} lines): "
        "30 records, each starting at a line that begins with 'commit'. It begins:\ncommit "
    )
    assert "[...]\nLoad them as rows with:\nimport re\nimport pandas as pd\n" in text
    assert text.endswith('df = pd.DataFrame({"text": re.split(r"\\n(?=commit\\s)", context.strip())})')


def test_a_sample_is_cut_at_a_line_end_and_says_so() -> None:
    text = "\n".join(f"line {i}" for i in range(500))
    sample = sample_of(text, 100)
    assert sample.endswith("\n[...]") and len(sample) <= 106 and sample.splitlines()[-2] == "line 12"
    assert sample_of("short", 100) == "short"


@pytest.mark.parametrize(
    "context", [_git_log(), {f"notes/{i}.txt": f"Owner: {AUTHORS[i % 4]}\nItems: {i}" for i in range(30)}]
)
def test_the_first_reply_begins_with_the_load_lines_and_the_examples_run_on_rows(context: object) -> None:
    meta = context_metadata(context)
    question = "How many records name Lin Wei?"
    start, stop = reply_start(meta, question)
    assert start == f"```repl\n{meta['load']}\n" and stop is None
    turns = example_turns(meta, question)
    codes = [t["content"] for t in turns if t["role"] == "assistant" and "df" in t["content"]]
    assert len(codes) == 5 and all("search(" not in re.sub(r"re\.search\(", "", c) for c in codes)
    # the example closest to the question comes last: counting by what a record holds
    assert 'str.contains("rain", case=False)' in codes[-1]
