"""Output comparison: structure, type, shape, dtype, finiteness, tolerance, stale memory."""

from __future__ import annotations

import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness.guards.compare import (
    POISON_BYTE,
    Agreement,
    Mismatch,
    compare_outputs,
    fingerprint,
    plain_tensor_problem,
    relative_error,
)

TOL = HarnessSettings().tolerances


def verdict(ref, cand):
    out = compare_outputs(ref, cand, TOL)
    return (out.status, out.reason) if isinstance(out, Mismatch) else "agree"


def test_equal_tensors_agree():
    x = torch.randn(4, 5)
    out = compare_outputs(x, x.clone(), TOL)
    assert isinstance(out, Agreement) and out.max_abs_error == 0.0


def test_within_tolerance_agrees_and_outside_does_not():
    x = torch.randn(100)
    assert verdict(x, x + 5e-5) == "agree"
    assert verdict(x, x + 1e-3) == ("incorrect", "value_mismatch")


def test_half_precision_uses_its_own_tolerance():
    x = torch.randn(100).half()
    assert verdict(x, x + torch.tensor(5e-3, dtype=torch.half)) == "agree"


def test_shape_dtype_and_structure_are_exact():
    x = torch.randn(4, 5)
    assert verdict(x, x.reshape(5, 4)) == ("incorrect", "shape_mismatch")
    assert verdict(x, x.double()) == ("incorrect", "dtype_mismatch")
    assert verdict((x, x), (x,)) == ("incorrect", "structure_mismatch")
    assert verdict((x, 3), (x, 4)) == ("incorrect", "value_mismatch")


def test_nan_and_inf_are_wrong():
    x = torch.randn(10)
    y = x.clone()
    y[3] = float("nan")
    assert verdict(x, y) == ("incorrect", "nan_inf")
    y[3] = float("inf")
    assert verdict(x, y) == ("incorrect", "nan_inf")


def test_integer_outputs_compare_exactly():
    x = torch.arange(10)
    assert verdict(x, x.clone()) == "agree"
    assert verdict(x, x + 1) == ("incorrect", "value_mismatch")


def test_tensor_subclass_and_meta_are_rejected():
    class Sneaky(torch.Tensor):
        pass

    x = torch.randn(3)
    assert verdict(x, x.as_subclass(Sneaky)) == ("rejected", "tensor_subclass")
    assert verdict(x, torch.nn.Parameter(x)) == ("rejected", "tensor_subclass")
    assert plain_tensor_problem(torch.empty(3, device="meta")) is not None
    assert verdict(x, x.to_sparse()) == ("rejected", "tensor_subclass")


def test_poisoned_memory_is_named_stale():
    x = torch.randn(8)
    raw = torch.full((32,), POISON_BYTE, dtype=torch.uint8).view(torch.float32)
    assert verdict(x, raw) == ("rejected", "stale_memory")
    ints = torch.full((32,), POISON_BYTE, dtype=torch.uint8).view(torch.int32)
    assert verdict(torch.arange(8, dtype=torch.int32), ints) == ("rejected", "stale_memory")


def test_relative_error_and_fingerprint():
    x = torch.randn(1000)
    assert relative_error(x, x) == 0.0
    assert abs(relative_error(torch.zeros(1000), x) - 1.0) < 1e-12
    assert fingerprint((x, 2)) == fingerprint((x.clone(), 2))
    assert fingerprint(x) != fingerprint(x + 1e-3)
