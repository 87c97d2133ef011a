"""Timing arithmetic, the clocks' immunity to patching, and the worker's environment."""

from __future__ import annotations

import gc
import time

import pytest
import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness.timing.clocks import CpuClock
from kernelpro.harness.timing.rounds import (
    clone_inputs,
    refill_inputs,
    run_timing,
    shares_storage,
    summarise,
    time_models,
)
from kernelpro.harness.worker.sandbox import PACKAGE_ROOT, worker_environment


class _ScriptedClock(CpuClock):
    """The host clock's protocol with scripted times: each call reads the next value of ``times``."""

    def __init__(self, times) -> None:
        self.times = iter(times)

    def time(self, fn, args):
        out = fn(*args)
        elapsed = next(self.times)
        return elapsed, elapsed, out


def _rounds(clock, settings, models=None):
    models = models or {"reference": lambda x: x + 1, "candidate": lambda x: x + 1}
    return run_timing(models, lambda i: [torch.full((4,), float(i))], clock, settings)


def test_timing_stops_once_the_interval_is_narrow_enough():
    s = HarnessSettings(warmup=1, timing_trials=400, min_timing_trials=20, timing_budget_s=60, speedup_ci_width=0.02)
    steady = _rounds(_ScriptedClock(iter(lambda: 1.0, None)), s)
    assert steady.stopped_by == "interval" and steady.rounds == 20


def test_timing_runs_to_its_most_rounds_when_the_spread_stays_wide():
    import random

    noise = random.Random(0)
    s = HarnessSettings(warmup=1, timing_trials=40, min_timing_trials=20, timing_budget_s=60, speedup_ci_width=0.001)
    noisy = _rounds(_ScriptedClock(iter(lambda: noise.uniform(1.0, 2.0), None)), s)
    assert noisy.stopped_by == "max_trials" and noisy.rounds == 40
    assert len(noisy.costs["reference"]) == len(noisy.costs["candidate"]) == 40


def test_timing_stops_early_once_a_candidates_call_is_settled_and_runs_on_while_it_is_not():
    import random

    def reference(x):
        return x + 1

    def candidate(x):
        return x + 1

    class Noisy(CpuClock):
        """The reference ``scale`` times the candidate's cost, both with 1 % of noise."""

        def __init__(self, scale: float) -> None:
            self.scale, self.noise = scale, random.Random(0)

        def time(self, fn, args):
            elapsed = self.noise.uniform(1.0, 1.01) * (self.scale if fn is reference else 1.0)
            return elapsed, elapsed, fn(*args)

    def rounds(scale, settings):
        return _rounds(Noisy(scale), settings, {"reference": reference, "candidate": candidate})

    s = HarnessSettings(warmup=1, timing_trials=60, min_timing_trials=20, timing_budget_s=60, speedup_ci_width=1e-4,
                        settled_ci_width=0.05)
    same = rounds(1.0, s)  # about 1.00x: its interval's top is below 1 + min_effect
    assert same.stopped_by == "settled_call" and same.rounds == 20
    faster = rounds(1.2, s)  # 1.2x: its interval's bottom is above 1 + min_effect, faster beyond doubt
    assert faster.stopped_by == "settled_call" and faster.rounds == 20

    class OnTheLine(CpuClock):
        """The reference 1.00-1.04 times the candidate's cost: about 1.02x, with an interval narrower than
        ``settled_ci_width`` that straddles 1 + min_effect."""

        noise = random.Random(1)

        def time(self, fn, args):
            elapsed = self.noise.uniform(1.0, 1.04) if fn is reference else 1.0
            return elapsed, elapsed, fn(*args)

    on_the_line = _rounds(OnTheLine(), s, {"reference": reference, "candidate": candidate})
    assert on_the_line.stopped_by == "max_trials" and on_the_line.rounds == 60  # more rounds may decide it
    s.settled_ci_width = None
    assert rounds(1.0, s).stopped_by == "max_trials" and rounds(1.2, s).stopped_by == "max_trials"


def test_timing_stops_at_its_time_cap_after_the_least_rounds():
    s = HarnessSettings(warmup=1, timing_trials=400, min_timing_trials=5, timing_budget_s=0.05,
                        speedup_ci_width=0.0)

    def slow(x):
        time.sleep(0.005)
        return x + 1

    capped = _rounds(CpuClock(), s, {"reference": slow, "candidate": slow})
    assert capped.stopped_by == "time_cap" and 5 <= capped.rounds < 400


def test_every_round_draws_inputs_of_its_own():
    seen: dict[str, list[float]] = {"reference": [], "candidate": []}
    indices = []

    def model(name):
        def forward(x):
            seen[name].append(float(x[0]))
            return x * 2
        return forward

    s = HarnessSettings(warmup=2, timing_trials=12, min_timing_trials=12, timing_budget_s=60)
    run = run_timing({"reference": model("reference"), "candidate": model("candidate")},
                     lambda i: [torch.full((4,), float(i))], CpuClock(), s,
                     lambda name, i, out: indices.append((name, i, float(out[0]))))
    assert run.rounds == 12
    # each model saw every input set once: no value repeats, and both saw the same sets
    assert len(set(seen["candidate"])) == len(seen["candidate"]) == 2 + 12
    assert seen["candidate"] == sorted(seen["candidate"]) and set(seen["reference"]) == set(seen["candidate"])
    assert all(value == 2 * i for _, i, value in indices)


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


def test_each_model_is_called_on_one_tensor_refilled_with_every_rounds_values():
    """A memo keyed on a pointer or an id() hits on every call, whatever the allocator does."""
    seen: dict[str, list[tuple[int, int, float]]] = {"reference": [], "candidate": []}

    def model(name):
        def forward(x):
            seen[name].append((id(x), x.data_ptr(), float(x[0])))
            return x * 2
        return forward

    s = HarnessSettings(warmup=1, timing_trials=8, min_timing_trials=8, timing_budget_s=10)
    run_timing({"reference": model("reference"), "candidate": model("candidate")},
               lambda i: [torch.full((4,), float(i))], CpuClock(), s)
    for calls in seen.values():
        assert len({(ident, ptr) for ident, ptr, _ in calls}) == 1
        assert [value for _, _, value in calls] == [float(i) for i in range(1 + 8)]
    assert seen["reference"][0][:2] != seen["candidate"][0][:2]


def test_no_collection_of_the_cyclic_collector_runs_inside_a_timed_call():
    """Each call makes cyclic garbage enough to cross the collector's threshold; the collections must all come
    between calls, where nothing is timed, and the collector is on again afterwards."""
    inside, during, between = [False], [], []

    def on_collect(phase, info):
        if phase == "start":
            (during if inside[0] else between).append(info["generation"])

    def forward(x):
        inside[0] = True
        for _ in range(2000):
            cycle: list = []
            cycle.append(cycle)
        inside[0] = False
        return x + 1

    s = HarnessSettings(warmup=1, timing_trials=6, min_timing_trials=6, timing_budget_s=10)
    gc.callbacks.append(on_collect)
    try:
        run_timing({"reference": forward, "candidate": forward}, lambda i: [torch.full((4,), float(i))],
                   CpuClock(), s)
    finally:
        gc.callbacks.remove(on_collect)
    assert during == [] and between, (during, between)
    assert gc.isenabled()


def test_a_model_returning_its_input_gets_fresh_copies_so_held_outputs_keep_their_values():
    held = []
    s = HarnessSettings(warmup=1, timing_trials=5, min_timing_trials=5, timing_budget_s=10)
    run_timing({"reference": lambda x: x, "candidate": lambda x: x.view(2, 2)},
               lambda i: [torch.full((4,), float(i))], CpuClock(), s,
               lambda name, i, out: held.append((i, out)))
    assert all(bool((out == float(i)).all()) for i, out in held)


def test_refill_falls_back_to_fresh_copies_when_the_shapes_differ():
    kept = [torch.zeros(4), 7]
    same = refill_inputs(kept, [torch.ones(4), 8])
    assert same[0] is kept[0] and same[1] == 8 and float(kept[0].sum()) == 4.0
    other = refill_inputs(kept, [torch.ones(5), 8])
    assert other[0] is not kept[0] and other[0].shape == (5,)
    assert refill_inputs(None, [torch.ones(2)])[0].shape == (2,)
    assert shares_storage((torch.ones(1), {"a": kept[0][1:]}), kept)
    assert not shares_storage([torch.ones(1)], kept)


class _IssueTimedClock(CpuClock):
    """The host clock, also timing each call's issue as CudaClock does for its floor."""

    issue_calls = 4


def test_a_call_slow_to_issue_is_timed_at_its_issue_time_in_every_round():
    order = []

    def fast(x):
        return x + 1

    def slow_to_issue(x):
        # e.g. Python overhead before a short kernel; long enough that a busy machine's hiccup of a few ms
        # cannot halve the one warm-up issue sample against its span (which decides ``host_checked``)
        time.sleep(0.02)
        return x + 1

    s = HarnessSettings(warmup=1, timing_trials=4, min_timing_trials=4, timing_budget_s=10)
    run = run_timing({"fast": fast, "slow": slow_to_issue}, [[torch.ones(4)]], _IssueTimedClock(), s,
                     lambda name, i, out: order.append(name))
    assert run.host_checked and run.rounds == 4
    # warm-up: timed then issued, each in alternating order; then every round the same
    assert order[:4] == ["fast", "slow", "slow", "fast"]
    assert order[4:8] == ["fast", "slow", "slow", "fast"] and order[8:12] == ["slow", "fast", "fast", "slow"]
    assert len(order) == 4 * (1 + 4)
    assert min(run.costs["slow"]) >= 2.0 and run.timings["fast"].median_ms < 2.0
    assert run.timings["slow"].issue_median_ms >= 2.0


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
    # warm-up timed and issued, the rounds, then the issue-time floor (these calls are quick to issue)
    assert len(calls) == 2 * (2 + 2 + 3 + _IssueTimedClock.issue_calls)
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
