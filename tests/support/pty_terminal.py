"""A command on a pseudo-terminal of its own, driven like a person at a keyboard: send keys, expect output.

Standard library only. The terminal is the process's controlling terminal, so Ctrl-C (``send("\\x03")``) is a
real SIGINT from the line discipline, as at a real keyboard."""

from __future__ import annotations

import fcntl
import os
import re
import select
import subprocess
import termios
import time
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


class Terminal:
    """A process on a pseudo-terminal of its own (its controlling terminal, so Ctrl-C is a real SIGINT)."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.fd, child = os.openpty()
        self.proc = subprocess.Popen(args, env={**env, "COLUMNS": "160", "TERM": "xterm"}, cwd=cwd, stdin=child,
                                     stdout=child, stderr=child, start_new_session=True,
                                     preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(child)
        self.seen = ""  # output not yet matched
        self.log = ""  # everything the process wrote, as shown (escape codes kept)

    def expect(self, pattern: str, timeout: float = 60.0) -> str:
        """Read until ``pattern`` (a regex) appears in the output after what was matched before."""
        deadline = time.monotonic() + timeout
        while True:
            found = re.search(pattern, ANSI.sub("", self.seen))
            if found:
                plain = ANSI.sub("", self.seen)
                self.seen = plain[found.end():]
                return plain[:found.end()]
            left = deadline - time.monotonic()
            ended = False
            if left > 0 and select.select([self.fd], [], [], min(left, 0.5))[0]:
                try:
                    chunk = os.read(self.fd, 65536).decode(errors="replace")
                    self.seen += chunk
                    self.log += chunk
                except OSError:  # the process closed its side
                    ended = self.proc.poll() is not None
            if left <= 0 or ended:
                raise AssertionError(f"no {pattern!r} in the output; it ends with: {ANSI.sub('', self.seen)[-2000:]}")

    @property
    def plain_log(self) -> str:
        return ANSI.sub("", self.log)

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        os.close(self.fd)
