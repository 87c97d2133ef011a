"""Patterns of real LLM-written candidates on a GPU: legitimate streams, graph capture and handlers pass; work left
on a side stream is rejected; ghost kernels, reused outputs, constant problems and times below the memory floor
are reported."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from kernelpro.harness.judge import judge
from kernelpro.problem import parse_problem
from tests.conftest import candidate, problem

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]


def guards(result, reason: str) -> list[tuple[str, str]]:
    return [(g.severity, g.source) for g in result.guards if g.reason == reason]


@pytest.mark.parametrize("name", ["honest_joined_stream", "honest_graph_capture", "honest_unused_handler",
                                  "honest_gc_collect"])
def test_joined_side_streams_and_documented_graph_capture_pass(name, settings):
    result = judge(problem("scale_relu"), candidate(name), device="cuda", settings=settings)
    assert result.status == "ok", result.message
    assert not [g for g in result.guards if g.severity == "reject"]
    assert guards(result, "output_reused") == []  # the graph candidate returns a copy of its static output


def test_work_the_callers_stream_does_not_wait_for_is_rejected_with_its_lateness(settings):
    result = judge(problem("scale_relu"), candidate("cheat_extra_stream"), device="cuda", settings=settings)
    assert (result.status, result.reason) == ("rejected", "extra_stream"), result.message
    assert "still running" in result.message and "wait_stream" in result.message


@pytest.mark.gpu_exclusive
def test_the_clock_still_times_a_joined_side_stream():
    from kernelpro.config import HarnessSettings
    from kernelpro.harness.timing.clocks import make_clock

    clock = make_clock(torch.device("cuda"), HarnessSettings())
    side = torch.cuda.Stream()

    def joined():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            torch.cuda._sleep(20_000_000)
        torch.cuda.current_stream().wait_stream(side)

    clock.prepare()
    elapsed_ms, _, _ = clock.time(joined, [])
    assert elapsed_ms > 1.0  # the side stream's sleep is inside the caller's span


def test_the_trace_tells_joined_from_unjoined_side_streams():
    from kernelpro.harness.guards.call_trace import trace_call

    side = torch.cuda.Stream()

    def call(join: bool):
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            torch.cuda._sleep(5_000_000)
        if join:
            torch.cuda.current_stream().wait_stream(side)

    joined = trace_call(call, [True])
    assert joined.side_streams() and joined.unjoined() == []
    left = trace_call(call, [False])
    assert left.unjoined() and left.current not in {a.stream for a in left.unjoined()}


def test_a_handler_that_falls_back_on_cuda_is_rejected(settings):
    result = judge(problem("scale_relu"), candidate("cheat_try_except_fallback"), device="cuda", settings=settings)
    assert (result.status, result.reason) == ("rejected", "try_except_fallback"), result.message


@pytest.mark.parametrize(("name", "reason"), [
    ("suspect_graph_static_output", "output_reused"), ("suspect_ghost_triton", "ghost_kernel"),
    ("suspect_ghost_kernel", "ghost_kernel"), ("suspect_output_reused", "output_reused"),
])
def test_suspect_candidates_pass_with_their_warning_on_cuda(name, reason, settings):
    result = judge(problem("scale_relu"), candidate(name), device="cuda", settings=settings)
    assert result.status == "ok", result.message
    assert guards(result, reason) == [("warn", "dynamic")]


@pytest.mark.parametrize("name", ["honest_cuda_scale_relu", "honest_cubin_scale_relu", "honest_triton_scale_relu",
                                  "honest_load_inline_scale_relu", pytest.param("honest_cute_scale_relu", marks=(
                                      pytest.mark.skipif(importlib.util.find_spec("cutlass") is None,
                                                         reason="the CuTe DSL is not installed")))])
def test_kernels_that_run_are_no_ghosts(name, settings):
    settings.harness.timeout_s = 300  # a cold load_inline build takes about a minute
    result = judge(problem("scale_relu"), candidate(name), device="cuda", settings=settings)
    assert result.status == "ok", result.message
    assert guards(result, "ghost_kernel") == [] and guards(result, "output_reused") == []


def test_a_constant_problem_on_cuda(settings):
    result = judge(problem("constant_gelu"), candidate("suspect_constant_zeros"), device="cuda", settings=settings)
    assert result.status == "ok", result.message
    assert [f.reason for f in result.problem_findings] == ["constant_output"]
    assert guards(result, "output_reused") == [("warn", "dynamic")]


SKIPS_MOST = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Reads one column of a 512 MiB input: the input's bytes put a floor far above what the work takes."""

    def forward(self, x):
        return x[:, :1] * 2


def get_inputs():
    return [torch.randn(1 << 17, 1 << 10)]


def get_init_inputs():
    return []
'''

SAME_WORK = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x[:, :1] + x[:, :1]
'''


@pytest.mark.gpu_exclusive
def test_a_candidate_faster_than_its_inputs_can_be_read_is_warned(settings):
    result = judge(parse_problem(SKIPS_MOST, name="skips_most"), SAME_WORK, device="cuda", settings=settings)
    assert result.status == "ok", result.message
    assert guards(result, "below_memory_floor") == [("warn", "dynamic")]


@pytest.mark.gpu_exclusive
def test_a_memory_bound_candidate_at_full_work_is_above_the_floor(settings):
    big = problem("scale_relu").source.replace("torch.randn(64, 128)", "torch.randn(1 << 14, 1 << 12)")
    result = judge(parse_problem(big, name="scale_relu_big"), candidate("honest_scale_relu"), device="cuda",
                   settings=settings)
    assert result.status == "ok", result.message
    assert guards(result, "below_memory_floor") == []
