"""The MCP server over a ``ToolSession``: the SDK's low-level ``Server`` with tools and resources, and the stdio
transport. Tool calls run in a worker thread, so a long judgment does not stop the server answering."""

from __future__ import annotations

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

import kernelpro
from kernelpro.mcp.resources import UnknownResource
from kernelpro.mcp.session import ToolSession, UnknownTool

INSTRUCTIONS = (
    "kernelpro's tools for making GPU kernels faster. judge_candidate judges a KernelBench-format candidate "
    "(a file defining ModelNew) against its reference (`reference`: the problem file's path): correct on fresh "
    "inputs, timed with a 95% interval, guarded against reward hacks. profile, diagnose, read_metrics, "
    "report_details, ncu_sections and ncu_rules read Nsight Compute; static_report, compile_check and "
    "resource_report compile CUDA without running it; cutlass_* browse the CUTLASS/CuTe source; memory_* keep "
    "lessons across sessions. Each reply links a resource with its whole output."
)


def build_server(session: ToolSession) -> Server:
    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=session.listed())

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            return await anyio.to_thread.run_sync(session.call, params.name, params.arguments or {})
        except UnknownTool as error:
            raise MCPError(code=types.INVALID_PARAMS, message=error.args[0]) from None

    async def list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=session.store.listed())

    async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        try:
            return types.ReadResourceResult(contents=[session.store.read(str(params.uri))])
        except UnknownResource as error:
            raise MCPError(code=types.INVALID_PARAMS, message=error.args[0]) from None

    return Server("kernelpro", version=kernelpro.__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
                  on_read_resource=read_resource)


async def serve_stdio(server: Server) -> None:
    """Serve one client over this process's stdin and stdout (the SDK points fd 1 at stderr meanwhile, so
    nothing a tool or a child process prints can corrupt the stream)."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
