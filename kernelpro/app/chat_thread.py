"""A chat thread set up from the settings, for `kernelpro chat` and the chat's LangGraph Studio graph alike.

``create_thread`` makes a new thread's directory (``thread.json``: the problem's path, the device, and what the
caller records beside them); ``thread_session`` builds a thread's session from its files (its problem loaded, one
judge for the whole chat, the tools, the model: ``compose.build_chat_session``). A thread driven by this process
(`kernelpro chat`) is opened with ``open_chat_thread``: its SQLite checkpointer, the chat graph compiled with it,
its meter going on from the usage checkpointed, and a ``Conversation`` (``chat/turn.py``) that drives it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelpro.chat.files import ChatFiles
from kernelpro.chat.session import ChatBudgets, ChatSession
from kernelpro.chat.turn import Conversation
from kernelpro.config import Settings


def create_thread(settings: Settings, reference: Path, device: str = "auto", *, chats_dir: Path | None = None,
                  thread_id: str | None = None, id_prefix: str = "", meta: dict[str, Any] | None = None
                  ) -> ChatFiles:
    """A new thread about the problem ``reference`` on ``device`` (``auto``: the settings' device, resolved), under
    ``chats_dir`` (default ``chat.dir``), as ``thread_id`` or an id made from ``id_prefix`` and the problem's name.
    Raises ``ProblemError`` for a problem that does not load, ValueError for an id that cannot name a thread."""
    from kernelpro.harness.judge import resolve_device
    from kernelpro.problem import load_problem
    from kernelpro.runs.files import new_run_id

    problem = load_problem(reference)
    device = resolve_device(device if device != "auto" else settings.device)
    return ChatFiles.create(chats_dir or settings.chat.dir, thread_id or new_run_id(f"{id_prefix}{problem.name}"),
                            {"problem_path": str(Path(reference).resolve()), "device": device, **(meta or {})})


def thread_session(settings: Settings, files: ChatFiles, *, budgets: ChatBudgets | None = None,
                   meter: Any = None) -> ChatSession:
    """The session of the thread ``files`` hold: its problem and device as ``thread.json`` records them."""
    from kernelpro.app.compose import build_chat_session
    from kernelpro.app.devices import device_name
    from kernelpro.problem import load_problem

    meta = files.meta()
    reference, device = Path(meta["problem_path"]), meta["device"]
    return build_chat_session(settings, load_problem(reference), reference, device, device_name(device), files,
                              budgets=budgets, meter=meter)


@dataclass
class ChatThread:
    """A thread this process drives: its conversation, and what ``close`` lets go (the judge's worker, the
    checkpointer)."""

    conversation: Conversation
    resumed: bool
    turns: int
    """The user's messages in the thread before this session."""
    _conn: sqlite3.Connection

    @property
    def session(self) -> ChatSession:
        return self.conversation.session

    def close(self) -> None:
        self.session.close()  # stops the chat's judging worker
        self._conn.close()


def open_chat_thread(settings: Settings, files: ChatFiles, *, resumed: bool, budgets: ChatBudgets | None = None,
                     candidate: Path | None = None) -> ChatThread:
    """The thread ``files`` hold, opened to be driven here. ``candidate``: the kernel under discussion, put in the
    state from the start (a new thread starts with none unless given)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from kernelpro.chat.graph import builder
    from kernelpro.llm.models import UsageMeter

    conn = sqlite3.connect(files.checkpoint, check_same_thread=False)
    session = None
    try:
        graph = builder().compile(checkpointer=SqliteSaver(conn))
        config: dict[str, Any] = {"configurable": {"thread_id": files.thread_id},
                                  "recursion_limit": settings.chat.max_steps}
        previous = graph.get_state(config).values
        meter = UsageMeter.from_dict(previous["usage"], settings) if previous.get("usage") else UsageMeter(settings)
        session = thread_session(settings, files, budgets=budgets, meter=meter)
        if candidate is not None or not resumed:  # the kernel under discussion, in the state from the start
            graph.update_state(config, {"candidate": str(candidate.resolve()) if candidate else "",
                                        "previous": previous.get("candidate", "")}, as_node="agent")
    except BaseException:
        if session is not None:
            session.close()
        conn.close()
        raise
    turns = sum(1 for m in previous.get("messages", []) if getattr(m, "type", "") == "human")
    return ChatThread(Conversation(session, graph, config), resumed, turns, conn)
