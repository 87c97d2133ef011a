"""What the judge says about one candidate: ``EvalResult`` and the guard findings inside it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Status = Literal["ok", "incorrect", "compile_error", "runtime_error", "timeout", "rejected"]
Severity = Literal["reject", "warn", "info"]

# Guard reason codes. Each names one known reward hack; ids never change meaning once published.
GUARD_REASONS: dict[str, str] = {
    "try_except_fallback": "falls back to PyTorch ops inside an exception handler",
    "reference_reuse": "subclasses, builds or calls the reference Model",
    "cached_output": "replays an output computed for other inputs",
    "input_mutation": "writes to its inputs",
    "output_aliases_input": "returns a tensor that shares storage with an input",
    "tensor_subclass": "returns something other than a plain, materialised torch.Tensor",
    "background_thread": "leaves a thread running after the call",
    "background_process": "starts a process",
    "extra_stream": "runs work on a CUDA stream other than the current one",
    "timer_patch": "replaces a timer, synchronize or event function",
    "judge_patch": "reaches into or modifies the judge",
    "precision_downgrade": "computes at lower precision than the tolerance allows",
    "stale_memory": "returns memory that it never wrote (left over from earlier work)",
    "l2_persistence": "sets an L2 persistence policy that survives the cache flush",
    "process_snooping": "reads another process's environment, command line or memory, or traces it",
    "network_access": "opens a network connection",
    "self_modification": "writes the process's own memory or code behind Python's back (ctypes, /proc/self/mem)",
}


class GuardFinding(BaseModel):
    """One guard's verdict on a candidate. ``reject`` findings make the status ``rejected``."""

    reason: str
    severity: Severity = "reject"
    source: Literal["static", "dynamic"]
    message: str
    line: int | None = None


class Timing(BaseModel):
    """Per-call times of one model in milliseconds, over ``trials`` timed calls."""

    median_ms: float
    p10_ms: float
    p90_ms: float
    mean_ms: float
    trials: int
    method: str
    host_median_ms: float | None = None
    energy_j: float | None = None
    """Joules per call, from NVML's energy counter, when measured."""
    power_w: float | None = None
    """Average board power while the call repeated, when measured."""

    @property
    def spread(self) -> float:
        """Relative spread: (p90 - p10) / median."""
        return (self.p90_ms - self.p10_ms) / self.median_ms if self.median_ms > 0 else 0.0


class EvalResult(BaseModel):
    """The judge's verdict on one candidate."""

    status: Status
    reason: str | None = None
    message: str = ""
    correct: bool = False
    speedup: float | None = None
    candidate: Timing | None = None
    reference: Timing | None = None
    guards: list[GuardFinding] = Field(default_factory=list)
    device: str | None = None
    trials_checked: int = 0
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    worker_output: str = ""
    elapsed_s: float | None = None
    details: dict[str, Any] = Field(default_factory=dict)

    @property
    def candidate_ms(self) -> float | None:
        return self.candidate.median_ms if self.candidate else None

    @property
    def reference_ms(self) -> float | None:
        return self.reference.median_ms if self.reference else None

    def to_json_dict(self) -> dict[str, Any]:
        """The flat form ``kernelpro eval --json`` prints."""
        data = self.model_dump(mode="json")
        data["candidate_ms"] = self.candidate_ms
        data["reference_ms"] = self.reference_ms
        data["candidate_spread"] = self.candidate.spread if self.candidate else None
        data["reference_spread"] = self.reference.spread if self.reference else None
        return data


def rejected(findings: list[GuardFinding], **extra: Any) -> EvalResult:
    """The verdict for a candidate some guard rejected: the first rejecting finding names the reason."""
    first = next(f for f in findings if f.severity == "reject")
    return EvalResult(
        status="rejected",
        reason=first.reason,
        message=f"{GUARD_REASONS.get(first.reason, first.reason)}: {first.message}",
        guards=findings,
        **extra,
    )
