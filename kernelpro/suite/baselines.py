"""A problem's baselines, measured once by the same judge and method as its candidates.

``eager`` is the reference itself: every verdict of the optimisation run times it beside the candidate, so its
time comes from the run (the finalists' re-judgment of the best, or the fastest correct candidate's verdict).
The ``torch.compile`` baselines are candidates like any other, a generated ``ModelNew`` wrapping a copy of the
reference (``recipes.code``), judged against the reference: their speedup over eager comes with its
interval, and a score against them is the candidate's speedup over eager divided by theirs. Being judged
candidates, they are rows of the judged-candidate dataset too (origin ``suite-baseline``).

A suite's problem has them judged by its own run (``kernelpro optimize --baselines``, ``measure_for_run``),
before the search, with the run's worker: no process or worker is started for them alone. Their verdicts answer
the run's candidates that are the same code, and their summary stays in the run directory, so a run resumed
after a kill does not judge them again. A verdict measured by an earlier run on the same problem, machine,
software and settings is reused from the cache (``baseline_cache``) unless the run is ``--fresh``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelpro.harness.result import EvalResult, headline, most_say_host_bound
from kernelpro.problem import Problem
from kernelpro.recipes.code import render_candidate
from kernelpro.search.module_copy import copy_class

if TYPE_CHECKING:
    from kernelpro.suite.baseline_cache import RunBaselines

COMPILE_BASELINES = {
    "compile_default": "torch.compile of the reference (default mode), the suite's baseline",
    "compile_max_autotune_no_cudagraphs": "torch.compile of the reference in max-autotune mode without CUDA "
                                          "graphs, the suite's baseline",
}


def baseline_source(problem: Problem, name: str) -> str:
    """The candidate that is baseline ``name``: the reference wrapped in ``torch.compile`` with that mode."""
    if name not in COMPILE_BASELINES:
        raise ValueError(f"unknown compile baseline {name!r}; known: {', '.join(COMPILE_BASELINES)}")
    return render_candidate(copy_class(problem.source, "Model", "ReferenceModel"), [name], COMPILE_BASELINES[name])


def compile_baselines(names: list[str]) -> list[str]:
    """The baselines among ``names`` that need a judgment of their own (all but eager)."""
    return [name for name in names if name != "eager"]


def judge_baselines(problem: Problem, names: list[str], evaluator: Any) -> dict[str, EvalResult]:
    """Each compile baseline among ``names`` judged against the reference in one batch: name -> its verdict.
    Eager needs no judgment of its own."""
    wanted = compile_baselines(names)
    if not wanted:
        return {}
    results = evaluator.judge_many(problem, [baseline_source(problem, name) for name in wanted])
    return dict(zip(wanted, results, strict=True))


def summarise(results: dict[str, EvalResult]) -> dict[str, dict[str, Any]]:
    """What the ledger keeps of each baseline's verdict: status, speedup over eager with the interval, times."""
    return {name: {"status": r.status, "reason": r.reason, "correct": r.correct, "speedup": r.speedup,
                   "speedup_ci95": r.speedup_ci95, "speed_verdict": r.speed_verdict, "ms": r.candidate_ms,
                   "reference_ms": r.reference_ms, "host_bound": r.host_bound, "message": headline(r.message, 300),
                   "elapsed_s": r.elapsed_s, "device_s": r.device_s}
            for name, r in results.items()}


def record_baselines(dataset: Path, problem: Problem, results: dict[str, EvalResult], hardware: str,
                     run_id: str = "") -> int:
    """Append the judged baselines to the judged-candidate dataset (origin ``suite-baseline``, the baseline's
    name in the tags); returns the rows written. Raises OSError when the file cannot be written."""
    from kernelpro.forecast.dataset import append_rows, row_for

    return append_rows(dataset, [row_for(problem, baseline_source(problem, name), result, hardware,
                                         "suite-baseline", run_id, tags={"baseline": name})
                                 for name, result in results.items()])


def not_measured(names: list[str], why: str) -> dict[str, dict[str, Any]]:
    return {name: {"status": "not measured", "correct": False, "message": why} for name in names}


def reused_summary(found: dict[str, Any], now: float | None = None) -> dict[str, dict[str, Any]]:
    """The summary of verdicts reused from the cache (``CachedVerdict``s): no device time spent now, and
    ``reused`` saying when they were measured, how long before, and the device time they took then."""
    summary = summarise({name: hit.result for name, hit in found.items()})
    for name, hit in found.items():
        summary[name].update(elapsed_s=0.0, device_s=0.0, reused={
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(hit.measured_at)),
            "age_s": round(hit.age_s(now), 1), "device_s": hit.result.device_s})
    return summary


def measure_for_run(problem: Problem, names: list[str], evaluator: Any, run_root: Path, run_id: str,
                    record: Path | None, hardware: str, cached: RunBaselines | None = None, fresh: bool = False,
                    warn: Callable[[str], None] | None = None) -> dict[str, dict[str, Any]]:
    """The compile baselines among ``names`` judged by a run's own ``evaluator`` before its search, or reused
    from ``cached`` (``baseline_cache.RunBaselines``) unless ``fresh``; their verdicts join those the run answers
    from (``judged_before``), each judged one is kept in the cache and is a dataset row when ``record`` names the
    dataset, and their summary is kept in the run directory (``RunFiles.baselines``), where a resumed run finds
    them. ``warn`` hears of cache entries that could not be trusted or written."""
    from kernelpro.atomic_write import write_atomic
    from kernelpro.runs.files import RunFiles
    from kernelpro.runs.judged_before import add_to_run

    warn = warn or (lambda _message: None)
    wanted = compile_baselines(names)
    try:
        codes = {name: baseline_source(problem, name) for name in wanted}
    except ValueError as error:  # a reference whose Model cannot be wrapped: scored against eager alone
        summary = not_measured(wanted, f"no compile baseline can be made ({error})")
    else:
        found, warnings = cached.reusable(codes, fresh) if cached is not None else ({}, [])
        for warning in warnings:
            warn(warning)
        judged = judge_baselines(problem, [name for name in wanted if name not in found], evaluator)
        for name, result in judged.items():
            if cached is not None and (warning := cached.keep(name, codes[name], result)):
                warn(warning)
        add_to_run(run_root, [(f"the {name} baseline", codes[name], result) for name, result in judged.items()]
                   + [(f"the {name} baseline, reused from the cache", codes[name], hit.result)
                      for name, hit in found.items()])
        if record is not None and judged:
            try:
                record_baselines(record, problem, judged, hardware, run_id)
            except OSError:  # the dataset is a by-product: the baselines stand without it
                pass
        measured = {**summarise(judged), **reused_summary(found)}
        summary = {name: measured[name] for name in wanted}
    write_atomic(RunFiles(run_root).baselines_path, json.dumps(summary))
    return summary


def reference_host_bound(baselines: dict[str, dict[str, Any]] | None) -> bool | None:
    """Whether the baselines' verdicts found eager's cost to be its launches (the host's time to issue a call
    above the GPU's time to run it): True when most verdicts that say so agree, None when none says."""
    return most_say_host_bound((baselines or {}).values())


def fastest_compile(baselines: dict[str, dict[str, Any]] | None) -> tuple[str, float] | None:
    """The correct compile baseline with the highest speedup over eager, as (name, speedup); None when none."""
    correct = [(name, b["speedup"]) for name, b in (baselines or {}).items()
               if b.get("correct") and b.get("speedup")]
    return max(correct, key=lambda item: item[1]) if correct else None
