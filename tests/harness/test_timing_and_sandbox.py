"""Timing arithmetic, the clocks' immunity to patching, and the worker's environment."""

from __future__ import annotations

import time

import pytest
import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness.sandbox import PACKAGE_ROOT, worker_environment
from kernelpro.harness.timing import CpuClock, clone_inputs, plan_trials, summarise, time_models


def test_plan_trials_respects_budget_and_bounds():
    s = HarnessSettings(timing_budget_s=1.0, timing_trials=100, min_timing_trials=10)
    assert plan_trials([0.001, 0.001], s) == 100
    assert plan_trials([50.0, 50.0], s) == 10
    assert plan_trials([2.0, 3.0], s) == 100  # 1 s / 5 ms = 200 rounds, capped at 100
    assert plan_trials([20.0, 30.0], s) == 20


def test_summarise_reports_median_and_deciles():
    t = summarise([float(v) for v in range(1, 101)], [1.0] * 100, "m")
    assert t.median_ms == 50.5 and t.p10_ms == 11.0 and t.p90_ms == 90.0 and t.trials == 100
    assert t.spread == pytest.approx((90 - 11) / 50.5)


def test_cpu_clock_ignores_a_patched_perf_counter(monkeypatch):
    monkeypatch.setattr(time, "perf_counter_ns", lambda: 0)
    elapsed, _, out = CpuClock().time(lambda: (time.sleep(0.02), 5)[1], [])
    assert out == 5 and elapsed >= 15.0


def test_time_models_gives_fresh_copies_and_sees_every_output():
    seen = []
    pointers = set()
    original = [torch.ones(4)]

    def model(x):
        pointers.add(x.data_ptr())
        assert x is not original[0]
        return x * 2

    s = HarnessSettings(warmup=1, timing_trials=6, min_timing_trials=6, timing_budget_s=10)
    timings = time_models({"a": model, "b": model}, [original], CpuClock(), s,
                          lambda name, i, out: seen.append((name, i, float(out.sum()))))
    assert timings["a"].trials == timings["b"].trials == 6
    assert len(seen) == 2 * (1 + 6) and all(v == 8.0 for _, _, v in seen)
    assert original[0].data_ptr() not in pointers
    assert clone_inputs([original[0], 3])[1] == 3


class _IssueTimedClock(CpuClock):
    """The host clock, also timing each call's issue as CudaClock does for its floor."""

    issue_calls = 4


def test_the_issue_time_floor_alternates_the_models_and_binds_every_sample():
    order = []

    def fast(x):
        return x + 1

    def slow_to_issue(x):
        time.sleep(0.002)  # e.g. Python overhead before a short kernel
        return x + 1

    s = HarnessSettings(warmup=1, timing_trials=4, min_timing_trials=4, timing_budget_s=10)
    timings = time_models({"fast": fast, "slow": slow_to_issue}, [[torch.ones(4)]], _IssueTimedClock(), s,
                          lambda name, i, out: order.append(name))
    issue_phase = order[-2 * _IssueTimedClock.issue_calls:]
    assert issue_phase == ["fast", "slow", "slow", "fast", "fast", "slow", "slow", "fast"]
    assert timings["slow"].p10_ms >= 2.0 and timings["fast"].median_ms < 2.0


class _FlushCountingClock(_IssueTimedClock):
    """Records what the judge asks of its clock, in order."""

    def __init__(self) -> None:
        self.steps: list[str] = []

    def prepare(self) -> None:
        self.steps.append("flush")

    def time(self, fn, args):
        self.steps.append("timed")
        return super().time(fn, args)

    def issue_ms(self, fn, args):
        self.steps.append("issued")
        return 0.0, fn(*args)


def test_every_call_the_judge_makes_starts_behind_a_flush():
    clock = _FlushCountingClock()
    s = HarnessSettings(warmup=2, timing_trials=3, min_timing_trials=3, timing_budget_s=10)
    time_models({"a": lambda x: x + 1, "b": lambda x: x * 2}, [[torch.ones(4)]], clock, s)
    calls = [i for i, step in enumerate(clock.steps) if step != "flush"]
    assert len(calls) == 2 * (2 + 3 + _IssueTimedClock.issue_calls)
    assert all(clock.steps[i - 1] == "flush" for i in calls)


def test_worker_environment_drops_credentials_and_keeps_toolchain():
    env = worker_environment({
        "PATH": "/usr/bin", "OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "a", "HF_TOKEN": "h",
        "AWS_SECRET_ACCESS_KEY": "s", "GITHUB_TOKEN": "g", "CUDA_VISIBLE_DEVICES": "0",
        "TORCH_CUDA_ARCH_LIST": "9.0", "KERNELPRO_LLM__API_KEY": "k", "CUDA_AUTH_TOKEN": "t",
        "NCCL_NVLS_ENABLE": "0", "RANDOM_VAR": "r", "KERNELPRO_COMPILE__CACHE_DIR": "/cache",
    })
    assert env["PATH"] == "/usr/bin" and env["CUDA_VISIBLE_DEVICES"] == "0" and env["NCCL_NVLS_ENABLE"] == "0"
    assert env["TORCH_CUDA_ARCH_LIST"] == "9.0" and env["KERNELPRO_COMPILE__CACHE_DIR"] == "/cache"
    for gone in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN",
                 "KERNELPRO_LLM__API_KEY", "CUDA_AUTH_TOKEN", "RANDOM_VAR"):
        assert gone not in env
    assert env["PYTHONPATH"].split(":")[0] == str(PACKAGE_ROOT)
