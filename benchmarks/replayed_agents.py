"""Every agent of an optimisation run played by the loopback OpenAI-compatible test server with real
LLM-written code: the planner proposes three ideas, the coder answers with a candidate that ``pick`` chooses
for the request (a CUDA-L1 kernel, for example), the profiler-interpreter and the critic give short readings.

Used by the GPU benchmarks that run the real graph without a reachable model (``search_policies_gpu.py``,
``suite_replay.py``); the candidates are judged, profiled and re-judged by the real pipeline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tests.support.openai_server import Completion, OpenAIServer, probe_reply

ROLES = ("planner", "coder", "profiler-interpreter", "critic")
PROBLEM_HEADING = re.compile(r"## Problem `([^`]+)`")


def role_of(body: dict[str, Any]) -> str:
    if probe_reply(body) is not None:
        return "probe"  # the tool-calling probe, once per process
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    return next((role for role in ROLES if f"You are the {role}" in str(system)), "critic")


def problem_of(body: dict[str, Any]) -> str | None:
    """The problem's name in a coder request (its prompt's heading), or None."""
    for message in body["messages"]:
        if match := PROBLEM_HEADING.search(str(message.get("content") or "")):
            return match.group(1)
    return None


def replay(server: OpenAIServer, pick: Callable[[dict[str, Any]], str]) -> None:
    """Answer every request on ``server``; ``pick(body)`` gives the coder's candidate source for a request."""
    plan = {"analysis": "replayed", "ideas": [
        {"title": f"idea {i}", "description": f"rewrite the hot path, variant {i}", "rationale": "replayed",
         "techniques": ["fusion" if i % 2 else "tiling"], "expected_speedup": 1.5 + 0.25 * i} for i in range(3)]}

    def respond(body: dict[str, Any]) -> Completion:
        if (probed := probe_reply(body)) is not None:  # each process's tool-calling probe: a proper tool call
            return probed
        role = role_of(body)
        if role == "planner":
            return Completion(f"Plan:\n```json\n{json.dumps(plan)}\n```", prompt_tokens=2000, completion_tokens=300)
        if role == "coder":
            answer = {"summary": "a replayed LLM-written kernel", "code": "@python:1"}
            return Completion(f"```python\n{pick(body).rstrip()}\n```\n```json\n{json.dumps(answer)}\n```",
                              prompt_tokens=3000, completion_tokens=400)
        if role == "profiler-interpreter":
            reading = {"limiter": "replayed", "evidence": ["replayed"], "next_steps": ["replayed"]}
            return Completion(f"```json\n{json.dumps(reading)}\n```", prompt_tokens=1500, completion_tokens=100)
        review = {"verdict": "credible", "risks": [], "supports_idea": True, "techniques": ["fusion"],
                  "lesson": "replayed"}
        return Completion(f"```json\n{json.dumps(review)}\n```", prompt_tokens=1500, completion_tokens=100)

    server.responder = respond


def loopback_environment(server: OpenAIServer, memory_dir: str) -> dict[str, str]:
    """The settings that point kernelpro at ``server`` (and a scratch search memory), as environment variables."""
    return {"KERNELPRO_LLM__MODEL": "openai/test-model", "KERNELPRO_LLM__API_BASE": server.base_url,
            "KERNELPRO_LLM__API_KEY": "sk-loopback", "KERNELPRO_LLM__RETRY_BACKOFF_S": "0.01",
            "KERNELPRO_MEMORY__PATH": memory_dir}
