"""The precision guard: both models against a float64 oracle of the reference.

An element-wise tolerance cannot tell honest float32 from bfloat16 arithmetic when outputs are small: the
errors of both sit inside ``atol``. Their relative error against float64 can.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness.guards import chunked
from kernelpro.harness.guards.compare import flatten, relative_error, tolerance_for
from kernelpro.harness.judge_values import JudgeLimits

CHECKED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def checks_precision(leaf: Any) -> bool:
    return isinstance(leaf, torch.Tensor) and leaf.dtype in CHECKED_DTYPES and leaf.numel() > 0


def oracle_outputs(reference: torch.nn.Module, inputs: list[Any]) -> Any:
    """The reference model run in float64 on upcast inputs (raises where an op has no float64 kernel)."""
    oracle = copy.deepcopy(reference).double()
    upcast = [_fresh_float64(x) for x in inputs]
    with torch.no_grad():
        return oracle(*upcast)


def oracle_bytes(reference: torch.nn.Module, inputs: list[Any], ref_out: Any) -> int:
    """About the most memory the oracle takes: its float64 copies of the weights and inputs, and three outputs'
    worth in float64 (the output and the intermediates an op chain holds on its way)."""
    def bytes64(tensors: Any) -> int:
        return sum(t.numel() * 8 for t in tensors if isinstance(t, torch.Tensor))
    weights = list(reference.parameters()) + list(reference.buffers())
    return bytes64(weights) + bytes64(inputs) + 3 * bytes64(leaf for _, leaf in flatten(ref_out))


def free_device_bytes(device: torch.device) -> int | None:
    """What a new allocation can still get on ``device``: the driver's free memory plus what torch's caching
    allocator holds unused (None off the GPU, where the host's memory is the limit)."""
    if device.type != "cuda":
        return None
    free, _total = torch.cuda.mem_get_info(device)
    return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)


def _fresh_float64(value: Any) -> Any:
    """A new tensor for every tensor input, so the oracle cannot change the caller's inputs: the upcast is one
    already, a float64 or integer tensor is cloned (no extra copy of the inputs is made first)."""
    if not isinstance(value, torch.Tensor):
        return value
    return value.double() if value.is_floating_point() and value.dtype != torch.float64 else value.clone()


# A reference further than this from its float64 oracle (relative to its largest magnitude) is not rounding but
# computing something else (dropout, an op whose float64 kernel differs): its error then widens no tolerance...
NOISE_CEILING = 1e-2
# ...unless the exact output is smaller still, under this fraction of the reference's error: then the reference's
# values are its rounding and nothing else (the mean of a group norm's output, zero in exact arithmetic), and an
# honest candidate's rounding may be this many times as large, as the precision guard allows
# (``harness.precision_factor``'s default).
ROUNDING_FACTOR = 16.0


def reference_noise(ref_out: Any, oracle_out: Any) -> dict[str, float]:
    """Per output leaf: the reference's largest error against the oracle, over its largest magnitude (``compare``
    allows twice that, scaled to the output). Where the reference's output is its own rounding (the oracle's is
    under ``1/ROUNDING_FACTOR`` of that error), the error is kept over the reference's own magnitude, times
    ``ROUNDING_FACTOR / 2``: such an output is compared at the rounding's scale, not its own."""
    noise = {}
    for (path, ref), (_, exact) in zip(flatten(ref_out), flatten(oracle_out), strict=True):
        if not checks_precision(ref):
            continue
        scale, error = chunked.abs_max(exact), chunked.abs_diff_max(ref, exact)
        if scale > 0 and error <= NOISE_CEILING * scale:
            noise[path] = error / scale
        elif error > 0 and scale * ROUNDING_FACTOR <= error:
            noise[path] = ROUNDING_FACTOR / 2 * error / chunked.abs_max(ref)
    return noise


def judge_precision(cand_out: Any, ref_out: Any, oracle_out: Any, settings: HarnessSettings | JudgeLimits
                    ) -> tuple[str, str] | None:
    """None when the candidate is as precise as allowed, else ("incorrect" | "rejected", message).

    Allowed: ``precision_factor`` times the reference's own error, or the dtype's rtol if larger. Beyond
    ``gross_relative_error`` the values are simply wrong (zeros for tiny outputs), not imprecise.
    """
    leaves = zip(flatten(cand_out), flatten(ref_out), flatten(oracle_out), strict=True)
    for (path, cand), (_, ref), (_, exact) in leaves:
        if not checks_precision(ref):
            continue
        ref_err, cand_err = relative_error(ref, exact), relative_error(cand, exact)
        rtol = tolerance_for(ref.dtype, settings.tolerances).rtol
        if cand_err <= max(settings.precision_factor * ref_err, rtol):
            continue
        if cand_err > settings.gross_relative_error:
            return "incorrect", (f"{path}: relative error {cand_err:.3g} against a float64 oracle (the reference's "
                                 f"is {ref_err:.2g}): the values pass the element-wise tolerance only because "
                                 "they are small")
        return "rejected", (f"{path}: relative error {cand_err:.3g} against a float64 oracle, "
                            f"{cand_err / max(ref_err, 1e-30):.0f}x the reference's {ref_err:.2g} and above "
                            f"rtol={rtol:g} for {str(ref.dtype).removeprefix('torch.')}")
    return None
