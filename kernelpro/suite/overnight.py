"""``suite run --overnight``: a whole benchmark that plans itself, cheap problems first.

The plan is made once, when the suite is made, and kept with its config in the ledger, so ``--resume`` goes on
with the same order, shares and projection:

- **Each problem's cost**, best known first: its cached compile baselines' verdicts (one judgment's device seconds
  on this machine, times the verdicts a run takes), else its share of what a problem nothing is known of costs
  (earlier suites' finished problems here, else ``suite.overnight_gpu_minutes_per_problem``) in proportion to its
  static size (``static_size``: its level and its inputs, read from its source). Wall time is that GPU time plus
  what a problem spends beside it (the same for every problem).
- **The order**: cheapest first, so a suite its budget cuts still has most problems scored; ties keep the
  sources' order (KernelBench's).
- **The shares**: each problem's share of the suite's time and GPU budgets follows its estimated wall time
  (``budget.share``'s weights), never below ``suite.overnight_share_floor`` of an equal share.
- **The projection**: the sum over the lanes, said in one line before the first problem starts, and set beside
  what the suite took in its report.
"""

from __future__ import annotations

import statistics

from pydantic import BaseModel

from kernelpro.config import Settings
from kernelpro.suite.overnight_costs import Measured, PerProblem
from kernelpro.suite.sources import ProblemRef
from kernelpro.suite.static_size import static_weight


class Estimate(BaseModel):
    """One problem's estimated cost: GPU seconds, a lane's wall seconds, and whether a cached verdict measured it."""

    gpu_s: float
    wall_s: float
    known: bool


class Projection(BaseModel):
    """What the plan expects the suite to take, said before it starts."""

    problems: int
    lanes: int
    wall_s: float
    gpu_s: float
    known: int
    budget_s: float | None
    reach: int
    """The problems the time budget reaches, cheapest first, each at its estimated cost."""
    text: str


class OvernightPlan(BaseModel):
    """The order, each problem's estimate and share weight, and where the figures came from."""

    estimates: dict[str, Estimate]
    """In the plan's order (the ledger's too)."""
    weights: dict[str, float]
    """Each problem's weight in the budgets' shares: its estimated wall seconds, floored."""
    per_problem_gpu_s: float
    per_problem_wall_s: float
    figure: str
    """Where the per-problem figure for problems nothing is known of came from, in words."""
    lanes_per_gpu: int = 1
    budget_defaulted: bool = False
    """No ``--time-budget`` was given: the suite has ``suite.overnight_time_budget_s``."""
    projection: Projection | None = None

    def weight(self, key: str) -> float:
        """``key``'s share weight (the mean weight for a problem the plan does not know)."""
        return self.weights.get(key) or statistics.mean(self.weights.values() or [1.0])


def make_plan(refs: list[ProblemRef], measured: dict[str, Measured], figure: PerProblem, judgments: int,
              settings: Settings, lanes_per_gpu: int = 1, budget_defaulted: bool = False
              ) -> tuple[list[ProblemRef], OvernightPlan]:
    """``refs`` cheapest first, and the plan: ``measured`` (cached judgments by key) for the problems it holds,
    ``figure`` shared in proportion to their static size for the others."""
    static = {ref.key: static_weight(ref.path, ref.level, settings.suite.overnight_level_weights)[0]
              for ref in refs if ref.key not in measured}
    mean_static = statistics.mean(static.values()) if static else 1.0
    estimates = {}
    for ref in refs:
        if ref.key in measured:
            gpu, known = measured[ref.key].judgment_s * judgments, True
        else:
            gpu, known = figure.gpu_s * static[ref.key] / mean_static, False
        estimates[ref.key] = Estimate(gpu_s=gpu, wall_s=figure.overhead_s + gpu, known=known)
    ordered = sorted(refs, key=lambda ref: estimates[ref.key].gpu_s)  # stable: ties keep the sources' order
    floor = settings.suite.overnight_share_floor * statistics.mean(e.wall_s for e in estimates.values()) \
        if estimates else 0.0
    plan = OvernightPlan(estimates={ref.key: estimates[ref.key] for ref in ordered},
                         weights={ref.key: max(estimates[ref.key].wall_s, floor) for ref in ordered},
                         per_problem_gpu_s=figure.gpu_s, per_problem_wall_s=figure.wall_s, figure=figure.source,
                         lanes_per_gpu=lanes_per_gpu, budget_defaulted=budget_defaulted)
    return ordered, plan


def _lanes_words(lanes: int, lanes_per_gpu: int, device: str) -> str:
    if device != "cuda":
        return f"on the CPU ({lanes} lane{'s' * (lanes != 1)})"
    gpus = max(1, lanes // max(1, lanes_per_gpu))
    where = f"on {gpus} GPU{'s' * (gpus != 1)}"
    return where if lanes == gpus else f"{where}, {lanes} lanes"


def project(plan: OvernightPlan, lanes: int, device: str, budget_s: float | None) -> Projection:
    """The suite's wall and GPU time by the plan over ``lanes``, and how many problems ``budget_s`` reaches."""
    lanes = max(1, lanes)
    walls = [e.wall_s for e in plan.estimates.values()]
    wall, gpu = sum(walls) / lanes, sum(e.gpu_s for e in plan.estimates.values())
    reach, elapsed = 0, 0.0
    for seconds in walls:
        elapsed += seconds / lanes
        if budget_s is not None and elapsed > budget_s:
            break
        reach += 1
    known = sum(e.known for e in plan.estimates.values())
    unit = "GPU" if device == "cuda" else "CPU"
    text = (f"overnight plan: {len(walls)} problem{'s' * (len(walls) != 1)}, cheap first; about {wall / 3600:.1f} "
            f"hours {_lanes_words(lanes, plan.lanes_per_gpu, device)}, about {gpu / 3600:.1f} {unit}-hours (from "
            f"{known} cached baseline{'s' * (known != 1)} and {plan.figure})")
    if budget_s is not None:
        budget = f"the {budget_s / 3600:.1f}-hour time budget" + \
            (" (suite.overnight_time_budget_s: no --time-budget was given)" if plan.budget_defaulted else "")
        text += (f"; within {budget}" if reach == len(walls) else
                 f"; more than {budget}, which reaches about {reach} of them")
    return Projection(problems=len(walls), lanes=lanes, wall_s=round(wall, 1), gpu_s=round(gpu, 1), known=known,
                      budget_s=budget_s, reach=reach, text=text)


def audit(plan: OvernightPlan | None, active_s: float, gpu_s: float) -> dict | None:
    """The plan's projection beside what the suite took so far (the suite's JSON object's ``overnight``)."""
    if plan is None or plan.projection is None:
        return None
    projected = plan.projection
    return {"plan": projected.text, "problems": projected.problems, "reach": projected.reach,
            "projected_wall_s": projected.wall_s, "projected_gpu_s": projected.gpu_s,
            "wall_s": round(active_s, 1), "gpu_s": round(gpu_s, 1)}


def audit_rows(audited: dict | None, device: str) -> list[tuple[str, str]]:
    """The report's rows: the plan's line, then the hours it projected beside those taken."""
    if not audited:
        return []
    unit = "GPU" if device == "cuda" else "CPU"
    return [("Overnight plan", audited["plan"]),
            ("Planned against taken", f"{audited['projected_wall_s'] / 3600:.2f} hours planned, "
                                      f"{audited['wall_s'] / 3600:.2f} taken; {audited['projected_gpu_s'] / 3600:.2f} "
                                      f"{unit}-hours planned, {audited['gpu_s'] / 3600:.2f} taken")]


def plan_suite(refs: list[ProblemRef], device: str, max_iters: int, runs_dir, settings: Settings,
               budget_defaulted: bool, local: bool = True) -> tuple[list[ProblemRef], OvernightPlan]:
    """The plan of a new overnight suite from what this machine knows (``overnight_costs``); ``local``: its lanes
    are this machine's (not Ray's), so their number per GPU is fitted to the GPU's memory."""
    from kernelpro.suite import overnight_costs as costs

    judgments = costs.judgments_per_problem(max_iters, settings)
    measured = costs.cached_judgments(refs, device, settings)
    lanes = 1
    if device == "cuda" and local:
        peaks = [m.peak_mb for m in measured.values() if m.peak_mb]
        lanes = costs.lanes_per_gpu(settings.suite.lanes_per_gpu, costs.gpu_memory_mb() if peaks else None,
                                    max(peaks, default=None))
    return make_plan(refs, measured, costs.per_problem(runs_dir, device, judgments, settings), judgments, settings,
                     lanes, budget_defaulted)
