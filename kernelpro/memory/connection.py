"""One ChromaDB client per store directory and process, safe when several processes share the directory.

Chroma's persistent client is not process-safe: each process keeps the vector index in memory, and a process
holding a stale copy can write it back over another's additions. So every operation holds an exclusive file
lock on the directory, and every writer bumps a generation counter before it writes. A process that finds a
generation other than the one it last saw reopens its client, which reads the current state from disk. A
writer killed mid-way releases the lock with its process and has already bumped the counter, so the others
reopen rather than trust what they hold.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import chromadb
from chromadb.api import ClientAPI
from chromadb.config import Settings as ChromaSettings
from chromadb.errors import ChromaError

from kernelpro.atomic_write import write_atomic
from kernelpro.memory.errors import MemoryStoreError

LOCK_FILE = ".kernelpro-lock"
GENERATION_FILE = ".kernelpro-generation"


class Connection:
    """The process's client for one store directory, used only inside :meth:`session`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.epoch = 0
        """Incremented whenever the client is reopened; objects taken from an older client are stale."""
        self._thread_lock = threading.Lock()
        self._lock_file: IO[str] | None = None
        self._client: ClientAPI | None = None
        self._seen_generation: int | None = None

    @contextmanager
    def session(self, write: bool) -> Iterator[ClientAPI]:
        """The client, current with the directory, with every other process and thread kept out.

        Not re-entrant: a session must not open another. Chroma's errors come out as MemoryStoreError.
        """
        with self._thread_lock:
            lock_file = self._open_lock_file()
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            try:
                generation = self._read_generation()
                if self._client is None or generation != self._seen_generation:
                    self._reopen()
                if write:
                    generation += 1
                    self._write_generation(generation)
                self._seen_generation = generation
                yield self._client  # type: ignore[misc]
            except ChromaError as exc:
                self._close_client()  # what it holds may be half-updated: the next session reopens
                raise MemoryStoreError(f"the memory store at {self.path} failed: {exc}") from exc
            finally:
                fcntl.flock(lock_file, fcntl.LOCK_UN)

    def close(self) -> None:
        """Release the client and the lock file; a later session opens them again."""
        with self._thread_lock:
            self._close_client()
            if self._lock_file is not None:
                self._lock_file.close()
                self._lock_file = None

    def _open_lock_file(self) -> IO[str]:
        if self._lock_file is None:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
                self._lock_file = open(self.path / LOCK_FILE, "a")  # noqa: SIM115 (held for the process)
            except OSError as exc:
                raise MemoryStoreError(f"cannot use {self.path} as the memory store: {exc}") from exc
        return self._lock_file

    def _read_generation(self) -> int:
        try:
            return int((self.path / GENERATION_FILE).read_text() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def _write_generation(self, generation: int) -> None:
        write_atomic(self.path / GENERATION_FILE, str(generation))

    def _reopen(self) -> None:
        self._close_client()
        try:
            # No telemetry: the memory never reaches the network.
            self._client = chromadb.PersistentClient(
                path=str(self.path), settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False)
            )
        except Exception as exc:
            raise MemoryStoreError(f"cannot open the memory store at {self.path}: {exc}") from exc
        self.epoch += 1

    def _close_client(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            client.close()


_connections: dict[Path, Connection] = {}
_connections_lock = threading.Lock()


def connection_for(path: Path) -> Connection:
    """The one connection of this process to the store at ``path``."""
    resolved = path.expanduser().resolve()
    with _connections_lock:
        if resolved not in _connections:
            _connections[resolved] = Connection(resolved)
        return _connections[resolved]


def close_all() -> None:
    """Close every connection of this process (tests, and processes that want to drop their clients)."""
    with _connections_lock:
        for connection in _connections.values():
            connection.close()
        _connections.clear()


def _forget_inherited() -> None:
    # A forked child must not use its parent's client or lock file (or a lock held at fork): it starts afresh.
    global _connections_lock
    _connections.clear()
    _connections_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_inherited)
