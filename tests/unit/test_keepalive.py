"""A server of one's own closes kept-alive connections: connections are not kept idle as long as it
keeps them, and a request it dropped unanswered is sent once more."""

from __future__ import annotations

import asyncio

import pytest
from scripted_server import Reply, sequence

from rlm_kernel.errors import ProviderError
from rlm_kernel.lm.openai import OpenAILM

SERVER_KEEPALIVE_S = 5.0  # llama.cpp's (cpp-httplib) and uvicorn's (vLLM) idle timeout


def test_a_self_hosted_servers_connections_expire_before_the_server_closes_them() -> None:
    local = OpenAILM("m", base_url="http://127.0.0.1:8080/v1", api_key="k")._default_http_client()
    official = OpenAILM("gpt-5-mini", api_key="k")._default_http_client()
    assert local._transport._pool._keepalive_expiry < SERVER_KEEPALIVE_S / 2
    assert official._transport._pool._keepalive_expiry >= SERVER_KEEPALIVE_S  # OpenAI's keep longer


@pytest.mark.parametrize("stream", [False, True])
def test_a_request_the_server_dropped_unanswered_is_sent_once_more(scripted_server, stream) -> None:
    scripted_server.responder = sequence(Reply(drop=True), "hello")
    lm = OpenAILM("m", base_url=scripted_server.openai_base_url, api_key="k", max_retries=0)
    tokens: list[str] = []
    completion = asyncio.run(
        lm.complete([{"role": "user", "content": "hi"}], on_token=tokens.append if stream else None)
    )
    assert completion.text == "hello" and len(scripted_server.requests) == 2


def test_a_second_drop_is_the_providers_error(scripted_server) -> None:
    scripted_server.responder = sequence(Reply(drop=True), Reply(drop=True), "never")
    lm = OpenAILM("m", base_url=scripted_server.openai_base_url, api_key="k", max_retries=0)
    with pytest.raises(ProviderError, match="Connection error"):
        asyncio.run(lm.complete([{"role": "user", "content": "hi"}]))
    assert len(scripted_server.requests) == 2
