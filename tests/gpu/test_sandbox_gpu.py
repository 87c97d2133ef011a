"""The sandbox on a real GPU: CUDA works behind every wall, and the attacks that need CUDA are stopped there."""

from __future__ import annotations

import pytest
import torch

from kernelpro.harness.isolation import LANDLOCK_BREAKS_CUDA
from kernelpro.harness.isolation_probe import probe_worker_isolation
from kernelpro.harness.judge import classify, judge, make_job
from kernelpro.harness.sandbox import run_worker
from tests.conftest import candidate, problem

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]


@pytest.mark.parametrize("mode", ["persistent", "fresh"])
@pytest.mark.parametrize("name", ["honest_scale_relu", "honest_cuda_scale_relu", "honest_triton_scale_relu",
                                  "honest_cubin_scale_relu"])
def test_cuda_candidates_pass_behind_every_wall(name, mode, settings):
    """The namespaces and the audit hook leave the driver, NVRTC, nvcc and Triton working. Landlock is left out of
    CUDA workers: inside it the driver fails to initialise (error 304 on an H200, Linux 6.18)."""
    settings.harness.worker_mode = mode
    result = judge(problem("scale_relu"), candidate(name), device="cuda", settings=settings)
    assert result.status == "ok", result.message
    isolation = result.details["isolation"]
    probed = [wall for wall in probe_worker_isolation()["applied"] if not wall.startswith("landlock")]
    assert isolation["applied"] == probed
    assert isolation["missing"].get("landlock") == LANDLOCK_BREAKS_CUDA
    assert result.candidate.method.startswith("cuda events")


@pytest.mark.parametrize(("name", "reason"), [
    ("cheat_proc_environ_hidden", "process_snooping"),
    ("cheat_loopback_hidden", "network_access"),
    ("cheat_gc_expected", "judge_patch"),
    ("cheat_frame_walk", "judge_patch"),
    ("cheat_self_mem", "self_modification"),
    ("cheat_ptrace", "process_snooping"),
])
def test_escapes_are_stopped_on_cuda(name, reason, settings, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-gpu-test-SECRET")
    result = judge(problem("scale_relu"), candidate(name), device="cuda", settings=settings)
    assert (result.status, result.reason) == ("rejected", reason), result.message
    assert "sk-gpu-test-SECRET" not in result.model_dump_json()


def test_expected_outputs_are_not_found_through_gc_on_cuda(settings):
    """Past the static rules, the audit hook alone: the walk over live objects is refused."""
    job = make_job(problem("scale_relu"), candidate("cheat_gc_expected"), "cuda", settings)
    result = classify(run_worker(job, settings.harness), settings)
    assert (result.status, result.reason) == ("rejected", "judge_patch"), result.message


@pytest.mark.parametrize("mode", ["persistent", "fresh"])
def test_freed_gpu_memory_does_not_pass_for_an_output_in_timed_calls(mode, settings):
    """Uninitialised memory during timing, where the reference's last output may lie freed."""
    settings.harness.worker_mode = mode
    result = judge(problem("scale_relu"), candidate("cheat_freed_memory_timed"), device="cuda", settings=settings)
    assert result.status in ("rejected", "incorrect"), result.message
    assert result.speedup is None
