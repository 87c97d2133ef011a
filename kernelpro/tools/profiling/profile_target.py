"""The program ncu profiles: ``python -m kernelpro.tools.profiling.profile_target JOB.json``.

It loads a KernelBench problem's ``Model`` (or a candidate's ``ModelNew``) and its inputs as the judge does, runs
warm-up calls, then exactly one call inside the NVTX range named in the job, so that ncu (``--nvtx-include``)
profiles that call's kernels and nothing of the loading, the input generation or the warm-up.

Modes: ``ncu`` (the NVTX-wrapped call), ``plain`` (the same, timed, to measure ncu's overhead against) and
``torch_profiler`` (the call under torch.profiler: kernel names, CUDA times and launch counts, for machines
where ncu cannot run). What it learns goes to the job's ``result_path`` as JSON.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import torch

from kernelpro.harness.integrity import real_manual_seed
from kernelpro.harness.loader import Verdict, build, check_signature, load_candidate, load_reference


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _load(job: dict[str, Any], workdir: Path, device: torch.device) -> tuple[torch.nn.Module, list[Any]]:
    reference = load_reference(job["reference_source"], workdir)
    init_inputs = list(reference.get_init_inputs())
    if job.get("candidate_source"):
        cls = load_candidate(job["candidate_source"], workdir)
        check_signature(cls, init_inputs, reference.Model)
        path = workdir / "candidate.py"
    else:
        cls, path = reference.Model, workdir / "reference.py"
    model = build(cls, init_inputs, job["seed"], device, path)
    real_manual_seed(job["seed"])
    random.seed(job["seed"])
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in reference.get_inputs()]
    return model, inputs


def _profiler_events(profiler: Any, device: torch.device) -> list[dict[str, Any]]:
    """CUDA kernels (on a GPU) or CPU operators (without one): name, launches, total time in microseconds."""
    events = []
    for event in profiler.key_averages():
        on_device = event.device_type == torch.autograd.DeviceType.CUDA
        if device.type == "cuda" and not on_device:
            continue
        time_us = event.device_time_total if on_device else event.self_cpu_time_total
        if device.type != "cuda" and time_us <= 0:
            continue
        events.append({"name": event.key, "count": event.count, "time_us": float(time_us),
                       "device": "cuda" if on_device else "cpu"})
    return sorted(events, key=lambda e: -e["time_us"])


def run(job: dict[str, Any], workdir: Path) -> dict[str, Any]:
    device = torch.device(job["device"])
    if device.type == "cuda":
        torch.cuda.init()
    model, inputs = _load(job, workdir, device)
    with torch.no_grad():
        for _ in range(job.get("warmup", 3)):
            model(*inputs)
        _synchronize(device)
        result: dict[str, Any] = {"device": str(device)}
        if device.type == "cuda":
            result["device_name"] = torch.cuda.get_device_name(device)
        if job["mode"] == "torch_profiler":
            activities = [torch.profiler.ProfilerActivity.CPU]
            if device.type == "cuda":
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            with torch.profiler.profile(activities=activities) as profiler:
                model(*inputs)
                _synchronize(device)
            result["events"] = _profiler_events(profiler, device)
            return result
        started = time.perf_counter()
        if device.type == "cuda":
            torch.cuda.nvtx.range_push(job["nvtx_range"])
        model(*inputs)
        _synchronize(device)
        if device.type == "cuda":
            torch.cuda.nvtx.range_pop()
        result["call_s"] = time.perf_counter() - started
    return result


def main() -> None:
    job_path = Path(sys.argv[1])
    job = json.loads(job_path.read_text())
    try:
        result = run(job, Path.cwd())
        code = 0
    except Verdict as verdict:
        result, code = {"error": verdict.result.message, "reason": verdict.result.reason}, 3
    except BaseException as exc:  # noqa: BLE001 - the caller needs the cause, whatever the model raised
        result, code = {"error": f"{type(exc).__name__}: {exc}", "reason": "target_failed"}, 3
    Path(job["result_path"]).write_text(json.dumps(result))
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
