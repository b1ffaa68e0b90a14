"""Sweeps with tips and tools, against the scripted LM server over real HTTP with the real SDK.

The scripted root answers right only when the tips are in its system prompt, so the table shows
``rlm`` and ``rlm+tips`` apart; the server keeps every request, so a test can say which variant's
prompt held the tips and that a resumed sweep sent nothing it had sent before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from scripted_server import Reply, Request, ScriptedServer

from rlm_kernel import eval as rlm_eval
from rlm_kernel.errors import ConfigError
from rlm_kernel.events import SubcallStarted, ToolCalled
from rlm_kernel.trajectory import load as load_trajectory

TIPS = "Tip: the code word is printed backwards; read it from right to left."
TASKS = [
    {
        "id": f"word-{i}",
        "family": "words",
        "context": f"The code word is {w[::-1]}.",
        "question": q,
        "answer": w,
    }
    for i, (w, q) in enumerate(
        [("falcon", "What is the code word?"), ("harbour", "Which code word is hidden here?")]
    )
]


def root_with_tips_only(request: Request) -> Reply:
    """The root: the right word with the tips in its system prompt, a wrong one without."""
    if not request.is_root:
        return Reply(text="no idea")
    task = next(t for t in TASKS if t["question"] in request.text)
    word = task["answer"] if TIPS in (request.system or "") else task["answer"][::-1]
    return Reply(text=f"```repl\nFINAL({json.dumps(word)})\n```")


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(root_with_tips_only) as srv:
        yield srv


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    path = tmp_path / "words.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TASKS), encoding="utf-8")
    return path


def sweep(server: ScriptedServer, out: Path, task_file: Path, **kwargs: object) -> rlm_eval.Results:
    settings = rlm_eval.Settings(
        backend="openai",
        model_name="gpt-4o-mini",
        backend_kwargs={"base_url": server.openai_base_url, "api_key": "sk-test"},
        tips=TIPS,
    )
    options = {"methods": ["rlm", "rlm+tips"], "settings": settings, "progress": False, **kwargs}
    return rlm_eval.run([], [], n=1, out=out, task_files=[task_file], **options)  # type: ignore[arg-type]


def roots(server: ScriptedServer) -> list[Request]:
    return [r for r in server.requests if r.is_root]


@pytest.mark.sandbox  # its RLM rollouts run in sandboxed kernels
def test_with_and_without_tips_side_by_side(server: ScriptedServer, tmp_path: Path, task_file: Path) -> None:
    results = sweep(server, tmp_path / "out", task_file)
    by = {(r.task_id, r.method): r for r in results.rows}
    assert sorted(by) == sorted((t["id"], m) for t in TASKS for m in ("rlm", "rlm+tips"))
    assert all(by[(t["id"], "rlm+tips")].score == 1.0 for t in TASKS)
    assert all(by[(t["id"], "rlm")].score == 0.0 for t in TASKS)
    # The tips were in the root's system prompt of the +tips rollouts only: two of four.
    systems = [r.system or "" for r in roots(server)]
    assert len(systems) == 4 and sum(TIPS in s for s in systems) == 2
    assert len({s.replace(f"\n\n{TIPS}", "") for s in systems}) == 1  # otherwise the same prompt
    table = results.table()
    assert "| words | " in table and "| rlm | gpt-4o-mini | 2 | 0.0 | 0 |" in table
    assert "| rlm+tips | gpt-4o-mini | 2 | 100.0 | 0 |" in table
    # Each variant is a rollout of its own; the row says which tips it ran with.
    assert len({r.key for r in results.rows}) == 4
    assert {r.tips for r in results.rows if r.method == "rlm"} == {""}
    assert len({r.tips for r in results.rows if r.method == "rlm+tips"} - {""}) == 1
    sweeps = [json.loads(x) for x in (tmp_path / "out" / "sweeps.jsonl").read_text().splitlines()]
    assert sweeps[0]["settings"]["tips"] == TIPS and sweeps[0]["methods"] == ["rlm", "rlm+tips"]


@pytest.mark.sandbox  # its RLM rollouts run in sandboxed kernels
def test_a_resumed_sweep_skips_the_done_rollouts_of_both(
    server: ScriptedServer, tmp_path: Path, task_file: Path
) -> None:
    out = tmp_path / "out"
    first = sweep(server, out, task_file)
    sent = len(server.requests)
    again = sweep(server, out, task_file)
    assert len(server.requests) == sent and again.to_records() == first.to_records()
    # Lose one row of each variant: those two run again, and nothing else.
    path = out / "results.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    lost = [next(r for r in rows if r["method"] == m) for m in ("rlm", "rlm+tips")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows if r not in lost))
    resumed = sweep(server, out, task_file)
    assert len(roots(server)) == 4 + 2
    rerun = {
        (next(t["id"] for t in TASKS if t["question"] in r.text), TIPS in (r.system or ""))
        for r in roots(server)[4:]
    }
    assert rerun == {(r["task_id"], r["method"] == "rlm+tips") for r in lost}
    assert sorted(r.key for r in resumed.rows) == sorted(r.key for r in first.rows)
    # Other tips are other rollouts: only the +tips ones run again, and both stay in the folder.
    sweep(server, out, task_file, tips=TIPS + " Answer in lower case.")
    assert len(roots(server)) == 6 + 2
    everything = rlm_eval.load(out)
    assert len(everything) == 6
    labels = {c.label for c in everything.summary()}
    assert "rlm" in labels and len([x for x in labels if x.startswith("rlm+tips [")]) == 2


@pytest.mark.sandbox  # its RLM rollouts run in sandboxed kernels
def test_an_old_results_folder_still_loads_and_resumes(
    server: ScriptedServer, tmp_path: Path, task_file: Path
) -> None:
    """Rows written before tips have no ``tips`` field: their keys are as they were."""
    out = tmp_path / "out"
    sweep(server, out, task_file, methods=["rlm"], tips=None)
    path = out / "results.jsonl"
    old = [{k: v for k, v in json.loads(x).items() if k != "tips"} for x in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in old))
    results = sweep(server, out, task_file)
    assert len(roots(server)) == 2 + 2  # only the +tips rollouts ran
    assert sorted((r.method, r.score) for r in results.rows) == [
        ("rlm", 0.0),
        ("rlm", 0.0),
        ("rlm+tips", 1.0),
        ("rlm+tips", 1.0),
    ]


@pytest.mark.sandbox  # its RLM rollouts run in sandboxed kernels
def test_tips_mistakes_are_one_line_errors(server: ScriptedServer, tmp_path: Path, task_file: Path) -> None:
    with pytest.raises(ConfigError, match="runs with tips, and none are given"):
        sweep(server, tmp_path, task_file, tips=None)
    with pytest.raises(ConfigError, match="no method runs with them: add \\+tips"):
        sweep(server, tmp_path, task_file, methods=["rlm"])
    with pytest.raises(
        ConfigError, match="only rlm, rlm-no-subcalls, codeact and codeact\\+subcalls take tips"
    ):
        sweep(server, tmp_path, task_file, methods=["base+tips"])
    with pytest.raises(ConfigError, match="Cannot import the tools 'no_such_module:X'"):
        sweep(server, tmp_path, task_file, sub_tools="no_such_module:X")
    assert not server.requests


# ------------------------------------------------------------------ tools


TOOLS_MODULE = '''
"""Tools of a task: the root's code calls badge_of(); only sub-calls' models may call room_of()."""

ROOMS = {"B-17": "room 4.17, second floor"}


def badge_of(name: str) -> str:
    """The badge number of a person."""
    return "B-17" if name == "Ada" else "unknown"


def room_of(badge: str) -> str:
    """The room a badge opens.

    Args:
        badge: a badge number such as B-17
    """
    return ROOMS.get(badge, "no such badge")


TOOLS = {"badge_of": badge_of}
SUB_TOOLS = [room_of]
'''


def root_and_sub_with_tools(request: Request) -> Reply:
    """The root calls its tool and asks a sub-call; the sub-model calls its tool, then answers."""
    if request.is_root:
        if "Output of step" not in request.last_user:
            code = "b = badge_of('Ada')\nr = llm_query(f'Which room does badge {b} open?')\nprint(r)"
            return Reply(text=f"```repl\n{code}\n```")
        return Reply(text="```repl\nFINAL(r)\n```")
    if not request.tool_results:
        badge = request.last_user.split("badge ")[1].split()[0]
        return Reply(tool_calls=[("room_of", {"badge": badge})])
    return Reply(text=f"It opens {request.tool_results[0]}.")


def test_a_sweep_from_the_command_line_passes_tools_tips_and_sub_tools(tmp_path: Path) -> None:
    (tmp_path / "officetools.py").write_text(textwrap.dedent(TOOLS_MODULE), encoding="utf-8")
    tasks = tmp_path / "rooms.jsonl"
    task = {"id": "room-1", "context": "Ada starts on Monday.", "question": "Which room is Ada's?"}
    tasks.write_text(json.dumps({**task, "answer": "room 4.17"}) + "\n", encoding="utf-8")
    (tmp_path / "tips.md").write_text("Ask a sub-call: it can look rooms up.\n", encoding="utf-8")
    out = tmp_path / "out"
    with ScriptedServer(root_and_sub_with_tools) as server:
        cmd = [
            sys.executable, "-m", "rlm_kernel.eval", "run", "--tasks", "", "--task-file", str(tasks),
            "--methods", "rlm,rlm+tips", "--tips-file", str(tmp_path / "tips.md"),
            "--tools", "officetools:TOOLS", "--sub-tools", "officetools:SUB_TOOLS", "--out", str(out),
            "--backend", "openai", "--model-name", "gpt-4o-mini", "--base-url", server.openai_base_url,
            "--executor", "local", "--no-progress",
        ]  # fmt: skip
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": str(tmp_path)}
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        subs = [r for r in server.requests if not r.is_root]
        first_roots = [r for r in server.requests if r.is_root and "Output of step" not in r.last_user]
    assert "| rlm | gpt-4o-mini | 1 | 100.0 | 0 |" in proc.stdout
    assert "| rlm+tips | gpt-4o-mini | 1 | 100.0 | 0 |" in proc.stdout
    assert len(subs) == 4 and all(r.tools == ["room_of"] for r in subs)  # two rounds a sub-call
    assert all("- `badge_of(name: str) -> str`: The badge number" in r.system for r in first_roots)
    assert sorted("it can look rooms up" in r.system for r in first_roots) == [False, True]
    for row in rlm_eval.load(out).rows:
        events = load_trajectory(row.trajectory)
        started = next(e for e in events if isinstance(e, SubcallStarted))
        calls = [(e.tool, e.call_id, e.error) for e in events if isinstance(e, ToolCalled)]
        assert calls == [("badge_of", None, None), ("room_of", started.call_id, None)]
        assert row.answer == "It opens room 4.17, second floor." and row.score == 1.0
    sweeps = [json.loads(x) for x in (out / "sweeps.jsonl").read_text().splitlines()]
    assert sweeps[0]["settings"]["sub_tools"] == ["room_of"]  # functions by name: no code


def test_tools_given_as_functions_reach_the_rlm(tmp_path: Path) -> None:
    """From Python, tools are the functions themselves; the results file names them."""
    namespace: dict[str, object] = {}
    exec(textwrap.dedent(TOOLS_MODULE), namespace)
    tasks = tmp_path / "rooms.jsonl"
    tasks.write_text(
        json.dumps({"id": "r", "context": "x", "question": "Which room?", "answer": "room 4.17"}) + "\n"
    )
    with ScriptedServer(root_and_sub_with_tools) as server:
        settings = rlm_eval.Settings(
            backend="openai",
            model_name="gpt-4o-mini",
            backend_kwargs={"base_url": server.openai_base_url, "api_key": "sk-test"},
            tools=namespace["TOOLS"],
            sub_tools=namespace["SUB_TOOLS"],
            executor="local",
        )
        (row,) = rlm_eval.run(
            [], [], ["rlm"], n=1, out=tmp_path / "out", settings=settings, task_files=[tasks], progress=False
        ).rows
    assert row.score == 1.0, row.error
    sweeps = [json.loads(x) for x in (tmp_path / "out" / "sweeps.jsonl").read_text().splitlines()]
    assert sweeps[0]["settings"]["tools"] == ["badge_of"] and sweeps[0]["settings"]["sub_tools"] == [
        "room_of"
    ]
