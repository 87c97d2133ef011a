"""Running one job in a fresh worker process, from the judge's side: limits, output capture, clean-up.

The worker gets a new empty working directory (its compile caches and temporary directory inside it), an
environment with no credentials, its own process group (so everything it starts dies with it), a wall-time
limit and a resident-memory limit.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelpro.config import HarnessSettings
from kernelpro.harness.deadline import Deadline
from kernelpro.harness.worker.dirs import private_environment
from kernelpro.harness.worker.watched import ChannelReader, TailReader, end, start_module, watch

PACKAGE_ROOT = Path(__file__).resolve().parents[3]

# Only these variables reach the worker (by exact name or prefix), and never one that looks like a secret.
ENV_NAMES = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "TERM", "LD_LIBRARY_PATH", "CC", "CXX",
             "CUDAHOSTCXX", "CPATH", "LIBRARY_PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "XDG_CACHE_HOME"}
ENV_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TRITON_", "TORCH_", "TORCHINDUCTOR_", "PYTORCH_", "OMP_", "MKL_",
                "OPENBLAS_", "KMP_", "NCCL_", "NVSHMEM_", "CUTLASS_", "CUPY_", "KERNELPRO_COMPILE__")
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE", re.IGNORECASE)


def worker_environment(base: dict[str, str] | None = None, workdir: str | None = None) -> dict[str, str]:
    """The worker's environment: an allow-list of the caller's, minus anything that looks like a secret. Given the
    worker's own directory, its caches and temporary directory point there, whatever the caller's said
    (``worker.dirs``)."""
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


def run_worker(job: dict[str, Any], settings: HarnessSettings) -> WorkerOutcome:
    """Run ``job`` in a new worker and wait for its result, within the time and memory limits."""
    nonce = secrets.token_hex(16)
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    proc, workdir = start_module("kernelpro.harness.worker.process", (write_fd,), {**job, "nonce": nonce},
                                 "kernelpro-worker-", lambda directory: worker_environment(workdir=directory))
    os.close(write_fd)
    deadline = Deadline(settings, started, until=job.get("until"))
    channel = ChannelReader(read_fd, nonce, deadline)
    output = TailReader(proc.stdout, settings.output_tail_bytes)
    channel.start()
    output.start()
    outcome = WorkerOutcome(returncode=None, result=None)
    stop = watch([proc], deadline.expired, settings.memory_limit_mb)
    if stop is not None and stop.why == "timeout":
        outcome.timed_out, outcome.time_limit = True, deadline.describe()
        outcome.cut_by_caller = deadline.by_caller()
    elif stop is not None:
        outcome.memory_exceeded_mb = stop.rss_mb
    end([proc], [channel, output], [workdir])
    outcome.returncode = proc.returncode
    outcome.result, outcome.phases = channel.result, channel.phases
    outcome.output_tail = output.text()
    outcome.output_bytes = output.total
    outcome.elapsed_s = time.monotonic() - started
    return outcome
