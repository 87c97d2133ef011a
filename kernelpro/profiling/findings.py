"""A diagnosis: what limits a kernel, the evidence for it, and what to do about it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

# Stable ids (ARCHITECTURE.md): never change the meaning of a published id.
FINDING_IDS = (
    "memory_bound",
    "compute_bound",
    "memory_latency_bound",
    "launch_overhead",
    "low_parallelism",
    "occupancy_limited",
    "register_spills",
    "uncoalesced_global",
    "smem_bank_conflicts",
    "warp_divergence",
    "barrier_stalls",
    "atomic_contention",
    "tensor_cores_unused",
)

# Program-level ids: about several kernels of a program at once (diagnose_program), not one kernel's diagnoser.
PROGRAM_FINDING_IDS = ("unfused_kernels",)

Severity = Literal["high", "medium", "low"]


class Evidence(BaseModel):
    """One measured value and the threshold that made it count."""

    metric: str  # ncu metric name, or a derived quantity's name ("sectors_per_request")
    value: float
    unit: str = ""
    threshold: str = ""  # e.g. "> 60 %" or "ideal 4"

    def render(self) -> str:
        shown = f"{self.value:,.4g}" if abs(self.value) < 1e6 else f"{self.value:,.0f}"
        unit = f" {self.unit}" if self.unit else ""
        cmp = f" (threshold {self.threshold})" if self.threshold else ""
        return f"{self.metric} = {shown}{unit}{cmp}"


class Finding(BaseModel):
    """One diagnosis from a micro-profiling tool, ranked by `impact` (estimated fraction of time recoverable)."""

    id: str
    severity: Severity
    title: str  # one line: "Memory-bound: DRAM at 92 % of peak"
    evidence: list[Evidence] = Field(default_factory=list)
    explanation: str  # two or three plain sentences
    advice: list[str] = Field(default_factory=list)  # concrete remedies, most promising first
    impact: float = Field(0.0, ge=0.0, le=1.0)
    detail: str = ""  # the limiter in families with several causes, e.g. "registers" for occupancy_limited
    symptom_of: str = ""  # set when another finding on the same kernel is the cause of this one

    def render(self) -> str:
        symptom = f" (a symptom of {self.symptom_of})" if self.symptom_of else ""
        lines = [f"[{self.severity}] {self.id}: {self.title}{symptom}", self.explanation]
        lines += [f"  evidence: {e.render()}" for e in self.evidence]
        lines += [f"  try: {a}" for a in self.advice]
        return "\n".join(lines)
