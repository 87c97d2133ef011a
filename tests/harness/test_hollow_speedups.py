"""Speedups that mean nothing, through the full judge on the CPU: the candidate passes, and the judge says why its
speedup is hollow (a warning, or a finding about the problem itself)."""

from __future__ import annotations

import pytest

from kernelpro.harness.judge import judge
from tests.conftest import candidate, problem
from tests.harness.verdicts import WARNED, problem_of

ON_CPU = ["suspect_constant_zeros", "suspect_output_reused", "suspect_ghost_kernel"]


@pytest.mark.parametrize("name", ON_CPU)
def test_suspect_candidate_passes_with_its_warning(name, settings):
    if name == "suspect_ghost_kernel":
        pytest.importorskip("cuda.bindings.nvrtc")
    result = judge(problem(problem_of(name)), candidate(name), device="cpu", settings=settings)
    assert result.status == "ok", result.message
    warned = [g for g in result.guards if g.reason == WARNED[name]]
    assert [(g.severity, g.source) for g in warned] == [("warn", "dynamic")]


def test_the_reused_output_message_tells_a_graph_candidate_what_to_do(settings):
    result = judge(problem("scale_relu"), candidate("suspect_output_reused"), device="cpu", settings=settings)
    (reused,) = [g for g in result.guards if g.reason == "output_reused"]
    assert "CUDA-graph candidate should return a copy" in reused.message


def test_a_ghost_kernel_can_be_a_rejection(settings):
    pytest.importorskip("cuda.bindings.nvrtc")
    settings.harness.ghost_kernel_rejects = True
    result = judge(problem("scale_relu"), candidate("suspect_ghost_kernel"), device="cpu", settings=settings)
    assert (result.status, result.reason) == ("rejected", "ghost_kernel"), result.message
    assert "scale_relu" in result.message and result.speedup is None


@pytest.mark.parametrize("name", ["suspect_constant_zeros", "honest_constant_gelu"])
def test_a_constant_problem_is_reported_whatever_the_candidate(name, settings):
    result = judge(problem("constant_gelu"), candidate(name), device="cpu", settings=settings)
    assert result.status == "ok", result.message
    assert [f.reason for f in result.problem_findings] == ["constant_output"]
    assert result.to_json_dict()["problem_findings"][0]["reason"] == "constant_output"


def test_the_problem_check_waits_for_the_candidates_own_checks(settings):
    wrong = candidate("honest_constant_gelu").replace("return torch.nn.functional.gelu(", "return 1 + torch.nn."
                                                                                          "functional.gelu(")
    result = judge(problem("constant_gelu"), wrong, device="cpu", settings=settings, timing=False)
    assert result.status == "incorrect"
    assert result.problem_findings == []  # it runs on memory no candidate call will use, after they all passed


def test_an_input_dependent_problem_has_no_finding_and_honest_code_no_warning(settings):
    result = judge(problem("scale_relu"), candidate("honest_scale_relu"), device="cpu", settings=settings)
    assert result.status == "ok" and result.problem_findings == [] and result.guards == []
