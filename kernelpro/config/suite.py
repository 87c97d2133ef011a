"""Suites: many problems in one overnight run (``kernelpro suite run``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from kernelpro.config.names import named_in
from kernelpro.seams import SUITE_BACKENDS

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
    backend: Annotated[str, named_in(SUITE_BACKENDS)] | None = None
    """Where a suite's problems run, by name (``kernelpro.seams.SUITE_BACKENDS``): ``local`` (this machine's
    lanes), ``ray``, or one registered there. None: ``ray`` where ``--ray`` or ``ray_address`` gives an address,
    else ``local``."""
    ray_address: str | None = None
    """The Ray cluster new suites run on when ``--ray`` is not given: ``auto`` (a running cluster), an address
    (``ray://host:10001``) or ``local`` (start one on this machine). None: this machine's own lanes."""
    overnight_time_budget_s: float = Field(8 * 3600.0, gt=0)
    """The time budget of ``suite run --overnight`` when no ``--time-budget`` is given: one night."""
    overnight_gpu_minutes_per_problem: float = Field(2.5, gt=0)
    """What ``--overnight`` projects for a problem nothing is known of (no cached baseline, no finished problem
    of an earlier suite in the runs directory): 2.5 GPU-minutes a problem, measured with the built-in recipes on
    an H100. The H200 suites of ``benchmarks/results`` spent less (1.13 GPU-minutes a problem over 40 KernelBench
    problems of levels 1 and 2 in ``suite_kernelbench_h200_recipes_40``), so the projection errs long."""
    overnight_lane_minutes_per_problem: float = Field(4 / 0.55, gt=0)
    """The wall minutes a lane spends on such a problem: 0.55 problems a minute with 4 lanes in the same H100
    measurement, so 4 / 0.55 = 7.3 minutes each (model calls, compiles and process starts beside the GPU time)."""
    overnight_level_weights: dict[int, float] = {1: 1.0, 2: 1.5, 3: 3.0}
    """How much costlier a KernelBench level's problem is than a level-1 problem, where nothing is measured of it
    (``--overnight``'s static estimate; a level not listed counts as the highest one listed). Level 2 spent 1.3x
    to 1.8x level 1's GPU time in the H200 suites of ``benchmarks/results``; level 3 (whole networks) has no
    measurement there, and 3 is a guess that puts it last."""
    overnight_share_floor: float = Field(0.25, gt=0, le=1)
    """Under ``--overnight`` a problem's share of the suite's time and GPU budgets follows its estimated cost, but
    never falls below this fraction of an equal share: a problem estimated cheap still gets room to run."""
