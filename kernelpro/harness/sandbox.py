"""Running one job in a fresh worker process, from the judge's side: limits, output capture, clean-up.

The worker gets a new empty working directory (its compile caches and temporary directory inside it), an
environment with no credentials, its own process group (so everything it starts dies with it), a wall-time
limit and a resident-memory limit.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import psutil

from kernelpro.config import HarnessSettings
from kernelpro.harness.deadline import Deadline
from kernelpro.harness.worker_dirs import make_worker_dir, private_environment

PACKAGE_ROOT = Path(__file__).resolve().parents[2]

# Only these variables reach the worker (by exact name or prefix), and never one that looks like a secret.
ENV_NAMES = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "TERM", "LD_LIBRARY_PATH", "CC", "CXX",
             "CUDAHOSTCXX", "CPATH", "LIBRARY_PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "XDG_CACHE_HOME"}
ENV_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TRITON_", "TORCH_", "TORCHINDUCTOR_", "PYTORCH_", "OMP_", "MKL_",
                "OPENBLAS_", "KMP_", "NCCL_", "NVSHMEM_", "CUTLASS_", "CUPY_", "KERNELPRO_COMPILE__")
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE", re.IGNORECASE)


def worker_environment(base: dict[str, str] | None = None, workdir: str | None = None) -> dict[str, str]:
    """The worker's environment: an allow-list of the caller's, minus anything that looks like a secret. Given the
    worker's own directory, its caches and temporary directory point there, whatever the caller's said
    (``worker_dirs``)."""
    base = dict(os.environ if base is None else base)
    env = {name: value for name, value in base.items()
           if (name in ENV_NAMES or name.startswith(ENV_PREFIXES)) and not SECRET_NAME.search(name)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), base.get("PYTHONPATH", "")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    # One compile thread unless the caller asks for more: then the worker starts Inductor's pool before the
    # candidate runs (``worker.warm_compile_pool``), and a long-lived worker restarts after such a candidate,
    # since the pool's processes outlive the job (``benchmarks/compile_threads.py`` measures what it saves: on the H200,
    # nothing for max-autotune, whose first call took 54 s with 1 thread and with 16).
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    if workdir is not None:
        env.update(private_environment(workdir))
    return env


@dataclass
class WorkerOutcome:
    """What came back from one worker process."""

    returncode: int | None
    result: dict[str, Any] | None
    phases: list[str] = field(default_factory=list)
    output_tail: str = ""
    output_bytes: int = 0
    timed_out: bool = False
    time_limit: str = ""
    """The limit that stopped it, in words (``Deadline.describe``)."""
    cut_by_caller: bool = False
    """Stopped at the caller's deadline (the job's ``until``), not by a limit of its own."""
    memory_exceeded_mb: float | None = None
    elapsed_s: float = 0.0
    turn_waited_s: float = 0.0
    """Waited mid-job for the device (``harness.share_until_timing``): alone, or shared again; not in
    ``elapsed_s``."""

    @property
    def last_phase(self) -> str:
        return self.phases[-1] if self.phases else "start-up"


class _TailReader(threading.Thread):
    """Drains a stream, keeping only its last ``keep`` bytes and counting the rest."""

    def __init__(self, stream: Any, keep: int) -> None:
        super().__init__(daemon=True)
        self.stream, self.keep = stream, keep
        self.tail, self.total = b"", 0

    def run(self) -> None:
        while chunk := self.stream.read1(65536):
            self.total += len(chunk)
            self.tail = (self.tail + chunk)[-self.keep:]


def json_messages(file: BinaryIO) -> Iterator[dict[str, Any]]:
    """The JSON objects a worker wrote, one a line, until it closes its end; anything else is skipped."""
    for line in file:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            yield message


class _ChannelReader(threading.Thread):
    """Reads the worker's JSON lines; lines without the job's nonce are ignored."""

    def __init__(self, fd: int, nonce: str, deadline: Deadline) -> None:
        super().__init__(daemon=True)
        self.file, self.nonce, self.deadline = os.fdopen(fd, "rb"), nonce, deadline
        self.phases: list[str] = []
        self.result: dict[str, Any] | None = None

    def run(self) -> None:
        for message in json_messages(self.file):
            if message.get("nonce") != self.nonce:
                continue
            self.deadline.observe(message)
            if "phase" in message:
                self.phases.append(str(message["phase"]))
            if "result" in message:
                self.result = message["result"]


def _tree_rss_mb(process: psutil.Process) -> float:
    total = 0
    for proc in [process, *process.children(recursive=True)]:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total / (1 << 20)


def run_worker(job: dict[str, Any], settings: HarnessSettings) -> WorkerOutcome:
    """Run ``job`` in a new worker and wait for its result, within the time and memory limits."""
    nonce = secrets.token_hex(16)
    workdir = make_worker_dir("kernelpro-worker-")
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelpro.harness.worker", str(write_fd)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        cwd=workdir, env=worker_environment(workdir=workdir), pass_fds=(write_fd,), start_new_session=True,
    )
    os.close(write_fd)
    deadline = Deadline(settings, started, until=job.get("until"))
    channel = _ChannelReader(read_fd, nonce, deadline)
    output = _TailReader(proc.stdout, settings.output_tail_bytes)
    channel.start()
    output.start()
    try:
        proc.stdin.write(json.dumps({**job, "nonce": nonce}).encode())
        proc.stdin.close()
    except BrokenPipeError:
        pass

    outcome = WorkerOutcome(returncode=None, result=None)
    watched = psutil.Process(proc.pid)
    while proc.poll() is None:
        if deadline.expired():
            outcome.timed_out, outcome.time_limit = True, deadline.describe()
            outcome.cut_by_caller = deadline.by_caller()
            break
        rss = _tree_rss_mb(watched)
        if rss > settings.memory_limit_mb:
            outcome.memory_exceeded_mb = rss
            break
        time.sleep(0.05)
    _kill_group(proc)
    outcome.returncode = proc.wait()
    channel.join(timeout=5)
    output.join(timeout=5)
    shutil.rmtree(workdir, ignore_errors=True)
    outcome.result, outcome.phases = channel.result, channel.phases
    outcome.output_tail = output.tail.decode("utf-8", errors="replace")
    outcome.output_bytes = output.total
    outcome.elapsed_s = time.monotonic() - started
    return outcome


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the worker and everything it started (they share its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
