"""One executor suite over ``local``, ``kernel`` (a real ipykernel through jupyter_client) and
``gateway`` (a real Jupyter Kernel Gateway on 127.0.0.1): the same scripted runs give the same
answers and events, steps that never end are ended, and in the kernel executors the code cannot
read a key."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from gateway_server import KernelGateway
from scripted_server import Reply, Request, Script, ScriptedServer
from waiting import wait_until

from rlm_kernel import RLM
from rlm_kernel.errors import ConfigError
from rlm_kernel.executors import kernel as kernel_module
from rlm_kernel.executors import session as session_module
from rlm_kernel.executors.bridge_session import Phase
from rlm_kernel.executors.gateway import GatewayExecutor
from rlm_kernel.executors.kernel import RESTARTED, KernelExecutor
from rlm_kernel.executors.local import STOPPED

pytestmark = pytest.mark.timeout(180)

KINDS = [
    "local",
    pytest.param("kernel", marks=pytest.mark.sandbox),
    pytest.param("gateway", marks=pytest.mark.sandbox),
]
CONFIG_KEY = "sk-live-config-0123456789abcdef"
ENV_KEY = "sk-live-environ-0123456789abcdef"


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def gateway() -> Iterator[KernelGateway]:
    with KernelGateway() as gw:
        yield gw


def executor_settings(kind: str, gateway: KernelGateway | None, **kwargs: Any) -> dict[str, Any]:
    if kind == "gateway":
        assert gateway is not None
        kwargs.update(url=gateway.url, auth_token=gateway.token)
    return {"executor": kind, "executor_kwargs": kwargs} if kind != "local" else {"executor": "local"}


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def settings(kind: str, request: pytest.FixtureRequest) -> dict[str, Any]:
    gw = request.getfixturevalue("gateway") if kind == "gateway" else None
    return executor_settings(kind, gw)


def make_rlm(server: ScriptedServer, **settings: Any) -> RLM:
    return RLM(
        "openai",
        {
            "model_name": "gpt-4o-mini",
            "base_url": server.openai_base_url,
            "api_key": CONFIG_KEY,
            "max_retries": 0,
        },
        log_dir=False,
        **settings,
    )


def outputs(result: Any, depth: int = 0) -> list[str]:
    return [e.output for e in result.trajectory if e.kind == "step_finished" and e.depth == depth]


def test_a_run_with_sub_calls_and_a_child_gives_the_same_answer(
    server: ScriptedServer, settings: dict
) -> None:
    def sub(request: Request) -> Reply:
        return Reply(status=500) if "fail" in request.last_user else Reply(text="got " + request.last_user)

    server.responder = Script(
        root=[
            "```repl\nparts = [context[:10], context[10:]]\nprint(llm_query_batched(['a', 'fail', 'b']))\n```",
            "```repl\nr = rlm_query('how long?', parts[1])\nprint(r)\n```",
            "```repl\nprint(type(context).__name__, len(context))\nFINAL(len(context))\n```",
            "```repl\nanswer['content'] = r + '!'\nanswer['ready'] = True\n```",
        ],
        sub=sub,
    )
    result = make_rlm(server, max_depth=2, **settings).completion("0123456789" + "x" * 15, "q")
    assert result.ok, result.error
    assert result.response == "15!"
    first = outputs(result)[0]
    assert first.startswith("['got a', '[llm_query error]") and first.endswith("'got b']\n")
    assert outputs(result, depth=1) == ["str 15\n"]
    ended = [e for e in result.trajectory if e.kind == "run_ended"]
    assert [e.depth for e in ended] == [1, 0]


def test_state_lasts_between_steps_and_reserved_names_come_back(
    server: ScriptedServer, settings: dict
) -> None:
    server.responder = Script(
        root=[
            "```repl\ny = 3\ncontext = 'gone'\nllm_query = None\n```",
            "```repl\nprint(len(context), y, llm_query('hi'))\n```",
            "FINAL(done)",
        ],
        sub="hello",
    )
    result = make_rlm(server, **settings).completion("abcdef", "q")
    assert result.response == "done"
    assert outputs(result)[1] == "6 3 hello\n"
    finished = [e for e in result.trajectory if e.kind == "step_finished"]
    assert set(finished[0].restored) == {"context", "llm_query"}


def test_a_step_that_never_ends_is_ended_by_max_timeout(server: ScriptedServer, settings: dict) -> None:
    server.responder = Script(root=["```repl\nx = 1\nwhile True:\n    x += 1\n```"])
    result = make_rlm(server, max_timeout=3, **settings).completion("abc", "q")
    assert not result.ok
    assert "max_timeout" in (result.error or "")
    assert result.trajectory[-1].kind == "run_ended"


def test_cancel_ends_a_busy_step(server: ScriptedServer, settings: dict) -> None:
    server.responder = Script(root=["```repl\nprint('started', flush=True)\nwhile True:\n    pass\n```"])
    rlm = make_rlm(server, **settings)
    started = threading.Event()

    def watch(event: Any) -> None:
        if event.kind == "step_started":
            started.set()

    def cancel_when_started() -> None:
        started.wait(60)
        rlm.cancel()

    threading.Thread(target=cancel_when_started, daemon=True).start()
    result = rlm.completion("abc", "q", subscribers=(watch,))
    assert not result.ok
    assert "cancel" in (result.error or "").lower()


# -- the kernel executors: what they keep from the code -----------------------------------------
SNOOP = """
import gc, os
needle = 'sk-' + 'live'
seen = []
seen.append(os.environ.get('OPENAI_API_KEY', 'no key in the environment'))
seen.extend(v for v in os.environ.values() if needle in v)
try:
    seen.append(needle in open(f'/proc/{os.getppid()}/environ', 'rb').read().decode('latin-1'))
except OSError as exc:
    seen.append(type(exc).__name__)
def strings(o, depth=0, out=None):
    out = [] if out is None else out
    if depth > 4:
        return out
    if isinstance(o, str):
        out.append(o)
    elif isinstance(o, dict):
        for v in o.values():
            strings(v, depth + 1, out)
    elif isinstance(o, (list, tuple, set)):
        for v in o:
            strings(v, depth + 1, out)
    else:
        for name in ('__self__', '__dict__', '__closure__', '__globals__'):
            strings(getattr(o, name, None), depth + 1, out)
    return out
reachable = strings([llm_query, llm_query_batched, rlm_query, FINAL, globals()])
reachable += [s for o in gc.get_objects() if isinstance(o, dict) for s in o.values() if isinstance(s, str)]
seen.append(sum(needle in s and s != needle for s in reachable))
print(seen)
"""


@pytest.mark.sandbox
@pytest.mark.parametrize("kernel_kind", ["kernel", "gateway"])
def test_the_code_cannot_read_a_key(
    server: ScriptedServer, kernel_kind: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    gw = request.getfixturevalue("gateway") if kernel_kind == "gateway" else None
    server.responder = Script(root=[f"```repl\n{SNOOP}\n```", "FINAL(done)"])
    result = make_rlm(server, **executor_settings(kernel_kind, gw)).completion("abc", "q")
    (output, *_) = outputs(result)
    assert "[redacted]" not in output and "sk-live" not in output  # nothing to redact: nothing read
    # The kernel's parent is its sandbox's first process, which lets nothing read its environment.
    assert output == "['no key in the environment', 'PermissionError', 0]\n"


# -- the kernel executors, one at a time --------------------------------------------------------
class Echo:
    """Sub-calls answered here, so these tests are about the kernel alone."""

    def llm_query(self, prompt: str, model: str | None = None) -> str:
        return "echo " + prompt

    def llm_query_batched(self, prompts: list[str], model: str | None = None) -> list[str]:
        return ["echo " + p for p in prompts]

    def rlm_query_batched(self, prompts: list[str], contexts: Any = None) -> list[str]:
        return ["child " + p for p in prompts]

    def ask_batched(self, conversations: list[Any], max_tokens: int | None = None) -> list[str]:
        return ["label" for _ in conversations]


@pytest.fixture(
    params=[
        pytest.param("kernel", marks=pytest.mark.sandbox),
        pytest.param("gateway", marks=pytest.mark.sandbox),
    ]
)
def make_executor(request: pytest.FixtureRequest) -> Iterator[Any]:
    made: list[KernelExecutor] = []

    def make(**kwargs: Any) -> KernelExecutor:
        if request.param == "gateway":
            gw = request.getfixturevalue("gateway")
            executor: KernelExecutor = GatewayExecutor(url=gw.url, auth_token=gw.token, **kwargs)
        else:
            executor = KernelExecutor(**kwargs)
        made.append(executor)
        return executor

    yield make
    for executor in made:
        executor.close()


def run(executor: KernelExecutor, code: str) -> Any:
    return executor.execute(code, step=1).result


@pytest.mark.parametrize(
    ("context", "check"),
    [
        ("plain text " * 20_000, "type(context).__name__, len(context)"),
        (b"\x00\xffbytes" * 1000, "type(context).__name__, len(context)"),
        ([{"id": 1, "text": "a"}, {"id": 2, "text": "b"}], "type(context).__name__, context[1]['text']"),
        ("surrogate \udcff kept", "type(context).__name__, len(context)"),
        ("café " * 30_000, "type(context).__name__, len(context)"),
        ("dash \u2014 and \udcff " * 10_000, "type(context).__name__, len(context)"),
        ("smile \U0001f600 " * 20_000, "type(context).__name__, len(context)"),
    ],
    ids=["str", "bytes", "records", "surrogate", "latin-1", "two-byte", "four-byte"],
)
def test_contexts_of_every_kind_arrive_whole(make_executor: Any, context: Any, check: str) -> None:
    executor = make_executor()
    executor.bind(context, Echo(), None)
    expected = (type(context).__name__, context[1]["text"] if isinstance(context, list) else len(context))
    assert run(executor, check).value == repr(expected)
    if isinstance(context, str):  # every character arrived: the kernel's digest is the host's
        digest = "import hashlib\nhashlib.sha256(context.encode('utf-8', 'surrogatepass')).hexdigest()"
        assert run(executor, digest).value == repr(
            hashlib.sha256(context.encode("utf-8", "surrogatepass")).hexdigest()
        )


def test_a_context_that_cannot_cross_is_a_clear_error(make_executor: Any) -> None:
    executor = make_executor()
    with pytest.raises(ConfigError, match="cannot be sent to a kernel"):
        executor.bind({"f": lambda x: x}, Echo(), None)


def test_sub_calls_cross_the_stdin_channel(make_executor: Any) -> None:
    executor = make_executor()
    executor.bind("ctx", Echo(), None)
    result = run(executor, "print(llm_query('a'))\nllm_query_batched([str(i) for i in range(64)])[-1]")
    assert result.stdout == "echo a\n" and result.value == "'echo 63'"
    assert "llm_query_batched takes a list" in run(executor, "llm_query_batched('one string')").error


def test_the_kernel_has_limits(make_executor: Any) -> None:
    executor = make_executor(memory_mb=1024, output_cap=10_000, max_subcalls=5)
    executor.bind("ctx", Echo(), None)
    assert "MemoryError" in run(executor, "big = bytearray(4 << 30)").error
    result = run(executor, "print('x' * 30_000_000)")  # cut inside the kernel, not after the wire
    assert len(result.stdout) < 11_000 and "characters cut" in result.stdout
    assert "limit of 5 sub-calls" in run(executor, "llm_query_batched(['a'] * 6)").error
    assert "EOFError" in run(executor, "input('who are you?')").error
    assert run(executor, "import os; os.getcwd()").value == "'/tmp'"  # the sandbox's own


def test_output_of_threads_and_subprocesses_reaches_the_root(make_executor: Any) -> None:
    executor = make_executor()
    executor.bind("ctx", Echo(), None)
    result = run(
        executor,
        "import subprocess, sys, threading\n"
        "t = threading.Thread(target=lambda: print('from a thread'))\nt.start()\nt.join()\n"
        "subprocess.run([sys.executable, '-c', 'print(\"from a subprocess\")'])\n"
        "sys.stdout.flush()",
    )
    assert "from a thread" in result.stdout and "from a subprocess" in result.stdout


def test_an_idle_kernel_leaves_its_serve_cell_and_the_next_step_starts_it(
    make_executor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_module, "PARK_AFTER_S", 0.2)
    executor = make_executor()
    executor.bind("ctx", Echo(), None)
    run(executor, "y = 1")
    assert wait_until(lambda: executor.session.machine.phase is Phase.PARKED, timeout=30)
    assert run(executor, "y + 1").value == "2"


def test_a_step_timeout_interrupts_and_the_state_stays(make_executor: Any) -> None:
    executor = make_executor(step_timeout=1)
    executor.bind("ctx", Echo(), None)
    assert run(executor, "y = 7\nwhile True:\n    pass").error == STOPPED
    assert run(executor, "y").value == "7"
    assert run(executor, "import time\ntime.sleep(60)").error == STOPPED


def test_a_step_that_ignores_interrupts_gets_a_new_kernel(make_executor: Any) -> None:
    executor = make_executor(step_timeout=1, interrupt_grace_s=1)
    executor.bind("the context", Echo(), None)
    run(executor, "y = 7")
    stuck = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
    assert run(executor, stuck).error == RESTARTED
    assert "NameError" in run(executor, "y").error
    assert run(executor, "context, llm_query('again')").value == "('the context', 'echo again')"


@pytest.mark.sandbox
def test_twenty_gateway_repls_at_once(gateway: KernelGateway) -> None:
    """Twenty kernels of one gateway, each with bridged batches, an interrupt and (for some) a
    restart, all at the same time."""
    errors: list[BaseException] = []

    def one(i: int) -> None:
        executor = GatewayExecutor(
            url=gateway.url, auth_token=gateway.token, step_timeout=2, interrupt_grace_s=8, warm=0
        )
        try:
            executor.bind(f"context {i}", Echo(), None)
            assert run(executor, "llm_query_batched([context] * 8)[-1]").value == repr(f"echo context {i}")
            assert run(executor, "n = 1\nwhile True:\n    n += 1").error == STOPPED
            assert int(run(executor, "n").value) > 1
            if i % 5 == 0:
                stuck = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
                assert run(executor, stuck).error == RESTARTED
                assert "NameError" in run(executor, "n").error
            assert run(executor, "llm_query(context)").value == repr(f"echo context {i}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            executor.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(170)
    assert not errors, errors[0]


@pytest.mark.sandbox
def test_executor_settings_are_checked_at_rlm(server: ScriptedServer) -> None:
    with pytest.raises(ConfigError, match="Unknown executor 'docker'"):
        make_rlm(server, executor="docker")
    with pytest.raises(ConfigError, match="Unknown executor_kwargs key 'memory'"):
        make_rlm(server, executor="kernel", executor_kwargs={"memory": 1})
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_GATEWAY_URL"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "environ", env)
        with pytest.raises(ConfigError, match="needs a url"):
            make_rlm(server, executor="gateway")
    with pytest.raises(ConfigError, match="namespace= is for the local executor"):
        make_rlm(server, executor="kernel").completion("abc", "q", namespace={})


def test_where_no_sandbox_can_be_made_the_kernel_executor_says_what_to_install(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlm_kernel.executors import sandbox

    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)  # no bubblewrap on this machine
    sandbox.problem.cache_clear()
    try:
        with pytest.raises(ConfigError, match="apt install bubblewrap") as refused:
            make_rlm(server, executor="kernel")
        assert "\n" not in str(refused.value) and "'isolation': 'none'" in str(refused.value)
        make_rlm(server, executor="kernel", executor_kwargs={"isolation": "none"})  # a choice made
    finally:
        sandbox.problem.cache_clear()


def test_kernels_start_again_after_every_kernel_of_the_process_was_shut_down(server: ScriptedServer) -> None:
    """After close_all (the process's shutdown path), a warm pool must not hand out a closed kernel."""
    server.responder = Script(root=["```repl\nprint(len(context))\n```", "FINAL(200000)"])
    context = "x" * 200_000  # large enough to travel as a file in the kernel's folder
    assert make_rlm(server, executor="kernel").completion(context, "q").ok
    kernel_module.close_all()
    server.responder = Script(root=["```repl\nprint(len(context))\n```", "FINAL(200000)"])
    result = make_rlm(server, executor="kernel").completion(context, "q")
    assert result.ok, result.error
    assert outputs(result) == ["200000\n"]
