"""`kernelpro mcp --transport http`: the same tools over streamable HTTP on localhost, refused without the token."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from kernelpro.app.compose import tool_session
from kernelpro.mcp.http import http_app
from kernelpro.mcp.resources import ResourceStore
from kernelpro.mcp.server import build_server
from kernelpro.mcp.session import ToolSession
from tests.mcp.conftest import assert_catalogue, bad_argument, diagnose_and_read, judge

TOKEN = "test-token-1234"


@pytest.fixture
def http_url(settings, tmp_path) -> Iterator[str]:
    """The server in this process, on a free localhost port, until the test ends."""
    settings.memory.path = tmp_path / "memory"
    session = ToolSession(tool_session(settings, "cpu"), ResourceStore())
    config = uvicorn.Config(http_app(build_server(session), TOKEN), host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        session.close()


def client(url: str, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=120)))


def test_http_server_with_the_token_lists_diagnoses_and_judges(http_url):
    async def session() -> None:
        async with client(http_url, TOKEN) as mcp:
            assert_catalogue((await mcp.list_tools()).tools)
            await diagnose_and_read(mcp)
            await judge(mcp)
            await bad_argument(mcp)

    anyio.run(session)


def test_http_server_refuses_requests_without_the_token(http_url):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    for auth in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": f"Basic {TOKEN}"}):
        answer = httpx2.post(http_url, json=body, headers={**headers, **auth})
        assert answer.status_code == 401, (auth, answer.status_code, answer.text)
        assert answer.headers["www-authenticate"].startswith("Bearer")

    async def session() -> None:
        async with client(http_url, None) as mcp:
            await mcp.list_tools()

    with pytest.raises(Exception) as refused:  # the SDK's client fails its handshake on the 401
        anyio.run(session)
    assert refused.group_contains(MCPError, match="error response")
