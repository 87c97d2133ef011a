"""The guards an ``Evaluation`` runs around the candidate's calls: inputs, precision, streams, integrity, and
the mismatch that ends a run. A mixin of ``evaluate.Evaluation``, whose state it reads."""

from __future__ import annotations

from typing import Any

import torch

from kernelpro.harness.guards import dynamic as dyn
from kernelpro.harness.guards import integrity, precision
from kernelpro.harness.guards.call_trace import trace_call
from kernelpro.harness.guards.compare import Agreement, Mismatch, compare_outputs, fingerprint, flatten
from kernelpro.harness.input_draws import fresh_seed
from kernelpro.harness.isolation import tripwires
from kernelpro.harness.judge_values import FrozenMap, frozen_noise
from kernelpro.harness.result import GuardFinding, rejected
from kernelpro.harness.timing.rounds import clone_inputs
from kernelpro.harness.worker.loader import Verdict, verdict
from kernelpro.harness.worker.model_calls import no_grad, seed_call


class Guards:
    def check_inputs(self, cand_args: list[Any], inputs: list[Any], ref_args: list[Any], ref_out: Any,
                     cand_out: Any) -> None:
        """``cand_args`` and ``ref_args`` are copies of ``inputs`` that each model was called on."""
        mutated = dyn.mutated_inputs(inputs, cand_args)
        if mutated and not dyn.mutated_inputs(inputs, ref_args):
            self.reject(dyn.finding("input_mutation", f"input(s) {mutated} changed during the call"))
        aliased = dyn.aliased_outputs(cand_args, cand_out)
        if aliased and not dyn.aliased_outputs(ref_args, ref_out):
            self.reject(dyn.finding("output_aliases_input", f"{', '.join(aliased)} share storage with an input"))

    def measure_reference_noise(self, inputs: list[Any], ref_out: Any) -> tuple[Any, FrozenMap]:
        """The float64 oracle's output for these inputs (None where there is none), and from it the noise: how far
        the reference's own rounding takes it on these inputs, which their element-wise comparison allows for."""
        none = frozen_noise({})
        if self.limits.profile == "kernelbench":  # KernelBench's check: allclose alone, nothing widened
            return None, none
        if not any(precision.checks_precision(leaf) for _, leaf in flatten(ref_out)):
            return None, none
        need, free = precision.oracle_bytes(self.reference, inputs, ref_out), precision.free_device_bytes(self.device)
        if free is not None and need > free:
            self.note_once(dyn.finding(
                "precision_downgrade", f"float64 oracle skipped: it would take about {need / 2**30:.1f} GiB of GPU "
                f"memory, {free / 2**30:.1f} GiB are free; precision not checked", severity="info"))
            return None, none
        self.judge_turn()
        try:
            oracle_out = precision.oracle_outputs(self.reference, inputs)
        except Exception as exc:  # noqa: BLE001 - some ops have no float64 kernel; the checks are then skipped
            if self.device.type == "cuda":
                torch.cuda.empty_cache()  # what a failed oracle left cached belongs to the judgment's other steps
            self.note_once(dyn.finding("precision_downgrade", f"float64 oracle unavailable ({exc}); "
                                       "precision not checked", severity="info"))
            return None, none
        return oracle_out, frozen_noise(precision.reference_noise(ref_out, oracle_out))

    def note_once(self, found: GuardFinding) -> None:
        if not any(f.reason == found.reason and f.message == found.message for f in self.findings):
            self.findings.append(found)

    def check_precision(self, cand_out: Any, ref_out: Any, oracle_out: Any, prefix: str = "") -> None:
        """Compare both models with a float64 oracle: catches lost precision that hides inside atol."""
        self.limits.tolerances.verified()
        judged = precision.judge_precision(cand_out, ref_out, oracle_out, self.limits)
        if judged is None:
            return
        status, message = judged
        if status == "incorrect":
            raise verdict("incorrect", "relative_error", prefix + message, guards=self.findings)
        self.reject(dyn.finding("precision_downgrade", prefix + message))

    def check_streams(self) -> None:
        """Side streams are fine when the caller's stream waits for them; work it does not wait for is not."""
        self.enter("stream check")
        args = clone_inputs(self.make_inputs(fresh_seed()))
        trace = self.guarded(lambda: no_grad(trace_call)(self.candidate, args), "candidate")
        self.after_candidate_call()
        self.checks.trace = trace
        if trace.unjoined():
            self.reject(dyn.finding("extra_stream", trace.describe_unjoined()))

    def after_candidate_call(self) -> None:
        found = self.unseen_state_changes() + self.activity.leftovers() + tripwires.tripped()
        found += self.checks.after_call(self.findings)
        if self.device.type == "cuda":
            l2 = dyn.l2_persistence_raised(self.l2_baseline)
            found += [l2] if l2 else []
        if found:
            self.reject(*found)

    def shared_state_changes(self) -> list[GuardFinding]:
        """What differs from the process state recorded before the candidate loaded: a replaced function of the
        judge's or of torch's namespaces, a torch flag, a global hook, a pushed mode (``guards.torch_state``). Each is
        put back as it was, and each is a rejection: the reference and the comparison share that state."""
        found = [dyn.finding(reason, f"{what} was replaced") for reason, what in integrity.verify(self.snapshot)]
        return found + [dyn.finding("judge_patch", f"{what} was changed, which the reference and the judge share")
                        for what in self.torch_state.changes(self.expected_state)]

    def unseen_state_changes(self) -> list[GuardFinding]:
        """``shared_state_changes`` if the candidate's code may have run since the judge last looked (its call, or
        a finalizer of its objects when an input set was let go: ``state_seen`` is cleared then), else none."""
        if self.state_seen or self.snapshot is None:
            return []
        self.state_seen = True
        return self.shared_state_changes()

    def judge_turn(self) -> None:
        """Before the judge's own work (the reference's code, its oracle, a comparison): whatever the candidate
        changed in the shared state since the last look is rejected before it can act there."""
        if found := self.unseen_state_changes():
            self.reject(*found)

    def fail(self, mismatch: Mismatch, cand_out: Any, ref_out: Any, prefix: str, note: str = "") -> None:
        """End with the mismatch, naming replay when the wrong output is one given for earlier inputs; ``note``
        follows the mismatch's message (``random_draws_note``)."""
        printed, expected = fingerprint(cand_out), fingerprint(ref_out)
        if any(printed == old_cand and expected != old_ref for old_cand, old_ref in self.fingerprints):
            self.reject(dyn.finding("cached_output", prefix + "the output is the one returned for an earlier, "
                                    "different input set"))
        if mismatch.status == "rejected":
            self.reject(dyn.finding(mismatch.reason, prefix + mismatch.message))
        raise verdict("incorrect", mismatch.reason, prefix + mismatch.message + note, guards=self.findings,
                      max_abs_error=mismatch.max_abs_error, max_rel_error=mismatch.max_rel_error)

    def random_draws_note(self, inputs: list[Any], seed: int) -> str:
        """After a mismatch: why, when the reference's own output on ``inputs`` changes with the random
        generators' state (two calls under different call seeds disagree); nothing otherwise."""
        try:
            first, second = self._seeded_reference(inputs, seed), self._seeded_reference(inputs, seed + 1)
        except Verdict:  # two more outputs did not fit, say: the mismatch stands without the note
            return ""
        if isinstance(compare_outputs(first, second, self.limits.tolerances.verified()), Agreement):
            return ""
        return ("; the reference draws random numbers (its output on these inputs changed with the generators' "
                "state: dropout in training mode, say). Both models are seeded alike before every call, so a "
                "correct candidate draws the same numbers in the same order as the reference; torch.compile, "
                "CUDA graphs and custom kernels usually draw their own")

    def _seeded_reference(self, inputs: list[Any], seed: int) -> Any:
        seed_call(seed)
        return self.reference_outputs(clone_inputs(inputs))

    def reject(self, *found: GuardFinding) -> None:
        self.findings.extend(found)
        raise Verdict(rejected(self.findings))

