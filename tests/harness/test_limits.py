"""Limits that fit the environment: an inherited ``ulimit -v``, and a wall-time limit fitted to the problem."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelpro.config import HarnessSettings
from kernelpro.harness.deadline import Deadline, planned_calls
from kernelpro.harness.judge import judge
from tests.conftest import DATA, candidate, problem
from tests.support import session_home

ROOT = Path(__file__).resolve().parents[2]
INHERITED_AS = 4 << 30  # far below what the worker asks for by default (its size plus 16 GB)

JUDGE_UNDER_LIMIT = textwrap.dedent('''
    import json, resource, sys
    from pathlib import Path

    from kernelpro.config import Settings
    from kernelpro.harness.judge import judge
    from kernelpro.problem import load_problem

    data, mode = Path(sys.argv[1]), sys.argv[2]
    settings = Settings()
    settings.harness.worker_mode = mode
    settings.harness.timing_budget_s, settings.harness.timing_trials, settings.harness.min_timing_trials = 0.5, 10, 5
    problem = load_problem(data / "problems" / "scale_relu.py")
    verdicts = {}
    for name in ("honest_scale_relu", "fault_memory_bomb"):
        result = judge(problem, (data / "candidates" / f"{name}.py").read_text(), device="cpu", settings=settings)
        verdicts[name] = [result.status, result.reason, result.message]
    print(json.dumps({"hard": resource.getrlimit(resource.RLIMIT_AS)[1], "verdicts": verdicts}))
''')


def _inherit_address_space_limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (INHERITED_AS, INHERITED_AS))


@pytest.mark.parametrize("mode", ["fresh", "persistent"])
def test_verdicts_are_right_under_an_inherited_ulimit_v(mode, tmp_path):
    """The judge started the way a shell with ``ulimit -v`` starts it: every worker inherits the hard limit, and so
    does every process under the referee (its shared memory sized to fit)."""
    proc = subprocess.run([sys.executable, "-c", JUDGE_UNDER_LIMIT, str(DATA), mode], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, preexec_fn=_inherit_address_space_limit,
                          env=session_home.environment(PYTHONPATH=str(ROOT), KERNELPRO_HARNESS__REFEREE="true",
                                                        KERNELPRO_HARNESS__REFEREE_TIMER_FLOOR_MS="1.0"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["hard"] == INHERITED_AS
    assert found["verdicts"]["honest_scale_relu"][:2] == ["ok", None], found
    assert "the referee's" in found["verdicts"]["honest_scale_relu"][2]
    assert found["verdicts"]["fault_memory_bomb"][:2] == ["runtime_error", "memory_limit"], found


def test_a_hang_on_a_tiny_problem_ends_after_the_floor(settings):
    """The cap stays far off; the limit fitted to the reference's speed is what stops the loop."""
    settings.harness.timeout_s = 120
    settings.harness.timeout_floor_s = 2
    result = judge(problem("scale_relu"), candidate("fault_infinite_loop"), device="cpu", settings=settings)
    assert (result.status, result.reason) == ("timeout", "wall_time"), result.message
    assert "of the candidate's first call" in result.message and "correctness trial 1" in result.message
    assert result.elapsed_s < settings.harness.timeout_s / 2


def _deadline(**settings: float) -> Deadline:
    return Deadline(HarnessSettings(**settings), started=0.0)


def test_until_the_first_call_only_the_cap_applies():
    deadline = _deadline(timeout_s=300, timeout_floor_s=30)
    deadline.observe({"phase": "load_candidate"}, now=1.0)
    deadline.observe({"reference_call_s": 0.001}, now=1.0)
    deadline.observe({"phase": "init_candidate"}, now=100.0)  # compiling for a long time is fine
    assert not deadline.expired(now=299.0) and deadline.expired(now=301.0)
    assert "harness.timeout_s" in deadline.describe()


def test_a_fast_reference_gets_the_floor_beyond_timings_own_cap():
    deadline = _deadline(timeout_s=300, timeout_floor_s=30, timeout_reference_factor=10, timing_budget_s=20)
    deadline.observe({"reference_call_s": 0.001}, now=1.0)
    deadline.observe({"phase": "correctness trial 1/5"}, now=60.0)
    deadline.observe({"phase": "correctness trial 2/5"}, now=61.0)  # later phases do not move it
    # a hang on a millisecond problem ends within a minute of the candidate's first call
    assert not deadline.expired(now=109.0) and deadline.expired(now=111.0)
    assert "1 ms a call" in deadline.describe()


def test_a_slow_reference_gets_its_time_up_to_the_cap():
    settings = HarnessSettings(timeout_s=300, timeout_floor_s=30, timeout_reference_factor=10)
    calls = planned_calls(settings)
    deadline = Deadline(settings, started=0.0)
    deadline.observe({"reference_call_s": 0.02}, now=1.0)
    deadline.observe({"phase": "correctness trial 1/5"}, now=10.0)
    fitted = 10 * 0.02 * calls
    assert 30 < fitted < 290
    assert not deadline.expired(now=10.0 + fitted - 1) and deadline.expired(now=10.0 + fitted + 1)
    slow = Deadline(settings, started=0.0)
    slow.observe({"reference_call_s": 2.0}, now=1.0)
    slow.observe({"phase": "correctness trial 1/5"}, now=10.0)
    assert not slow.expired(now=299.0) and slow.expired(now=301.0)  # the cap, counted from the start


def test_waiting_for_the_device_alone_mid_job_moves_both_limits_on():
    settings = HarnessSettings(timeout_s=300, timeout_floor_s=30, timeout_reference_factor=10, timing_budget_s=20)
    deadline = Deadline(settings, started=0.0)
    deadline.observe({"reference_call_s": 0.001}, now=1.0)
    deadline.observe({"phase": "correctness trial 1/5"}, now=60.0)
    deadline.pause(45.0)  # the judge held the job back while another lane timed
    assert not deadline.expired(now=154.0) and deadline.expired(now=156.0)
    capped = Deadline(settings, started=0.0)
    capped.pause(45.0)
    assert not capped.expired(now=344.0) and capped.expired(now=346.0)


SLOW_COMPILE = textwrap.dedent('''
    import time

    import torch
    import torch.nn as nn


    def slow_backend(graph, example_inputs):
        time.sleep({delay})  # a compiler that takes its time, as max-autotune does on its first call
        return graph.forward


    class ModelNew(nn.Module):
        def __init__(self, scale):
            super().__init__()
            self.scale = scale
            self.fused = torch.compile(self.scaled_relu, backend=slow_backend)

        def scaled_relu(self, x):
            return torch.relu(x) * self.scale

        def forward(self, x):
            {body}
''')


def test_compiling_on_the_first_call_is_not_counted_as_hanging(settings):
    """A lazy compile that outlasts the fitted limit passes; the same wait in the call itself is a hang."""
    settings.harness.timeout_s = 120
    settings.harness.timeout_floor_s = 1
    settings.harness.timing_budget_s, settings.harness.timing_trials, settings.harness.min_timing_trials = 0.2, 5, 3
    compiled = SLOW_COMPILE.format(delay=4, body="return self.fused(x)")
    result = judge(problem("scale_relu"), compiled, device="cpu", settings=settings)
    assert (result.status, result.correct) == ("ok", True), result.message
    hung = SLOW_COMPILE.format(delay=4, body="time.sleep(4)\n        return torch.relu(x) * self.scale")
    result = judge(problem("scale_relu"), hung, device="cpu", settings=settings)
    assert (result.status, result.reason) == ("timeout", "wall_time"), result.message


def test_compile_time_moves_the_fitted_limit_up_to_the_cap():
    deadline = _deadline(timeout_s=300, timeout_floor_s=30, timeout_reference_factor=10, timing_budget_s=20)
    deadline.observe({"reference_call_s": 0.001}, now=1.0)
    deadline.observe({"compiling": True}, now=5.0)  # compiling before the first call: only the cap applies then
    deadline.observe({"compiling": False}, now=8.0)
    deadline.observe({"phase": "correctness trial 1/5"}, now=60.0)
    deadline.observe({"compiling": True}, now=61.0)
    assert not deadline.expired(now=150.0)  # still compiling, past the fitted 110 s
    deadline.observe({"compiling": False}, now=101.0)  # 40 s of compiling
    assert not deadline.expired(now=149.0) and deadline.expired(now=151.0)
    assert "40 s of compiling not counted" in deadline.describe(now=151.0)
    deadline.observe({"compiling": True}, now=140.0)
    assert not deadline.expired(now=299.0) and deadline.expired(now=301.0)  # a compile that never ends: the cap
