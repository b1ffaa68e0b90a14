"""Tools for the REPL and tools only sub-calls may call: through the real OpenAI and Anthropic
SDKs against the scripted server, in this process and in a sandboxed kernel, and with the real
local model's tool calling through llama.cpp."""

from __future__ import annotations

import os

import pytest
from scripted_server import Reply, Script

from rlm_kernel import RLM
from rlm_kernel.errors import ConfigError
from rlm_kernel.events import SubcallFinished, SubcallStarted, ToolCalled
from rlm_kernel.subcall_tools import LAST_ROUND

KEY = "sk-test-SECRET-KEY-123"
FILES = {"a.txt": "The launch is on 12 May.", "b.txt": "Budget: 40,000 euros. " * 200}


def make_rlm(server, api="openai", **kw):
    if api == "openai":
        kwargs = {"model_name": "gpt-4o-mini", "base_url": server.openai_base_url}
    else:
        kwargs = {"model_name": "claude-haiku-4-5", "base_url": server.anthropic_base_url}
    return RLM(api, {**kwargs, "api_key": KEY, "max_retries": 0}, log_dir=False, **kw)


def repl(code: str) -> str:
    return f"Next.\n```repl\n{code}\n```"


def list_files(prefix: str = "") -> list[str]:
    """The names of the files, those starting with ``prefix``.

    Args:
        prefix: only names that start with it
    """
    return sorted(n for n in FILES if n.startswith(prefix))


def open_file(name: str, start: int = 0) -> str:
    """A file's text, from character ``start``.

    Args:
        name: the file's name, as list_files gives it
        start: the first character to read
    """
    return FILES[name][start:]


def test_repl_tools_are_listed_bound_recorded_and_reserved(scripted_server):
    scripted_server.responder = Script(
        root=[
            repl("names = list_files()\nprint(names)\nlist_files = None"),
            repl("print(list_files('a'))\nopen_file('nope.txt')"),
            repl("FINAL(str(len(names)))"),
        ]
    )
    result = make_rlm(scripted_server, tools={"list_files": list_files, "open_file": open_file}).completion(
        "ctx", "How many files?"
    )
    assert result.response == "2", result.error
    system = scripted_server.requests[0].system
    assert "- `list_files(prefix: str = '') -> list[str]`: The names of the files" in system
    assert "- `open_file(name: str, start: int = 0) -> str`: A file's text" in system
    calls = [e for e in result.trajectory if isinstance(e, ToolCalled)]
    assert [(c.tool, c.call_id, c.step, c.error) for c in calls] == [
        ("list_files", None, 1, None),
        ("list_files", None, 2, None),  # put back after step 1 replaced it, as llm_query would be
        ("open_file", None, 2, "KeyError: 'nope.txt'"),
    ]
    assert (
        calls[0].result_preview == '["a.txt", "b.txt"]'
        and calls[1].arguments == '{"args": ["a"], "kwargs": {}}'
    )
    assert "Reserved names were put back after your code replaced them: list_files" in (
        scripted_server.requests[1].last_user
    )
    assert "KeyError: 'nope.txt'" in scripted_server.requests[2].last_user  # the code saw the error


def reader(request) -> Reply:
    """The sub-model: asks for the files it needs, then answers from what the tools gave."""
    if not request.tool_results:
        return Reply(tool_calls=[("list_files", {}), ("open_file", {"name": "a.txt"})])
    if len(request.tool_results) == 2:
        return Reply(tool_calls=[("open_file", {"name": "b.txt", "start": 8})])
    return Reply(
        text=f"launch {request.tool_results[1].split(' on ')[1]} / {len(request.tool_results[2])} chars"
    )


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_sub_tools_run_the_providers_tool_loop_and_only_the_text_returns(scripted_server, api):
    scripted_server.responder = Script(
        root=[repl("r = llm_query('When is the launch?')\nprint(r)"), repl("FINAL(r)")], sub=reader
    )
    result = make_rlm(scripted_server, api, sub_tools=[list_files, open_file]).completion("ctx", "When?")
    assert result.response == f"launch 12 May. / {len(FILES['b.txt']) - 8} chars", result.error

    subs = [r for r in scripted_server.requests if not r.is_root]
    assert len(subs) == 3 and all(r.tools == ["list_files", "open_file"] for r in subs)
    roots = [r for r in scripted_server.requests if r.is_root]
    assert "The sub-calls (`llm_query`) can call these tools themselves" in roots[0].system
    assert "Budget" not in roots[1].last_user  # a tool's output never reaches the root
    started = next(e for e in result.trajectory if isinstance(e, SubcallStarted))
    calls = [e for e in result.trajectory if isinstance(e, ToolCalled)]
    assert [(c.tool, c.call_id) for c in calls] == [
        ("list_files", started.call_id),
        ("open_file", started.call_id),
        ("open_file", started.call_id),
    ]
    assert (
        calls[2].result_chars == len(FILES["b.txt"]) - 8
        and calls[2].arguments == '{"name": "b.txt", "start": 8}'
    )
    finished = next(e for e in result.trajectory if isinstance(e, SubcallFinished))
    assert finished.input_tokens == sum(len(r.text) // 4 + 1 for r in subs)  # every round counted


def test_a_sub_tools_failure_is_its_result_and_the_rounds_are_bounded(scripted_server):
    def stubborn(request) -> Reply:
        if LAST_ROUND in request.last_user:
            return Reply(text=f"gave up after {len(request.tool_results)} results")
        n = len(request.tool_results)  # other arguments each round: new work, not a loop
        return Reply(
            tool_calls=[("open_file", {"name": f"missing{n}.txt"}), ("delete_all", {}), ("open_file", {})]
        )

    scripted_server.responder = Script(root=[repl("FINAL(llm_query('read it'))")], sub=stubborn)
    result = make_rlm(scripted_server, sub_tools=[open_file], max_tool_rounds=2).completion("ctx", "?")
    assert result.response == "gave up after 6 results", result.error
    errors = [e.error for e in result.trajectory if isinstance(e, ToolCalled)]
    assert len(errors) == 6 and errors[:2] == ["KeyError: 'missing0.txt'", "no tool named 'delete_all'"]
    assert errors[2].startswith("ValidationError: 1 validation error")
    last = [r for r in scripted_server.requests if not r.is_root][-1]
    assert last.tool_results[0] == "[tool error] KeyError: 'missing0.txt'"


def test_a_model_asking_for_the_same_calls_again_is_told_their_results(scripted_server):
    def looping(request) -> Reply:
        if "You already called these tools" in request.last_user:
            return Reply(text="the launch is on 12 May")
        return Reply(tool_calls=[("open_file", {"name": "a.txt"})])

    scripted_server.responder = Script(root=[repl("FINAL(llm_query('when?'))")], sub=looping)
    result = make_rlm(scripted_server, sub_tools=[open_file]).completion("ctx", "?")
    assert result.response == "the launch is on 12 May", result.error
    assert len([e for e in result.trajectory if isinstance(e, ToolCalled)]) == 1  # run once, not again
    last = [r for r in scripted_server.requests if not r.is_root][-1]
    assert '- open_file({"name": "a.txt"}) gave: The launch is on 12 May.' in last.last_user


def test_tips_are_appended_to_the_roots_prompt(scripted_server):
    scripted_server.responder = Script(root=[repl("FINAL('ok')")])
    tips = "Decompose the task, dispatch the pieces with llm_query_batched, then synthesize."
    make_rlm(scripted_server, tips=tips).completion("ctx", "?")
    assert scripted_server.requests[0].system.endswith(tips)


def test_tool_mistakes_are_one_line_config_errors():
    with pytest.raises(ConfigError, match="A tool cannot be named 'context'"):
        RLM("openai", {"api_key": KEY}, tools={"context": list_files})
    with pytest.raises(ConfigError, match="A tool must be a function, not int"):
        RLM("openai", {"api_key": KEY}, tools={"x": 3})
    with pytest.raises(ConfigError, match="Two tools are named 'open_file'"):
        RLM("openai", {"api_key": KEY}, sub_tools=[open_file, open_file])


def where(_: str = "") -> int:
    """The process the tool runs in."""
    return os.getpid()


@pytest.mark.sandbox
def test_with_a_kernel_executor_tools_run_on_the_host(scripted_server):
    scripted_server.responder = Script(
        root=[
            repl("import os\nprint(where() == os.getpid(), where() == " + str(os.getpid()) + ")"),
            repl("FINAL('x')"),
        ]
    )
    result = make_rlm(scripted_server, tools=[where], executor="kernel").completion("ctx", "?")
    assert result.ok, result.error
    assert "False True" in scripted_server.requests[1].last_user  # the kernel's code, the host's process
    assert [e.tool for e in result.trajectory if isinstance(e, ToolCalled)] == ["where", "where"]


# ------------------------------------------------------------------ the real local model


def temperature(city: str) -> str:
    """The temperature in a city right now.

    Args:
        city: the city's name
    """
    return "17 degrees C" if city.strip().lower() == "paris" else "unknown city"


@pytest.mark.local_model
def test_the_local_model_calls_a_sub_tool_through_llama_cpp(scripted_server):
    scripted_server.responder = Script(
        root=[
            repl("r = llm_query('What is the temperature in Paris right now? Use the tool.')\nprint(r)"),
            repl("FINAL(r)"),
        ]
    )
    rlm = RLM(
        "openai",
        {
            "model_name": "gpt-4o-mini",
            "base_url": scripted_server.openai_base_url,
            "api_key": KEY,
            "max_retries": 0,
        },
        sub_backend="local",
        sub_backend_kwargs={},
        sub_tools=[temperature],
        log_dir=False,
    )
    result = rlm.completion("ctx", "How warm is Paris?")
    calls = [e for e in result.trajectory if isinstance(e, ToolCalled)]
    assert calls and calls[0].tool == "temperature" and calls[0].error is None
    assert "paris" in calls[0].arguments.lower()
    assert "17" in (result.response or ""), result.response
