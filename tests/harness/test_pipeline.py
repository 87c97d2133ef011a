"""The pipeline: every test candidate in one batch through a long-lived worker gives the per-candidate verdicts,
and the worker is replaced exactly when it must be."""

from __future__ import annotations

import pytest

from kernelpro.harness.judge import judge_many, make_job
from kernelpro.harness.pipeline import Pipeline, lane_devices
from kernelpro.harness.worker.handle import LongLivedWorker
from tests.conftest import candidate, problem
from tests.harness.verdicts import EXPECTED_ON_CPU, NEEDS_GPU, all_candidates, problem_of

LEAKY = """
import os
import sys

import torch
import torch.nn as nn

# Not the default dtype or grad mode: the reference shares those, and changing them is judge_patch (test_guards).
torch.backends.cudnn.benchmark = True
with open("leftover_helper.py", "w") as handle:
    handle.write("VALUE = 1\\n")
sys.path.insert(0, os.getcwd())
import leftover_helper  # noqa: E402
os.environ["KERNELPRO_LEFTOVER"] = "1"


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale
"""

PROBE = """
import importlib.util
import os

import torch
import torch.nn as nn

if importlib.util.find_spec("leftover_helper") is not None:
    raise RuntimeError("a module of an earlier candidate is still importable")
if torch.get_default_dtype() != torch.float32 or not torch.is_grad_enabled() or torch.backends.cudnn.benchmark:
    raise RuntimeError("torch's global state leaked from an earlier candidate")
if "KERNELPRO_LEFTOVER" in os.environ:
    raise RuntimeError("the environment leaked from an earlier candidate")


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale
"""


@pytest.fixture
def batch_settings(settings):
    settings.harness.timeout_s = 10  # the infinite loop's cost
    settings.harness.memory_limit_mb = 1500  # the slow memory creep's
    return settings


def test_the_verdict_table_covers_every_candidate():
    assert set(EXPECTED_ON_CPU) | NEEDS_GPU == set(all_candidates())
    assert not set(EXPECTED_ON_CPU) & NEEDS_GPU


@pytest.mark.timeout(600)  # every correct verdict decided again by the referee: about 100 s a third on two busy cores
@pytest.mark.parametrize("third", [0, 1, 2])  # three batches, so that the test's workers share them
def test_every_candidate_in_one_long_lived_pipeline(batch_settings, third):
    """One batch, start-up paid once: each verdict is the per-candidate one, whatever ran before it, and under
    the referee, which decides every correct one again."""
    batch_settings.harness.referee = True
    names = all_candidates()[third::3]
    with Pipeline("cpu", batch_settings) as pipeline:
        results = pipeline.judge([(problem(problem_of(n)), candidate(n)) for n in names])
        stats = pipeline.stats
    batch_settings.harness.worker_mode = "fresh"
    batch_settings.harness.timeout_s = 60  # a fresh worker's start counts, and a busy machine may take 10 s for it
    gpu_only = sorted(NEEDS_GPU & set(names))
    fresh = dict(zip(gpu_only, judge_many_by_problem(gpu_only, batch_settings), strict=True))
    for name, result in zip(names, results, strict=True):
        expected = EXPECTED_ON_CPU.get(name) or (fresh[name].status, fresh[name].reason)
        assert (result.status, result.reason) == expected, f"{name}: {result.message}"
    assert stats.worker_starts < stats.judged / 2  # the worker judged many candidates in a row


def judge_many_by_problem(names: list[str], settings) -> list:
    return [judge_many(problem(problem_of(n)), [candidate(n)], "cpu", settings)[0] for n in names]


def test_crashes_and_hangs_do_not_take_later_candidates_down(settings):
    settings.harness.timeout_s = 8
    names = ["fault_segfault", "honest_scale_relu", "fault_infinite_loop", "honest_scale_relu", "fault_os_exit",
             "honest_scale_relu"]
    results = judge_many(problem("scale_relu"), [candidate(n) for n in names], "cpu", settings)
    assert [(r.status, r.reason) for r in results] == [
        ("runtime_error", "crashed"), ("ok", None), ("timeout", "wall_time"), ("ok", None),
        ("runtime_error", "exited"), ("ok", None)]


def test_a_tampering_candidate_is_followed_by_a_restart(settings):
    names = ["honest_scale_relu", "cheat_tensor_subclass", "honest_scale_relu"]
    with Pipeline("cpu", settings) as pipeline:
        results = pipeline.judge([(problem("scale_relu"), candidate(n)) for n in names])
        stats = pipeline.stats
    assert [r.reason for r in results] == [None, "tensor_subclass", None]
    assert stats.worker_starts == 2
    assert stats.restarts == ["the candidate tampered with the process (tensor_subclass)"]


def test_a_judge_patch_past_the_static_checks_restarts_the_worker(settings):
    """Straight into the worker: the run-time guard rejects it, and the process it touched judges nobody else."""
    worker = LongLivedWorker("cpu", settings.harness)
    try:
        cheat = worker.run(make_job(problem("scale_relu"), candidate("cheat_judge_patch"), "cpu", settings))
        after = worker.run(make_job(problem("scale_relu"), candidate("honest_scale_relu"), "cpu", settings))
    finally:
        worker.stop()
    assert cheat.result["status"] == "rejected" and cheat.result["reason"] == "judge_patch"
    assert after.result["status"] == "ok"
    assert worker.starts == 2 and "judge_patch" in worker.restarts[0]


def test_state_a_candidate_leaves_is_reset_for_the_next(settings):
    """Global torch flags, modules, sys.path and the environment: the next candidate sees none of them."""
    with Pipeline("cpu", settings) as pipeline:
        leaky, probe = pipeline.judge([(problem("scale_relu"), LEAKY), (problem("scale_relu"), PROBE)])
        stats = pipeline.stats
    assert leaky.status == "ok", leaky.message
    assert probe.status == "ok", probe.message
    assert stats.worker_starts == 1


def test_the_worker_is_recycled_every_n_candidates(settings):
    settings.harness.worker_max_jobs = 2
    with Pipeline("cpu", settings) as pipeline:
        results = pipeline.judge([(problem("scale_relu"), candidate("honest_scale_relu"))] * 5)
        stats = pipeline.stats
    assert all(r.status == "ok" for r in results)
    assert stats.worker_starts == 3
    assert stats.restarts == ["recycled after 2 jobs"] * 2


def test_fresh_mode_starts_a_worker_per_candidate(settings):
    settings.harness.worker_mode = "fresh"
    names = ["honest_scale_relu", "fault_segfault", "cheat_input_mutation"]
    with Pipeline("cpu", settings) as pipeline:
        results = pipeline.judge([(problem("scale_relu"), candidate(n)) for n in names])
        assert pipeline.lanes[0].worker is None
    assert [r.reason for r in results] == [None, "crashed", "input_mutation"]


def test_gpu_devices_must_exist(settings):
    settings.harness.gpu_devices = [7]
    with pytest.raises(ValueError, match=r"gpu_devices names GPU\(s\) \[7\]"):
        lane_devices("cuda", settings.harness)
    assert lane_devices("cpu", settings.harness) == ["cpu"]
    assert lane_devices("cuda:3", settings.harness) == ["cuda:3"]
