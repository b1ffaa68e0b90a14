"""The REPL helpers of the small profile (search, classify's parsing), its worked examples,
the streaming repetition guard and the reply parser's open last fence."""

from __future__ import annotations

import json

import pytest

from rlm_kernel.helpers import Helpers, _label_of, named_terms, search_text, terms_of
from rlm_kernel.lm.base import RepetitionGuard, without_repeats
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


def test_classify_reads_the_label_a_reply_names() -> None:
    labels = ["numeric value", "human being", "description and abstract concept"]
    assert _label_of("numeric value", labels) == "numeric value"
    assert _label_of("Human being.", labels) == "human being"
    assert _label_of("description", labels) == "description and abstract concept"
    assert _label_of("no idea", labels) == "unknown"


def test_classify_needs_sub_calls_and_a_list() -> None:
    with pytest.raises(RuntimeError, match="needs sub-calls"):
        Helpers("x").classify(["a"], ["l"])
    assert set(Helpers("x").bound()) == {"search"}  # no home-made table API: pandas does rows


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
        (
            {"shape": "table", "type": "list"},
            "How many are open?",
            "import pandas as pd\ndf = pd.DataFrame(context)",
        ),
        (
            {"shape": "table", "type": "str"},
            "How many are open?",
            "import io\nimport pandas as pd\ndf = pd.read_csv(",
        ),
        (
            {"shape": "table", "type": "str", "format": "fwf"},
            "How many are open?",
            "import io\nimport pandas as pd\ndf = pd.read_fwf(io.StringIO(context), colspecs=[(0, 7), ",
        ),
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
    assert (
        "holds CSV text" in csv_turns[0]["content"] and context_metadata(_context("csv"))["shape"] == "table"
    )
    fwf_turns = example_turns(
        {"shape": "table", "type": "str", "format": "fwf"}, "How many shops are closed?"
    )
    assert "holds a text table, its columns aligned" in fwf_turns[0]["content"]
    closed = sum(row["status"] == "closed" for row in _context("table"))
    asked = next(
        i for i, t in enumerate(fwf_turns) if t["content"].endswith("Question: How many shops are closed?")
    )
    assert fwf_turns[asked + 2]["content"] == f"Output of step 1:\n{closed}"  # the load reads the table right


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


def test_the_repetition_guard_stops_a_block_of_lines_written_again_and_again() -> None:
    block = "".join(f"a = a[a['organizer'] != '{m}@example.com']\n" for m in ("sara", "olivia", "mike"))
    reply = "```repl\nimport pandas as pd\na = pd.DataFrame(context)\n" + block * 8 + "a = a[a['org"
    guard = RepetitionGuard()  # a period of 130 characters or so: longer than a sentence's
    stopped = next(i for i in range(0, len(reply), 5) if guard.feed(reply[i : i + 5]))
    assert stopped < len(reply) // 2
    # the block once, and not the half-written line after it
    read = reply[: stopped + 5]
    assert without_repeats(read) == "```repl\nimport pandas as pd\na = pd.DataFrame(context)\n" + block
    assert without_repeats("x = 1\nprint(x)\n") == "x = 1\nprint(x)\n"  # no loop: as it was
    # two lines alike, or a short line three times, are code
    guard = RepetitionGuard()
    code = "print()\nprint()\nprint()\n" + "x = df[df['a'] > 1]\n" * 2
    code += "".join(f"y{i} = df.loc[{i}, 'total_amount']\n" for i in range(30))
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


def test_counting_over_lines_is_code_over_the_lines_not_a_search() -> None:
    text = "\n".join(f"2024-05-{i % 28 + 1:02d} host-{i % 3} level=warn msg=disk" for i in range(300))
    meta = context_metadata(text)
    question = "On which host were the most warning entries written?"
    turns = example_turns(meta, question)
    codes = [t["content"] for t in turns if t["role"] == "assistant" and "lines = " in t["content"]]
    assert codes and not any('\nsearch("' in t["content"] for t in turns)
    outputs = [t["content"] for t in turns if t["content"].startswith("Output")]
    for code, output in zip(codes, outputs, strict=True):
        namespace = {"context": _context("messages")}  # the example's printed output is its code's
        exec(code.removeprefix("```repl\n").removesuffix("\n```").replace("print(n)", ""), namespace)
        assert output == f"Output of step 1:\n{namespace['n']}"
    assert reply_start(meta, question) == (
        "```repl\nimport re\nfrom collections import Counter\nlines = context.splitlines()\n",
        None,
    )
    assert reply_start(meta, "Which host wrote the disk warning?")[0].endswith('search("')  # a lookup


def test_a_dict_of_frames_is_loaded_by_name_and_joined_with_merge() -> None:
    pd = pytest.importorskip("pandas")
    context = {
        "Orders": pd.DataFrame({"order": [1, 2], "customer": ["c1", "c2"]}),
        "Customers": pd.DataFrame({"customer": ["c1", "c2"], "city": ["Leeds", "York"]}),
    }
    meta = context_metadata(context)
    question = "How many orders were placed by customers in Leeds?"
    start = reply_start(meta, question)
    assert start == ("```repl\norders = context['Orders']\ncustomers = context['Customers']\n", None)
    namespace = {"context": context}
    exec(start[0].removeprefix("```repl\n"), namespace)
    assert namespace["customers"] is context["Customers"]
    shown = "\n".join(t["content"] for t in example_turns(meta, question) if t["role"] == "assistant")
    assert ".merge(" in shown and "context[[" not in shown


# -- search finds what the question names ---------------------------------------------------------

_COMMON = [
    "Which status code? The status code of a reply is a status code number.",
    "A status code is the code of the status line.",
    "Status code classes: each status code belongs to one code class.",
]
_FILLER = [f"Entry {i}: the cache keeps a copy of each page for later." for i in range(60)]


def _members(name: str) -> str:
    """One long line of enum members, the named one in its middle."""
    first = ", ".join(f"NAME_{i} = {300 + i}" for i in range(20))
    return f"HTTPStatus members: {first}, {name} = 418, " + ", ".join(
        f"OTHER_{i} = {500 + i}" for i in range(10)
    )


def test_an_identifier_outranks_lines_full_of_the_questions_common_words() -> None:
    text = "\n".join(_FILLER[:20] + _COMMON + _FILLER[20:40] + [_members("IM_A_TEAPOT")] + _FILLER[40:])
    out = search_text(text, "which status code is IM_A_TEAPOT?").splitlines()
    assert "IM_A_TEAPOT = 418" in out[1]
    assert len(out) == 2  # only the passage that holds what the question names
    assert out[0].startswith("search('which status code is IM_A_TEAPOT?'): 5 passages match; the best 1")


def test_an_identifier_not_written_whole_is_found_by_its_words() -> None:
    text = "\n".join([*_COMMON, _members("I'm a teapot"), *_FILLER])
    assert "I'm a teapot = 418" in search_text(text, "which status code is IM_A_TEAPOT?").splitlines()[1]
    code = "def get_user_name():\n    return 'x'\nuser = 1\nname = 2\n"
    assert search_text(code, "what does getUserName return?").splitlines()[1].endswith("def get_user_name():")


def test_a_code_of_letters_and_digits_and_a_quoted_phrase_come_first() -> None:
    rows = [f"Shelf S{i:02d}: see the list in the back room, box {i}." for i in range(1, 30)]
    rows += [f"Winter stock: the shop keeps its winter stock on the stock shelf {i}." for i in range(5)]
    rows += [f"Delivery {i} came on time." for i in range(40)]
    out = search_text("\n".join(rows), "Which winter stock does the shop keep on shelf S08?").splitlines()
    assert out[1:] == ["[1] context, line 8: Shelf S08: see the list in the back room, box 8."]
    text = "\n".join(["late fees are charged for late books", "a late return costs 30 crowns", *_FILLER])
    assert (
        search_text(text, 'What does a "late return" cost? late fees?').splitlines()[1].endswith("30 crowns")
    )


def test_a_file_named_in_the_question_is_searched_by_its_path() -> None:
    files = {
        "app/main.py": "import config\nport = config.port\nprint('the port is', port)\n",
        "app/config.yaml": "port: 8080\nhost: example.org\n",
        "docs/setup.md": "Set the port in the config file.\nThe port must be free.\n",
    }
    out = search_text(files, "Which port does config.yaml set?").splitlines()
    assert out[1] == "[1] context['app/config.yaml'], line 1: port: 8080"
    assert all("app/config.yaml" in line for line in out[1:])


def test_a_rare_word_outranks_several_common_ones() -> None:
    lines = [f"Ferry office: ferry {i}, ferry timetable." for i in range(8)]
    lines += [f"Note {i}: bring a coat." for i in range(100)]
    lines.insert(
        60, "Passengers of the hydrofoil board at the eastern quay, after the ticket check at gate three."
    )
    out = search_text("\n".join(lines), "Where does the hydrofoil ferry leave from the ferry office?")
    assert "hydrofoil" in out.splitlines()[1]


def test_named_terms_are_what_the_question_writes_as_a_name() -> None:
    names = [
        n.text
        for n in named_terms('Is "late return" in pkg/util.py, S08, QX-4821 or getUserName, e.g. v2.4.1?')
    ]
    assert names == ["late return", "pkg/util.py", "v2.4.1", "S08", "QX-4821", "getUserName"]
    named = named_terms("What is the HTTP_PORT of the TCP server in 2021?")
    assert [n.text for n in named] == ["HTTP_PORT", "TCP"]  # a bare number is only a rare word
    assert named_terms("WHERE IS THE BOATHOUSE KEY?") == []  # a question in capitals names nothing by them
    assert named_terms("Which city has the most shops, e.g. by count?") == []
