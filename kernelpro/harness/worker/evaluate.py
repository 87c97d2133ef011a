"""One candidate's evaluation, inside the worker: load, check on fresh inputs, time, re-check, guard.

Order matters. The candidate always runs before the reference on a given input set, on memory the judge
has just poisoned, so no output of the reference can be lying in a freed block for it to hand back.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness import cpu_load, cuda_driver
from kernelpro.harness.compile_watch import reporting_compiles
from kernelpro.harness.device_turns import DeviceTurns, releases_while_compiling
from kernelpro.harness.footprint import input_bytes, inputs_over_limit, reference_out_of_memory
from kernelpro.harness.guards import dynamic as dyn
from kernelpro.harness.guards import integrity
from kernelpro.harness.guards.around_calls import Guards
from kernelpro.harness.guards.compare import Mismatch, flatten
from kernelpro.harness.guards.run_checks import RunChecks
from kernelpro.harness.guards.timed_checks import TimedCallChecks
from kernelpro.harness.guards.torch_state import TorchState
from kernelpro.harness.input_draws import fresh_seed
from kernelpro.harness.judge_values import frozen_noise, judge_limits
from kernelpro.harness.result import EvalResult, GuardFinding
from kernelpro.harness.timing import energy, energy_compare, stats
from kernelpro.harness.timing.clocks import _device_synchronize, make_clock
from kernelpro.harness.timing.rounds import clone_inputs, run_timing
from kernelpro.harness.worker.correctness import CorrectnessSets
from kernelpro.harness.worker.loader import (
    Verdict,
    build,
    check_signature,
    load_candidate,
    load_reference,
)
from kernelpro.harness.worker.model_calls import ModelCalls, all_finite, no_grad, seed_call

Emit = Callable[[dict[str, Any]], None]


class Evaluation(CorrectnessSets, Guards, ModelCalls):
    """Runs the checks for one job (see ``sandbox.make_job``) and returns an ``EvalResult``."""

    def __init__(self, job: dict[str, Any], workdir: Path, emit: Emit,
                 await_turn: Callable[[], None] | None = None) -> None:
        self.job = job
        self.workdir = workdir
        self.emit = emit
        # ``worker_harness``: what the worker alone does differently (its own timing's length, under the referee)
        self.settings = HarnessSettings.model_validate({**job["harness"], **job.get("worker_harness", {})})
        # the job's hold on the device, which it shares until timing (harness.share_until_timing)
        self.turns = DeviceTurns(emit, await_turn, bool(job.get("share_until_timing")),
                                 releases_while_compiling(self.settings.release_while_compiling, job["device"]))
        self.device = torch.device(job["device"])
        self.findings: list[GuardFinding] = []
        self.output_sizes: list[int] = []
        self.fingerprints: list[tuple[tuple, tuple]] = []  # (candidate output, reference output) per input set
        self.phase = "start"
        self.draw_on_device = True
        self.limits = judge_limits(self.settings)  # frozen before any candidate code runs (judge_values)
        self.noise = frozen_noise({})  # per output leaf, what the timed calls allow for (precision.reference_noise)
        self.snapshot: integrity.IntegritySnapshot | None = None  # taken once the reference is loaded
        self.torch_state = TorchState()
        self.expected_state: dict[str, Any] = {}  # what the judge itself holds differently now (timing)
        self.state_seen = False  # whether the shared state was checked since the candidate's code last ran
        self.phase_started = time.perf_counter()
        self.phase_s: dict[str, float] = {}
        self.input_bytes: int | None = None  # get_inputs()'s tensors, read on the meta device (footprint.py)
        self.cpu: dict[str, Any] = {}
        self.checks = RunChecks(job, self.settings, self.device)

    # -- phases -----------------------------------------------------------------------------------
    def run(self) -> EvalResult:
        """The verdict, with what the judge found about the problem itself, whatever the verdict."""
        try:
            # compiling is not hanging: the deadline does not count it; nor does it need the device
            with reporting_compiles(self.emit, self.turns):
                return self.checks.attach(self.judge())
        except Verdict as failure:
            if failure.result.reason == "memory_limit" and self.phase == "load_reference":  # Model() itself
                failure = self.too_big(reference_out_of_memory("while being built", self.input_bytes,
                                                               self.settings.memory_limit_mb))
            self.checks.attach(failure.result)
            raise failure from None

    def judge(self) -> EvalResult:
        if self.device.type == "cpu":
            self.set_cpu_threads()
        self.enter("load_reference")
        ref_module = load_reference(self.job["reference_source"], self.workdir)
        self.ref_module = ref_module
        if self.device.type == "cpu":  # too big for the host's limit whatever the candidate: no input is drawn
            self.input_bytes = input_bytes(ref_module.get_inputs)
            if (why := inputs_over_limit(self.input_bytes, self.settings.memory_limit_mb)) is not None:
                raise self.too_big(why)
        init_inputs = self.reference_call(lambda: list(ref_module.get_init_inputs()), "get_init_inputs()")
        seed = self.job["seeds"]["init"]
        self.reference = build(ref_module.Model, init_inputs, seed, self.device, self.workdir / "reference.py",
                               failure_reason="reference_failed")
        warm_inputs = self.make_inputs(fresh_seed())
        called = time.perf_counter()
        warm = self.reference_outputs(warm_inputs)
        self.emit({"reference_call_s": time.perf_counter() - called})  # the judge fits its time limit to it
        self.output_sizes = [leaf.untyped_storage().nbytes() for _, leaf in flatten(warm)
                             if isinstance(leaf, torch.Tensor)]
        if self.device.type == "cpu":  # with the outputs' size known, the checks' whole footprint
            inputs = {x.untyped_storage().data_ptr() for x in warm_inputs if isinstance(x, torch.Tensor)}
            outputs = sum(leaf.untyped_storage().nbytes() for _, leaf in flatten(warm) if isinstance(leaf, torch.Tensor)
                          and leaf.untyped_storage().data_ptr() not in inputs)
            if (why := inputs_over_limit(self.input_bytes, self.settings.memory_limit_mb, outputs)) is not None:
                raise self.too_big(why)
        del warm_inputs, warm

        if self.device.type == "cuda":
            # Devices start with a non-zero persisting-L2 limit; zero it so any rise is the candidate's doing.
            cuda_driver.reset_persisting_l2()
            self.l2_baseline = cuda_driver.persisting_l2_limit() or 0
        self.snapshot = integrity.take_snapshot({"reference": ref_module, "reference.Model": ref_module.Model},
                                                torch_namespaces=True)
        self.torch_state = TorchState.take()
        self.activity = dyn.ActivityBaseline()
        self.enter("load_candidate")
        model_new = load_candidate(self.job["candidate_source"], self.workdir, self.checks.handlers)
        if any(cls is ref_module.Model or cls.__name__ == "Model" for cls in model_new.__mro__):
            self.reject(dyn.finding("reference_reuse", "ModelNew inherits from the reference Model"))
        check_signature(model_new, init_inputs, ref_module.Model)
        self.enter("init_candidate")
        self.candidate = build(model_new, init_inputs, seed, self.device, self.workdir / "candidate.py")
        self.checks.begin_judged_calls()
        self.after_candidate_call()
        if any(type(m) is ref_module.Model or type(m).__name__ == "Model" for m in self.candidate.modules()):
            self.reject(dyn.finding("reference_reuse", "ModelNew holds an instance of the reference Model"))
        max_abs, max_rel, checked = self.check_correctness()
        if self.device.type == "cuda":
            self.check_streams()
        if (ghost := self.checks.ghost_kernel()) is not None:
            self.reject(ghost) if ghost.severity == "reject" else self.findings.append(ghost)
        self.enter("problem check")  # after the candidate's checks: its calls ran on memory no reference output used
        self.checks.check_problem(self.make_inputs, self.reference_outputs, self.findings)
        result = EvalResult(status="ok", correct=True, message="correct", trials_checked=checked,
                            max_abs_error=max_abs, max_rel_error=max_rel, guards=self.findings,
                            device=str(self.device),
                            details={"reference_noise": dict(self.noise)} if self.noise else {})
        if self.job.get("timing", True):
            self.take_device_alone()
            self.time_and_check(result)
            self.checks.memory_floor(result)
        return result

    def take_device_alone(self) -> None:
        """With the device lock held shared so far (``share_until_timing``), ask the judge for it alone and wait
        until it says so: nothing another lane does on the device overlaps the timing."""
        if not self.turns.held_alone:
            self.enter("waiting for the device")
            if self.device.type == "cuda":
                torch.cuda.empty_cache()  # what the checks left cached is room for the jobs beside this one
            self.turns.alone()

    def time_and_check(self, result: EvalResult) -> None:
        self.enter("timing")
        round_seeds: dict[int, int] = {}  # each round's, drawn from the OS when the round begins
        clock = make_clock(self.device, self.settings)
        models = {"reference": self.reference, "candidate": self.candidate}

        def replayed(index: int, other: int) -> None:
            self.reject(dyn.finding("cached_output", f"a timed call on fresh inputs (round {index + 1}) returned "
                                    f"the output for the inputs of round {other + 1}"))

        def mismatch(outcome: Mismatch, out: Any, expected: Any, index: int) -> None:
            self.fail(outcome, out, expected, prefix=f"in a timed call, on the fresh inputs of round {index + 1}: ")

        checks = TimedCallChecks(self.limits.tolerances.verified(), self.noise.verified(), self.after_candidate_call,
                                 replayed,
                                 mismatch, all_finite, self.settings.timed_check_elements)
        # Every round draws its own inputs (outside the timed region), so no timed call sees values another
        # call saw: a memo keyed on contents, pointers or ids either misses or returns a wrong output.
        load = cpu_load.LoadMeter() if self.device.type == "cpu" else None
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)  # the timing phase's own peak, in its details
        def draw(index: int) -> list[Any]:
            round_seeds.pop(index - 2, None)
            round_seeds[index] = fresh_seed()
            return self.make_inputs(round_seeds[index])

        def before_call(name: str, index: int) -> None:
            # The same full look at the shared state right before either model's call: before the reference's it
            # keeps what the candidate changed from acting there; made before the reference's alone, that work
            # came right before one model's calls (a host-bound model read 1.13-1.17x against itself on a CPU).
            self.state_seen = False
            self.judge_turn()
            if name == "candidate":
                self.state_seen = False  # its code runs now
            seed_call(round_seeds[index])

        # while timed the judge holds no grad and no collector (timing.collector_paused); the candidate may not
        self.expected_state = {"torch._C.is_grad_enabled": False, "gc.isenabled": False}
        try:
            run = self.guarded(lambda: no_grad(run_timing)(models, draw, clock, self.settings, checks, before_call),
                               "candidate")
        finally:
            self.expected_state, self.state_seen = {}, False
        timings = run.timings
        result.reference, result.candidate = timings["reference"], timings["candidate"]
        host_side = self.device.type == "cpu" or run.host_checked
        estimate = stats.estimate_speedup(run.costs["reference"], run.costs["candidate"], self.settings.min_effect,
                                          seed=fresh_seed(), job_spread=self.job_spread(host_side))
        result.speedup, result.speed_verdict = estimate.speedup, estimate.verdict
        result.speedup_ci95 = [round(estimate.low, 6), round(estimate.high, 6)]
        result.host_bound = timings["reference"].host_bound if self.device.type == "cuda" else None
        result.details["timing"] = {"rounds": run.rounds, "stopped_by": run.stopped_by,
                                    "host_checked": run.host_checked, "wall_s": round(run.wall_s, 3),
                                    "ci_relative_width": round(estimate.relative_width, 5),
                                    "outputs_checked": checks.checked,
                                    "outputs_sampled": checks.positions.sampled}
        if self.device.type == "cuda":  # what the job held while timed: beside other jobs' until its turn
            result.details["timing"]["gpu_peak_mb"] = round(torch.cuda.max_memory_allocated(self.device) / 2**20)
        if load is not None:
            self.mark_contention(result, load.read())
        if self.settings.energy and self.device.type == "cuda":
            self.measure_energy(models, self.make_inputs(fresh_seed()), result)
        result.message = (f"correct on {result.trials_checked} input sets and every timed call; "
                          f"{stats.speedup_text(estimate.speedup, [estimate.low, estimate.high])} {estimate.verdict} "
                          f"({timings['candidate'].median_ms:.4g} ms vs {timings['reference'].median_ms:.4g} ms, "
                          f"{run.rounds} rounds, stopped by {run.stopped_by.replace('_', ' ')})")
        if result.host_bound:
            result.message += "; the reference is host-bound (its launches cost more than its GPU time)"
        if result.contended:
            result.message += (f"; timed while other work kept {result.details['cpu']['other_cores_during']:.1f} "
                               "cores busy: not a speedup to act on")

    def job_spread(self, host_side: bool) -> float:
        """The spread between identical jobs this one's interval must allow for (``harness.job_spread_*``)."""
        if not host_side:
            return self.settings.job_spread_gpu
        fresh = self.settings.worker_mode == "fresh"
        return self.settings.job_spread_host_fresh if fresh else self.settings.job_spread_host

    def mark_contention(self, result: EvalResult, during: cpu_load.LoadReading | None) -> None:
        cpu = dict(self.cpu)
        cpu["other_cores_during"] = during.other_cores if during else None
        result.details["cpu"] = cpu
        worst = max(cpu.get("other_cores_before") or 0.0, cpu["other_cores_during"] or 0.0)
        result.contended = worst >= self.settings.cpu_contention_cores

    def measure_energy(self, models: dict[str, Any], inputs: list[Any], result: EvalResult) -> None:
        """Paired NVML readings of both models (``harness.energy_repeats`` each, alternating), compared with
        their interval (``harness.energy_compare``); the card's state beside every reading."""
        self.enter("energy")
        index = self.device.index or 0
        if reason := energy.unavailable(index):
            self.findings.append(dyn.finding("energy", reason, severity="info"))
            return
        calls = {}
        for name, model in models.items():
            args = clone_inputs(inputs)
            calls[name] = no_grad(lambda model=model, args=args: model(*args))
        readings = self.guarded(lambda: energy.paired_readings(
            calls, _device_synchronize, index, self.settings.energy_seconds, self.settings.energy_repeats),
            "candidate")
        self.after_candidate_call()
        timings = {"reference": result.reference, "candidate": result.candidate}
        for name, timing in timings.items():
            timing.energy_j = statistics.median(r.joules_per_call for r in readings[name])
            timing.power_w = statistics.median(r.average_watts for r in readings[name])
        comparison = energy_compare.compare(readings, {n: t.median_ms for n, t in timings.items()},
                                            self.settings.min_effect)
        result.energy_ratio, result.energy_ci95 = comparison.energy.ratio, [comparison.energy.low,
                                                                            comparison.energy.high]
        result.energy_verdict = comparison.energy.verdict
        result.edp_ratio, result.edp_ci95 = comparison.edp.ratio, [comparison.edp.low, comparison.edp.high]
        result.edp_verdict = comparison.edp.verdict
        result.details["energy"] = {**comparison.as_dict(), "repeats": self.settings.energy_repeats,
                                    "min_seconds": self.settings.energy_seconds,
                                    "readings": {n: [r.as_dict() for r in rs] for n, rs in readings.items()}}
        if comparison.replayed:
            self.findings.append(dyn.finding(
                "energy_replay", "the candidate ran far faster on the energy readings' one input set than on "
                "fresh inputs while timed: its energy figures are not trusted", severity="warn"))
        if comparison.capped:
            self.findings.append(dyn.finding(
                "energy_capped", "the card was power- or thermally capped during an energy reading "
                "(details.energy.readings)", severity="info"))

    def set_cpu_threads(self) -> None:
        """Before any model is built (torch.compile fixes its thread count when it compiles): as many threads as
        there are cores other work leaves free, so no OpenMP barrier waits on a core another job holds."""
        before = cpu_load.sample_load()
        threads = cpu_load.choose_threads(self.settings.cpu_threads, before)
        torch.set_num_threads(threads)
        self.cpu = {"threads": threads, "usable_cores": cpu_load.usable_cores(),
                    "other_cores_before": before.other_cores if before else None}
