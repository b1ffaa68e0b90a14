"""The bridge session as a table: a state, what comes (a kernel's message, a command, a call's
value, a timer), and what the host does. No kernel, no loop, no thread."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from rlm_kernel.executors import bridge
from rlm_kernel.executors.bridge import MARK, MAX_REQUEST
from rlm_kernel.executors.bridge_session import (
    EOF,
    Account,
    Action,
    Answer,
    BridgeSession,
    CellDone,
    Finish,
    Lost,
    Park,
    Phase,
    Send,
    Serve,
    Shut,
    Unpark,
)

P = Phase
SERVE = "serve-1"  # the serve cell's message id, as the driver would feed it
STEP = bridge.Exec(tag="t1", code="x = 1", step=1)
CHILD = bridge.Exec(tag="t2", code="y = 2", step=1)
EXECUTED = bridge.Executed("", "", None, None, 0.0, False, "", [])
QUIT = json.dumps(dataclasses.asdict(bridge.Quit()))
OK = bridge.Value(value="ok")


class Says:
    """Stands for any text that contains ``part`` (pydantic's own wording of a refusal)."""

    def __init__(self, part: str) -> None:
        self.part = part

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and self.part in other

    def __repr__(self) -> str:
        return f"Says({self.part!r})"


# -- what comes ---------------------------------------------------------------------------------
Input = Callable[[BridgeSession], list[Action]]


def stdin(prompt: Any, parent: str | None = SERVE, kind: str = "input_request") -> dict[str, Any]:
    return {
        "channel": "stdin",
        "header": {"msg_type": kind},
        "parent_header": {"msg_id": parent},
        "content": {"prompt": prompt},
    }


def request(message: dict[str, Any]) -> dict[str, Any]:
    return stdin(MARK + json.dumps(message))


def result(id_: int, value: Any = EXECUTED) -> dict[str, Any]:
    return request({"op": "result", "id": id_, "result": dataclasses.asdict(value)})


def call(tag: str = "t1") -> dict[str, Any]:
    return request({"op": "call", "fn": "llm_query", "tag": tag, "prompt": "p"})


def reply_of(parent: str) -> dict[str, Any]:
    return {"channel": "shell", "header": {"msg_type": "execute_reply"}, "parent_header": {"msg_id": parent}}


def stream(text: str, name: str = "stdout") -> dict[str, Any]:
    return {
        "channel": "iopub",
        "header": {"msg_type": "stream"},
        "parent_header": {"msg_id": SERVE},
        "content": {"name": name, "text": text},
    }


READY = request({"op": "ready"})
DEAD = {"channel": "iopub", "header": {"msg_type": "status"}, "content": {"execution_state": "dead"}}


def receive(msg: dict[str, Any]) -> Input:
    return lambda m: m.receive(msg)


def submit(command: Any) -> Input:
    return lambda m: m.submit(command)[1]


def answered(frame: int, value: bridge.Value = OK) -> Input:
    return lambda m: m.answered(frame, value)


def park() -> Input:
    return lambda m: m.park()


def close() -> Input:
    return lambda m: m.close()


# -- where it stands: each state, reached the way a kernel reaches it -----------------------------
def _starting() -> BridgeSession:
    m = BridgeSession()
    m.submit(STEP)
    m.serving(SERVE)
    return m


def _running() -> BridgeSession:
    m = _starting()
    m.receive(READY)  # STEP goes, as command 1
    return m


def _calling() -> BridgeSession:
    m = _running()
    m.receive(call())  # frame 2 waits for the host
    return m


def _child() -> BridgeSession:
    m = _calling()
    m.submit(CHILD)  # a child's step, command 3, inside the parent's call
    return m


def _idle() -> BridgeSession:
    m = _running()
    m.receive(result(1))
    return m


def _broken() -> BridgeSession:
    m = _running()
    m.receive(READY)
    return m


STATES: dict[str, Callable[[], BridgeSession]] = {
    "parked": BridgeSession,
    "starting": _starting,
    "running": _running,
    "calling": _calling,
    "child": _child,
    "idle": _idle,
    "broken": _broken,
}


def refused(why: Any, *lost: int, queued: tuple[int, ...] = ()) -> list[Action]:
    """What a message that breaks the protocol does: the commands in flight (``lost``) and
    queued fail as broken, and the kernel is ended."""
    gone = Lost(why, broken=True)
    return [*(Finish(i, gone) for i in lost), Account(), *(Finish(i, gone) for i in queued), Shut()]


def sent(command: Any, id_: int) -> Send:
    return Send(bridge.command_json(command, id_))


# fmt: off
ROWS: list[tuple[str, str, Input, list[Action], Phase]] = [
    # -- a command starts the serve cell; Ready lets it go ---------------------------------------
    ("parked", "a command", submit(STEP), [Serve(), Account()], P.STARTING),
    ("starting", "ready", receive(READY), [sent(STEP, 1), Account()], P.RUNNING),
    ("starting", "a result before ready", receive(result(1)), refused(Says("not the one running"), queued=(1,)), P.ENDED),
    ("starting", "a call before ready", receive(call()), refused("a call while no command of the host runs", queued=(1,)), P.ENDED),
    # -- while a command runs ----------------------------------------------------------------------
    ("running", "its result", receive(result(1)), [Finish(1, EXECUTED), Park(), Account()], P.IDLE),
    ("running", "its failure", receive(result(1, bridge.Failed("boom"))), [Finish(1, bridge.Failed("boom")), Park(), Account()], P.IDLE),
    ("running", "a call under its name", receive(call()), [Account(), Answer(2, bridge.LlmQuery("t1", "p")), Account()], P.CALLING),
    ("running", "the code's own input()", receive(stdin("name? ")), [Send(EOF)], P.RUNNING),
    ("running", "stray output", receive(stream("hi")), [], P.RUNNING),
    ("running", "ready in the middle of a step", receive(READY), refused("a ready in the middle of a command", 1), P.ENDED),
    ("running", "a result of nothing", receive(result(987654321)), refused("a result for command 987654321, which is not the one running", 1), P.ENDED),
    ("running", "a result of the wrong kind", receive(result(1, bridge.Loaded(0.1))), refused("a result of the wrong kind for exec: Loaded", 1), P.ENDED),
    ("running", "a call under another name", receive(call("t9")), refused("a call under the name 't9' during a command of 't1'", 1), P.ENDED),
    ("running", "not JSON", receive(stdin(MARK + "{not json")), refused(Says("json"), 1), P.ENDED),
    ("running", "not an object", receive(stdin(MARK + "[1, 2]")), refused(Says("input should be"), 1), P.ENDED),
    ("running", "an unknown op", receive(request({"op": "exec", "code": "x"})), refused(Says("op"), 1), P.ENDED),
    ("running", "a call without its fields", receive(request({"op": "call", "fn": "llm_query"})), refused(Says("field required"), 1), P.ENDED),
    ("running", "a field too many", receive(request({"op": "ready", "pid": 1})), refused(Says("pid"), 1), P.ENDED),
    ("running", "a request too large", receive(stdin(MARK + "x" * (MAX_REQUEST + 1))), refused(Says("over the bridge"), 1), P.ENDED),
    ("running", "a request of another cell", receive(stdin(MARK + "{}", parent="other")), refused("a input_request on stdin that no cell of the host asked for", 1), P.ENDED),
    ("running", "another message on stdin", receive(stdin(None, kind="input_reply")), refused("a input_reply on stdin that no cell of the host asked for", 1), P.ENDED),
    ("running", "a message that could not be read", receive({"channel": "shell", "error": "a message on shell that could not be read (bad signature)"}), refused("a message on shell that could not be read (bad signature)", 1), P.ENDED),
    ("running", "a message without a header", receive({"channel": "stdin"}), refused("a message that could not be handled (KeyError: 'header')", 1), P.ENDED),
    ("running", "content that is not an object", receive({**stdin(None), "content": [1]}), refused(Says("(AttributeError:"), 1), P.ENDED),
    ("running", "the serve cell ended (interrupted)", receive(reply_of(SERVE)), [Finish(1, Lost("the kernel was interrupted")), Account()], P.PARKED),
    ("running", "the kernel died", receive(DEAD), [Finish(1, Lost("the kernel died")), Account()], P.ENDED),
    ("running", "the host closes it", close(), [Finish(1, Lost("the kernel was shut down")), Account()], P.ENDED),
    # -- while the code waits on the host ----------------------------------------------------------
    ("calling", "the call's value", answered(2), [Send(json.dumps(dataclasses.asdict(OK))), Account()], P.RUNNING),
    ("calling", "a value for no call", answered(99), [Account()], P.CALLING),
    ("calling", "a second request", receive(call()), refused("a second request before the first was answered", 1), P.ENDED),
    ("calling", "a child's step", submit(CHILD), [sent(CHILD, 3), Account()], P.RUNNING),
    # -- a child's step, inside its parent's call ------------------------------------------------------
    ("child", "a call under the child's name", receive(call("t2")), [Account(), Answer(4, bridge.LlmQuery("t2", "p")), Account()], P.CALLING),
    ("child", "a call under its parent's name", receive(call("t1")), refused("a call under the name 't1' during a command of 't2'", 1, 3), P.ENDED),
    ("child", "the parent's result first", receive(result(1)), refused("a result for command 1, which is not the one running", 1, 3), P.ENDED),
    ("child", "the child's result", receive(result(3)), [Finish(3, EXECUTED), Account()], P.CALLING),
    # -- with nothing to do --------------------------------------------------------------------------
    ("idle", "the idle timer", park(), [Send(QUIT)], P.IDLE),
    ("idle", "another command", submit(CHILD), [Unpark(), sent(CHILD, 2), Account()], P.RUNNING),
    ("idle", "any request", receive(call()), refused("a second request before the first was answered"), P.ENDED),
    ("idle", "the host closes it", close(), [Send(QUIT), Account()], P.ENDED),
    # -- once the protocol was broken, nothing of the kernel's is believed ------------------------------
    ("broken", "its result", receive(result(1)), [], P.ENDED),
    ("broken", "a command", submit(CHILD), [Finish(2, Lost("a ready in the middle of a command", broken=True))], P.ENDED),
]
# fmt: on


@pytest.mark.parametrize(
    ("state", "what", "happens", "actions", "phase"),
    ROWS,
    ids=[f"{state}: {what}" for state, what, *_ in ROWS],
)
def test_what_the_host_does(
    state: str, what: str, happens: Input, actions: list[Action], phase: Phase
) -> None:
    machine = STATES[state]()
    assert actions == happens(machine)
    assert machine.phase is phase


def test_each_state_is_where_its_name_says() -> None:
    expected = {"parked": P.PARKED, "starting": P.STARTING, "running": P.RUNNING, "calling": P.CALLING}
    expected |= {"child": P.RUNNING, "idle": P.IDLE, "broken": P.ENDED}
    assert {name: make().phase for name, make in STATES.items()} == expected


def test_only_a_call_in_wait_is_time_on_the_host() -> None:
    assert [STATES[s]().waiting_on_host() for s in ("running", "calling", "child", "idle")] == [
        False,
        True,
        False,
        False,
    ]


def test_an_idle_serve_cell_ends_and_the_next_command_starts_it_again() -> None:
    m = _idle()
    assert m.park() == [Send(QUIT)]
    assert m.receive(reply_of(SERVE)) == []
    assert m.phase is P.PARKED
    id_, actions = m.submit(CHILD)
    assert actions == [Serve(), Account()]
    m.serving("serve-2")
    assert m.receive({**READY, "parent_header": {"msg_id": "serve-2"}}) == [sent(CHILD, id_), Account()]


def test_a_cell_of_the_hosts_own_gets_its_reply() -> None:
    m = BridgeSession()
    m.expect_cell("setup")
    assert m.receive(reply_of("setup")) == [CellDone("setup", reply_of("setup"))]
    assert m.receive(reply_of("setup")) == []  # once


def test_output_outside_a_step_is_kept_up_to_the_cap_and_counted() -> None:
    m = _running()
    m.output_cap = 4
    m.receive(stream("abcdef"))
    m.receive(stream("!", name="stderr"))
    m.receive(stream("?", name="other"))  # not a stream of the code's
    assert m.take_printed() == ("abcd", "", 3)
    m = _idle()
    m.receive(stream("no step runs"))
    assert m.take_printed() == ("", "", len("no step runs"))


def test_a_kernel_gone_loses_every_command_queued_too() -> None:
    m = _calling()
    m.submit(CHILD)
    id_, _ = m.submit(STEP)  # queued behind the child's step
    lost = Lost("the kernel died (out of memory)")
    assert m.end(lost.error) == [Finish(1, lost), Finish(3, lost), Account(), Finish(id_, lost)]
    assert m.submit(STEP)[1] == [Finish(id_ + 1, lost)]
