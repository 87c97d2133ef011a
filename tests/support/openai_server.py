"""A real loopback HTTP server speaking the OpenAI chat-completions API, serving scripted replies.

Replies come from a queue (``server.queue(...)``) or a function of the request body (``server.responder``).
A reply is a string (the assistant's text), a ``Completion`` (text, tool calls, token counts) or an ``HttpError``.
Every request body is recorded in ``server.requests``, so tests assert what was sent, not only what came back.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

MODEL_IDS = ("test-model",)


@dataclass
class Completion:
    """One assistant message; token counts default to word counts of the request and the reply."""

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def probe_reply(body: dict[str, Any]) -> Completion | None:
    """What a model that calls tools answers to kernelpro's tool-calling probe (``kernelpro.llm.probe``), or None
    if ``body`` is not the probe. A responder that scripts a conversation answers the probe with this first, so
    a process's one probe does not take the conversation's first reply."""
    from kernelpro.llm.probe import PROBE_TOOL

    names = [tool.get("function", {}).get("name") for tool in body.get("tools") or []]
    if names == [PROBE_TOOL["function"]["name"]]:
        return Completion(None, [(PROBE_TOOL["function"]["name"], {"ready": True})])
    return None


@dataclass
class HttpError:
    """An error status with an OpenAI-style error body, e.g. 429 (rate limit) or 500."""

    status: int
    message: str = "scripted failure"


Reply = str | Completion | HttpError
Responder = Callable[[dict[str, Any]], Reply]


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def _words(value: Any) -> int:
    return len(json.dumps(value).split()) if not isinstance(value, str) else len(value.split())


class OpenAIServer:
    """``with OpenAIServer() as server:`` serves on ``server.base_url`` (``http://127.0.0.1:<port>/v1``)."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.responder: Responder | None = None
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="openai-server", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def completions(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def __enter__(self) -> OpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(body)
        return HttpError(500, "the test server has no scripted reply left")

    def _completion_body(self, body: dict[str, Any], reply: Completion) -> dict[str, Any]:
        calls = [{"id": f"call_{next(self._ids)}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(args)}} for name, args in reply.tool_calls]
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if calls:
            message["tool_calls"] = calls
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else _words(body.get("messages", []))
        completion = (reply.completion_tokens if reply.completion_tokens is not None
                      else _words(reply.content or "") + sum(_words(args) for _, args in reply.tool_calls))
        return {"id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion", "created": 0,
                "model": body.get("model", MODEL_IDS[0]),
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion}}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send_json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                server.requests.append(RecordedRequest(self.path, dict(self.headers), {}))
                if self.path.rstrip("/").endswith("/models"):
                    models = [{"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in MODEL_IDS]
                    self._send_json(200, {"object": "list", "data": models})
                else:
                    self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(RecordedRequest(self.path, dict(self.headers), body))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                reply = server._next_reply(body)
                if isinstance(reply, HttpError):
                    kind = "rate_limit_exceeded" if reply.status == 429 else "server_error"
                    self._send_json(reply.status, {"error": {"message": reply.message, "type": kind, "code": kind}})
                    return
                completion = server._completion_body(body, Completion(reply) if isinstance(reply, str) else reply)
                if body.get("stream"):
                    self._stream(completion, include_usage=bool((body.get("stream_options") or {})
                                                                .get("include_usage")))
                else:
                    self._send_json(200, completion)

            def _stream(self, completion: dict[str, Any], include_usage: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for chunk in _chunks(completion, include_usage):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler


def _chunks(completion: dict[str, Any], include_usage: bool) -> Iterator[dict[str, Any]]:
    """The completion as SSE chunks: role, text in pieces, each tool call (name, then arguments in pieces)."""
    head = {key: completion[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return head | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    text = message.get("content") or ""
    for start in range(0, len(text), 7):
        yield chunk({"content": text[start:start + 7]})
    for index, call in enumerate(message.get("tool_calls", [])):
        yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                     "function": {"name": call["function"]["name"], "arguments": ""}}]})
        arguments = call["function"]["arguments"]
        for start in range(0, len(arguments), 9):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[start:start + 9]}}]})
    yield chunk({}, choice["finish_reason"])
    if include_usage:
        yield head | {"choices": [], "usage": completion["usage"]}


@pytest.fixture(name="openai_server")
def openai_server_fixture() -> Iterator[OpenAIServer]:
    """The ``openai_server`` fixture: a started loopback server. A test module imports ``openai_server_fixture``
    (``# noqa: F401``) and asks for ``openai_server``; the names differ so that the argument shadows nothing."""
    with OpenAIServer() as server:
        yield server
