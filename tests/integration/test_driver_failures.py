"""A failure of what a driver waits on ends the run with an error, the same through the blocking
and the async driver: an ``RLMError`` as it is, a bug with its traceback in the log."""

from __future__ import annotations

import asyncio
import logging

import pytest
from scripted_server import Script

from rlm_kernel import RLM
from rlm_kernel.errors import RLMError
from rlm_kernel.executors.local import LocalExecutor
from rlm_kernel.runtime import close_quietly

KEY = "sk-test-driver-failures-0123"
ROOT = ["```repl\nprint(1)\n```", "FINAL(done)"]


class Failing(LocalExecutor):
    """Runs nothing: each step raises ``error``."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(tag="failing")
        self.error = error

    def execute(self, code: str, *, step: int):  # type: ignore[override]
        raise self.error


def make_rlm(server) -> RLM:
    kwargs = {"model_name": "gpt-4o-mini", "base_url": server.openai_base_url, "api_key": KEY}
    return RLM("openai", kwargs, log_dir=False)


def run(rlm: RLM, executor, driver: str):
    if driver == "drive":
        return rlm.completion("ctx", "q", executor=executor)
    run = rlm.open("ctx", "q", executor=executor)
    from rlm_kernel.driver import adrive

    return run.close(asyncio.run(adrive(run.parts)))


@pytest.mark.parametrize("driver", ["drive", "adrive"])
def test_a_bug_in_the_executor_ends_the_run_with_its_traceback_logged(scripted_server, caplog, driver):
    scripted_server.responder = Script(root=ROOT)
    with caplog.at_level(logging.ERROR, logger="rlm_kernel"):
        result = run(make_rlm(scripted_server), Failing(ValueError("boom")), driver)
    assert result.response is None and result.error == "ValueError: boom"
    (record,) = [r for r in caplog.records if "a run's step or LM call failed" in r.getMessage()]
    assert record.exc_info is not None and isinstance(record.exc_info[1], ValueError)


@pytest.mark.parametrize("driver", ["drive", "adrive"])
def test_an_rlm_error_of_the_executor_ends_the_run_as_it_is(scripted_server, caplog, driver):
    scripted_server.responder = Script(root=ROOT)
    with caplog.at_level(logging.ERROR, logger="rlm_kernel"):
        result = run(make_rlm(scripted_server), Failing(RLMError("the kernel died")), driver)
    assert result.error == "the kernel died"
    assert not [r for r in caplog.records if "failed" in r.getMessage()]  # not a bug: no traceback


def test_an_approval_that_fails_ends_the_run_recorded(scripted_server):
    scripted_server.responder = Script(root=ROOT)

    async def approve(step: int, code: str) -> str:
        raise KeyError("no such cell")

    rlm = make_rlm(scripted_server)
    result = asyncio.run(rlm.acompletion("ctx", "q", approve=approve))
    assert result.error == "KeyError: 'no such cell'"


def test_close_quietly_logs_a_failure_and_goes_on(caplog):
    def broken() -> None:
        raise OSError("the socket is gone")

    with caplog.at_level(logging.WARNING):
        assert close_quietly(broken, "the kernel") is None
        assert close_quietly(lambda: ["x"], "the executor") == ["x"]
    (record,) = caplog.records
    assert record.getMessage() == "rlm_kernel: closing the kernel failed" and record.exc_info is not None
