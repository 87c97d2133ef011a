"""A command run in its own process group and killed whole at its time limit (nvcc with its cicc and ptxas,
ncu with its target)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def run_limited(cmd: list[str], cwd: Path | str, env: dict[str, str] | None, timeout_s: float
                ) -> tuple[int | None, str, float]:
    """Returns (exit code, or None when the time limit killed it; its stdout and stderr; seconds)."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        out, _ = proc.communicate()
        code = None
    return code, out.decode("utf-8", errors="replace"), time.monotonic() - started
