"""Running the two models inside an ``Evaluation``: phases, seeded inputs, seeded calls, poisoned memory, and every
failure classified. A mixin of ``evaluate.Evaluation``, whose state it reads."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import torch

from kernelpro.harness.footprint import PROBLEM_TOO_BIG, reference_out_of_memory
from kernelpro.harness.guards import chunked
from kernelpro.harness.guards.compare import POISON_BYTE, flatten
from kernelpro.harness.guards.integrity import real_manual_seed
from kernelpro.harness.input_draws import placed, reseed_from_os
from kernelpro.harness.isolation import findings as walls
from kernelpro.harness.timing.clocks import _device_synchronize
from kernelpro.harness.worker.loader import Verdict, short_traceback, verdict

# What torch's CPU allocator raises (a RuntimeError) when the address-space limit refuses it memory.
HOST_ALLOCATION_FAILED = "DefaultCPUAllocator: can't allocate memory"
# Mixed into a call's seed so its random draws do not repeat the ones that made its inputs.
CALL_SEED_SALT = 0x2545F4914F6CDD1D


def seed_call(seed: int) -> None:
    """Put the random generators in the state that belongs to ``seed`` before a model's call. Both models get
    the same state for the same inputs, so a reference that draws random numbers (dropout in training mode)
    is matched by a candidate that draws them alike, as a copy of the reference does."""
    real_manual_seed((seed ^ CALL_SEED_SALT) % (1 << 62))
    random.seed(seed ^ CALL_SEED_SALT)


class ModelCalls:
    def enter(self, phase: str) -> None:
        self.close_phases()
        self.phase = phase
        self.emit({"phase": phase})

    def make_inputs(self, seed: int, scale: float | None = None, shift: float | None = None) -> list[Any]:
        """``get_inputs()`` under ``seed``, on the device; ``scale`` multiplies floating-point tensors, ``shift``
        is added to them. The generators are reseeded from the OS after: their state tells nothing of ``seed``."""
        self.state_seen = False  # the last set's objects were let go, and with them any finalizer of the candidate's
        try:
            inputs = self.reference_call(lambda: self.draw_inputs(seed), "get_inputs()")
        finally:
            reseed_from_os()
        return placed(inputs, self.device, scale, shift)

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
        out = self.guarded(lambda: no_grad(self.candidate)(*args), "candidate")
        self.after_candidate_call()
        self.checks.output(out)
        return out

    def reference_outputs(self, args: list[Any]) -> Any:
        return self.reference_call(lambda: no_grad(self.reference)(*args), "Model.forward")

    def reference_call(self, fn: Callable[[], Any], what: str) -> Any:
        """``fn`` (the reference's code: its ``get_inputs``, its forward) once the judge's state is shown to be
        as it was before the candidate loaded (``judge_turn``)."""
        self.judge_turn()
        try:
            return self.guarded(fn, "reference")
        except Verdict as failure:
            failure.result.message = (
                reference_out_of_memory(f"in {what}" + (" (its first call)" if self.phase == "load_reference"
                                                        else f" (during {self.phase})"),
                                        self.input_bytes, self.settings.memory_limit_mb)
                if failure.result.reason == PROBLEM_TOO_BIG else
                f"the reference's {what} failed: {failure.result.message}")
            raise

    def guarded(self, fn: Callable[[], Any], who: str) -> Any:
        """Run ``fn`` and wait for the GPU; classify whatever it raises."""
        if who == "candidate":
            self.state_seen = False
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
        except RuntimeError as exc:
            if HOST_ALLOCATION_FAILED not in str(exc):
                raise self._classified(exc, who) from None
            raise self._failure(who, "memory_limit", "ran out of host memory (torch could not allocate)") from None
        except BaseException as exc:  # noqa: BLE001
            raise self._classified(exc, who) from None

    def _classified(self, exc: BaseException, who: str) -> Verdict:
        if who == "candidate" and (hit := walls.findings_for(exc)):
            self.reject(*hit)
        text = short_traceback(exc, str(self.workdir / f"{who}.py"))
        reason = "cuda_error" if "CUDA error" in text or type(exc).__name__ == "AcceleratorError" else "exception"
        return self._failure(who, reason, text)

    def too_big(self, message: str) -> Verdict:
        """The problem cannot be judged within this worker's memory (``footprint``): no candidate's failure."""
        return verdict("runtime_error", PROBLEM_TOO_BIG, message)

    def _failure(self, who: str, reason: str, message: str) -> Verdict:
        if who == "reference" and reason == "memory_limit":  # reference_call says where, with the numbers
            return self.too_big(message)
        if who == "reference":
            return verdict("runtime_error", "reference_failed", message)
        return verdict("runtime_error", reason, f"{self.phase}: {message}", guards=self.findings)


def no_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        with torch.no_grad():
            return fn(*args)
    return call


def all_finite(output: Any) -> bool:
    return all(chunked.all_finite(leaf) for _, leaf in flatten(output)
               if isinstance(leaf, torch.Tensor) and (leaf.is_floating_point() or leaf.is_complex()))
