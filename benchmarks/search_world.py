"""The simulated optimisation trees of ``search_policies.py``: a problem, its planner and its judge.

Every modelling choice, with its source. Measured: ``benchmarks/data/search_world.json``, derived by
``search_world_data.py`` from public releases. Assumed: stated as such, with the reason.

- **A problem** is one KernelBench task of CUDA-L1's H100 release (measured; 247 tasks, the three with constant
  outputs left out). It has two *approaches*, each with its own plateau:

  - ``graph``: capture the reference in a CUDA graph. Plateau ``G``, measured (the release's CUDA-graph
    baseline; median 1.22x, and above CUDA-L1's own code on 40 % of the tasks). One step reaches it, each
    implementation within ``GRAPH_SPREAD`` (assumed: it is a mechanical rewrite), and refining it gains
    nothing: its lineage's plateau is ``G``.
  - ``kernel``: rewrite the computation (custom kernels, fusion, other PyTorch calls). Plateau ``K``, measured:
    the best CUDA-L1's RL found (median 1.36x; winsorised at the 95th percentile, 4.2x, so a few reward-hacked
    20-370x entries do not dominate the means; a task without custom code has ``K`` = 1). One kernel lineage
    reaches ``sigmoid(REACH * q)`` of ``log K`` (``q``: the quality of the idea that started it; assumed, as
    before: designs differ). Its first attempt lands a ratio ``r`` below that plateau, ``r`` drawn from the
    measured first-attempt ratios (one-shot LLM kernels of the KernelBench leaderboard over the best kernel of
    the same task: median 0.47, so a first kernel is usually slower than the reference); refinements then climb.

  The problem's ceiling is ``max(K, G)``: no lineage gets above it. This is the structure the issue describes:
  a CUDA-graph branch that gains at once and plateaus, and a kernel branch that starts slower and, on some
  problems, leads higher. Gains of the two approaches do not compose (assumed: CUDA-L1's ``K`` is already the
  best it found with any combination, graphs included).
- **A plan** from a variant has ``IDEAS_PER_PLAN`` ideas. An idea from the reference is a CUDA-graph idea with
  probability ``GRAPH_SHARE`` (measured: 26 of CUDA-L1's 227 H100 codes capture a CUDA graph, 0.11, a proxy
  for how often a strong model reaches for it), otherwise a kernel idea. An idea below the first level refines
  its parent's lineage, or with probability ``SWITCH`` starts a new kernel lineage from it (assumed). An idea's
  quality ``q`` is its variant's approach quality plus N(0, 1); it sets the idea's failure risk and its gain.
  The planner judges an idea by its *promise*: ``q`` for a kernel idea (whose plateau follows from ``q``); for
  a graph idea, the ``q`` a kernel lineage would need to plateau where ``G`` lies under the ceiling, so the
  planner's view means the same for both.
- **The planner's prior** sees the promise through N(0, ``PRIOR_NOISE``) noise (assumed: correlation 0.7 with
  the truth), ranks its ideas by what it sees and states an expected speedup from it; ``rank_priors`` (the
  real code) turns that into priors.
- **A judged child** fails (compile error, incorrect) with ``sigmoid(FAIL_BASE - FAIL_QUALITY*q +
  FAIL_DEPTH*depth)``: about 40 % at the first level (measured anchors: 16 of 38 real CUDA-L1 candidates failed
  our judge on the H200, ``results/real_candidates_h200.json``; one-shot 2024 models were correct 24 % of the
  time on the leaderboard). A refinement is slower than its parent with probability ``WORSE_BASE -
  WORSE_QUALITY*q`` (assumed); otherwise it gains ``u`` of the log headroom left below its lineage's plateau,
  ``u ~ Beta(GAIN_A, GAIN_B) + GAIN_QUALITY * q`` (assumed: about 30 % per step), so every lineage plateaus.
  A child's approach quality is its parent's plus N(0, ``APPROACH_STEP``).
- **The judge** adds 3 % log-normal noise and calls a speedup ``faster`` above 1.02x.
- **Common random numbers**: an idea's outcome depends only on the seed and the idea's place in the tree (its
  variant's key and plan number), so every policy, and the oracle, meet the same world and differ only in
  what they choose to try. ``ideas`` and ``outcome`` are pure for that reason.

The earlier model drew one ceiling per problem (CUDA-L1's score) and made every step gain a fraction of the
headroom left below a lineage's ceiling, so a lineage's first gain revealed how high it would go: nothing
deceptive, and greedy's first choice was nearly always right. Its ceiling was also the hard cap of every
lineage, CUDA graphs had no place in it, and first attempts were never slower than their parent by design.
No per-step data of real LLM searches is available to us, so the step parameters remain assumptions, kept
from the earlier model; the plateaus, the first-attempt ratios, the graph share and the failure anchors are
measured.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

from kernelpro.harness.result import EvalResult
from kernelpro.search.priors import rank_priors
from kernelpro.search.tree import Idea, VariantTree

DATA = Path(__file__).resolve().parent / "data" / "search_world.json"
REFERENCE = "class Model:\n    pass\n"
IDEAS_PER_PLAN = 5
PRIOR_NOISE = 1.0
FAIL_BASE, FAIL_QUALITY, FAIL_DEPTH = -0.45, 0.6, 0.08
GAIN_A, GAIN_B, GAIN_QUALITY = 1.2, 3.0, 0.15
WORSE_BASE, WORSE_QUALITY = 0.3, 0.12
APPROACH_STEP = 0.5
SWITCH = 0.25
REACH = 1.5
GRAPH_SPREAD = 0.05
NOISE = 0.03
WINSOR = 0.95


@dataclass(frozen=True)
class Problem:
    kernel: float
    graph: float | None

    @property
    def ceiling(self) -> float:
        return max(self.kernel, self.graph or 0.0, 1.0)


def load_problems(path: Path = DATA) -> tuple[list[Problem], str]:
    """The measured problems, ``kernel`` winsorised at its ``WINSOR`` quantile."""
    data = json.loads(path.read_text())
    kernels = sorted(row["kernel"] for row in data["problems"])
    cap = kernels[int(WINSOR * (len(kernels) - 1))]
    found = [Problem(min(row["kernel"], cap), row["graph"]) for row in data["problems"]]
    return found, f"{path.name}: {len(found)} CUDA-L1 H100 tasks, kernel winsorised at {cap:.3g}x"


def first_attempt_ratios(path: Path = DATA) -> list[float]:
    return list(json.loads(path.read_text())["first_attempt_ratios"])


GRAPH_SHARE = float(json.loads(DATA.read_text())["graph_share"])


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def logit(p: float) -> float:
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class Latent:
    """What the simulation knows of a variant and the judge does not."""

    speedup: float
    approach: float
    key: str
    log_plateau: float = 0.0
    """Its lineage's plateau: refinements climb towards it and never above."""
    lineage: str = "reference"


@dataclass(frozen=True)
class PlannedIdea:
    title: str
    quality: float
    seen: float
    kind: str  # "graph", "kernel" (a new kernel lineage) or "refine"


class World:
    """One simulated problem: the latent truth of every variant, the planner and the judge."""

    def __init__(self, seed: int, problem: Problem, ratios: list[float]) -> None:
        self.seed, self.problem, self.ratios = seed, problem, ratios
        self.latent: dict[str, Latent] = {}
        self.planned: dict[str, PlannedIdea] = {}
        self.log_ceiling = math.log(problem.ceiling)

    @property
    def root(self) -> Latent:
        return Latent(1.0, 0.0, "r")

    def rng(self, *key: object) -> random.Random:
        return random.Random(":".join(map(str, (self.seed, *key))))

    # -- the pure model -----------------------------------------------------------------------------------
    def ideas(self, node: Latent, plan: int) -> list[PlannedIdea]:
        """The ``plan``-th plan from ``node``, in the order drawn (not ranked)."""
        rng = self.rng("plan", node.key, plan)
        found = []
        for index in range(IDEAS_PER_PLAN):
            quality = node.approach + rng.gauss(0, 1)
            kind_draw = rng.random()
            if node.lineage == "reference":
                kind = "graph" if kind_draw < GRAPH_SHARE and self.problem.graph else "kernel"
            else:
                kind = "kernel" if kind_draw < SWITCH else "refine"
            promise = self._graph_quality() if kind == "graph" else quality
            seen = promise + rng.gauss(0, PRIOR_NOISE)
            found.append(PlannedIdea(f"{node.key}.{plan}.{index}", quality, seen, kind))
        return found

    def _graph_quality(self) -> float:
        share = math.log(self.problem.graph) / self.log_ceiling if self.log_ceiling > 1e-9 else 0.0
        return logit(min(0.98, max(0.02, share))) / REACH

    def outcome(self, parent: Latent, idea: PlannedIdea, depth: int) -> Latent | None:
        """The child ``idea`` makes of ``parent``: its latent truth, or None when it fails."""
        q = idea.quality
        rng = self.rng("outcome", idea.title)
        approach = parent.approach + rng.gauss(0, APPROACH_STEP)
        if rng.random() < sigmoid(FAIL_BASE - FAIL_QUALITY * q + FAIL_DEPTH * depth):
            return None
        if idea.kind == "graph":
            log_speedup = math.log(self.problem.graph) + rng.gauss(0, GRAPH_SPREAD)
            return Latent(math.exp(log_speedup), approach + 0.2 * q, idea.title, math.log(self.problem.graph),
                          "graph")
        if idea.kind == "kernel":
            plateau = sigmoid(REACH * q) * math.log(self.problem.kernel)
            first = min(1.0, rng.choice(self.ratios))
            return Latent(math.exp(plateau + math.log(first)), approach + 0.2 * q, idea.title, plateau, "kernel")
        headroom = max(0.0, parent.log_plateau - math.log(parent.speedup))
        u = min(1.0, max(0.0, rng.betavariate(GAIN_A, GAIN_B) + GAIN_QUALITY * q))
        worse = rng.random() < min(0.6, max(0.05, WORSE_BASE - WORSE_QUALITY * q))
        step = -abs(rng.gauss(0, 0.3)) if worse else u * headroom
        return Latent(parent.speedup * math.exp(step), approach + 0.2 * q, idea.title, parent.log_plateau,
                      parent.lineage)

    # -- driven through a real VariantTree ----------------------------------------------------------------
    def plan(self, tree: VariantTree, variant_id: str) -> list[Idea]:
        variant = tree.get(variant_id)
        drafted = sorted(self.ideas(self.latent[variant_id], variant.plans), key=lambda i: -i.seen)
        for idea in drafted:
            self.planned[idea.title] = idea
        return rank_priors([Idea(title=i.title, description=i.title, expected_speedup=math.exp(0.15 * i.seen + 0.1))
                            for i in drafted])

    def judge(self, tree: VariantTree, child_id: str) -> EvalResult:
        child = tree.get(child_id)
        parent = self.latent[child.parent_id]
        latent = self.outcome(parent, self.planned[child.idea], child.depth)
        if latent is None:
            self.latent[child_id] = Latent(0.0, parent.approach, child.idea, parent.log_plateau, parent.lineage)
            return EvalResult(status="incorrect", reason="mismatch", message="simulated failure")
        self.latent[child_id] = latent
        measured = latent.speedup * math.exp(self.rng("measure", child.idea).gauss(0, NOISE))
        verdict = "faster" if measured > 1.02 else ("slower" if measured < 0.98 else "same")
        return EvalResult(status="ok", correct=True, speedup=measured,
                          speedup_ci95=[measured * 0.97, measured * 1.03], speed_verdict=verdict)
