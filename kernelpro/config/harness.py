"""How the judge checks and times one candidate, and the tolerances it compares with."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator

from kernelpro.config.names import named_in
from kernelpro.seams import JUDGES


class Tolerance(BaseModel):
    """Element-wise tolerance: ``|cand - ref| <= atol + rtol * |ref|``."""

    atol: float
    rtol: float


# KernelBench's own check, as its evaluator does it today (``eval_kernel_against_ref`` with
# ``get_tolerance_for_precision``, torchbench's values): ``torch.allclose(output, ref, atol=t, rtol=t)`` with t = 1e-4
# for float32 and 1e-2 for float16 and bfloat16, on ``num_correct_trials = 5`` input sets drawn afresh (its
# scripts' count), and nothing else. Its v0 and v0.1 evaluation used 1e-2 for every dtype.
KERNELBENCH_TOLERANCES = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}
KERNELBENCH_OTHER_TOLERANCE = 1e-4  # a dtype it names no value for (float64 outputs): the float32 one
KERNELBENCH_TRIALS = 5


def _default_tolerances() -> dict[str, Tolerance]:
    # KernelBench's values: 1e-4 for fp32, 1e-2 for half types.
    return {
        "float64": Tolerance(atol=1e-6, rtol=1e-6),
        "float32": Tolerance(atol=1e-4, rtol=1e-4),
        "float16": Tolerance(atol=1e-2, rtol=1e-2),
        "bfloat16": Tolerance(atol=1e-2, rtol=1e-2),
    }


class HarnessSettings(BaseModel):
    """How the judge checks and times one candidate."""

    backend: Annotated[str, named_in(JUDGES)] = "local"
    """Which judge a run uses (``kernelpro.seams.JUDGES``): ``local``, the pipeline of sandboxed workers on this
    machine's GPUs, or a judge registered there."""
    timeout_s: float = 300.0
    """Wall-time limit for one candidate's worker process (load, checks and timing together), and the cap of the
    limit that ``timeout_floor_s`` and ``timeout_reference_factor`` derive from the reference's speed."""
    timeout_floor_s: float = 30.0
    """Once the candidate is built and its first call begins, it has at least this long to finish every call
    the judge makes (compiles in ``__init__`` or at import still have ``timeout_s``)."""
    timeout_reference_factor: float = 10.0
    """...and at most this many times what every planned call would take at the reference's speed (its first
    call, timed in the worker), within ``timeout_s``: a hang on a millisecond problem ends after the floor,
    while a model that takes seconds a call still gets the time it needs."""
    memory_limit_mb: int = 16384
    """Host memory the worker may use on top of what it holds after importing torch."""
    gpu_memory_fraction: float = 0.9
    """Share of the GPU's memory the worker's caching allocator may take."""
    correctness_profile: Literal["kernelpro", "kernelbench"] = "kernelpro"
    """Which correctness check judges: ``kernelpro`` (the ``tolerances`` with their absolute part at each
    output's own scale, the reference's noise allowed for, the scaled and shifted sets, the float64 oracle) or
    ``kernelbench``, KernelBench's own check as its evaluator runs it: ``torch.allclose(output, ref, atol=t,
    rtol=t)`` with t from ``KERNELBENCH_TOLERANCES`` (1e-4 for float32, 1e-2 for half types) on
    ``KERNELBENCH_TRIALS`` input sets drawn afresh, with no widening, no scaled or shifted set
    and no oracle (it fixes ``correctness_trials``, ``scaled_trials`` and ``shifted_trials``). The guards against
    cheating and the problem check are the same under both; the verdict names the profile that judged it."""
    correctness_trials: int = 3
    """Random input sets drawn from ``get_inputs()`` under fresh seeds."""
    scaled_trials: int = 2
    """Further input sets with floating-point inputs multiplied by ``magnitude_scale``."""
    magnitude_scale: float = 8.0
    """The second input distribution: larger magnitudes expose shortcuts and overflow."""
    shifted_trials: int = 1
    """Further input sets with ``magnitude_shift`` added to floating-point inputs."""
    magnitude_shift: float = 100.0
    """The third input distribution: values far from zero, where a softmax or log-sum-exp without its max
    subtracted overflows (exp of more than 88 is Inf in float32) while the reference stays finite."""
    tolerances: dict[str, Tolerance] = Field(default_factory=_default_tolerances)
    """Per output dtype; dtypes not listed use float32's."""
    precision_factor: float = 16.0
    """A candidate's error against a float64 oracle may exceed the reference's own by this factor."""
    gross_relative_error: float = 0.1
    """A relative error this large is wrong values, not lost precision (e.g. zeros for tiny outputs)."""
    timed_check_elements: int = Field(1 << 20, ge=0)
    """Elements of a larger output compared in each timed call, at positions drawn afresh after the call (0:
    every element); the correctness trials always compare every one (``harness/guards/timed_checks.py``)."""
    warmup: int = 3
    """Untimed calls of each model before timing."""
    timing_trials: int = 400
    """Timed rounds (one call of each model), at most; timing stops earlier once the interval is narrow enough."""
    min_timing_trials: int = 20
    """Timed rounds, at least, whatever the time cap."""
    timing_budget_s: float = 20.0
    """Wall time the timed rounds may take together (input draws and checks included), beyond which they stop."""
    speedup_ci_width: float = 0.02
    """Timing stops once the speedup's 95% interval is this narrow, relative to the speedup (0.02: about +-1%);
    the interval of the rounds alone, as more rounds cannot narrow the spread between jobs (``job_spread_*``)."""
    settled_ci_width: float | None = None
    """With it, timing also stops once the speedup's interval is this narrow and the call is settled: its top
    lies below ``1 + min_effect`` (the candidate cannot be called faster) or its bottom at or above it (faster
    beyond doubt), and more rounds would only narrow a figure whose call they cannot change. The finalists'
    re-judgment sets it to the first judgments' ``speedup_ci_width`` (``Settings.for_finalists``): only a
    finalist whose call is still open is timed to its narrower interval. In a 40-problem recipe suite on the
    H200 the finalists' re-judgments timed for 268 s: 52 s of them on the 14 not called faster, and 157 s on 27
    called faster whose rounds at a first judgment's width project to 68 s (``benchmarks/finalist_timing.py``)."""
    job_spread_host: float = 0.005
    """The relative standard deviation of a speedup between identical jobs when the calls are bound by the
    host (any CPU job, a CUDA job whose launches outlast its GPU time); the interval adds it in quadrature to
    what the rounds show, because a figure is compared with other jobs' figures and one job's rounds cannot
    show what moves between jobs. Measured self against self on the H200: 0.4-0.6 %
    (``benchmarks/results/judge_noise_h200_persistent_refill.json``), and 0.8 % pooled over four host-bound
    problems with the rounds' own noise included (``judge_noise_h200_job_spread.json``), where this setting's
    intervals held 1 in 23 of 24 host-bound jobs; ``benchmarks/judge_noise.py`` measures it on another
    machine."""
    job_spread_host_fresh: float = 0.010
    """``job_spread_host`` when every job has a worker of its own (``worker_mode = "fresh"``): a new process
    places its objects and meets the host anew, so its figures move more between jobs. Measured self against
    self on the H200: 0.95 % and 1.3 % on two host-bound problems (``judge_noise_h200_job_spread_fresh.json``,
    where ``job_spread_host``'s 0.5 % held 1 in 11 of 12 jobs); with this setting, 18 of 18 on three other
    problems (``judge_noise_h200_fresh_*.json``)."""
    job_spread_gpu: float = 0.001
    """The same for CUDA calls bound by the GPU (0.03-0.14 % measured on the H200; 0.15 % pooled over four
    GPU-bound problems, rounds included, where the intervals held 1 in 23 of 24 jobs)."""
    min_effect: float = 0.02
    """The smallest speedup or slowdown that counts: within it a candidate is ``same`` as the reference."""
    cpu_threads: int = 0
    """Threads for CPU candidates (and the reference); 0: the cores this process may use, less those other work
    keeps busy when the job starts, so OpenMP's threads do not wait on cores another job holds."""
    cpu_contention_cores: float = 0.5
    """Cores' worth of other work during CPU timing above which the verdict is marked ``contended``."""
    l2_flush_bytes: int = 0
    """Bytes written between CUDA trials to flush L2; 0 means four times the device's L2."""
    referee: bool = True
    """Decide every verdict the worker found correct again on the trusted side (``harness/referee/process.py``): the
    reference, its float64 oracle, the inputs, the comparison and the timing of the reference in a process that
    never loads candidate code; the candidate alone in a walled process of its own, fed each set's inputs and
    timed by the same clock, each call also timed from outside. The candidate's process then holds nothing the
    verdict depends on. Off: the worker's own verdict stands (cheaper; a hostile candidate can reach it)."""
    referee_trials: int = Field(2, ge=1)
    """The referee's plain input sets (plus one shifted by ``magnitude_shift`` when ``shifted_trials`` is set)."""
    referee_timer_tolerance: float = Field(0.1, ge=0)
    """How much more, as a share of its claimed time, a candidate call may take from outside than its own clock
    claimed, beyond what the reference's calls take more than theirs, before its timing is ``timer_mismatch``
    (``referee.timing.timer_check``; three standard errors of the rounds' noise are allowed besides)."""
    referee_timer_floor_ms: float = Field(0.02, ge=0)
    """The same allowance's least absolute part, for the host's scheduling noise."""
    referee_prestart: bool = True
    """On a GPU, start the referee's three processes (interpreters, torch's import) while the worker judges a
    timed job, outside the device lock; they get their job only once the worker's verdict is correct and the device
    is held, so the lock covers their work and not their start-up. Unused, they are killed. The CPU never
    prestarts: the processes' imports would be other work beside the worker's timing (``contended``)."""
    second_opinion: bool = True
    """Before a run reports a best, time the reference and the best again in a fresh sandboxed process by an
    independent plain method (``harness/timing/second_opinion.py``: host-synchronised calls on fresh inputs,
    alternating).
    Where the two figures disagree beyond the noise, the best gets ``timing_disagreement`` and does not count; a
    best below the memory floor (``below_memory_floor``) counts only with an agreeing second opinion, so with this
    off it never does."""
    second_opinion_rounds: int = Field(200, ge=3)
    """Paired rounds (one call of each model) of the second opinion, at most."""
    second_opinion_min_rounds: int = Field(10, ge=3)
    """Paired rounds, at least, whatever its time budget."""
    second_opinion_budget_s: float = 10.0
    """Wall time the second opinion's rounds may take together; its process as a whole has ``timeout_s`` more."""
    second_opinion_margin: float = 0.10
    """How far apart (relative) the judge's speedup and the second opinion's must be, their 95% intervals
    disjoint as well, to disagree."""
    energy: bool = False
    """On CUDA, also measure joules per call and average power through NVML (adds seconds per model)."""
    energy_seconds: float = 1.0
    """How long each energy reading runs (NVML's counter moves about every 100 ms)."""
    energy_repeats: int = 6
    """Energy readings per model, in alternating order; the energy ratio's interval rests on them."""
    output_tail_bytes: int = 8192
    """How much of the worker's stdout/stderr is kept for the message (the rest is counted, not kept)."""
    worker_mode: Literal["persistent", "fresh"] = "persistent"
    """``persistent``: one long-lived worker per device judges candidates one after another, its state reset and
    checked between them, and replaced after a CUDA error, crash, timeout, memory kill or any sign of tampering.
    ``fresh``: a new worker process per candidate; the most isolated, and seconds slower per candidate."""
    worker_max_jobs: int = 64
    """A persistent worker is replaced after this many candidates, so leaks cannot build up (0: never)."""
    worker_reset_timeout_s: float = 30.0
    """Time a persistent worker may take to reset between candidates before it is replaced."""
    worker_preload: list[str] = Field(default_factory=lambda: ["numpy", "triton"])
    """Modules a persistent worker imports before its first candidate, where installed: candidates find them
    loaded, and the check between candidates covers them from the start."""
    ghost_kernel_rejects: bool = False
    """A candidate that builds a custom kernel and never runs it while judged is rejected (``ghost_kernel``), not
    only warned about."""
    isolate: bool = True
    """Put each worker in new user, network, PID and mount namespaces and a Landlock domain, where the kernel
    allows them unprivileged, and make the judge's process undumpable (see ``harness/isolation/walls.py``); the
    verdict's ``details.isolation`` lists what a worker got."""
    protected_dirs: list[Path] = Field(default_factory=list)
    """Further directories a worker may read but never write, beside the runs, kernelpro's home and the caches
    (``harness.jobs.protected_paths``): a suite puts its own directory (the ledger) here for the runs it starts."""
    require_isolation: bool = False
    """Refuse to judge in a worker that did not get every protection ``isolate`` asks for."""
    gpu_devices: list[int] | None = None
    """CUDA device indices to judge on, one worker each, when the device is ``cuda``; None: every visible GPU."""
    device_lock: Literal["auto", "on", "off"] = "auto"
    """One judgment (checks, timing, energy) or Nsight Compute profile at a time on a device, across every
    kernelpro process on the machine (``harness/device_lock.py``), so processes sharing a GPU never time each
    other's kernels: ``auto`` locks GPUs, ``on`` the CPU too, ``off`` nothing."""
    share_until_timing: bool = False
    """With a long-lived worker on a locked device: each job holds the device lock shared while it loads, builds
    and checks the candidate, beside other lanes doing the same, lets it go while Dynamo compiles, and takes it
    alone for each of autotuning's benchmarks (``device_turns``: choices timed beside other work read slower at
    random, and autotuning would keep a slower one) and for its timing (``device_lock.SharedTurn``), so lanes
    on one GPU overlap all but their measurements. A job that fails
    before timing never waits for the device alone, unless it ran out of GPU memory: then it is judged again
    holding the device alone throughout (``details.judged_alone_after``). The verdict's ``details.device_turn``
    says how long the job held it shared, let it go, waited and held it alone. Off: the whole job holds it
    alone."""
    release_while_compiling: Literal["auto", "on", "off"] = "auto"
    """With ``share_until_timing``: a job lets the device lock go while Dynamo compiles, taking it back alone for
    each of Inductor's benchmarks and shared at the compile's end (``harness/device_turns.py``), so another lane's
    measurement need not wait for the compile. ``auto``: on GPUs only. On the CPU the compile runs on the very
    device another lane times, and moves its figures (``benchmarks/release_while_compiling.py``); ``on`` releases
    there too. ``off``: the job holds the lock shared through its compiles, and a measurement waits for every
    other lane's current compile, minutes under ``max-autotune``."""
    device_lock_dir: Path | None = None
    """Where the lock files live; None: ``kernelpro-device-locks`` in the system's temporary directory, shared
    by every user of the machine."""

    @model_validator(mode="after")
    def _trials_of_the_profile(self) -> HarnessSettings:
        self.apply_correctness_profile()
        return self

    def apply_correctness_profile(self) -> None:
        """The input sets ``correctness_profile`` fixes (call again after changing it): KernelBench's five plain
        sets and nothing more under ``kernelbench``."""
        if self.correctness_profile == "kernelbench":
            self.correctness_trials, self.scaled_trials, self.shifted_trials = KERNELBENCH_TRIALS, 0, 0
