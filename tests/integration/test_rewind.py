"""Rewind: a new run continues a recorded one from one of its root steps, through the real OpenAI
SDK against the scripted server. The steps before the branch point run again in a fresh REPL with
their sub-calls answered from the recording; the root is asked the same turn again."""

from __future__ import annotations

import json

import pytest
from scripted_server import Reply, Script

from rlm_kernel import RLM
from rlm_kernel.driver import Regenerate
from rlm_kernel.errors import ConfigError
from rlm_kernel.events import RootRequest, RunStarted, StepStarted, SubcallFinished
from rlm_kernel.export import conversations, samples
from rlm_kernel.export import main as export_main
from rlm_kernel.rewind import branch_at
from rlm_kernel.trajectory import load

KEY = "sk-test-SECRET-KEY-123"
CONTEXT = "\n".join(f"row {i}: {'alpha' if i % 3 else 'beta'}" for i in range(90))


def make_rlm(server, tmp_path, **kw):
    kwargs = {
        "model_name": "gpt-4o-mini",
        "base_url": server.openai_base_url,
        "api_key": KEY,
        "max_retries": 0,
    }
    return RLM("openai", kwargs, log_dir=tmp_path, **kw)


def repl(code: str, text: str = "Next.") -> str:
    return f"{text}\n```repl\n{code}\n```"


def count_beta(request) -> Reply:
    return Reply(text=str(request.last_user.removeprefix("Count beta in: ").count("beta")))


STEP_1 = repl(
    "parts = [context[i:i + 400] for i in range(0, len(context), 400)]\n"
    "counts = llm_query_batched([f'Count beta in: {p}' for p in parts])\n"
    "print(len(parts), 'parts', counts)",
    "Split and count.",
)
STEP_2 = repl("total = sum(int(c) for c in counts)\nprint('total', total)", "Add them.")
STEP_3 = repl("FINAL(f'{total} beta rows')", "Done.")


def recorded_run(server, tmp_path):
    server.responder = Script(root=[STEP_1, STEP_2, STEP_3], sub=count_beta)
    result = make_rlm(server, tmp_path).completion(CONTEXT, root_prompt="How many beta rows?")
    assert result.ok, result.error
    return result


def subcalls_made(server) -> int:
    return sum(not r.is_root for r in server.requests)


def test_a_branch_replays_the_steps_before_it_and_asks_the_same_turn_again(scripted_server, tmp_path):
    parent = recorded_run(scripted_server, tmp_path)
    recorded_requests = [r for r in scripted_server.requests if r.is_root]
    subs_before = subcalls_made(scripted_server)
    assert subs_before > 1

    # The branch's own step 2 uses the variable that replayed step 1 made.
    new_step_2 = repl("print('counts again', counts)\nFINAL(f'{sum(map(int, counts))} rows of beta')")
    scripted_server.responder = Script(root=[new_step_2], sub=count_beta)
    branch = make_rlm(scripted_server, tmp_path).continue_from(parent, 2, CONTEXT)

    assert branch.ok, branch.error
    assert branch.response == f"{CONTEXT.count('beta')} rows of beta"
    assert subcalls_made(scripted_server) == subs_before  # step 1's sub-calls were not asked again
    asked = [r for r in scripted_server.requests if r.is_root][len(recorded_requests) :]
    assert len(asked) == 1
    assert asked[0].messages == recorded_requests[1].messages  # the very request that proposed step 2

    started = branch.trajectory[0]
    assert isinstance(started, RunStarted)
    assert (started.parent_run, started.branched_at) == (parent.run_id, 2)
    replayed = [e for e in branch.trajectory if isinstance(e, StepStarted) and e.replayed]
    assert [e.step for e in replayed] == [1]
    calls = [e for e in branch.trajectory if isinstance(e, SubcallFinished)]
    assert calls and all(e.replayed and e.cost == 0.0 for e in calls)
    assert (branch.usage.sub.calls, branch.usage.root.calls) == (0, 1)  # only the new root reply is paid
    assert [e.turn for e in branch.trajectory if isinstance(e, RootRequest)] == [2]
    assert not branch.warnings  # the replay printed what the recorded run printed

    # The trajectory on disk says the same, and a file continues as well as a result does.
    on_disk = load(branch.log_path)
    assert on_disk[0].parent_run == parent.run_id
    assert branch_at(load(parent.log_path), 2).messages == branch_at(parent.trajectory, 2).messages


def test_the_replay_runs_the_code_a_human_edited_and_skips_a_rejected_proposal(scripted_server, tmp_path):
    first = repl("x = 1\nprint('x', x)")
    rejected = repl("x = 100\nprint('rejected')")
    second = repl("y = x + 1\nprint('y', y)")
    scripted_server.responder = Script(root=[first, rejected, second, repl("FINAL(str(y))")])
    seen = []

    async def approve(step: int, code: str):
        seen.append(step)
        if step == 1:
            return code.replace("x = 1", "x = 20")  # the human's edit
        if len(seen) == 2:
            return Regenerate()  # the first proposal for step 2 is set aside
        return code

    import asyncio

    parent = asyncio.run(make_rlm(scripted_server, tmp_path).acompletion(CONTEXT, "y?", approve=approve))
    assert parent.response == "21"

    branch = branch_at(parent.trajectory, 3)
    assert [s.code.strip() for s in branch.steps] == ["x = 20\nprint('x', x)", "y = x + 1\nprint('y', y)"]
    assert branch.step == 3 and branch.turn == 3
    assert all("rejected" not in m["content"] for m in branch.messages)

    scripted_server.responder = Script(root=[repl("FINAL(str(x * y))")])
    result = make_rlm(scripted_server, tmp_path).completion(CONTEXT, branch=branch)
    assert result.response == "420"


def test_a_replay_that_prints_otherwise_is_a_warning_and_new_requests_are_made(scripted_server, tmp_path):
    parent = recorded_run(scripted_server, tmp_path)
    subs_before = subcalls_made(scripted_server)
    scripted_server.responder = Script(root=[repl("FINAL(str(total))")], sub=count_beta)
    other = CONTEXT + "\nrow 90: beta"  # another context: step 1 asks other prompts than recorded
    result = make_rlm(scripted_server, tmp_path).continue_from(parent, 3, other)
    assert result.response == str(other.count("beta"))
    assert subcalls_made(scripted_server) > subs_before  # the prompts the recording lacks go out
    assert len(result.warnings) == 1 and "Replayed steps 1, 2 printed other than in run" in result.warnings[0]


def test_a_step_to_branch_at_must_be_one_the_root_proposed(scripted_server, tmp_path):
    parent = recorded_run(scripted_server, tmp_path)
    with pytest.raises(
        ConfigError, match=r"has no step 9 proposed by the root: its root steps are 1, 2, 3\."
    ):
        branch_at(parent.trajectory, 9)
    other = recorded_run(scripted_server, tmp_path)
    with pytest.raises(ConfigError, match="holds 2 runs: name the one"):
        branch_at([*parent.trajectory, *other.trajectory], 2)
    assert branch_at([*parent.trajectory, *other.trajectory], 2, other.run_id).parent_run == other.run_id


def test_export_keeps_both_branches_and_marks_the_human_choice(scripted_server, tmp_path):
    parent = recorded_run(scripted_server, tmp_path / "logs")
    scripted_server.responder = Script(
        root=[repl("print(counts)", "Look again."), repl("FINAL(str(sum(map(int, counts))))")], sub=count_beta
    )
    branch = make_rlm(scripted_server, tmp_path / "logs").continue_from(parent, 2, CONTEXT)
    assert branch.ok

    convs = {c.run_id: c for c in conversations([*parent.trajectory, *branch.trajectory])}
    kept = list(samples(convs[parent.run_id]))
    new = list(samples(convs[branch.run_id]))
    assert [s["turn"] for s in kept] == [1, 2, 3] and [s["turn"] for s in new] == [2, 3]
    assert "superseded_by" not in kept[0]
    assert kept[1]["superseded_by"] == kept[2]["superseded_by"] == branch.run_id
    assert new[0]["rejected"] == [{"role": "assistant", "content": STEP_2}]
    assert new[0]["branch_of"] == {"run_id": parent.run_id, "step": 2}
    assert new[0]["messages"][:-1] == kept[1]["messages"][:-1]  # the same conversation up to the turn

    out = tmp_path / "sft.jsonl"
    assert export_main([str(tmp_path / "logs"), "-o", str(out)]) == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert {s["run_id"] for s in written} == {parent.run_id, branch.run_id}


@pytest.mark.sandbox
def test_a_branch_in_a_kernel_executor_answers_its_replay_from_the_recording(scripted_server, tmp_path):
    parent = recorded_run(scripted_server, tmp_path)
    subs_before = subcalls_made(scripted_server)
    scripted_server.responder = Script(root=[repl("FINAL(str(total * 2))")], sub=count_beta)
    result = make_rlm(scripted_server, tmp_path, executor="kernel").continue_from(parent, 3, CONTEXT)
    assert result.response == str(2 * CONTEXT.count("beta")), result.error
    assert subcalls_made(scripted_server) == subs_before
