"""The worker process: ``python -m kernelpro.harness.worker.process RESULT_FD``, the job as JSON on stdin.

It speaks to the judge only through RESULT_FD, one JSON object a line, each carrying the job's nonce:
``{"phase": ...}`` as it goes and ``{"result": ...}`` at the end. Whatever the candidate prints goes to
stdout/stderr, which the judge reads separately, so no amount of output can forge or block a result.

This is the fresh worker (one process per candidate); ``worker.persistent`` is the long-lived one. Both judge a job
with ``evaluate_job``.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

Emit = Callable[[dict[str, Any]], None]


def address_space_mb() -> int:
    """The process's virtual memory size now, in MB."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmSize:")) // 1024


def limit_address_space(extra_mb: int) -> None:
    """Cap virtual memory at what the worker has now plus ``extra_mb``: a memory bomb fails fast. Never above
    the hard limit the worker inherited (``ulimit -v``), which only a privileged process could raise."""
    limit = (address_space_mb() + extra_mb) << 20
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def isolate(job: dict[str, Any]) -> dict[str, Any]:
    """Wall this worker in (``isolation.isolate_worker``, and the audit hook of ``tripwires``) before any thread
    starts or candidate code runs; what it got is returned and shown in each verdict's ``details.isolation``."""
    from kernelpro.harness.isolation import tripwires
    from kernelpro.harness.isolation.walls import isolate_worker
    from kernelpro.harness.isolation.worker_walls import NO_UNIX_SOCKETS

    on_gpu = str(job.get("device", "")).startswith("cuda")
    confine = not on_gpu or bool(job.get("cuda_confine"))  # a CUDA worker: where CUDA starts behind them (cuda_walls)
    # The user namespace too: the confined CUDA probe starts CUDA inside one, so where it failed, that is unproven
    without = "" if confine else "a CUDA worker makes one only where CUDA started behind the walls here (cuda_walls)"
    protections = isolate_worker(job["harness"].get("isolate", True), landlock=not on_gpu,
                                 protected=job.get("protected_paths"), confine=confine, sockets_later=on_gpu,
                                 without_user_namespace=without)
    if on_gpu and not confine and job.get("cuda_confine_why"):
        protections.missing["own root"] = protections.missing[NO_UNIX_SOCKETS] = job["cuda_confine_why"]
    tripwires.arm()
    return protections.as_dict()


def missing_walls(job: dict[str, Any], isolation: dict[str, Any]) -> str | None:
    """Why this worker must not judge, under ``harness.require_isolation``, or None."""
    if not job["harness"].get("require_isolation") or not isolation["missing"]:
        return None
    return ("harness.require_isolation is set, but this worker lacks: "
            + "; ".join(f"{name} ({why})" for name, why in isolation["missing"].items()))


def prepare_device(device: str, gpu_memory_fraction: float, isolation: dict[str, Any]) -> None:
    """Start CUDA on the job's device (``cuda`` or ``cuda:N``) and cap the caching allocator's share of it; then,
    CUDA started, the socket filter the walls left for now (``isolation.worker_walls.refuse_sockets_now``), recorded in
    ``isolation``. Before any candidate code runs."""
    import torch

    torch.cuda.init()
    target = torch.device(device)
    if target.index is not None:
        torch.cuda.set_device(target)
    torch.cuda.set_per_process_memory_fraction(gpu_memory_fraction, target.index)
    torch.empty(1, device=target).add_(1)  # the context made, its threads started, under no filter yet
    from kernelpro.harness.isolation.worker_walls import NO_UNIX_SOCKETS, refuse_sockets_now

    if NO_UNIX_SOCKETS in isolation.pop("pending", []):
        refuse_sockets_now(isolation["applied"], isolation["missing"])


def apply_job_environment(job: dict[str, Any]) -> None:
    """The per-job environment: the load_inline build directory and target, the cache-aware load_inline's view of
    this job, and the compile settings kernelpro.runtime reads."""
    from kernelpro.harness.inline_build import worker_side

    # load_inline builds that the judge did not make land in the job's own directory: the shared caches are
    # read-only here, and no candidate's build may be found by another.
    os.environ["TORCH_EXTENSIONS_DIR"] = str(Path(job.get("workdir") or os.getcwd()) / "torch_extensions")
    if arch_list := (job.get("inline") or {}).get("environment", {}).get("arch_list"):
        os.environ["TORCH_CUDA_ARCH_LIST"] = arch_list  # what the judge built ahead for, and keyed on
    if job.get("inline") is not None:  # the candidate mentions cpp_extension: its load_inline goes through the cache
        worker_side.install()
    worker_side.begin_job(job)
    for key, value in job.get("compile", {}).items():
        if value is not None:
            os.environ[f"KERNELPRO_COMPILE__{key.upper()}"] = value if isinstance(value, str) else json.dumps(value)


M_PERTURB = -6  # glibc's mallopt parameter


def die_with_parent(poll_s: float = 0.5) -> None:
    """Kill this worker's process group (it, and any fork judging a job) once the judge that started it is gone.

    A judge killed outright cannot stop its workers, and a candidate stuck in a loop would otherwise spin on
    with no one to time it out. Workers lead a session of their own, so the group is theirs alone.
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        if os.getpgrp() == os.getpid():  # never the group of whoever started us without a session of our own
            os.killpg(os.getpgrp(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="kernelpro-parent-watch", daemon=True).start()


def poison_allocations() -> None:
    """Make glibc fill every block malloc hands out (torch's CPU tensors included) with the poison byte.

    A candidate that returns memory it never wrote must read poison whatever the heap's layout; glibc's
    M_PERTURB fills each allocation with the complement of its argument (and each freed block with the
    argument, so no freed output of the reference survives either).
    """
    import ctypes

    from kernelpro.harness.guards.compare import POISON_BYTE

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(M_PERTURB, POISON_BYTE ^ 0xFF)


def settle_lazy_patches() -> None:
    """Apply now the patches torch.compile makes on first use, so the judge's snapshots already contain them.

    It replaces ``nn.Module.__init__`` the first time it runs (dynamo's mutation guard), which the integrity
    check would report as tampering, and Inductor's first progress bar starts tqdm's monitor thread, which the
    thread check would report. Importing dynamo costs about a second, and any allocation here changes the heap
    the stale-memory poison relies on, so callers do this only for candidates that mention the compiler.
    """
    with contextlib.suppress(ImportError):
        import tqdm

        tqdm.tqdm.monitor_interval = 0
    with contextlib.suppress(Exception):
        import torch._dynamo.mutation_guard as mutation_guard

        mutation_guard.install_generation_tagging_init()
    warm_compile_pool()


def warm_compile_pool() -> None:
    """Start Inductor's compile pool now, when ``TORCHINDUCTOR_COMPILE_THREADS`` asks for more than one, and
    wait for it: its processes and its executor's threads then belong to the judge's baseline, not to the first
    candidate that compiles cold (which the thread check rejected as ``background_thread``)."""
    with contextlib.suppress(Exception):
        from torch._inductor.async_compile import AsyncCompile, get_compile_threads

        if get_compile_threads() <= 1:
            return
        AsyncCompile.warm_pool()
        AsyncCompile.wait_pool_ready()
        # Its thread pool starts a thread per task it cannot hand to an idle one: hold one task per thread at a
        # barrier, so every thread it will ever have exists now.
        import threading

        pool = AsyncCompile.pool()
        barrier = threading.Barrier(pool._max_workers + 1)
        for _ in range(pool._max_workers):
            pool.submit(barrier.wait, 30)
        barrier.wait(30)


def uses_compiler(source: str) -> bool:
    return any(word in source for word in ("compile", "_dynamo", "inductor"))


def evaluate_job(job: dict[str, Any], workdir: Path, emit: Emit,
                 await_turn: Callable[[], None] | None = None) -> Any:
    """Judge one job in this process and return its ``EvalResult``, whatever the candidate does; ``await_turn``
    blocks until the judge gives the job the turn on the device it asked for (a job that shares it until timing)."""
    from kernelpro.harness.result import EvalResult
    from kernelpro.harness.worker.evaluate import Evaluation
    from kernelpro.harness.worker.loader import Verdict

    try:
        evaluation = Evaluation(job, workdir, emit, await_turn)
        try:
            result = evaluation.run()
        except Verdict as verdict:
            result = verdict.result
    except BaseException as exc:  # noqa: BLE001 - the judge must always answer
        return EvalResult(status="runtime_error", reason="worker_error",
                          message="the evaluation itself failed: "
                                  + "".join(traceback.format_exception_only(type(exc), exc)).strip())
    result.details["phase_s"] = evaluation.close_phases()
    from kernelpro.harness.inline_build import worker_side

    if extensions := worker_side.records():
        result.details["load_inline"] = extensions
    if "isolation" in job:
        result.details["isolation"] = job["isolation"]
    return result


def main() -> None:
    result_fd = int(sys.argv[1])
    job: dict[str, Any] = json.loads(sys.stdin.read())
    nonce = job.pop("nonce")
    job["isolation"] = isolate(job)
    channel = os.fdopen(result_fd, "w", buffering=1)

    def emit(message: dict[str, Any]) -> None:
        channel.write(json.dumps({"nonce": nonce, **message}) + "\n")
        channel.flush()

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    die_with_parent()
    poison_allocations()
    apply_job_environment(job)
    emit({"phase": "start"})
    if refusal := missing_walls(job, job["isolation"]):
        from kernelpro.harness.result import EvalResult

        refused = EvalResult(status="runtime_error", reason="worker_error", message=refusal)
        emit({"result": refused.model_dump(mode="json")})
        os._exit(0)
    # Import the judge before the candidate can run: timing binds its clocks at import.
    import kernelpro.harness.worker.evaluate  # noqa: F401

    if uses_compiler(job["candidate_source"]):
        settle_lazy_patches()

    if job["device"].startswith("cuda"):
        prepare_device(job["device"], job["harness"]["gpu_memory_fraction"], job["isolation"])
    else:
        # CUDA reserves huge virtual ranges, so the address-space cap is for CPU runs only; the judge
        # also watches resident memory from outside on both.
        limit_address_space(job["harness"]["memory_limit_mb"])

    result = evaluate_job(job, Path.cwd(), emit)
    emit({"result": result.model_dump(mode="json")})
    channel.close()
    # Skip interpreter shutdown: a candidate's non-daemon thread or atexit hook must not hold us here.
    os._exit(0)


if __name__ == "__main__":
    main()
