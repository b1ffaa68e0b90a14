"""No secret reaches what a run records or shows its root: the configured key and key-like
environment variables are redacted from step output, sub-call prompts, events, the trajectory
file and the answer, with the real SDK over real HTTP."""

from __future__ import annotations

import json

import pytest
from scripted_server import Reply, Script

from rlm_kernel import RLM
from rlm_kernel.secrets import REDACTED, Redactor, secrets_of

CONFIGURED = "sk-configured-0123456789abcdef"
IN_ENV = "tok-environment-ZYXWVUT987654"

LEAKY_STEP = """import os
print("env:", os.environ["MY_SERVICE_TOKEN"])
print("kwargs:", llm_query.__self__.lm_for.__self__.config.backend_kwargs["api_key"])
reply = llm_query("say it back: " + os.environ["MY_SERVICE_TOKEN"])
os.environ["MY_SERVICE_TOKEN"]"""


@pytest.fixture
def leaky_run(scripted_server, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", IN_ENV)
    scripted_server.responder = Script(
        root=[f"```repl\n{LEAKY_STEP}\n```", 'FINAL_VAR("reply")'], sub=lambda request: f"echo {IN_ENV}"
    )
    rlm = RLM(
        "openai",
        {"model_name": "gpt-4o-mini", "base_url": scripted_server.openai_base_url, "api_key": CONFIGURED},
        log_dir=tmp_path,
    )
    return rlm.completion("some context", "q"), scripted_server


def test_step_output_is_redacted_before_the_root_and_the_events_see_it(leaky_run):
    result, _ = leaky_run
    (finished,) = [e for e in result.trajectory if e.kind == "step_finished"]
    assert f"env: {REDACTED}" in finished.output and f"kwargs: {REDACTED}" in finished.output
    assert f"'{REDACTED}'" in finished.output  # the step's last value too


def test_no_request_the_provider_got_carries_a_secret_in_its_text(leaky_run):
    _, server = leaky_run
    for request in server.requests:
        body = json.dumps(request.body["messages"])
        assert CONFIGURED not in body and IN_ENV not in body


def test_the_trajectory_file_and_the_answer_hold_no_secret(leaky_run):
    result, _ = leaky_run
    text = result.log_path.read_text()
    assert CONFIGURED not in text and IN_ENV not in text
    assert result.response == f"echo {REDACTED}"  # a sub-model's reply is redacted too
    previews = [e.response_preview for e in result.trajectory if e.kind == "subcall_finished"]
    assert previews == [f"echo {REDACTED}"]


def test_what_counts_as_a_secret():
    found = secrets_of(
        {
            "api_key": CONFIGURED,
            "model_name": "gpt-4o-mini-long-name",
            "timeout": 30,
            "default_headers": {"Authorization": "Bearer header-secret-4242"},
        },
        environ={
            "GITHUB_TOKEN": IN_ENV,
            "HOME": "/root/somewhere",
            "SHORT_SECRET": "abc",
            "AUTHOR": "Ada Lovelace Byron",
            "TOKENIZERS_PARALLELISM": "false-but-long",
        },
    )
    assert found == sorted(
        [CONFIGURED, IN_ENV, "Bearer header-secret-4242", "header-secret-4242"], key=len, reverse=True
    )
    assert Redactor(found).text(f"a {IN_ENV} b {CONFIGURED}") == f"a {REDACTED} b {REDACTED}"
    # With no secret given, what it recognizes by form still goes.
    assert Redactor([]).text("postgres://app:hunter2@db/x") == f"postgres://app:{REDACTED}@db/x"


def test_a_key_the_root_streams_split_over_tokens_never_reaches_the_live_view(scripted_server, tmp_path):
    """Providers stream a key as several tokens, none of them the key: what the views draw live
    (the root's tokens, joined) holds it redacted all the same."""
    said = f"```repl\nprint('{CONFIGURED}')\nprint('done')\n```"
    at = said.index(CONFIGURED)
    pieces = [said[:at], CONFIGURED[:6], CONFIGURED[6:15], CONFIGURED[15:], said[at + len(CONFIGURED) :]]
    scripted_server.responder = Script(root=[Reply(said, pieces=pieces), "FINAL(done)"])
    tokens: list[str] = []
    rlm = RLM(
        "openai",
        {"model_name": "gpt-4o-mini", "base_url": scripted_server.openai_base_url, "api_key": CONFIGURED},
        log_dir=tmp_path,
    )
    result = rlm.completion(
        "ctx", "q", subscribers=[lambda e: tokens.append(e.text) if e.kind == "root_token" else None]
    )
    assert result.ok and len(tokens) > 1
    shown = "".join(tokens)
    assert CONFIGURED not in shown and CONFIGURED[6:15] not in shown
    assert REDACTED in shown and shown.startswith("```repl\nprint(")
