"""`kernelpro mcp`: the tool catalogue as an MCP server, over stdio (local clients) or streamable HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Optional

import typer
from rich.console import Console

from kernelpro.cli.errors import fail as _fail
from kernelpro.cli.inputs import device_or_fail, problem_or_fail
from kernelpro.config import load_settings

errors = Console(stderr=True)  # over stdio, stdout is the protocol's: nothing else may be written there


def mcp_command(
    reference: Annotated[Optional[Path], typer.Argument(help="A KernelBench problem the tools work against by "
                                                             "default (a call may name another).")] = None,
    transport: Annotated[str, typer.Option("--transport", help="stdio (a local client starts the server) or "
                                                               "http (streamable HTTP on localhost, with a "
                                                               "bearer token).")] = "stdio",
    port: Annotated[Optional[int], typer.Option("--port", help="HTTP port (default: mcp.port, 8765).")] = None,
    device: Annotated[str, typer.Option("--device", help="cpu, cuda, or auto (cuda when a GPU is "
                                                         "visible).")] = "auto",
) -> None:
    """Serve kernelpro's tools to another agent (Claude Code, Cursor, an IDE) over the Model Context Protocol:
    judge, profile, diagnose, read metrics and reports, ncu's sections and rules, compile and static reports,
    CUTLASS/CuTe search, memory. One judge serves every call of the session."""
    if transport not in ("stdio", "http"):
        _fail(f"--transport {transport!r}: use stdio or http")
    chosen: Literal["stdio", "http"] = transport  # type: ignore[assignment]
    settings = load_settings()
    problem = problem_or_fail(reference) if reference is not None else None
    resolved = device_or_fail(device, settings)

    import anyio

    from kernelpro.app.compose import tool_session
    from kernelpro.mcp.http import new_token, serve_http
    from kernelpro.mcp.resources import ResourceStore
    from kernelpro.mcp.server import build_server, serve_stdio
    from kernelpro.mcp.session import ToolSession

    session = ToolSession(tool_session(settings, resolved, problem), ResourceStore(settings.mcp.max_resources))
    server = build_server(session)
    try:
        if chosen == "stdio":
            anyio.run(serve_stdio, server)
            return
        token = settings.mcp.token.get_secret_value() if settings.mcp.token else ""
        if not token:
            token = new_token()
            errors.print(f"no mcp.token set (KERNELPRO_MCP__TOKEN): this server's token is {token}", soft_wrap=True,
                         highlight=False)
        url = f"http://{settings.mcp.host}:{port or settings.mcp.port}/mcp"
        errors.print(f"kernelpro MCP server at {url} (device {resolved}); send Authorization: Bearer TOKEN",
                     soft_wrap=True, highlight=False)
        serve_http(server, token, settings.mcp.host, port or settings.mcp.port)
    except KeyboardInterrupt:
        pass
    finally:
        session.close()


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_command)
