"""The worker process: ``python -m kernelpro.harness.worker RESULT_FD``, the job as JSON on stdin.

It speaks to the judge only through RESULT_FD, one JSON object a line, each carrying the job's nonce:
``{"phase": ...}`` as it goes and ``{"result": ...}`` at the end. Whatever the candidate prints goes to
stdout/stderr, which the judge reads separately, so no amount of output can forge or block a result.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import traceback
from pathlib import Path
from typing import Any


def _limit_address_space(extra_mb: int) -> None:
    """Cap virtual memory at what the worker has now plus ``extra_mb``: a memory bomb fails fast."""
    with open("/proc/self/status") as status:
        vm_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    limit = vm_kb * 1024 + extra_mb * (1 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main() -> None:
    result_fd = int(sys.argv[1])
    job: dict[str, Any] = json.loads(sys.stdin.read())
    nonce = job.pop("nonce")
    channel = os.fdopen(result_fd, "w", buffering=1)

    def emit(message: dict[str, Any]) -> None:
        channel.write(json.dumps({"nonce": nonce, **message}) + "\n")
        channel.flush()

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.environ["TORCH_EXTENSIONS_DIR"] = job.pop("torch_extensions_dir")
    # kernelpro.runtime reads its compile settings (the shared cache above all) from the environment.
    for key, value in job.pop("compile", {}).items():
        if value is not None:
            os.environ[f"KERNELPRO_COMPILE__{key.upper()}"] = value if isinstance(value, str) else json.dumps(value)
    emit({"phase": "start"})
    # Import the judge before the candidate can run: timing binds its clocks at import.
    import torch

    from kernelpro.harness.evaluate import Evaluation
    from kernelpro.harness.loader import Verdict
    from kernelpro.harness.result import EvalResult

    if job["device"].startswith("cuda"):
        torch.cuda.init()
        torch.cuda.set_per_process_memory_fraction(job["harness"]["gpu_memory_fraction"])
    else:
        # CUDA reserves huge virtual ranges, so the address-space cap is for CPU runs only; the judge
        # also watches resident memory from outside on both.
        _limit_address_space(job["harness"]["memory_limit_mb"])

    try:
        result = Evaluation(job, Path.cwd(), emit).run()
    except Verdict as verdict:
        result = verdict.result
    except BaseException as exc:  # noqa: BLE001 - the judge must always answer
        result = EvalResult(status="runtime_error", reason="worker_error",
                            message="the evaluation itself failed: "
                                    + "".join(traceback.format_exception_only(type(exc), exc)).strip())
    emit({"result": result.model_dump(mode="json")})
    channel.close()
    # Skip interpreter shutdown: a candidate's non-daemon thread or atexit hook must not hold us here.
    os._exit(0)


if __name__ == "__main__":
    main()
