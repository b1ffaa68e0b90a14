"""The magics in an in-process IPython shell: loading, options, configuration, the namespace."""

from __future__ import annotations

import asyncio

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from scripted_server import Script, ScriptedServer

from rlm_kernel.jupyter.arguments import parse_line


def repl(code: str) -> str:
    return f"```repl\n{code}\n```"


def run(ip: InteractiveShell, cell: str):
    result = ip.run_cell(cell)
    return result


def test_load_and_unload_are_clean(shell: InteractiveShell) -> None:
    assert "rlm" in shell.magics_manager.magics["line"] and "rlm" in shell.magics_manager.magics["cell"]
    shell.run_line_magic("unload_ext", "rlm_kernel")
    assert "rlm" not in shell.magics_manager.magics["line"]
    assert "__rlm_magics__" not in shell.user_ns
    assert shell.transform_cell("%rlm doc q?\n") != "await __rlm_magics__.arun('doc q?')\n"
    shell.run_line_magic("load_ext", "rlm_kernel")
    assert shell.transform_cell("%rlm doc what is it?\n") == "await __rlm_magics__.arun('doc what is it?')\n"


def test_cell_magic_runs_in_the_users_namespace(
    shell: InteractiveShell, scripted_server: ScriptedServer
) -> None:
    scripted_server.responder = Script(
        root=[
            repl("words = context.split()\nprint(len(words))"),
            repl("FINAL(f'{len(words)} words about {len(context)} chars')"),
        ]
    )
    shell.user_ns.update(doc="one two three", topic="counting", context="user's own", llm_query=42)
    result = run(shell, "%%rlm -c doc -o res\nHow many words? The topic is {topic}.")
    assert result.success, result.error_in_exec
    assert shell.user_ns["res"].response == "3 words about 13 chars"
    assert shell.user_ns["words"] == ["one", "two", "three"]  # the root's variables stay
    assert shell.user_ns["context"] == "user's own" and shell.user_ns["llm_query"] == 42  # put back
    assert shell.user_ns["answer"]["content"] == "3 words about 13 chars"
    first = next(r for r in scripted_server.requests if r.is_root).last_user
    assert "The topic is counting." in first


def test_the_cell_magic_takes_a_bare_variable_as_its_context(
    shell: InteractiveShell, scripted_server: ScriptedServer
) -> None:
    """`%%rlm df`, as `%rlm df question`: no -c needed (it said "unrecognized arguments: df")."""
    scripted_server.responder = Script(root=[repl("FINAL(len(context))")] * 2)
    shell.user_ns["df"] = "abcd"
    result = run(shell, "%%rlm df\nHow long is it?")
    assert result.success, result.error_in_exec
    assert shell.user_ns["_rlm"].response == "4"
    result = run(shell, "%%rlm --max-iterations 2 df -o res\nHow long is it?")
    assert result.success, result.error_in_exec
    assert shell.user_ns["res"].response == "4"


def test_line_magic_and_a_follow_up_run(shell: InteractiveShell, scripted_server: ScriptedServer) -> None:
    scripted_server.responder = Script(
        root=[repl("total = len(context)\nFINAL(total)"), repl("FINAL(total * 2)")]
    )
    shell.user_ns["doc"] = "x" * 21
    assert run(shell, "%rlm doc How long is it?").success
    assert shell.user_ns["_rlm"].response == "21"
    shell.user_ns["total"] = 50  # the human changes a variable between runs
    assert run(shell, "r2 = %rlm doc Double the total you found?").success
    assert shell.user_ns["r2"].response == "100"


def test_the_sync_magic_behaves_like_the_awaited_one(
    shell: InteractiveShell, scripted_server: ScriptedServer
) -> None:
    scripted_server.responder = Script(root=[repl("FINAL(len(context))")])
    shell.user_ns["doc"] = "abc"
    result = shell.run_cell_magic("rlm", "-c doc -o direct", "q")
    assert result.response == "3" and shell.user_ns["direct"] is result
    scripted_server.responder = Script(root=[repl("FINAL(len(context))")])
    asyncio.run(shell.user_ns["__rlm_magics__"].arun("-c doc -o awaited", "q"))
    assert shell.user_ns["awaited"].response == "3"


@pytest.mark.parametrize(
    ("line", "cell", "words"),
    [
        ("missing what?", None, "No variable named 'missing'"),
        ("", None, "needs a variable and a question"),
        ("--max-depth two doc q", None, "invalid int value: 'two'"),
        ("--backend nope doc q", None, "invalid choice: 'nope'"),
        ("-o x", "q", "needs the variable holding the context"),
        ("hint", None, "no run is active"),
        ("--max-iteratons 3 doc q", None, "--max-iteratons; did you mean --max-iterations? (%rlm?"),
        ("-c doc --no-widgte --mdoe=step", "q", "did you mean --no-widget or --mode?"),
        ("--frobnicate doc q", None, "unrecognized arguments: --frobnicate (%rlm? lists the options)"),
        ("dco -o x", "q", "No variable named 'dco'"),
        ("doc -c other", "q", "%%rlm got two contexts, doc and -c other: give one."),
    ],
)
def test_user_mistakes_are_one_clear_line(shell: InteractiveShell, line, cell, words, capsys) -> None:
    shell.user_ns["doc"] = "abc"
    magics = shell.user_ns["__rlm_magics__"]
    try:
        magics.rlm(line, cell)
    except UsageError as exc:
        assert words in str(exc) and "\n" not in str(exc)
    else:
        assert words in capsys.readouterr().out


def test_missing_key_is_one_line(shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch) -> None:
    """A provider asked for by name, with no key for it: one line, which offers the bundled model."""
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    shell.user_ns["doc"] = "abc"
    with pytest.raises(UsageError, match="set the OPENAI_API_KEY environment variable") as caught:
        shell.user_ns["__rlm_magics__"].rlm("--backend openai doc q")
    assert "--backend local" in str(caught.value) and "\n" not in str(caught.value)


def test_with_no_backend_and_no_key_the_bundled_model_is_used_and_said(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    shell.config.RLMMagics.pop("model_name")
    magics = shell.user_ns["__rlm_magics__"]
    magics.model_name = None  # the trait %config set, back to its default
    rlm, _ = magics.make_rlm()
    assert rlm.config.backend == "local"
    said = capsys.readouterr().out.strip().splitlines()
    assert said == [
        "No API key found (OPENAI_API_KEY or ANTHROPIC_API_KEY): using the bundled model, "
        "qwen2.5-coder-0.5b, on this machine."
    ]
    shell.run_line_magic("rlm", "config")
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "'local'" in lines["backend"] and "no API key found" in lines["backend"]


def test_a_key_that_is_found_picks_its_provider(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    shell.config.RLMMagics.pop("model_name")
    rlm, _ = shell.user_ns["__rlm_magics__"].make_rlm()
    assert rlm.config.backend == "anthropic" and "bundled" not in capsys.readouterr().out
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # both: OpenAI's, as before
    assert shell.user_ns["__rlm_magics__"].make_rlm()[0].config.backend == "openai"


def test_config_says_where_each_value_comes_from(shell: InteractiveShell, monkeypatch, capsys) -> None:
    monkeypatch.setenv("RLM_SUB_MODEL", "gpt-4o-mini-sub")
    shell.run_line_magic("config", "RLMMagics.max_iterations = 7")
    shell.run_line_magic("rlm", "config")
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert "'gpt-4o-mini'" in lines["model_name"] and "%config" in lines["model_name"]
    assert "7" in lines["max_iterations"] and "%config" in lines["max_iterations"]
    assert "gpt-4o-mini-sub" in lines["sub_model_name"] and "$RLM_SUB_MODEL" in lines["sub_model_name"]
    assert "'openai'" in lines["backend"] and "$OPENAI_API_KEY is set" in lines["backend"]
    assert "set" in lines["OPENAI_API_KEY"] and "sk-test" not in out


def test_environment_is_read_at_each_run(
    shell: InteractiveShell, scripted_server: ScriptedServer, monkeypatch
) -> None:
    scripted_server.responder = Script(root=[repl("FINAL(1)")])
    shell.config.RLMMagics.pop("model_name")
    monkeypatch.setenv("RLM_MODEL", "model-from-env")
    shell.user_ns["doc"] = "abc"
    assert run(shell, "%rlm doc q").success
    assert scripted_server.requests[-1].model == "model-from-env"


def test_terminal_ipython_gets_plain_text_progress(
    shell: InteractiveShell, scripted_server: ScriptedServer, capsys
) -> None:
    scripted_server.responder = Script(root=[repl("print('looking: done')"), repl("FINAL('done')")])
    shell.user_ns["doc"] = "abc"
    assert run(shell, "%rlm doc q").success
    out = capsys.readouterr().out
    assert "▶ step 1" in out and "looking" in out and "✔ answer" in out


@pytest.mark.sandbox
def test_the_kernel_executor_from_the_magic(shell: InteractiveShell, scripted_server: ScriptedServer) -> None:
    """``--executor kernel``: the code runs in a kernel of its own; the notebook's names stay as they were."""
    import os

    scripted_server.responder = Script(
        root=[repl("import os\nanswer['content'] = str(os.getpid())\nanswer['ready'] = True")]
    )
    shell.user_ns.update(doc="some text", answer="the user's own")
    result = run(shell, "%%rlm -c doc -o res --executor kernel\nWhich process?")
    assert result.success, result.error_in_exec
    res = shell.user_ns["res"]
    assert res.ok and res.response.isdigit() and int(res.response) != os.getpid()
    assert shell.user_ns["answer"] == "the user's own"


@pytest.mark.parametrize(("executor_kwargs", "sandboxed"), [({}, "True"), ({"isolation": "none"}, "False")])
def test_the_magics_executor_kwargs_reach_the_kernel_executor(
    shell: InteractiveShell, scripted_server: ScriptedServer, executor_kwargs: dict, sandboxed: str
) -> None:
    """``%config RLMMagics.executor_kwargs``: where no sandbox can be made, the way past it."""
    scripted_server.responder = Script(root=[repl("import os\nFINAL(os.getppid() == 1)")])
    shell.run_line_magic("config", f"RLMMagics.executor_kwargs = {executor_kwargs!r}")
    shell.user_ns["doc"] = "some text"
    if not executor_kwargs:  # the default needs a sandbox
        from rlm_kernel.executors.sandbox import problem

        if problem() is not None:
            pytest.skip(problem())
    assert run(shell, "%%rlm -c doc -o res --executor kernel\nIn a sandbox?").success
    assert shell.user_ns["res"].response == sandboxed


def test_each_executor_setting_is_an_option_and_a_trait(shell: InteractiveShell) -> None:
    """Set one by one, over executor_kwargs: the option over the trait, the trait over the dict."""
    magics = shell.user_ns["__rlm_magics__"]
    shell.run_line_magic("config", "RLMMagics.executor_kwargs = {'memory_mb': 300, 'cpu_s': 7}")
    shell.run_line_magic("config", "RLMMagics.memory_mb = 400")
    opts, _ = parse_line("--executor kernel --file-mb 50 what?")
    rlm, _ = magics.make_rlm(opts)
    settings = rlm.config.executor_kwargs
    assert (settings.memory_mb, settings.cpu_s, settings.file_mb) == (400, 7, 50)
    rlm, _ = magics.make_rlm(parse_line("--executor kernel --memory-mb 500 what?")[0])
    assert rlm.config.executor_kwargs.memory_mb == 500
    assert magics.make_rlm(parse_line("--executor local what?")[0])[0].config.executor == "local"
    with pytest.raises(UsageError, match="local takes none"):  # an option the local executor cannot take
        magics.make_rlm(parse_line("--executor local --memory-mb 500 what?")[0])


def test_a_second_run_does_not_take_the_first_runs_answer_for_the_users(
    shell: InteractiveShell, scripted_server: ScriptedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.user_ns["doc"] = "abc"
    for value in ("first", "second"):
        scripted_server.responder = Script(
            root=[repl(f"answer['content'] = {value!r}\nanswer['ready'] = True")]
        )
        assert run(shell, "%rlm doc what?").success
        assert shell.user_ns["_rlm"].response == value and shell.user_ns["_rlm"].error is None
        assert shell.user_ns["answer"]["content"] == value
    assert "put back" not in capsys.readouterr().out
    shell.user_ns["answer"] = "the user's own"  # a value of the user's is still put back
    assert run(shell, "%rlm doc what?").success
    assert shell.user_ns["answer"] == "the user's own"


def test_placeholders_take_variables_and_a_missing_one_is_named(
    shell: InteractiveShell, scripted_server
) -> None:
    from rlm_kernel.jupyter.magics import fill_placeholders

    ns = {"topic": "birds", "n": 3}
    assert fill_placeholders('About {topic}, {n} of them; {{topic}} and {"a": 1}', ns) == (
        'About birds, 3 of them; {topic} and {"a": 1}'
    )
    with pytest.raises(UsageError, match=r"No variable named 'mising' for \{mising\}"):
        fill_placeholders("About {mising}", ns)
    shell.user_ns["doc"] = "abc"
    with pytest.raises(UsageError, match="mising"):
        shell.user_ns["__rlm_magics__"].rlm("-c doc", "About {mising}")


def test_a_waiting_mode_without_the_widget_is_refused_not_run_unseen(shell: InteractiveShell) -> None:
    shell.user_ns["doc"] = "abc"
    magics = shell.user_ns["__rlm_magics__"]
    for mode in ("step", "confirm-risky"):
        with pytest.raises(UsageError, match=f"--mode {mode} needs the notebook widget"):
            asyncio.run(magics.arun_result(f"-c doc --mode {mode} --no-widget", "q"))


def test_the_mode_cap_holds_and_says_so(shell: InteractiveShell) -> None:
    magics = shell.user_ns["__rlm_magics__"]
    shell.run_line_magic("config", "RLMMagics.mode_cap = 'step'")
    mode = next(s for s in magics.settings() if s.name == "mode")
    assert mode.value == "step" and "capped by RLMMagics.mode_cap (auto asked)" in mode.source


def test_tools_sub_tools_and_tips_from_the_magics(
    shell: InteractiveShell, scripted_server: ScriptedServer
) -> None:
    from scripted_server import Reply

    from rlm_kernel.events import ToolCalled

    def sub(request) -> Reply:
        if not request.tool_results:
            return Reply(tool_calls=[("fetch", {"key": "b"})])
        return Reply(text=f"fetched {request.tool_results[0]}")

    scripted_server.responder = Script(
        root=[repl("print(lookup('a'))\nprint(llm_query('get b'))"), repl("FINAL('1 and 2')")], sub=sub
    )
    shell.run_cell(
        "table = {'a': 1, 'b': 2}\n"
        "def lookup(key: str) -> int:\n    '''The value of a key.'''\n    return table[key]\n"
        "def fetch(key: str) -> int:\n    '''Fetch a key's value.'''\n    return table[key]\n"
        "doc = 'x'"
    )
    result = run(shell, '%%rlm -c doc --tools lookup --sub-tools fetch --tips "Be brief."\nWhat are a and b?')
    assert result.error_in_exec is None
    rlm = shell.user_ns["_rlm"]
    assert rlm.response == "1 and 2", rlm.error
    system = scripted_server.requests[0].system
    assert "- `lookup(key: str) -> int`: The value of a key." in system and system.endswith("Be brief.")
    assert [(e.tool, e.call_id is None) for e in rlm.trajectory if isinstance(e, ToolCalled)] == [
        ("lookup", True),
        ("fetch", False),
    ]
    assert "1\nfetched 2" in scripted_server.requests[-1].last_user

    # The same from %config, for every run of the notebook.
    scripted_server.responder = Script(root=[repl("print(lookup('b'))"), repl("FINAL('2')")])
    shell.run_line_magic("config", "RLMMagics.tools = {'lookup': lookup}")
    assert run(shell, "%rlm doc b?").error_in_exec is None
    assert [e.tool for e in shell.user_ns["_rlm"].trajectory if isinstance(e, ToolCalled)] == ["lookup"]
    with pytest.raises(
        UsageError, match="--sub-tools: no function or MCP server named 'nope' in the namespace"
    ):
        shell.user_ns["__rlm_magics__"]._parse("--sub-tools nope doc q", None)


def test_a_notebook_session_goes_on_from_its_last_question(shell, scripted_server) -> None:
    scripted_server.responder = Script(
        root=[
            "```repl\nwords = report.split()\nprint(len(words))\nanswer['content'] = str(len(words))\nanswer['ready'] = True\n```",
            "```repl\nprint(words[-1])\nanswer['content'] = words[-1]\nanswer['ready'] = True\n```",
        ]
    )
    shell.user_ns["report"] = "acme ships bolts"
    shell.run_cell("%%rlm -c report --session notes --no-widget\nHow many words?")
    shell.run_cell("%%rlm -c report --session notes --no-widget -o last\nWhich word is last?")
    assert shell.user_ns["_rlm"].response == "3" and shell.user_ns["last"].response == "bolts"
    roots = [r for r in scripted_server.requests if r.is_root]
    assert "A new question about the same context" in roots[1].last_user
    assert roots[1].messages[: len(roots[0].messages)] == roots[0].messages
    changed = shell.run_cell("%%rlm -c report --session notes --max-iterations 3 --no-widget\nAgain?")
    assert "keeps the settings of its first cell" in str(changed.error_in_exec)
    shell.run_line_magic("rlm", "end notes")
    missing = shell.run_cell("%rlm end notes")
    assert "no session named 'notes'" in str(missing.error_in_exec)
