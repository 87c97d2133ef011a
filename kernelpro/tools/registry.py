"""LangChain faces for what agents may call: pydantic argument schemas, concise replies, bulky data as artifacts.

Every tool answers with ``(content, artifact)``: ``content`` is short text for the model, ``artifact`` the full
data for the graph and the run record. A tool never raises into the run: a failure, or arguments that do not
fit the schema, come back as a message the model can act on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ValidationError

from kernelpro.tools import faces
from kernelpro.tools.context import Reply, ToolContext

MAX_CONTENT_CHARS = 8000


def _clip(text: str) -> str:
    if len(text) <= MAX_CONTENT_CHARS:
        return text
    return text[:MAX_CONTENT_CHARS] + f"\n... ({len(text) - MAX_CONTENT_CHARS} more characters cut)"


def validation_message(error: ValidationError) -> str:
    problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors())
    return f"invalid arguments ({problems}); call the tool again with arguments that match its schema"


def face(name: str, description: str, schema: type[BaseModel], run: Callable[..., Reply]) -> BaseTool:
    """A structured tool whose failures become messages instead of exceptions."""

    def safe(**kwargs: Any) -> Reply:
        try:
            content, artifact = run(**kwargs)
        except Exception as exc:  # noqa: BLE001 - any failure is reported to the model, never raised into the run
            return f"{name} failed: {type(exc).__name__}: {exc}", {"error": str(exc), "type": type(exc).__name__}
        return _clip(content), artifact

    return StructuredTool.from_function(func=safe, name=name, description=description, args_schema=schema,
                                        response_format="content_and_artifact",
                                        handle_validation_error=validation_message)


def build_tools(context: ToolContext, every_device: bool = False) -> list[BaseTool]:
    """Every tool that applies to ``context``'s device, bound to it (on ``cpu``, none of ``faces.GPU_ONLY``
    unless ``every_device``: a person in the chat may compile CUDA or read CUTLASS without a GPU)."""
    return [face(name, description, schema, run(context)) for name, description, schema, run in faces.CATALOGUE
            if every_device or not (context.device == "cpu" and name in faces.GPU_ONLY)]


def tools_by_name(context: ToolContext) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in build_tools(context)}


__all__ = ["ToolContext", "build_tools", "face", "tools_by_name"]
