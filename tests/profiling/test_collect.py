"""Profile collection: ncu's command lines, its failure messages, the paths without ncu or a GPU, and (marked gpu)
real ncu runs of a problem, a candidate and a planted program."""

from __future__ import annotations

import dataclasses
import glob
import re
import subprocess
from pathlib import Path

import pytest
import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness.limited_run import run_limited
from kernelpro.profiling import ncu_errors
from kernelpro.profiling.collect import (
    NVTX_RANGE,
    ProfileResult,
    profile_command,
    profile_problem,
    torch_profile_problem,
    with_clocks,
)
from kernelpro.profiling.ncu_command import (
    CLOCK_METRIC,
    STAGE1_METRICS,
    NcuOptions,
    find_ncu,
    import_command,
    ncu_command,
)
from kernelpro.profiling.ncu_csv import read_ncu_csv
from tests.conftest import DATA, candidate, problem

PLANTED_CSV = sorted(glob.glob(str(DATA / "ncu" / "planted" / "*.csv")))
no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")


def _clock_control(cmd: list[str]) -> list[str]:
    return [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--clock-control"]


# -- command lines ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("options", [
    NcuOptions(),
    NcuOptions(stage=2),
    NcuOptions(stage=2, sections=["SpeedOfLight", "MemoryWorkloadAnalysis"], kernel_regex="gemm|relu"),
    NcuOptions(launch_skip=1, launch_count=1, extra_args=["--replay-mode", "application"]),
])
def test_every_command_leaves_the_clocks_alone(options):
    cmd = ncu_command("ncu", ["./prog", "--flag"], Path("/tmp/out/profile"), options, nvtx_range=NVTX_RANGE)
    assert _clock_control(cmd) == ["none"]
    assert cmd[-2:] == ["./prog", "--flag"]  # the target comes last, its own arguments untouched
    assert cmd[cmd.index("--export") + 1] == "/tmp/out/profile"
    assert cmd[cmd.index("--nvtx-include") + 1] == f"{NVTX_RANGE}/" and "--nvtx" in cmd


def test_stage_one_asks_for_the_metric_list_and_stage_two_for_sections_plus_the_clock():
    one = ncu_command("ncu", ["p"], Path("r"), NcuOptions())
    assert one[one.index("--metrics") + 1].split(",") == list(STAGE1_METRICS)
    assert "--set" not in one and "--section" not in one and "--nvtx" not in one
    full = ncu_command("ncu", ["p"], Path("r"), NcuOptions(stage=2))
    assert full[full.index("--set") + 1] == "full"
    assert CLOCK_METRIC in full[full.index("--metrics") + 1]
    picked = ncu_command("ncu", ["p"], Path("r"), NcuOptions(stage=2, sections=["SpeedOfLight", "Occupancy"]))
    assert [picked[i + 1] for i, a in enumerate(picked) if a == "--section"] == ["SpeedOfLight", "Occupancy"]
    assert "--set" not in picked


def test_filters_for_raw_programs():
    cmd = ncu_command("ncu", ["p"], Path("r"), NcuOptions(kernel_regex="planted_", launch_skip=10, launch_count=5))
    assert cmd[cmd.index("-k") + 1] == "regex:planted_"
    assert cmd[cmd.index("--launch-skip") + 1] == "10" and cmd[cmd.index("--launch-count") + 1] == "5"


@pytest.mark.parametrize("extra", [["--clock-control", "base"], ["--clock-control=base"]])
def test_clock_control_cannot_be_overridden(extra):
    with pytest.raises(ValueError, match="clock-control"):
        ncu_command("ncu", ["p"], Path("r"), NcuOptions(extra_args=extra))


def test_import_command_exports_the_raw_page_in_base_units():
    assert import_command("ncu", Path("r.ncu-rep")) == [
        "ncu", "--import", "r.ncu-rep", "--csv", "--page", "raw", "--print-units", "base"]


def test_stage_one_metrics_are_names_ncu_knows_on_an_h200():
    """Each metric is in the `--set full` capture, or is a rollup whose submetrics are (`x.sum` of `x.sum.per_...`)."""
    known = set()
    for path in PLANTED_CSV:
        for kernel in read_ncu_csv(path):
            known |= set(kernel.values) | set(kernel.text)
    unknown = [m for m in STAGE1_METRICS if m not in known and not any(k.startswith(m + ".") for k in known)]
    assert not unknown


# -- ncu's failure output (texts as ncu prints them) ------------------------------------------------------------
PERMISSION = """==PROF== Connected to process 35989 (/usr/bin/python3.10)
==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the \
target device 0. For instructions on enabling permissions and to get more information see \
https://developer.nvidia.com/ERR_NVGPUCTRPERM
==PROF== Disconnected from process 35989
==WARNING== No kernels were profiled.
"""
COUNTERS_BUSY = """==ERROR== Profiling failed because a driver resource was unavailable. Ensure that no other \
tool (like DCGM) is concurrently collecting profiling data. See \
https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html#faq for more details.
==ERROR== Failed to profile "risk_battle_kernel" in process 7508
==PROF== Trying to shutdown target application
==ERROR== An error occurred while trying to profile.
==WARNING== No kernels were profiled.
"""
LIBRARY_NOT_LOADED = """==ERROR== An error was reported by the counter measurement library:
==ERROR== Failed to initialize the profiler: LibraryNotLoaded. Check that a compatible driver library is loaded.
==PROF== Trying to shutdown target application
==ERROR== The application returned an error code (9).
"""
STUB_DRIVER = """==ERROR== Nsight Compute failed to connect to the CUDA driver (stub libcuda.so[.1] on path?).
==ERROR== The application returned an error code (1).
==WARNING== No kernels were profiled.
"""
UNKNOWN_DEVICE_ERROR = """==ERROR== Failed to prepare kernel for profiling
==ERROR== Unknown Error on device 0.
==ERROR== Failed to profile "eccWalkKernel" in process 62
==ERROR== The application returned an error code (9).
"""
CLOCK_LOCK = """==ERROR== An error was reported by the driver

==ERROR== Cannot lock GPU clock frequencies on MIG! Try locking the clocks externally (e.g. using 'nvidia-smi \
--lock-gpu-clocks=tdp,tdp') or profile without fixed frequencies (see '--clock-control').
==ERROR== Failed to profile "v1,cw51cXTLSUwv1sCUt9Ww1FEw0N..." in process 2119298
"""
TARGET_FAILED = """RuntimeError: Unexpected error from cudaGetDeviceCount().
==PROF== Disconnected from process 55916
==ERROR== The application returned an error code (1).
==WARNING== No kernels were profiled.
==WARNING== Profiling kernels launched by child processes requires the --target-processes all option.
"""
NO_KERNELS = """==PROF== Disconnected from process 664418
==WARNING== No kernels were profiled.
Available Kernels:
1. wmma_cxx_kernel
2. wmma_inline_ptx_stub
"""


@pytest.mark.parametrize(("output", "kind"), [
    (PERMISSION, "permission"), (COUNTERS_BUSY, "counters_busy"), (LIBRARY_NOT_LOADED, "driver_mismatch"),
    (STUB_DRIVER, "driver_mismatch"), (UNKNOWN_DEVICE_ERROR, "device_error"), (CLOCK_LOCK, "clock_lock"),
    (TARGET_FAILED, "target_failed"), (NO_KERNELS, "no_kernels"),
])
def test_failures_are_named_by_their_cause(output, kind):
    failure = ncu_errors.diagnose(output)
    assert failure is not None and failure.kind == kind
    assert failure.evidence and failure.evidence in output
    assert failure.fix


def test_permission_failure_says_how_to_enable_the_counters():
    text = ncu_errors.diagnose(PERMISSION).render()
    assert "NVreg_RestrictProfilingToAdminUsers=0" in text and "ERR_NVGPUCTRPERM" in text


def test_a_clean_run_shows_no_failure():
    assert ncu_errors.diagnose('==PROF== Profiling "planted_memory_bound" - 0: 0%....50%....100% - 43 passes\n'
                               "==PROF== Disconnected from process 2654\n") is None


# -- without ncu, without a GPU ---------------------------------------------------------------------------------
def test_missing_ncu_is_reported_with_the_fix(tmp_path):
    assert find_ncu(str(tmp_path / "no" / "ncu")) is None
    result = profile_command(["true"], NcuOptions(ncu=str(tmp_path / "no" / "ncu")), tmp_path)
    assert not result.ok and result.error_kind == "ncu_missing"
    assert "not found" in result.error and "install Nsight Compute" in result.error


@no_gpu
def test_no_gpu_falls_back_to_torch_profiler_operators(tmp_path):
    result = profile_problem(problem("scale_relu").source, workdir=tmp_path, seed=1)
    assert result.source == "torch.profiler" and result.ok and not result.kernels
    assert result.error_kind == "no_gpu" and "no CUDA GPU" in result.error
    names = {e.name for e in result.events}
    assert {"aten::relu", "aten::mul"} <= names and all(e.device == "cpu" and e.count >= 1 for e in result.events)


@no_gpu
def test_candidate_runs_in_the_fallback_too(tmp_path):
    # the caller's device-lock settings are the ones the profile holds the lock under, not the settings files'
    lock = HarnessSettings(device_lock="on", device_lock_dir=tmp_path / "locks")
    result = profile_problem(problem("scale_relu").source, candidate("honest_scale_relu"), workdir=tmp_path,
                             lock=lock)
    names = {e.name for e in result.events}
    assert "aten::clamp_" in names and "aten::relu" not in names  # the candidate's operators, not the reference's
    assert (tmp_path / "locks" / "cpu.lock").is_file()


def test_the_fallback_makes_its_working_directory(tmp_path):
    result = torch_profile_problem(problem("scale_relu").source, device="cpu", workdir=tmp_path / "new" / "dir", seed=2)
    assert result.ok and {"aten::relu", "aten::mul"} <= {e.name for e in result.events}


@no_gpu
def test_asking_for_cuda_without_one_names_both_failures(tmp_path):
    options = NcuOptions(ncu=str(tmp_path / "no" / "ncu"))
    result = profile_problem(problem("scale_relu").source, options=options, workdir=tmp_path, device="cuda")
    assert not result.ok and result.error_kind == "ncu_missing"
    assert "fallback failed too" in result.error


def test_target_failure_is_reported_with_the_problem_error(tmp_path):
    broken = "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_init_inputs():\n    return []\n"
    result = torch_profile_problem(broken, device="cpu", workdir=tmp_path)
    assert not result.ok and result.error_kind == "target_failed" and "get_inputs" in result.error


def test_the_target_gets_no_credentials(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELPRO_TEST_API_TOKEN", "secret")
    monkeypatch.setenv("OPENAI_API_KEY", "secret")
    source = problem("scale_relu").source.replace(
        "def get_init_inputs():\n", "def get_init_inputs():\n    import os\n"
        "    assert not [k for k in os.environ if 'TOKEN' in k or 'API_KEY' in k], 'credentials leaked'\n")
    result = torch_profile_problem(source, device="cpu", workdir=tmp_path)
    assert result.ok, result.error


def test_time_limit_ends_the_whole_process_group(tmp_path):
    marker = tmp_path / "late"
    code, _, elapsed = run_limited(["sh", "-c", f"(sleep 3; touch {marker}) & sleep 30"], tmp_path, {}, 0.5)
    assert code is None
    subprocess.run(["sleep", "4"], check=True)
    assert not marker.exists()  # the background child died with its group


def test_clocks_are_collected_per_kernel_and_missing_ones_are_named():
    kernels = [k for path in PLANTED_CSV[:3] for k in read_ncu_csv(path)]
    result = with_clocks(ProfileResult(source="ncu", ok=True, kernels=kernels))
    assert len(result.kernel_clocks_hz) == len(kernels) and all(c > 1e9 for c in result.kernel_clocks_hz)
    assert min(result.kernel_clocks_hz) <= result.clock_hz <= max(result.kernel_clocks_hz)
    unclocked = dataclasses.replace(kernels[0], values={k: v for k, v in kernels[0].values.items()
                                                        if k != CLOCK_METRIC})
    result = with_clocks(ProfileResult(source="ncu", ok=True, kernels=[unclocked, *kernels]))
    assert result.kernel_clocks_hz[0] is None and any("clock is unknown" in w for w in result.warnings)


# -- on a GPU with ncu ------------------------------------------------------------------------------------------
def _check_ncu_run(result: ProfileResult) -> None:
    assert result.ok, f"{result.error_kind}: {result.error}"
    assert result.source == "ncu" and result.kernels
    assert _clock_control(result.command) == ["none"]
    assert all(c is not None and 0.3e9 < c < 3.5e9 for c in result.kernel_clocks_hz)
    assert result.clock_hz and result.ncu_version
    assert Path(result.report_path).is_file() and Path(result.csv_path).is_file()
    assert all(k.duration_ns and k.duration_ns > 0 for k in result.kernels)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or find_ncu() is None, reason="needs an NVIDIA GPU and ncu")
def test_stage_one_profiles_only_the_call_in_the_nvtx_range(tmp_path):
    source = problem("scale_relu").source
    result = profile_problem(source, workdir=tmp_path / "ncu", device="cuda", seed=3)
    _check_ncu_run(result)
    assert result.overhead_s is not None and result.plain_wall_s is not None
    seen = torch_profile_problem(source, device="cuda", workdir=tmp_path / "torch", seed=3)
    launches = sum(e.count for e in seen.events if not e.name.startswith(("Memcpy", "Memset")))
    assert seen.ok and launches == len(result.kernels)  # one call's kernels, none of the warm-up's
    assert all(k.has("sm__throughput.avg.pct_of_peak_sustained_elapsed", "launch__grid_size") for k in result.kernels)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or find_ncu() is None, reason="needs an NVIDIA GPU and ncu")
def test_stage_two_full_set_of_a_candidate_with_rules(tmp_path):
    options = NcuOptions(stage=2, kernel_regex="scale_relu", measure_overhead=False)
    result = profile_problem(problem("scale_relu").source, candidate("honest_cuda_scale_relu"), options, tmp_path,
                             device="cuda")
    _check_ncu_run(result)
    assert [k.name for k in result.kernels] == ["scale_relu"]
    assert result.kernels[0].rules and result.kernels[0].has("launch__occupancy_limit_registers")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or find_ncu() is None, reason="needs an NVIDIA GPU and ncu")
def test_a_planted_program_with_launch_skip_and_count(tmp_path):
    root = Path(__file__).parents[2] / "benchmarks" / "profiling"
    subprocess.run(["bash", str(root / "build_planted.sh"), str(tmp_path), "memory_bound"], check=True)
    options = NcuOptions(kernel_regex="planted_", launch_skip=1, launch_count=1)
    result = profile_command([str(tmp_path / "memory_bound")], options, tmp_path / "ncu")
    _check_ncu_run(result)
    assert [k.name for k in result.kernels] == ["planted_memory_bound"]
    assert result.kernels[0].get("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed") > 50
    assert re.search(r"planted_memory_bound ok", Path(result.log_path).read_text())


def test_on_a_cpu_the_fallback_lists_the_models_own_operators_with_what_they_called(tmp_path):
    linear = problem("scale_relu").source.replace(
        "        self.scale = scale\n", "        self.scale = scale\n        self.proj = nn.Linear(128, 32)\n").replace(
        "return torch.relu(x) * self.scale", "return torch.relu(self.proj(x)) * self.scale")
    result = torch_profile_problem(linear, device="cpu", workdir=tmp_path / "reference", seed=2)
    assert result.ok, result.error
    assert sorted(e.name for e in result.events) == ["aten::linear", "aten::mul", "aten::relu"]  # not addmm, _to_copy
    assert all(e.count == 1 and e.time_us > 0 and e.device == "cpu" for e in result.events)
    own = torch_profile_problem(problem("scale_relu").source, candidate("honest_scale_relu"), device="cpu",
                                workdir=tmp_path / "candidate", seed=2)
    assert sorted(e.name for e in own.events) == ["aten::clamp_", "aten::clone", "aten::mul_"]  # its own clone
