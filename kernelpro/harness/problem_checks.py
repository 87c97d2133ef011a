"""Checks on the problem itself, run on the reference alone: is its output worth computing?

A reference whose output does not depend on its inputs (a max over a size-one dimension minus its mean is
always zero) makes any candidate that returns a constant correct, and a speedup on it means nothing. The
reference's outputs on several input sets, each drawn under its own seed (one of them scaled as in the
correctness trials), are compared with its output on the first under the candidate's tolerances: if a
candidate returning that first output would pass on all of them, the output is constant for the judge's
purposes (``constant_output``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness.compare import Agreement, compare_outputs, flatten
from kernelpro.harness.model_calls import all_finite
from kernelpro.harness.output_checks import shared_storage
from kernelpro.harness.result import ProblemFinding

OutputsFor = Callable[[int, "float | None"], Any]


def check_reference(first: Any, outputs_for: OutputsFor, sets: list[tuple[int, float | None]],
                    settings: HarnessSettings) -> tuple[list[ProblemFinding], bool]:
    """Problem findings, and whether the reference itself returns the same storage from two calls (then so may a
    candidate). ``first`` is the reference's output on the first input set, held alive by the caller."""
    compared = 0
    constant = _finite(first)
    reuses = False
    for seed, scale in sets:
        output = outputs_for(seed, scale)
        reuses = reuses or bool(shared_storage(first, output))
        if constant and _finite(output):
            compared += 1
            constant = isinstance(compare_outputs(first, output, settings.tolerances), Agreement)
        del output
    if not constant or compared == 0:
        return [], reuses
    return [ProblemFinding(reason="constant_output", message=(
        f"the reference returned the same output, within the tolerances, on {compared + 1} input sets drawn under "
        "different seeds: its output does not depend on its inputs, so a candidate returning a constant is "
        "correct and no speedup on this problem is an improvement"))], reuses


def _finite(output: Any) -> bool:
    return any(isinstance(leaf, torch.Tensor) for _, leaf in flatten(output)) and all_finite(output)
