"""A problem too big for the worker's memory is said to be so, with its footprint and the limit, whatever the
candidate: never a candidate's failure. Nothing large is allocated: the inputs' size is read on the meta device,
and the hungry reference's request is refused by the worker's address-space limit."""

from __future__ import annotations

import torch

from kernelpro.harness.footprint import PROBLEM_TOO_BIG, input_bytes, inputs_over_limit
from kernelpro.harness.judge import judge
from tests.conftest import candidate, problem

RELU = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"


def test_the_inputs_footprint_is_read_without_allocating_it():
    assert input_bytes(lambda: [torch.randn(1 << 20, 1 << 20), 3, [torch.zeros(4, dtype=torch.int8)]]) == \
        (1 << 42) + 4  # 16 TiB of float32 plus four bytes: shapes and dtypes only
    assert input_bytes(lambda: [torch.from_numpy(__import__("numpy").zeros(4))]) is None  # drawn for real
    assert inputs_over_limit(100 << 20, 1024) is None  # 300 MiB held at once fit in 1 GiB
    why = inputs_over_limit(512 << 20, 1024)
    assert why is not None and "0.50 GiB of inputs" in why and "(1.50 GiB)" in why and "now 1024" in why
    # with the reference's outputs known: both outputs held too (a 4 GiB ReLU needs 20 GiB, over 16)
    assert inputs_over_limit(4 << 30, 16384) is None
    why = inputs_over_limit(4 << 30, 16384, outputs=4 << 30)
    assert why is not None and "4.00 GiB of inputs and its outputs 4.00 GiB" in why and "(20.00 GiB)" in why


def test_inputs_too_big_for_the_limit_are_the_problems_not_the_candidates(settings):
    settings.harness.memory_limit_mb = 1024
    result = judge(problem("too_big_inputs"), RELU, device="cpu", settings=settings)
    assert (result.status, result.reason) == ("runtime_error", PROBLEM_TOO_BIG), result.message
    assert "get_inputs() makes 0.50 GiB of inputs" in result.message
    assert "raise harness.memory_limit_mb (now 1024" in result.message and "KERNELPRO_HARNESS__MEMORY_LIMIT_MB" in \
        result.message


def test_a_reference_that_runs_out_of_memory_makes_the_problem_too_big(settings):
    settings.harness.memory_limit_mb = 1024
    result = judge(problem("hungry_reference"), RELU, device="cpu", settings=settings)
    assert (result.status, result.reason) == ("runtime_error", PROBLEM_TOO_BIG), result.message
    assert result.message.startswith("the reference ran out of host memory in Model.forward (its first call)")
    assert "its inputs take 16 KiB" in result.message and "harness.memory_limit_mb" in result.message


def test_a_problem_that_fits_is_judged_as_before(settings):
    settings.harness.memory_limit_mb = 1024
    result = judge(problem("scale_relu"), candidate("honest_scale_relu"), device="cpu", settings=settings)
    assert (result.status, result.reason) == ("ok", None), result.message
