"""The MCP server on a GPU: a profile through Nsight Compute comes back with its files as resources, and ncu's own
listings of sections, sets and rules parse."""

from __future__ import annotations

import json

import anyio
import pytest
import torch
from mcp import Client

from kernelpro.app.compose import tool_session
from kernelpro.mcp.resources import ResourceStore
from kernelpro.mcp.server import build_server
from kernelpro.mcp.session import ToolSession
from kernelpro.profiling.ncu_command import find_ncu
from tests.mcp.conftest import REFERENCE, links, text

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU"),
              pytest.mark.skipif(find_ncu() is None, reason="needs Nsight Compute (ncu)")]


def test_profile_over_mcp_links_the_csv_and_report_and_ncu_lists_parse(settings, tmp_path):
    settings.memory.path = tmp_path / "memory"
    session = ToolSession(tool_session(settings, "cuda"), ResourceStore())

    async def run() -> None:
        async with Client(build_server(session)) as client:
            profiled = await client.call_tool("profile", {"reference": str(REFERENCE), "full": False})
            assert not profiled.is_error, text(profiled)
            uris = {link.name: link.uri for link in links(profiled)}
            csv = next(uri for name, uri in uris.items() if name.endswith(".csv"))
            assert any(name.endswith(".ncu-rep") for name in uris)
            assert "gpu__time_duration.sum" in (await client.read_resource(csv)).contents[0].text
            sections = await client.call_tool("ncu_sections", {})
            assert not sections.is_error, text(sections)
            listed = json.loads((await client.read_resource(links(sections)[0].uri)).contents[0].text)
            assert "SpeedOfLight" in {row["Identifier"] for row in listed["sections"]}
            assert "full" in {row["Identifier"] for row in listed["sets"]}
            rules = await client.call_tool("ncu_rules", {})
            assert not rules.is_error and "SOLBottleneck" in text(rules), text(rules)

    try:
        anyio.run(run)
    finally:
        session.close()
