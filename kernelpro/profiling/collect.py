"""Profile a problem's reference, a candidate, or a program with Nsight Compute, and read back KernelMetrics.

A problem is run through `profile_target`, which loads it as the judge does and makes one call inside an NVTX
range; ncu profiles only the kernels of that call (`--nvtx --nvtx-include`), however many there are. Stage 1
collects a short metric list (speed of light, duration, clock, launch statistics, FLOP and byte counters);
stage 2 collects sections or a whole set. ncu always runs with `--clock-control none`: the card's clocks are
never changed, so the clock each kernel ran at is recorded with it.

When ncu is missing, not permitted to read the counters, or there is no GPU, the result says so with the fix,
and a problem still gets what torch.profiler can tell (kernel names, CUDA times, launch counts).
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from kernelpro.config import HarnessSettings, load_settings
from kernelpro.harness.device_lock import device_lock
from kernelpro.harness.limited_run import run_limited
from kernelpro.harness.worker.sandbox import worker_environment
from kernelpro.profiling import ncu_errors
from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.ncu_command import (
    CLOCK_METRIC,
    NcuOptions,
    find_ncu,
    import_command,
    ncu_command,
    ncu_version,
)
from kernelpro.profiling.ncu_csv import NcuCsvError, parse_ncu_csv
from kernelpro.profiling.ncu_report import NcuReportError, read_ncu_report

NVTX_RANGE = "kernelpro_profile"
# ncu failures after which torch.profiler can still say something useful about a problem
FALLBACK_KINDS = ("permission", "counters_busy", "driver_mismatch", "device_error")


class ProfiledEvent(BaseModel):
    """One kernel (or, without a GPU, one operator the model called itself, its time with the operators it called
    in turn) as torch.profiler saw it."""

    name: str
    count: int
    time_us: float
    device: str


class ProfileResult(BaseModel):
    """What one profiling run produced, or why it could not, and what was learned anyway."""

    source: Literal["ncu", "torch.profiler", "none"]
    ok: bool
    kernels: list[KernelMetrics] = Field(default_factory=list)
    events: list[ProfiledEvent] = Field(default_factory=list)
    """torch.profiler's view (the fallback): no ncu metrics."""
    clock_hz: float | None = None
    """Median SM clock over the profiled kernels (clocks are never locked)."""
    kernel_clocks_hz: list[float | None] = Field(default_factory=list)
    ncu_version: str | None = None
    command: list[str] = Field(default_factory=list)
    wall_s: float | None = None
    plain_wall_s: float | None = None
    overhead_s: float | None = None
    """ncu's cost: the profiled run's wall time minus a plain run's."""
    report_path: str | None = None
    csv_path: str | None = None
    log_path: str | None = None
    error_kind: str | None = None
    error: str | None = None
    warnings: list[str] = Field(default_factory=list)


def with_clocks(result: ProfileResult) -> ProfileResult:
    """Fill the per-kernel clocks and their median, warning about kernels whose clock was not collected."""
    clocks = [k.sm_clock_hz for k in result.kernels]
    result.kernel_clocks_hz = clocks
    known = [c for c in clocks if c is not None]
    result.clock_hz = statistics.median(known) if known else None
    if len(known) < len(clocks):
        result.warnings.append(f"{len(clocks) - len(known)} kernel(s) have no {CLOCK_METRIC}: their clock is unknown")
    return result


def _attach_rules(kernels: list[KernelMetrics], report: Path, warnings: list[str]) -> list[KernelMetrics]:
    """The CSV's kernels with ncu's rule results from the report (the CSV has none)."""
    try:
        from_report = read_ncu_report(report)
    except NcuReportError as error:
        warnings.append(f"rule results unavailable: {error}")
        return kernels
    if len(from_report) != len(kernels):
        warnings.append(f"the report holds {len(from_report)} launches, the CSV {len(kernels)}: rules not attached")
        return kernels
    return [dataclasses.replace(k, rules=r.rules) for k, r in zip(kernels, from_report, strict=True)]


def profile_command(target: list[str], options: NcuOptions | None = None, workdir: Path | None = None,
                    nvtx_range: str | None = None, env: dict[str, str] | None = None,
                    device: str = "cuda", lock: HarnessSettings | None = None) -> ProfileResult:
    """Profile a program (``target`` is its argv, running on ``device``) with ncu; nothing falls back here.
    ``lock``: the settings of the device lock it holds meanwhile (None: the settings files')."""
    options = options or NcuOptions()
    ncu = find_ncu(options.ncu)
    if ncu is None:
        return ProfileResult(source="none", ok=False, error_kind="ncu_missing", error=ncu_errors.MISSING_NCU.render())
    workdir = Path(workdir or tempfile.mkdtemp(prefix="kernelpro-ncu-"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = env if env is not None else worker_environment()
    export = workdir / "profile"
    cmd = ncu_command(ncu, target, export, options, nvtx_range)
    result = ProfileResult(source="ncu", ok=False, command=cmd, ncu_version=ncu_version(ncu),
                           log_path=str(workdir / "ncu.log"))
    report = export.with_suffix(".ncu-rep")
    report.unlink(missing_ok=True)  # a report left by an earlier run must not pass for this one's
    with device_lock(device, lock or load_settings().harness):  # no other process measures on the GPU meanwhile
        if options.measure_overhead:
            code, _, plain = run_limited(target, workdir, env, options.timeout_s)
            result.plain_wall_s = plain if code == 0 else None
        code, output, wall = run_limited(cmd, workdir, env, options.timeout_s)
    Path(result.log_path).write_text(output)
    result.wall_s = wall
    if result.plain_wall_s is not None:
        result.overhead_s = wall - result.plain_wall_s
    failure = ncu_errors.diagnose(output)
    if code is None:
        result.error_kind, result.error = "timeout", f"ncu did not finish within {options.timeout_s:g} s"
        return result
    if not report.is_file():
        failure = failure or ncu_errors.NcuFailure("no_report", f"ncu exited with code {code} and wrote no report",
                                                   f"read the log: {result.log_path}")
        result.error_kind, result.error = failure.kind, failure.render()
        return result
    if failure is not None:  # a report exists, but part of the run failed (e.g. one kernel of several)
        result.warnings.append(failure.render())
    result.report_path = str(report)
    code, csv_text, _ = run_limited(import_command(ncu, report), workdir, env, options.timeout_s)
    csv_path = workdir / "profile.csv"
    csv_path.write_text(csv_text)
    result.csv_path = str(csv_path)
    try:
        kernels = parse_ncu_csv(csv_text)
    except NcuCsvError as error:
        result.warnings.append(f"CSV export failed ({error}); metrics read from the report instead")
        try:
            kernels = read_ncu_report(report)
        except NcuReportError as report_error:
            result.error_kind, result.error = "unreadable_report", str(report_error)
            return result
    else:
        kernels = _attach_rules(kernels, report, result.warnings)
    result.kernels, result.ok = kernels, bool(kernels)
    if not kernels:
        result.error_kind, result.error = "no_kernels", ncu_errors.diagnose("No kernels were profiled").render()
    return with_clocks(result)


def _target_job(workdir: Path, reference_source: str, candidate_source: str | None, device: str, mode: str,
                options: NcuOptions, seed: int) -> tuple[list[str], Path]:
    """Write the target's job file; returns its command line and where it writes its result."""
    workdir.mkdir(parents=True, exist_ok=True)
    result_path = workdir / f"target-{mode}.json"
    job = {"reference_source": reference_source, "candidate_source": candidate_source, "device": device,
           "mode": mode, "seed": seed, "warmup": options.warmup, "nvtx_range": NVTX_RANGE,
           "result_path": str(result_path)}
    job_path = workdir / f"job-{mode}.json"
    job_path.write_text(json.dumps(job))
    return [sys.executable, "-m", "kernelpro.profiling.profile_target", str(job_path)], result_path


def torch_profile_problem(reference_source: str, candidate_source: str | None = None, device: str = "cuda",
                          options: NcuOptions | None = None, workdir: Path | None = None,
                          seed: int | None = None, lock: HarnessSettings | None = None) -> ProfileResult:
    """The fallback: one call under torch.profiler (CUDA kernels on a GPU, the model's own operators without one)."""
    options = options or NcuOptions()
    workdir = Path(workdir or tempfile.mkdtemp(prefix="kernelpro-profile-"))
    seed = secrets.randbits(62) if seed is None else seed
    cmd, result_path = _target_job(workdir, reference_source, candidate_source, device, "torch_profiler", options,
                                   seed)
    with device_lock(device, lock or load_settings().harness):  # its kernel times, too, are the GPU's alone
        code, output, wall = run_limited(cmd, workdir, worker_environment(), options.timeout_s)
    result = ProfileResult(source="torch.profiler", ok=False, command=cmd, wall_s=wall)
    if code is None:
        result.error_kind, result.error = "timeout", f"the target did not finish within {options.timeout_s:g} s"
        return result
    answer = json.loads(result_path.read_text()) if result_path.is_file() else {}
    if code != 0 or "events" not in answer:
        result.error_kind = "target_failed"
        result.error = answer.get("error") or f"the target exited with code {code}: {output[-2000:]}"
        return result
    result.events = [ProfiledEvent(**e) for e in answer["events"]]
    result.ok = True
    if device.startswith("cuda") and not result.events:
        result.warnings.append("torch.profiler saw no CUDA kernel in the call")
    return result


def gpu_visible() -> bool:
    import torch

    return torch.cuda.is_available()


def profile_problem(reference_source: str, candidate_source: str | None = None, options: NcuOptions | None = None,
                    workdir: Path | None = None, device: str = "auto", seed: int | None = None,
                    lock: HarnessSettings | None = None) -> ProfileResult:
    """Profile one call of the reference ``Model`` (or of the candidate's ``ModelNew``) with ncu.

    Falls back to torch.profiler, with the reason in ``error``, when ncu cannot profile here. ``lock``: the
    device lock's settings (``harness.device_lock``; None: the settings files').
    """
    options = options or NcuOptions()
    workdir = Path(workdir or tempfile.mkdtemp(prefix="kernelpro-profile-"))
    workdir.mkdir(parents=True, exist_ok=True)
    seed = secrets.randbits(62) if seed is None else seed
    device = ("cuda" if gpu_visible() else "cpu") if device == "auto" else device
    failure: ncu_errors.NcuFailure | None = None
    if not device.startswith("cuda"):
        failure = ncu_errors.NO_GPU
    elif find_ncu(options.ncu) is None:
        failure = ncu_errors.MISSING_NCU
    else:
        target, answer_path = _target_job(workdir, reference_source, candidate_source, device, "plain", options,
                                          seed)
        result = profile_command(target, options, workdir, nvtx_range=NVTX_RANGE, device=device, lock=lock)
        if result.error_kind == "target_failed" and answer_path.is_file():
            answer = json.loads(answer_path.read_text())
            result.error = f"{result.error}\nthe target's error: {answer.get('error', 'unknown')}"
        if result.ok or result.error_kind not in FALLBACK_KINDS:
            return result
        failure = ncu_errors.NcuFailure(result.error_kind or "", result.error or "", "")
    fallback = torch_profile_problem(reference_source, candidate_source, device, options, workdir, seed, lock)
    reason = failure.render() if failure.fix else failure.message
    if not fallback.ok:
        reason += f"\nthe torch.profiler fallback failed too ({fallback.error_kind}): {fallback.error}"
    fallback.error_kind, fallback.error = failure.kind, reason
    fallback.warnings.insert(0, "ncu metrics unavailable; torch.profiler's kernel names, times and launch counts "
                                "only" if device.startswith("cuda") else
                                "no GPU: the model's own operators under torch.profiler (each with what it called)")
    return fallback
