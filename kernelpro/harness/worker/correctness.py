"""The correctness trials of an ``Evaluation``: input sets drawn when each trial begins, both models on each, and
every set checked element-wise and against the reference's float64 oracle. A mixin of ``evaluate.Evaluation``,
whose state it reads.

The sets: ``correctness_trials`` as ``get_inputs()`` draws them, ``scaled_trials`` with floating-point inputs
multiplied by ``magnitude_scale``, and ``shifted_trials`` with ``magnitude_shift`` added to them (a softmax
without its max subtracted overflows there while the reference stays finite). A set on which the reference
itself is not finite is outside the problem's domain and skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from kernelpro.harness.guards.compare import Mismatch, compare_outputs, fingerprint
from kernelpro.harness.input_draws import fresh_seed
from kernelpro.harness.judge_values import FrozenMap, widest_noise
from kernelpro.harness.timing.rounds import clone_inputs, refill_inputs, shares_storage
from kernelpro.harness.worker.loader import verdict
from kernelpro.harness.worker.model_calls import all_finite, seed_call


@dataclass(frozen=True)
class InputSet:
    """How one correctness set is drawn: ``get_inputs()``, then floating-point inputs times ``scale`` and plus
    ``shift`` (None: left as drawn). Its seed is drawn when its trial begins."""

    scale: float | None = None
    shift: float | None = None

    def describe(self) -> str:
        return (f", inputs x{self.scale:g}" if self.scale else "") + (f", inputs +{self.shift:g}" if self.shift else "")


def input_sets(settings: Any) -> list[InputSet]:
    return ([InputSet()] * max(1, settings.correctness_trials)
            + [InputSet(scale=settings.magnitude_scale)] * settings.scaled_trials
            + [InputSet(shift=settings.magnitude_shift)] * settings.shifted_trials)


class CorrectnessSets:
    def check_correctness(self) -> tuple[float, float, int]:
        sets = input_sets(self.settings)
        max_abs = max_rel = 0.0
        checked = 0
        kept: list[Any] | None = None  # the candidate's arguments of the last set, still held
        plain_noises: list[FrozenMap] = []  # the sets drawn as timing draws them: their noise is what it allows
        for index, drawn in enumerate(sets):
            self.enter(f"correctness trial {index + 1}/{len(sets)}")
            seed = fresh_seed()  # now, from the OS: nothing the candidate saw so far tells what it is
            inputs = self.make_inputs(seed, drawn.scale, drawn.shift)  # the values every call must leave alone
            # Every second set comes in the tensors of the last call, so a cache keyed on pointers or ids hits
            # and replays a wrong output where the checks see it; the others in new tensors while the last are
            # still held, so a candidate pinned to its first input's address (a graph captured on it) computes
            # on stale values where the checks see it.
            cand_args = refill_inputs(kept, inputs) if index % 2 == 1 else clone_inputs(inputs)
            refilled = kept is not None and any(
                a is b for a, b in zip(cand_args, kept, strict=False) if isinstance(a, torch.Tensor))
            where = (", in the tensors of the previous call" if refilled
                     else ", at addresses no earlier call saw" if index else "")
            seed_call(seed)  # each call starts from the same random state (see model_calls.seed_call)
            cand_out = self.candidate_outputs(cand_args)
            ref_args = clone_inputs(inputs)
            seed_call(seed)
            ref_out = self.reference_outputs(ref_args)
            if not all_finite(ref_out):
                continue  # this input set is outside the reference's domain (e.g. scaled past overflow)
            self.check_inputs(cand_args, inputs, ref_args, ref_out, cand_out)
            seed_call(seed)  # the float64 oracle draws as the reference did
            oracle_out, noise = self.measure_reference_noise(inputs, ref_out)  # on every set: none is spared
            if drawn == InputSet():
                plain_noises.append(noise)
            self.judge_turn()
            outcome = compare_outputs(ref_out, cand_out, self.limits.tolerances.verified(), noise.verified())
            if isinstance(outcome, Mismatch):
                self.fail(outcome, cand_out, ref_out, prefix=f"input set {index + 1} (seed {seed}"
                                                    f"{drawn.describe()}{where}): ",
                          note=self.random_draws_note(inputs, seed))
            if oracle_out is not None:
                self.check_precision(cand_out, ref_out, oracle_out,
                                     prefix=f"input set {index + 1} (seed {seed}{drawn.describe()}): ")
            self.fingerprints.append((fingerprint(cand_out), fingerprint(ref_out)))
            max_abs, max_rel = max(max_abs, outcome.max_abs_error), max(max_rel, outcome.max_rel_error)
            checked += 1
            kept = None if shares_storage(cand_out, cand_args) else cand_args
            del inputs, cand_args, cand_out, ref_args, ref_out, oracle_out
        if checked == 0:
            raise verdict("runtime_error", "reference_failed",
                          "the reference returned NaN or Inf on every input set: nothing to compare against")
        self.noise = widest_noise(plain_noises)
        return max_abs, max_rel, checked
