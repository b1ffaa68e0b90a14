"""The paper's baselines as eval methods (``summary``, ``codeact``, ``codeact+subcalls``) and its
Table 1 from a results folder, against the scripted LM server over real HTTP with the real SDK.

The server keeps every request, so a test can say what each call was sent: which parts of the
context the summary agent read, that its last call held the summary and not the context, and that
CodeAct's first request held the whole context.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_server import Reply, Request, ScriptedServer

from rlm_kernel import eval as rlm_eval
from rlm_kernel.errors import ConfigError
from rlm_kernel.eval.methods import CHARS_PER_TOKEN, Outcome, check_methods, chunks, run_method
from rlm_kernel.eval.results import Results, Row
from rlm_kernel.eval.tasks import Task

NEEDLE = "The secret launch code is 4417-KESTREL."
QUESTION = "What is the secret launch code?"


def haystack(lines: int, needle_at: int) -> str:
    filler = [f"Entry {i:03d}: the weather at station {i % 17} was mild and dry." for i in range(lines)]
    filler.insert(needle_at, NEEDLE)
    return "\n".join(filler)


def settings(server: ScriptedServer, **kwargs: object) -> rlm_eval.Settings:
    window = kwargs.pop("context_window", None)
    return rlm_eval.Settings(
        backend="openai",
        model_name="gpt-4o-mini",
        backend_kwargs={
            "base_url": server.openai_base_url,
            "api_key": "sk-test",
            **({"context_window": window} if window else {}),
        },
        **kwargs,
    )


def run(method: str, task: Task, config: rlm_eval.Settings) -> Outcome:
    outcome, _ = asyncio.run(run_method(method, task, config, None))
    return outcome


def needle_task(context: str) -> Task:
    return Task(
        id="t", family="needle", context=context, question=QUESTION, answer="4417-KESTREL", scorer="contains"
    )


# ------------------------------------------------------------------ the summary agent

PART = re.compile(
    r"Part (\d+) of the context \(characters ([\d,]+) to ([\d,]+) of ([\d,]+)\):\n(.*)\n\nWrite your notes again",
    re.S,
)


class Summariser:
    """Summary requests: notes that keep the needle once seen; the last request: the answer, read
    from the notes it was given. Each reply reports 100 tokens in and 10 out, or with
    ``chars_per_token`` the prompt's length at that many characters a token, and then refuses a
    prompt past ``window`` as a provider does."""

    def __init__(self, chars_per_token: float | None = None, window: int = 600) -> None:
        self.parts: list[str] = []
        self.chars_per_token = chars_per_token
        self.window = window

    def __call__(self, request: Request) -> Reply:
        prompt = request.last_user
        tokens = 100 if self.chars_per_token is None else int(len(request.text) / self.chars_per_token)
        if tokens > self.window:
            return Reply(status=400, error_message=f"{tokens} tokens is past the maximum context length")
        if match := PART.search(prompt):
            self.parts.append(match.group(5))
            first, last, total = (int(match.group(k).replace(",", "")) for k in (2, 3, 4))
            assert (first, last) == (sum(map(len, self.parts[:-1])) + 1, sum(map(len, self.parts)))
            assert total == len(CONTEXTS[-1])
            seen = "4417-KESTREL" in prompt  # in this part, or in the notes so far
            notes = f"Notes after part {match.group(1)}: " + ("code 4417-KESTREL" if seen else "nothing yet")
            return Reply(text=notes, input_tokens=tokens, output_tokens=10)
        code = re.search(r"code (\S+)", prompt)
        return Reply(text=code.group(1) if code else "unknown", input_tokens=tokens, output_tokens=10)


CONTEXTS: list[str] = []  # the context of the test running, which the summariser checks positions against


def test_summary_reads_a_long_context_in_parts_and_answers_from_the_summary() -> None:
    context = haystack(120, needle_at=37)  # about 7,000 characters; the window takes about 1,800
    CONTEXTS.append(context)
    summariser = Summariser()
    with ScriptedServer(summariser) as server:
        outcome = run(
            "summary", needle_task(context), settings(server, context_window=600, base_max_tokens=100)
        )
        requests = list(server.requests)
    assert outcome.error is None and outcome.answer == "4417-KESTREL"
    # The parts cover the whole context, in order, each once; every request fits the window.
    assert len(summariser.parts) >= 4 and "".join(summariser.parts) == context
    assert all(len(r.text) / CHARS_PER_TOKEN + 100 <= 600 for r in requests)
    # Every summary request shows the question and the notes so far (the first: none yet).
    updates = requests[:-1]
    assert len(updates) == len(summariser.parts) and all(QUESTION in r.last_user for r in updates)
    assert "none yet" in updates[0].last_user and "Notes after part 1:" in updates[1].last_user
    assert all(r.body["max_tokens"] == 100 for r in updates)  # a summary is at most `reply` tokens
    # The last call holds the last summary and the question, not the context.
    final = requests[-1].last_user
    assert f"Notes after part {len(updates)}: code 4417-KESTREL" in final and QUESTION in final
    assert "Entry 0" not in final and NEEDLE not in final
    # Every call is counted.
    n = len(requests)
    assert (outcome.calls, outcome.iterations) == (n, n)
    assert (outcome.root_input_tokens, outcome.root_output_tokens) == (100 * n, 10 * n)
    assert outcome.cost == pytest.approx(n * (100 * 0.15 + 10 * 0.6) / 1e6)  # gpt-4o-mini's prices


def test_later_parts_are_sized_by_the_providers_own_token_counts() -> None:
    """A provider that counts 2 characters a token (denser than the estimate of 3): the first part
    is cut small, the later ones to what the provider counted, and none is refused; a whole
    context that the estimate thought fit, and the provider refused, is read in parts."""
    for lines in (120, 22):  # about 7,000 characters; about 1,300, which looks as if it fits
        context = haystack(lines, needle_at=lines // 2)
        CONTEXTS.append(context)
        summariser = Summariser(chars_per_token=2.0)
        with ScriptedServer(summariser) as server:
            outcome = run(
                "summary", needle_task(context), settings(server, context_window=600, base_max_tokens=100)
            )
            statuses = [len(r.text) / 2 <= 600 for r in server.requests]
        assert outcome.answer == "4417-KESTREL" and "".join(summariser.parts) == context
        if lines == 120:
            assert all(statuses) and outcome.warnings == []
            sizes = [len(part) for part in summariser.parts]
            assert sizes[0] < sizes[1] and max(sizes) < 3 * 200  # below the estimate's size of a part
        else:
            assert statuses[0] is False and all(statuses[1:]) and len(summariser.parts) >= 2
            assert outcome.calls == 1 + len(summariser.parts) + 1 and outcome.warnings[0].startswith(
                "the whole context was refused, so it was read in parts: "
            )


def test_summary_on_a_context_that_fits_is_one_call_as_base() -> None:
    context = haystack(30, needle_at=5)
    with ScriptedServer(lambda r: Reply(text="4417-KESTREL")) as server:
        outcome = run("summary", needle_task(context), settings(server))  # gpt-4o-mini: a 128k window
        base = run("base", needle_task(context), settings(server))
        first, second = server.requests
    assert outcome.answer == "4417-KESTREL" and outcome.calls == 1 and outcome.error is None
    assert first.messages == second.messages == [{"role": "user", "content": f"{context}\n\n{QUESTION}"}]
    assert outcome.root_input_tokens == base.root_input_tokens > 0 and outcome.cost == base.cost


def test_parts_join_back_to_the_text_and_end_at_a_line_break() -> None:
    text = "".join(f"line {i}\n" for i in range(200))
    parts = chunks(text, 50)
    assert "".join(parts) == text and all(len(p) <= 50 for p in parts)
    assert all(p.endswith("\n") for p in parts[:-1])
    words = "alpha beta gamma delta " * 10  # no line break: a part ends after a space
    parts = chunks(words, 30)
    assert "".join(parts) == words and all(p.endswith(" ") for p in parts)
    assert chunks("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5] and chunks("", 10) == []


def test_a_broken_reply_midway_is_an_error_outcome_with_what_was_spent() -> None:
    context = haystack(120, needle_at=37)
    CONTEXTS.append(context)
    summariser = Summariser()
    sent = []

    def breaks_on_the_third(request: Request) -> Reply:
        sent.append(request)
        if len(sent) == 3:
            return Reply(raw=b'{"id": "chatcmpl-1", "choices": [')  # a body cut short
        return summariser(request)

    with ScriptedServer(breaks_on_the_third) as server:
        config = settings(server, context_window=600, base_max_tokens=100)
        outcome = run("summary", needle_task(context), config)
        assert len(server.requests) == 3  # it stopped there: no answer made up from two parts
    assert outcome.answer is None and outcome.error
    assert outcome.calls == 3 and outcome.root_input_tokens == 200 and outcome.cost is not None

    with ScriptedServer(lambda r: Reply(status=500, error_message="the model fell over")) as server:
        outcome = run(
            "summary", needle_task(context), settings(server, context_window=600, base_max_tokens=100)
        )
        base = run("base", needle_task(context), settings(server))
    for failed in (outcome, base):
        assert failed.answer is None and "the model fell over" in failed.error
        assert (failed.calls, failed.cost) == (1, 0.0)


def test_a_window_too_small_for_any_part_is_an_error_outcome() -> None:
    with ScriptedServer() as server:
        outcome = run("summary", needle_task(haystack(50, 3)), settings(server, context_window=300))
        assert not server.requests
    assert outcome.answer is None and "window of 300 tokens leaves no room" in outcome.error


# ------------------------------------------------------------------ CodeAct

PROBE = """```repl
try:
    print("sub-call says:", llm_query("say hi"))
except NameError:
    print("there is no llm_query here")
```"""


def codeact_root(request: Request) -> Reply:
    """First turn: try a sub-call; then answer with what it printed."""
    if not request.is_root:
        return Reply(text="hi from the sub-model")
    if "Output of step 1" not in request.last_user:
        return Reply(text=PROBE)
    printed = request.last_user.split("Output of step 1:\n", 1)[1].strip().splitlines()[0]
    return Reply(text=f"```repl\nFINAL({json.dumps(printed)})\n```")


@pytest.mark.sandbox  # a sweep's rollouts run in sandboxed kernels
@pytest.mark.parametrize(
    ("method", "printed"),
    [("codeact", "there is no llm_query here"), ("codeact+subcalls", "sub-call says: hi from the sub-model")],
)
def test_codeact_reads_the_context_in_its_prompt_and_subcalls_only_where_named(
    method: str, printed: str
) -> None:
    context = haystack(30, needle_at=12)
    with ScriptedServer(codeact_root) as server:
        outcome = run(method, needle_task(context), settings(server))
        roots = [r for r in server.requests if r.is_root]
    assert outcome.error is None and outcome.answer == printed
    # The whole context is in the root's first request, as text, beside the question.
    assert context in roots[0].system and QUESTION in roots[0].text
    assert ("llm_query(prompt)" in roots[0].system) == (method == "codeact+subcalls")
    assert "rlm_query" not in roots[0].system
    # Two root turns, and the one sub-call where there is llm_query.
    if method == "codeact":
        assert (outcome.calls, outcome.sub_input_tokens) == (2, 0)
    else:
        assert outcome.calls == 3 and outcome.sub_input_tokens > 0


@pytest.mark.sandbox
def test_codeact_with_tips_and_a_context_past_the_window() -> None:
    tips = "Tip: the code is in a line of its own."

    def overflows(request: Request) -> Reply:
        if len(request.text) > 5_000:
            return Reply(status=400, error_message="This model's maximum context length is 1024 tokens.")
        return codeact_root(request)

    with ScriptedServer(overflows) as server:
        config = settings(server, tips=tips)
        small = run("codeact+subcalls+tips", needle_task(haystack(10, 3)), config)
        system = next(r for r in server.requests if r.is_root).system
        large = run("codeact+tips", needle_task(haystack(200, 3)), config)
    assert small.error is None and tips in system
    # Past the window: the provider's own error, as base gets; no answer.
    assert large.answer is None and "maximum context length is 1024 tokens" in large.error


def test_methods_with_a_plus_in_their_name() -> None:
    check_methods(["codeact", "codeact+subcalls", "codeact+tips", "codeact+subcalls+tips", "summary"])
    for name, message in [
        ("summary+tips", "only rlm, rlm-no-subcalls, codeact and codeact\\+subcalls take tips"),
        ("base+tips", "only rlm, rlm-no-subcalls, codeact and codeact\\+subcalls take tips"),
        ("codeact+bm25", "Unknown method 'codeact\\+bm25'"),
        ("codeact+subcalls+tips+tips", "Unknown method"),
    ]:
        with pytest.raises(ConfigError, match=message):
            check_methods([name])


# ------------------------------------------------------------------ Table 1

TASKS = [
    {"id": "w1", "family": "words", "length": 1024, "context": "The code word is falcon.", "question": "Code word?",
     "answer": "falcon", "scorer": "exact"},
    {"id": "w2", "family": "words", "length": 1024, "context": "The code word is harbour.",
     "question": "Which code word?", "answer": "harbour", "scorer": "exact"},
    {"id": "n1", "family": "numbers", "length": 2048, "context": "The answer is 42. " * 20,
     "question": "What is the answer?", "answer": "42", "scorer": "exact"},
]  # fmt: skip
METHODS = ["rlm", "rlm-no-subcalls", "base", "summary", "codeact", "codeact+subcalls"]


def sweep_answers(request: Request) -> Reply:
    """Roots answer right; the plain model answers right about words and fails on numbers."""
    task = next(t for t in TASKS if t["question"] in request.text)
    if request.is_root:
        return Reply(text=f"```repl\nFINAL({json.dumps(task['answer'])})\n```")
    if task["family"] == "numbers":
        return Reply(status=400, error_message="context length exceeded")
    return Reply(text=task["answer"])


def test_the_table_of_a_short_sweep(tmp_path: Path) -> None:
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text("".join(json.dumps(t) + "\n" for t in TASKS), encoding="utf-8")
    out = tmp_path / "out"
    with ScriptedServer(sweep_answers) as server:
        results = rlm_eval.run(
            [], [], METHODS, n=1, out=out, task_files=[task_file], progress=False,
            settings=settings(server, executor="local"),
        )  # fmt: skip
    assert len(results) == len(TASKS) * len(METHODS)
    proc = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.eval", "table", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "| method | model | numbers @ 2k | words @ 1k |"
    rows = [line for line in lines[2:] if line.startswith("| ")]
    # The paper's order of its methods, one row each.
    assert [r.split(" | ")[0][2:] for r in rows] == [
        "base", "codeact", "codeact+subcalls", "summary", "rlm", "rlm-no-subcalls"
    ]  # fmt: skip
    cells = {r.split(" | ")[0][2:]: r.strip("| ").split(" | ")[2:] for r in rows}
    for method in ("codeact", "codeact+subcalls", "rlm", "rlm-no-subcalls"):
        assert cells[method][0].startswith("100.0 ($0.") and cells[method][0].endswith(" tok, n=1)")
        assert cells[method][1].startswith("100.0 ($0.") and cells[method][1].endswith(" tok, n=2)")
    for method in ("base", "summary"):  # the provider refused the numbers: starred, nothing spent
        assert cells[method][0] == "0.0* ($0, 0 tok, n=1)"
        assert cells[method][1].startswith("100.0 ($0.0") and cells[method][1].endswith(" tok, n=2)")
    assert any(line.startswith("* some rollouts of the cell ended in an error") for line in lines)

    plain = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.eval", "table", str(out), "--format", "plain"],
        capture_output=True, text=True, timeout=60,
    ).stdout.splitlines()  # fmt: skip
    assert plain[0].split() == ["method", "model", "numbers", "@", "2k", "words", "@", "1k"]
    table = plain[: 2 + len(METHODS)]
    assert set(plain[1]) <= {"-", " "}
    starts = [plain[0].index(name) for name in ("model", "numbers", "words")]
    for line in table[2:]:  # every column starts where its name does
        assert all(line[i - 2 : i] == "  " and line[i] != " " for i in starts), line
    assert table[2].startswith("base ") and "0.0* ($0, 0 tok, n=1)" in table[2]


def test_an_empty_or_unknown_results_folder(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rlm_kernel.eval", "table", str(tmp_path)], capture_output=True, text=True
    )
    assert proc.returncode == 1 and "no results in" in proc.stderr


def row(family: str, method: str, *, score: float, cost: float | None = 0.0, error: str | None = None) -> Row:
    return Row(
        task_id=f"{family}-1", family=family, split="test", length=4096, method=method, model="m", sub_model="m",
        profile="", score=score, answer="a", expected="a", error=error, root_input_tokens=1500, cost=cost,
    )  # fmt: skip


def test_the_table_marks_missing_cells_and_unknown_costs() -> None:
    results = Results(
        [row("a", "rlm", score=1.0, cost=0.43), row("a", "my-method", score=0.5, cost=None),
         row("b", "base", score=0.0, error="too long")]
    )  # fmt: skip
    table = results.paper_table()
    assert "| base | m | – | 0.0* ($0, 1.5k tok, n=1) |" in table
    assert "| rlm | m | 100.0 ($0.43, 1.5k tok, n=1) | – |" in table
    assert "| my-method | m | 50.0 ($?, 1.5k tok, n=1) | – |" in table
    assert table.index("| base") < table.index("| rlm") < table.index("| my-method")
    with pytest.raises(ValueError, match="format must be"):
        results.paper_table("html")


def test_figure_1_draws_every_method_in_one_style_throughout() -> None:
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from rlm_kernel.eval.plots import figures

    methods = ["base", "summary", "codeact", "codeact+subcalls", "rlm", "rlm-no-subcalls"]
    rows = [row("a", m, score=0.5) for m in methods] + [row("b", m, score=0.5) for m in methods[1:]]
    drawn = figures(Results(rows))
    try:
        fig = drawn["figure1.png"]
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert sorted(labels) == sorted(f"{m} (m)" for m in methods)
        panel_a, panel_b = fig.axes[:2]
        style = {line.get_label(): (line.get_color(), line.get_marker()) for line in panel_a.get_lines()}
        assert len(set(style.values())) == len(methods)
        assert all(
            style[line.get_label()] == (line.get_color(), line.get_marker()) for line in panel_b.get_lines()
        )
    finally:
        for fig in drawn.values():
            plt.close(fig)
