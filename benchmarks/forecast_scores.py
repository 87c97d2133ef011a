"""Score the forecasters on a judged dataset, held out by problem: the model-free forecaster against the class
prior (the training split's class frequencies), over several random problem splits.

    python benchmarks/forecast_scores.py benchmarks/results/forecast_dataset_h200.jsonl \\
        --out benchmarks/results/forecast_scores_h200

Per split seed, 30% of the problems are held out (no problem in both train and test); both forecasters are fitted
on the rest and scored on them. Writes ``held_out_scores.json`` (every seed, and each score's mean and standard
deviation over the seeds) and, for seed 0, the report with its plots (``report.md``, ``risk_coverage.png``...). Also
the standard deviation of the model-free forecaster's error in log expected speedup, the ``sigma`` of the gate
simulation's forecaster (``benchmarks/search_gate.py --sigmas``), so the simulated gate can be read at the
measured sharpness.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelpro.forecast.dataset import read_rows, split_by_problem  # noqa: E402
from kernelpro.forecast.evaluate import evaluate, inputs_for, scored_rows, truth_class  # noqa: E402
from kernelpro.forecast.model_free import ClassPrior, ModelFree  # noqa: E402
from kernelpro.forecast.report import Scored, write_report  # noqa: E402


def one_split(rows, seed: int, holdout: float):
    train, test = split_by_problem(rows, holdout, seed)
    usable = scored_rows(train)
    model = ModelFree.fit([inputs_for(r) for r in usable], [r.speed_class for r in usable])
    prior = ClassPrior([r.speed_class for r in usable])
    scored, model_forecasts = [], []
    for forecaster in (model, prior):
        report, forecasts = evaluate(forecaster, test)
        scored.append(Scored(report, forecasts, [truth_class(r) for r in test]))
        model_forecasts = model_forecasts or forecasts
    errors = [math.log(f.expected_speedup) - math.log(r.speedup) for f, r in zip(model_forecasts, test, strict=True)
              if truth_class(r) >= 1]
    split = {"seed": seed, "train_problems": len({r.problem_hash for r in train}), "train_rows": len(train),
             "test_problems": len({r.problem_hash for r in test}), "test_rows": len(test),
             "log_error_sd": float(np.std(errors)) if errors else None}
    return scored, split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--holdout", type=float, default=0.3)
    args = parser.parse_args()
    rows = read_rows(args.dataset)
    seeds, first = [], None
    for seed in range(args.seeds):
        scored, split = one_split(rows, seed, args.holdout)
        first = first or (scored, split)
        seeds.append({**split, "forecasters": [s.report for s in scored]})
    summary: dict = {}
    for index, name in enumerate(s["forecaster"] for s in seeds[0]["forecasters"]):
        for view in ("all", "parsed"):
            keys = [k for k, v in seeds[0]["forecasters"][index][view].items() if isinstance(v, float | int)]
            for key in keys:
                values = [s["forecasters"][index][view][key] for s in seeds]
                values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
                if values:
                    summary.setdefault(name, {}).setdefault(view, {})[key] = {
                        "mean": round(statistics.fmean(values), 4),
                        "sd": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0}
    sigmas = [s["log_error_sd"] for s in seeds if s["log_error_sd"] is not None]
    out = {"dataset": str(args.dataset), "rows": len(rows), "problems": len({r.problem_hash for r in rows}),
           "correct_rows": len(scored_rows(rows)), "holdout": args.holdout, "seeds": args.seeds,
           "hardware": sorted({r.hardware for r in rows}), "summary": summary,
           "model_free_log_error_sd": round(statistics.fmean(sigmas), 4) if sigmas else None, "per_seed": seeds}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "held_out_scores.json").write_text(json.dumps(out, indent=1) + "\n")
    scored, split = first
    notes = [f"Held out by problem, seed 0: {split['test_problems']} problems ({split['test_rows']} candidates) "
             f"scored, {split['train_problems']} others ({split['train_rows']}) fitted on. Means and standard "
             f"deviations over {args.seeds} splits are in held_out_scores.json."]
    write_report(args.out, scored, f"Forecasters on {args.dataset.name} (held-out problems)", notes)
    for name, views in summary.items():
        picked = {k: f"{v['mean']:.3f}±{v['sd']:.3f}" for k, v in views["all"].items()
                  if k in ("accuracy", "accuracy_within_1", "half_brier", "crps", "nll", "ece", "aurc_max_prob",
                           "recovered_top_1pct", "recovered_top_10pct", "recovered_top_50pct",
                           "mape_expected_speedup", "spearman")}
        print(name, json.dumps(picked))
    print(f"model-free log error sd {out['model_free_log_error_sd']} (the gate simulation's sigma); report in "
          f"{args.out}")


if __name__ == "__main__":
    main()
