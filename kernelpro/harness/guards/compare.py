"""Comparing a candidate's outputs with the reference's: structure, type, shape, dtype, finiteness, values.

Runs inside the worker. Outputs may be a tensor or nested tuples/lists of tensors and plain values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from kernelpro.config import Tolerance
from kernelpro.harness.guards import chunked
from kernelpro.harness.judge_values import FrozenTolerance

# Memory a candidate never wrote reads as this byte: on the GPU the judge fills and frees blocks before each call,
# on the CPU glibc fills every allocation with it (worker.poison_allocations). 0xFE, not 0xFF: glibc's perturb
# byte is the complement and zero switches it off. -1.7e38 in float32, NaN in float16, -2 in int8.
POISON_BYTE = 0xFE


@dataclass(frozen=True)
class Mismatch:
    """Why outputs differ. ``status`` is ``incorrect`` or ``rejected`` (a guard)."""

    status: str
    reason: str
    message: str
    max_abs_error: float | None = None
    max_rel_error: float | None = None


@dataclass(frozen=True)
class Agreement:
    max_abs_error: float
    max_rel_error: float


def flatten(output: Any, path: str = "output") -> list[tuple[str, Any]]:
    """``[(path, leaf)]`` for a nested tuple/list output, so each tensor is named in messages."""
    if isinstance(output, (tuple, list)):
        leaves: list[tuple[str, Any]] = []
        for i, item in enumerate(output):
            leaves.extend(flatten(item, f"{path}[{i}]"))
        return leaves
    return [(path, output)]


def plain_tensor_problem(value: Any) -> str | None:
    """Why ``value`` is not a plain, materialised tensor, or None if it is one."""
    if type(value) is not torch.Tensor:
        return f"is a {type(value).__module__}.{type(value).__qualname__}, not a plain torch.Tensor"
    if value.is_meta:
        return "is a meta tensor with no data"
    if value.layout != torch.strided:
        return f"has layout {value.layout}, not strided"
    if value.numel() and value.untyped_storage().data_ptr() == 0:
        return "has no storage"
    return None


def tolerance_for(dtype: torch.dtype, tolerances: dict[str, Tolerance] | dict[str, FrozenTolerance]
                  ) -> Tolerance | FrozenTolerance:
    return tolerances.get(str(dtype).removeprefix("torch."), tolerances["float32"])


def poisoned_elements(tensor: torch.Tensor) -> torch.Tensor:
    """Mask of elements whose every byte is the poison byte (memory the candidate never wrote).

    Any shape: a byte view needs a contiguous tensor of at least one dimension, so a 0-dimensional loss, a
    transposed or expanded output and a half-precision scalar are flattened to one contiguous row first.
    """
    flat = tensor.detach().reshape(-1).contiguous()
    raw = flat.view(torch.uint8).reshape(flat.numel(), flat.element_size())
    return (raw == POISON_BYTE).all(dim=1).reshape(tensor.shape)


def compare_outputs(reference: Any, candidate: Any, tolerances: dict[str, Tolerance],
                    noise: dict[str, float] | None = None,
                    sample: Callable[[torch.Tensor], torch.Tensor | None] | None = None) -> Mismatch | Agreement:
    """Check a candidate's output against the reference's for the same inputs.

    ``noise`` maps a leaf's path to the reference's own error against a float64 oracle, as a fraction of its
    largest magnitude (``precision.reference_noise``); twice that, scaled to this output, widens ``atol``: an
    honest candidate differs from a reference that rounds coarsely (TF32 convolutions, say) by both errors.
    ``sample`` gives, for a leaf, the flat positions to compare instead of every element (None: every one);
    its structure, shape, dtype, device and tensor type are checked whole all the same.
    """
    ref_leaves, cand_leaves = flatten(reference), flatten(candidate)
    if len(ref_leaves) != len(cand_leaves):
        return Mismatch("incorrect", "structure_mismatch",
                        f"the reference returns {len(ref_leaves)} value(s), the candidate {len(cand_leaves)}")
    worst_abs = worst_rel = 0.0
    for (path, ref), (_, cand) in zip(ref_leaves, cand_leaves, strict=True):
        if not isinstance(ref, torch.Tensor):
            if isinstance(cand, torch.Tensor) or cand != ref:
                return Mismatch("incorrect", "value_mismatch", f"{path}: expected {ref!r}, got {cand!r}")
            continue
        problem = plain_tensor_problem(cand)
        if problem:
            return Mismatch("rejected", "tensor_subclass", f"{path} {problem}")
        result = _compare_tensor(path, ref, cand, tolerances, (noise or {}).get(path, 0.0), sample)
        if isinstance(result, Mismatch):
            return result
        worst_abs, worst_rel = max(worst_abs, result.max_abs_error), max(worst_rel, result.max_rel_error)
    return Agreement(worst_abs, worst_rel)


def _compare_tensor(path: str, ref: torch.Tensor, cand: torch.Tensor, tolerances: dict[str, Tolerance],
                    noise: float = 0.0, sample: Callable[[torch.Tensor], torch.Tensor | None] | None = None
                    ) -> Mismatch | Agreement:
    if cand.shape != ref.shape:
        return Mismatch("incorrect", "shape_mismatch",
                        f"{path}: shape {tuple(cand.shape)}, expected {tuple(ref.shape)}")
    if cand.dtype != ref.dtype:
        return Mismatch("incorrect", "dtype_mismatch", f"{path}: dtype {cand.dtype}, expected {ref.dtype}")
    if cand.device != ref.device:
        return Mismatch("incorrect", "device_mismatch", f"{path}: on {cand.device}, expected {ref.device}")
    if cand.numel() == 0:
        return Agreement(0.0, 0.0)
    if sample is not None and (positions := sample(ref)) is not None:
        ref, cand = chunked.take(ref, positions), chunked.take(cand, positions)
    if not (ref.is_floating_point() or ref.is_complex()):
        wrong = cand != ref
        if bool(wrong.any()):
            return _stale_or(path, cand, wrong, Mismatch(
                "incorrect", "value_mismatch",
                f"{path}: {int(wrong.sum())} of {ref.numel()} integer elements differ"))
        return Agreement(0.0, 0.0)

    return _compare_floats(path, ref, cand, tolerance_for(ref.dtype, tolerances), noise)


def atol_at_scale(atol: float, scale: float, dtype: torch.dtype) -> float:
    """The tolerance's absolute part for an output leaf whose largest magnitude is ``scale``.

    ``atol`` stands for rounding at the magnitude of outputs of order one, which is what KernelBench's inputs
    give most problems. An output whose largest element is far smaller (a softmax over 393,216 columns, about
    2.5e-6 an element; a tensor divided by its norm) sits wholly inside it: zeros, a constant or its own elements
    permuted would pass. Its rounding is at its own scale, so ``atol`` is taken down by that scale (never up), to
    no less than the dtype's smallest normal number, below which the dtype itself keeps no relative precision (a
    kernel that flushes subnormal results to zero stays correct). Honest float32 arithmetic is unaffected: its
    error, a few units in the last place of the values it sums, stays within ``rtol`` and ``atol * scale``; where
    the reference's own rounding is larger (TF32, an output that is all cancellation) the noise allowance covers
    it (``precision.reference_noise``)."""
    floor = torch.finfo(dtype).tiny
    return min(atol, max(atol * min(1.0, scale), floor))


def _compare_floats(path: str, ref: torch.Tensor, cand: torch.Tensor, tol: Tolerance, noise: float
                    ) -> Mismatch | Agreement:
    """NaN/Inf, then the element-wise tolerance in float64, a slice at a time (``chunked``): the figures of every
    slice stay on the device and come back in one transfer; only a mismatch looks again at its wrong slices.

    Under ``kernelpro`` (the rule of a plain ``Tolerance`` too) ``atol`` is taken to the reference's scale
    (``atol_at_scale``) and widened by its noise; under ``kernelbench`` it is ``torch.allclose(cand, ref)`` as
    KernelBench calls it: ``|ref - cand| <= atol + rtol * |cand|``, nothing widened."""
    kernelbench = isinstance(tol, FrozenTolerance) and tol.rule == "kernelbench"
    ref_row, cand_row = chunked.flat(ref), chunked.flat(cand)
    scale = chunked.abs_max(ref)
    slack = 2 * noise * scale if noise and not kernelbench else 0.0
    atol = tol.atol if kernelbench else atol_at_scale(tol.atol, scale, ref.real.dtype)
    bounds = _Bounds(atol, tol.rtol, slack, relative_to_candidate=kernelbench)
    parts = list(chunked.slices(ref_row.numel()))
    figures = []  # per slice: NaN/Inf elements, wrong elements, max abs error, max relative error
    for part in parts:
        diff, magnitude, wrong = bounds.errors(ref_row[part], cand_row[part])
        figures.append(torch.stack([(~torch.isfinite(cand_row[part])).sum().double(), wrong.sum().double(),
                                    diff.max(), (diff / magnitude.clamp_min(atol)).max()]))
        del diff, magnitude, wrong
    per_slice = torch.stack(figures).tolist()
    nonfinite, wrong_total = int(sum(row[0] for row in per_slice)), int(sum(row[1] for row in per_slice))

    def masks(column: int, mask: Callable[[slice], torch.Tensor]) -> Iterator[tuple[slice, torch.Tensor]]:
        return ((part, mask(part)) for part, row in zip(parts, per_slice, strict=True) if row[column])

    def stale(found: Iterator[tuple[slice, torch.Tensor]]) -> int:
        return sum(int((poisoned_elements(cand_row[part]) & mask).sum()) for part, mask in found)

    if nonfinite:
        count = stale(masks(0, lambda part: ~torch.isfinite(cand_row[part])))
        return _stale_mismatch(path, count) if count else Mismatch(
            "incorrect", "nan_inf", f"{path}: {nonfinite} of {cand.numel()} elements are NaN or Inf")
    max_abs, max_rel = max(row[2] for row in per_slice), max(row[3] for row in per_slice)
    if not wrong_total:
        return Agreement(max_abs, max_rel)
    wrong_slices = list(masks(1, lambda part: bounds.errors(ref_row[part], cand_row[part])[2]))
    first_part, first_mask = wrong_slices[0]
    first = first_part.start + int(torch.nonzero(first_mask)[0])
    count = stale(iter(wrong_slices))
    scaled = f" (atol={tol.atol:g} at this output's scale, its largest magnitude {scale:.3g})" \
        if atol < tol.atol else ""
    rule = " (KernelBench's allclose: rtol of the candidate's magnitude)" if kernelbench else ""
    return _stale_mismatch(path, count) if count else Mismatch(
        "incorrect", "value_mismatch",
        f"{path}: {wrong_total} of {ref.numel()} elements outside atol={atol:.3g}, rtol={tol.rtol:g}{scaled}{rule}"
        f"{f' (widened by {slack:.3g}: the reference itself is that far from float64)' if slack else ''}; "
        f"max abs error {max_abs:.3g}; first at {chunked.unravel(first, ref.shape)}: got "
        f"{float(cand_row[first]):.6g}, expected {float(ref_row[first]):.6g}",
        max_abs, max_rel)


@dataclass(frozen=True)
class _Bounds:
    """One leaf's element-wise bound: ``|cand - ref| <= atol + slack + rtol * |ref|`` (``|cand|`` under
    KernelBench's rule, where the reference is ``allclose``'s first argument)."""

    atol: float
    rtol: float
    slack: float
    relative_to_candidate: bool = False

    def errors(self, ref: torch.Tensor, cand: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """In float64: ``|cand - ref|``, ``|ref|``, and where the difference is outside the bound."""
        ref64, cand64 = ref.double(), cand.double()
        diff, magnitude = (cand64 - ref64).abs(), ref64.abs()
        relative = cand64.abs() if self.relative_to_candidate else magnitude
        return diff, magnitude, diff > self.atol + self.slack + self.rtol * relative


def _stale_mismatch(path: str, stale: int) -> Mismatch:
    return Mismatch("rejected", "stale_memory",
                    f"{path}: {stale} elements hold memory the candidate never wrote "
                    "(the judge's poison pattern): it relies on leftovers from earlier work")


def _stale_or(path: str, cand: torch.Tensor, wrong: torch.Tensor, mismatch: Mismatch) -> Mismatch:
    """Name stale memory when the wrong elements still hold the poison the judge left in freed memory."""
    stale = int((poisoned_elements(cand) & wrong).sum())
    return _stale_mismatch(path, stale) if stale else mismatch


def relative_error(value: torch.Tensor, exact: torch.Tensor) -> float:
    """``||value - exact|| / ||exact||`` in float64."""
    return chunked.relative_norm_error(value, exact)


def fingerprint(output: Any, sample: Callable[[torch.Tensor], torch.Tensor | None] | None = None) -> tuple:
    """A cheap summary that identifies an output: equal fingerprints mean (almost surely) equal outputs. With
    ``sample``, a large leaf is summarised at the positions it gives (the same for every output compared)."""
    parts: list[Any] = []
    for _, leaf in flatten(output):
        if isinstance(leaf, torch.Tensor) and type(leaf) is torch.Tensor and not leaf.is_meta:
            positions = sample(leaf) if sample is not None else None
            flat = chunked.take(leaf, positions) if positions is not None else chunked.flat(leaf)
            step = max(1, flat.numel() // 61)
            # one copy to the host for the whole summary: it runs after every timed call
            summary = torch.cat([chunked.finite_sum(flat).reshape(1),
                                 flat[::step][:64].to(torch.float64).nan_to_num()]).tolist()
            parts.append((tuple(leaf.shape), str(leaf.dtype), summary[0], tuple(summary[1:])))
        else:
            parts.append(repr(leaf))
    return tuple(parts)
