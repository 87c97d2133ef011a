"""Suites: many problems in one overnight run (``kernelpro suite run``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

BaselineName = Literal["eager", "compile_default", "compile_max_autotune_no_cudagraphs"]


class SuiteSettings(BaseModel):
    """How a suite schedules its problems, what it measures them against and what it keeps on disk."""

    baselines: list[BaselineName] = ["eager", "compile_default", "compile_max_autotune_no_cudagraphs"]
    """What each problem is scored against, measured once per problem by the same judge: ``eager`` (the reference
    itself, timed in every verdict), ``compile_default`` (``torch.compile`` of the reference) and
    ``compile_max_autotune_no_cudagraphs``. Scores are given against eager and against the fastest compile
    baseline. ``["eager"]`` alone skips the compile measurements (fast, e.g. on a CPU)."""
    cpu_lanes: int = Field(1, ge=1)
    """Problems run at once on a machine without a GPU (with GPUs: one per visible GPU, ``harness.gpu_devices``
    when set)."""
    lanes_per_gpu: int = Field(1, ge=1, le=8)
    """Problems run at once on each GPU. Above 1, one problem's process starts, compiles and model calls overlap
    another's judging, and the device lock (``harness.device_lock``) lets one judgment or profile at a time use
    the GPU, so measurements never overlap; worth it where model calls or compiles leave the GPU idle."""
    default_max_iters: int = Field(8, ge=1)
    """Candidates judged per problem when ``--max-iters`` is not given."""
    problem_timeout_s: float = Field(4 * 3600.0, gt=0)
    """The longest one problem may take (baselines and optimisation) before it counts as hung: its processes are
    killed and it is recorded as failed. With a per-problem time budget the limit is that budget plus
    ``hang_grace_s``, whichever is smaller."""
    hang_grace_s: float = Field(600.0, ge=0)
    """Time beyond a problem's own time budget before it counts as hung (compiles, the finalists' re-judging)."""
    max_attempts: int = Field(2, ge=1)
    """Times a problem is started when its worker is lost (a Ray actor or node gone, or its process killed from
    outside): each attempt resumes the same run from its checkpoint."""
    disk_budget_mb: float | None = Field(None, gt=0)
    """Disk the suite directory may use. Past it, finished problems' bulky files are compressed, then dropped
    (the other variants' Nsight Compute reports first, then the LangGraph checkpoints of finished runs, last the
    best variant's and the finalists' reports, compressed and never dropped); what each report needs is kept
    (metrics CSVs, candidates, verdicts, reports) and the suite report lists what was dropped and whose profile
    it was. None keeps everything."""
    report_interval_s: float = Field(60.0, ge=0)
    """How often the suite report is rewritten while the suite runs (it is always written at the end, and
    ``kernelpro suite report`` writes it on demand)."""
    robust_kbench_filters: list[str] | None = None
    """Which of robust-kbench's filters exclude a task when a SOURCE is a robust-kbench checkout (the
    ``filter_*`` names of its ``filter_results.json``, e.g. ``["filter_output_range", "filter_output_std",
    "filter_output_axes", "filter_input_impact"]`` for the output checks alone). None: every filter."""
    ray_address: str | None = None
    """The Ray cluster new suites run on when ``--ray`` is not given: ``auto`` (a running cluster), an address
    (``ray://host:10001``) or ``local`` (start one on this machine). None: this machine's own lanes."""
