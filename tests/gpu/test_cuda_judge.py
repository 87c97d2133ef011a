"""The judge on a real GPU: the CUDA timing path and the hacks that only exist on CUDA."""

from __future__ import annotations

import pytest
import torch

from kernelpro.harness.judge import classify, judge, make_job
from kernelpro.harness.pipeline import Pipeline
from kernelpro.harness.worker.sandbox import run_worker
from tests.conftest import candidate, problem

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]


def dynamic(name: str, settings, problem_name: str = "scale_relu"):
    """Judge past the static checks, so the run-time guard alone must catch the hack."""
    job = make_job(problem(problem_name), candidate(name), "cuda", settings)
    return classify(run_worker(job, settings.harness), settings)


@pytest.mark.parametrize(("name", "problem_name"), [
    ("honest_scale_relu", "scale_relu"), ("honest_triton_scale_relu", "scale_relu"),
    ("honest_cuda_scale_relu", "scale_relu"),  # an NVRTC kernel through kernelpro.runtime
    ("honest_matmul_relu", "matmul_relu"), ("honest_softmax", "softmax_wide"),
    ("honest_split_stats", "split_stats"), ("honest_flatten_view", "flatten_view"),
    ("honest_inplace_relu", "inplace_relu"),
    ("honest_dropout_alike", "dropout_softmax"),  # CUDA's dropout draws alike under the same seed
])
def test_honest_candidates_pass_on_cuda(name, problem_name, settings):
    result = judge(problem(problem_name), candidate(name), device="cuda", settings=settings)
    assert result.status == "ok", result.message
    assert result.candidate.method.startswith("cuda events")
    assert result.candidate.median_ms > 0 and result.reference.median_ms > 0
    assert result.candidate.host_median_ms >= result.candidate.median_ms * 0.5


def test_a_candidate_drawing_its_own_random_numbers_is_incorrect_on_cuda_and_told_why(settings):
    result = judge(problem("dropout_softmax"), candidate("fault_dropout_own_draws"), device="cuda",
                   settings=settings)
    assert (result.status, result.reason) == ("incorrect", "value_mismatch")
    assert "the reference draws random numbers" in result.message


def test_a_job_shares_the_gpu_until_it_times_on_cuda(settings, tmp_path):
    settings.harness.device_lock_dir, settings.harness.share_until_timing = tmp_path, True
    with Pipeline("cuda", settings) as pipeline:
        [result] = pipeline.judge([(problem("matmul_relu"), candidate("honest_matmul_relu"))])
    assert result.status == "ok", result.message
    turn = result.details["device_turn"]
    assert turn["shared_s"] > 0 and turn["alone_s"] > 0 and "waiting for the device" in result.details["phase_s"]


def test_a_max_autotune_compile_lets_the_gpu_go_and_takes_it_alone_for_each_benchmark(settings, tmp_path):
    from kernelpro.recipes.catalogue import recipes_for

    settings.harness.device_lock_dir, settings.harness.share_until_timing = tmp_path, True
    matmul_relu = problem("matmul_relu")
    source = next(r.source for r in recipes_for(matmul_relu, "cuda") if r.name == "compile_max_autotune_no_cudagraphs")
    with Pipeline("cuda", settings) as pipeline:
        [result] = pipeline.judge([(matmul_relu, source)])
    assert result.status == "ok", result.message
    turn = result.details["device_turn"]
    assert turn["released_s"] > 1.0 and turn["alone_s"] > 0
    assert turn["taken_back"] >= 1  # shared again at the compile's end
    assert turn["benchmarks"] > 1 and turn["benchmarking_s"] > 0  # autotuning's benchmarks of the choices, alone


LARGE_OUTPUT = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(64 * 1024 * 1024)]


def get_init_inputs():
    return []
'''


def test_timed_checks_of_a_large_output_sample_it_and_keep_earlier_rounds_small_on_cuda(settings, tmp_path):
    """256 MiB outputs: sampled, the timing phase holds at least two earlier rounds' outputs less (512 MiB) than
    with every element checked and every kept output whole."""
    from kernelpro.problem import load_problem

    path = tmp_path / "sigmoid_large.py"
    path.write_text(LARGE_OUTPUT)
    large = load_problem(path)
    source = large.source.replace("class Model(nn.Module):", "class ModelNew(nn.Module):")
    settings.harness.min_timing_trials = settings.harness.timing_trials = 8
    peaks = {}
    for elements in (0, 1 << 20):
        settings.harness.timed_check_elements = elements
        result = judge(large, source, device="cuda", settings=settings)
        assert result.status == "ok", result.message
        timing = result.details["timing"]
        assert (timing["outputs_sampled"] > 0) is (elements > 0)
        peaks[elements] = timing["gpu_peak_mb"]
    assert peaks[1 << 20] <= peaks[0] - 512, peaks


def test_side_stream_work_is_rejected(settings):
    result = dynamic("cheat_extra_stream", settings)
    assert (result.status, result.reason) == ("rejected", "extra_stream"), result.message


def test_stale_allocator_memory_is_rejected(settings):
    result = judge(problem("scale_relu"), candidate("cheat_stale_memory"), device="cuda", settings=settings)
    assert (result.status, result.reason) == ("rejected", "stale_memory"), result.message


def test_l2_persistence_is_rejected(settings):
    result = dynamic("cheat_l2_persistence", settings)
    assert (result.status, result.reason) == ("rejected", "l2_persistence"), result.message


def test_patched_cuda_timers_are_rejected(settings):
    result = dynamic("cheat_sync_patch", settings)
    assert (result.status, result.reason) == ("rejected", "timer_patch"), result.message


def test_illegal_address_is_a_cuda_error_and_the_judge_carries_on(settings):
    crashed = judge(problem("scale_relu"), candidate("fault_illegal_address"), device="cuda", settings=settings)
    assert (crashed.status, crashed.reason) == ("runtime_error", "cuda_error"), crashed.message
    after = judge(problem("scale_relu"), candidate("honest_triton_scale_relu"), device="cuda", settings=settings)
    assert after.status == "ok", after.message


@pytest.mark.gpu_exclusive
def test_cuda_clock_counts_work_left_on_another_stream():
    """Work left running on another stream is counted up to the device's finish."""
    from kernelpro.config import HarnessSettings
    from kernelpro.harness.timing.clocks import make_clock

    clock = make_clock(torch.device("cuda"), HarnessSettings())
    side = torch.cuda.Stream()
    cycles = 50_000_000  # about 25 ms at 2 GHz

    def sneaky():
        with torch.cuda.stream(side):
            torch.cuda._sleep(cycles)

    clock.prepare()
    elapsed_ms, host_ms, _ = clock.time(sneaky, [])
    import pynvml

    pynvml.nvmlInit()
    max_hz = pynvml.nvmlDeviceGetMaxClockInfo(pynvml.nvmlDeviceGetHandleByIndex(0), pynvml.NVML_CLOCK_SM) * 1e6
    assert elapsed_ms >= 0.9 * cycles / max_hz * 1e3  # the sleep cannot finish faster than at the top clock
    assert host_ms >= elapsed_ms * 0.9


@pytest.mark.gpu_exclusive
def test_the_hosts_wake_up_after_a_long_call_is_not_side_stream_work():
    """After a 10 ms kernel the host wakes 0.1-0.2 ms late; counted from the end event, that read as work left on
    another stream and stretched half the samples. The span must stay the call's own."""
    from kernelpro.config import HarnessSettings
    from kernelpro.harness.timing.clocks import _event_elapsed, make_clock

    clock = make_clock(torch.device("cuda"), HarnessSettings())
    stretched = 0
    for _ in range(20):
        clock.prepare()
        elapsed_ms, _, _ = clock.time(lambda: torch.cuda._sleep(20_000_000), [])
        own_ms = _event_elapsed(clock._start, clock._end) - clock.overhead_ms
        stretched += elapsed_ms > own_ms + 1e-6
    assert stretched <= 2


@pytest.mark.gpu_exclusive
def test_cuda_clock_takes_off_its_own_span():
    """Two events with nothing between them span about a microsecond; no call is charged for it."""
    from kernelpro.config import HarnessSettings
    from kernelpro.harness.timing.clocks import make_clock

    clock = make_clock(torch.device("cuda"), HarnessSettings())
    assert 0.0 < clock.overhead_ms < 0.01
    nothing = []
    for _ in range(20):
        clock.prepare()
        nothing.append(clock.time(lambda: None, [])[0])
    assert sorted(nothing)[10] < 0.5e-3
    x = torch.ones(1, device="cuda")
    x + 1  # the kernel's module loads on its first launch
    clock.prepare()
    one_kernel_ms = clock.time(lambda: x + 1, [])[0]
    assert 0.0 < one_kernel_ms < 0.05


@pytest.mark.gpu_exclusive
def test_persisting_l2_is_reset_before_each_trial():
    import ctypes

    from kernelpro.config import HarnessSettings
    from kernelpro.harness import cuda_driver
    from kernelpro.harness.timing.clocks import make_clock

    torch.empty(1, device="cuda")

    lib = ctypes.CDLL("libcuda.so.1")
    assert lib.cuCtxSetLimit(cuda_driver.CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(8 << 20)) == 0
    assert cuda_driver.persisting_l2_limit() > 0
    make_clock(torch.device("cuda"), HarnessSettings()).prepare()
    assert cuda_driver.persisting_l2_limit() == 0


@pytest.mark.gpu_exclusive
def test_host_work_hidden_behind_the_flush_still_counts():
    """The call is queued behind the L2 flush, but its host time from an idle GPU is a floor on its cost."""
    import time

    from kernelpro.config import HarnessSettings
    from kernelpro.harness.timing.clocks import make_clock
    from kernelpro.harness.timing.rounds import time_models

    settings = HarnessSettings(timing_trials=5, min_timing_trials=5, warmup=1)
    x = torch.ones(1, device="cuda")

    def host_bound():
        time.sleep(0.005)  # e.g. an answer computed on the CPU, then one tiny kernel
        return x + 1

    timing = time_models({"host_bound": host_bound}, [[]], make_clock(torch.device("cuda"), settings), settings)
    assert timing["host_bound"].median_ms >= 5.0


NUMPY_INPUTS = '''import numpy as np
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    seed = int(torch.randint(0, 1 << 30, (1,)).numpy()[0])  # .numpy() fails on a CUDA tensor
    return [torch.from_numpy(np.random.default_rng(seed).standard_normal((256, 256)).astype("float32"))]


def get_init_inputs():
    return []
'''

DOUBLING = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x + x
'''


def test_inputs_that_need_the_cpu_are_drawn_there(settings):
    from kernelpro.problem import parse_problem

    result = judge(parse_problem(NUMPY_INPUTS, name="numpy_inputs"), DOUBLING, device="cuda", settings=settings)
    assert result.status == "ok", result.message
    assert result.details["phase_s"]["timing"] > 0
