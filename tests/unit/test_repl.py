import threading

from rlm_kernel.executors.local import LocalExecutor
from rlm_kernel.repl import RESERVED, Scaffold, truncate


def test_assignments_before_an_exception_survive():
    ex = LocalExecutor()
    result = ex.run("a = 1\nb = [a]\nraise ValueError('boom')\nc = 3", step=1)
    assert ex.namespace["a"] == 1 and ex.namespace["b"] == [1]
    assert "c" not in ex.namespace
    assert "ValueError: boom" in result.error


def test_last_expression_value_and_output_are_seen():
    ex = LocalExecutor()
    result = ex.run("print('out')\nimport sys\nprint('err', file=sys.stderr)\n{'k': 2}", step=1)
    assert result.stdout == "out\n" and result.stderr == "err\n"
    assert result.value == "{'k': 2}"
    assert result.text() == "out\nerr\n{'k': 2}\n"


def test_traceback_is_compact_and_plain():
    ex = LocalExecutor()
    ex.run("def f(x):\n    return x[10]\n", step=1)
    result = ex.run("y = 2\nf([1])", step=2)
    assert "\x1b[" not in result.error
    assert "rlm-step-2" in result.error and "rlm-step-1" in result.error  # the step's own frames
    assert "return x[10]" in result.error  # with their source lines
    assert "executors/local.py" not in result.error  # not the harness's frames
    assert result.error.strip().endswith("IndexError: list index out of range")


def test_a_missing_column_is_told_where_it_is_and_a_library_s_frames_are_left_out():
    ex = LocalExecutor()
    ex.run(
        "import pandas as pd\ncustomers = pd.DataFrame({'customer_id': [1], 'city': ['Leeds']})\n"
        "orders = pd.DataFrame({'order_id': [1], 'customer_id': [1], 'unit_Price': [2.5]})",
        step=1,
    )
    error = ex.run("n = orders['city']", step=2).error
    assert error.endswith(
        "KeyError: 'city'\nHint: 'city' is a column of customers. Columns of the DataFrames: "
        "customers: customer_id, city; orders: order_id, customer_id, unit_Price.\n"
    )
    assert "index.pyx" not in error  # of pandas' own frames, only the innermost of each exception
    error = ex.run("n = orders['unit_price'].sum()", step=3).error
    assert "Hint: Close column names: 'unit_Price'. Columns of" in error
    assert "Hint" not in ex.run("n = {}['x']", step=4).error  # no DataFrame is missing it: no hint
    error = ex.run("n = customers.groupby('city')['order_id'].sum()", step=5).error
    assert "Hint: 'order_id' is a column of orders." in error


def test_a_column_inside_a_nested_one_is_named_as_json_normalize_names_it():
    ex = LocalExecutor()
    ex.run(
        "import pandas as pd\nruns = pd.json_normalize([{'id': 1, 'metrics': {'acc': 0.5, 'accel': 2}}])",
        step=1,
    )
    error = ex.run("n = runs['acc'].max()", step=2).error
    assert (
        "Hint: Close column names: 'metrics.acc'. Columns of the DataFrames: runs: id, metrics.acc," in error
    )


def test_a_column_no_frame_has_is_told_with_the_columns_there_are_and_pandas_own_error_once():
    ex = LocalExecutor()
    ex.run("import pandas as pd\ntests = pd.json_normalize([{'id': 1, 'call': {'duration': 0.5}}])", step=1)
    error = ex.run("n = tests['call.phase'].max()", step=2).error
    # pandas raises its KeyError from its hash table's: that one, in no frame of the step, is left out
    assert error.count("KeyError: 'call.phase'") == 1 and "direct cause" not in error
    assert "Hint: Close column names: 'call.duration'. Columns of the DataFrames: tests:" in error
    error = ex.run("n = tests['phase'].max()", step=3).error
    assert (
        "Hint: No DataFrame has a column 'phase'. Columns of the DataFrames: tests: id, call.duration"
        in error
    )
    # an exception the step raised while handling another keeps both
    error = ex.run("try:\n    {}['k']\nexcept KeyError:\n    raise ValueError('no k')", step=4).error
    assert "KeyError: 'k'" in error and "During handling" in error and "Hint" not in error


def test_a_value_asked_for_as_a_column_is_told_which_column_holds_it():
    ex = LocalExecutor()
    ex.run(
        "import pandas as pd\ncalls = pd.DataFrame({'gene': ['ATM', 'APC'], 'zygosity': ['HET', 'HOM'], "
        "'depth': [30, 41]})\ncalls['zygosity'] = calls['zygosity'].astype('category')",
        step=1,
    )
    told = (
        "is not a column but a value of calls['zygosity']: its rows are calls[calls['zygosity'] == 'HET']. "
        "Columns of the DataFrames: calls: gene, zygosity, depth.\n"
    )
    assert ex.run("n = calls['HET'].sum()", step=2).error.endswith("KeyError: 'HET'\nHint: 'HET' " + told)
    error = ex.run(
        "n = calls[calls['gene'] == 'ATM'].het.sum()", step=3
    ).error  # as an attribute, in another case
    assert "AttributeError: 'DataFrame' object has no attribute 'het'" in error
    assert error.endswith("Hint: 'het' " + told)
    assert "Hint" not in ex.run("calls.groupbyy('gene')", step=4).error  # a method's name mistyped


def test_a_pattern_that_matched_nothing_is_told_with_the_lines_that_hold_its_words():
    ex = LocalExecutor()
    ex.run('import re\ntext = "HOMEBASE DIY\\nITEMS 4    TOTAL   £62.49\\nCASH  £62.49"', step=1)
    error = ex.run('n = re.search(r"Total: (\\S+)", text).group(1)', step=2).error
    assert "AttributeError: 'NoneType' object has no attribute 'group'" in error
    assert error.endswith(
        'Hint: re.search(r"Total: (\\S+)", text) found no match and gave None. '
        "Lines of text with 'Total' in any case: 'ITEMS 4    TOTAL   £62.49'.\n"
    )
    error = ex.run('m = re.match(r"Refund: ([0-9.]+)", text)\nn = m.group(1)', step=3).error
    assert "Hint" not in error  # the match was made on another line: not told where
    error = ex.run('n = re.search(r"Refund (\\d+)", text).group(1)', step=4).error
    assert "No line of text holds 'Refund', in any case." in error
    error = ex.run("n = None.group(1)", step=5).error
    assert "Hint" not in error


def test_a_filter_no_row_matches_is_told_where_its_value_is_or_what_the_column_holds():
    ex = LocalExecutor()
    ex.run(
        "import pandas as pd\n"
        "df = pd.DataFrame({'contest': ['Mayor', 'Measure T'] * 30, 'choice': ['Ann', 'Yes'] * 30,\n"
        "                   'method': ['Mail', 'Day', 'Early'] * 20, 'ward': list(range(60))})",
        step=1,
    )
    # the value is in another column
    result = ex.run("n = df.loc[df['method'] == 'Measure T', 'ward'].count()\nprint(n)", step=2)
    assert result.stdout == "0\nHint: No row of df['method'] is 'Measure T'; df['contest'] holds it.\n"
    # written otherwise in the same column; a frame the step made; the step's value comes after
    result = ex.run(
        "t = df[df.contest == 'Measure T']\nprint(len(t))\nint((t['choice'] == 'yes').sum())", step=3
    )
    assert result.text() == "30\nHint: No row of t['choice'] is 'yes'; close values in it: 'Yes'.\n0\n"
    # nothing like it: the column's few values
    result = ex.run("n = int((df['method'] == 'Post').sum())", step=4)
    assert result.stdout == "Hint: No row of df['method'] is 'Post'; its values: 'Mail', 'Day', 'Early'.\n"
    # filters that match a row, on other things than a frame, or on a number: no hint
    quiet = "a = int((df['choice'] == 'Ann').sum())\nb = {'k': 'v'}['k'] == 'w'\nc = (df['ward'] == 3).sum()"
    assert ex.run(quiet, step=5).stdout == ""
    assert ex.run("n = df[df['nope'] == 'x']", step=6).stdout == ""  # a KeyError's, told by its own hint
    # a step that failed on what the empty filter gave is told the same, after its error
    error = ex.run("n = df.loc[df['contest'] == 'mayor', 'ward'].idxmax()", step=7).error
    assert error.endswith(
        "empty sequence\nHint: No row of df['contest'] is 'mayor'; close values in it: 'Mayor'.\n"
    )


def test_a_filter_on_a_mark_for_no_value_is_told_that_pandas_read_it_as_nan():
    ex = LocalExecutor()
    ex.run(
        "import io\nimport pandas as pd\n"
        "df = pd.read_csv(io.StringIO('name,quiz\\na,4.5\\nb,-\\nc,-\\nd,NA\\ne,7'), na_values=['-'])",
        step=1,
    )
    for mark in ("-", "NA", ""):
        result = ex.run(f"n = int((df['quiz'] == {mark!r}).sum())", step=2)
        assert result.stdout == (
            f"Hint: No row of df['quiz'] is {mark!r}: a missing value is NaN in it, not {mark!r}; "
            "df['quiz'].isna() matches 3 rows.\n"
        )
    # a column with no missing value: what it holds, as before
    result = ex.run("n = int((df['name'] == '-').sum())", step=3)
    assert result.stdout == "Hint: No row of df['name'] is '-'; its values: 'a', 'b', 'c', 'd', 'e'.\n"


def test_a_filter_is_told_the_text_that_holds_its_words_and_how_a_datetime_column_is_compared():
    ex = LocalExecutor()
    ex.run(
        "import pandas as pd\n"
        "df = pd.DataFrame({'trip': ['T1', 'T2', 'T3'] * 20, 'region': ['Cork', 'Kerry', 'Clare'] * 20,\n"
        "                   'at': pd.to_datetime(['2023-04-02 10:00', '2023-05-01 11:00', '2023-04-30 23:00'] * 20,"
        " utc=True)})",
        step=1,
    )
    # the value written longer than the data writes it, in another column or in its own
    result = ex.run("n = int((df['trip'] == 'County Cork').sum())", step=2)
    assert result.stdout == "Hint: No row of df['trip'] is 'County Cork'; df['region'] holds 'Cork'.\n"
    result = ex.run("n = int((df['region'] == 'County Kerry').sum())", step=3)
    assert result.stdout == "Hint: No row of df['region'] is 'County Kerry'; df['region'] holds 'Kerry'.\n"
    # a month, a year or a day compared with a column of datetimes: the comparison that matches
    result = ex.run("n = int((df['at'] == '2023-04').sum())", step=4)
    assert result.stdout == (
        "Hint: No row of df['at'] is '2023-04': it holds datetimes, and == compares whole ones; "
        "df['at'].dt.strftime('%Y-%m') == '2023-04' matches 40 rows.\n"
    )
    result = ex.run("n = int((df['at'] == '2023-04-02').sum())", step=5)
    assert "df['at'].dt.strftime('%Y-%m-%d') == '2023-04-02' matches 20 rows." in result.stdout
    # a day written otherwise than a column of dates writes it; not a year, not a column with times
    ex.run(
        "df['on'] = df['at'].dt.strftime('%Y-%m-%d')\ndf['when'] = df['at'].dt.strftime('%Y-%m-%d %H:%M')",
        step=6,
    )
    result = ex.run("n = int((df['on'] == '04/30/2023').sum())", step=7)
    assert result.stdout == "Hint: No row of df['on'] is '04/30/2023'; the same date in it: '2023-04-30'.\n"
    result = ex.run("n = int((df['on'] == '2 Apr 2023').sum())", step=8)
    assert result.stdout == "Hint: No row of df['on'] is '2 Apr 2023'; the same date in it: '2023-04-02'.\n"
    for value in ("2023", "04/30/2023"):
        column = "on" if value == "2023" else "when"
        assert "the same date" not in ex.run(f"n = int((df[{column!r}] == {value!r}).sum())", step=9).stdout
    # a value that shares no word with any text: the column's few values, as before
    result = ex.run("n = int((df['region'] == 'Galway Bay').sum())", step=10)
    assert (
        result.stdout
        == "Hint: No row of df['region'] is 'Galway Bay'; its values: 'Cork', 'Kerry', 'Clare'.\n"
    )


def test_syntax_error_is_reported_as_text():
    result = LocalExecutor().run("def (", step=1)
    assert "SyntaxError" in result.error


def test_output_of_concurrent_threads_stays_apart():
    results = {}

    def work(i):
        ex = LocalExecutor()
        results[i] = ex.run(f"for _ in range(200):\n    print({i})", step=1).stdout

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(8):
        assert set(results[i].split()) == {str(i)}


def test_truncate_keeps_head_and_tail_and_says_how_much():
    text = "A" * 1000 + "B" * 1000
    cut_text, cut = truncate(text, 300)
    assert cut == 1700
    assert cut_text.startswith("A" * 200) and cut_text.endswith("B" * 100)
    assert "[1,700 characters cut]" in cut_text
    assert truncate("short", 300) == ("short", 0)


def test_scaffold_restores_reserved_names_and_the_users_values():
    ns = {"context": "the user's own", "answer": 41, "mine": 1}
    scaffold = Scaffold(ns, context="CTX", subcalls=None)
    assert ns["context"] == "CTX" and ns["answer"] == {"content": "", "ready": False}
    ex = LocalExecutor(ns)
    ex.run("context = 'overwritten'\nFINAL = print\nx = 5", step=1)
    assert set(scaffold.restore()) == {"context", "FINAL"}
    assert ns["context"] == "CTX"
    ex.run("FINAL_VAR('x')", step=2)
    assert scaffold.ready and scaffold.content == "5"
    assert scaffold.close() == ["context", "answer"]
    assert ns["context"] == "the user's own" and ns["answer"] == 41 and ns["x"] == 5
    assert not any(name in ns for name in RESERVED if name not in ("context", "answer"))


def test_a_rebuilt_answer_dict_is_adopted():
    ns = {}
    scaffold = Scaffold(ns, context="", subcalls=None)
    LocalExecutor(ns).run("answer = {'content': 'done', 'ready': True}", step=1)
    assert scaffold.restore() == ()
    assert scaffold.ready and scaffold.content == "done"
    LocalExecutor(ns).run("answer = 'oops'", step=2)
    assert scaffold.restore() == ("answer",)
    assert ns["answer"] is scaffold.answer


def test_show_vars_lists_the_runs_variables(capsys):
    ns = {}
    Scaffold(ns, context="", subcalls=None)
    result = LocalExecutor(ns).run("import re\nhits = [1]\nSHOW_VARS()", step=1)
    assert "hits: list" in result.stdout
    assert "context" not in result.stdout and "re:" not in result.stdout
