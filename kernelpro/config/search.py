"""How the search chooses, plans and re-judges variants."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from kernelpro.config.names import named_in
from kernelpro.seams import SEARCH_POLICIES

Objective = Literal["time", "energy", "edp"]
Scorecard = Literal["kernelpro", "kernelbench"]


class SearchSettings(BaseModel):
    """How a run decides its best."""

    objective: Objective = "time"
    """What the search's reward and the run's best follow (``kernelpro.search.objective``): ``time`` (the
    speedup), ``energy`` (joules per call) or ``edp`` (joules times seconds per call). ``energy`` and ``edp`` need
    NVML's energy counter on a GPU and turn ``harness.energy`` on; a candidate improves when its energy (or EDP)
    call says less beyond its interval, whatever its speed, which the report shows beside it."""

    scorecard: Scorecard = "kernelpro"
    """Which reading of the timed rounds decides a best under the time objective (both are reported):
    ``kernelpro`` (each round's cost the larger of the GPU span and the host's issue time, the median of paired
    ratios: ``EvalResult.speedup``) or ``kernelbench`` (KernelBench's convention, the mean of CUDA events behind
    the L2 flush with no host floor: ``EvalResult.kernelbench``). Under ``kernelbench`` a candidate improves when
    that interval's low end is above 1 and its estimate at least ``1 + harness.min_effect``; a verdict without it
    never improves."""

    finalists: int = 3
    """Candidates judged again at the end of a run, head to head with the reference in one fresh worker with
    more rounds; the run's best comes from that re-judgment (0: the first verdicts decide). One whose first
    verdict, on a quiet machine, was slower (more energy, under an energy objective) beyond its interval is not
    judged again: it could not become the best."""
    finalist_rounds_factor: float = 3.0
    """The re-judgment's most rounds, least rounds and time cap, as multiples of the harness's; its interval's
    target width is divided by the same factor."""
    policy: Annotated[str, named_in(SEARCH_POLICIES)] = "auto"
    """Which variants to grow (``kernelpro.seams.SEARCH_POLICIES``): ``mcts`` (tree search with priors), ``greedy``
    (the fastest first), ``beam`` (the ``beam_width`` fastest, ``beam_ideas`` ideas each), ``recipes`` (greedy over
    the built-in recipes, no model) or a policy registered there. ``auto``: ``mcts`` with a language model,
    ``recipes`` without."""
    batch_size: int = Field(4, ge=1)
    """Candidates written in parallel and judged together per step of the loop."""
    ideas_per_plan: int = Field(5, ge=1)
    """Ideas the planner is asked for each time it plans from a variant."""
    max_children: int = Field(8, ge=1)
    """Children a variant may ever have."""
    widening: float = Field(3.0, gt=0)
    """Progressive widening: a variant with N verdicts below it may have ``widening * (N + 1) ** alpha``
    children. 3 (with ``dead_end_after`` 4 and ``fpu`` 0.2) against 2: MCTS 1.6 % / 3.1 % better at 32 / 64 judged,
    greedy -0.6 % / +1.2 %, on the simulation's tuning seeds (``benchmarks/results/search_policies_tuning.json``)."""
    alpha: float = Field(0.5, ge=0)
    """Progressive widening's exponent."""
    dead_end_after: int = Field(4, ge=1)
    """A variant whose last this many children (each with its subtree) all failed or gained less than ``min_gain``
    is not grown again. 4 did best of 2, 3 and 4 for MCTS in the simulation's tuning (``widening`` says more)."""
    min_gain: float = 0.02
    """The least gain over its parent that counts as progress (0.02: 2%)."""
    max_plans: int = Field(3, ge=1)
    """Times the planner may be asked for ideas from one variant in all."""
    c_puct: float = Field(0.5, ge=0)
    """MCTS: weight of the prior-driven exploration term against the calibrated value (rewards in [0, 1]); 0.5
    did best of 0.25, 0.5, 1 and 2 in ``benchmarks/search_policies_tune.py``."""
    best_weight: float = Field(0.7, ge=0, le=1)
    """MCTS: a subtree's value is this times its best reward plus the rest times its mean reward."""
    branching: float = Field(1.0, ge=0)
    """MCTS asymmetric branching: a variant's widening allowance is multiplied by ``1 + branching * value``."""
    virtual_loss: float = Field(1.0, ge=0)
    """MCTS: lost visits counted on a path per expansion already chosen in the batch, to spread a batch out."""
    fpu: float = 0.2
    """MCTS first-play urgency: a new child starts at its parent's own reward less this (0.2 did best of 0, 0.1,
    0.2 and 0.4 in ``benchmarks/search_policies_tune.py``)."""
    plan_prior: float = Field(0.5, ge=0)
    """MCTS: the prior of growing a variant whose ideas are yet to be planned."""
    planner_code_tokens: int = Field(6000, ge=0)
    """How much of the fastest variants' code the planner sees, in tokens (about four characters each)."""
    beam_width: int = Field(2, ge=1)
    """Beam: how many of the fastest variants are grown at once."""
    beam_ideas: int = Field(2, ge=1)
    """Beam: ideas tried from each of them per batch."""
