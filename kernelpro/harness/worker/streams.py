"""What a long-lived worker sends back, read on threads of the judge's process: its output, one job's part at a
time (up to the job's end marker), and its JSON messages."""

from __future__ import annotations

import os
import queue
import threading
from typing import Any

from kernelpro.harness.worker.persistent import OUTPUT_MARKER
from kernelpro.harness.worker.watched import json_messages


class JobOutput(threading.Thread):
    """Drains the worker's stdout+stderr, keeping the tail of the current job's part (up to its end marker)."""

    def __init__(self, stream: Any, keep: int) -> None:
        super().__init__(daemon=True)
        self.stream, self.keep = stream, keep
        self.lock = threading.Lock()
        self.marker = b""
        self.tail, self.total, self.pending = b"", 0, b""
        self.ended = threading.Event()

    def begin(self, nonce: str) -> None:
        with self.lock:
            self.marker = f"{OUTPUT_MARKER}{nonce}]\n".encode()
            self.tail, self.total, self.pending = b"", 0, b""
            self.ended.clear()

    def _account(self, data: bytes) -> None:
        self.total += len(data)
        self.tail = (self.tail + data)[-self.keep:]

    def _read(self) -> bytes:
        try:
            return self.stream.read1(65536)
        except (ValueError, OSError):  # the handle closed the stream under us (a worker stopped): its end
            return b""

    def run(self) -> None:
        while chunk := self._read():
            with self.lock:
                if not self.marker or self.ended.is_set():
                    continue  # between jobs: nobody's output
                data = self.pending + chunk
                at = data.find(self.marker)
                if at >= 0:
                    self._account(data[:at])
                    self.pending = b""
                    self.ended.set()
                    continue
                keep = len(self.marker) - 1  # a marker may straddle two reads
                self._account(data[:-keep] if len(data) > keep else b"")
                self.pending = data[-keep:] if len(data) > keep else data
        with self.lock:
            self._account(self.pending)
            self.pending = b""
            self.ended.set()


class Channel(threading.Thread):
    """Reads the worker's JSON lines into a queue; the handle keeps those with the nonce it expects."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.file = os.fdopen(fd, "rb")
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def run(self) -> None:
        for message in json_messages(self.file):
            self.messages.put(message)
        self.messages.put(None)  # the worker closed its end
