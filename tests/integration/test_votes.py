"""Several roots that vote (``votes=k``), through the real OpenAI SDK against the scripted server.

Each root's requests are told apart by their sampling: the greedy root's carry no temperature, the
sampled roots' carry ``temperature`` 0.8 and their own ``seed``. Every root prints its answer in
one turn and sets it in the next, so the answer is one its code showed.
"""

from __future__ import annotations

import asyncio
import io

import pytest
from scripted_server import Reply

from rlm_kernel import RLM
from rlm_kernel.console import ConsoleView
from rlm_kernel.events import RootReply, RunEnded, RunStarted, RunWarning, Voted
from rlm_kernel.trajectory import load
from rlm_kernel.usage import summarize
from rlm_kernel.votes import answer_key

QUESTION = "What is the capital of France?"


def make_rlm(server, tmp_path, **kw):
    backend_kwargs = {
        "model_name": "gpt-4o-mini",
        "base_url": server.openai_base_url,
        "api_key": "sk-test",
        "max_retries": 0,
    }
    return RLM("openai", backend_kwargs, log_dir=tmp_path, **kw)


def roots(answers: dict[int | None, str], delay: float = 0.0, slow: dict[int | None, float] | None = None):
    """A responder: root ``seed`` (None: the greedy root) prints ``answers[seed]``, then sets it;
    each reply after ``delay``, or ``slow[seed]`` for that root's."""

    def respond(request):
        if not request.is_root:
            return Reply("ok", delay=delay)
        seed = request.body.get("seed")
        value = answers[seed]
        delay_of = (slow or {}).get(seed, delay)
        if "VALUE=" in request.last_user:
            code = f"answer['content'] = {value!r}\nanswer['ready'] = True"
        else:
            code = f"print('VALUE=' + {value!r})"
        return Reply(f"```repl\n{code}\n```", delay=delay_of)

    return respond


def voted_runs(events):
    return next(e for e in events if isinstance(e, Voted)).runs


def root_requests(server):
    return [r for r in server.requests if r.is_root]


def test_roots_that_agree_give_the_answer_and_ok(scripted_server, tmp_path):
    scripted_server.responder = roots({None: "Paris", 1: "paris.", 2: ' "PARIS" '})
    result = make_rlm(scripted_server, tmp_path, votes=3).completion("France: Paris.", QUESTION)

    assert answer_key(result.response) == "paris" and result.ok and result.error is None
    # Once two of three agree the third cannot change the vote: it may have been stopped.
    assert result.votes is not None and result.votes.clear and result.votes.top.count >= 2
    assert not any("roots do not agree" in w for w in result.warnings)
    # The winner's trajectory is the result's, with the vote recorded after its end.
    events = load(result.log_path)
    assert events[0].run_id == result.run_id and events[0].settings["votes"] == 3
    assert events[0].run_id == voted_runs(events)[result.votes.winner]
    assert isinstance(events[-2], RunEnded) and isinstance(events[-1], Voted)
    voted = events[-1]
    assert voted.clear and voted.answer == result.response and len(voted.runs) == 3
    assert voted.candidates[0]["count"] >= 2
    # Every root's run is on disk, each in a trajectory of its own.
    files = [p.stem for p in tmp_path.glob("*.jsonl")]
    assert len(files) == 3 and all(any(f.endswith(run_id) for f in files) for run_id in voted.runs)


def test_usage_is_all_the_roots_together(scripted_server, tmp_path):
    scripted_server.responder = roots({None: "Paris", 1: "Nice", 2: "Lyon"})  # a split: all run to the end
    result = make_rlm(scripted_server, tmp_path, votes=3).completion("France: Paris.", QUESTION)

    voted = next(e for e in result.trajectory if isinstance(e, Voted))
    each = [summarize(load(next(tmp_path.glob(f"*{run_id}*.jsonl")))) for run_id in voted.runs]
    assert (
        result.usage.total.calls
        == sum(u.total.calls for u in each)
        == 6
        == len(root_requests(scripted_server))
    )
    assert result.usage.total.input_tokens == sum(u.total.input_tokens for u in each) == voted.input_tokens
    assert result.usage.total.output_tokens == voted.output_tokens
    assert result.response == "Paris" and not result.ok


def test_once_most_roots_agree_the_others_are_stopped(scripted_server, tmp_path):
    scripted_server.responder = roots({None: "Paris", 1: "Paris", 2: "Lyon"}, slow={2: 20.0})
    result = make_rlm(scripted_server, tmp_path, votes=3).completion("France: Paris.", QUESTION)

    assert result.response == "Paris" and result.ok and result.votes.top.count == 2
    assert result.execution_time < 10
    voted = next(e for e in result.trajectory if isinstance(e, Voted))
    slow = load(next(tmp_path.glob(f"*{voted.runs[2]}*.jsonl")))
    assert isinstance(slow[-1], RunEnded) and slow[-1].stop == "user" and slow[-1].response is None


def test_a_split_vote_is_low_confidence_with_counts_and_not_ok(scripted_server, tmp_path):
    scripted_server.responder = roots({None: "Paris", 1: "Lyon", 2: "Nice"})
    result = make_rlm(scripted_server, tmp_path, votes=3).completion("France: Paris.", QUESTION)

    assert result.response == "Paris"  # the greedy root's, first of those given most
    assert not result.ok and result.error is None
    warning = next(e for e in result.trajectory if isinstance(e, RunWarning) and e.code == "low_confidence")
    assert "'Paris' ×1" in warning.text and "'Lyon' ×1" in warning.text and "'Nice' ×1" in warning.text
    assert warning.text in result.warnings
    on_disk = load(result.log_path)
    assert isinstance(on_disk[-1], RunWarning) and on_disk[-1].code == "low_confidence"
    assert isinstance(on_disk[-2], Voted) and not on_disk[-2].clear


def test_one_vote_is_todays_single_root(scripted_server, tmp_path):
    scripted_server.responder = roots({None: "Paris"})
    result = make_rlm(scripted_server, tmp_path).completion("France: Paris.", QUESTION)

    assert result.response == "Paris" and result.ok and result.votes is None
    assert len(root_requests(scripted_server)) == 2
    assert all("temperature" not in r.body for r in root_requests(scripted_server))
    assert not any(isinstance(e, Voted) for e in result.trajectory)
    assert len(list(tmp_path.glob("*.jsonl"))) == 1


def test_the_roots_run_at_once_the_first_greedy_the_others_sampled(scripted_server, tmp_path):
    scripted_server.responder = roots({None: "Paris", 1: "Paris", 2: "Paris"}, delay=0.3)
    make_rlm(scripted_server, tmp_path, votes=3).completion("France: Paris.", QUESTION)

    requests = root_requests(scripted_server)
    assert sorted(str(r.body.get("seed")) for r in requests) == ["1", "1", "2", "2", "None", "None"]
    for r in requests:
        assert r.body.get("temperature") == (None if r.body.get("seed") is None else 0.8)
    first = [r for r in requests if "VALUE=" not in r.last_user]
    assert len(first) == 3
    # Overlap, read from the server's own clock: each first turn arrived before any had been answered.
    assert max(r.received for r in first) < min(r.answered for r in first)


def test_a_root_outvoted_by_the_others_gives_way_and_the_view_shows_the_winner(scripted_server, tmp_path):
    scripted_server.responder = roots({None: "Lyon", 1: "Paris", 2: "paris"})
    out = io.StringIO()
    view = ConsoleView(out)
    result = make_rlm(scripted_server, tmp_path, votes=3).completion(
        "France: Paris.", QUESTION, subscribers=(view,)
    )

    assert result.response == "Paris" and result.ok and result.votes.winner == 1
    started = next(e for e in result.trajectory if isinstance(e, RunStarted))
    assert started.run_id == result.run_id and result.log_path.stem.endswith(result.run_id)
    assert view.state.run_id == result.run_id and view.state.answer == "Paris"
    assert "vote: 2 of 3 roots agree" in out.getvalue()


def test_async_roots_vote_alike(scripted_server, tmp_path):
    scripted_server.responder = roots({None: "Paris", 1: "Lyon", 2: "Nice"}, delay=0.1)
    result = asyncio.run(make_rlm(scripted_server, tmp_path, votes=3).acompletion("France: Paris.", QUESTION))

    assert result.response == "Paris" and not result.ok
    assert any("roots do not agree" in w for w in result.warnings)
    assert result.usage.total.calls == 6
    first = [r for r in root_requests(scripted_server) if "VALUE=" not in r.last_user]
    assert max(r.received for r in first) < min(r.answered for r in first)


def test_a_session_asks_one_root(scripted_server, tmp_path):
    scripted_server.responder = roots({None: "Paris", 1: "Lyon", 2: "Nice"})
    with make_rlm(scripted_server, tmp_path, votes=3).session("France: Paris.") as session:
        result = session.ask(QUESTION)

    assert result.response == "Paris" and result.ok and result.votes is None
    assert len(root_requests(scripted_server)) == 2


def test_stopping_a_vote_stops_every_root(scripted_server, tmp_path):
    scripted_server.responder = roots({None: "Paris", 1: "Paris", 2: "Paris"}, delay=5.0)
    rlm = make_rlm(scripted_server, tmp_path, votes=3)

    async def stopped():
        task = asyncio.ensure_future(rlm.acompletion("France: Paris.", QUESTION))
        while len(root_requests(scripted_server)) < 3:
            await asyncio.sleep(0.02)
        rlm.cancel()
        return await asyncio.wait_for(task, 10)

    result = asyncio.run(stopped())
    assert result.response is None and result.votes is None
    assert len(root_requests(scripted_server)) == 3  # no root asked again


@pytest.mark.parametrize("votes", [0, -1])
def test_votes_must_be_at_least_one(votes, tmp_path):
    from rlm_kernel.errors import ConfigError

    with pytest.raises(ConfigError, match="votes must be at least 1"):
        RLM("openai", {"api_key": "sk-test"}, votes=votes, log_dir=tmp_path)


def test_root_replies_of_every_root_are_counted_once(scripted_server, tmp_path):
    scripted_server.responder = roots({None: "Paris", 1: "Lyon", 2: "Nice"})
    result = make_rlm(scripted_server, tmp_path, votes=3).completion("France: Paris.", QUESTION)
    # The result's own trajectory is the winner's: two root turns; the usage is the three roots'.
    assert sum(isinstance(e, RootReply) for e in result.trajectory) == 2
    assert result.usage.root.calls == 6
