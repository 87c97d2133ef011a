"""The chat's own tool, beside the catalogue: write a candidate to the thread's directory, judge it, and answer
with the diff against the current candidate (or the reference) and the verdict."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from kernelpro.chat.verdict import unified_diff, verdict_summary
from kernelpro.tools import faces
from kernelpro.tools.context import Reply
from kernelpro.tools.registry import face

if TYPE_CHECKING:
    from kernelpro.chat.session import ChatSession


class WriteCandidateArgs(BaseModel):
    name: str = Field(description="A short file name, e.g. 'tiled64' (saved as candidates/<name>.py in this "
                                  "chat's directory; a taken name gets a -2 suffix).")
    source: str = Field(description="A complete Python file defining ModelNew (same constructor as Model).")
    judge: bool = Field(True, description="Judge it at once (correctness, timing, guards); false: only write it.")


def write_candidate(session: ChatSession) -> Callable[..., Reply]:
    def run(**kwargs: Any) -> Reply:
        args = WriteCandidateArgs(**kwargs)
        base = session.candidate
        old = base.read_text() if base is not None and base.is_file() else session.problem.source
        old_name = base.name if base is not None else session.reference_path.name
        path = session.files.write_candidate(args.name, args.source)
        diff = unified_diff(old, args.source, old_name, path.name)
        artifact: dict[str, Any] = {"path": str(path), "base": str(base) if base else "", "diff": diff}
        lines = [f"wrote {path}", f"diff against {old_name}:", diff.rstrip()]
        if args.judge:
            content, verdict = faces.judge_candidate(session.tool_context)(source=args.source)
            session.files.write_verdict(path, verdict)
            artifact["verdict"] = verdict
            lines += [f"verdict: {verdict_summary(verdict)}", content]
        return "\n".join(lines), artifact
    return run


def chat_tools(session: ChatSession) -> list[BaseTool]:
    return [face("write_candidate", "Write a new candidate file into this chat's directory, judge it against the "
                 "reference, and show its diff against the current candidate beside the verdict. It becomes the "
                 "current candidate.", WriteCandidateArgs, write_candidate(session))]
