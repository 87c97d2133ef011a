"""One candidate's evaluation, inside the worker: load, check on fresh inputs, time, re-check, guard.

Order matters. The candidate always runs before the reference on a given input set, on memory the judge
has just poisoned, so no output of the reference can be lying in a freed block for it to hand back.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness import cuda_driver, energy, integrity, precision, tripwires, walls
from kernelpro.harness import dynamic_guards as dyn
from kernelpro.harness.compare import (
    POISON_BYTE,
    Agreement,
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
from kernelpro.harness.timing import _device_synchronize, clone_inputs, make_clock, time_models

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

    # -- phases -----------------------------------------------------------------------------------
    def run(self) -> EvalResult:
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
        model_new = load_candidate(self.job["candidate_source"], self.workdir)
        if any(cls is ref_module.Model or cls.__name__ == "Model" for cls in model_new.__mro__):
            self.reject(dyn.finding("reference_reuse", "ModelNew inherits from the reference Model"))
        check_signature(model_new, init_inputs, ref_module.Model)
        self.enter("init_candidate")
        self.candidate = build(model_new, init_inputs, seed, self.device, self.workdir / "candidate.py")
        self.after_candidate_call()
        if any(type(m) is ref_module.Model or type(m).__name__ == "Model" for m in self.candidate.modules()):
            self.reject(dyn.finding("reference_reuse", "ModelNew holds an instance of the reference Model"))

        max_abs, max_rel, checked = self.check_correctness()
        if self.device.type == "cuda":
            self.check_streams()
        result = EvalResult(status="ok", correct=True, message="correct", trials_checked=checked,
                            max_abs_error=max_abs, max_rel_error=max_rel, guards=self.findings,
                            device=str(self.device), details={"reference_noise": self.noise} if self.noise else {})
        if self.job.get("timing", True):
            self.time_and_check(result)
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
        pool = [self.make_inputs(s) for s in self.job["seeds"]["timing"]]
        # Expected outputs, computed before timing and held alive (so no candidate can be handed their memory).
        expected = [self.reference_outputs(clone_inputs(inputs)) for inputs in pool]
        clock = make_clock(self.device, self.settings)
        models = {"reference": self.reference, "candidate": self.candidate}

        def check_call(name: str, pool_index: int, out: Any) -> None:
            if name != "candidate":
                return
            self.after_candidate_call()
            outcome = compare_outputs(expected[pool_index], out, self.settings.tolerances, self.noise)
            if isinstance(outcome, Mismatch) and _all_finite(expected[pool_index]):
                replayed = [j + 1 for j, other in enumerate(expected) if j != pool_index and isinstance(
                    compare_outputs(other, out, self.settings.tolerances, self.noise), Agreement)]
                if replayed:
                    self.reject(dyn.finding("cached_output", f"a timed call on input set {pool_index + 1} returned "
                                            f"the output for input set {replayed[0]}"))
                self.fail(outcome, out, expected[pool_index], prefix="in a timed call, on a fresh copy of "
                                                                      f"input set {pool_index + 1} of the pool: ")

        timings = self.guarded(lambda: _no_grad(time_models)(models, pool, clock, self.settings, check_call),
                               "candidate")
        if self.settings.energy and self.device.type == "cuda":
            self.measure_energy(models, pool[0], timings)
        result.reference, result.candidate = timings["reference"], timings["candidate"]
        result.speedup = timings["reference"].median_ms / max(timings["candidate"].median_ms, 1e-9)
        result.message = (f"correct on {result.trials_checked} input sets and every timed call; "
                          f"{result.speedup:.2f}x ({timings['candidate'].median_ms:.4g} ms vs "
                          f"{timings['reference'].median_ms:.4g} ms)")

    def measure_energy(self, models: dict[str, Any], inputs: list[Any], timings: dict[str, Any]) -> None:
        self.enter("energy")
        index = self.device.index or 0
        if reason := energy.unavailable(index):
            self.findings.append(dyn.finding("energy", reason, severity="info"))
            return
        for name, model in models.items():
            args = clone_inputs(inputs)
            repeat = _no_grad(lambda model=model, args=args: model(*args))
            reading = self.guarded(lambda repeat=repeat: energy.measure_energy(
                repeat, _device_synchronize, index, self.settings.energy_seconds), name)
            timings[name].energy_j, timings[name].power_w = reading.joules_per_call, reading.average_watts
            if name == "candidate":
                self.after_candidate_call()

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
        self.enter("stream check")
        args = clone_inputs(self.make_inputs(self.job["seeds"]["correctness"][0]))
        current, used = self.guarded(lambda: _no_grad(dyn.streams_used)(self.candidate, args), "candidate")
        self.after_candidate_call()
        others = sorted(s for s in used if s != current)
        if others:
            self.reject(dyn.finding("extra_stream", f"GPU work ran on stream(s) {others}, not only on the current "
                                    f"stream ({current})"))

    def after_candidate_call(self) -> None:
        found = [dyn.finding(reason, f"{what} was replaced") for reason, what in integrity.verify(self.snapshot)]
        found += self.activity.leftovers() + tripwires.tripped()
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
