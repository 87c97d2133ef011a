"""One process at a time drives a run or a suite: a second ``--resume`` of a live one is refused.

Two drivers of one suite would each start its pending problems, judge them twice and overwrite each other's
ledger rows; two ``optimize`` processes on one run would write one checkpoint from two graphs. That happens
when a run is resumed while the first process still lives (a second terminal, a scheduler's retry, a
wrapper killed while its child went on). Each driver holds an exclusive ``flock`` on ``.driver.lock`` in the
directory for as long as it runs. The kernel drops the lock when the process dies, however it dies, so a
resume after a crash or a SIGKILL always gets it. The file names its holder for the refusal's message. The
descriptor is close-on-exec, so a child a driver starts (a lane's ``optimize``) never keeps the lock alive.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

LOCK_NAME = ".driver.lock"


class RunBusy(Exception):
    """Another live process drives this directory."""


class RunLock:
    """The held lock of one directory; ``release`` (or the process's end) lets the next driver in."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd, self.path = fd, path

    @classmethod
    def acquire(cls, directory: Path, what: str) -> RunLock:
        """Take ``directory``'s lock now (an instant's holder waited out), or raise ``RunBusy`` naming the process
        that holds it."""
        path = Path(directory) / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        if not _take(fd, fcntl.LOCK_EX):
            holder = _holder(fd)
            os.close(fd)
            raise RunBusy(f"{what} is being run by another process{holder}; wait for it to end or stop it, "
                          "then resume")
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode())
        return cls(fd, path)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def is_held(directory: Path) -> bool:
    """Whether a live process drives ``directory`` now. It asks by taking the lock shared for an instant, which a
    driver's ``acquire`` waits out. A directory without a lock file was never driven; one whose lock file cannot
    be read is taken as driven, since nothing says otherwise."""
    try:
        fd = os.open(Path(directory) / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        return not _take(fd, fcntl.LOCK_SH, tries=1)
    finally:
        os.close(fd)  # and with it the shared lock, if it was had


def _take(fd: int, mode: int, tries: int = 20) -> bool:
    """``flock`` without blocking, tried again for up to a tenth of a second: a holder for an instant (``is_held``
    asking) is waited out, a driver is not."""
    for attempt in range(tries):
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if attempt + 1 < tries:
                time.sleep(0.005)
    return False


def _holder(fd: int) -> str:
    try:
        record = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return ""
    if not record.get("pid"):
        return ""
    return f" (pid {record['pid']} on {record.get('host', '?')}, since {record.get('since', '?')})"
