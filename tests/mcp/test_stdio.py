"""`kernelpro mcp` over stdio, driven by the MCP SDK's own client as a local client (Claude Code, Cursor) would."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters

from tests.mcp.conftest import REFERENCE, assert_catalogue, bad_argument, diagnose_and_read, judge, text


def test_stdio_server_lists_diagnoses_judges_and_reports_errors(server_env, tmp_path):
    params = StdioServerParameters(command=sys.executable, args=["-m", "kernelpro.cli", "mcp", str(REFERENCE),
                                                                 "--device", "cpu"], env=server_env, cwd=tmp_path)

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            assert_catalogue((await client.list_tools()).tools)
            await diagnose_and_read(client)
            first = await judge(client)
            assert "faster" in first or "slower" in first or "same" in first or "uncertain" in first
            # The server was started with the problem: a call may leave `reference` out.
            again = await client.call_tool("judge_candidate", {"source": "class ModelNew:\n    pass\n"})
            assert not again.is_error and "ModelNew" in text(again)
            await bad_argument(client)
            with pytest.raises(MCPError, match="no tool named 'nonexistent'"):
                await client.call_tool("nonexistent", {})

    anyio.run(session)
