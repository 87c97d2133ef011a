"""Argument schemas of the agents' tools. Field descriptions are what the model reads."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class CompileCheckArgs(BaseModel):
    source: str = Field(description="CUDA C++ source of one translation unit (extern \"C\" __global__ kernels).")
    backend: Literal["nvrtc", "nvcc"] = Field(
        "nvrtc", description="nvrtc (fast, default) or nvcc (needed for CUTLASS/CuTe headers).")
    arch: str | None = Field(None, description="Target such as sm_90a; default: this GPU's, else sm_90a.")
    name_expressions: list[str] = Field(
        default_factory=list, description="NVRTC only: templated kernels to instantiate, e.g. scale<float>.")


class ResourceReportArgs(CompileCheckArgs):
    block_size: int = Field(256, ge=1, le=1024, description="Threads per block of the intended launch.")
    dynamic_shared_bytes: int = Field(0, ge=0, description="Dynamic shared memory per block of the launch.")
    gpu: str | None = Field(None, description="GPU name for the occupancy figures (default: this machine's, "
                                              "else an H200).")


class JudgeArgs(BaseModel):
    source: str = Field(description="A complete Python file defining ModelNew (same constructor as Model).")
    timing: bool = Field(True, description="Also time it against the reference (false: correctness only).")


class GpuSpecsArgs(BaseModel):
    name: str | None = Field(None, description="A GPU name such as 'H100' or 'A100'; default: this machine's GPU.")


class CutlassSearchArgs(BaseModel):
    query: str = Field(description="Words (all must appear near each other) or a regular expression.")
    regex: bool = Field(False, description="Treat the query as a regular expression.")
    path_glob: str | None = Field(None, description="Only files matching this glob, e.g. 'include/cute/atom/*'.")


class CutlassSymbolArgs(BaseModel):
    symbol: str = Field(description="A class, struct, function, alias or macro, optionally qualified "
                                    "(e.g. cute::make_tiled_copy, SM90_TMA_LOAD).")


class CutlassReadArgs(BaseModel):
    path: str = Field(description="A file in the tree, e.g. include/cute/layout.hpp or cute/layout.hpp.")
    start: int = Field(1, ge=1, description="First line to show.")
    end: int | None = Field(None, ge=1, description="Last line to show (default: a page from start).")


class CutlassListArgs(BaseModel):
    path: str = Field("", description="A directory in the tree, e.g. include/cute/arch; empty for the root.")


class CutlassExamplesArgs(BaseModel):
    topic: str = Field(description="e.g. 'wgmma', 'TMA', 'tiled copy', 'epilogue', 'warp specialized'.")


class MemorySearchArgs(BaseModel):
    query: str = Field(description="What you want lessons about: the problem, the bottleneck, the technique.")
    diagnosis: str = Field("", description="The current diagnosis of the kernel, if any.")


class MemoryWriteArgs(BaseModel):
    text: str = Field(description="One lesson in a sentence or two: what was tried, what happened, and why.")
    tags: list[str] = Field(default_factory=list, description="Technique tags, e.g. ['smem-tiling', 'vectorize'].")


class ProfileArgs(BaseModel):
    source: str | None = Field(None, description="A candidate file (ModelNew) to profile; omit to profile the "
                                                 "reference Model.")
    full: bool = Field(True, description="Collect every ncu section (slower, every diagnoser can run); false: "
                                         "speed-of-light metrics only.")
    kernel_regex: str | None = Field(None, description="Only kernels whose name matches this regex.")


class DiagnoseArgs(BaseModel):
    ncu_csv: str | None = Field(None, description="Path of a saved `ncu --csv --page raw --print-units base` file.")
    ncu_rep: str | None = Field(None, description="Path of a saved .ncu-rep report.")
    gpu: str | None = Field(None, description="GPU name, when the profile does not record it.")


class ReadMetricsArgs(BaseModel):
    metrics: list[str] = Field(description="Metric names or prefixes, e.g. ['dram__throughput', "
                                           "'smsp__average_warp_latency_issue_stalled'].", min_length=1)
    kernel: str | None = Field(None, description="A substring of the kernel's name; default: the longest kernel.")
    profile: str | None = Field(None, description="A saved CSV or .ncu-rep; default: the latest profile of this "
                                                  "run.")


class StaticReportArgs(CompileCheckArgs):
    block_size: int | None = Field(None, ge=1, le=1024, description="Threads per block, for occupancy figures.")
    dynamic_shared_bytes: int = Field(0, ge=0, description="Dynamic shared memory per block of the launch.")


class NcuListArgs(BaseModel):
    report: str | None = Field(None, description="A saved .ncu-rep: list what it holds instead of asking the "
                                                 "installed ncu.")


class ReportDetailsArgs(BaseModel):
    report: str = Field(description="Path of a saved .ncu-rep report.")
    kernel: str | None = Field(None, description="Only launches whose kernel name contains this.")
    section: str | None = Field(None, description="Only this section (identifier or name, e.g. 'SpeedOfLight', "
                                                  "'Occupancy').")
    body: bool = Field(False, description="Also each section's body metrics (chart and table data; long).")
