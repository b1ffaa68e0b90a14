"""The REPL helpers of the small profile (search, table, classify's parsing), its worked
examples, the streaming repetition guard and the reply parser's open last fence."""

from __future__ import annotations

import json

import pytest

from rlm_kernel.helpers import Helpers, Rows, _label_of, rows_of, search_text, terms_of
from rlm_kernel.lm.base import RepetitionGuard
from rlm_kernel.prompts import context_metadata, opening_messages
from rlm_kernel.protocol import code_blocks, find_final
from rlm_kernel.worked import _context, example_turns, reply_start, reply_starts, shape_of

HAY = " ".join(f"Filler sentence number {i} about the harbour and its boats." for i in range(3000))
NEEDLE = "The keypad combination for the boathouse is QX-4821."


def with_needle(at: int) -> str:
    return HAY[:at] + " " + NEEDLE + " " + HAY[at:]


def test_terms_drop_stop_words_and_possessives() -> None:
    assert terms_of("What is Ilse Varga's keypad code for the boathouse?") == [
        "ilse", "varga", "keypad", "code", "boathouse",
    ]  # fmt: skip


@pytest.mark.parametrize("at", [0, 50_000, len(HAY)])
def test_search_finds_the_passage_in_one_long_line(at: int) -> None:
    out = search_text(with_needle(at), "Which keypad combination opens the boathouse?")
    first = out.splitlines()[1]
    assert first.startswith("[1] context") and "QX-4821" in first
    assert len(first) < 400  # a window, not the whole line


def test_search_names_where_each_passage_is() -> None:
    docs = [HAY[:2000], HAY[:1000] + " " + NEEDLE, HAY[:500]]
    first = search_text(docs, "boathouse keypad").splitlines()[1]
    assert first.startswith("[1] context[1], character 900: ") and "QX-4821" in first
    records = {"r-1": {"note": HAY[:300]}, "r-2": {"note": NEEDLE, "page": 2}}
    assert (
        search_text(records, "boathouse")
        .splitlines()[1]
        .startswith('[1] context[\'r-2\']: {"note": "The keypad')
    )
    files = {"pkg/a.py": "x = 1\ny = 2\n", "pkg/b.py": "import os\n\nLIMIT = 40\n"}
    assert search_text(files, "LIMIT").splitlines()[1] == "[1] context['pkg/b.py'], line 3: LIMIT = 40"


def test_search_ranks_passages_by_how_many_rare_words_they_hold() -> None:
    text = "the boats left early. " * 50 + "A boathouse stands here. " + "x " * 300 + NEEDLE
    out = search_text(text, "boathouse keypad combination")
    assert "QX-4821" in out.splitlines()[1]
    assert out.splitlines()[0].startswith("search('boathouse keypad combination'): 2 passages match")


def test_search_matches_numbers_as_whole_tokens() -> None:
    services = "\n".join(
        ["# Network services, Internet style: tcp and udp ports", "domain-s 853/tcp", "f5-iquery 4353/tcp",
         "gopher 70/tcp", "netnews 370/tcp", "domain 53/tcp", "http 80/tcp www"]
    )  # fmt: skip
    assert search_text(services, "port 53").splitlines()[1].endswith("domain 53/tcp")
    assert "1 passage matches" in search_text(services, "53")
    out = search_text(services, "Which TCP port does gopher use?")
    assert out.splitlines()[1].endswith("gopher 70/tcp")  # the rare word wins over the header line


def test_search_shows_each_hit_under_its_heading_or_header_row() -> None:
    text = "\n".join(["4. Fees", "A fee applies to each", "late return: 30 crowns.", "5. Refunds", "None."])
    assert search_text(text, "late return crowns").splitlines()[1] == (
        "[1] context, line 3: (under '4. Fees') late return: 30 crowns."
    )
    rows = "id,city,beds\n1,Lyon,3\n2,Graz,9\n3,Turku,4\n"
    assert search_text(rows, "Graz").splitlines()[1] == "[1] context, line 3: (under 'id,city,beds') 2,Graz,9"


def test_search_sees_past_thousands_of_occurrences_of_a_common_word() -> None:
    text = "\n".join([f"port {i} is closed" for i in range(5000)] + ["port 7001 serves the gopher archive"])
    assert "7001" in search_text(text, "gopher port").splitlines()[1]


def test_search_reads_a_dataframes_rows() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"city": ["Lyon", "Graz", "Turku"], "beds": [3, 9, 4]})
    assert search_text(frame, "Graz").splitlines()[1] == "[1] row 1: city=Graz, beds=9"


def test_search_says_when_nothing_matches() -> None:
    assert (
        search_text(HAY, "zebra giraffe")
        == "No match for 'zebra', 'giraffe'. Try other words from the question."
    )
    assert "needs words to look for" in search_text(HAY, " ?! ")


def test_table_reads_rows_from_any_container() -> None:
    rows = [{"id": 1, "city": "Lyon", "n": 2.5}, {"id": 2, "city": "Graz", "n": 4}]
    csv_text = "id,city,n\n1,Lyon,2.5\n2,Graz,4\n"
    assert rows_of(rows) == rows_of(csv_text) == rows_of(json.dumps(rows)) == rows
    assert rows_of({"a": {"x": 1}, "b": {"x": 2}}) == [{"key": "a", "x": 1}, {"key": "b", "x": 2}]
    assert isinstance(rows_of(csv_text), Rows)
    with pytest.raises(TypeError, match="table\\(\\) reads a list of dicts"):
        rows_of(42)
    with pytest.raises(TypeError, match="found no rows"):
        rows_of("just a sentence")


def test_rows_answer_the_usual_questions() -> None:
    rows = Rows(
        [
            {"city": "Lyon", "state": "Closed", "amount": 10.25, "day": "2024-03-02"},
            {"city": "Lyon", "state": "open", "amount": 5, "day": "2024-03-19"},
            {"city": "Graz", "state": "open", "amount": 1.5, "day": "2024-04-01"},
        ]
    )
    assert len(rows.where(state="closed")) == 1  # strings compare without case
    assert len(rows.where(city="Lyon", state="open")) == 1
    assert len(rows.where(day="2024-03")) == 2  # a date matches by its beginning
    assert len(rows.where(city="Ly")) == 0  # other strings do not
    assert len(rows.where(amount=">5")) == 1 and len(rows.where(amount="<=5")) == 2
    assert rows.where(city="Lyon").sum("amount") == 15.25
    assert rows.most_common("city") == "Lyon"


def test_classify_reads_the_label_a_reply_names() -> None:
    labels = ["numeric value", "human being", "description and abstract concept"]
    assert _label_of("numeric value", labels) == "numeric value"
    assert _label_of("Human being.", labels) == "human being"
    assert _label_of("description", labels) == "description and abstract concept"
    assert _label_of("no idea", labels) == "unknown"


def test_classify_needs_sub_calls_and_a_list() -> None:
    with pytest.raises(RuntimeError, match="needs sub-calls"):
        Helpers("x").classify(["a"], ["l"])
    assert set(Helpers("x").bound()) == {"search", "table"}


class _NoAsker:
    def ask_batched(self, conversations, max_tokens=None):
        raise AssertionError("labels this bad must not reach the sub-model")


@pytest.mark.parametrize("labels", [0, "praise, complaint", ["praise"], None])
def test_classify_says_in_one_line_what_labels_it_takes(labels) -> None:
    with pytest.raises(
        TypeError, match=r"a list of two or more strings, e\.g\. classify\(items, \['praise'"
    ) as err:
        Helpers("x", _NoAsker()).classify(["a", "b"], labels)
    assert "\n" not in str(err.value) and repr(labels)[:10] in str(err.value)


@pytest.mark.parametrize(
    ("context", "shape"),
    [
        (HAY, "text"),
        ("\n".join(HAY.split(". ")), "lines"),
        ([HAY[:500], HAY[500:1000]], "documents"),
        ({"a": HAY[:300], "b": HAY[300:600]}, "documents"),
        ({"a": {"note": HAY[:300]}}, "documents"),
        ([{"id": 1, "city": "Lyon"}] * 3, "table"),
        ({"a": {"id": 1}, "b": {"id": 2}}, "table"),
        ("id,city\n1,Lyon\n2,Graz\n3,Turku\n", "table"),
        (json.dumps([{"id": 1}, {"id": 2}]), "table"),
        ("Date: Jan 01, 2023 || User: 1 || Instance: Why?\n" * 30, "lines"),  # not a CSV: no header
        (42, "other"),
    ],
)
def test_shapes(context: object, shape: str) -> None:
    assert shape_of(context) == shape


@pytest.mark.parametrize(
    ("meta", "question", "first_code"),
    [
        ({"shape": "text"}, "Who is it?", "search("),
        ({"shape": "lines"}, "Who is it?", "search("),
        ({"shape": "documents"}, "Who is it?", "search("),
        ({"shape": "table", "type": "list"}, "How many are open?", "rows = table()"),
        ({"shape": "table", "type": "str"}, "How many are open?", "rows = table()"),
        ({"shape": "lines"}, "How many should be labelled 'x'?", "from collections import Counter"),
    ],
)
def test_the_worked_example_fits_the_context(meta: dict, question: str, first_code: str) -> None:
    turns = example_turns(meta, question)
    assert [t["role"] for t in turns[:4]] == ["user", "assistant", "user", "assistant"]
    assert turns[-1]["role"] == "assistant" and 'answer["ready"] = True' in turns[-1]["content"]
    assert turns[1]["content"].startswith(f"```repl\n{first_code}")


def test_the_examples_show_what_the_helpers_really_print() -> None:
    for shape in ("text", "lines", "documents"):
        turns = example_turns({"shape": shape}, "q")
        code = turns[1]["content"].removeprefix("```repl\nsearch(").removesuffix(")\n```")
        assert turns[2]["content"] == "Output of step 1:\n" + search_text(_context(shape), eval(code))
        assert "pier 14" in turns[2]["content"]
    csv_turns = example_turns({"shape": "table", "type": "str"}, "q")
    assert "type str" in csv_turns[0]["content"] and context_metadata(_context("csv"))["shape"] == "table"


def test_the_table_example_closest_to_the_question_comes_last() -> None:
    turns = example_turns(
        {"shape": "table", "type": "list"}, "What is the total amount of orders from the west?"
    )
    assert "Question: What is the total revenue" in turns[-4]["content"]
    turns = example_turns({"shape": "table", "type": "list"}, "Which customer placed the most orders?")
    assert "Question: Which city has the most shops?" in turns[-4]["content"]


def test_the_repetition_guard_stops_loops_only() -> None:
    guard = RepetitionGuard()
    loop = "The license grants patent rights. " * 40
    assert any(guard.feed(loop[i : i + 5]) for i in range(0, len(loop), 5))
    guard = RepetitionGuard()
    code = "\n".join(f"row_{i} = table()[{i}]" for i in range(300))
    assert not any(guard.feed(code[i : i + 5]) for i in range(0, len(code), 5))


def test_a_last_fence_left_open_is_code() -> None:
    assert code_blocks("```repl\nx = 1\n```\nthen\n```repl\ny = 2\nprint(y)") == [
        "x = 1\n",
        "y = 2\nprint(y)\n",
    ]
    assert code_blocks("```repl\n\n") == []
    assert find_final("```repl\nFINAL(2)") is None  # FINAL inside the open block is code, not text


def test_metadata_never_builds_the_whole_repr() -> None:
    class Loud:
        def __repr__(self) -> str:
            raise AssertionError("the preview reached past the first items")

    meta = context_metadata([1, 2, 3, 4, 5, Loud()])
    assert meta["preview"] == "[1, 2, 3, 4, 5, ...]" and meta["items"] == 6


def test_a_dataframe_is_described_as_a_data_scientist_sees_it_and_gets_pandas_examples() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"team": ["red", "blue"] * 50, "score": range(100)})
    meta = context_metadata(frame)
    assert meta["shape"] == "frame" and meta["dims"] == [100, 2]
    text = opening_messages(profile="small", question="How many red scores exceed 40?", context_meta=meta)
    last = text[-1]["content"]
    assert "DataFrame of shape (100 x 2)" in last and "team (" in last and "score (int64)" in last
    assert "df = context" in text[2]["content"]  # the worked example is pandas, not search()
    assert reply_start(meta, "How many red scores exceed 40?") == ("```repl\ndf = context\n", None)
    assert shape_of(pd.Series([1.0, 2.0])) == shape_of(frame["score"].to_numpy()) == "array"


def test_the_worked_example_suits_the_question() -> None:
    meta = context_metadata(["a note", "another note"] * 200)
    two_hops = "Parcel 12 went to a courier. Which depot does the courier who took parcel 12 use?"
    turns = example_turns(meta, two_hops)
    assert sum("search(" in t["content"] for t in turns if t["role"] == "assistant") == 2
    assert reply_starts(meta, two_hops) == {
        1: ("```repl\n# Two steps: find", None),  # the plan is the model's own
        2: ("```repl\n# Found in [1]:", None),  # and so is what it found
    }
    by_meaning = "How many of the notes are about sport? Judge each by its meaning."
    assert "classify(items, " in example_turns(meta, by_meaning)[1]["content"]
    assert reply_starts(meta, by_meaning)[1][0].endswith("classify(items,")  # no bare space
    assert reply_start(meta, "Where is the archive?")[0].endswith('search("')
