"""What the MCP tests share: the environment a server runs in, and the calls every transport is checked with."""

from __future__ import annotations

import json
import os
from pathlib import Path

import mcp_types as types
import pytest

from tests.conftest import DATA

CSV = DATA / "ncu" / "planted" / "memory_bound.csv"
REFERENCE = DATA / "problems" / "scale_relu.py"
CANDIDATE = (DATA / "candidates" / "honest_scale_relu.py").read_text()


@pytest.fixture
def server_env(tmp_path) -> dict[str, str]:
    """A server's environment: nothing of the developer's, the memory and caches in tmp, timing cut short."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}
    root = str(Path(__file__).resolve().parents[2])  # this checkout's kernelpro, whatever the working directory
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env.update({
        "KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"), "KERNELPRO_COMPILE__CACHE_DIR": str(tmp_path / "cc"),
        "KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3",
        "KERNELPRO_HARNESS__REFEREE": "false", "KERNELPRO_HARNESS__TIMING_TRIALS": "5",
        "KERNELPRO_HARNESS__MIN_TIMING_TRIALS": "5", "KERNELPRO_HARNESS__CPU_CONTENTION_CORES": "1e9",
    })
    return env


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def links(result: types.CallToolResult) -> list[types.ResourceLink]:
    return [block for block in result.content if isinstance(block, types.ResourceLink)]


async def diagnose_and_read(client) -> dict:
    """diagnose on a stored profile names its planted cause; its whole output is a resource that reads back."""
    result = await client.call_tool("diagnose", {"ncu_csv": str(CSV)})
    assert not result.is_error, text(result)
    assert "memory_bound" in text(result) or "memory-bound" in text(result)
    (output,) = links(result)
    assert output.uri.startswith("kernelpro://results/") and output.mime_type == "application/json"
    listed = await client.list_resources()
    assert output.uri in [r.uri for r in listed.resources]
    read = await client.read_resource(output.uri)
    data = json.loads(read.contents[0].text)
    assert data["kernels"] and data["kernels"][0]["name"] == "planted_memory_bound"
    return data


async def judge(client, **extra) -> str:
    result = await client.call_tool("judge_candidate", {"source": CANDIDATE, "reference": str(REFERENCE), **extra})
    assert not result.is_error, text(result)
    verdict = json.loads((await client.read_resource(links(result)[0].uri)).contents[0].text)
    assert verdict["status"] == "ok" and verdict["correct"] is True and verdict["device"] == "cpu"
    return text(result)


async def bad_argument(client) -> None:
    """An argument of the wrong type is a tool error naming the field; the session goes on."""
    result = await client.call_tool("read_metrics", {"metrics": "dram__throughput"})
    assert result.is_error and "metrics" in text(result) and "invalid arguments" in text(result)
    missing = await client.call_tool("judge_candidate", {"source": CANDIDATE, "reference": "/nonexistent/p.py"})
    assert missing.is_error and "/nonexistent/p.py: no such file" in text(missing)


def assert_catalogue(tools: list[types.Tool]) -> None:
    names = {tool.name for tool in tools}
    assert {"judge_candidate", "diagnose", "profile", "read_metrics", "report_details", "ncu_sections",
            "ncu_rules", "static_report", "cutlass_search", "memory_search", "memory_write"} <= names
    judge_tool = next(tool for tool in tools if tool.name == "judge_candidate")
    assert judge_tool.description and judge_tool.input_schema["required"] == ["source"]
    assert {"source", "timing", "reference"} <= set(judge_tool.input_schema["properties"])

