"""The MCP server's tools: the agents' catalogue (``tools.faces.CATALOGUE``) with the same pydantic schemas,
bound to one ``ToolContext`` whose judge lives as long as the server.

A call is validated against its schema first: arguments that do not fit, a failure inside the tool, or a problem
file that cannot be read come back as a tool error (``isError``) whose text says what to change. A reply is short
text plus links to resources holding the whole output (and the files a profile wrote).
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

import mcp_types as types
from pydantic import BaseModel, Field, ValidationError

from kernelpro.mcp.resources import ResourceStore
from kernelpro.problem import Problem, ProblemError, load_problem
from kernelpro.tools import faces
from kernelpro.tools import schemas as s
from kernelpro.tools.context import ToolContext
from kernelpro.tools.registry import MAX_CONTENT_CHARS, validation_message

REFERENCE = Field(None, description="Path of the KernelBench problem file (Model, get_inputs, get_init_inputs) to "
                                    "work against; default: the problem the server was started with.")


class JudgeCandidateArgs(s.JudgeArgs):
    reference: str | None = REFERENCE


class ProfileCandidateArgs(s.ProfileArgs):
    reference: str | None = REFERENCE


# Over MCP the problem is named per call (a client may work on several); the agents' runs have theirs fixed.
PROBLEM_TOOLS: dict[str, type[BaseModel]] = {"judge_candidate": JudgeCandidateArgs, "profile": ProfileCandidateArgs}
WRITES = frozenset({"memory_write"})


class UnknownTool(KeyError):
    pass


def jsonable(value: Any) -> Any:
    """A tool's artifact as plain JSON: models and dataclasses dumped, binaries (cubins) summarised by size."""
    if isinstance(value, BaseModel):
        return jsonable(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _link(resource: types.Resource) -> types.ResourceLink:
    return types.ResourceLink(uri=resource.uri, name=resource.name, description=resource.description,
                              mime_type=resource.mime_type, size=resource.size)


def _profile_files(artifact: Any) -> list[Path]:
    profile = artifact.get("profile") if isinstance(artifact, dict) else None
    paths = [profile.get(key) for key in ("csv_path", "report_path")] if isinstance(profile, dict) else []
    return [Path(p) for p in paths if p and Path(p).is_file()]


class ToolSession:
    """Every catalogue tool over one context. Calls run one at a time: they share one judge and lazily opened
    backends (the CUTLASS index, the memory store), none of which is built for concurrent use."""

    def __init__(self, context: ToolContext, store: ResourceStore) -> None:
        self.context, self.store = context, store
        self.default_problem = context.problem
        self.tools = {name: (description, PROBLEM_TOOLS.get(name, schema), binder)
                      for name, description, schema, binder in faces.CATALOGUE}
        self._lock = threading.Lock()

    def listed(self) -> list[types.Tool]:
        return [types.Tool(name=name, description=description, input_schema=schema.model_json_schema(),
                           annotations=types.ToolAnnotations(read_only_hint=name not in WRITES,
                                                             destructive_hint=False, open_world_hint=False))
                for name, (description, schema, _) in self.tools.items()]

    def _problem(self, reference: str | None) -> Problem:
        if reference:
            return load_problem(Path(reference).expanduser())
        if self.default_problem is None:
            raise ProblemError("no problem: give `reference`, the path of a KernelBench problem file, or start the "
                               "server with one (kernelpro mcp REFERENCE.py)")
        return self.default_problem

    def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        if name not in self.tools:
            raise UnknownTool(f"no tool named {name!r}; tools/list names the {len(self.tools)} there are")
        description, schema, binder = self.tools[name]
        try:
            args = schema.model_validate(arguments)
        except ValidationError as error:
            return _error(f"{name}: {validation_message(error)}")
        with self._lock:
            try:
                if name in PROBLEM_TOOLS:
                    self.context.problem = self._problem(getattr(args, "reference", None))
                content, artifact = binder(self.context)(**args.model_dump(exclude={"reference"}))
            except ProblemError as error:
                return _error(f"{name}: {error}")
            except Exception as error:  # noqa: BLE001 - any failure is the client's to read, never the server's end
                return _error(f"{name} failed: {type(error).__name__}: {error}")
        output = self.store.add_output(name, jsonable(artifact), f"the whole output of {name}")
        files = [self.store.add_file(path, f"written by {name}") for path in _profile_files(artifact)]
        if len(content) > MAX_CONTENT_CHARS:
            cut = len(content) - MAX_CONTENT_CHARS
            content = f"{content[:MAX_CONTENT_CHARS]}\n... ({cut} more characters: read {output.uri})"
        return types.CallToolResult(content=[types.TextContent(text=content), _link(output),
                                             *(_link(f) for f in files)])

    def close(self) -> None:
        if self.context.evaluator is not None:
            self.context.evaluator.close()
