"""Judge every built-in recipe on a few problems, honestly, and tabulate the verdicts.

    PYTHONPATH=. python benchmarks/judge_recipes.py --device cuda --out $OUT/judge_recipes_h200.json
    PYTHONPATH=. python benchmarks/judge_recipes.py --device cpu --out /tmp/cpu.json tests/data/problems/*.py

Default problems: ``benchmarks/problems/noise/*.py`` (host-bound and GPU-bound level-1/2 shapes). Per problem,
every recipe ``recipes_for(problem, device)`` offers is judged in one batch through the judge's pipeline (the
same verdicts ``kernelpro eval REF C1..Cn`` gives), then the batch's winners composed one step further, as the
recipe policy would (``recipe_expansions`` from each winner). Writes one JSON object: per problem, per recipe,
status, reason, speedup with its 95% interval, the speed verdict, whether the reference was host-bound, and the
best recipe (or "keep the reference"). ``--only`` limits the recipes by name; problems that would start past
``--budget-s`` are recorded as skipped, so one call ends inside a fixed device-time slot.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import Settings  # noqa: E402
from kernelpro.harness.judge import judge_many  # noqa: E402
from kernelpro.harness.result import EvalResult  # noqa: E402
from kernelpro.problem import load_problem  # noqa: E402
from kernelpro.recipes.catalogue import recipe_expansions, recipes_for  # noqa: E402
from kernelpro.search.tree import VariantTree  # noqa: E402

PROBLEMS = ROOT / "benchmarks" / "problems" / "noise"


def row(name: str, result: EvalResult) -> dict[str, Any]:
    return {"recipe": name, "status": result.status, "reason": result.reason, "speedup": result.speedup,
            "speedup_ci95": result.speedup_ci95, "speed_verdict": result.speed_verdict,
            "improves": result.improves, "host_bound": result.host_bound, "reference_ms": result.reference_ms,
            "candidate_ms": result.candidate_ms, "elapsed_s": result.elapsed_s,
            "message": result.message[:400] if result.status != "ok" else ""}


def judge_problem(path: Path, device: str, settings: Settings, only: set[str]) -> dict[str, Any]:
    problem = load_problem(path)
    tree = VariantTree.with_root(problem.source)
    recipes = [r for r in recipes_for(problem, device, settings.harness.tolerances) if not only or r.name in only]
    start = time.monotonic()
    results = judge_many(problem, [r.source for r in recipes], device=device, settings=settings)
    rows = [row(r.name, res) for r, res in zip(recipes, results, strict=True)]
    # One composition step from each winner, as the recipe policy expands a winning recipe variant.
    for recipe, result in zip(recipes, results, strict=True):
        if result.improves:
            child = tree.spawn(tree.root.id, recipe.source, recipe.idea, recipe.origin)
            more = recipe_expansions(tree, child.id, device, settings.harness.tolerances)
            composed = judge_many(problem, [m.source for m in more], device=device, settings=settings)
            rows += [row("+".join(m.ingredients), res) | {"composed_from": recipe.name}
                     for m, res in zip(more, composed, strict=True)]
    winners = [r for r in rows if r["improves"]]
    best = max(winners, key=lambda r: r["speedup"]) if winners else None
    return {"problem": problem.name, "recipes": rows, "wall_s": round(time.monotonic() - start, 1),
            "best": best["recipe"] if best else "keep the reference",
            "best_speedup": best["speedup"] if best else 1.0}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("problems", nargs="*", type=Path)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=[], help="judge only these recipes (names as listed)")
    parser.add_argument("--budget-s", type=float, default=540.0,
                        help="start no problem past this many seconds (the JSON is written after each problem)")
    args = parser.parse_args()
    started = time.monotonic()
    settings = Settings()
    settings.harness.timeout_s = max(settings.harness.timeout_s, 600)  # max-autotune compiles many kernels
    problems = args.problems or sorted(PROBLEMS.glob("*.py"))
    report: dict[str, Any] = {"device": args.device, "host": platform.node(), "problems": []}
    for path in problems:
        if time.monotonic() - started > args.budget_s:
            report["problems"].append({"problem": path.stem, "skipped": f"past the {args.budget_s:.0f} s budget"})
            args.out.write_text(json.dumps(report, indent=1, default=str))
            continue
        entry = judge_problem(path, args.device, settings, set(args.only))
        report["problems"].append(entry)
        print(f"{entry['problem']}: best {entry['best']} {entry['best_speedup']:.3f}x in {entry['wall_s']} s; "
              + ", ".join(f"{r['recipe']}={r['speedup'] and round(r['speedup'], 2) or r['reason']}"
                          for r in entry["recipes"]), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
