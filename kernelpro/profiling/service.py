"""The micro-profiling tools end to end: profile (or read a saved profile), classify, diagnose.

This is what the CLI's `profile` and `diagnose` commands, the agents' tool faces and the optimisation graph
call; each step lives in its own module.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from kernelpro.config import HarnessSettings
from kernelpro.profiling.collect import ProfileResult, profile_problem
from kernelpro.profiling.diagnose import ProgramDiagnosis, diagnose_program
from kernelpro.profiling.gpu_specs import GpuSpecs, lookup, merge_device_readings
from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.ncu_command import NcuOptions
from kernelpro.profiling.ncu_csv import read_ncu_csv
from kernelpro.profiling.ncu_report import read_ncu_report

FALLBACK_GPU = "NVIDIA H200"


class SavedProfileError(ValueError):
    pass


def gpu_of(kernels: Sequence[KernelMetrics], name: str | None = None) -> GpuSpecs:
    """The GPU a profile was taken on, from ncu's device attributes (its name, SM count, clock), else `name`."""
    first = kernels[0] if kernels else None
    device_name = name or (first.text.get("device__attribute_display_name") if first else None) or FALLBACK_GPU
    readings: dict = {}
    if first is not None and name is None:
        if (count := first.get("device__attribute_multiprocessor_count")) is not None:
            readings["sm_count"] = int(count)
        if (clock_khz := first.get("device__attribute_clock_rate")) is not None:
            readings["max_sm_clock_mhz"] = clock_khz / 1000
        major = first.get("device__attribute_compute_capability_major")
        minor = first.get("device__attribute_compute_capability_minor")
        if major is not None and minor is not None:
            readings["compute_capability"] = (int(major), int(minor))
    known = lookup(device_name)
    if known is not None and not readings:
        return known
    return merge_device_readings(device_name, readings)


def read_saved_profile(ncu_csv: Path | None = None, ncu_rep: Path | None = None) -> list[KernelMetrics]:
    """Launches from a saved raw-page CSV, a .ncu-rep, or both (metrics from the CSV, ncu's rules from the report)."""
    if ncu_csv is None and ncu_rep is None:
        raise SavedProfileError("give a profile: --ncu-csv FILE (from `ncu --csv --page raw --print-units base`) "
                                "or --ncu-rep FILE")
    from_report = read_ncu_report(ncu_rep) if ncu_rep is not None else None
    if ncu_csv is None:
        return from_report or []
    kernels = read_ncu_csv(ncu_csv)
    if from_report:
        rules = {k.launch: k.rules for k in from_report}
        kernels = [k if k.launch not in rules else _with_rules(k, rules[k.launch]) for k in kernels]
    if not kernels:
        raise SavedProfileError(f"{ncu_csv} holds no profiled kernel launches")
    return kernels


def _with_rules(kernel: KernelMetrics, rules: tuple) -> KernelMetrics:
    from dataclasses import replace

    return replace(kernel, rules=rules)


def diagnose_saved(ncu_csv: Path | None = None, ncu_rep: Path | None = None,
                   gpu: str | None = None) -> tuple[ProgramDiagnosis, GpuSpecs]:
    kernels = read_saved_profile(ncu_csv, ncu_rep)
    specs = gpu_of(kernels, gpu)
    return diagnose_program(kernels, specs), specs


class ProfiledProgram(BaseModel):
    """One profile and its diagnosis; `diagnosis` is None when only torch.profiler (or nothing) could run."""

    profile: ProfileResult
    diagnosis: ProgramDiagnosis | None = None
    gpu: str | None = None

    def render(self) -> str:
        if self.diagnosis is not None:
            clock = f" at {self.profile.clock_hz / 1e9:.2f} GHz" if self.profile.clock_hz else ""
            head = f"Nsight Compute profile on {self.gpu}{clock} (clocks not locked)."
            return f"{head}\n{self.diagnosis.render()}"
        lines = [f"No Nsight Compute metrics: {self.profile.error or 'profiling did not run'}"]
        if self.profile.events:
            lines.append("torch.profiler saw, by time:")
            for event in sorted(self.profile.events, key=lambda e: -e.time_us)[:10]:
                lines.append(f"- {event.name}: {event.count} call(s), {event.time_us:.1f} us ({event.device})")
        return "\n".join(lines)

    @property
    def finding_ids(self) -> list[str]:
        if self.diagnosis is None:
            return []
        ids = [f.id for f in self.diagnosis.findings]
        for group in self.diagnosis.kernels:
            if group.diagnosis:
                ids += [f.id for f in group.diagnosis.findings if f.id not in ids]
        return ids

    @property
    def headline(self) -> str:
        if self.diagnosis is None:
            return f"no ncu metrics ({self.profile.error_kind or 'not profiled'})"
        for finding in self.diagnosis.findings:
            return finding.title
        for group in self.diagnosis.kernels:  # by GPU time: a hot kernel is never left without a word
            if group.diagnosis and group.diagnosis.findings:
                return f"{group.name}: {group.diagnosis.findings[0].title}"
            if group.diagnosis and group.diagnosis.hot:
                return f"{group.name}: {group.diagnosis.limiter.title}"
        return "no bottleneck found"


def profile_and_diagnose(reference_source: str, candidate_source: str | None = None, *, device: str = "auto",
                         options: NcuOptions | None = None, workdir: Path | None = None,
                         lock: HarnessSettings | None = None) -> ProfiledProgram:
    """Profile one call of the reference (or the candidate) and diagnose what ncu measured; ``lock``: the
    device lock's settings (None: the settings files')."""
    result = profile_problem(reference_source, candidate_source, options=options, workdir=workdir, device=device,
                             lock=lock)
    if result.source != "ncu" or not result.kernels:
        return ProfiledProgram(profile=result)
    specs = gpu_of(result.kernels)
    return ProfiledProgram(profile=result, diagnosis=diagnose_program(result.kernels, specs), gpu=specs.name)
