"""Micro-profiling end to end: stage 1 (roofline) picks the diagnosers, stage 2 runs them, findings are ranked.

`diagnose` handles one kernel launch; `diagnose_program` a whole profiled program (a model's forward can launch
dozens of kernels): launches of the same kernel are grouped, groups ordered by their share of GPU time, the top
ones diagnosed, and a program-level launch_overhead finding raised when many short launches dominate.
Both results have a dict/JSON form for tools and a short `render()` text for an LLM.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from kernelpro.profiling.diagnosers import DIAGNOSERS
from kernelpro.profiling.diagnosers.ranking import rank_findings
from kernelpro.profiling.diagnosers.signals import (
    LAUNCH_FLOOR_NS,
    SHORT_KERNEL_NS,
    duration,
    evidence,
    finding,
    pct,
)
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.limiter import Limiter, read_limiter
from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.program_advice import unfused_streams
from kernelpro.profiling.roofline import Roofline, classify
from kernelpro.profiling.roofs import ROOF_LABELS

# Kernels diagnosed in a program: the top ones, and beyond them every kernel with at least HOT_SHARE of the GPU
# time (up to MAX_DIAGNOSED); the rest are listed with their time share only.
TOP_KERNELS = 5
HOT_SHARE = 0.03
MAX_DIAGNOSED = 12
# A kernel with at least this share of the program's GPU time is where an optimisation pays: it never gets "no
# specific bottleneck" but what limits it from its metrics (limiter.py) whenever no diagnoser names a cause. A
# fifth: speeding up a smaller one twofold gains under a tenth of the program, Amdahl's bound.
HOT_KERNEL_SHARE = 0.2
# Findings rendered in full per kernel (the rest are named): keeps a kernel to a few hundred words.
RENDERED_FINDINGS = 3
RENDERED_ADVICE = 3
# Program-level launch overhead: at least this many launches shorter than SHORT_KERNEL_NS, taking at least
# this share of the GPU time.
MANY_SHORT_LAUNCHES = 4
SHORT_TIME_SHARE = 0.5


class KernelDiagnosis(BaseModel):
    name: str
    launch: int
    duration_ns: float | None = None
    sm_clock_hz: float | None = None
    roofline: Roofline
    findings: list[Finding] = Field(default_factory=list)  # ranked, cause before symptom
    limiter: Limiter  # what limits it from its metrics alone, shown when no finding explains it and it is hot
    share: float | None = None  # of its program's GPU time; None diagnosed alone

    @property
    def hot(self) -> bool:
        return self.share is not None and self.share >= HOT_KERNEL_SHARE

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def render(self, max_findings: int = RENDERED_FINDINGS) -> str:
        clock = f" at {self.sm_clock_hz / 1e9:.2f} GHz" if self.sm_clock_hz else ""
        took = f": {duration(self.duration_ns)}{clock}" if self.duration_ns else ""
        lines = [f"{self.name} (launch {self.launch}){took}", f"Roofline: {self.roofline.summary}"]
        if not self.findings and self.hot:
            lines += self.limiter.render_lines()
        elif not self.findings:
            lines.append("No specific bottleneck found among the diagnosers this class runs" + self._closest()
                         + ("; near its roof, the levers are:" if self.roofline.roof_advice else "."))
            lines += [f"   - {advice}" for advice in self.roofline.roof_advice]
        lines += [render_finding(f, i) for i, f in enumerate(self.findings[:max_findings], 1)]
        rest = self.findings[max_findings:]
        if rest:
            lines.append("Also: " + ", ".join(f"{f.id} (impact {f.impact:.0%})" for f in rest))
        return "\n".join(lines)

    def _closest(self) -> str:
        roof, level = self.roofline.roof, self.roofline.roof_pct
        if roof is None or level is None:
            return ""
        label = ROOF_LABELS[roof].format(precision=self.roofline.precision)
        return f"; it is closest to {label} at {pct(level)} of peak"


class KernelGroup(BaseModel):
    """All launches of one kernel in a program."""

    name: str
    launches: int
    total_ns: float
    share: float  # of the program's GPU time
    diagnosis: KernelDiagnosis | None = None  # of the median-length launch; None beyond the top kernels

    def to_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name, "launches": self.launches, "total_ns": self.total_ns,
                                 "share": self.share}
        if self.diagnosis:
            diagnosis = self.diagnosis.to_dict()
            entry |= {"launch": diagnosis["launch"], "duration_ns": diagnosis["duration_ns"],
                      "roofline": diagnosis["roofline"], "findings": diagnosis["findings"],
                      "limiter": diagnosis["limiter"]}
        return entry


class ProgramDiagnosis(BaseModel):
    total_ns: float
    launches: int
    kernels: list[KernelGroup] = Field(default_factory=list)  # by share of GPU time, largest first
    findings: list[Finding] = Field(default_factory=list)  # program-level (launch_overhead, unfused_elementwise)

    def all_findings(self) -> list[dict[str, Any]]:
        """The program's findings, then every diagnosed kernel's, each with the kernel it is about."""
        found = [f.model_dump() | {"kernel": None} for f in self.findings]
        for group in self.kernels:
            if group.diagnosis:
                found += [f.model_dump() | {"kernel": group.name} for f in group.diagnosis.findings]
        return found

    def to_dict(self) -> dict[str, Any]:
        return {"total_ns": self.total_ns, "launches": self.launches, "program_findings":
                [f.model_dump() for f in self.findings], "findings": self.all_findings(),
                "kernels": [g.to_dict() for g in self.kernels]}

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def render(self, max_findings: int = RENDERED_FINDINGS) -> str:
        lines = [f"{plural(self.launches, 'launch')} of {plural(len(self.kernels), 'kernel')}, "
                 f"{duration(self.total_ns)} of GPU time."]
        lines += [render_finding(f, i) for i, f in enumerate(self.findings, 1)]
        for group in self.kernels:
            lines.append("")
            lines.append(f"## {group.name}: {group.share:.0%} of GPU time, {plural(group.launches, 'launch')}")
            if group.diagnosis:
                lines.append(group.diagnosis.render(max_findings))
        return "\n".join(lines).strip()


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}{'es' if noun.endswith('ch') else 's'}"


def render_finding(f: Finding, number: int) -> str:
    """A finding for an LLM: title, cause, evidence, remedies; a symptom gets its title and evidence only."""
    symptom = f" (a symptom of {f.symptom_of})" if f.symptom_of else ""
    lines = [f"{number}. [{f.severity}] {f.id}: {f.title}{symptom}"]
    if not f.symptom_of:
        lines.append(f"   {f.explanation}")
    lines.append("   Evidence: " + "; ".join(e.render() for e in f.evidence))
    lines += [f"   - {advice}" for advice in ([] if f.symptom_of else f.advice[:RENDERED_ADVICE])]
    return "\n".join(lines)


def diagnose(kernel: KernelMetrics, gpu: GpuSpecs, only: Iterable[str] | None = None,
             share: float | None = None) -> KernelDiagnosis:
    """Classify one launch, run the diagnosers its class makes relevant (or `only` these ids), rank findings;
    ``share``: of its program's GPU time."""
    roofline = classify(kernel, gpu)
    ids = tuple(only) if only is not None else roofline.diagnoser_ids()
    findings = [f for id in ids for f in DIAGNOSERS[id](kernel, gpu)]
    return KernelDiagnosis(name=kernel.name, launch=kernel.launch, duration_ns=kernel.duration_ns,
                           sm_clock_hz=kernel.sm_clock_hz, roofline=roofline, findings=rank_findings(findings),
                           limiter=read_limiter(kernel, roofline), share=share)


def diagnose_program(kernels: Sequence[KernelMetrics], gpu: GpuSpecs, top: int = TOP_KERNELS) -> ProgramDiagnosis:
    groups: dict[str, list[KernelMetrics]] = {}
    for k in kernels:
        groups.setdefault(k.name, []).append(k)
    total_ns = sum(k.duration_ns or 0.0 for k in kernels)
    ordered = sorted(groups.items(), key=lambda item: -sum(k.duration_ns or 0.0 for k in item[1]))
    result = []
    for rank, (name, launches) in enumerate(ordered):
        spent = sum(k.duration_ns or 0.0 for k in launches)
        share = spent / total_ns if total_ns else 0.0
        hot = rank < top or (share >= HOT_SHARE and rank < MAX_DIAGNOSED)
        result.append(KernelGroup(name=name, launches=len(launches), total_ns=spent, share=share,
                                  diagnosis=diagnose(_median_launch(launches), gpu, share=share) if hot else None))
    return ProgramDiagnosis(total_ns=total_ns, launches=len(kernels), kernels=result,
                            findings=_program_launch_overhead(kernels, total_ns) + unfused_streams(
                                [(g.name, g.total_ns, g.diagnosis.roofline) for g in result if g.diagnosis],
                                total_ns))


def _median_launch(launches: list[KernelMetrics]) -> KernelMetrics:
    """The launch of median length: typical of the group, unlike the first (cold caches, clocks ramping)."""
    ordered = sorted(launches, key=lambda k: k.duration_ns or 0.0)
    return ordered[(len(ordered) - 1) // 2]


def _program_launch_overhead(kernels: Sequence[KernelMetrics], total_ns: float) -> list[Finding]:
    short = [k for k in kernels if k.duration_ns and k.duration_ns < SHORT_KERNEL_NS]
    short_ns = sum(k.duration_ns or 0.0 for k in short)
    if len(short) < MANY_SHORT_LAUNCHES or not total_ns or short_ns / total_ns < SHORT_TIME_SHARE:
        return []
    fixed = sum(min(k.duration_ns or 0.0, LAUNCH_FLOOR_NS) for k in short)
    names = sorted({k.name for k in short}, key=lambda n: -sum(k.duration_ns or 0 for k in short if k.name == n))
    return [finding(
        "launch_overhead", f"Launch overhead: {len(short)} launches under {duration(SHORT_KERNEL_NS)} take "
        f"{short_ns / total_ns:.0%} of GPU time",
        impact=fixed / total_ns, detail="program",
        explanation=(f"Most of the program's GPU time is spent in {len(short)} kernels that each last about as long "
                     "as launching, filling and draining the GPU, so fixed per-launch costs outweigh the work. "
                     "The host-side gaps between these launches, which the profile does not show, add to it."),
        advice=[f"Fuse consecutive small kernels ({', '.join(names[:3])}) into one that keeps intermediates in "
                "registers or shared memory.",
                "Capture the launch sequence in a CUDA graph (torch.cuda.graphs) to remove per-launch CPU cost.",
                "Batch repeated calls into one launch with a batch dimension in the grid."],
        evidence=[evidence("launches shorter than threshold", len(short), "launches",
                           f">= {MANY_SHORT_LAUNCHES}, each < {SHORT_KERNEL_NS:,.0f} ns"),
                  evidence("their share of GPU time", short_ns / total_ns * 100, "%", f">= {SHORT_TIME_SHARE:.0%}")])]
