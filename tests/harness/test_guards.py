"""Every guard against a cheating candidate written to trip it, through the full judge on the CPU.

Cheats the static checks catch are also run past them (straight into a worker) where the dynamic check can
see the hack on a CPU: each layer must stand on its own.
"""

from __future__ import annotations

import pytest

from kernelpro.harness.judge import classify, judge, make_job
from kernelpro.harness.worker.sandbox import run_worker
from tests.conftest import candidate, problem

# (candidate, problem, expected reason, timing needed)
CHEATS = [
    ("cheat_try_except_fallback", "scale_relu", "try_except_fallback"),
    ("cheat_reference_subclass", "scale_relu", "reference_reuse"),
    ("cheat_reference_subclass_hidden", "scale_relu", "reference_reuse"),
    ("cheat_cached_pointer", "scale_relu", "cached_output"),
    ("cheat_cached_replay", "scale_relu", "cached_output"),
    ("cheat_cached_id", "scale_relu", "cached_output"),
    ("cheat_input_mutation", "scale_relu", "input_mutation"),
    ("cheat_tensor_subclass", "scale_relu", "tensor_subclass"),
    ("cheat_background_thread", "scale_relu", "background_thread"),
    ("cheat_background_process", "scale_relu", "background_process"),
    ("cheat_timer_patch", "scale_relu", "timer_patch"),
    ("cheat_sync_patch", "scale_relu", "timer_patch"),
    ("cheat_judge_patch", "scale_relu", "judge_patch"),
    ("cheat_gc_referrers", "scale_relu", "judge_patch"),
    ("cheat_stale_memory", "scale_relu", "stale_memory"),
    ("cheat_l2_persistence", "scale_relu", "l2_persistence"),
    # the process state the reference and the comparison share (torch_state, integrity's torch namespaces)
    ("cheat_default_dtype", "scale_relu", "judge_patch"),
    ("cheat_mkldnn_off", "matmul_relu", "judge_patch"),
    ("cheat_thread_oversubscription", "scale_relu", "judge_patch"),
    ("cheat_functional_alias", "matmul_relu", "judge_patch"),
    ("cheat_global_forward_hook", "matmul_relu", "judge_patch"),
    ("cheat_stack_patch", "scale_relu", "judge_patch"),
]

# Cheats whose hack shows at run time on a CPU, judged with the static checks skipped.
DYNAMIC_ON_CPU = [
    ("cheat_try_except_fallback", "try_except_fallback"),  # the static finding is only a warning
    ("cheat_reference_subclass", "reference_reuse"),
    ("cheat_cached_pointer", "cached_output"),
    ("cheat_cached_id", "cached_output"),
    ("cheat_background_thread", "background_thread"),
    ("cheat_background_process", "background_process"),
    ("cheat_timer_patch", "timer_patch"),
    ("cheat_sync_patch", "timer_patch"),
    ("cheat_judge_patch", "judge_patch"),
]


@pytest.mark.parametrize(("name", "problem_name", "reason"), CHEATS, ids=[c[0] for c in CHEATS])
def test_cheat_is_rejected_with_its_reason(name, problem_name, reason, settings):
    result = judge(problem(problem_name), candidate(name), device="cpu", settings=settings)
    assert result.status == "rejected", result.message
    assert result.reason == reason, result.message
    assert any(g.reason == reason and g.severity == "reject" for g in result.guards)
    assert not result.correct and result.speedup is None


@pytest.mark.parametrize(("name", "reason"), DYNAMIC_ON_CPU, ids=[c[0] for c in DYNAMIC_ON_CPU])
def test_dynamic_guard_catches_what_static_would(name, reason, settings):
    job = make_job(problem("scale_relu"), candidate(name), "cpu", settings)
    result = classify(run_worker(job, settings.harness), settings)
    assert (result.status, result.reason) == ("rejected", reason), result.message
    assert all(g.source == "dynamic" for g in result.guards if g.severity == "reject")


def test_a_fallback_handler_that_runs_is_named_with_its_line(settings):
    result = judge(problem("scale_relu"), candidate("cheat_try_except_fallback"), device="cpu", settings=settings)
    rejecting = [g for g in result.guards if g.severity == "reject"]
    assert [(g.reason, g.source, g.line) for g in rejecting] == [("try_except_fallback", "dynamic", 17)]
    assert any(g.source == "static" and g.severity == "warn" for g in result.guards)


@pytest.mark.parametrize("name", ["cheat_zeros_tiny", "cheat_precision_bf16", "cheat_precision_after_first"])
def test_errors_that_fit_inside_atol_are_wrong_values_at_the_outputs_scale(name, settings):
    """Softmax outputs all sit under atol=1e-4, which is taken down to their scale: zeros, and bfloat16's error
    (forty times rtol) on any input set, are wrong values element-wise."""
    result = judge(problem("softmax_wide"), candidate(name), device="cpu", settings=settings)
    assert (result.status, result.reason) == ("incorrect", "value_mismatch"), result.message
    assert "at this output's scale" in result.message


def test_pointer_cache_is_caught_in_timed_calls_too(settings):
    """Past the correctness trials (one set, which it passes), every timed output is checked too."""
    settings.harness.correctness_trials = 1
    settings.harness.scaled_trials = settings.harness.shifted_trials = 0
    job = make_job(problem("scale_relu"), candidate("cheat_cached_pointer"), "cpu", settings)
    result = classify(run_worker(job, settings.harness), settings)
    assert (result.status, result.reason) == ("rejected", "cached_output"), result.message
    assert "timed call" in result.message


def test_a_candidate_pinned_to_its_first_input_tensor_fails_on_inputs_at_new_addresses(settings):
    """Every second correctness set comes in the last call's tensors (where a pointer memo hits), the others in
    new tensors while those are still held, so one that computes from the tensor it first saw is seen handing
    back the output of an earlier set."""
    result = judge(problem("scale_relu"), candidate("fault_pinned_input"), device="cpu", settings=settings)
    assert (result.status, result.reason) == ("rejected", "cached_output"), result.message
    assert "input set 3" in result.message and "at addresses no earlier call saw" in result.message


def test_a_memo_keyed_on_input_values_never_hits_in_timed_calls(settings):
    """Every timed round draws inputs of its own, so a cache keyed on a digest of the values pays full price
    (with a pool of reused input sets it was judged 3-6x faster). It is correct, so it is judged as it runs:
    never faster than the work it does."""
    settings.harness.timing_trials = 60
    settings.harness.min_timing_trials = 60
    settings.harness.timing_budget_s = 30
    result = judge(problem("scale_relu"), candidate("cheat_cached_digest"), device="cpu", settings=settings)
    assert result.status == "ok", result.message
    assert result.details["timing"]["rounds"] == 60
    assert result.details["timing"]["outputs_checked"] >= 60
    assert result.speed_verdict != "faster" and not result.improves, result.message


def test_forged_verdict_on_the_result_channel_is_ignored(settings):
    result = judge(problem("scale_relu"), candidate("cheat_forged_result"), device="cpu", settings=settings)
    assert result.status == "runtime_error" and result.reason == "exited", result.message
    assert result.speedup is None


def test_precision_downgrade_is_allowed_when_tolerance_allows(settings):
    """The guard is relative to the configured tolerance: loosen float32's and bf16 compute is accepted."""
    settings.harness.tolerances["float32"].rtol = 1e-2
    settings.harness.shifted_trials = 0  # inputs shifted by 100 lose their spread in bfloat16: 5 % off there
    result = judge(problem("softmax_wide"), candidate("cheat_precision_bf16"), device="cpu", settings=settings)
    assert result.status == "ok", result.message
    assert any(g.reason == "precision_downgrade" and g.severity == "warn" for g in result.guards)


LATE_FALLBACK = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Passes every correctness trial with its own path, then falls back in the timed calls."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        try:
            if self.calls > 6:
                raise RuntimeError("the fast path gave up")
            return torch.clamp_min(x, 0.0) * self.scale
        except RuntimeError:
            return torch.relu(x) * self.scale
'''


def test_a_fallback_that_first_runs_in_a_timed_call_is_rejected(settings):
    result = judge(problem("scale_relu"), LATE_FALLBACK, device="cpu", settings=settings)
    assert (result.status, result.reason) == ("rejected", "try_except_fallback"), result.message
    assert "line 19" in result.message and "timing" in result.details["phase_s"]  # caught there, not before
