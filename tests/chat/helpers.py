"""A chat session in tests: the real CPU judge, real tools, real files; only the model is scripted."""

from __future__ import annotations

from pathlib import Path

from kernelpro.app.compose import build_chat_session
from kernelpro.chat.files import ChatFiles
from kernelpro.chat.session import ChatBudgets, ChatSession
from kernelpro.config import Settings
from kernelpro.llm.models import UsageMeter
from tests.conftest import DATA, problem

REFERENCE = DATA / "problems" / "scale_relu.py"
OPEN_SESSIONS: list[ChatSession] = []


def chat_settings(settings: Settings, tmp_path: Path) -> Settings:
    settings.chat.dir = tmp_path / "chats"
    settings.chat.confirm_gpu_s = None
    settings.memory.path = tmp_path / "memory"
    settings.compile.cache_dir = tmp_path / "compile-cache"
    settings.cutlass.index_dir = tmp_path / "cutlass-index"
    return settings


def session(settings: Settings, model=None, thread: str = "t1", budgets: ChatBudgets | None = None,
            meter: UsageMeter | None = None) -> ChatSession:
    files = ChatFiles.create(settings.chat.dir, thread, {"problem_path": str(REFERENCE), "device": "cpu"})
    built = build_chat_session(settings, problem("scale_relu"), REFERENCE, "cpu", "CPU (test)", files,
                               budgets=budgets, meter=meter or UsageMeter(settings), model=model)
    OPEN_SESSIONS.append(built)
    return built
