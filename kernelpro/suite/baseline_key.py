"""What a compile baseline's verdict depends on, as the key it is kept under across runs and suites.

A verdict measured before is reused only when everything that could change it is the same: the problem's
source and the baseline's own code (its ``torch.compile`` mode), the machine (the GPU's name and the driver's
version through NVML, or the processor's model and count on a CPU), the software (torch and the CUDA it was built
for, Triton, Python, kernelpro), the judge's settings that change a timing or a correctness call (every harness
setting but the few that only limit or place the work, listed in ``NOT_MEASURED``) and the environment variables
a worker inherits that steer a compile or a timing (Inductor's, Triton's, torch's, the thread pools'). Where the
machine cannot be told (NVML absent, a MIG slice), there is no key and the baseline is judged again.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from importlib import metadata
from typing import Any

from kernelpro.config import Settings
from kernelpro.problem import Problem

KEY_FORMAT = 1
# Harness settings that limit, place or describe the work without changing what a verdict measures.
NOT_MEASURED = {"timeout_s", "timeout_floor_s", "timeout_reference_factor", "memory_limit_mb", "output_tail_bytes",
                "worker_max_jobs", "worker_reset_timeout_s", "protected_dirs", "require_isolation", "gpu_devices",
                "device_lock_dir"}
# The environment a worker inherits (``harness/sandbox.ENV_PREFIXES``) that steers a compile or a timing; the
# directories they name (caches, homes) are the worker's own and change nothing measured.
STEERING_PREFIXES = ("TORCHINDUCTOR_", "TRITON_", "TORCH_", "PYTORCH_", "OMP_", "MKL_", "KMP_", "OPENBLAS_")
PLACES = ("_DIR", "_HOME", "_PATH")


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return ""


def software() -> dict[str, str]:
    """torch (with the CUDA it was built for), Triton, Python and kernelpro."""
    import torch

    return {"torch": str(torch.__version__), "torch_cuda": str(torch.version.cuda or ""),
            "triton": _version("triton") or _version("pytorch-triton"), "python": platform.python_version(),
            "kernelpro": _version("kernelpro")}


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def gpu_identity(device: str) -> dict[str, str] | None:
    """The GPU behind a cuda device (as CUDA_VISIBLE_DEVICES maps it) and the driver's version, through NVML
    (which starts no CUDA context); None when NVML cannot tell."""
    from kernelpro.harness.device_lock import physical_gpu

    visible = physical_gpu(int(device.partition(":")[2] or 0))
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(visible)) if visible.isdigit() else \
                pynvml.nvmlDeviceGetHandleByUUID(visible)
            return {"gpu": _text(pynvml.nvmlDeviceGetName(handle)),
                    "driver": _text(pynvml.nvmlSystemGetDriverVersion())}
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no NVML, no such device, a MIG slice NVML does not name
        return None


def cpu_identity() -> dict[str, str]:
    """The processor's model (``/proc/cpuinfo``, else the platform's word) and how many this process may use."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": model or platform.processor() or platform.machine(), "cpus": str(usable)}


def machine_identity(device: str) -> dict[str, str] | None:
    """What measures on ``device``: the GPU and driver for cuda, the processor for cpu; None when unknown."""
    return gpu_identity(device) if device.startswith("cuda") else cpu_identity()


def steering_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables a worker inherits that steer a compile or a timing (``STEERING_PREFIXES``), sorted."""
    environ = dict(os.environ if environ is None else environ)
    return {name: environ[name] for name in sorted(environ)
            if name.startswith(STEERING_PREFIXES) and not name.endswith(PLACES)}


def measured_harness(settings: Settings) -> dict[str, Any]:
    """The harness settings a verdict depends on: all but ``NOT_MEASURED``."""
    return {name: value for name, value in settings.harness.model_dump(mode="json").items()
            if name not in NOT_MEASURED}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def baseline_key(problem: Problem, name: str, baseline_code: str, device: str, settings: Settings,
                 machine: dict[str, str], software_versions: dict[str, str],
                 environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Every field baseline ``name``'s verdict on ``problem`` depends on (``digest`` names them in one hash)."""
    return {"format": KEY_FORMAT, "baseline": name, "baseline_sha256": _sha256(baseline_code),
            "problem_sha256": _sha256(problem.source), "device": device.partition(":")[0],
            "machine": dict(machine), "software": dict(software_versions), "harness": measured_harness(settings),
            "environment": steering_environment(environ)}


def digest(key: dict[str, Any]) -> str:
    return _sha256(json.dumps(key, sort_keys=True, separators=(",", ":")))
