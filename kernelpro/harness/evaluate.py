"""One candidate's evaluation, inside the worker: load, check on fresh inputs, time, re-check, guard.

Order matters. The candidate always runs before the reference on a given input set, on memory the judge
has just poisoned, so no output of the reference can be lying in a freed block for it to hand back.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness import (
    cpu_load,
    cuda_driver,
    energy,
    energy_compare,
    integrity,
    precision,
    stats,
    tripwires,
    walls,
)
from kernelpro.harness import dynamic_guards as dyn
from kernelpro.harness.call_trace import trace_call
from kernelpro.harness.compare import (
    POISON_BYTE,
    Mismatch,
    compare_outputs,
    fingerprint,
    flatten,
)
from kernelpro.harness.integrity import real_manual_seed
from kernelpro.harness.loader import (
    Verdict,
    build,
    check_signature,
    load_candidate,
    load_reference,
    short_traceback,
    verdict,
)
from kernelpro.harness.result import EvalResult, GuardFinding, rejected
from kernelpro.harness.run_checks import RunChecks
from kernelpro.harness.timed_checks import TimedCallChecks
from kernelpro.harness.timing import _device_synchronize, clone_inputs, make_clock, run_timing

Emit = Callable[[dict[str, Any]], None]


class Evaluation:
    """Runs the checks for one job (see ``sandbox.make_job``) and returns an ``EvalResult``."""

    def __init__(self, job: dict[str, Any], workdir: Path, emit: Emit) -> None:
        self.job = job
        self.workdir = workdir
        self.emit = emit
        self.settings = HarnessSettings.model_validate(job["harness"])
        self.device = torch.device(job["device"])
        self.findings: list[GuardFinding] = []
        self.output_sizes: list[int] = []
        self.fingerprints: list[tuple[tuple, tuple]] = []  # (candidate output, reference output) per input set
        self.phase = "start"
        self.draw_on_device = True
        self.noise: dict[str, float] = {}  # per output leaf, see precision.reference_noise
        self.phase_started = time.perf_counter()
        self.phase_s: dict[str, float] = {}
        self.cpu: dict[str, Any] = {}
        self.checks = RunChecks(job, self.settings, self.device)

    # -- phases -----------------------------------------------------------------------------------
    def run(self) -> EvalResult:
        """The verdict, with what the judge found about the problem itself, whatever the verdict."""
        try:
            return self.checks.attach(self.judge())
        except Verdict as failure:
            self.checks.attach(failure.result)
            raise

    def judge(self) -> EvalResult:
        if self.device.type == "cpu":
            self.set_cpu_threads()
        self.enter("load_reference")
        ref_module = load_reference(self.job["reference_source"], self.workdir)
        self.ref_module = ref_module
        init_inputs = self.reference_call(lambda: list(ref_module.get_init_inputs()), "get_init_inputs()")
        seed = self.job["seeds"]["init"]
        self.reference = build(ref_module.Model, init_inputs, seed, self.device, self.workdir / "reference.py",
                               failure_reason="reference_failed")
        warm_inputs = self.make_inputs(self.job["seeds"]["correctness"][0])
        called = time.perf_counter()
        warm = self.reference_outputs(warm_inputs)
        self.emit({"reference_call_s": time.perf_counter() - called})  # the judge fits its time limit to it
        del warm_inputs
        self.output_sizes = [leaf.untyped_storage().nbytes() for _, leaf in flatten(warm)
                             if isinstance(leaf, torch.Tensor)]
        del warm

        if self.device.type == "cuda":
            # Devices start with a non-zero persisting-L2 limit; zero it so any rise is the candidate's doing.
            cuda_driver.reset_persisting_l2()
            self.l2_baseline = cuda_driver.persisting_l2_limit() or 0
        self.snapshot = integrity.take_snapshot({"reference": ref_module, "reference.Model": ref_module.Model})
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
                            device=str(self.device), details={"reference_noise": self.noise} if self.noise else {})
        if self.job.get("timing", True):
            self.time_and_check(result)
            self.checks.memory_floor(result)
        return result

    def check_correctness(self) -> tuple[float, float, int]:
        seeds = self.job["seeds"]
        trials = [(s, None) for s in seeds["correctness"]] + [(s, self.settings.magnitude_scale)
                                                              for s in seeds["scaled"]]
        max_abs = max_rel = 0.0
        checked = 0
        for index, (seed, scale) in enumerate(trials):
            self.enter(f"correctness trial {index + 1}/{len(trials)}")
            inputs = self.make_inputs(seed, scale)
            cand_args = clone_inputs(inputs)
            untouched = dyn.snapshot_inputs(cand_args)
            cand_out = self.candidate_outputs(cand_args)
            ref_args = clone_inputs(inputs)
            ref_out = self.reference_outputs(ref_args)
            if not _all_finite(ref_out):
                continue  # this input set is outside the reference's domain (e.g. scaled past overflow)
            self.check_inputs(untouched, cand_args, inputs, ref_args, ref_out, cand_out)
            oracle_out = self.measure_reference_noise(inputs, ref_out) if checked == 0 else None
            outcome = compare_outputs(ref_out, cand_out, self.settings.tolerances, self.noise)
            if isinstance(outcome, Mismatch):
                self.fail(outcome, cand_out, ref_out, prefix=f"input set {index + 1} (seed {seed}"
                                                    f"{f', inputs x{scale:g}' if scale else ''}): ")
            if oracle_out is not None:
                self.check_precision(cand_out, ref_out, oracle_out)
            self.fingerprints.append((fingerprint(cand_out), fingerprint(ref_out)))
            max_abs, max_rel = max(max_abs, outcome.max_abs_error), max(max_rel, outcome.max_rel_error)
            checked += 1
            # Free this set before drawing the next, so its tensors land at the same addresses: a cache
            # keyed on pointers then hits, and replays a wrong output where the checks can see it.
            del inputs, cand_args, untouched, cand_out, ref_args, ref_out, oracle_out
        if checked == 0:
            raise verdict("runtime_error", "reference_failed",
                          "the reference returned NaN or Inf on every input set: nothing to compare against")
        return max_abs, max_rel, checked

    def time_and_check(self, result: EvalResult) -> None:
        self.enter("timing")
        base = self.job["seeds"]["timing"]
        clock = make_clock(self.device, self.settings)
        models = {"reference": self.reference, "candidate": self.candidate}

        def replayed(index: int, other: int) -> None:
            self.reject(dyn.finding("cached_output", f"a timed call on fresh inputs (round {index + 1}) returned "
                                    f"the output for the inputs of round {other + 1}"))

        def mismatch(outcome: Mismatch, out: Any, expected: Any, index: int) -> None:
            self.fail(outcome, out, expected, prefix=f"in a timed call, on the fresh inputs of round {index + 1}: ")

        checks = TimedCallChecks(self.settings.tolerances, self.noise, self.after_candidate_call, replayed,
                                 mismatch, _all_finite)
        # Every round draws its own inputs (outside the timed region), so no timed call sees values another
        # call saw: a memo keyed on contents, pointers or ids either misses or returns a wrong output.
        load = cpu_load.LoadMeter() if self.device.type == "cpu" else None
        run = self.guarded(lambda: _no_grad(run_timing)(models, lambda i: self.make_inputs((base + i) % (1 << 62)),
                                                        clock, self.settings, checks), "candidate")
        timings = run.timings
        result.reference, result.candidate = timings["reference"], timings["candidate"]
        estimate = stats.estimate_speedup(run.costs["reference"], run.costs["candidate"], self.settings.min_effect,
                                          seed=base)
        result.speedup, result.speed_verdict = estimate.speedup, estimate.verdict
        result.speedup_ci95 = [round(estimate.low, 6), round(estimate.high, 6)]
        result.host_bound = timings["reference"].host_bound if self.device.type == "cuda" else None
        result.details["timing"] = {"rounds": run.rounds, "stopped_by": run.stopped_by,
                                    "host_checked": run.host_checked, "wall_s": round(run.wall_s, 3),
                                    "ci_relative_width": round(estimate.relative_width, 5),
                                    "outputs_checked": checks.checked}
        if load is not None:
            self.mark_contention(result, load.read())
        if self.settings.energy and self.device.type == "cuda":
            self.measure_energy(models, self.make_inputs(base), result)
        result.message = (f"correct on {result.trials_checked} input sets and every timed call; "
                          f"{stats.speedup_text(estimate.speedup, [estimate.low, estimate.high])} {estimate.verdict} "
                          f"({timings['candidate'].median_ms:.4g} ms vs {timings['reference'].median_ms:.4g} ms, "
                          f"{run.rounds} rounds, stopped by {run.stopped_by.replace('_', ' ')})")
        if result.host_bound:
            result.message += "; the reference is host-bound (its launches cost more than its GPU time)"
        if result.contended:
            result.message += (f"; timed while other work kept {result.details['cpu']['other_cores_during']:.1f} "
                               "cores busy: not a speedup to act on")

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
            calls[name] = _no_grad(lambda model=model, args=args: model(*args))
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

    # -- guards -----------------------------------------------------------------------------------
    def check_inputs(self, untouched: list[Any], cand_args: list[Any], inputs: list[Any], ref_args: list[Any],
                     ref_out: Any, cand_out: Any) -> None:
        mutated = dyn.mutated_inputs(untouched, cand_args)
        if mutated and not dyn.mutated_inputs(inputs, ref_args):
            self.reject(dyn.finding("input_mutation", f"input(s) {mutated} changed during the call"))
        aliased = dyn.aliased_outputs(cand_args, cand_out)
        if aliased and not dyn.aliased_outputs(ref_args, ref_out):
            self.reject(dyn.finding("output_aliases_input", f"{', '.join(aliased)} share storage with an input"))

    def measure_reference_noise(self, inputs: list[Any], ref_out: Any) -> Any:
        """The float64 oracle's output for these inputs (None where there is none), and from it ``self.noise``:
        how far the reference's own rounding takes it, which the element-wise comparison allows for."""
        if not any(precision.checks_precision(leaf) for _, leaf in flatten(ref_out)):
            return None
        try:
            oracle_out = precision.oracle_outputs(self.reference, clone_inputs(inputs))
        except Exception as exc:  # noqa: BLE001 - some ops have no float64 kernel; the checks are then skipped
            self.findings.append(dyn.finding("precision_downgrade", f"float64 oracle unavailable ({exc}); "
                                             "precision not checked", severity="info"))
            return None
        self.noise = precision.reference_noise(ref_out, oracle_out)
        return oracle_out

    def check_precision(self, cand_out: Any, ref_out: Any, oracle_out: Any) -> None:
        """Compare both models with a float64 oracle: catches lost precision that hides inside atol."""
        judged = precision.judge_precision(cand_out, ref_out, oracle_out, self.settings)
        if judged is None:
            return
        status, message = judged
        if status == "incorrect":
            raise verdict("incorrect", "relative_error", message, guards=self.findings)
        self.reject(dyn.finding("precision_downgrade", message))

    def check_streams(self) -> None:
        """Side streams are fine when the caller's stream waits for them; work it does not wait for is not."""
        self.enter("stream check")
        args = clone_inputs(self.make_inputs(self.job["seeds"]["correctness"][0]))
        trace = self.guarded(lambda: _no_grad(trace_call)(self.candidate, args), "candidate")
        self.after_candidate_call()
        self.checks.trace = trace
        if trace.unjoined():
            self.reject(dyn.finding("extra_stream", trace.describe_unjoined()))

    def after_candidate_call(self) -> None:
        found = [dyn.finding(reason, f"{what} was replaced") for reason, what in integrity.verify(self.snapshot)]
        found += self.activity.leftovers() + tripwires.tripped()
        found += self.checks.after_call(self.findings)
        if self.device.type == "cuda":
            l2 = dyn.l2_persistence_raised(self.l2_baseline)
            found += [l2] if l2 else []
        if found:
            self.reject(*found)

    def fail(self, mismatch: Mismatch, cand_out: Any, ref_out: Any, prefix: str) -> None:
        """End with the mismatch, naming replay when the wrong output is one given for earlier inputs."""
        printed, expected = fingerprint(cand_out), fingerprint(ref_out)
        if any(printed == old_cand and expected != old_ref for old_cand, old_ref in self.fingerprints):
            self.reject(dyn.finding("cached_output", prefix + "the output is the one returned for an earlier, "
                                    "different input set"))
        if mismatch.status == "rejected":
            self.reject(dyn.finding(mismatch.reason, prefix + mismatch.message))
        raise verdict("incorrect", mismatch.reason, prefix + mismatch.message, guards=self.findings,
                      max_abs_error=mismatch.max_abs_error, max_rel_error=mismatch.max_rel_error)

    def reject(self, *found: GuardFinding) -> None:
        self.findings.extend(found)
        raise Verdict(rejected(self.findings))

    # -- running the models -----------------------------------------------------------------------
    def enter(self, phase: str) -> None:
        self.close_phases()
        self.phase = phase
        self.emit({"phase": phase})

    def make_inputs(self, seed: int, scale: float | None = None) -> list[Any]:
        """``get_inputs()`` under ``seed``, on the device; ``scale`` multiplies floating-point tensors."""
        inputs = self.reference_call(lambda: self.draw_inputs(seed), "get_inputs()")
        moved = [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in inputs]
        if scale:
            moved = [x * scale if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in moved]
        return moved

    def close_phases(self) -> dict[str, float]:
        """Add the current phase's wall time to ``phase_s`` (correctness trials count as one phase), so a slow
        judge shows where its seconds go."""
        now = time.perf_counter()
        key = self.phase.split(" trial ")[0]
        self.phase_s[key] = round(self.phase_s.get(key, 0.0) + now - self.phase_started, 4)
        self.phase_started = now
        return self.phase_s

    def draw_inputs(self, seed: int) -> list[Any]:
        """Run ``get_inputs()`` seeded; on CUDA its factory calls draw on the GPU, where a large ``randn`` takes
        microseconds instead of the CPU's tenths of a second per input set. A ``get_inputs`` that cannot run
        that way (numpy interop, say) draws on the CPU from then on."""
        if self.device.type == "cuda" and self.draw_on_device:
            real_manual_seed(seed)
            random.seed(seed)
            try:
                with torch.device(self.device):
                    return list(self.ref_module.get_inputs())
            except Exception:  # noqa: BLE001 - any failure here only means "draw on the CPU"
                self.draw_on_device = False
        real_manual_seed(seed)
        random.seed(seed)
        return list(self.ref_module.get_inputs())

    def poison_free_memory(self) -> None:
        """Fill blocks the size of the reference's outputs, then free them, so stale data reads as poison."""
        blocks = [torch.empty(n, dtype=torch.uint8, device=self.device).fill_(POISON_BYTE)
                  for n in self.output_sizes for _ in range(2)]
        del blocks

    def candidate_outputs(self, args: list[Any]) -> Any:
        self.poison_free_memory()
        out = self.guarded(lambda: _no_grad(self.candidate)(*args), "candidate")
        self.after_candidate_call()
        self.checks.output(out)
        return out

    def reference_outputs(self, args: list[Any]) -> Any:
        return self.reference_call(lambda: _no_grad(self.reference)(*args), "Model.forward")

    def reference_call(self, fn: Callable[[], Any], what: str) -> Any:
        try:
            return self.guarded(fn, "reference")
        except Verdict as failure:
            failure.result.message = f"the reference's {what} failed: {failure.result.message}"
            raise

    def guarded(self, fn: Callable[[], Any], who: str) -> Any:
        """Run ``fn`` and wait for the GPU; classify whatever it raises."""
        try:
            out = fn()
            if self.device.type == "cuda":
                _device_synchronize()
            return out
        except Verdict:
            raise
        except SystemExit as exc:
            raise self._failure(who, "exit_called", f"called exit({exc.code!r})") from None
        except MemoryError:
            raise self._failure(who, "memory_limit", "ran out of host memory") from None
        except torch.OutOfMemoryError as exc:
            raise self._failure(who, "gpu_out_of_memory", str(exc).split("\n")[0]) from None
        except BaseException as exc:  # noqa: BLE001
            if who == "candidate" and (hit := walls.findings_for(exc)):
                self.reject(*hit)
            text = short_traceback(exc, str(self.workdir / f"{who}.py"))
            reason = "cuda_error" if "CUDA error" in text or type(exc).__name__ == "AcceleratorError" else "exception"
            raise self._failure(who, reason, text) from None

    def _failure(self, who: str, reason: str, message: str) -> Verdict:
        if who == "reference":
            return verdict("runtime_error", "reference_failed", message)
        return verdict("runtime_error", reason, f"{self.phase}: {message}", guards=self.findings)


def _no_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        with torch.no_grad():
            return fn(*args)
    return call


def _all_finite(output: Any) -> bool:
    return all(bool(torch.isfinite(leaf).all()) for _, leaf in flatten(output)
               if isinstance(leaf, torch.Tensor) and (leaf.is_floating_point() or leaf.is_complex()))
