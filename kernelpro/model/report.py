"""What a model run found and did: ``report.md`` and the one JSON object of ``--json``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelpro.atomic_write import write_atomic
from kernelpro.harness.timing.stats import speedup_text
from kernelpro.model.finish import ModelOutcome
from kernelpro.model.plan import ModelPlan

MODULE_ROWS = 12


def _x(value: float | None, ci: list[float] | None = None) -> str:
    return speedup_text(value, ci) if value else "-"


def summary(plan: ModelPlan, outcome: ModelOutcome) -> dict[str, Any]:
    """``--json``'s last line."""
    final = outcome.end_to_end
    return {"model_run": plan.directory.name, "status": outcome.status, "device": plan.device,
            "regions": [row.to_dict() for row in outcome.regions],
            "end_to_end_speedup": final.speedup if final else None,
            "end_to_end_ci95": final.speedup_ci95 if final else None,
            "end_to_end_correct": (final.status == "ok" and final.correct) if final else None,
            "predicted_speedup": outcome.predicted, "suite_id": plan.suite_id,
            "patched_model": str(outcome.patched_model) if outcome.patched_model else None,
            "report": str(outcome.report) if outcome.report else None, "run_dir": str(plan.directory)}


def region_table(plan: ModelPlan) -> list[str]:
    """The regions by share, with Amdahl's ceiling, as markdown rows."""
    lines = ["| region | time per forward | share | ceiling (1/(1-share)) | problem |", "|---|---:|---:|---:|---|"]
    for entry in sorted(plan.regions, key=lambda e: e.share, reverse=True):
        ceiling = f"{entry.ceiling:.2f}x" if entry.ceiling else "unbounded"
        problem = Path(entry.problem).name if entry.problem else (f"skipped: {entry.skipped}" if entry.skipped
                                                                   else "-")
        lines.append(f"| `{entry.region.name}` | {entry.time_us:.1f} µs | {entry.share:.1%} | {ceiling} | "
                     f"{problem} |")
    return lines


def write_report(plan: ModelPlan, outcome: ModelOutcome) -> Path:
    final = outcome.end_to_end
    lines = [f"# {plan.name}: kernelpro model", "",
             f"Device {plan.device}; the forward's operators took {plan.total_us:.1f} µs per call when profiled.", ""]
    if final is not None:
        verdict = "correct" if final.status == "ok" and final.correct else f"{final.status} ({final.reason})"
        lines += [f"**End to end**: {_x(final.speedup, final.speedup_ci95)} measured by the judge (95% interval), "
                  f"{verdict} against the original on the judge's fresh inputs; Amdahl's law predicted "
                  f"{_x(outcome.predicted)} from the spliced regions' own speedups and shares.", "",
                  f"The patched model: `{outcome.patched_model}` (build `ModelNew` with the model's arguments).", ""]
    else:
        lines += [f"**No region was spliced** ({outcome.status}): the model stays as it is.", ""]
    lines += ["## Regions", "", *region_table(plan), "", "## Optimised regions", "",
              "| region | share | best (suite) | spliced | predicted gain | measured gain | note |",
              "|---|---:|---:|:-:|---:|---:|---|"]
    for row in outcome.regions:
        if row.problem:
            lines.append(f"| `{row.name}` | {row.share:.1%} | {_x(row.best, row.best_ci95)} | "
                         f"{'yes' if row.spliced else 'no'} | {_x(row.predicted_gain)} | "
                         f"{_x(row.measured_gain, row.measured_ci95)} | {row.note.replace('|', '/')[:200]} |")
    modules = sorted(plan.modules.items(), key=lambda item: item[1], reverse=True)[:MODULE_ROWS]
    if modules and plan.total_us > 0:
        lines += ["", "## Modules", "", "| module | time per forward | share |", "|---|---:|---:|"]
        lines += [f"| `{path}` | {spent:.1f} µs | {spent / plan.total_us:.1%} |" for path, spent in modules]
    if plan.suite_id:
        lines += ["", f"The regions' suite: `{plan.suite_id}` in `{plan.suites_dir}` (its own report is there)."]
    path = plan.directory / "report.md"
    write_atomic(path, "\n".join(lines) + "\n")
    outcome.report = path
    return path
