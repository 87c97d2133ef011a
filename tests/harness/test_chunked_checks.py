"""The output checks on large outputs: slice by slice, with the same verdicts as in one piece and no float64 copy
of a whole output (the copies that ran an H200 out of memory on KernelBench's 6 GiB ReLU)."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernelpro.config import Tolerance
from kernelpro.harness.guards import chunked, compare, precision
from kernelpro.harness.guards import dynamic as dynamic_guards
from kernelpro.harness.worker.model_calls import all_finite

TOL = {"float32": Tolerance(atol=1e-4, rtol=1e-4)}
NUMEL = 40_000


class LargestTensor(TorchDispatchMode):
    """The size in bytes of the largest new storage any op makes while active (views are not counted)."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        given = {a.untyped_storage().data_ptr() for a in [*args, *(kwargs or {}).values()]
                 if isinstance(a, torch.Tensor)}
        for leaf in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(leaf, torch.Tensor) and leaf.untyped_storage().data_ptr() not in given:  # not a view
                self.largest = max(self.largest, leaf.untyped_storage().nbytes())
        return out


@pytest.fixture
def small_slices(monkeypatch):
    monkeypatch.setattr(chunked, "CHUNK_ELEMENTS", 1000)


def pair(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    ref = torch.randn(200, NUMEL // 200, generator=torch.Generator().manual_seed(seed))
    return ref, ref.clone()


def test_no_check_copies_a_whole_output_to_float64(small_slices):
    ref, cand = pair()
    cand[150, 7] += 1.0
    inputs, exact = [ref.clone()], ref.double()
    with LargestTensor() as seen:
        outcome = compare.compare_outputs(ref, cand, TOL, {"output": 1e-6})
        compare.fingerprint(cand)
        compare.relative_error(cand, ref)
        precision.reference_noise(ref, exact)
        dynamic_guards.mutated_inputs(inputs, [ref])
        assert all_finite([ref, cand])
    assert isinstance(outcome, compare.Mismatch)
    # a float64 copy of the output would be twice its own bytes; a boolean mask of it is a quarter
    assert seen.largest <= ref.numel() * ref.element_size() // 4


def test_a_mismatch_in_a_late_slice_reads_as_in_one_piece(small_slices, monkeypatch):
    ref, cand = pair()
    cand[150, 7] += 1.0
    cand[180, 3] -= 2.0
    sliced = compare.compare_outputs(ref, cand, TOL)
    monkeypatch.setattr(chunked, "CHUNK_ELEMENTS", 1 << 30)
    whole = compare.compare_outputs(ref, cand, TOL)
    assert sliced == whole
    assert "2 of 40000 elements outside" in sliced.message and "first at [150, 7]" in sliced.message
    assert sliced.max_abs_error == pytest.approx(2.0, rel=1e-6)


def test_agreement_figures_match_one_piece(small_slices, monkeypatch):
    ref, cand = pair()
    cand += 1e-6 * torch.randn(cand.shape, generator=torch.Generator().manual_seed(1))
    sliced = compare.compare_outputs(ref, cand, TOL)
    monkeypatch.setattr(chunked, "CHUNK_ELEMENTS", 1 << 30)
    assert sliced == compare.compare_outputs(ref, cand, TOL)
    assert compare.fingerprint(cand) == compare.fingerprint(cand.clone())


def test_poison_found_in_a_late_slice(small_slices):
    ref, cand = pair()
    raw = cand.view(-1)[35_000:35_010].view(torch.uint8)
    raw.fill_(compare.POISON_BYTE)
    outcome = compare.compare_outputs(ref, cand, TOL)
    assert outcome.reason == "stale_memory" and "10 elements" in outcome.message


def test_an_input_changed_in_its_last_slice_is_seen(small_slices):
    before = torch.randn(NUMEL)
    before[5] = float("nan")
    after = before.clone()
    assert dynamic_guards.mutated_inputs([before], [after]) == []
    after[-1] += 1
    assert dynamic_guards.mutated_inputs([before, 3], [after, 3]) == [0]


def test_relative_error_matches_the_norm_formula(small_slices):
    exact = torch.randn(NUMEL, dtype=torch.float64)
    value = (exact + 1e-3 * torch.randn(NUMEL, dtype=torch.float64)).float()
    expected = float((value.double() - exact).norm() / exact.norm())
    assert compare.relative_error(value, exact) == pytest.approx(expected, rel=1e-9)


def test_unravel_is_row_major():
    t = torch.arange(60).reshape(3, 4, 5)
    for flat_index in (0, 7, 33, 59):
        position = chunked.unravel(flat_index, t.shape)
        assert int(t[tuple(position)]) == flat_index


def test_the_oracle_estimate_counts_float64_weights_inputs_and_three_outputs():
    model = torch.nn.Linear(10, 10)
    need = precision.oracle_bytes(model, [torch.zeros(4, 10)], torch.zeros(4, 10))
    assert need == (110 + 40 + 3 * 40) * 8
    assert precision.free_device_bytes(torch.device("cpu")) is None


def test_an_inf_in_a_late_slice_is_not_finite(small_slices):
    ref, _ = pair()
    assert all_finite(ref)
    ref.view(-1)[39_999] = float("inf")
    assert not all_finite((ref,)) and all_finite(ref[:100]) and all_finite(torch.empty(0))
