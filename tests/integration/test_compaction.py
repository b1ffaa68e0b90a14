"""Root-history compaction, through the real OpenAI SDK to the scripted server: when the root's
conversation nears its window, its older turns give way to its notes; the REPL keeps what they made,
and the trajectory, a rewind and the export all see the conversation the root saw."""

from __future__ import annotations

import pytest
from scripted_server import Reply, Script

from rlm_kernel import RLM
from rlm_kernel.events import Compacted
from rlm_kernel.export import conversations, samples
from rlm_kernel.rewind import branch_at

KEY = "sk-test-compaction-0123456789"
NOTES = "NOTES-7Q: x holds 41 and y a list; the rows printed were filler."
WINDOW = 3000  # tokens: the default system prompt and three turns that print 1,600 characters fill it
FIRST = "x = 41\nprint('row ' * 400)"


def repl(code: str) -> str:
    return f"Step.\n```repl\n{code}\n```"


TURNS = [
    repl(FIRST),
    repl("y = [1, 2]\nprint('row ' * 400)"),
    repl("print('row ' * 400)"),
    repl("answer['content'] = str(x + len(y) - 1)\nanswer['ready'] = True"),
]


def notes_or_ok(request) -> Reply | str:
    return NOTES if "Write your notes" in request.last_user else "ok"


def make_rlm(server, tmp_path=None, **settings) -> RLM:
    backend = {
        "model_name": "gpt-4o-mini",
        "base_url": server.openai_base_url,
        "api_key": KEY,
        "context_window": WINDOW,
    }
    return RLM("openai", backend, log_dir=tmp_path or False, **settings)


def test_older_turns_give_way_to_notes_and_the_repl_keeps_their_variables(scripted_server):
    scripted_server.responder = Script(root=TURNS, sub=notes_or_ok)
    result = make_rlm(scripted_server).completion("a small context", "What is x + 1?")

    assert result.response == "42", result.error  # x and y, made in summarised turns, are still there
    compacted = [e for e in result.trajectory if isinstance(e, Compacted)]
    assert len(compacted) == 1
    done = compacted[0]
    assert (done.first_turn, done.last_turn, done.turn) == (1, 2, 4)
    assert done.summary == NOTES and done.names == ["x", "y"]
    assert done.window == WINDOW and done.tokens > 0.75 * WINDOW - WINDOW // 4

    roots = [r for r in scripted_server.requests if r.is_root]
    last = roots[-1]
    assert FIRST not in last.text  # turn 1's reply is gone from what the root reads
    assert NOTES in last.text and "Variables from them: x, y" in last.text
    assert TURNS[2] in last.text  # the latest reply stays, with what it printed
    assert len(last.text) < len(roots[-2].text)
    assert [m["role"] for m in last.messages] == ["system", "user", "assistant", "user"]

    # The notes were a sub-call of the run on the root's model: recorded, and counted.
    summary_calls = [r for r in scripted_server.requests if "Write your notes" in r.last_user]
    assert len(summary_calls) == 1 and summary_calls[0].model == "gpt-4o-mini"
    assert FIRST in summary_calls[0].last_user  # what the notes replace was shown to the model
    finished = [e for e in result.trajectory if e.kind == "subcall_finished"]
    assert [e.response for e in finished] == [NOTES]
    assert result.usage.sub.calls == 1 and result.usage.root.calls == 4
    assert result.warnings == []


def test_compaction_off_sends_the_whole_history(scripted_server):
    scripted_server.responder = Script(root=TURNS, sub=notes_or_ok)
    result = make_rlm(scripted_server, compaction=False).completion("a small context", "What is x + 1?")
    assert result.response == "42", result.error
    assert not [e for e in result.trajectory if isinstance(e, Compacted)]
    roots = [r for r in scripted_server.requests if r.is_root]
    assert FIRST in roots[-1].text and len(roots[-1].messages) == 8
    assert not [r for r in scripted_server.requests if "Write your notes" in r.last_user]


def test_a_large_window_is_not_compacted_unless_asked(scripted_server):
    scripted_server.responder = Script(root=TURNS, sub=notes_or_ok)
    backend = {"model_name": "gpt-4o-mini", "base_url": scripted_server.openai_base_url, "api_key": KEY}
    result = RLM("openai", backend, log_dir=False).completion("a small context", "What is x + 1?")
    assert result.response == "42" and not [e for e in result.trajectory if isinstance(e, Compacted)]


@pytest.mark.parametrize("failure", [Reply(status=500, error_message="overloaded"), Reply(text="  ")])
def test_a_failed_summary_is_a_warning_and_the_code_stands_in(scripted_server, failure):
    scripted_server.responder = Script(
        root=TURNS, sub=lambda r: failure if "Write your notes" in r.last_user else "ok"
    )
    result = make_rlm(scripted_server).completion("a small context", "What is x + 1?")
    assert result.response == "42", result.error
    warnings = [e for e in result.trajectory if e.kind == "warning"]
    assert [w.code for w in warnings] == ["compaction_failed"]
    assert "turns 1 to 2" in warnings[0].text
    done = next(e for e in result.trajectory if isinstance(e, Compacted))
    assert "The code you ran" in done.summary and "x = 41" in done.summary
    last = [r for r in scripted_server.requests if r.is_root][-1]
    assert "x = 41" in last.text and "row row" not in last.messages[1]["content"]


def test_a_rewind_and_the_export_see_the_conversation_the_root_saw(scripted_server, tmp_path):
    scripted_server.responder = Script(root=TURNS, sub=notes_or_ok)
    parent = make_rlm(scripted_server, tmp_path).completion("a small context", "What is x + 1?")
    assert parent.response == "42", parent.error
    asked = [r for r in scripted_server.requests if r.is_root][-1]

    branch = branch_at(parent.trajectory, 4)
    assert branch.messages[1:] == [{"role": m["role"], "content": m["content"]} for m in asked.messages[1:]]
    assert branch.compacted is not None and branch.compacted.summary == NOTES

    # The branch replays steps 1-3, then asks turn 4 again with the notes, not the older turns.
    scripted_server.requests.clear()
    scripted_server.responder = Script(root=[TURNS[3]], sub=notes_or_ok)
    again = make_rlm(scripted_server, tmp_path).continue_from(parent, 4, "a small context")
    assert again.response == "42", again.error
    roots = [r for r in scripted_server.requests if r.is_root]
    assert len(roots) == 1 and NOTES in roots[0].text and FIRST not in roots[0].text

    # A branch of the branch starts from the same conversation, with the same fixed start.
    twice = branch_at(again.trajectory, 4)
    assert (twice.messages, twice.fixed, twice.opening) == (branch.messages, branch.fixed, branch.opening)

    # Training samples: the turn after the compaction is taught with the history the root had.
    conv = next(c for c in conversations(parent.trajectory) if c.run_id == parent.run_id)
    taught = {s["turn"]: "\n".join(m["content"] for m in s["messages"]) for s in samples(conv)}
    assert FIRST in taught[3] and FIRST not in taught[4]
    assert NOTES in taught[4] and taught[4].endswith(TURNS[3])


def test_a_time_limit_reached_while_the_notes_are_written_ends_the_run_without_a_compaction_warning(
    scripted_server,
):
    scripted_server.responder = Script(
        root=TURNS, sub=lambda r: Reply(hang=True) if "Write your notes" in r.last_user else "ok"
    )
    rlm = make_rlm(scripted_server, max_timeout=8.0)
    result = rlm.completion("a small context", "What is x + 1?")
    assert not result.ok and "max_timeout" in (result.error or ""), result.error
    assert [e.code for e in result.trajectory if e.kind == "warning"] == []
    assert not [e for e in result.trajectory if isinstance(e, Compacted)]


def test_a_run_stopped_while_the_notes_are_written_ends_without_a_compaction_warning(scripted_server):
    rlm = None

    def sub(request):
        if "Write your notes" in request.last_user:
            rlm.cancel()
            return Reply(text=NOTES, delay=2.0)
        return "ok"

    scripted_server.responder = Script(root=TURNS, sub=sub)
    rlm = make_rlm(scripted_server)
    result = rlm.completion("a small context", "What is x + 1?")
    assert not result.ok, result.response
    assert [e.code for e in result.trajectory if e.kind == "warning"] == []


def test_a_token_limit_passed_by_the_notes_ends_the_run_without_a_compaction_warning(scripted_server):
    scripted_server.responder = Script(
        root=TURNS,
        sub=lambda r: Reply(text=NOTES, output_tokens=100_000) if "Write your notes" in r.last_user else "ok",
    )
    result = make_rlm(scripted_server, max_tokens=50_000).completion("a small context", "What is x + 1?")
    assert not result.ok and "max_tokens" in (result.error or ""), result.error
    assert [e.code for e in result.trajectory if e.kind == "warning"] == []
