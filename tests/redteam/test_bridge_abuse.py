"""Code in the kernel speaks the bridge's protocol wrongly on purpose: messages that do not parse, a
``ready`` in the middle of a step, calls under another run's name, floods of output. The host stays
up, within its memory, and tells the root what happened; no run hangs."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from gateway_server import KernelGateway
from redteam import attacker, outputs
from scripted_server import ScriptedServer

pytestmark = pytest.mark.timeout(180)

MARK = "\\x1frlm:"  # what the kernel's side puts before each request, as the code may read it there

BAD_MESSAGES = {
    "not-json": f'"{MARK}" + "{{not json"',
    "not-a-dict": f'"{MARK}" + "[1, 2]"',
    "ready-mid-step": f'"{MARK}" + json.dumps({{"op": "ready", "pid": 1}})',
    "result-of-nothing": f'"{MARK}" + json.dumps({{"op": "result", "id": 987654321}})',
    "unknown-op": f'"{MARK}" + json.dumps({{"op": "exec", "code": "x"}})',
    "call-without-fields": f'"{MARK}" + json.dumps({{"op": "call", "fn": "llm_query"}})',
}


@pytest.fixture(scope="module")
def gateway() -> Iterator[KernelGateway]:
    with KernelGateway() as gw:
        yield gw


@pytest.mark.parametrize("message", BAD_MESSAGES.values(), ids=BAD_MESSAGES.keys())
def test_a_message_that_breaks_the_protocol_ends_the_step_and_the_kernel_not_the_run(
    server: ScriptedServer, message: str
) -> None:
    rlm = attacker(
        server,
        f"import json\nx = 1\ninput({message})\nprint('still here')",
        "print(globals().get('x'), llm_query('are calls still answered?'))",
    )
    check_the_run_went_on(rlm.completion("doc", "q"))


@pytest.mark.parametrize("message", ["not-json", "ready-mid-step"])
def test_a_gateway_kernel_that_breaks_the_protocol_is_ended_too(
    server: ScriptedServer, gateway: KernelGateway, message: str
) -> None:
    rlm = attacker(
        server,
        f"import json\nx = 1\ninput({BAD_MESSAGES[message]})\nprint('still here')",
        "print(globals().get('x'), llm_query('are calls still answered?'))",
        executor="gateway",
        executor_kwargs={"url": gateway.url, "auth_token": gateway.token},
    )
    check_the_run_went_on(rlm.completion("doc", "q"))


def check_the_run_went_on(result: Any) -> None:
    assert result.ok, result.error
    first, second = outputs(result)
    assert "still here" not in first and "protocol" in first and "new kernel" in first
    assert second == "None ok\n"  # a new kernel, whose sub-calls work


def test_a_child_cannot_call_under_its_parents_name(server: ScriptedServer) -> None:
    """A child run's code asks for a child run in its parent's name, to get past max_depth."""
    climb = (
        "import json\nimport rlm_kernel.executors.inkernel as m\n"
        "tags = list(m._SERVER.executors)\n"
        f'reply = input("{MARK}" + json.dumps({{"op": "call", "fn": "rlm_query_batched", "tag": tags[0], '
        '"prompts": ["climb"], "contexts": None}))\n'
        "print(reply[:200])"
    )
    rlm = attacker(server, "print(rlm_query('go on', 'a sub-context'))", climb, max_depth=2)
    result = rlm.completion("doc", "q")
    depths = {e.depth for e in result.trajectory if e.kind == "run_started"}
    assert depths == {0, 1}
    child_steps = [e.output for e in result.trajectory if e.kind == "step_finished" and e.depth == 1]
    assert any("protocol" in out for out in child_steps), child_steps


def test_threads_calling_llm_query_at_once_each_get_their_reply(server: ScriptedServer) -> None:
    code = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor(8) as pool:\n"
        "    replies = list(pool.map(llm_query, [str(i) for i in range(40)]))\n"
        "print(replies == ['ok'] * 40)"  # what the scripted sub-model answers
    )
    result = attacker(server, code).completion("doc", "q")
    assert result.ok, result.error
    assert outputs(result) == ["True\n"]


@contextmanager
def peak_rss() -> Iterator[list[int]]:
    """This process's largest resident size while the block runs, sampled every 5 ms."""
    page = os.sysconf("SC_PAGE_SIZE")
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            with open("/proc/self/statm") as f:
                peak[0] = max(peak[0], int(f.read().split()[1]) * page)
            time.sleep(0.005)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        done.set()
        thread.join()


FLOOD = """
import gc, threading, ipykernel.iostream
from ipykernel.kernelbase import Kernel
kernel = Kernel.instance()
stream = next(o for o in gc.get_objects() if isinstance(o, ipykernel.iostream.OutStream))
parent = kernel.get_parent("shell")

def flood():
    chunk = "x" * 1_000_000
    for _ in range(1200):  # 1.2 GB through ipykernel's own stream, after the step has ended
        stream.write(chunk)
    big = "y" * 40_000_000
    for _ in range(20):  # 800 MB more as messages of 40 MB, signed with the kernel's key
        kernel.session.send(kernel.iopub_socket, "stream", {"name": "stdout", "text": big}, parent=parent)

threading.Thread(target=flood, daemon=True).start()
print("flooding")
"""


FLOOD_STDIN = """
from ipykernel.kernelbase import Kernel
kernel = Kernel.instance()
parent, ident = kernel.get_parent("shell"), kernel._parent_ident["shell"]
request = {"prompt": "\\x1frlm:" + "z" * 4_000_000, "password": False}
for _ in range(100):  # 400 MB of requests the host never asked for, each as large as the channel takes
    kernel.session.send(kernel.stdin_socket, "input_request", request, parent=parent, ident=ident)
print("flooded")
"""


@pytest.mark.parametrize("flood", [FLOOD, FLOOD_STDIN], ids=["output", "requests"])
def test_the_hosts_memory_stays_bounded_whatever_the_kernel_sends(server: ScriptedServer, flood: str) -> None:
    warm = attacker(server, "print('warm up')")
    assert warm.completion("doc", "q").ok
    output_cap = 1_000_000
    rlm = attacker(
        server,
        flood,
        "import time\ntime.sleep(8)\nprint('slept')",
        "print('after')",
        executor_kwargs={"output_cap": output_cap},
    )
    baseline = int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    with peak_rss() as peak:
        result = rlm.completion("doc", "q")
    assert result.ok, result.error
    assert peak[0] <= 1.25 * baseline + output_cap, (peak[0] >> 20, baseline >> 20)
    assert all(len(out) <= output_cap + 1000 for out in outputs(result))
    assert "slept" in outputs(result)[1]  # a new kernel where the flood broke the protocol


def test_a_request_too_large_for_the_bridge_is_a_clear_error_in_the_code(server: ScriptedServer) -> None:
    """A request larger than the bridge carries (one prompt of 70 MB) is refused before it is sent;
    the code sees a clear error, and the run goes on."""
    code = (
        "try:\n    llm_query('z' * 70_000_000)\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n"
        "print(llm_query('small'))"
    )
    result = attacker(server, code).completion("doc", "q")
    assert result.ok, result.error
    out = outputs(result)[0]
    assert "too large" in out and out.endswith("ok\n"), out[:300]
