"""What a run is asked, as one typed object: the problem, the device, the budgets, the search's choices, the run's
flags, and where it lives.

`kernelpro optimize` builds it from its options (a resumed run from its ``run.json`` and the options given now),
LangGraph Studio from its JSON inputs, a suite's job from the ledger. ``run_meta`` is what ``run.json`` holds of
it; ``optimize_args`` and ``resume_args`` are the command line that starts it, or goes on with it, in a process of
its own (a suite's job runs each problem so).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kernelpro.config import Settings

__all__ = ["Budgets", "RunSpec"]


class Budgets(BaseModel):
    """A run's limits; None is no limit. One that allows nothing (no candidate, no time, no dollars) is refused."""

    max_iters: int = Field(8, ge=1)  # candidates judged
    time_s: float | None = Field(None, gt=0)  # time spent working (nodes), across resumes
    gpu_s: float | None = Field(None, gt=0)
    usd: float | None = Field(None, gt=0)

    @property
    def recursion_limit(self) -> int:
        # at most ~14 steps per batch (a batch judges at least one candidate), plus empty plans; always bounded
        return self.max_iters * 14 + 60


class RunSpec(BaseModel):
    """One run, as asked. The search's choices left None are the settings' (``apply`` sets those given)."""

    problem_path: Path
    runs_dir: Path
    run_id: str | None = None
    """None: a new run gets an id made from the time and the problem's name."""
    device: str = "auto"
    """``cpu`` or ``cuda`` once resolved; ``auto`` leaves it to the process that runs it (a suite's job)."""
    budgets: Budgets = Field(default_factory=Budgets)
    policy: str | None = None  # search.policy
    objective: str | None = None  # search.objective
    model: str | None = None  # llm.model; None runs the built-in recipes unless the settings name one
    correctness: str | None = None  # harness.correctness_profile
    scorecard: str | None = None  # search.scorecard
    interactive: bool = False
    no_memory: bool = False
    no_profile: bool = False
    baselines: list[str] = Field(default_factory=list)
    """The compile baselines the run judges before its search (``--baselines``)."""
    judged_before: Path | None = None
    """Verdicts taken before the run whose code is not judged again (``--judged-before``), adopted by a new run."""
    studio: bool = False
    """Started from LangGraph Studio, whose ``run.json`` says so and leaves out what Studio cannot ask."""

    def run_meta(self, problem_name: str) -> dict[str, Any]:
        """What ``run.json`` holds of the run (beside its id, its creation time and, at its end, its status)."""
        meta: dict[str, Any] = {
            "problem_path": str(self.problem_path), "problem": problem_name, "device": self.device,
            "budgets": self.budgets.model_dump(), "interactive": self.interactive, "model": self.model,
            "no_memory": self.no_memory, "no_profile": self.no_profile, "search_policy": self.policy}
        if self.studio:
            return meta | {"studio": True}
        return meta | {"objective": self.objective, "baselines": list(self.baselines),
                       "correctness": self.correctness, "scorecard": self.scorecard}

    def apply(self, settings: Settings) -> None:
        """Make ``settings`` the run's: its model, policy, objective, correctness check and scorecard where given."""
        if self.model:
            settings.llm.model = self.model
        if self.policy is not None:
            settings.search.policy = self.policy  # type: ignore[assignment]
        if self.objective is not None:
            settings.search.objective = self.objective  # type: ignore[assignment]
            settings.apply_objective()
        if self.correctness is not None:
            settings.harness.correctness_profile = self.correctness  # type: ignore[assignment]
            settings.harness.apply_correctness_profile()
        if self.scorecard is not None:
            settings.search.scorecard = self.scorecard  # type: ignore[assignment]

    def optimize_args(self, *, as_json: bool = False) -> list[str]:
        """`kernelpro optimize`'s arguments that start this run under its id; ``as_json``: its summary as the last
        line of its output."""
        args = [str(self.problem_path), *self._id_args(), "--runs-dir", str(self.runs_dir), "--device", self.device,
                "--max-iters", str(self.budgets.max_iters), *(["--json"] if as_json else []), *self._baseline_args(),
                *self._budget_args()]
        for flag, value in (("--policy", self.policy), ("--objective", self.objective), ("--model", self.model),
                            ("--judged-before", self.judged_before), ("--correctness", self.correctness),
                            ("--scorecard", self.scorecard)):
            if value:
                args += [flag, str(value)]
        flags = (("--interactive", self.interactive), ("--no-memory", self.no_memory),
                 ("--no-profile", self.no_profile))
        return args + [flag for flag, on in flags if on]

    def resume_args(self, *, with_budgets: bool = False, as_json: bool = False) -> list[str]:
        """`kernelpro optimize`'s arguments that resume this run: the baselines it still lacks, and with
        ``with_budgets`` its time, GPU and dollar budgets given anew (it goes on under them)."""
        if not self.run_id:
            raise ValueError("a run is resumed by its id; this one has none")
        return ["--resume", self.run_id, "--runs-dir", str(self.runs_dir), *(["--json"] if as_json else []),
                *self._baseline_args(), *(self._budget_args() if with_budgets else [])]

    def _id_args(self) -> list[str]:
        return ["--run-id", self.run_id] if self.run_id is not None else []

    def _baseline_args(self) -> list[str]:
        return ["--baselines", ",".join(self.baselines)] if self.baselines else []

    def _budget_args(self) -> list[str]:
        """Whole seconds, at least one; dollars to the micro-dollar, at least one (a share left near 0 still
        reads above 0)."""
        args: list[str] = []
        for flag, value in (("--time-budget", self.budgets.time_s), ("--gpu-budget", self.budgets.gpu_s)):
            if value is not None:
                args += [flag, f"{max(value, 1.0):.0f}s"]
        if self.budgets.usd is not None:
            args += ["--usd-budget", f"{max(self.budgets.usd, 1e-6):.6f}"]
        return args
