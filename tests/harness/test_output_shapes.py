"""Every output shape KernelBench's problems return, through every check that reads outputs.

A loss returns a 0-dimensional tensor, some reductions a 1-element one, a transpose a non-contiguous view,
half-precision problems fp16: none of them may break the judge itself (a byte view of a 0-dimensional or
strided tensor raises), whatever the verdict.
"""

from __future__ import annotations

import pytest
import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness.guards import dynamic as dyn
from kernelpro.harness.guards import precision
from kernelpro.harness.guards.compare import (
    POISON_BYTE,
    Agreement,
    Mismatch,
    compare_outputs,
    fingerprint,
    poisoned_elements,
)
from kernelpro.harness.guards.memory_floor import compulsory_bytes
from kernelpro.harness.guards.output_checks import OutputHistory, shared_storage

TOL = HarnessSettings().tolerances


def _shapes() -> dict[str, torch.Tensor]:
    base = torch.randn(6, 5)
    return {
        "0-dim": base.sum() / 30,
        "1-element": base[:1, :1].sum(dim=1),
        "non-contiguous": base.t(),
        "expanded": torch.randn(5, 1).expand(5, 4),
        "fp16": base.half(),
        "fp16 0-dim": base.mean().half(),
        "bf16 non-contiguous": base.bfloat16().t(),
        "int64 0-dim": torch.tensor(7),
        "bool": base > 0,
    }


SHAPES = _shapes()


@pytest.fixture(params=list(SHAPES), ids=list(SHAPES))
def output(request) -> torch.Tensor:
    return SHAPES[request.param]


def _wrong(x: torch.Tensor) -> torch.Tensor:
    if x.dtype == torch.bool:
        return ~x
    return x + (1 if not x.is_floating_point() else 0.5)


def test_equal_outputs_agree(output):
    assert isinstance(compare_outputs(output, output.clone(), TOL), Agreement)


def test_wrong_values_are_incorrect_not_a_judge_failure(output):
    outcome = compare_outputs(output, _wrong(output), TOL)
    assert isinstance(outcome, Mismatch) and (outcome.status, outcome.reason) == ("incorrect", "value_mismatch")


def test_non_finite_outputs_are_named(output):
    if not output.is_floating_point():
        pytest.skip("integer outputs hold no NaN")
    outcome = compare_outputs(output, torch.full_like(output, float("nan")), TOL)
    assert isinstance(outcome, Mismatch) and outcome.reason == "nan_inf"


def test_poison_in_any_shape_is_stale_memory(output):
    """The candidate's output holds the poison bytes in every element: memory it never wrote."""
    # the same layout as the reference's (non-contiguous and expanded included), every byte poison
    as_output = torch.empty_strided(output.shape, output.stride(), dtype=output.dtype)
    storage = as_output.untyped_storage()
    storage.copy_(torch.full((storage.nbytes(),), POISON_BYTE, dtype=torch.uint8).untyped_storage())
    assert bool(poisoned_elements(as_output).all())
    assert poisoned_elements(output.clone()).shape == output.shape
    if output.dtype != torch.bool:  # 0xFE is not a valid bool
        outcome = compare_outputs(output, as_output, TOL)
        assert isinstance(outcome, Mismatch) and (outcome.status, outcome.reason) == ("rejected", "stale_memory")


def test_fingerprints_tell_outputs_apart(output):
    assert fingerprint(output) == fingerprint(output.clone())
    assert fingerprint(output) != fingerprint(_wrong(output))


def test_precision_checks_take_every_shape(output):
    if not precision.checks_precision(output):
        pytest.skip("only float32/16 and bfloat16 outputs are checked against the oracle")
    exact = output.double()
    assert precision.reference_noise(output, exact).keys() <= {"output"}
    assert precision.judge_precision(output.clone(), output, exact, HarnessSettings()) is None


def test_storage_checks_take_every_shape(output):
    copy = output.clone()
    assert dyn.mutated_inputs([output], [copy]) == []
    assert dyn.mutated_inputs([output], [_wrong(output)]) == [0]
    assert dyn.aliased_outputs([output], output) == ["output"]
    assert shared_storage(output, copy) == []
    history = OutputHistory()
    history.record(output)
    history.record(output)
    assert history.reused == ["output"]
    assert compulsory_bytes([output], copy) == output.untyped_storage().nbytes() + copy.untyped_storage().nbytes()
