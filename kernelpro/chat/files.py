"""Where chats live on disk.

    <chats_dir>/
        checkpoints.sqlite          every thread's conversation (LangGraph checkpoints, one thread id each)
        <thread_id>/thread.json     what the thread is about: problem path, candidate, device, model, created
        <thread_id>/candidates/     the candidates written in it (<name>.py) and their verdicts (<name>.json)
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from kernelpro.atomic_write import write_atomic


class ThreadNotFound(FileNotFoundError):
    pass


NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,59}$")


class ChatFiles:
    """One thread's directory."""

    def __init__(self, chats_dir: Path, thread_id: str) -> None:
        self.chats_dir = Path(chats_dir)
        self.thread_id = thread_id
        self.root = self.chats_dir / thread_id
        self.candidates = self.root / "candidates"

    @staticmethod
    def checkpoint_path(chats_dir: Path) -> Path:
        return Path(chats_dir) / "checkpoints.sqlite"

    @property
    def checkpoint(self) -> Path:
        return self.checkpoint_path(self.chats_dir)

    @property
    def meta_path(self) -> Path:
        return self.root / "thread.json"

    @classmethod
    def create(cls, chats_dir: Path, thread_id: str, meta: dict[str, Any]) -> ChatFiles:
        if not NAME.match(thread_id):
            raise ValueError(f"thread id {thread_id!r}: use letters, digits, '-', '_' or '.' (at most 60)")
        files = cls(chats_dir, thread_id)
        files.candidates.mkdir(parents=True, exist_ok=True)
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        write_atomic(files.meta_path, json.dumps({"thread_id": thread_id, "created": created, **meta}, indent=1,
                                                  default=str))
        return files

    @classmethod
    def open(cls, chats_dir: Path, thread_id: str) -> ChatFiles:
        files = cls(chats_dir, thread_id)
        if not files.meta_path.is_file():
            known = [t["thread_id"] for t in list_threads(chats_dir)][-5:]
            raise ThreadNotFound(f"no chat thread {thread_id!r} in {chats_dir}; recent ones: "
                                 f"{', '.join(known) or 'none'} (kernelpro chat --list)")
        return files

    def meta(self) -> dict[str, Any]:
        return json.loads(self.meta_path.read_text())

    def write_candidate(self, name: str, source: str) -> Path:
        """``candidates/<name>.py``; a name already taken gets ``-2``, ``-3``...: nothing written is lost."""
        stem = name[:-3] if name.endswith(".py") else name
        if not NAME.match(stem):
            raise ValueError(f"candidate name {name!r}: use letters, digits, '-', '_' or '.' (at most 60)")
        self.candidates.mkdir(parents=True, exist_ok=True)
        path, n = self.candidates / f"{stem}.py", 1
        while path.exists():
            n += 1
            path = self.candidates / f"{stem}-{n}.py"
        write_atomic(path, source)
        return path

    def write_verdict(self, candidate: Path, verdict: dict[str, Any]) -> None:
        write_atomic(candidate.with_suffix(".json"), json.dumps(verdict, indent=1, default=str))


def list_threads(chats_dir: Path) -> list[dict[str, Any]]:
    """Every thread's ``thread.json``, oldest first."""
    found = []
    for meta in Path(chats_dir).glob("*/thread.json"):
        try:
            found.append(json.loads(meta.read_text()))
        except (OSError, json.JSONDecodeError):
            continue  # a thread being written this instant; the next listing shows it
    return sorted(found, key=lambda t: (t.get("created", ""), t.get("thread_id", "")))
