"""What the MCP server keeps for its clients to read: every tool's full output, and the files profiles wrote.

A tool's reply carries a short text and links to these; the bulk (a judged verdict with every timing, a
diagnosis with each kernel's evidence, a profile's CSV and .ncu-rep) is read on demand with ``resources/read``.
Outputs are held in memory, the newest ``limit`` of them; files are read from disk when asked for.
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types

SCHEME = "kernelpro"
FILE_TYPES = {".csv": "text/csv", ".ncu-rep": "application/octet-stream", ".json": "application/json",
              ".txt": "text/plain"}


class UnknownResource(KeyError):
    pass


@dataclass(frozen=True)
class Held:
    resource: types.Resource
    text: str | None = None  # an output held in memory
    path: Path | None = None  # a file read when asked for


class ResourceStore:
    """Resources by URI, oldest first; thread-safe (tools run in worker threads)."""

    def __init__(self, limit: int = 200) -> None:
        self.limit = limit
        self._held: OrderedDict[str, Held] = OrderedDict()
        self._count = itertools.count(1)
        self._lock = threading.Lock()

    def _put(self, held: Held) -> types.Resource:
        with self._lock:
            self._held[held.resource.uri] = held
            while len(self._held) > self.limit:
                self._held.popitem(last=False)
        return held.resource

    def add_output(self, tool: str, data: Any, description: str) -> types.Resource:
        """A tool's full output, as JSON."""
        text = json.dumps(data, default=str, indent=1)
        uri = f"{SCHEME}://results/{next(self._count)}/{tool}.json"
        resource = types.Resource(uri=uri, name=f"{tool} output", description=description,
                                  mime_type="application/json", size=len(text.encode()))
        return self._put(Held(resource, text=text))

    def add_file(self, path: Path, description: str) -> types.Resource:
        """A file a tool wrote (a profile's CSV or report), read from disk when asked for."""
        name = path.name
        uri = f"{SCHEME}://files/{next(self._count)}/{name}"
        mime = next((m for suffix, m in FILE_TYPES.items() if name.endswith(suffix)), "application/octet-stream")
        resource = types.Resource(uri=uri, name=name, description=description, mime_type=mime,
                                  size=path.stat().st_size if path.is_file() else None)
        return self._put(Held(resource, path=path))

    def listed(self) -> list[types.Resource]:
        with self._lock:
            return [held.resource for held in self._held.values()]

    def read(self, uri: str) -> types.TextResourceContents | types.BlobResourceContents:
        with self._lock:
            held = self._held.get(uri)
        if held is None:
            raise UnknownResource(f"no resource {uri}: it was never made, or it is older than the newest "
                                  f"{self.limit} this server keeps; resources/list shows what is held")
        mime = held.resource.mime_type
        if held.text is not None:
            return types.TextResourceContents(uri=uri, mime_type=mime, text=held.text)
        try:
            data = held.path.read_bytes()  # type: ignore[union-attr]
        except OSError as error:
            raise UnknownResource(f"{uri}: its file {held.path} cannot be read ({error.strerror})") from None
        if mime and mime.startswith("text/"):
            return types.TextResourceContents(uri=uri, mime_type=mime, text=data.decode("utf-8", errors="replace"))
        return types.BlobResourceContents(uri=uri, mime_type=mime, blob=base64.b64encode(data).decode("ascii"))
