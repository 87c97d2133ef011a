"""The chat: where its threads live, when it asks before spending GPU time, how far one answer may go."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class ChatSettings(BaseModel):
    """``kernelpro chat``: one conversation about one kernel, with the real judge and profiler as tools."""

    dir: Path = Path("kernelpro-chats")
    """Where chats live: ``checkpoints.sqlite`` (every thread's conversation) and a directory per thread with its
    ``thread.json`` and the candidates written in it."""
    confirm_gpu_s: float | None = Field(120.0, ge=0)
    """Seconds of judging and profiling a thread may spend before each further call that spends more asks the
    user first (0: ask every time; unset: never ask)."""
    max_steps: int = Field(40, ge=2)
    """Most graph steps (a model turn or a round of tool calls each) one answer may take."""
    reference: Path | None = None
    """The problem the chat opens in LangGraph Studio (``langgraph.json``), where no command line names one."""
