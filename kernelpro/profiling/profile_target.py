"""The program ncu profiles: ``python -m kernelpro.profiling.profile_target JOB.json``.

It loads a KernelBench problem's ``Model`` (or a candidate's ``ModelNew``) and its inputs as the judge does, runs
warm-up calls, then exactly one call inside the NVTX range named in the job, so that ncu (``--nvtx-include``)
profiles that call's kernels and nothing of the loading, the input generation or the warm-up.

Modes: ``ncu`` (the NVTX-wrapped call), ``plain`` (the same, timed, to measure ncu's overhead against) and
``torch_profiler`` (the call under torch.profiler: kernel names, CUDA times and launch counts, for machines
where ncu cannot run; without a GPU, the operators the model called itself). What it learns goes to the job's
``result_path`` as JSON.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import torch

from kernelpro.harness.guards.integrity import real_manual_seed
from kernelpro.harness.worker.loader import Verdict, build, check_signature, load_candidate, load_reference

CALL_RANGE = "kernelpro::model_call"  # the profiled call's range: what runs under it is the model's


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
    """CUDA kernels (on a GPU) or the model's own operators (without one): name, launches, total time in
    microseconds."""
    if device.type != "cuda":
        return _model_operators(profiler)
    events = []
    for event in profiler.key_averages():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        events.append({"name": event.key, "count": event.count, "time_us": float(event.device_time_total),
                       "device": "cuda"})
    return sorted(events, key=lambda e: -e["time_us"])


def _model_operators(profiler: Any) -> list[dict[str, Any]]:
    """The operators the model's call made itself (the call range's direct children), each with the time of the
    operators it called in turn: those (the copy a multiplication by a Python number makes, an output's
    allocation) are part of it, not listed beside it as if the model or the profiler had made them."""
    found: dict[str, dict[str, Any]] = {}
    for event in profiler.events():
        parent = event.cpu_parent
        if parent is None or parent.name != CALL_RANGE or parent.cpu_parent is not None:
            continue
        seen = found.setdefault(event.name, {"name": event.name, "count": 0, "time_us": 0.0, "device": "cpu"})
        seen["count"] += 1
        seen["time_us"] += float(event.cpu_time_total)
    return sorted(found.values(), key=lambda e: -e["time_us"])


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
                with torch.profiler.record_function(CALL_RANGE):
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
