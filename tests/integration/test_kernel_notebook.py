"""The RLM Python kernel in notebook mode: a real kernel, and the tests play the extension's part."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from frontend import FrontEnd
from kernel_session import KernelSession, scripted_env
from scripted_server import Reply, Script, ScriptedServer, sequence

from rlm_kernel.messages import PROTOCOL_VERSION, CellOfRun, Pause, RegenerateMsg, Resume, SetMode, Stop


def repl(code: str) -> str:
    return f"Next step.\n```repl\n{code}\n```"


@pytest.fixture
def kernel(server: ScriptedServer, tmp_path) -> Iterator[KernelSession]:
    env = scripted_env(server, tmp_path)
    server.requests.clear()
    with KernelSession("rlm-python", env) as session:
        assert session.execute("doc = 'abcdefg' * 3")["status"] == "ok"
        yield session


def root_requests(server: ScriptedServer) -> list:
    return [r for r in server.requests if r.is_root]


def test_auto_mode_runs_each_step_as_a_cell_to_the_answer(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    server.responder = Script(root=[repl("n = len(context)\nprint(n)"), repl("FINAL(n * 2)")])
    front = FrontEnd(kernel)
    rlm_cell = front.run_cell("%%rlm -c doc\nHow long, doubled?", "the-rlm-cell")
    started = front.next("run_started")
    assert started["cell_id"] == "the-rlm-cell" and started["mode"] == "auto"
    finished = front.drive()
    assert finished["answer"] == "42" and finished["error"] is None
    assert finished["answer_markdown"] == "42\n"  # the answer cell's safe Markdown (safe.py)
    assert finished["after_cell_id"] == front.cells[2]
    proposals = front.received("propose_step")
    assert [p["step"] for p in proposals] == [1, 2]
    assert proposals[0]["after_cell_id"] == "the-rlm-cell" and proposals[1]["after_cell_id"] == front.cells[1]
    assert "Next step." in proposals[0]["reply"]
    assert [e["step"] for e in front.received("step_executed")] == [1, 2]
    # the step's output went to the root, and the result is in the namespace
    assert "Output of step 1:\n21" in root_requests(server)[1].last_user
    check = front.run_cell("print(_rlm.response, n)")
    assert kernel.text(check).strip() == "42 21"
    # the %%rlm cell's view was updated in place and ends with the answer
    # No update can follow the final one: the run's throttle is closed before it (test_throttle.py)
    updates = [m for _, m in kernel.messages if m["msg_type"] == "update_display_data"]
    assert updates[-1]["content"]["metadata"]["rlm_kernel"]["events"][-1]["kind"] == "run_ended"
    final_view = updates[-1]["content"]["data"]["text/html"]
    assert "<b>Answer:</b>" in final_view and ">42</pre>" in final_view
    assert kernel.of(rlm_cell, "display_data")  # the view lives in the %%rlm cell
    assert front.received("events")  # sub-call and step updates for the side panel


def test_step_mode_with_an_edited_step(kernel: KernelSession, server: ScriptedServer) -> None:
    server.responder = Script(root=[repl("x = 1\nprint(x)"), repl("FINAL(x)")])
    front = FrontEnd(kernel, on_propose=lambda data: None)  # the human reviews each cell
    front.run_cell("%%rlm -c doc --mode step\nq")
    proposal = front.next("propose_step")
    assert proposal["mode"] == "step"
    front.accept(proposal)
    # The kernel handles comm messages in order: its answer to this one shows where the run stands
    # after the cell was bound, and it waits for the human to run step 1.
    front.send(SetMode(run_id=proposal["run_id"], mode="step"))
    assert front.next("run_state")["waiting_for"] == 1
    assert len(root_requests(server)) == 1
    front.run_cell("x = 41 + 1\nprint(x)", front.cells[1])  # edited, then run
    second = front.next("propose_step")
    request = root_requests(server)[1].last_user
    assert (
        "A human edited your step 1" in request
        and "x = 41 + 1" in request
        and "Output of step 1:\n42" in request
    )
    assert front.received("step_executed")[0]["edited"] is True
    front.accept(second)
    front.run_cell(second["code"], front.cells[2])
    assert front.next("run_finished")["answer"] == "42"
    check = front.run_cell("print([e.kind for e in _rlm.trajectory if e.kind == 'human_edit'])")
    assert kernel.text(check).strip() == "['human_edit']"
    # the %%rlm cell's last output keeps the trajectory, edit included, for from_notebook
    final = [m for _, m in kernel.messages if m["msg_type"] == "update_display_data"][-1]["content"]
    kinds = [e["kind"] for e in final["metadata"]["rlm_kernel"]["events"]]
    assert kinds[0] == "run_started" and "human_edit" in kinds and kinds[-1] == "run_ended"


def test_a_human_cell_joins_the_run_and_can_answer(kernel: KernelSession, server: ScriptedServer) -> None:
    server.responder = Script(root=[repl("print('step one')"), repl("print('step two')")])
    front = FrontEnd(kernel, on_propose=lambda data: None)
    front.run_cell("%%rlm -c doc --mode step\nq")
    front.accept(front.next("propose_step"))
    front.run_cell("mine = context.upper()[:3]\nprint(mine)")  # the human's own cell, mid-run
    front.run_cell("print('step one')", front.cells[1])
    front.next("propose_step")
    request = root_requests(server)[1].last_user
    assert (
        "The human ran a cell of their own" in request
        and "mine = context.upper()[:3]" in request
        and "ABC" in request
    )
    front.run_cell("answer['content'] = mine\nanswer['ready'] = True")
    finished = front.next("run_finished")
    assert finished["answer"] == "ABC"


def test_a_step_cell_is_known_by_its_metadata_if_it_runs_before_its_binding_arrives(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    """JupyterLab sends a cell's metadata with its execute request: a proposal's cell that runs
    before the kernel has its ``cell_inserted`` is still the step, and only the first run of it."""
    server.responder = Script(root=[repl("x = 1\nprint(x)"), repl("print(x + 1)"), repl("FINAL(x)")])
    front = FrontEnd(kernel, on_propose=lambda data: None)
    front.run_cell("%%rlm -c doc --mode step\nq")
    proposal = front.next("propose_step")
    meta = {"run_id": proposal["run_id"], "step": 1, "author": "root", "proposed": proposal["code"]}
    front.run_cell(proposal["code"], "early", rlm=meta)  # no cell_inserted for it
    executed = front.next("step_executed")
    assert executed["step"] == 1 and executed["cell_id"] == "early" and executed["edited"] is False
    second = front.next("propose_step")
    assert second["step"] == 2 and second["after_cell_id"] == "early"
    assert "Output of step 1:\n1" in root_requests(server)[1].last_user
    # Run again (or a copy of it), the cell is the human's own: it names a step that already ran.
    # It ran before the waiting step 2, so it takes that number, and step 2 is announced again as 3.
    front.run_cell(proposal["code"], "early", rlm=meta)
    again = front.next("propose_step")
    assert (again["step"], again["code"]) == (3, second["code"])
    front.run_cell(second["code"], "also-early", rlm={**meta, "step": 3, "proposed": second["code"]})
    assert front.next("propose_step")["step"] == 4
    request = root_requests(server)[2].last_user
    assert "The human ran a cell of their own (step 2)" in request and "Output of step 3:\n2" in request


def test_pause_resume_and_stop(kernel: KernelSession, server: ScriptedServer) -> None:
    server.responder = Script(root=[repl("a = 1"), Reply(text=repl("b = 2"), delay=1.0), repl("c = 3")])
    front = FrontEnd(kernel)
    front.run_cell("%%rlm -c doc\nq")
    first = front.next("propose_step")
    front.send(Pause(run_id=first["run_id"]))
    assert front.next("run_state")["paused"] is True
    front.accept(first)  # step 1 runs while paused, and asking the root for step 2 is held back
    front.send(SetMode(run_id=first["run_id"], mode="auto"))  # answered after the cell's end
    state = front.next("run_state")
    assert state["paused"] is True and state["waiting_for"] is None
    assert len(root_requests(server)) == 1 and len(front.received("propose_step")) == 1
    front.send(Resume(run_id=first["run_id"]))
    front.accept(front.next("propose_step"))
    front.next("propose_step")
    front.send(Stop(run_id=first["run_id"]))
    finished = front.next("run_finished")
    assert finished["answer"] is None and "stopped by the user" in finished["error"]
    check = front.run_cell("print(a, b, 'c' in dir())")
    assert kernel.text(check).strip() == "1 2 False"


def test_interrupt_during_a_step(kernel: KernelSession, server: ScriptedServer) -> None:
    server.responder = Script(root=[repl("import time\nprint('in the step', flush=True)\ntime.sleep(30)")])
    front = FrontEnd(kernel, on_propose=lambda data: None)
    front.run_cell("%%rlm -c doc\nq")
    proposal = front.next("propose_step")
    front.accept(proposal)
    msg = kernel.kc.session.msg(
        "execute_request",
        {
            "code": proposal["code"],
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        },
        metadata={"cellId": front.cells[1]},
    )
    kernel.kc.shell_channel.send(msg)
    assert kernel.pump(  # the step's own code is running
        lambda m: (
            m["msg_type"] == "stream"
            and "in the step" in m["content"]["text"]
            and m["parent_header"].get("msg_id") == msg["header"]["msg_id"]
        )
    )
    kernel.km.interrupt_kernel()
    finished = front.next("run_finished", timeout=5)
    assert "interrupted" in finished["error"]
    assert front.run_cell("1 + 1") and kernel.execute("print('alive')")["status"] == "ok"


def test_the_kernel_answers_other_requests_between_steps(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    server.responder = Script(root=[Reply(text=repl("x = 1"), delay=30.0)])
    front = FrontEnd(kernel)
    front.run_cell("%%rlm -c doc\nq")
    other = front.run_cell("print(6 * 7)")  # while the root LM is thinking
    assert kernel.text(other).strip() == "42"
    info = kernel.kc.kernel_info(reply=True, timeout=10)
    assert info["content"]["implementation"] == "rlm_kernel"
    front.run_cell("%rlm hint look at the end")
    assert front.received("propose_step") == []  # all of it came while the root's reply was due
    front.run_cell("%rlm stop")
    finished = front.next("run_finished")
    assert finished["stop"] == "user" and finished["answer"] is None
    events = [e for msg in front.received("events") for e in msg["events"]]
    assert [e["text"] for e in events if e["kind"] == "hint"] == ["look at the end"]


def test_without_the_extension_it_falls_back_and_says_so(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    server.responder = Script(root=[repl("FINAL(len(context))")])
    msg_id = kernel.start("%%rlm -c doc\nq")
    kernel.wait_idle(msg_id)
    assert "JupyterLab with the rlm_kernel extension" in kernel.text(msg_id)
    assert kernel.of(msg_id, "display_data")[-1]["content"]["data"]["text/plain"] == "21"
    server.responder = Script(root=[repl("FINAL(len(context))")])
    again = kernel.start("%%rlm -c doc\nq")
    kernel.wait_idle(again)
    assert "rlm_kernel extension" not in kernel.text(again)  # said once


def test_a_reconnecting_front_end_gets_the_pending_step_again(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    server.responder = Script(root=[repl("y = 5"), repl("FINAL(y)")])
    first = FrontEnd(kernel, on_propose=lambda data: None)
    first.run_cell("%%rlm -c doc --mode step\nq")
    proposal = first.next("propose_step")
    second = FrontEnd(kernel, on_propose=lambda data: data["code"])  # a page reload: a new comm
    assert second.next("run_state")["waiting_for"] == 1
    again = second.next("propose_step")
    assert again["step"] == proposal["step"] and again["code"] == proposal["code"]
    kernel.kc.shell_channel.send(kernel.kc.session.msg("comm_close", {"comm_id": first.comm_id, "data": {}}))
    second.accept(again)  # the old view closing leaves the new one connected
    assert second.drive()["answer"] == "5"


def test_the_newest_open_view_owns_the_run_and_hands_it_back(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    server.responder = Script(root=[repl("y = 5"), repl("FINAL(y)")])
    first = FrontEnd(kernel, on_propose=lambda data: None)
    first.run_cell("%%rlm -c doc --mode step\nq")
    proposal = first.next("propose_step")
    first.accept(proposal)
    second = FrontEnd(kernel, on_propose=lambda data: None)  # File → New View: a second comm
    assert second.next("run_started")["run_id"] == proposal["run_id"]
    assert second.next("propose_step")["code"] == proposal["code"]
    # The owner closes: the first view, still open, is greeted again and takes the run over.
    kernel.kc.shell_channel.send(kernel.kc.session.msg("comm_close", {"comm_id": second.comm_id, "data": {}}))
    assert first.next("welcome")["active"] == proposal["run_id"]
    assert first.next("run_started")["run_id"] == proposal["run_id"]
    assert first.next("run_state")["waiting_for"] == 1
    again = first.next("propose_step")
    assert again["code"] == proposal["code"] and again["after_cell_id"] == first.cells[1]
    first.run_cell(proposal["code"], first.cells[1])
    first.accept(first.next("propose_step"))
    first.run_cell("FINAL(y)", first.cells[2])
    assert first.next("run_finished")["answer"] == "5"


def test_the_answer_goes_after_the_runs_latest_cell(kernel: KernelSession, server: ScriptedServer) -> None:
    server.responder = Script(root=[repl("print(1)"), repl("print(2)")])
    front = FrontEnd(kernel, on_propose=lambda data: None)
    front.run_cell("%%rlm -c doc --mode step\nq")
    front.accept(front.next("propose_step"))
    front.send(Stop(run_id=front.waiting["run_id"]))
    stopped = front.next("run_finished")
    assert stopped["after_cell_id"] == front.cells[1]  # below the proposal that never ran
    final = [m for _, m in kernel.messages if m["msg_type"] == "update_display_data"][-1]["content"]
    assert final["metadata"]["rlm_kernel"]["mode"] == "step"  # for the reopened notebook's panel
    # A human cell that sets the answer: the answer cell goes right after it.
    front.run_cell("%%rlm -c doc --mode step\nq")
    front.accept(front.next("propose_step"))
    front.run_cell("answer['content'] = 'mine'\nanswer['ready'] = True", "the-human-cell")
    finished = front.next("run_finished")
    assert finished["answer"] == "mine" and finished["after_cell_id"] == "the-human-cell"


@pytest.mark.parametrize("told", ["by message", "by metadata"])
def test_a_cell_of_another_run_stays_out_of_the_active_one(
    kernel: KernelSession, server: ScriptedServer, told: str
) -> None:
    server.responder = Script(root=[repl("x = 1"), repl("FINAL(x)")])
    front = FrontEnd(kernel, on_propose=lambda data: None)
    front.run_cell("%%rlm -c doc --mode step\nq")
    proposal = front.next("propose_step")
    front.accept(proposal)
    # Run All over a finished run's cells: the front end says whose each is before it runs, and
    # the request itself carries the cell's metadata, which names its run.
    meta = {"run_id": "an-old-run", "step": 1, "author": "root", "proposed": "x = 0"}
    if told == "by message":
        front.send(CellOfRun(cell_id="old-step", cell_run_id="an-old-run"))
    code = "print('old step')\nFINAL('the old answer')"
    old = front.run_cell(code, "old-step", rlm=meta if told == "by metadata" else None)
    assert kernel.text(old).strip() == "old step"
    front.run_cell(proposal["code"], front.cells[1])
    second = front.next("propose_step", "run_finished")
    assert second["type"] == "propose_step"  # the old FINAL did not end the run
    assert "The human ran a cell of their own" not in root_requests(server)[1].last_user
    front.accept(second)
    front.run_cell(second["code"], front.cells[2])
    assert front.next("run_finished")["answer"] == "1"


def test_set_mode_between_runs_sets_the_next_runs_mode(kernel: KernelSession, server: ScriptedServer) -> None:
    server.responder = Script(root=[repl("FINAL(1)")])
    front = FrontEnd(kernel, on_propose=lambda data: None)
    front.send(SetMode(mode="step"))
    front.run_cell("%%rlm -c doc\nq")
    assert front.next("propose_step")["mode"] == "step"


def test_max_timeout_ends_a_root_call_in_flight(kernel: KernelSession, server: ScriptedServer) -> None:
    server.responder = Script(root=[Reply(text=repl("x = 1"), delay=20.0)])
    front = FrontEnd(kernel)
    front.run_cell("%config RLMMagics.max_timeout = 1.0")
    front.run_cell("%%rlm -c doc\nq")
    finished = front.next("run_finished", timeout=10)
    assert finished["stop"] == "budget" and "max_timeout" in finished["error"]


def test_a_front_end_of_another_protocol_gets_one_line_and_the_cell_view(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    server.responder = Script(root=[repl("FINAL('in the cell')")])
    front = FrontEnd(kernel, version=1)  # welcomed with the kernel's version, then left alone
    msg = front.run_cell("%%rlm -c doc\nq")
    assert (
        f"Steps are shown in this cell: the extension speaks protocol 1, the kernel {PROTOCOL_VERSION}: reinstall rlm-kernel"
        in kernel.text(msg)
    )
    assert front.received("run_started") == []


def test_confirm_risky_waits_only_for_the_steps_the_scan_flags(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    server.responder = Script(
        root=[repl("n = len(context)"), repl("import os\nprint(n, os.sep)"), repl("FINAL(n)")]
    )
    # The extension's rule: a proposal in mode "auto" runs at once, one in "step" waits.
    front = FrontEnd(kernel, on_propose=lambda data: data["code"] if data["mode"] == "auto" else None)
    front.run_cell("%%rlm -c doc --mode confirm-risky\nq")
    assert front.next("run_started")["mode"] == "confirm-risky"
    waiting = front.drive()  # runs step 1, stops at step 2
    assert waiting["type"] == "propose_step" and waiting["step"] == 2
    assert waiting["mode"] == "step" and waiting["reason"] == "it imports os"
    first = front.received("propose_step")[0]
    assert first["mode"] == "auto" and first["reason"] == ""
    front.run_cell(waiting["code"], front.cells[2])  # the human reads it, then runs it
    assert front.drive()["answer"] == "21"


def test_a_mode_cap_holds_for_the_front_ends_choice(kernel: KernelSession, server: ScriptedServer) -> None:
    server.responder = Script(root=[repl("import os\nprint(1)")])
    front = FrontEnd(kernel, on_propose=lambda data: None)
    kernel.execute("%config RLMMagics.mode_cap = 'confirm-risky'")
    front.send(SetMode(run_id=None, mode="auto"))  # asks for more autonomy than the cap allows
    front.run_cell("%%rlm -c doc\nq")
    assert front.next("run_started")["mode"] == "confirm-risky"
    proposal = front.next("propose_step")
    assert proposal["mode"] == "step" and proposal["reason"] == "it imports os"
    front.send(Stop(run_id=proposal["run_id"]))
    front.next("run_finished")


def test_regenerate_asks_the_root_again_for_the_waiting_step(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    server.responder = Script(
        root=[repl("import shutil"), repl("n = len(context)\nprint(n)"), repl("FINAL(n)")]
    )
    front = FrontEnd(kernel, on_propose=lambda data: None)
    front.run_cell("%%rlm -c doc --mode step\nq")
    first = front.next("propose_step")
    front.accept(first)
    front.send(SetMode(run_id=first["run_id"], mode="step"))
    assert front.next("run_state")["can_regenerate"] is True
    front.send(RegenerateMsg(run_id=first["run_id"], step=1))
    second = front.next("propose_step")
    assert second["step"] == 1 and second["code"] == "n = len(context)\nprint(n)\n"
    requests = root_requests(server)
    assert requests[0].messages == requests[1].messages  # the same turn, asked again
    front.accept(second)
    front.run_cell(second["code"], front.cells[1])
    third = front.next("propose_step")
    front.accept(third)
    front.run_cell(third["code"], front.cells[2])
    assert front.next("run_finished")["answer"] == "21"
    check = front.run_cell(
        "print([(e.step, e.reply) for e in _rlm.trajectory if e.kind == 'proposal_rejected'])"
    )
    assert kernel.text(check).strip() == repr([(1, repl("import shutil"))])


def test_regenerate_after_a_human_cell_and_a_hint_asks_with_them_and_keeps_the_steps_number(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    server.responder = Script(
        root=[repl("import shutil"), repl("n = len(context)\nprint(n)"), repl("FINAL(n)")]
    )
    front = FrontEnd(kernel, on_propose=lambda data: None)
    front.run_cell("%%rlm -c doc --mode step\nq")
    first = front.next("propose_step")
    front.accept(first)
    front.run_cell("print('mine:', doc[:2])")  # the human's own cell while step 1 waits: it ran first
    renumbered = front.next("propose_step")
    assert renumbered["step"] == 2  # the waiting step, announced again after the human's step 1
    front.accept(renumbered)
    front.run_cell("%rlm hint count the characters")
    front.send(RegenerateMsg(run_id=first["run_id"], step=2))
    second = front.next("propose_step")
    assert second["step"] == 2  # the waiting step's number; the human's step 1 keeps its own
    before, again = root_requests(server)[:2]
    assert again.last_user.startswith(before.last_user)
    assert "The human ran a cell of their own (step 1)" in again.last_user and "mine:" in again.last_user
    assert "Hint from the human: count the characters" in again.last_user
    assert before.body.get("temperature") is None and again.body["temperature"] > 0 and "seed" in again.body
    front.accept(second)
    front.run_cell(second["code"], front.cells[2])
    third = front.next("propose_step")
    assert third["step"] == 3
    front.accept(third)
    front.run_cell(third["code"], front.cells[3])
    assert front.next("run_finished")["answer"] == "21"
    check = front.run_cell("print([(e.step, e.author) for e in _rlm.trajectory if e.kind == 'step_started'])")
    steps = [(1, "root"), (1, "human"), (2, "root"), (2, "root"), (3, "root")]
    assert kernel.text(check).strip() == repr(steps)
    assert "The human ran" not in root_requests(server)[2].last_user  # told once, with the regenerate


def test_verify_sends_the_answer_back_for_more_steps_in_notebook_mode(
    kernel: KernelSession, server: ScriptedServer
) -> None:
    setting = "answer['content'] = '21'\nanswer['ready'] = True"
    server.responder = Script(
        root=[
            repl("n = len(context)\nprint(n)"),
            repl(setting),
            repl("print(n, 'characters')"),
            repl(setting),
        ],
        sub=sequence("UNSUPPORTED: print it with its unit first", "SUPPORTED"),
    )
    front = FrontEnd(kernel)
    front.run_cell("%%rlm -c doc --verify\nHow many characters are there?")
    finished = front.drive()
    assert finished["answer"] == "21" and finished["error"] is None
    # step 3 sets no answer: the one sent back was reopened in the notebook's namespace
    assert [p["step"] for p in front.received("propose_step")] == [1, 2, 3, 4]
    requests = root_requests(server)
    assert len(requests) == 4
    assert "a sub-model judged it unsupported (print it with its unit first)" in requests[2].last_user
    check = front.run_cell(
        "print([e.kind for e in _rlm.trajectory if e.kind in ('answer_doubted', 'warning')], _rlm.usage.sub.calls)"
    )
    assert kernel.text(check).strip() == "['answer_doubted'] 2"
