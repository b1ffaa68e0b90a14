"""No loop runs twice, through the real SDK and a real HTTP server: a reply that repeats a failing
step, or pastes the last output back as code, is not run; the root is asked again, sampled, with
a one-line note (a repeat of the step that just failed, from the request before that step), and
the run goes on to its answer. An answer that is an error message is sent
back."""

from __future__ import annotations

from scripted_server import Reply, Script

from rlm_kernel import RLM

KEY = "sk-test-loops-0123456789"
FAILING = "print(frame.head())"
FIXED = "first = context.split(',')[0]\nprint(first)"
DONE = "answer['content'] = first\nanswer['ready'] = True"


def repl(code: str) -> str:
    return f"Let me look.\n```repl\n{code}\n```"


def run(server, replies: list[str], sub: Reply | str = "ok"):
    server.responder = Script(root=replies, sub=sub)
    backend = {"model_name": "gpt-4o-mini", "base_url": server.openai_base_url, "api_key": KEY}
    return RLM("openai", backend, log_dir=False).completion("Graz,Linz,Wels", "Which city is listed first?")


def test_a_repeated_failing_step_and_a_pasted_output_are_not_run(scripted_server):
    result = run(
        scripted_server,
        [
            repl(FAILING),  # NameError
            repl(f"# again\n{FAILING}"),  # the same code: not run, and its turn is rewound
            repl(FIXED),
            repl("Output of step 2:\nGraz"),  # printed output pasted back: not run, asked again
            repl(DONE),
        ],
    )
    assert result.response == "Graz", result.error
    ran = [e.code.strip() for e in result.trajectory if e.kind == "step_started"]
    assert ran == [FAILING, FIXED, DONE]
    roots = [r for r in scripted_server.requests if r.is_root]
    assert len(roots) == 5
    # each loop asked again at a temperature above zero, with its note at the end
    assert [r.body.get("temperature", 0) > 0 for r in roots] == [False, False, True, False, True]
    # the repeat rewound its turn: the first request again, with what the error said, and the
    # failed code out of view
    assert roots[2].last_user.endswith("failed (NameError: name 'frame' is not defined). Write other code.")
    assert roots[2].last_user.startswith(roots[0].last_user)
    assert not any(FAILING in m["content"] for m in roots[2].messages if m["role"] == "assistant")
    assert "copy of printed output" in roots[4].last_user.rsplit("\n\n", 1)[-1]
    # the traceback went to the root once; the rewound request is turn 2 asked again
    requests = [e for e in result.trajectory if e.kind == "root_request"]
    assert [e.turn for e in requests] == [1, 2, 3]
    assert ["NameError: name 'frame' is not defined" in e.content for e in requests] == [False, True, False]
    assert [e.rewound for e in result.trajectory if e.kind == "proposal_rejected"] == [True, False]
    assert [e.code for e in result.trajectory if e.kind == "warning"] == ["repetition", "repetition"]


def test_an_answer_that_is_a_sub_calls_error_is_sent_back(scripted_server):
    asked = "city = llm_query('Which city is first in: ' + context)\nprint('asked')\n"
    result = run(
        scripted_server,
        [repl(asked + "answer['content'] = city\nanswer['ready'] = True"), repl(FIXED + "\n" + DONE)],
        sub=Reply(status=400, error_message="the model is overloaded"),
    )
    assert result.response == "Graz", result.error
    doubted = [e for e in result.trajectory if e.kind == "answer_doubted"]
    assert [e.reason for e in doubted] == ["it is an error message or a tool's report, not an answer"]
