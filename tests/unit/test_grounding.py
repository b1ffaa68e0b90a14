"""The answer's cheap check, rule by rule: right answers pass, the wrong ones small models give are
flagged; and the sub-model's verdict, asked and read."""

from __future__ import annotations

import time

import pytest

from rlm_kernel.grounding import (
    FOUND_NOTHING,
    JOINED,
    RUN_TOGETHER,
    TABLE,
    WHOLE_COLLECTION,
    send_back_note,
    shown_of,
    unsupported,
    verdict,
    verify_prompt,
    written_in,
)

COUNT = "How many passages mention the gopher protocol?"
WHO = "Who wrote that the gopher protocol uses port 70?"
REPORT = (
    "search('gopher protocol'): 7 passages match; the best 3:\n"
    "[1] context, character 19,104: Alice Wong wrote that the gopher protocol uses port 70\n"
    "[2] context[3]: Gopher was made in 1991 at 12 sites\n"
    "[3] context, character 2,000: a gopher server lists 25 items"
)
NOT_PRINTED = "not in anything the code printed"
FROM_SEARCH = "a number read from search matches, not computed"
NO_NUMBER = "the question asks for a quantity and the answer has no number"
ECHO = "it only repeats words of the question"


@pytest.mark.parametrize(
    ("question", "answer", "outputs"),
    [
        (COUNT, "12", [REPORT, "12\n"]),  # a count printed alone on a line
        (COUNT, "4", [REPORT, "[4, 9]\n"]),  # in a printed repr
        (COUNT, "Twelve passages.", [REPORT, "matches: 12"]),  # in words
        ("What is the total revenue?", "1,234.50", ["total: 1234.5\n"]),  # print(f"total: {x}")
        ("What is the total revenue?", "$1234.5", ["{'total': 1,234.50}"]),
        ("What is the sum of the amounts?", "-3", ["sum = -3"]),
        ("What is the average price?", "3.33", ["avg = 3.3333333333"]),  # rounded for the answer
        ("What is the average price?", "4", ["avg = 3.6"]),
        ("How much did the ferry cost?", "It cost 42 crowns.", ["price 42"]),
        (WHO, "Alice Wong", [REPORT]),  # a name found in a search hit
        (WHO, "alice  WONG.", [REPORT]),  # case, spacing and a full stop aside
        ("When was Gopher made?", "1991", [REPORT]),  # a year off a hit: not a count
        ("When is the team dinner?", "2024-03-14", ["dinner: 2024-03-14 at Luigi's"]),  # a date
        ("When is the team dinner?", "14 March 2024", ["dinner: 2024-03-14"]),
        ("When is the team dinner?", "2024-03-14", ["The dinner is on March 14, 2024."]),
        ("Where is the team dinner?", "Luigi’s", ["dinner: 2024-03-14 at Luigi's Trattoria"]),
        ("Which customer has the largest total?", "ACME Corp", ["ACME Corp  1234\nBeta Ltd  99"]),
        ("What is the phone number of Alice?", "555-1234", [REPORT + " 555-1234"]),
        ("Is the gopher protocol older than the web?", "Yes", ["1991 < 1993"]),  # a judgment
        ("Which is older, Alice or Bob?", "Bob", ["ages: 31, 44"]),  # a choice the question offers
        ("Which of Alice and Bob is older?", "Alice", ["ages: 31, 44"]),
        ("How many orders were returned?", "No orders were returned.", ["returned: 0"]),
        ("What does 'gopher' mean?", "a small burrowing rodent", ["gopher: a small burrowing rodent"]),
        (None, "42", ["6 * 7 = 42"]),  # a run without a question
        (COUNT, "", [REPORT]),  # empty: the engine says so itself
    ],
)
def test_right_answers_pass(question, answer, outputs):
    assert unsupported(question, answer, outputs) is None


@pytest.mark.parametrize(
    ("question", "answer", "outputs", "reason"),
    [
        (COUNT, "7", [REPORT], FROM_SEARCH),  # the match count in the report's header
        (COUNT, "25", [REPORT], FROM_SEARCH),  # a number off one hit
        (COUNT, "7 passages", [REPORT, "done"], FROM_SEARCH),
        (COUNT, "9", [REPORT, "12"], NOT_PRINTED),
        (COUNT, "The gopher protocol", [REPORT], NO_NUMBER),
        (
            "How many orders in 2023?",
            "2023",
            ["orders: 5"],
            "the question asks for a quantity and the answer's only number is the question's",
        ),
        (WHO, "Bob Smith", [REPORT], NOT_PRINTED),
        (WHO, "the gopher protocol", [REPORT], ECHO),  # a name from the question
        ("Who founded Acme Corp?", "Acme Corp.", ["Acme Corp was founded by Jane Roe"], ECHO),
        (
            "The line below is from the docstring of a function or class. Which one? Give its name.",
            "Function",
            ['def dircmp(a, b):\n    "A function or class comparing directories."'],
            ECHO,
        ),
        ("What is the average price?", "3.34", ["avg = 3.3333333333"], NOT_PRINTED),
        ("When is the team dinner?", "2024-04-14", ["dinner: 2024-03-14"], NOT_PRINTED),
        (None, "42", ["6 * 7 = 41"], NOT_PRINTED),
    ],
)
def test_wrong_answers_are_flagged(question, answer, outputs, reason):
    assert unsupported(question, answer, outputs) == reason


def test_a_report_line_counts_as_search_only_under_its_header():
    own = "[7] my own list, item seven\n"  # the code's own numbered lines: computed, not a report
    assert unsupported(COUNT, "7", [own]) is None
    assert (
        unsupported(COUNT, "7", [REPORT.replace("7 passages", "1 passage matches;").replace("[1]", "[7]")])
        == FROM_SEARCH
    )


def test_quantity_words_after_which_or_who_ask_for_a_name():
    assert unsupported("Which customer has the highest total?", "Beta Ltd", ["Beta Ltd 99"]) is None
    assert unsupported("Count the customers who ordered twice", "Beta Ltd", ["Beta Ltd 99"]) == NO_NUMBER


def test_eight_megabytes_of_outputs_are_checked_in_well_under_a_second_or_two():
    line = "row 12345: gamma ferry pier 417.250 and some other words\n"
    outputs = [line * 1400] * 100  # 8 MB
    outputs.append(REPORT)
    started = time.perf_counter()
    assert unsupported(COUNT, "7", outputs) == FROM_SEARCH
    assert unsupported(WHO, "Zed Quux", outputs) == NOT_PRINTED
    assert unsupported("What is the total?", "1 and 2 and 3 and 4 and 5 and 6", outputs) == NOT_PRINTED
    assert time.perf_counter() - started < 5


def test_the_verifier_sees_the_question_the_answer_and_the_latest_outputs_trimmed():
    outputs = ["first " * 1000, "middle output", "last output"]
    prompt = verify_prompt(COUNT, "7", outputs, limit=200)
    assert f"Question: {COUNT}" in prompt and "Answer: 7" in prompt
    assert "last output" in prompt and "middle output" in prompt
    assert prompt.count("first") < 40  # cut to the limit, from the end
    assert "SUPPORTED, or UNSUPPORTED" in prompt


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("SUPPORTED", None),
        ("Supported: the count was printed.", None),
        ("UNSUPPORTED: 7 is the number of search matches", "7 is the number of search matches"),
        ("**UNSUPPORTED** - copied from the question\nmore", "copied from the question"),
        ("Not supported.", "no reason given"),
        ("", None),  # a failed call
        ("I am not sure.", None),
    ],
)
def test_the_verdict_is_read_from_the_first_keyword(reply, reason):
    assert verdict(reply) == reason


def test_the_note_quotes_the_answer_and_says_what_to_do():
    note = send_back_note("7", FROM_SEARCH)
    assert note == (
        'Your answer "7" is not supported by what your code printed: a number read from search matches, '
        "not computed. Check it with code, then set the answer again (the same one if you are sure)."
    )
    assert len(send_back_note("x" * 5000, NOT_PRINTED)) < 400


@pytest.mark.parametrize(
    ("question", "answer", "outputs"),
    [
        ("How many shops in porto are closed?", "0", ["0"]),  # a filter that matched no row
        ("What is the number of open shops in Porto?", "0.0", ["0.0"]),
        ("Which grade is Nils Ade on?", "None", ["None"]),
        ("Which grade is Nils Ade on?", "Series([], Name: grade, dtype: object)", ["Series([], ...)"]),
        ("Which rows mention the ferry?", "[]", ["[]"]),
        ("Which route is slowest?", "Counter()", ["Counter()"]),  # the standard library's empties
        ("Which tags do closed shops have?", "defaultdict(<class 'int'>, {})", ["x"]),
        ("Which routes are slow?", "deque([])", ["x"]),
        ("Which readings are high?", "array([], dtype=float64)", ["x"]),
        ("Which ids are late?", "Index([], dtype='object')", ["x"]),
        ("What is the mean price of the cafes?", "nan", ["nan"]),
        ("What is the capital of Norrland?", "Not found in the context.", ["No match for 'norrland'."]),
        ("Who speaks the most words in the transcript?", "0", ["0"]),  # no name is 0
        ("Which recipe tagged 'dinner' takes longest?", "No recipes tagged 'dinner' found.", ["x"]),
        ("Who had the highest result?", "No results found", ["No results found"]),
        ("Which author made the most commits? Give the name.", "0", ["0"]),
        ("Tally the inspections at which violation 51 was cited.", "0", ["0\nHint: No row of ..."]),
    ],
)
def test_an_answer_of_nothing_found_is_sent_back_to_look_again(question, answer, outputs):
    assert unsupported(question, answer, outputs) == FOUND_NOTHING
    assert unsupported(question, answer, outputs, written=False) == FOUND_NOTHING  # computed, too


def test_a_zero_that_is_not_a_count_is_not_nothing_found():
    assert unsupported("Which function does main call first?", "parse_args()", ["parse_args()"]) is None
    assert unsupported("What is the lowest temperature, in degrees?", "0", ["min: 0"]) is None
    assert unsupported("How many shops are closed?", "10", ["10"]) is None
    assert unsupported("At which position is the highest reading?", "0", ["0"]) is None


def test_an_answer_the_code_computed_is_held_only_to_the_quantity_and_echo_rules():
    assert unsupported(COUNT, "7", [REPORT], written=False) is None
    tally = "Tally the reviews in English that have no reply."  # a count, as "how many" is
    assert (
        unsupported(tally, "Sorry for the trouble!", ["Sorry for the trouble!"], written=False) == NO_NUMBER
    )
    assert unsupported(WHO, "Bob Smith", [REPORT], written=False) is None
    assert unsupported(COUNT, "many", [REPORT], written=False) == NO_NUMBER
    assert unsupported(WHO, "the gopher protocol", [REPORT], written=False) == ECHO


def test_a_computed_answer_whose_code_never_used_what_the_question_names_is_sent_back():
    question = "What is the total of the debits to 'Kiosk Nord' booked in March 2023?"
    for code in ['n = df["amount"].sum()', 'n = df.loc[df["payee"] == "Kiosk Nord", "amount"].sum()']:
        reason = unsupported(question, "-47.5", ["-47.5"], written=False, code=code)
        assert reason is not None and reason.startswith("the code never used ")  # the payee, then the year
    good = 'm = (df["payee"] == "Kiosk nord") & (df["d"].dt.year == 2023) & (df["d"].dt.month == 3)'
    assert unsupported(question, "-47.5", ["-47.5"], written=False, code=good) is None
    assert unsupported(
        question, "-47.5", ["-47.5"], written=False, code='m = df["payee"].str.contains("kiosk", case=False)'
    ) == ("the code never used 2023, which the question names")
    month = 'm = (df["payee"] == "Kiosk Nord") & (df["d"].dt.year == 2023)'
    assert unsupported(question, "-47.5", ["-47.5"], written=False, code=month) == (
        "the code never used March, which the question names"
    )
    for by_month in ['df["d"].dt.month == 3', 'df["d"].str.startswith("2023-03")', '"mar" in s']:
        assert unsupported(question, "-47.5", ["-47.5"], written=False, code=f"{month} & {by_month}") is None
    # not for an answer written out, nor for code not given, nor for a format or an answer that is a choice
    assert unsupported(question, "-47.5", ["-47.5"], written=True, code="") is None
    assert unsupported(question, "-47.5", ["-47.5"], written=False) is None
    dated = "On which day (as 'YYYY-MM-DD') was the most sold?"
    assert unsupported(dated, "2024-01-02", ["2024-01-02"], written=False, code="n = s.idxmax()") is None
    choice = "Is 'paid in full' or 'partly paid' the more common state?"
    assert unsupported(choice, "paid in full", ["paid in full"], written=False, code="n = c.idxmax()") is None


def test_a_computed_answer_whose_code_never_used_a_path_an_address_or_an_id_of_the_question_is_sent_back():
    question = "Count the tests in tests/unit/test_inventory.py whose outcome is failed."
    every = 'n = int((df["outcome"] == "failed").sum())'  # all the tests: the file was never asked
    assert unsupported(question, "13", ["13"], written=False, code=every) == (
        "the code never used tests/unit/test_inventory.py, which the question names"
    )
    for used in ['df["nodeid"].str.startswith("tests/unit/test_inventory.py")', '"test_inventory" in s']:
        assert unsupported(question, "5", ["5"], written=False, code=f"{every}\n{used}") is None
    for question, name in [
        ("How many meetings did sara.kim@example.com accept?", "sara.kim@example.com"),
        ("On a Thursday, how many IR13 trains stop at Olten?", "IR13"),
        ("What is the mean val_loss of the finished runs?", "val_loss"),
    ]:
        assert unsupported(question, "4", ["4"], written=False, code="n = len(df)") == (
            f"the code never used {name}, which the question names"
        )
    # dates, times, ordinals, counts and a plain word are no names; an answer that is one is a choice
    plain = "How many of the 3rd-floor rooms were booked on 2024-01-02 at 06:06, the 21st time?"
    assert unsupported(plain, "4", ["4"], written=False, code='n = len(df[df["d"] == "2024-01-02"])') is None
    choice = "Which is older, build_a17 or build_b22?"
    assert unsupported(choice, "build_a17", ["build_a17"], written=False, code="n = df.idxmin()") is None


@pytest.mark.parametrize(
    ("answer", "source", "written"),
    [
        ("7", "answer['content'] = '7'\nanswer['ready'] = True", True),
        ("7", "FINAL(7)", True),
        ("Luigi's", 'FINAL("Luigi\'s")', True),
        ("17", "answer['content'] = str(n)  # 17 or so", True),
        ("17", "answer['content'] = str(n + 1)", False),
        ("7", "answer['content'] = str(17)", False),
        ("42", "n", False),  # FINAL_VAR's argument: a name
    ],
)
def test_written_out_means_a_literal_of_the_code_or_reply(answer, source, written):
    assert written_in(answer, source) is written


def test_an_answer_from_the_first_of_two_hops_is_sent_back() -> None:
    question = "Parcel 82709 was given to a courier. In which town is that courier's depot?"
    first = (
        "search('parcel 82709'): 543 passages match; the best 1:\n"
        "[1] context['slip-00153']: The scanner shows parcel 82709 leaving the hub with Zelda Wren."
    )
    second = (
        "search('Zelda Wren depot'): 3 passages match:\n[1] context['d-9']: Zelda Wren works from Yarthorpe."
    )
    assert "first of two hops" in (unsupported(question, "Zelda Wren", [first]) or "")
    assert unsupported(question, "Yarthorpe", [first, second]) is None
    one_hop = "Which courier took parcel 82709?"
    assert unsupported(one_hop, "Zelda Wren", [first]) is None


def test_an_amount_read_off_a_hit_is_not_a_count() -> None:
    hit = (
        "search('Ilse Lindqvist catering'): 1 passage matches:\n"
        "[1] context, line 1242: Invoice settled: Ilse Lindqvist received 5098.16 dollars for catering."
    )
    assert unsupported("How much did Ilse Lindqvist receive for catering?", "5098.16", [hit]) is None
    assert "search matches" in (unsupported("How many invoices were settled?", "1", [hit]) or "")


LOG = (
    "search('added lines src/hooks Kwame'): 410 passages match; the best 3:\n"
    "[1] context, line 470: 40 7 src/hooks/useCart.ts\n"
    "[2] context, line 975: Author: Kwame Mensah <kwame@shop.dev>\n"
    "[3] context, line 562: 2 28 src/hooks/useCart.ts"
)


def test_the_most_of_anything_or_a_whole_passage_read_off_search_hits_is_no_answer():
    # a superlative found in a passage: search ranks words, it does not find the most of anything
    most = "Which file under src/hooks has the most added lines?"
    reason = unsupported(most, "src/hooks/useCart.ts", [LOG], written=True)
    assert (
        reason == "it is read from search matches: a search finds passages, not the most or least of anything"
    )
    # a sum answered with a passage as it is
    total = "Sum the added lines of the files under src/hooks by Kwame."
    assert unsupported(total, "40 7 src/hooks/useCart.ts", [LOG], written=True) == (
        "it is a whole passage that search found, not a quantity computed from it"
    )
    # printed by the code's own lines too, or computed, or not a superlative: the other rules decide
    assert unsupported(most, "src/hooks/useCart.ts", [LOG, "src/hooks/useCart.ts\n"], written=True) is None
    assert unsupported(most, "src/hooks/useCart.ts", [LOG], written=False, code="n = s.idxmax()") is None
    assert unsupported("Who is the author of that commit?", "Kwame Mensah", [LOG], written=True) is None
    assert unsupported("What does line 470 say?", "40 7 src/hooks/useCart.ts", [LOG], written=True) is None


def test_a_proper_name_the_code_never_used_makes_a_computed_answer_unsupported():
    code = 'df = pd.DataFrame(context)\nn = df.loc[df["precinct"] == "0503", "votes"].sum()\nprint(n)'
    question = "Report the Election Day votes for Grant Whitaker in precinct 0503."
    why = unsupported(question, "5402", ["5402"], written=False, code=code)
    assert why == "the code never used Election Day, which the question names"
    used = code.replace(
        '== "0503"', '== "0503") & (df["choice"] == "Grant Whitaker") & (df["method"] == "Election Day"'
    )
    assert unsupported(question, "228", ["228"], written=False, code=used) is None
    # by its longest word; the question's first words are no name (a capital starts a sentence)
    assert (
        unsupported("Sum the votes of Grant Whitaker.", "12", ["12"], written=False, code="w = 'whitaker'")
        is None
    )
    assert unsupported("Total Votes: how many?", "12", ["12"], written=False, code="n = 12") is None
    # words in capitals are emphasis or terms as often as codes: no name (a prompt of the suite's own)
    steps = "In the REPL, print ALL of them. Do NOT combine steps; give the TOTAL."
    assert unsupported(steps, "1034.5", ["1034.5"], written=False, code="print(round(a + b, 2))") is None
    # a name the answer gives is a choice among the question's names
    choice = "Which got more votes, Grant Whitaker or Maria Santoro?"
    assert unsupported(choice, "Maria Santoro", ["Maria Santoro"], written=False, code="n = 1") is None


def test_a_name_in_camel_case_that_the_data_shows_and_the_code_never_used_is_sent_back():
    """A field the question names by its identifier (a column, a key), read by no code: another
    question answered. Only where the data shows the name: a product's name is no field."""
    shown = shown_of({"type": "DataFrame", "columns": "{'orderId': 'int64', 'netTotal': 'float64'}"})
    question = "What is the netTotal of order 7?"
    code = 'n = int((context["orderId"] == 7).sum())\nprint(n)'
    why = unsupported(question, "1", ["1"], written=False, code=code, shown=shown)
    assert why == "the code never used netTotal, which the question names"
    used = 'n = context.loc[context["orderId"] == 7, "netTotal"].iloc[0]\nprint(n)'
    assert unsupported(question, "18.5", ["18.5"], written=False, code=used, shown=shown) is None
    # shown by what the code printed, not the description: the same
    printed = ["   orderId  netTotal\n0        7      18.5"]
    assert unsupported(question, "1", printed, written=False, code=code) == why
    # not a field of the data: a name of a product or of the context's kind
    for other in (
        "Which column of the DataFrame has the most missing values?",
        "How many JupyterLab issues?",
    ):
        assert unsupported(other, "3", ["3"], written=False, code="print(3)", shown=shown) is None
    assert "DataFrame" not in shown  # the context's kind is not its data


def test_text_values_run_together_given_for_one_value_are_unsupported():
    """``sum()`` over a column of text joins its values end to end (protein changes, sample ids)."""
    which = "Which hgvs_p is listed for the variant of sample NGS24-0470?"
    for joined in ("p.Thr594Glyp.Ser2816=p.Ser822Phep.Ala2696=", "NGS24-0320NGS24-0470NGS24-0511"):
        assert unsupported(which, joined, [], written=False, code="n = df['hgvs_p'].sum()") == JOINED
    assert (
        unsupported("List the hgvs_p of each variant.", "p.Thr594Glyp.Ser2816=p.Ser822Phe", [], written=False)
        is None
    )
    # decimal numbers end to end (a sum over a column of amounts read as text)
    for joined in ("-812.40-77.05131.25", "12.5013.7514.00", "-7035.9917056.32"):
        assert (
            unsupported("What did the fund pay?", joined, [], written=False, code="n = df['amt'].sum()")
            == JOINED
        )
    for one in ("-812.40", "10.0.0.1", "1.26.4", "2024.06.01", "2024-06-01", "12-15", "1,234.56", "555-0134"):
        assert unsupported("What is it?", one, [one], written=False, code="n = 1") is None
    for one in (
        "p.Cys531=",
        "https://example.com/a/b/c/d/e/f",
        "2024-01-01T10:00:00+00:00",
        "A" * 24,
        "ATCGATCGATCGATCGATCG x",
    ):
        assert unsupported("Which value is it?", one, [], written=False, code="n = 1") is None


def test_a_printed_table_given_for_a_quantity_is_unsupported():
    table = "          votes\nprecinct       \n0101        10\n0102        10"
    assert unsupported("Count the precincts where Yes won.", table, [table], written=False) == TABLE
    assert unsupported("Which precincts did Yes win?", "0101\n0102", ["0101\n0102"], written=False) is None


def test_values_run_together_given_for_one_quantity_are_unsupported():
    """A sum over a column of text joins its values end to end (kubectl's RESTARTS, '2 (4d ago)')."""
    joined = "6 (8d ago)000297 (2m1s ago)6 (20d ago)002 (4d9h ago)4 (6d18h ago)000"
    for question in ("Add up the RESTARTS of the checkout pods.", "What is the total of RESTARTS?"):
        assert unsupported(question, joined, [joined], written=False) == RUN_TOGETHER
    assert unsupported("List the RESTARTS of each pod.", joined, [joined], written=False) is None
    for one in ("1 days 02:03:04.500000", "1,234,567.89", "42"):
        assert unsupported("What is the total time?", one, [one], written=False) is None


def test_a_sum_in_the_fields_own_unit_is_unsupported_where_the_question_asks_another():
    question = "How many hours did the runner spend on tracks tagged 'hill', in total?"
    code = 'df = pd.DataFrame(context)\nn = df.loc[df["tag"] == "hill", "moving_time_s"].sum()\nprint(n)'
    why = unsupported(question, "45120", ["45120"], written=False, code=code)
    assert why == "the question asks in hours and the code reads moving_time_s (seconds) without converting"
    assert unsupported(question, "45120", ["45120"], written=True, code=code) == why  # written out too
    camel = code.replace("moving_time_s", "elapsedMs")
    assert "elapsedMs (milliseconds)" in unsupported(question, "45120", ["45120"], written=False, code=camel)
    sizes = 'n = sum(f["size_bytes"] for f in context if f["ext"] == ".parquet")\nprint(n)'
    why = unsupported(
        "How many MB do the .parquet files take?", "9437184", ["9437184"], written=False, code=sizes
    )
    assert why == "the question asks in megabytes and the code reads size_bytes (bytes) without converting"
    legs = 'n = df["distance_m"].sum()\nprint(n)'
    why = unsupported("How many km did she ride?", "81200", ["81200"], written=False, code=legs)
    assert why == "the question asks in kilometres and the code reads distance_m (metres) without converting"
    # converted, or asked in the field's own unit, or no unit asked: nothing to say
    for converted in (code.replace(".sum()", ".sum() / 3600"), code + "\nh = pd.to_timedelta(n, unit='s')"):
        assert unsupported(question, "12.5", ["12.5"], written=False, code=converted) is None
    own = "What is the jvm_memory_used_bytes of pod a-1, in bytes?"
    assert (
        unsupported(own, "6.77706027e+08", [], written=False, code='v = d["jvm_memory_used_bytes"]') is None
    )
    shortest = 'n = df.groupby("tag")["hours"].min().min()\nprint(n)'  # min() is no unit
    assert unsupported(question, "1.5", ["1.5"], written=False, code=shortest) is None
    plain = "What is the total moving time of tracks tagged 'hill'?"
    assert unsupported(plain, "45120", ["45120"], written=False, code=code) is None


@pytest.mark.parametrize(
    "printed",
    [
        "team\nRovers    3\nName: goals, dtype: int64",  # a Series of one row
        "0022400001    119\n0022400002    114\n             ... \nName: home, Length: 80, dtype: int64",
        "     a  b\n0    1  2\n..  .. ..\n[120 rows x 2 columns]",
        "Counter({'north': 1094, 'south': 94})",
        "defaultdict(<class 'int'>, {'north': 3})",
    ],
)
def test_a_whole_collection_given_for_one_value_is_unsupported(printed: str) -> None:
    one = (
        "Which team scored the most goals?",
        "How many games did the Rovers win?",
        "Across all games, who won most?",
    )
    for question in one:
        assert unsupported(question, printed, [printed], written=False) == WHOLE_COLLECTION
    # asked for several values, a collection may be the answer
    assert unsupported("List the goals per team.", printed, [printed], written=False) is None


def test_one_value_from_a_collection_is_not_a_whole_collection():
    for answer in ("Rovers", "3", "north", "dtype: int64 is the column's type"):
        assert unsupported("Which team scored the most?", answer, [answer], written=False) != WHOLE_COLLECTION
