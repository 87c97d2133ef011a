"""What the judge says about one candidate: ``EvalResult`` and the guard findings inside it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from kernelpro.harness.timing.scorecards import KernelBenchScore

# What torch says when CUDA's allocator cannot serve a request (``torch.OutOfMemoryError``).
OUT_OF_GPU_MEMORY = re.compile(r"CUDA out of memory|OutOfMemoryError")

CUT_AT_DEADLINE = "run_deadline"
"""The reason of a candidate the caller's deadline (``until``: a run's time budget) stopped or never let start:
no verdict on the candidate, which may be judged again later."""

Status = Literal["ok", "incorrect", "compile_error", "runtime_error", "timeout", "rejected"]
SpeedVerdict = Literal["faster", "slower", "same", "uncertain"]
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
    "extra_stream": "leaves work on a CUDA stream that the caller's stream does not wait for",
    "timer_patch": "replaces a timer, synchronize or event function",
    "judge_patch": "reaches into or modifies the judge",
    "precision_downgrade": "computes at lower precision than the tolerance allows",
    "stale_memory": "returns memory that it never wrote (left over from earlier work)",
    "l2_persistence": "sets an L2 persistence policy that survives the cache flush",
    "ghost_kernel": "builds a custom kernel that never runs while judged",
    "energy_replay": "runs far faster on one repeated input set than on fresh inputs (its energy is not trusted)",
    "output_reused": "returns the same output storage from more than one call",
    "below_memory_floor": "measured faster than moving its inputs and outputs at the GPU's peak bandwidth allows",
    "process_snooping": "reads another process's environment, command line or memory, or traces it",
    "network_access": "opens a network connection",
    "self_modification": "writes the process's own memory or code behind Python's back (ctypes, /proc/self/mem)",
    "timing_disagreement": "an independent timing in a fresh process disagrees with the judge's speedup",
}

TIMING_DISAGREEMENT = "timing_disagreement"
BELOW_MEMORY_FLOOR = "below_memory_floor"

# Findings about the problem itself, whatever the candidate: no candidate's speedup on it means much.
PROBLEM_REASONS: dict[str, str] = {
    "constant_output": "the reference's output does not depend on its inputs",
}


class GuardFinding(BaseModel):
    """One guard's verdict on a candidate. ``reject`` findings make the status ``rejected``."""

    reason: str
    severity: Severity = "reject"
    source: Literal["static", "dynamic"]
    message: str
    line: int | None = None


class ProblemFinding(BaseModel):
    """Something wrong with the problem (the reference), found while judging a candidate on it."""

    reason: str
    message: str


class Timing(BaseModel):
    """Per-call times of one model in milliseconds, over ``trials`` timed calls."""

    median_ms: float
    p10_ms: float
    p90_ms: float
    mean_ms: float
    trials: int
    method: str
    host_median_ms: float | None = None
    """The host's time per timed call, waits included."""
    gpu_median_ms: float | None = None
    """On CUDA: the call's GPU time alone (the events' span), before the host's issue time is taken into account."""
    issue_median_ms: float | None = None
    """On CUDA: the host's time to issue the call from an idle GPU (or to issue and finish it, when it waits)."""
    energy_j: float | None = None
    """Joules per call, from NVML's energy counter, when measured."""
    power_w: float | None = None
    """Average board power while the call repeated, when measured."""

    @property
    def spread(self) -> float:
        """Relative spread: (p90 - p10) / median."""
        return (self.p90_ms - self.p10_ms) / self.median_ms if self.median_ms > 0 else 0.0

    @property
    def host_bound(self) -> bool:
        """The host takes longer to issue the call than the GPU takes to run it: launch overhead sets its cost."""
        return self.gpu_median_ms is not None and self.issue_median_ms is not None and \
            self.issue_median_ms > self.gpu_median_ms


class SecondOpinion(BaseModel):
    """A best's speedup timed again in a fresh process by an independent plain method
    (``harness.second_opinion``): host-synchronised calls on fresh inputs, reference and candidate alternating."""

    status: Literal["agree", "disagree", "failed", "unavailable"]
    """``agree``: within the noise of the judge's figure; ``disagree``: the two intervals are disjoint and the
    figures more than ``harness.second_opinion_margin`` apart; ``failed``: the candidate failed or hung in the
    fresh process; ``unavailable``: no figure for a reason of the machine's (the process, the reference)."""
    speedup: float | None = None
    """The reference's median time over the candidate's."""
    speedup_ci95: list[float] | None = None
    """Its 95% interval, a bootstrap over the paired rounds."""
    reference_ms: float | None = None
    candidate_ms: float | None = None
    rounds: int = 0
    method: str = ""
    message: str = ""
    elapsed_s: float | None = None

    @property
    def agrees(self) -> bool:
        return self.status == "agree"


class EvalResult(BaseModel):
    """The judge's verdict on one candidate."""

    status: Status
    reason: str | None = None
    message: str = ""
    correct: bool = False
    speedup: float | None = None
    """Reference time over candidate time: the median ratio over paired rounds (``harness.stats``)."""
    speedup_ci95: list[float] | None = None
    """The speedup's 95% interval ``[low, high]``: a bootstrap over paired timing rounds (see ``harness.stats``)."""
    speed_verdict: SpeedVerdict | None = None
    """``faster``, ``slower`` or ``same`` at the minimum effect ``harness.min_effect``; ``uncertain`` when the
    interval is too wide for any call."""
    host_bound: bool | None = None
    """The reference's cost is the host's time to issue it, not GPU time: a speedup is a launch-overhead saving."""
    contended: bool = False
    """Timed while other work kept the machine's CPUs busy: the figure is not a speedup to act on."""
    energy_ratio: float | None = None
    """With ``harness.energy``: reference joules per call over the candidate's (1.1: 10 % less energy), the
    geometric mean over paired NVML readings (``harness.energy_compare``)."""
    energy_ci95: list[float] | None = None
    """The energy ratio's 95% interval (Student's t over the paired readings' log ratios)."""
    energy_verdict: str | None = None
    """``less``, ``more`` or ``same`` energy than the reference at ``harness.min_effect``; ``uncertain`` when the
    interval allows no call or the readings are not trusted (``energy_replay``)."""
    edp_ratio: float | None = None
    """Reference energy-delay product (joules times seconds per call) over the candidate's."""
    edp_ci95: list[float] | None = None
    edp_verdict: str | None = None
    """``less``, ``more``, ``same`` or ``uncertain`` energy-delay product, like ``energy_verdict``."""
    candidate: Timing | None = None
    reference: Timing | None = None
    guards: list[GuardFinding] = Field(default_factory=list)
    problem_findings: list[ProblemFinding] = Field(default_factory=list)
    """Findings about the problem (``PROBLEM_REASONS``); with any, no speedup on it counts as an improvement."""
    device: str | None = None
    correctness_profile: str | None = None
    """Which correctness check judged it (``harness.correctness_profile``): ``kernelpro`` or ``kernelbench``; None
    on a verdict taken before any worker ran (a static check) or recorded before profiles were."""
    trials_checked: int = 0
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    worker_output: str = ""
    elapsed_s: float | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    second_opinion: SecondOpinion | None = None
    kernelbench: KernelBenchScore | None = None
    """The speedup in KernelBench's convention (events behind the L2 flush, the mean, no host floor), from the
    referee's timed rounds, beside ``speedup`` (``harness/timing/scorecards.py``)."""
    """The best's speedup timed again in a fresh process by an independent method, where the run asked for it
    (``harness.second_opinion``); a disagreement adds the ``timing_disagreement`` finding."""

    @property
    def device_s(self) -> float:
        """The seconds the judgment had the device: its ``elapsed_s`` less what it let the device go while
        compiling (``details.device_turn``, with ``harness.share_until_timing``). What GPU time counts."""
        released = (self.details.get("device_turn") or {}).get("released_s") or 0.0
        return max(0.0, (self.elapsed_s or 0.0) - released)

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

    @property
    def faster_as_timed(self) -> bool:
        """Correct, timed on a quiet machine, and faster than the reference beyond its interval, by the judge's own
        timing alone."""
        return self.status == "ok" and self.correct and self.speed_verdict == "faster" and not self.contended

    @property
    def timing_trusted(self) -> bool:
        """No independent timing disagrees with the judge's (``timing_disagreement``), and a time below the
        memory floor (``below_memory_floor``) has an agreeing second opinion behind it."""
        reasons = {finding.reason for finding in self.guards}
        if TIMING_DISAGREEMENT in reasons:
            return False
        return BELOW_MEMORY_FLOOR not in reasons or (self.second_opinion is not None and self.second_opinion.agrees)

    @property
    def improves(self) -> bool:
        """Faster as the judge timed it (``faster_as_timed``), and that timing trusted (``timing_trusted``)."""
        return self.faster_as_timed and self.timing_trusted

    def kernelbench_call(self, min_effect: float) -> SpeedVerdict | None:
        """The speedup's call in KernelBench's convention (``kernelbench``) at ``min_effect``, as
        ``stats.speed_call`` makes it; None without that figure."""
        if self.kernelbench is None:
            return None
        low, high = self.kernelbench.speedup_ci95
        from kernelpro.harness.timing.stats import speed_call  # numpy: not before a worker's walls

        return speed_call(self.kernelbench.speedup, low, high, min_effect)

    def faster_under(self, scorecard: str, min_effect: float) -> bool:
        """``faster_as_timed`` read in ``scorecard`` (``search.scorecard``): under ``kernelbench``, correct, timed
        on a quiet machine and faster by its KernelBench figure (``kernelbench_call``)."""
        if scorecard == "kernelpro":
            return self.faster_as_timed
        return self.status == "ok" and self.correct and not self.contended and \
            self.kernelbench_call(min_effect) == "faster"

    def improves_under(self, scorecard: str, min_effect: float) -> bool:
        """``improves`` read in ``scorecard``: faster by that scorecard (``faster_under``), and the timing
        trusted (``timing_trusted``)."""
        return self.faster_under(scorecard, min_effect) and self.timing_trusted

    @property
    def out_of_gpu_memory(self) -> bool:
        """The GPU ran out of memory: in a model's call, or building it, the candidate or the reference."""
        return self.status == "runtime_error" and (self.reason == "gpu_out_of_memory"
                                                   or bool(OUT_OF_GPU_MEMORY.search(self.message)))


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


def headline(message: str, limit: int = 240) -> str:
    """A verdict's message on one line: its first line, and where that line only introduces what follows (it ends
    with a colon, as "extension 'x' (line 12) does not build:" does) the first line after it that names an
    error, or else the next one (a build log opens with its command line, the error comes later)."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    first = lines[0]
    if first.endswith(":") and len(lines) > 1:
        first = f"{first} {next((line for line in lines[1:] if 'error' in line.lower()), lines[1])}"
    return first[:limit]


def most_say_host_bound(verdicts: Iterable[Mapping[str, Any]]) -> bool | None:
    """Whether most of the verdicts (as dumped: ``host_bound`` a key) that say found the reference host-bound; a
    tie is not; None when none says (no verdict timed the reference)."""
    flags = [bool(v["host_bound"]) for v in verdicts if v.get("host_bound") is not None]
    return sum(flags) * 2 > len(flags) if flags else None
