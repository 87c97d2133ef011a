"""The streamable HTTP transport, for clients on other machines: on localhost, behind a bearer token.

Every request must carry ``Authorization: Bearer TOKEN``; the SDK's bearer middleware answers any other with
401 before it reaches the server. The token is compared in constant time. Host and Origin headers are checked
against localhost (the SDK's DNS-rebinding protection), so a web page cannot drive the server either.
"""

from __future__ import annotations

import secrets

from mcp.server import Server
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from starlette.applications import Starlette

PATH = "/mcp"


class StaticToken(TokenVerifier):
    """Accepts exactly one token, the server's own."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("the HTTP transport needs a non-empty token")
        self._token = token

    async def verify_token(self, token: str) -> AccessToken | None:
        if secrets.compare_digest(token.encode(), self._token.encode()):
            return AccessToken(token=token, client_id="kernelpro-mcp-client", scopes=[])
        return None


def new_token() -> str:
    return secrets.token_urlsafe(32)


def http_app(server: Server, token: str, host: str = "127.0.0.1") -> Starlette:
    """The ASGI app serving ``server`` at ``/mcp``, refusing requests without ``token``."""
    auth = AuthSettings(issuer_url=f"http://{host}", resource_server_url=None)
    return server.streamable_http_app(streamable_http_path=PATH, host=host, auth=auth,
                                      token_verifier=StaticToken(token))


def serve_http(server: Server, token: str, host: str, port: int) -> None:
    """Serve until interrupted."""
    import uvicorn

    uvicorn.run(http_app(server, token, host), host=host, port=port, log_level="warning")
