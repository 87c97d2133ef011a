"""RunSpec: what a run is asked, round-tripped as JSON, written as run.json's fields, applied to the settings, and
turned into the command line that starts or resumes the run."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kernelpro.config import Settings
from kernelpro.runs.spec import Budgets, RunSpec

PROBLEM = Path("/problems/scale_relu.py")


def full_spec(**fields) -> RunSpec:
    return RunSpec(**{"problem_path": PROBLEM, "runs_dir": Path("/runs"), "run_id": "r-1", "device": "cuda",
                      "budgets": Budgets(max_iters=3, time_s=90.0, gpu_s=30.0, usd=0.25), "policy": "greedy",
                      "objective": "energy", "model": "openai/gpt-5", "correctness": "kernelbench",
                      "scorecard": "kernelbench", "interactive": True, "no_memory": True, "no_profile": True,
                      "baselines": ["compile_default"], "judged_before": Path("/verdicts.jsonl"), **fields})


@pytest.mark.parametrize("spec", [full_spec(), RunSpec(problem_path=PROBLEM, runs_dir=Path("runs")),
                                  full_spec(studio=True, run_id=None)])
def test_a_spec_round_trips_through_json(spec):
    again = RunSpec.model_validate_json(spec.model_dump_json())
    assert again == spec
    assert again.run_meta("scale_relu") == spec.run_meta("scale_relu")


def test_run_json_holds_what_optimize_wrote_before_the_spec():
    meta = full_spec().run_meta("scale_relu")
    assert list(meta) == ["problem_path", "problem", "device", "budgets", "interactive", "model", "no_memory",
                          "no_profile", "search_policy", "objective", "baselines", "correctness", "scorecard"]
    assert meta["problem_path"] == str(PROBLEM) and meta["search_policy"] == "greedy"
    assert meta["budgets"] == {"max_iters": 3, "time_s": 90.0, "gpu_s": 30.0, "usd": 0.25}
    studio = full_spec(studio=True).run_meta("scale_relu")  # what Studio cannot ask is left out, as before
    assert list(studio)[-1] == "studio" and studio["studio"] is True and "objective" not in studio


def test_a_budget_that_allows_nothing_is_refused():
    with pytest.raises(ValidationError):
        RunSpec(problem_path=PROBLEM, runs_dir=Path("runs"), budgets={"max_iters": 0})
    with pytest.raises(ValidationError):
        Budgets(usd=0)


def test_apply_makes_the_settings_the_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = Settings()
    full_spec().apply(settings)
    assert (settings.llm.model, settings.search.policy, settings.search.objective, settings.search.scorecard,
            settings.harness.correctness_profile) == ("openai/gpt-5", "greedy", "energy", "kernelbench",
                                                     "kernelbench")
    assert settings.harness.energy and settings.harness.scaled_trials == 0  # their side effects, as the CLI's
    before = settings.model_dump()
    RunSpec(problem_path=PROBLEM, runs_dir=Path("runs")).apply(settings)  # nothing given: nothing changed
    assert settings.model_dump() == before


def test_the_command_line_starts_the_run_and_resumes_it():
    spec = full_spec(budgets=Budgets(max_iters=2, time_s=0.2, usd=1e-9))
    args = spec.optimize_args(as_json=True)
    assert args[:11] == [str(PROBLEM), "--run-id", "r-1", "--runs-dir", "/runs", "--device", "cuda", "--max-iters",
                         "2", "--json", "--baselines"]
    assert args[args.index("--time-budget") + 1] == "1s" and "--gpu-budget" not in args
    assert args[args.index("--usd-budget") + 1] == "0.000001"
    for flag, value in (("--policy", "greedy"), ("--objective", "energy"), ("--model", "openai/gpt-5"),
                        ("--judged-before", "/verdicts.jsonl"), ("--correctness", "kernelbench"),
                        ("--scorecard", "kernelbench")):
        assert args[args.index(flag) + 1] == value
    assert args[-3:] == ["--interactive", "--no-memory", "--no-profile"]
    plain = RunSpec(problem_path=PROBLEM, runs_dir=Path("runs")).optimize_args()
    assert plain == [str(PROBLEM), "--runs-dir", "runs", "--device", "auto", "--max-iters", "8"]
    assert spec.resume_args(as_json=True) == ["--resume", "r-1", "--runs-dir", "/runs", "--json", "--baselines",
                                              "compile_default"]
    assert spec.resume_args(with_budgets=True)[-4:] == ["--time-budget", "1s", "--usd-budget", "0.000001"]
    with pytest.raises(ValueError, match="by its id"):
        full_spec(run_id=None).resume_args()
