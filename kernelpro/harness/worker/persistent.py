"""The long-lived worker: ``python -m kernelpro.harness.worker.persistent RESULT_FD JOB_FD``, one per device.

It starts once (Python, torch, the CUDA context, preloaded modules), then judges jobs one after another.
The first line on JOB_FD sets it up (``device``, ``harness``, ``nonce``); it answers ``{"ready": ...}``.
Then each line is a job carrying its own nonce and working directory; the worker answers on RESULT_FD, each
message with that job's nonce: ``{"phase": "start"}`` on receipt, phases as it goes, ``{"result": ...}``,
then, after putting the process back as it was, ``{"ready": true, "problems": [...]}``. A job that holds the
device lock shared until it times (``share_until_timing``) says ``{"turn": "exclusive"}`` before timing and
waits for the line ``{"go": true}`` on JOB_FD: the judge sends it once it holds the device alone. While it
compiles it lets the device go (``{"turn": "none"}``) and asks it back (``{"turn": "shared"}``, answered the same
way; ``device_turns``). On the CPU
each job runs in a fork of the worker and a job that dies without a result is reported as ``{"exited": code}``.
Between the result and ``ready`` it writes ``OUTPUT_MARKER`` and the nonce to stdout, so the judge can tell one
job's output from the next one's. stdin is empty: a candidate reading it gets end-of-file, as in a fresh worker.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import resource
import secrets
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from kernelpro.harness.worker.process import (
    apply_job_environment,
    die_with_parent,
    evaluate_job,
    isolate,
    limit_address_space,
    missing_walls,
    poison_allocations,
    prepare_device,
    settle_lazy_patches,
    uses_compiler,
)

OUTPUT_MARKER = "\n[kernelpro job end "


class Channel:
    """The result channel: JSON lines, each stamped with the nonce of the job it belongs to."""

    def __init__(self, fd: int) -> None:
        self.file = os.fdopen(fd, "w", buffering=1)
        self.nonce = ""

    def emit(self, message: dict[str, Any]) -> None:
        self.file.write(json.dumps({"nonce": self.nonce, **message}) + "\n")
        self.file.flush()


def _flush_output(nonce: str) -> None:
    """Flush Python's and C's buffered output, then mark the end of this job's output (unless no ``nonce``)."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)
    if nonce:
        os.write(1, f"{OUTPUT_MARKER}{nonce}]\n".encode())


def _warm_up(device: str, preload: list[str]) -> None:
    """Everything that starts once per process, done before the baseline so no candidate is blamed for it."""
    import torch

    for name in preload:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    import kernelpro.runtime  # noqa: F401 - candidates may import it; the baseline must cover it

    if device.startswith("cuda"):  # once per worker; on the CPU each job's fork does it when it needs to, since
        settle_lazy_patches()      # importing dynamo here would disturb the forks' heaps (the stale-memory poison)

    if device.startswith("cuda"):
        x = torch.randn(256, 256)
        (x @ x).sum()  # starts the intra-op thread pool (not on the CPU: OpenMP's pool would not survive a fork)
        from kernelpro.harness.guards.dynamic import streams_used

        y = torch.randn(256, 256, device=device)
        streams_used(lambda t: t @ t, [y])  # starts the profiler's threads, which every stream check uses
        torch.cuda.synchronize()


def _turn_reader(jobs: BinaryIO) -> Callable[[], None]:
    """What a job calls to wait for its turn on the device (alone, or shared again): the judge's ``{"go": true}``
    line."""
    def await_turn() -> None:
        line = jobs.readline()
        if not line or json.loads(line).get("go") is not True:
            raise RuntimeError("the judge did not give this job its turn on the device")
    return await_turn


def _judge_in_child(job: dict[str, Any], workdir: Path, channel: Channel, memory_limit_mb: int,
                    await_turn: Callable[[], None]) -> None:
    """On the CPU, judge in a fork of this warmed-up process, on a thread of its own.

    A new thread in the fork gets a new malloc arena: every job starts on an empty heap, so allocator-dependent
    checks (the stale-memory poison) behave as in a fresh worker, and nothing the job does reaches this process.
    CUDA does not survive a fork, so GPU jobs run in the worker itself. The child proves it answered by
    writing ``token`` to a pipe of its own; otherwise its exit is reported, whatever its code.
    """
    token = secrets.token_bytes(16)
    done_read, done_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(done_read)
        limit_address_space(memory_limit_mb)

        def run() -> None:
            if uses_compiler(job["candidate_source"]):
                settle_lazy_patches()
            result = evaluate_job(job, workdir, channel.emit, await_turn)
            channel.emit({"result": result.model_dump(mode="json")})
            os.write(done_write, token)

        thread = threading.Thread(target=run, name="kernelpro-job")
        thread.start()
        thread.join()
        _flush_output("")
        os._exit(0)
    os.close(done_write)
    status = os.waitpid(pid, 0)[1]
    with os.fdopen(done_read, "rb") as done:
        answered = done.read() == token
    if not answered:  # it died or exited before answering (the judge tells a crash from an exit by the code)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        channel.emit({"exited": code})


def _release_freed_memory() -> None:
    """Give the heap's free memory back to the kernel between jobs: one candidate's peak must not count against
    the next one's memory limit."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def _serve(channel: Channel, jobs: BinaryIO, baseline: Any, harness: dict[str, Any],
           isolation: dict[str, Any]) -> None:
    from kernelpro.harness.worker import state as worker_state

    await_turn = _turn_reader(jobs)
    while line := jobs.readline():
        job: dict[str, Any] = json.loads(line)
        channel.nonce = job.pop("nonce")
        job["isolation"] = isolation
        channel.emit({"phase": "start"})
        apply_job_environment(job)
        workdir = Path(job["workdir"])
        os.chdir(workdir)
        if job["device"].startswith("cuda"):
            result = evaluate_job(job, workdir, channel.emit, await_turn)
            channel.emit({"result": result.model_dump(mode="json")})
            del result
        else:
            _judge_in_child(job, workdir, channel, harness["memory_limit_mb"], await_turn)
        del job
        problems = worker_state.reset(baseline)
        _release_freed_memory()
        _flush_output(channel.nonce)
        channel.emit({"ready": True, "problems": problems})


def main() -> None:
    result_fd, job_fd = int(sys.argv[1]), int(sys.argv[2])
    channel = Channel(result_fd)
    jobs = os.fdopen(job_fd, "rb")
    setup: dict[str, Any] = json.loads(jobs.readline())
    channel.nonce = setup["nonce"]
    isolation = isolate(setup)
    if refusal := missing_walls(setup, isolation):
        sys.stderr.write(refusal + "\n")
        os._exit(3)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    die_with_parent()
    poison_allocations()  # inherited by the forks that judge CPU jobs
    harness, device = setup["harness"], setup["device"]
    # Import the judge before any candidate can run: timing binds its clocks at import.
    import torch

    import kernelpro.harness.worker.evaluate  # noqa: F401
    from kernelpro.harness.worker import state as worker_state

    if device.startswith("cuda"):
        prepare_device(device, harness["gpu_memory_fraction"], isolation)
    _warm_up(device, harness.get("worker_preload", []))
    baseline = worker_state.capture(torch.device(device), [0, 1, 2, result_fd, job_fd])
    channel.emit({"ready": True, "problems": []})
    _serve(channel, jobs, baseline, harness, isolation)
    os._exit(0)


if __name__ == "__main__":
    main()
