"""What the root is told of its context: a preview that costs what it shows, not what the context
holds; a structured context as what it is, with the lines that load it."""

from __future__ import annotations

import json
import tracemalloc
from collections import OrderedDict
from typing import Any

import pytest

from rlm_kernel.prompts import (
    PREVIEW_CHARS,
    context_metadata,
    describe_context,
    opening_messages,
    system_prompt,
)
from rlm_kernel.structured import aligned_layout
from rlm_kernel.worked import reply_start, shape_of


class Counted:
    """An item whose ``repr`` counts its calls."""

    calls = 0

    def __init__(self, n: int) -> None:
        self.n = n

    def __repr__(self) -> str:
        Counted.calls += 1
        return f"C{self.n}"


SMALL: list[Any] = [
    [],
    [1, "two", 3.0, None],
    [[1, [2, [3]]], {"a": (1,)}],
    {},
    {"a": 1, "b": [1, 2], 3: {"c": "d"}},
    (1,),
    (1, 2, "x"),
    set(),
    {1, 2},
    frozenset({3}),
    ["it's", 'say "hi"', b"bytes", "é\n\t"],
]


@pytest.mark.parametrize("context", SMALL, ids=repr)
def test_a_small_context_previews_as_its_repr(context: Any) -> None:
    assert context_metadata(context)["preview"] == repr(context)


def test_a_long_list_or_dict_shows_its_first_items_then_dots() -> None:
    assert context_metadata(list(range(100)))["preview"] == "[0, 1, 2, 3, 4, ...]"
    assert (
        context_metadata(dict.fromkeys("abcdefg", 0))["preview"]
        == "{'a': 0, 'b': 0, 'c': 0, 'd': 0, 'e': 0, ...}"
    )
    assert context_metadata(OrderedDict(a=1))["preview"] == "{'a': 1}"
    long = context_metadata(["x" * 1000, "y"])["preview"]
    assert long == repr(["x" * 1000, "y"])[:PREVIEW_CHARS]
    assert context_metadata("abc" * 100)["preview"] == ("abc" * 100)[:PREVIEW_CHARS]


def test_a_huge_list_reprs_only_the_items_shown() -> None:
    Counted.calls = 0
    meta = context_metadata([Counted(i) for i in range(200_000)])
    assert meta["preview"] == "[C0, C1, C2, C3, C4, ...]"
    assert Counted.calls == 5
    assert meta["items"] == 200_000
    assert "It begins: '[C0, C1, C2, C3, C4, ...]'" in describe_context(meta)


def test_nested_containers_are_walked_only_as_far_as_shown() -> None:
    Counted.calls = 0
    context = {"rows": [[Counted(i) for i in range(1000)] for _ in range(1000)], "more": Counted(-1)}
    assert context_metadata(context)["preview"].startswith("{'rows': [[C0, C1, C2, C3, C4, ...], [C0,")
    assert Counted.calls <= 30


def test_big_items_are_cut_before_their_repr_is_built() -> None:
    context = ["x" * 20_000_000, {"k": "y" * 20_000_000}, b"z" * 20_000_000]
    tracemalloc.start()
    try:
        preview = context_metadata(context)["preview"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert preview == "['" + "x" * (PREVIEW_CHARS - 2)
    assert peak < 1_000_000  # the whole repr would be 60 MB


def test_a_list_that_holds_itself_is_shown_as_repr_shows_it() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert context_metadata(loop)["preview"] == repr(loop) == "[1, [...]]"


# -- a structured context shown as what it is, in the library that fits it --------------------

RECORDS = [
    {"id": i, "city": ["Lyon", "Graz", "Turku"][i % 3], "beds": i % 5, "price": 40.5 + i} for i in range(30)
]


def _run_load(meta: dict, context: Any) -> dict:
    """Run the lines the description gives, as the root would, and return what they made."""
    namespace: dict[str, Any] = {"context": context}
    exec(meta["load"], namespace)
    return namespace


def test_a_dataframe_is_shown_with_its_dtypes_and_first_rows() -> None:
    pd = pytest.importorskip("pandas")
    text = describe_context(context_metadata(pd.DataFrame(RECORDS)))
    assert text.startswith("The variable `context` holds a DataFrame of shape (30 x 4).")
    assert "id (int64), city (" in text and "price (float64)" in text
    assert "2   2  Turku     2   42.5" in text  # head()


def test_a_list_of_dicts_comes_with_the_line_that_makes_it_a_dataframe() -> None:
    pd = pytest.importorskip("pandas")
    meta = context_metadata(RECORDS)
    text = describe_context(meta)
    assert text.splitlines()[0] == "The variable `context` holds a list of 30 dicts (records)."
    # the lines that load it come last: a reply begun with them goes on with code
    assert text.endswith("\nLoad it with:\nimport pandas as pd\ndf = pd.DataFrame(context)")
    assert "df is a pandas DataFrame of shape (30 x 4). Columns and dtypes: id (int64)" in text
    assert "First rows (df.head(3)):" in text and "Graz" in text
    df = _run_load(meta, RECORDS)["df"]
    assert isinstance(df, pd.DataFrame) and list(df.shape) == meta["dims"]
    json.dumps(meta)  # it travels in events and over the kernel's bridge
    # a wide frame: every column with its dtype, the first rows of the first eight
    wide = describe_context(context_metadata([{f"field_{k}": i * k for k in range(20)} for i in range(30)]))
    assert "field_19 (int64)" in wide and "First rows (df.iloc[:3, :8]):" in wide
    assert "field_7" in wide.split("First rows")[1] and "field_8" not in wide.split("First rows")[1]


def test_a_dict_of_records_loads_with_its_keys_as_the_index() -> None:
    pytest.importorskip("pandas")
    context = {f"r{r['id']}": {k: v for k, v in r.items() if k != "id"} for r in RECORDS}
    meta = context_metadata(context)
    assert 'df = pd.DataFrame.from_dict(context, orient="index")' in describe_context(meta)
    df = _run_load(meta, context)["df"]
    assert df.loc["r4", "city"] == "Graz" and meta["dims"] == [30, 3]


@pytest.mark.parametrize("sep", [",", "\t", ";"])
def test_csv_text_comes_with_the_line_that_parses_it(sep: str) -> None:
    pytest.importorskip("pandas")
    text = "\n".join([sep.join(RECORDS[0])] + [sep.join(str(v) for v in r.values()) for r in RECORDS])
    meta = context_metadata(text)
    described = describe_context(meta)
    assert described.startswith("The variable `context` holds CSV text (")
    named = "" if sep == "," else f", sep={sep!r}"
    assert f"df = pd.read_csv(io.StringIO(context){named})" in described
    assert "shape (30 x 4)" in described and "price (float64)" in described
    df = _run_load(meta, text)["df"]
    assert df.shape == (30, 4) and df["beds"].sum() == sum(r["beds"] for r in RECORDS)


PODS = """\
NAMESPACE     NAME                       READY   STATUS             RESTARTS       AGE   NOMINATED NODE
default       web-7d4b9c8f6d-2xkqp       1/1     Running            0              12d   <none>
default       web-7d4b9c8f6d-9hjzt       0/1     CrashLoopBackOff   14 (3m ago)    12d   <none>
kube-system   coredns-5d78c9869d-qwv7x   1/1     Running            2 (4d ago)     90d   <none>
monitoring    grafana-6f8b5c7d9-lmn4p    1/1     Running            0              33d   node-2
"""
CONTAINERS = """\
CONTAINER ID   IMAGE         COMMAND                  CREATED        STATUS                  PORTS      NAMES
3f1c2a9b8d7e   nginx:1.25    "/docker-entrypoint.…"   2 hours ago    Up 2 hours              80/tcp     web
a1b2c3d4e5f6   postgres:16   "docker-entrypoint.s…"   3 days ago     Up 3 days (healthy)     5432/tcp   db
9e8d7c6b5a4f   redis:7       "redis-server"           3 days ago     Exited (0) 2 days ago              cache
0a9b8c7d6e5f   busybox       "sh"                     5 weeks ago    Created                            tmp
"""
DISKS = """\
Filesystem      Size  Used Avail Use% Mounted on
udev            7.8G     0  7.8G   0% /dev
tmpfs           1.6G  2.1M  1.6G   1% /run
/dev/nvme0n1p2  468G  201G  244G  46% /
tmpfs           7.8G  125M  7.7G   2% /dev/shm
"""


@pytest.mark.parametrize(
    ("table", "columns", "values"),
    [
        (
            PODS,
            ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "NOMINATED NODE"],
            {
                "RESTARTS": ["0", "14 (3m ago)", "2 (4d ago)", "0"],
                "NOMINATED NODE": ["<none>"] * 3 + ["node-2"],
            },
        ),
        (
            CONTAINERS,
            ["CONTAINER ID", "IMAGE", "COMMAND", "CREATED", "STATUS", "PORTS", "NAMES"],
            {"STATUS": ["Up 2 hours", "Up 3 days (healthy)", "Exited (0) 2 days ago", "Created"]},
        ),
        (
            DISKS,
            ["Filesystem", "Size", "Used", "Avail", "Use%", "Mounted on"],
            {"Mounted on": ["/dev", "/run", "/", "/dev/shm"], "Avail": ["7.8G", "1.6G", "244G", "7.7G"]},
        ),
    ],
    ids=["kubectl", "docker", "df"],
)
def test_a_text_table_of_aligned_columns_comes_with_read_fwf(
    table: str, columns: list[str], values: dict[str, list[str]]
) -> None:
    """What kubectl, docker and df print: the columns where the header puts them, a name of two
    words and values with spaces kept whole."""
    pytest.importorskip("pandas")
    meta = context_metadata(table)
    described = describe_context(meta)
    assert described.startswith("The variable `context` holds a text table, its columns aligned (")
    assert "df = pd.read_fwf(io.StringIO(context), colspecs=[(0, " in described
    df = _run_load(meta, table)["df"]
    assert list(df.columns) == columns and df.shape[0] == 4
    for column, expected in values.items():
        assert df[column].astype(str).tolist() == expected
    assert shape_of(table) == "table"


@pytest.mark.parametrize(
    "text",
    [
        "\n".join(f"2024-01-0{i} 12:00:0{i} INFO  worker-{i}  started job {i * 7}" for i in range(1, 9)),
        "The quick brown fox jumps over the lazy dog.\n" * 10,
        " id |  name  | city\n----+--------+------\n  1 | Ann    | Lyon\n  2 | Bo     | Porto\n  3 | Cy     | Graz\n",
        # a row that does not keep to the header's places (ps aux, when a value outgrows its column)
        "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"
        "root           1  0.0  0.1 167744 11620 ?        Ss   Nov30   0:09 /sbin/init splash\n"
        "root           2  0.0  0.0      0     0 ?        S    Nov30   0:00 [kthreadd]\n"
        "alice       1234 12.5  3.2 2345678 262144 pts/0  Sl+  09:12  10:03 python train.py\n"
        "bob          987  0.3  0.5 456789 40960 ?        S    08:00   0:01 sshd: bob@pts/1\n",
    ],
    ids=["log", "prose", "psql", "misaligned"],
)
def test_text_that_is_no_aligned_table_is_not_read_as_one(text: str) -> None:
    assert aligned_layout(text) is None
    assert "read_fwf" not in describe_context(context_metadata(text))


def test_json_text_comes_with_json_loads() -> None:
    pytest.importorskip("pandas")
    records = json.dumps(RECORDS)
    meta = context_metadata(records)
    assert "df = pd.DataFrame(json.loads(context))" in describe_context(meta)
    assert _run_load(meta, records)["df"].shape == (30, 4)
    config = json.dumps({"name": "mill", "owners": ["a", "b"], "limits": {"beds": 4}})
    meta = context_metadata(config)
    text = describe_context(meta)
    assert "holds JSON text (" in text and ": a dict of 3 items" in text
    assert "import json\ndata = json.loads(context)" in text
    assert "First keys of data: ['name', 'owners', 'limits']" in text
    assert _run_load(meta, config)["data"]["limits"] == {"beds": 4}


def test_a_dict_of_files_is_shown_as_paths_and_sizes() -> None:
    files = {f"pkg/mod_{i}.py": "x = 1\n" * (i + 1) for i in range(50)}
    files["README.md"] = "# mill\n"
    text = describe_context(context_metadata(files))
    lines = text.splitlines()
    assert lines[0] == (
        "The variable `context` holds a dict of 51 files: path -> text, "
        f"{sum(map(len, files.values())):,} characters in all. Read one with context[path]. Paths and sizes:"
    )
    assert (
        lines[1] == "pkg/mod_0.py (6 characters, 1 line)"
        and lines[3] == "pkg/mod_2.py (18 characters, 3 lines)"
    )
    assert lines[13] == "... and 39 more: list(context) names them all."
    assert lines[14:17] == ["The first file, pkg/mod_0.py:", "x = 1", "Load them as rows with:"]
    namespace = {"context": files}
    exec(context_metadata(files)["load"], namespace)  # the lines the description gives, as given
    df = namespace["df"]
    assert list(df.columns) == ["path", "text"] and len(df) == 51
    assert df.loc[df["path"] == "README.md", "text"].item() == "# mill\n"


def test_a_dict_of_dataframes_shows_each_frame() -> None:
    pd = pytest.importorskip("pandas")
    context = {"stays": pd.DataFrame(RECORDS), "cities": pd.DataFrame({"city": ["Lyon"], "country": ["FR"]})}
    text = describe_context(context_metadata(context))
    assert text.startswith("The variable `context` holds a dict of 2 pandas DataFrames, by name.\n")
    assert "\nstays = context['stays']: a pandas DataFrame of shape (30 x 4)" in text
    assert "\ncities = context['cities']: a pandas DataFrame of shape (1 x 2)" in text
    assert "First rows (cities.head(3)):" in text
    namespace = {"context": context}
    exec(context_metadata(context)["load"], namespace)
    assert namespace["cities"] is context["cities"]


def test_each_frame_gets_a_name_a_user_would_give_it() -> None:
    from rlm_kernel.structured import frame_names

    assert frame_names(["Orders", "Order Lines", "2024", "class", "orders", "context"]) == [
        "orders", "order_lines", "df3", "df4", "df5", "df6",
    ]  # fmt: skip


def test_without_pandas_rows_are_described_as_before_with_the_lines_that_read_them(monkeypatch) -> None:
    from rlm_kernel import structured, worked

    monkeypatch.setattr(structured, "_pandas", lambda: None)
    monkeypatch.setattr(worked, "_has_pandas", lambda: False)
    meta = context_metadata(RECORDS)
    text = describe_context(meta)
    assert text.startswith("The variable `context` holds: type list, 30 items.")
    assert text.endswith("Read its rows with:\nrows = context") and "pandas" not in text
    csv_text = "id,city\n1,Lyon\n2,Graz\n3,Turku\n"
    meta = context_metadata(csv_text)
    assert "rows = list(csv.DictReader(io.StringIO(context)))" in describe_context(meta)
    assert _run_load(meta, csv_text)["rows"][1] == {"id": "2", "city": "Graz"}
    turns = opening_messages(profile="small", question="How many are in Graz?", context_meta=meta)
    code = "\n".join(t["content"] for t in turns if t["role"] == "assistant")
    assert "csv.DictReader" in code and "pd." not in code and "table()" not in code


def test_the_small_profile_offers_no_home_made_table_api() -> None:
    pytest.importorskip("pandas")
    assert "table()" not in system_prompt("small")  # the description of a table gives its pandas line
    for context in (RECORDS, json.dumps(RECORDS), {"a": {"x": 1}, "b": {"x": 2}}, "id,n\n1,2\n3,4\n5,6\n"):
        turns = opening_messages(
            profile="small", question="How many are there?", context_meta=context_metadata(context)
        )
        code = "\n".join(t["content"] for t in turns if t["role"] == "assistant")
        assert "table()" not in code and ".where(" not in code and "df = " in code


# Records as APIs, trackers and exports give them: nested dicts, and lists of records inside.
NESTED = [
    {
        "id": f"r{i}",
        "owner": {"name": ["ana", "bo", "cy"][i % 3], "team": {"code": f"T{i % 2}"}},
        "labels": ["x", "y"][: i % 3],
        "steps": [{"n": k, "loss": round(1 / (k + i + 1), 4)} for k in range(i % 4)],
    }
    for i in range(40)
]


@pytest.mark.parametrize("form", ["list", "dict", "under a key", "json"])
def test_records_with_nested_fields_load_with_json_normalize_and_a_table_of_each_list_of_records(
    form,
) -> None:
    pytest.importorskip("pandas")
    context: Any = {
        "list": NESTED,
        "dict": {r["id"]: r for r in NESTED},
        "under a key": {"exported": "2024-01-02", "version": 3, "runs": NESTED},
        "json": json.dumps({"meta": {"page": 1}, "runs": NESTED}),
    }[form]
    meta = context_metadata(context)
    text = describe_context(meta)
    assert "pd.json_normalize(" in text and "owner.team.code (str)" in text and "labels (list)" in text
    made = _run_load(meta, context)
    df, steps = made["df"], made["steps_df"]
    assert list(df.shape) == meta["dims"] == [40, 4]  # the lists of steps are a table of their own
    assert meta["load"].endswith("\ndf = df.drop(columns=['steps'])")  # the records' frame is the last
    assert steps.shape[0] == sum(len(r["steps"]) for r in NESTED) == meta["children"]["steps_df"]["dims"][0]
    # each item's row leads back to its record
    last = steps.loc[steps["loss"].idxmin(), "row"]
    assert (
        df.loc[last, "id"] == min(NESTED, key=lambda r: min((s["loss"] for s in r["steps"]), default=9))["id"]
    )
    assert "steps_df has a row for each item of the records' lists in 'steps' (dropped from df)" in text
    if form == "dict":
        assert df.index[0] == "r0"  # the keys are the rows' labels
    if form == "under a key":
        assert text.startswith(
            "The variable `context` holds a dict of 3 keys: context['runs'] is a list of 40"
        )
    json.dumps(meta)


def test_records_keyed_by_id_inside_a_dict_of_tables_are_rows_not_columns() -> None:
    pytest.importorskip("pandas")
    services = {
        f"{line} {100 + i}": {
            "line": line,
            "days": ["Mon", "Sat"] if i % 2 else ["Mon"],
            "calls": [
                {"station": s, "dep": f"0{5 + k}:{i:02d}"}
                for k, s in enumerate(["BRU", "OLT", "BIE"][: 2 + i % 2])
            ],
        }
        for i, line in enumerate(["IR13", "S3", "IC5"] * 5)
    }
    context = {
        "operator": "Rail",
        "stations": {"BRU": "Brugg", "OLT": "Olten", "BIE": "Biel"},
        "services": services,
    }
    meta = context_metadata(context)
    text = describe_context(meta)
    # the ids are df's index, not 15 columns of their own, nor one table of calls for each
    assert text.startswith(
        "The variable `context` holds a dict of 3 keys: context['services'] is a dict of 15 dicts by key."
    )
    assert "'IR13 100" not in meta["columns"] and meta["dims"] == [15, 2]
    made = _run_load(meta, context)
    calls = made["calls_df"]
    assert list(made["df"].index) == list(services) and calls.shape[0] == sum(
        len(s["calls"]) for s in services.values()
    )
    # a call carries its train's line: a question about the calls of some trains is one filter
    assert (calls["line"] == "IR13").sum() == sum(
        len(s["calls"]) for s in services.values() if s["line"] == "IR13"
    )
    assert calls.loc[calls["row"] == "S3 101", "station"].tolist() == ["BRU", "OLT", "BIE"]
    # what else the dict holds is shown as Python shows it
    assert "Its other keys: context['operator'] = 'Rail'; context['stations'] = {'BIE': 'Biel', " in text
    # a dict whose values are not alike is no table: its keys are not rows
    assert "load" not in context_metadata({"a": {"x": {"k": 1}}, "b": {"y": [1, 2]}})
    # one entry of another kind among them (a project's own, first) does not hide the rest
    mixed = {"": {"name": "app", "needs": {"x": 1}}, **{k: {"line": "S3", "calls": []} for k in services}}
    assert describe_context(context_metadata({"v": 1, "items": mixed})).startswith(
        "The variable `context` holds a dict of 2 keys: context['items'] is a dict of 16 dicts by key."
    )


# XML as exports write it: records a few elements down, every value text, repeated elements.
FEED = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>Mill shop</title>'
    + "".join(
        f'<item><guid>p{i}</guid><price currency="EUR">{10 + i}.50</price><code>00{i % 7}</code>'
        + "".join(f"<category>{c}</category>" for c in ["tools", "garden", "paint"][: 1 + i % 3])
        + "</item>"
        for i in range(24)
    )
    + "</channel></rss>"
)
TRACK = (
    '<gpx version="1.1" creator="watch" xmlns="http://www.topografix.com/GPX/1/1"><metadata>'
    "<time>2024-05-01T06:00:00Z</time></metadata><trk><name>Ridge loop</name><trkseg>"
    + "".join(
        f'<trkpt lat="46.{i:03d}" lon="7.{i:03d}"><ele>{1200 + i * 3}</ele>'
        f"<time>2024-05-01T06:{i:02d}:00Z</time></trkpt>"
        for i in range(30)
    )
    + "</trkseg></trk></gpx>"
)


def test_xml_text_loads_with_xmltodict_and_its_records_as_tables() -> None:
    pytest.importorskip("pandas")
    meta = context_metadata(FEED)
    text = describe_context(meta)
    assert text.startswith("The variable `context` holds XML text (")
    assert "data['rss']['channel']['item'] is a list of 24 dicts" in text  # three elements down
    assert (
        "data = xmltodict.parse(context, attr_prefix='', cdata_key='text', force_list=['category', 'item'])"
        in text
    )
    assert (
        "Its other keys: data['rss']['version'] = '2.0'; data['rss']['channel']['title'] = 'Mill shop'"
        in text
    )
    df = _run_load(meta, FEED)["df"]
    # numbers as numbers, codes keep their zeros, and one category is a list of one like the rest
    assert df["price.text"].sum() == sum(10 + i + 0.5 for i in range(24)) and df["price.currency"][0] == "EUR"
    assert df["code"][3] == "003" and df["category"][0] == ["tools"]
    assert sum("garden" in c for c in df["category"]) == 16
    meta = context_metadata(TRACK)  # a default namespace, records four elements down, attributes
    text = describe_context(meta)
    assert "data['gpx']['trk']['trkseg']['trkpt'] is a list of 30 dicts" in text and "xmlns" not in text
    assert "Its other keys: data['gpx']['version'] = '1.1'" in text and "'Ridge loop'" in text
    df = _run_load(meta, TRACK)["df"]
    assert df["ele"].max() == 1200 + 29 * 3 and df["lat"].dtype == float
    json.dumps(meta)


@pytest.mark.parametrize(
    "text", ["<p>one <b>two</p>", "<3 to all of you\nsee you soon", "<a>1</a><a>2</a>", "a,b\n<1,2\n"]
)
def test_text_that_is_no_xml_document_is_not_read_as_one(text: str) -> None:
    assert context_metadata(text).get("format") != "xml"


def test_xml_that_declares_entities_is_left_as_text_not_expanded() -> None:
    laughs = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10 if i else "lol"}">' for i in range(10))
    bomb = f"<?xml version='1.0'?><!DOCTYPE r [{laughs}]><r><a>&l9;</a><a>x</a></r>"  # 10**9 lols
    outside = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r><a>&x;</a></r>'
    for text in (bomb, outside):
        meta = context_metadata(text)
        assert meta.get("format") != "xml" and "root:" not in describe_context(meta)


def test_without_xmltodict_xml_is_text(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "xmltodict", None)  # import fails
    assert "format" not in context_metadata(FEED) and "xmltodict" not in describe_context(
        context_metadata(FEED)
    )


def test_the_other_lists_of_records_beside_the_records_are_tables_too() -> None:
    pytest.importorskip("pandas")
    accounts = [{"account_id": f"a{k}", "name": ["IRA", "Brokerage", "HSA"][k]} for k in range(3)]
    securities = {f"s{k}": {"ticker": f"T{k}", "price": {"close": 10.0 * k}} for k in range(5)}
    transactions = [
        {"id": i, "account_id": f"a{i % 3}", "security_id": f"s{i % 5}", "fees": {"total": i / 10}}
        for i in range(40)
    ]
    context = {
        "accounts": accounts,
        "securities": securities,
        "transactions": transactions,
        "request_id": "x9",
    }
    meta = context_metadata(context)
    text = describe_context(meta)
    assert text.startswith(
        "The variable `context` holds a dict of 4 keys: context['transactions'] is a list of 40"
    )
    assert "accounts_df has a row for each record of context['accounts']." in text
    assert "securities_df has a row for each record of context['securities']." in text
    assert "Its other keys: context['request_id'] = 'x9'" in text and "context['accounts'] =" not in text
    made = _run_load(meta, context)
    joined = made["df"].merge(made["accounts_df"], on="account_id")
    assert (joined["name"] == "HSA").sum() == sum(t["account_id"] == "a2" for t in transactions)
    assert made["securities_df"].loc["s3", "price.close"] == 30.0  # keyed by id, as the records are


def test_records_are_the_list_that_holds_the_most_data_however_deep() -> None:
    pytest.importorskip("pandas")
    results = [{"id": i, "a": 1, "b": 2, "c": {"d": 3, "e": 4}} for i in range(12)]
    context = {
        "meta": {"api": {"tags": [{"k": i} for i in range(30)]}},
        "data": {"page": {"results": results}},
    }
    meta = context_metadata(context)
    assert meta["nested"] == "context['data']['page']['results']" and meta["dims"] == [12, 5]
    assert "tags_df" not in describe_context(meta)  # not beside the records: inside another key


def test_a_dict_of_columns_loads_as_a_dataframe() -> None:
    pytest.importorskip("pandas")
    context = {"t": [f"2024-01-{d:02d}" for d in range(1, 29)], "kwh": [d * 1.5 for d in range(28)]}
    meta = context_metadata(context)
    text = describe_context(meta)
    assert text.startswith("The variable `context` holds a dict of 2 columns: lists of 28 values each.\n")
    assert text.endswith("Load it with:\nimport pandas as pd\ndf = pd.DataFrame(context)")
    assert _run_load(meta, context)["df"]["kwh"].sum() == sum(context["kwh"])
    ragged = {"a": [1, 2], "b": [1]}
    assert "load" not in context_metadata(ragged)


def test_rows_without_names_load_as_a_dataframe_with_columns_by_position() -> None:
    pytest.importorskip("pandas")
    context = [(f"2024-01-{d:02d}", d * 1.5, "ok") for d in range(1, 29)]  # as fetchall() gives them
    meta = context_metadata(context)
    text = describe_context(meta)
    assert text.startswith(
        "The variable `context` holds a list of 28 rows, each 3 values (columns 0, 1, ...)."
    )
    assert _run_load(meta, context)["df"][1].sum() == sum(r[1] for r in context)
    turns = opening_messages(profile="small", question="How many rows are ok?", context_meta=meta)
    code = "\n".join(t["content"] for t in turns if t["role"] == "assistant")
    assert 'df[3] == "closed"' in code and '"status"' not in code  # the examples' columns by position too


SALES = [
    {"region": r, "plan": p, "month": f"2024-{m:02d}", "amount": 100 + (r_i * 7 + m * 3 + p_i) % 50}
    for r_i, r in enumerate(["north", "south", "east", "west"])
    for p_i, p in enumerate(["A", "B"])
    for m in range(1, 13)
]


@pytest.mark.parametrize("form", ["list", "dict", "columns", "tuples", "csv", "json", "frame"])
def test_the_small_profile_shows_the_questions_of_rows_and_one_more_worded_like_the_real_one(form) -> None:
    pd = pytest.importorskip("pandas")
    context: Any = {
        "list": SALES,
        "dict": {f"sale-{k}": r for k, r in enumerate(SALES)},
        "columns": {key: [r[key] for r in SALES] for key in SALES[0]},
        "tuples": [tuple(r.values()) for r in SALES],
        "csv": pd.DataFrame(SALES).to_csv(index=False),
        "json": json.dumps(SALES),
        "frame": pd.DataFrame(SALES),
    }[form]
    meta = context_metadata(context)

    def asked(question: str) -> list[str]:
        turns = opening_messages(profile="small", question=question, context_meta=meta)
        return [t["content"].rsplit("Question: ", 1)[1] for t in turns if "Question: " in t["content"]]

    always = 7 if form == "frame" else 5
    # a question of plain words (`largest`, `number`) gets the examples every root gets
    plain = asked("Which region has the largest number of sales?")
    most = (
        "Which city has the largest total revenue?" if form == "frame" else "Which city has the most shops?"
    )
    assert len(plain) == always + 1 and most in plain
    # a question that shares two words of substance with another example gets it too, last
    question = "How many sales have an amount between 120 and 130?"
    shown = asked(question)
    between = "How many shops have a revenue between 1000 and 1200?"
    assert shown[:always] == [q for q in shown[:always] if q in plain] and shown[always:] == [
        between,
        question,
    ]
    turns = opening_messages(profile="small", question=question, context_meta=meta)
    at = next(k for k, t in enumerate(turns) if t["content"].endswith(f"Question: {between}"))
    assert ".between(1000, 1200)" in turns[at + 1]["content"]  # its code, run for the output it shows
    assert turns[at + 2]["content"] == "Output of step 1:\n194"


def test_an_export_with_lines_before_its_header_and_decimal_commas_is_read_as_written() -> None:
    pd = pytest.importorskip("pandas")
    rows = [
        f'"{d:02d}.0{m}.2023";"Shop {d % 3}";"{"-" if d % 2 else ""}1.{d:03d},{m}5"'
        for m in (1, 2)
        for d in range(1, 25)
    ]
    text = '"Account";"DE00 1234"\n"Currency";"EUR"\n\n"Date";"Payee";"Amount"\n' + "\n".join(rows) + "\n"
    meta = context_metadata(text)
    load = "df = pd.read_csv(io.StringIO(context), sep=';', skiprows=3, decimal=',', thousands='.', "
    assert load + "parse_dates=['Date'], dayfirst=True)" in describe_context(meta)
    df = _run_load(meta, text)["df"]
    assert df.shape == (48, 3) and df["Amount"].dtype == float and df["Amount"].iloc[1] == 1002.15
    assert df["Date"].iloc[0] == pd.Timestamp(2023, 1, 1) and df["Date"].iloc[12] == pd.Timestamp(2023, 1, 13)
    start, _ = reply_start(meta, "What was paid to Shop 1 in January?")  # the small profile's reply
    assert start.startswith("```repl\nimport io\nimport pandas as pd\n" + load)


def test_an_export_with_quoted_commas_named_columns_and_dashes_for_no_value_is_read_as_csv() -> None:
    pytest.importorskip("pandas")
    header = (
        "First name,Last name,School,Quiz: Bonding (Real),Assignment: Lab report (Real),Course total (Letter)"
    )
    rows = [
        f'Name{i},Surname{i},"St Anne\'s, Leeds",{"-" if i % 4 == 0 else f"{i % 10}.50"},{10 + i}.00,{"AB"[i % 2]}'
        for i in range(30)
    ]
    text = header + "\n" + "\n".join(rows) + "\n"
    meta = context_metadata(text)
    assert meta["format"] == "csv" and meta["dims"] == [30, 6]
    assert "df = pd.read_csv(io.StringIO(context), na_values=['-'])" in describe_context(meta)
    df = _run_load(meta, text)["df"]
    assert df["School"].iloc[0] == "St Anne's, Leeds"
    assert df["Quiz: Bonding (Real)"].dtype == float and df["Quiz: Bonding (Real)"].isna().sum() == 8
    # prose whose every line has one comma is not a table, though its first line could name columns
    prose = "\n".join(f"Shelf S{i:02d}: see the list in the back room, box {i}." for i in range(20))
    assert context_metadata(prose).get("format") != "csv"


@pytest.mark.parametrize("form", ["list", "dict", "under a key", "json", "xml"])
def test_the_small_profile_shows_nested_records_worked_in_pandas(form) -> None:
    pytest.importorskip("pandas")
    xmltodict = pytest.importorskip("xmltodict")
    context: Any = {
        "list": NESTED,
        "dict": {r["id"]: r for r in NESTED},
        "under a key": {"exported": "2024-01-02", "runs": NESTED},
        "json": json.dumps(NESTED),
        "xml": xmltodict.unparse({"runs": {"run": NESTED}}),
    }[form]
    meta = context_metadata(context)
    turns = opening_messages(profile="small", question="Which run had the lowest loss?", context_meta=meta)
    code = "\n".join(t["content"] for t in turns if t["role"] == "assistant")
    assert "pd.json_normalize(" in code and '"row"' in code and "search(" not in code
    # the examples' made-up data comes in the form the real one does, and loads as it does
    assert ("xmltodict.parse(context" in code) == (form == "xml")
    assert ("json.loads(context)" in code) == (form == "json")
    assert reply_start(meta, "Which run had the lowest loss?") == (f"```repl\n{meta['load']}\n", None)


# Records with nested dicts and no list of records in them: one frame of "a.b" columns.
DOTTED = [
    {"id": f"o{i}", "customer": {"name": ["ana", "bo"][i % 2], "address": {"zip": f"{1000 + i}"}}, "total": i}
    for i in range(30)
]


@pytest.mark.parametrize("form", ["list", "dict", "under a key", "json"])
def test_nested_records_with_no_list_of_records_are_worked_over_dotted_columns_alone(form) -> None:
    pytest.importorskip("pandas")
    context: Any = {
        "list": DOTTED,
        "dict": {r["id"]: r for r in DOTTED},
        "under a key": {"exported": "2024-01-02", "orders": DOTTED},
        "json": json.dumps(DOTTED),
    }[form]
    meta = context_metadata(context)
    assert "children" not in meta and "customer.address.zip (str)" in describe_context(meta)
    turns = opening_messages(
        profile="small", question="What is the total of ana's orders?", context_meta=meta
    )
    code = "\n".join(t["content"] for t in turns[1:-1] if t["role"] == "assistant")
    # the examples' data is nested as the real one is: no table of items to copy, dotted columns
    assert "pd.json_normalize(" in code and '"row"' not in code and "_df" not in code
    assert '"figures.revenue"' in code and '"address.city"' in code
    shown = [t["content"] for t in turns[1:-1] if t["role"] == "user" and "Question:" in t["content"]]
    assert len(shown) == 4 and all("figures.revenue (float64)" in t and "_df" not in t for t in shown)
    assert ('df.loc["Oak Cafe", "address.street"]' in code) == (form == "dict")  # names are the index


def test_pages_of_items_load_the_items_as_df_and_the_pages_beside_them() -> None:
    pytest.importorskip("pandas")
    pages = [
        {"page": p, "next": f"?page={p + 1}", "items": [{"id": p * 10 + k, "stars": k} for k in range(8)]}
        for p in range(3)
    ]
    meta = context_metadata(pages)
    text = describe_context(meta)
    assert text.startswith("The variable `context` holds a list of 3 dicts (records, with nested fields).")
    assert "outer_df = pd.json_normalize(context)\ndf = pd.json_normalize(" in text
    assert "df has a row for each item of the lists in outer_df['items']" in text
    made = _run_load(meta, pages)
    assert made["df"].shape == (24, 5) and made["df"]["stars"].sum() == 3 * sum(range(8))
    assert made["outer_df"].loc[made["df"].loc[17, "row"], "page"] == 2
    assert made["df"].loc[17, "page"] == 2  # each item carries the fields of its page
    # many records, each with a few items: the records stay df
    runs = [{"run": r, "steps": [{"n": k} for k in range(6)]} for r in range(12)]
    assert "steps_df = " in context_metadata(runs)["load"]
