"""kernelpro's tool catalogue as an MCP server: tools from ``tools.faces.CATALOGUE`` with their pydantic schemas,
tool outputs and profiles as resources, stdio and token-guarded streamable HTTP transports."""
