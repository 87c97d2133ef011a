"""CPU timing beside other work: the load is seen, the threads fit the free cores, the verdict says so."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kernelpro.harness import cpu_load
from kernelpro.harness.judge import judge
from tests.conftest import candidate, problem


@pytest.fixture
def busy_cores():
    """Other work on every core this process may use: one spinning process per core."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(cpu_load.usable_cores())]
    yield len(spinners)
    for proc in spinners:
        proc.kill()
        proc.wait()


def test_the_threads_fit_the_cores_other_work_leaves_free():
    cores = cpu_load.usable_cores()
    assert cpu_load.choose_threads(3, None) == 3  # a configured count wins
    assert cpu_load.choose_threads(0, cpu_load.LoadReading(other_cores=0.0, wall_s=0.1)) == cores
    assert cpu_load.choose_threads(0, cpu_load.LoadReading(other_cores=cores + 4.0, wall_s=0.1)) == 1


def test_other_work_is_seen_and_this_process_is_not(busy_cores):
    reading = cpu_load.sample_load(0.3)
    assert reading is not None and reading.other_cores >= 0.5 * busy_cores


def test_a_verdict_taken_on_a_busy_machine_is_marked_and_not_an_improvement(busy_cores, settings):
    settings.harness.cpu_contention_cores = 0.5
    result = judge(problem("repeated_relu"), candidate("honest_scale_relu"), device="cpu", settings=settings)
    assert result.status == "ok" and result.contended, result.message
    assert not result.improves and "not a speedup to act on" in result.message
    cpu = result.details["cpu"]
    assert cpu["threads"] == 1 and cpu["other_cores_before"] >= 0.5 and cpu["usable_cores"] >= 1
