"""The sandbox on a real GPU: CUDA works behind every wall, and the attacks that need CUDA are stopped there."""

from __future__ import annotations

import pytest
import torch

from kernelpro.harness.isolation.probe import probe_worker_isolation
from kernelpro.harness.isolation.walls import LANDLOCK_BREAKS_CUDA
from kernelpro.harness.isolation.worker_walls import OWN_ROOT
from kernelpro.harness.judge import classify, judge, make_job
from kernelpro.harness.worker.sandbox import run_worker
from tests.conftest import candidate, problem

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]
# What Landlock gives a CPU worker and a CUDA worker goes without.
LANDLOCK_WALLS = {"writes only in its own directory", "runs only the compilers and Python"}


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
    probed = [wall for wall in probe_worker_isolation()["applied"] if wall not in LANDLOCK_WALLS
              and not wall.startswith("landlock")]
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


@pytest.mark.parametrize("mode", ["persistent", "fresh"])
def test_a_cuda_worker_has_a_root_of_its_own_and_no_unix_socket(mode, settings):
    """Where Landlock cannot be used, the root of its own is the write wall: CUDA, NVRTC and Triton start in it,
    the seccomp filter leaves no Unix socket, and nothing of the caller's directory or HOME is there."""
    settings.harness.worker_mode = mode
    result = judge(problem("scale_relu"), candidate("honest_triton_scale_relu"), device="cuda", settings=settings)
    assert result.status == "ok", result.message
    assert {OWN_ROOT, "no unix sockets", "no capabilities"} <= set(result.details["isolation"]["applied"])


@pytest.mark.parametrize(("name", "reason"), [
    ("cheat_unix_socket_hidden", "network_access"),
    ("cheat_spawn_shell_hidden", "background_process"),
])
def test_unix_sockets_and_shells_are_refused_on_cuda(name, reason, settings):
    job = make_job(problem("scale_relu"), candidate(name), "cuda", settings)
    result = classify(run_worker(job, settings.harness), settings)
    assert (result.status, result.reason) == ("rejected", reason), result.message
    assert "kernelpro-shell-ran" not in result.worker_output


def test_the_callers_directory_is_out_of_reach_on_cuda(settings, tmp_path, monkeypatch):
    caller = tmp_path / "project"
    caller.mkdir()
    (caller / ".env").write_text("OPENAI_API_KEY=sk-gpu-test-SECRET\n")
    monkeypatch.chdir(caller)
    source = candidate("cheat_plant_config").replace("TARGET_DIRS = []", f"TARGET_DIRS = {[str(caller)]!r}")
    result = judge(problem("scale_relu"), source, device="cuda", settings=settings)
    assert result.status == "incorrect", result.message
    assert not (caller / "kernelpro.toml").exists()
    assert "sk-gpu-test-SECRET" not in result.model_dump_json()
