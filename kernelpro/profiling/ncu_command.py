"""Nsight Compute's command lines: what to collect (stage 1 metrics, stage 2 sections), where ncu is, its version.

Every command keeps the GPU's clocks as they are (`--clock-control none`); the options cannot override that.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from kernelpro.harness.compile.toolchain import find_tool

CLOCK_METRIC = "gpc__cycles_elapsed.avg.per_second"
STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle", "long_scoreboard",
                 "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected",
                 "short_scoreboard", "sleeping", "tex_throttle", "wait")
STAGE1_METRICS = (
    "gpu__time_duration.sum", CLOCK_METRIC, "dram__cycles_elapsed.avg.per_second",
    # speed of light
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    # the busiest pipe (elapsed time, as the compute and tensor-core diagnosers read them) and the tensor cores
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    # a matrix product on the CUDA cores: FFMAs against all instructions and against shared-memory loads
    "smsp__inst_executed.sum", "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__cycles_elapsed.avg", "sm__cycles_active.avg", "sm__cycles_elapsed.avg",
    # launch statistics and occupancy
    "launch__grid_size", "launch__block_size", "launch__registers_per_thread", "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic", "launch__waves_per_multiprocessor", "launch__sm_count",
    "sm__maximum_warps_per_active_cycle_pct", "sm__warps_active.avg.pct_of_peak_sustained_active",
    # FLOP counters (thread-level instructions; an FMA is two FLOPs), bytes and 32-byte sectors
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    # warp stall reasons: what a latency-bound kernel waits for (every architecture from Volta has these)
    *(f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio" for reason in STALL_REASONS),
)


class NcuOptions(BaseModel):
    """How ncu is run."""

    ncu: str = "ncu"
    """The ncu executable (a name looked up like the CUDA tools, or a path)."""
    stage: Literal[1, 2] = 1
    """1: the short `metrics` list; 2: `sections`, or the whole `set` when no section is named."""
    metrics: list[str] = Field(default_factory=lambda: list(STAGE1_METRICS))
    sections: list[str] = Field(default_factory=list)
    section_set: str = "full"
    kernel_regex: str | None = None
    """Profile only kernels whose (demangled) name matches, e.g. ``gemm|softmax``."""
    launch_skip: int | None = None
    launch_count: int | None = None
    extra_args: list[str] = Field(default_factory=list)
    """Further ncu options; `--clock-control` is not allowed here (it is always `none`)."""
    timeout_s: float = 600.0
    """Wall-time limit for one ncu run (stage 2 costs about 2 s per kernel plus start-up)."""
    warmup: int = 3
    """Untimed, unprofiled calls before the profiled one."""
    measure_overhead: bool = True
    """Also run the target without ncu, to report ncu's own cost in wall time."""


def find_ncu(name: str = "ncu") -> str | None:
    """ncu on PATH, in the newest standalone install under /opt/nvidia/nsight-compute, or in a CUDA toolkit."""
    return find_tool(name)


def ncu_version(ncu: str) -> str | None:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"Version\s+(\S+)", out)
    return match.group(1) if match else None


def ncu_command(ncu: str, target: list[str], export: Path, options: NcuOptions,
                nvtx_range: str | None = None) -> list[str]:
    """ncu's command line: clocks untouched, the report exported to ``export`` (`.ncu-rep` is appended)."""
    if any(arg.startswith("--clock-control") for arg in options.extra_args):
        raise ValueError("--clock-control may not be overridden: kernelpro always profiles with `none`")
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "--force-overwrite", "--export", str(export)]
    if options.stage == 1:
        cmd += ["--metrics", ",".join(options.metrics)]
    else:
        cmd += [arg for section in options.sections for arg in ("--section", section)] or ["--set", options.section_set]
        cmd += ["--metrics", f"{CLOCK_METRIC},gpu__time_duration.sum"]  # the clock, whatever the sections hold
    if nvtx_range:
        cmd += ["--nvtx", "--nvtx-include", f"{nvtx_range}/"]  # the trailing slash: a push/pop range
    if options.kernel_regex:
        cmd += ["-k", f"regex:{options.kernel_regex}"]
    if options.launch_skip is not None:
        cmd += ["--launch-skip", str(options.launch_skip)]
    if options.launch_count is not None:
        cmd += ["--launch-count", str(options.launch_count)]
    return [*cmd, *options.extra_args, *target]


def import_command(ncu: str, report: Path) -> list[str]:
    """Export a report's raw page as CSV in base units (what `parse_ncu_csv` reads)."""
    return [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]
