"""What the candidate shares with the reference and the comparison in the worker's interpreter: torch's flags,
hooks, operator kernels and namespaces (``guards.torch_state``, ``integrity``), the judge's own numbers
(``judge_values``), and the inputs' seeds (``input_draws``)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from kernelpro.harness.guards import integrity
from kernelpro.harness.guards.torch_state import TorchState
from kernelpro.harness.input_draws import reseed_from_os
from kernelpro.harness.judge import judge, make_job
from kernelpro.harness.judge_values import FrozenMap, TamperedValue, frozen_noise, judge_limits, widest_noise
from tests.conftest import candidate, problem


@pytest.fixture
def state():
    taken = TorchState.take()
    yield taken
    taken.changes()  # whatever a failing test left changed is put back


@pytest.mark.parametrize("change", [
    lambda: torch.set_default_dtype(torch.float16),
    lambda: torch.set_num_threads(torch.get_num_threads() + 3),
    lambda: setattr(torch.backends.mkldnn, "enabled", False),
    lambda: torch.set_float32_matmul_precision("medium"),
    lambda: torch.use_deterministic_algorithms(True),
    lambda: torch.nn.modules.module.register_module_forward_hook(lambda m, a, o: o),
    lambda: torch.nn.modules.module.register_module_forward_pre_hook(lambda m, a: None),
], ids=["default_dtype", "threads", "mkldnn", "matmul_precision", "deterministic", "forward_hook", "pre_hook"])
def test_every_change_to_the_shared_state_is_named_and_put_back(state, change):
    change()
    assert state.changes() != []
    assert state.changes() == []  # put back


def test_a_kernel_registered_for_an_existing_operator_is_named_and_a_new_operator_is_not(state):
    own = torch.library.Library("kp_state_test", "DEF")
    own.define("twice(Tensor x) -> Tensor")
    own.impl("twice", lambda x: x * 2, "CPU")
    assert state.changes() == []  # a custom op of the candidate's own
    override = torch.library.Library("aten", "IMPL")
    override.impl("relu", lambda x: x, "CPU")
    try:
        assert state.changes() == ["the kernel of aten::relu (torch.library)"]
    finally:
        override._destroy()


def test_what_the_judge_holds_itself_while_timed_is_expected_and_cudnn_benchmark_is_free(state):
    with torch.no_grad():
        assert state.changes({"torch._C.is_grad_enabled": False}) == []  # the judge holds grad off itself...
        assert state.changes() == ["torch._C.is_grad_enabled (True -> False)"]  # ...or the candidate turned it off
    benchmark = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = not benchmark
    try:
        assert state.changes() == []
    finally:
        torch.backends.cudnn.benchmark = benchmark


def test_torch_namespaces_are_watched_through_any_alias_and_no_method_may_be_added():
    snapshot = integrity.take_snapshot(torch_namespaces=True)
    alias, linear = F, F.linear
    alias.linear = lambda *args, **kwargs: None
    torch.nn.Linear.extra_repr_twice = lambda self: ""
    vars(torch)["stack"] = lambda *args, **kwargs: None
    changed = {what for _, what in integrity.verify(snapshot)}
    assert {"torch.nn.functional.linear", "torch.stack"} <= changed
    assert any(what.endswith("Linear.extra_repr_twice") for what in changed)
    assert F.linear is linear and not hasattr(torch.nn.Linear, "extra_repr_twice")  # each put back
    assert integrity.verify(snapshot) == []


def test_the_judges_numbers_cannot_be_written_and_a_swap_behind_their_back_is_refused(settings):
    limits = judge_limits(settings.harness)
    with pytest.raises(TypeError):
        limits.tolerances["float32"] = None
    with pytest.raises(AttributeError):
        limits.tolerances["float32"].atol = 1.0
    with pytest.raises(AttributeError):
        limits.tolerances._items = ()
    noise = frozen_noise({"output": 1e-6})
    object.__setattr__(noise, "_items", (("output", 0.5),))
    with pytest.raises(TamperedValue):
        noise.verified()
    widest = widest_noise([frozen_noise({"output": 1e-6}), frozen_noise({"output": 3e-6, "output[1]": 0.0})])
    assert dict(widest.verified()) == {"output": 3e-6, "output[1]": 0.0} and isinstance(widest, FrozenMap)


def test_the_job_carries_no_seed_of_the_judged_inputs_and_the_generators_forget_theirs(settings):
    job = make_job(problem("scale_relu"), candidate("honest_scale_relu"), "cpu", settings)
    assert set(job["seeds"]) == {"init", "problem"}  # the inputs' seeds are drawn in the worker, set by set
    torch.manual_seed(1234)
    reseed_from_os()
    assert torch.initial_seed() != 1234


def test_a_candidate_predicting_the_next_rounds_seeds_never_hits(settings):
    """It precomputes the outputs for the seeds after the one it reads from the generator's state, and prints a
    line whenever one is asked for: with every round's seed drawn from the OS as the round begins, none is."""
    result = judge(problem("scale_relu"), candidate("cheat_predicted_inputs"), device="cpu", settings=settings)
    assert result.status == "ok", result.message
    assert "predicted" not in result.worker_output


def test_a_softmax_without_its_max_shift_fails_on_the_shifted_set_and_one_with_it_passes(settings):
    unshifted = judge(problem("softmax_wide"), candidate("cheat_unshifted_softmax"), device="cpu", settings=settings)
    assert (unshifted.status, unshifted.reason) == ("incorrect", "nan_inf"), unshifted.message
    assert f"inputs +{settings.harness.magnitude_shift:g}" in unshifted.message
    shifted_ok = judge(problem("softmax_wide"), candidate("honest_softmax"), device="cpu", settings=settings,
                       timing=False)
    assert shifted_ok.status == "ok", shifted_ok.message
