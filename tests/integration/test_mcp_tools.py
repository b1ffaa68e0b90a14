"""MCP servers as tools, for real: the SDK's own server (tests/fixtures/mcp_notes_server.py) over
stdio, as this process's child, and over streamable HTTP on a port of 127.0.0.1, with the real OpenAI
SDK talking to the scripted server for the root and the sub-model."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from scripted_server import Reply, Script

from rlm_kernel import RLM
from rlm_kernel.errors import ConfigError
from rlm_kernel.events import SubcallStarted, ToolCalled
from rlm_kernel.mcp_tools import MCPTool, _signature
from rlm_kernel.runtime import default_runtime
from rlm_kernel.tools import MCPServer, tools_of

SERVER = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_notes_server.py")
TOKEN = "notes-token-7f3a9c2e5b1d"  # the HTTP server's bearer token, and the stdio server's secret env
KEY = "sk-test-SECRET-KEY-123"


def make_rlm(server, **kw):
    kwargs = {
        "model_name": "gpt-4o-mini",
        "base_url": server.openai_base_url,
        "api_key": KEY,
        "max_retries": 0,
    }
    return RLM("openai", kwargs, **{"log_dir": False, **kw})


def repl(code: str) -> str:
    return f"Next.\n```repl\n{code}\n```"


def children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def gone(pid: int) -> bool:
    """Whether the process has ended and been reaped (no zombie left either)."""
    return not psutil.pid_exists(pid)


@pytest.fixture(scope="module")
def notes_stdio() -> Iterator[MCPServer]:
    with MCPServer.stdio(sys.executable, [SERVER], env={"NOTES_TOKEN": TOKEN}) as server:
        yield server


@pytest.fixture(scope="module")
def notes_http() -> Iterator[str]:
    """The notes server over streamable HTTP, on a socket this test listens on before the server
    starts: a request made before it is ready waits in the socket's backlog, so nothing waits here."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, SERVER, "--fd", str(listener.fileno())],
        pass_fds=[listener.fileno()],
        env={**os.environ, "NOTES_TOKEN": TOKEN},
    )
    listener.close()
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


def py_length(text: str) -> int:
    """A Python tool beside the server's: the length of ``text``."""
    return len(text)


def test_the_roots_code_calls_mcp_tools_listed_like_functions(scripted_server, notes_stdio):
    scripted_server.responder = Script(
        root=[
            repl(
                "names = list_notes()\nprint(names, read_note('launch', start=4), word_count('a b c'), "
                "py_length('abcd'), server_pid())"
            ),
            repl("read_note('nope')"),
            repl("FINAL(str(token_length()))"),
        ]
    )
    rlm = make_rlm(scripted_server, tools=[notes_stdio, py_length])
    result = rlm.completion("ctx", "What notes are there?")
    assert result.response == str(len(TOKEN)), result.error  # the env reached the server

    system = scripted_server.requests[0].system
    assert "- `list_notes(prefix: str = '') -> list[str]`: The names of the notes, those starting" in system
    assert "- `read_note(name: str, start: int = 0) -> str`: A note's text, from character" in system
    assert "- `word_count(text: str) -> int`: How many words" in system  # "word-count" on the server
    assert "- `py_length(text: str) -> int`: A Python tool beside the server's" in system
    output = scripted_server.requests[1].last_user
    assert "['budget', 'launch'] launch is on 12 May. 3 4 " in output  # structured results as Python values
    server_pid = int(output.split("4 ", 1)[1].split()[0])
    assert server_pid != os.getpid() and server_pid in children()  # it ran in the server's process
    assert "MCPToolError: Error executing tool read_note: no note named 'nope'" in (
        scripted_server.requests[2].last_user
    )

    calls = [e for e in result.trajectory if isinstance(e, ToolCalled)]
    assert [(c.tool, c.call_id, c.step, c.error) for c in calls] == [
        ("list_notes", None, 1, None),
        ("read_note", None, 1, None),
        ("word_count", None, 1, None),
        ("py_length", None, 1, None),
        ("server_pid", None, 1, None),
        ("read_note", None, 2, "MCPToolError: Error executing tool read_note: no note named 'nope'"),
        ("token_length", None, 3, None),
    ]
    assert calls[0].result_preview == '["budget", "launch"]'
    assert calls[1].arguments == '{"args": ["launch"], "kwargs": {"start": 4}}'
    assert rlm.config.public()["tools"]["read_note"] == "read_note(name: str, start: int = 0) -> str"


def test_with_a_kernel_executor_mcp_tools_run_on_the_host(scripted_server, notes_stdio):
    """The kernel's code calls the tool through the bridge; the host's session with the server runs it."""
    scripted_server.responder = Script(
        root=[
            repl("import os\nhelp(read_note)\nprint('pid', os.getpid(), read_note('launch'))"),
            repl("FINAL(read_note('launch'))"),
        ]
    )
    rlm = make_rlm(
        scripted_server, tools=[notes_stdio], executor="kernel", executor_kwargs={"isolation": "none"}
    )
    result = rlm.completion("ctx", "When is the launch?")
    assert result.response == "The launch is on 12 May.", result.error
    output = scripted_server.requests[1].last_user
    kernel_pid = re.search(r"pid (\d+) The launch is on 12 May\.", output)
    assert kernel_pid and int(kernel_pid[1]) != os.getpid()  # the code ran in the kernel, the tool here
    assert "read_note(name: str, start: int = 0) -> str" in output  # the stub has the tool's signature
    assert [e.tool for e in result.trajectory if isinstance(e, ToolCalled)] == ["read_note", "read_note"]


def notes_reader(request) -> Reply:
    """The sub-model: lists the notes, reads one that is there and one that is not, then answers
    from what the tools gave."""
    if not request.tool_results:
        return Reply(
            tool_calls=[
                ("notes_list_notes", {}),
                ("notes_read_note", {"name": "launch"}),
                ("notes_read_note", {"name": "nope"}),
            ]
        )
    listed, launch, missing = request.tool_results  # a list comes as the server's text: one line an item
    return Reply(text=f"{listed.split()} / {launch} / {missing}")


def test_sub_calls_call_an_http_servers_tools_through_the_tool_loop(scripted_server, notes_http, caplog):
    caplog.set_level(logging.DEBUG)
    server = MCPServer.streamable_http(notes_http, headers={"Authorization": f"Bearer {TOKEN}"})
    with server:
        scripted_server.responder = Script(
            root=[repl("r = llm_query('When is the launch?')\nprint(r)"), repl("FINAL(r)")], sub=notes_reader
        )
        rlm = make_rlm(scripted_server, sub_tools={"notes": server})
        result = rlm.completion("ctx", "When?")
    assert result.response == (
        "['budget', 'launch'] / The launch is on 12 May. / "
        "[tool error] MCPToolError: Error executing tool read_note: no note named 'nope'"
    ), result.error

    subs = [r for r in scripted_server.requests if not r.is_root]
    offered = ["notes_list_notes", "notes_read_note", "notes_word_count", "notes_server_pid"]
    assert all(r.tools == [*offered, "notes_token_length"] for r in subs)
    declared = next(t for t in subs[0].body["tools"] if t["function"]["name"] == "notes_read_note")
    assert declared["function"]["parameters"]["required"] == ["name"]
    assert "- `notes_read_note`: A note's text" in scripted_server.requests[0].system
    started = next(e for e in result.trajectory if isinstance(e, SubcallStarted))
    calls = [e for e in result.trajectory if isinstance(e, ToolCalled)]
    assert [(c.tool, c.call_id, c.error) for c in calls] == [
        ("notes_list_notes", started.call_id, None),
        ("notes_read_note", started.call_id, None),
        (
            "notes_read_note",
            started.call_id,
            "MCPToolError: Error executing tool read_note: no note named 'nope'",
        ),
    ]
    assert (
        calls[1].result_preview == "The launch is on 12 May." and calls[1].arguments == '{"name": "launch"}'
    )
    # The bearer token went to the server only: not in the config, the events, the logs or the repr.
    assert TOKEN not in json.dumps(rlm.config.public(), default=str) + repr(server) + repr(rlm.config)
    assert TOKEN not in repr(result.trajectory) and TOKEN not in caplog.text


def test_no_secret_reaches_the_trajectory_file(scripted_server, notes_stdio, tmp_path):
    scripted_server.responder = Script(
        root=[repl("n = secret_token_length()\nprint(n)"), repl("FINAL(str(n))")]
    )
    result = make_rlm(scripted_server, tools={"secret": notes_stdio}, log_dir=tmp_path).completion("ctx", "?")
    assert result.response == str(len(TOKEN)), result.error
    text = result.log_path.read_text()
    assert "secret_token_length() -> int" in text and TOKEN not in text  # prefixed by its key in the dict
    assert [e.tool for e in result.trajectory if isinstance(e, ToolCalled)] == ["secret_token_length"]


def test_an_http_server_refusing_the_request_is_a_config_error(notes_http):
    with pytest.raises(ConfigError) as caught:
        RLM("openai", {"api_key": KEY}, tools=[MCPServer.streamable_http(notes_http)])
    message = str(caught.value)
    assert (
        message.startswith(f"MCP server {notes_http} did not start: ")
        and "(it said: HTTP 401 Unauthorized); check the URL and headers." in message
    )
    assert "\n" not in message


def test_a_server_that_cannot_start_is_a_one_line_config_error():
    before = children()
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    cases = [
        (
            MCPServer.stdio("no-such-mcp-server", ["--port", "1"]),
            "MCP server no-such-mcp-server --port 1 did not",
        ),
        (
            MCPServer.stdio(
                sys.executable,
                ["-c", "import sys; sys.exit('the config file is missing')"],
                env={"NOTES_TOKEN": TOKEN},
            ),
            "(it said: the config file is missing); check the command and its arguments.",
        ),
        (
            MCPServer.streamable_http(
                f"http://user:{TOKEN}@127.0.0.1:{port}/mcp?key={TOKEN}", headers={"X-Key": TOKEN}
            ),
            f"MCP server http://127.0.0.1:{port}/mcp did not start: ConnectError",
        ),
        (
            MCPServer.stdio(sys.executable, ["-c", "import sys; sys.stdin.read()"], timeout=1),
            "did not start within 1 s: check that it is an MCP server, or give it a longer timeout=",
        ),
    ]
    for server, expected in cases:
        with pytest.raises(ConfigError) as caught:
            RLM("openai", {"api_key": KEY}, sub_tools=[server])
        message = str(caught.value)
        assert expected in message and "\n" not in message and TOKEN not in message, message
    assert children() == before  # each one's process was stopped before its error was raised


def test_closing_a_server_stops_its_process_and_threads():
    assert default_runtime().loop.is_running()  # the runtime's own thread, started before the count
    before = set(threading.enumerate())
    server = MCPServer.stdio(sys.executable, [SERVER])
    tools = tools_of([server])
    assert all(isinstance(t, MCPTool) for t in tools.values())
    pid = tools["server_pid"].fn()
    assert pid in children()
    server.close()
    assert gone(pid)
    for thread in set(threading.enumerate()) - before:  # the SDK's, if any: they end with the session
        thread.join(timeout=10)
    assert set(threading.enumerate()) <= before
    assert tools["server_pid"].fn() != pid  # a later call starts it again
    server.close()


def test_the_server_is_stopped_when_the_process_exits():
    script = textwrap.dedent(
        f"""
        import sys
        from rlm_kernel.tools import MCPServer, tools_of
        tools = tools_of([MCPServer.stdio(sys.executable, [{SERVER!r}])])
        print(tools["server_pid"].fn(), flush=True)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert gone(int(done.stdout))  # stopped and reaped by the exiting process, not left to init


WRAPPED_LIST = {"properties": {"result": {"type": "array"}}, "required": ["result"]}


@pytest.mark.parametrize(
    ("schema", "output", "shown"),
    [
        (
            {
                "properties": {
                    "q": {"type": "string"},
                    "n": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                    "mode": {"enum": ["a", "b"], "default": "a"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["q"],
            },
            None,
            "(q: str, n: int | None = None, mode: Literal['a', 'b'] = 'a', tags: list[str] = None) -> str",
        ),
        (
            {"properties": {"file-path": {"type": "string"}}},
            {"properties": {"a": {}}},
            "(**arguments) -> dict",
        ),
        (
            {
                "properties": {"x": {"type": ["string", "number"]}, "y": {"type": "object"}, "z": {}},
                "required": ["z"],
            },
            WRAPPED_LIST,
            "(z: Any, x: str | float = None, y: dict = None) -> list",
        ),
    ],
)
def test_a_tools_signature_comes_from_its_json_schemas(schema, output, shown):
    """Required arguments first; a name Python cannot have makes the arguments keywords; the return
    type from the output schema (a wrapped value's own type), else text."""
    assert str(_signature(schema, output)) == shown


def test_the_magics_take_a_notebooks_server_by_name(shell, scripted_server, notes_stdio):
    scripted_server.responder = Script(
        root=[
            repl("print(list_notes())"),
            repl("answer['content'] = ', '.join(list_notes())\nanswer['ready'] = True"),
        ]
    )
    shell.user_ns.update(notes=notes_stdio, report="ctx", py_length=py_length)
    shell.run_cell("%%rlm -c report --tools notes,py_length --no-widget\nWhich notes are there?")
    assert shell.user_ns["_rlm"].response == "budget, launch", shell.user_ns["_rlm"].error
    system = scripted_server.requests[0].system
    assert (
        "- `list_notes(prefix: str = '') -> list[str]`" in system
        and "- `py_length(text: str) -> int`" in system
    )
