"""The judge's own processes, watched: a worker, the referee and the processes serving its two models, the second
opinion's process.

Each is ``python -m MODULE FD...`` in a directory of its own (``worker.dirs``), with the environment its caller gives
(``sandbox.worker_environment``: no credentials), in a session and process group of its own so that everything it
starts dies with it. Its job goes in on stdin as one JSON object. Its answers come back as JSON lines on a pipe of
its own, and only the lines carrying the job's nonce count; what the code it runs prints anywhere else is its
output, of which the tail is kept. While it runs, the judge watches the deadline and the resident memory of each
process's whole tree; at the end every group is killed, the readers joined and the directories removed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import psutil

from kernelpro.harness.deadline import Deadline
from kernelpro.harness.worker.dirs import make_worker_dir


def json_messages(file: BinaryIO) -> Iterator[dict[str, Any]]:
    """The JSON objects a process wrote, one a line, until it closes its end; anything else is skipped."""
    for line in file:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            yield message


class ChannelReader(threading.Thread):
    """Reads a process's JSON lines: its phases and its result (an object), from the lines that carry ``nonce``;
    each is shown to ``deadline`` (the limits its phases change), where one is given."""

    def __init__(self, fd: int, nonce: str, deadline: Deadline | None = None) -> None:
        super().__init__(daemon=True)
        self.file, self.nonce, self.deadline = os.fdopen(fd, "rb"), nonce, deadline
        self.phases: list[str] = []
        self.result: dict[str, Any] | None = None

    def run(self) -> None:
        for message in json_messages(self.file):
            if message.get("nonce") != self.nonce:
                continue
            if self.deadline is not None:
                self.deadline.observe(message)
            if "phase" in message:
                self.phases.append(str(message["phase"]))
            if isinstance(message.get("result"), dict):
                self.result = message["result"]


class TailReader(threading.Thread):
    """Drains a stream, keeping only its last ``keep`` bytes and counting the rest."""

    def __init__(self, stream: Any, keep: int) -> None:
        super().__init__(daemon=True)
        self.stream, self.keep = stream, keep
        self.tail, self.total = b"", 0

    def run(self) -> None:
        while chunk := self.stream.read1(65536):
            self.total += len(chunk)
            self.tail = (self.tail + chunk)[-self.keep:]

    def text(self) -> str:
        return self.tail.decode("utf-8", errors="replace")


def start_module(module: str, fds: Sequence[int], job: dict[str, Any] | None, prefix: str,
                 environment: Callable[[str], dict[str, str]]) -> tuple[subprocess.Popen, str]:
    """``python -m module FD...`` in a new directory named from ``prefix``, with ``environment(directory)``, the
    ``fds`` passed to it, in a session of its own; ``job`` written to its stdin (None: later, by ``send_job``).
    The process and its directory."""
    workdir = make_worker_dir(prefix)
    proc = subprocess.Popen([sys.executable, "-m", module, *map(str, fds)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=workdir,
                            env=environment(workdir), pass_fds=tuple(fds), start_new_session=True)
    if job is not None:
        send_job(proc, job)
    return proc, workdir


def send_job(proc: subprocess.Popen, job: dict[str, Any]) -> None:
    """``job`` on the process's stdin, which is then closed: a process reads its whole job before it starts it."""
    try:
        proc.stdin.write(json.dumps(job).encode())
        proc.stdin.close()
    except BrokenPipeError:  # it ended already: its exit code and output say why
        pass


def tree_rss_mb(process: psutil.Process) -> float:
    """The resident memory of ``process`` and everything it started, in MiB."""
    total = 0
    for proc in [process, *process.children(recursive=True)]:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total / (1 << 20)


@dataclass(frozen=True)
class Stop:
    """Why the watch stopped a process before it ended: ``timeout``, or ``memory`` at ``rss_mb``."""

    why: str
    rss_mb: float = 0.0


def watch(processes: Sequence[subprocess.Popen], expired: Callable[[], bool], memory_limit_mb: float,
          done: Callable[[], bool] = lambda: False, each: Callable[[], None] | None = None) -> Stop | None:
    """Wait until the first of ``processes`` ends or ``done()``; a ``Stop`` where ``expired()`` came first or one
    process's tree passed ``memory_limit_mb`` of resident memory. ``each`` runs at every look (every 50 ms)."""
    trees = [psutil.Process(proc.pid) for proc in processes]
    while processes[0].poll() is None and not done():
        if each is not None:
            each()
        if expired():
            return Stop("timeout")
        for tree in trees:
            if (rss := tree_rss_mb(tree)) > memory_limit_mb:
                return Stop("memory", rss)
        time.sleep(0.05)
    return None


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the process and everything it started (they share its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def end(processes: Sequence[subprocess.Popen], readers: Sequence[threading.Thread], directories: Sequence[str]) -> None:
    """Every process's group killed and waited for, the readers joined, the directories removed."""
    for proc in processes:
        kill_group(proc)
        proc.wait()
    for reader in readers:
        reader.join(timeout=5)
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)
