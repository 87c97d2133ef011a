"""The MCP server (`kernelpro mcp`): where it listens over HTTP, the token it asks for, what it keeps."""

from __future__ import annotations

from pydantic import BaseModel, Field, SecretStr


class McpSettings(BaseModel):
    """`kernelpro mcp`: stdio for local clients, streamable HTTP on localhost for remote ones."""

    host: str = "127.0.0.1"
    """Where the HTTP transport listens. Keep it on localhost; reach it from another machine through an SSH
    tunnel (``ssh -L 8765:127.0.0.1:8765 gpu-host``)."""
    port: int = Field(8765, ge=1, le=65535)
    """The HTTP transport's port (``--port`` overrides it)."""
    token: SecretStr | None = None
    """The bearer token HTTP clients must send (``Authorization: Bearer TOKEN``); a request without it is refused
    with 401. Unset: ``kernelpro mcp --transport http`` makes one and prints it on stderr at start."""
    max_resources: int = Field(200, ge=1)
    """Tool outputs kept as resources (``kernelpro://results/...``); the oldest go first."""
