"""Rewind from the magics: ``--continue-from RUN:STEP`` in an IPython shell (the run's view in its
cell) and in the RLM Python kernel's notebook mode (the branch's steps become cells), against the
scripted server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from frontend import FrontEnd
from IPython.core.error import UsageError
from kernel_session import KernelSession, scripted_env
from scripted_server import Reply, Script, ScriptedServer

from rlm_kernel.events import RunStarted


def repl(code: str) -> str:
    return f"Next step.\n```repl\n{code}\n```"


def halves(request) -> Reply:
    return Reply(text=str(len(request.last_user) // 2))


ROOT = [
    repl("n = int(llm_query(context))\nprint('half', n)"),
    repl("m = n + 1\nprint('m', m)"),
    repl("FINAL(str(m))"),
]


def test_continue_from_a_result_variable_a_run_id_and_a_file(shell, scripted_server, tmp_path) -> None:
    scripted_server.responder = Script(root=ROOT, sub=halves)
    shell.user_ns["doc"] = "x" * 40
    assert shell.run_cell("%rlm doc What is half the length, plus one?").success
    parent = shell.user_ns["_rlm"]
    assert parent.response == "21"
    subs = sum(not r.is_root for r in scripted_server.requests)

    scripted_server.responder = Script(root=[repl("FINAL(str(m * 10))")] * 3, sub=halves)
    assert shell.run_cell("%rlm --continue-from _rlm:3 -o first doc").success
    assert shell.user_ns["first"].response == "210"
    assert shell.run_cell(f"%rlm --continue-from {parent.run_id}:3 -o second doc").success
    assert shell.run_cell(f"%%rlm -c doc -o third --continue-from {parent.log_path}:3\n").success
    for name in ("first", "second", "third"):
        result = shell.user_ns[name]
        assert result.response == "210", result.error
        started = result.trajectory[0]
        assert isinstance(started, RunStarted) and (started.parent_run, started.branched_at) == (
            parent.run_id,
            3,
        )
    assert sum(not r.is_root for r in scripted_server.requests) == subs  # no sub-call asked again


def test_continue_from_mistakes_are_one_line(shell, scripted_server) -> None:
    scripted_server.responder = Script(root=ROOT, sub=halves)
    shell.user_ns["doc"] = "x" * 40
    assert shell.run_cell("%rlm doc half?").success
    magics = shell.user_ns["__rlm_magics__"]
    with pytest.raises(UsageError, match=r"takes RUN:STEP, as in _rlm:2, not '_rlm'"):
        magics._parse("--continue-from _rlm doc", None)
    with pytest.raises(UsageError, match=r"no run 'nosuchrun': name the variable holding its result"):
        magics._parse("--continue-from nosuchrun:2 doc", None)
    with pytest.raises(UsageError, match=r"has no step 7 proposed by the root: its root steps are 1, 2, 3\."):
        magics._parse("--continue-from _rlm:7 doc", None)


# ------------------------------------------------------------------ notebook mode


@pytest.fixture
def kernel(scripted_server: ScriptedServer, tmp_path) -> Iterator[KernelSession]:
    env = scripted_env(scripted_server, tmp_path)
    with KernelSession("rlm-python", env) as session:
        assert session.execute("doc = 'y' * 60")["status"] == "ok"
        yield session


def test_a_branch_in_notebook_mode_replays_in_the_kernel_and_proposes_cells(kernel, scripted_server) -> None:
    scripted_server.responder = Script(root=ROOT, sub=halves)
    front = FrontEnd(kernel)
    front.run_cell("%%rlm -c doc\nHalf the length, plus one?", "parent-cell")
    assert front.drive()["answer"] == "31"
    parent_id = front.received("run_started")[0]["run_id"]
    subs = sum(not r.is_root for r in scripted_server.requests)

    # The original's later step left m behind; the branch's REPL has n from replayed step 1.
    scripted_server.responder = Script(root=[repl("print(n)\nm = n * 3"), repl("FINAL(str(m))")], sub=halves)
    front.run_cell("%%rlm -c doc -o branch --continue-from _rlm:2\n", "branch-cell")
    started = front.next("run_started")
    assert started["cell_id"] == "branch-cell" and started["run_id"] != parent_id
    finished = front.drive()
    assert finished["answer"] == "90", finished
    proposals = [p for p in front.received("propose_step") if p["run_id"] == started["run_id"]]
    assert [p["step"] for p in proposals] == [2, 3]  # the replayed step 1 got no cell
    assert proposals[0]["after_cell_id"] == "branch-cell"
    assert sum(not r.is_root for r in scripted_server.requests) == subs
    check = front.run_cell("print(branch.trajectory[0].parent_run, branch.trajectory[0].branched_at)")
    assert kernel.text(check).split() == [parent_id, "2"]
    replayed = front.run_cell(
        "print([e.step for e in branch.trajectory if getattr(e, 'replayed', False) and e.kind == 'step_started'])"
    )
    assert kernel.text(replayed).strip() == "[1]"
