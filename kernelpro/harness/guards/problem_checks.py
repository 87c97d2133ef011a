"""Checks on the problem itself, run on the reference alone: is its output worth computing?

A reference whose output does not depend on its inputs (a max over a size-one dimension minus its mean is
always zero; the mean of a group norm's output is zero but for rounding) makes any candidate that returns a
constant correct, and a speedup on it means nothing. The reference's outputs on several input sets, each drawn
under its own seed (one of them scaled as in the correctness trials), are compared with its output on the first
under the candidate's tolerances, whose absolute part is at the output's own scale (``compare.atol_at_scale``):
a softmax over 393,216 columns, all of its outputs near 2.5e-6, depends on its inputs at that scale.

What rounding alone makes of the output is allowed for: the first set is also run nudged (its floating-point
inputs times ``1 +- NUDGE``, the random generators as for the first), and ``ROUNDING_FACTOR`` times the
largest change that makes widens the comparison. An output that depends on its inputs changes between unrelated
input sets thousands of times more than under a nudge; one that is rounding around a constant changes alike
under both. If a candidate returning the first output would pass on every set, the output is constant for the
judge's purposes (``constant_output``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness.guards import chunked
from kernelpro.harness.guards.compare import Agreement, compare_outputs, flatten
from kernelpro.harness.guards.output_checks import shared_storage
from kernelpro.harness.guards.precision import ROUNDING_FACTOR
from kernelpro.harness.result import ProblemFinding
from kernelpro.harness.worker.model_calls import all_finite

OutputsFor = Callable[[int, "float | None"], Any]

# 2**-16: some 500 units in the last place of a float32 input, so every one moves and the rounding of everything
# computed from it is drawn anew, yet a change of the outputs' values that small stays far below how they vary
# between input sets. (It moves no float16 or bfloat16 input: their rounding is not estimated.)
NUDGE = 2.0 ** -16


def check_reference(first: Any, outputs_for: OutputsFor, sets: list[tuple[int, float | None]],
                    settings: HarnessSettings, nudged: Callable[[float], Any] | None = None
                    ) -> tuple[list[ProblemFinding], bool]:
    """Problem findings, and whether the reference itself returns the same storage from two calls (then so may a
    candidate). ``first`` is the reference's output on the first input set, held alive by the caller;
    ``nudged(scale)`` its output on that set's inputs times ``scale``, its random draws those of ``first``."""
    compared = 0
    constant = _finite(first)
    rounding = rounding_noise(first, nudged) if constant and nudged is not None else {}
    reuses = False
    for seed, scale in sets:
        output = outputs_for(seed, scale)
        reuses = reuses or bool(shared_storage(first, output))
        if constant and _finite(output):
            compared += 1
            constant = isinstance(compare_outputs(first, output, settings.tolerances, rounding), Agreement)
        del output
    if not constant or compared == 0:
        return [], reuses
    return [ProblemFinding(reason="constant_output", message=(
        f"the reference returned the same output, within the tolerances, on {compared + 1} input sets drawn under "
        "different seeds: its output does not depend on its inputs, so a candidate returning a constant is "
        "correct and no speedup on this problem is an improvement"))], reuses


def rounding_noise(first: Any, nudged: Callable[[float], Any]) -> dict[str, float]:
    """Per floating-point leaf of ``first``: how far its nudged outputs move from it, as ``compare_outputs``'s noise
    (a fraction of the leaf's largest magnitude, of which it allows twice), times ``ROUNDING_FACTOR``."""
    moved: dict[str, float] = {}
    for scale in (1 + NUDGE, 1 - NUDGE):
        output = nudged(scale)
        pairs = zip(flatten(first), flatten(output), strict=False)
        for (path, leaf), (_, other) in pairs:
            if _comparable(leaf, other):
                moved[path] = max(moved.get(path, 0.0), chunked.abs_diff_max(leaf, other))
        del output
    noise = {}
    for path, leaf in flatten(first):
        if moved.get(path) and (largest := chunked.abs_max(leaf)) > 0:
            noise[path] = ROUNDING_FACTOR / 2 * moved[path] / largest
    return noise


def _comparable(leaf: Any, other: Any) -> bool:
    return (isinstance(leaf, torch.Tensor) and isinstance(other, torch.Tensor) and leaf.is_floating_point()
            and other.shape == leaf.shape and other.dtype == leaf.dtype and leaf.numel() > 0
            and chunked.all_finite(other))


def _finite(output: Any) -> bool:
    return any(isinstance(leaf, torch.Tensor) for _, leaf in flatten(output)) and all_finite(output)
