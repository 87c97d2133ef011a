"""The checks ``Evaluation`` runs beside correctness and timing, in one place: on the problem (a constant
output), on the candidate's exception handlers, its custom kernels, the storage it returns, its side streams
and its time against the memory floor. Each check lives in its own module; this only holds their state for one
candidate and says when each runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness.guards import kernel_checks, memory_floor, problem_checks
from kernelpro.harness.guards.call_trace import CallTrace
from kernelpro.harness.guards.handler_probe import HandlerProbe
from kernelpro.harness.guards.launch_ledger import LEDGER
from kernelpro.harness.guards.output_checks import OutputHistory
from kernelpro.harness.result import EvalResult, GuardFinding, ProblemFinding
from kernelpro.harness.worker.model_calls import seed_call


class RunChecks:
    """One candidate's run-time checks that are not about a single output's values."""

    def __init__(self, job: dict[str, Any], settings: HarnessSettings, device: torch.device) -> None:
        self.job, self.settings, self.device = job, settings, device
        self.handlers = HandlerProbe()
        self.outputs = OutputHistory()
        self.problem_findings: list[ProblemFinding] = []
        self.trace: CallTrace | None = None
        self.launches_before = 0
        self.traffic_bytes = 0
        LEDGER.clear()  # kernels another candidate built in this process are not this one's

    def check_problem(self, draw: Callable[..., list[Any]], reference: Callable[[list[Any]], Any],
                      findings: list[GuardFinding]) -> None:
        """Does the reference's output vary with its inputs? On seeds of the problem check's own, which no
        candidate call sees (``draw(seed, scale)``). Also the problem's compulsory traffic, for the memory floor,
        and whether the reference returns the same storage twice (then a candidate may: ``output_reused`` waits
        for this)."""
        first_seed, *others = self.job["seeds"]["problem"]

        def first_set(scale: float | None = None) -> Any:
            inputs = draw(first_seed, scale)
            seed_call(first_seed)  # the nudged calls draw the random numbers the first drew
            return inputs, reference(inputs)

        inputs, first = first_set()
        self.traffic_bytes = memory_floor.compulsory_bytes(inputs, first)
        del inputs
        sets = [(seed, None) for seed in others[:-1]] + [(seed, self.settings.magnitude_scale) for seed in others[-1:]]
        self.problem_findings, reference_reuses = problem_checks.check_reference(
            first, lambda seed, scale: reference(draw(seed, scale)), sets, self.settings,
            nudged=lambda scale: first_set(scale)[1])
        if (reused := self.outputs.finding()) is not None and not reference_reuses:
            findings.append(reused)

    def begin_judged_calls(self) -> None:
        """The candidate is built: what ran so far (import, ``__init__``) is not a judged call."""
        self.handlers.skip()
        self.launches_before = LEDGER.total()

    def after_call(self, findings: list[GuardFinding]) -> list[GuardFinding]:
        """After every candidate call: rejections to raise (a fallback handler ran); warnings go to ``findings``."""
        return self.handlers.check(findings)

    def output(self, out: Any) -> None:
        """After a correctness call: note storage an earlier call returned (see ``check_problem``)."""
        self.outputs.record(out)

    def ghost_kernel(self) -> GuardFinding | None:
        """After the correctness and stream checks: did any custom kernel the candidate built run?"""
        declared = kernel_checks.declared_kernels(self.job["candidate_source"])
        traced = self.trace.kernel_names() if self.trace is not None else None
        return kernel_checks.ghost_kernel(LEDGER, self.launches_before, declared, traced,
                                          self.settings.ghost_kernel_rejects)

    def memory_floor(self, result: EvalResult) -> None:
        """After timing, on CUDA: a candidate faster than its compulsory traffic allows gets a warning."""
        if self.device.type != "cuda" or result.candidate is None:
            return
        found = memory_floor.below_floor(result.candidate.median_ms, self.traffic_bytes,
                                         memory_floor.peak_bandwidth_gbs(self.device))
        if found:
            result.guards.append(found)

    def attach(self, result: EvalResult) -> EvalResult:
        result.problem_findings = list(self.problem_findings)
        if self.traffic_bytes:  # for the forecasters' roofline bound
            result.details["traffic_bytes"] = self.traffic_bytes
        return result
