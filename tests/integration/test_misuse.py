"""Misuse of the REPL's functions and of the settings gets a clear one-line error."""

from __future__ import annotations

import pytest
from scripted_server import Script

from rlm_kernel import RLM

KEY = "sk-test-misuse-0123456789"


def test_a_batch_of_one_string_is_a_clear_error_for_the_root(scripted_server, tmp_path):
    scripted_server.responder = Script(root=['```repl\nllm_query_batched("one prompt")\n```', "FINAL(done)"])
    rlm = RLM(
        "openai",
        {"model_name": "gpt-4o-mini", "base_url": scripted_server.openai_base_url, "api_key": KEY},
        log_dir=False,
    )
    result = rlm.completion("ctx", "q")
    (finished,) = [e for e in result.trajectory if e.kind == "step_finished"]
    assert "TypeError: llm_query_batched takes a list of prompts, not one string" in finished.error
    assert not [r for r in scripted_server.requests if not r.is_root]  # no call per character


def test_a_log_dir_that_is_a_file_is_a_config_error(tmp_path):
    from rlm_kernel.errors import ConfigError

    path = tmp_path / "a-file"
    path.write_text("x")
    with pytest.raises(ConfigError, match="is a file: give a folder"):
        RLM("replay", {"path": str(path)}, log_dir=path)
