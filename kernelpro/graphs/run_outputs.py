"""What a finished (or stopped) optimisation run leaves behind: the best candidate, the report, the summary.

``write_run_outcome`` is the one place a run's outputs are written, for `kernelpro optimize` (through the run's
session, ``app/session.py``) and for LangGraph Studio's graph alike: ``best_candidate.py`` (with no improvement,
the reference stays the answer), ``report.md``, ``report.html``, ``speedup.png`` and ``summary.json``, the run's
``RunOutcome`` (the object `optimize --json` prints). ``write_outputs`` gives that object as plain JSON data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelpro.atomic_write import write_atomic
from kernelpro.harness.result import most_say_host_bound
from kernelpro.runs.outcome import FILE_NAME, RunOutcome


def write_outputs(files: Any, state: dict[str, Any], status: str, context: Any, meter: Any) -> dict[str, Any]:
    """``write_run_outcome``'s outcome as the JSON object ``summary.json`` holds."""
    return write_run_outcome(files, state, status, context, meter).to_json()


def write_run_outcome(files: Any, state: dict[str, Any], status: str, context: Any, meter: Any) -> RunOutcome:
    """The best candidate as a standalone file (and a load_inline version), the report, the final summary."""
    from datetime import datetime, timezone

    from kernelpro.graphs.second_opinions import opinion_facts
    from kernelpro.report import RunSummary, write_report
    from kernelpro.report.export import export_candidate
    from kernelpro.report.summary import RoleUsage
    from kernelpro.search.tree import VariantTree

    tree = VariantTree.of_run(state)
    best = tree.best()
    best_path = Path(files.meta()["problem_path"])  # with no improvement, the reference stays the answer
    if best is not None:
        exported = export_candidate(best.source)
        written = exported.write(files.root, "best_candidate")
        best_path = written[0]
        if exported.notes:
            write_atomic(files.root / "best_candidate_NOTES.txt", "".join(note + "\n" for note in exported.notes))
    usage = meter.to_dict() if meter is not None else {"by_role": {}}
    models = {role: m.model for role, m in (context.models or {}).items() if getattr(m, "model", None)}
    meta = files.meta()
    summary = RunSummary(
        run_id=files.root.name, problem=context.problem.name, device=context.device, gpu_name=context.gpu,
        idea_source=context.idea_source, search_policy=context.policy.name, models=models, status=status,
        stop_reason=state.get("stop_reason", ""),
        started_at=datetime.fromisoformat(meta["created"].replace("Z", "+00:00")),
        ended_at=datetime.now(timezone.utc), iterations=state.get("iteration", 0),
        candidates_judged=sum(1 for v in tree if v.kind != "reference" and v.result is not None),
        best_variant_id=best.id if best else None, best_speedup=best.deciding_speedup if best else None,
        best_speedup_ci95=best.speedup_ci95 if best else None,
        no_improvement_reason="" if best else f"too big for this machine: {state['too_big']}" if state.get("too_big")
        else _no_improvement_reason(tree, state, status),
        llm_usage={role: RoleUsage(model=models.get(role), tokens_in=u["prompt_tokens"],
                                   tokens_out=u["completion_tokens"], cost_usd=u["cost_usd"], priced=u["priced"])
                   for role, u in usage.get("by_role", {}).items()},
        gpu_seconds=state.get("gpu_s", 0.0), **_gate_summary(context.gate, tree),
        objective=tree.objective, **_energy_facts(best, tree), baselines=files.baselines() or {},
        scorecard=tree.scorecard, best_kernelbench=_kernelbench_facts(best),
        second_opinion=opinion_facts(tree, best),
    )
    paths = write_report(summary, tree, files.root)
    files.update_meta(status=status)
    outcome = RunOutcome(
        run_id=summary.run_id, status=status, improved=best is not None,
        best_speedup=summary.best_speedup if best is not None else 1.0,
        best_speedup_ci95=summary.best_speedup_ci95, best_variant=best.id if best else "reference",
        best_candidate=str(best_path), no_improvement_reason=summary.no_improvement_reason,
        report=str(paths.html), report_md=str(paths.markdown), candidates_judged=summary.candidates_judged,
        llm_cost_usd=round(meter.spent_usd, 6) if meter is not None else 0.0,
        results=str(files.results), run_dir=str(files.root), stop_reason=summary.stop_reason,
        idea_source=summary.idea_source, search_policy=summary.search_policy,
        gpu_seconds=round(summary.gpu_seconds, 3), wall_seconds=summary.wall_seconds,
        gate=summary.gate, gate_ranking=summary.gate_ranking, gate_skipped=summary.gate_skipped,
        gate_saved_s=round(summary.gate_saved_s, 2),
        objective=summary.objective, **_energy_facts(best, tree), **_scoring_facts(tree, best),
        scorecard=summary.scorecard, best_kernelbench=summary.best_kernelbench,
        baselines=summary.baselines or None, second_opinion=summary.second_opinion,
        summary=str(files.root / FILE_NAME))
    outcome.write(files.root)
    return outcome


def _kernelbench_facts(best: Any) -> dict[str, Any] | None:
    """The best's speedup in KernelBench's convention, from its deciding verdict (None without one)."""
    deciding = best.deciding_result if best is not None else None
    found = deciding.kernelbench if deciding is not None else None
    return found.model_dump(mode="json") if found is not None else None


def _energy_facts(best: Any, tree: Any) -> dict[str, Any]:
    """The best's energy figures in its deciding verdict (None where not measured, or with no best), and the
    reference's joules and watts: from the best's verdict, or with no best from the fastest correct candidate's
    (the reference is then the answer, and a suite's table still shows what it costs)."""
    facts: dict[str, Any] = {key: None for key in ("best_energy_ratio", "best_energy_ci95", "best_edp_ratio",
                                                   "best_edp_ci95", "best_energy_j", "reference_energy_j",
                                                   "best_power_w", "reference_power_w")}
    deciding = best.deciding_result if best is not None else None
    if deciding is not None and deciding.energy_ratio is not None:
        cand = deciding.candidate
        facts.update({"best_energy_ratio": deciding.energy_ratio, "best_energy_ci95": deciding.energy_ci95,
                      "best_edp_ratio": deciding.edp_ratio, "best_edp_ci95": deciding.edp_ci95,
                      "best_energy_j": cand.energy_j if cand else None, "best_power_w": cand.power_w if cand else None})
    source = best if best is not None else max(tree.correct(), key=lambda v: v.deciding_speedup or 0.0, default=None)
    verdict = source.deciding_result if source is not None else None
    reference = verdict.reference if verdict is not None else None
    if reference is not None and reference.energy_j is not None:
        facts.update(reference_energy_j=reference.energy_j, reference_power_w=reference.power_w)
    return facts


def _scoring_facts(tree: Any, best: Any) -> dict[str, Any]:
    """What a suite scores a run by: how many candidates were correct, the fastest correct one's deciding
    speedup (the re-judged one for finalists), the reference's time in the deciding verdict, whether most of the
    verdicts that timed the reference found it host-bound, degeneracy."""
    correct = tree.correct()
    fastest = max(correct, key=lambda v: v.deciding_speedup or 0.0) if correct else None
    deciding = (best or fastest).deciding_result if (best or fastest) is not None else None
    degenerate = tree.problem_finding()
    return {"correct_candidates": len(correct),
            "reference_host_bound": most_say_host_bound(v.result for v in tree if v.result),
            "fastest_correct_speedup": fastest.deciding_speedup if fastest is not None else None,
            "fastest_correct_ci95": fastest.speedup_ci95 if fastest is not None else None,
            "reference_ms": deciding.reference_ms if deciding is not None else None,
            "best_ms": deciding.candidate_ms if deciding is not None else None,
            "degenerate": f"{degenerate['reason']}: {degenerate['message']}" if degenerate else None}


def _gate_summary(gate: Any, tree: Any) -> dict[str, Any]:
    """The gate, what its choice rests on (a forecast gate: predicted speed, and under an energy objective the
    equal-power assumption), how many candidates it set aside, and the judging time that saved at this run's
    mean."""
    from kernelpro.forecast.gate import skipped

    judged = [v.result.get("elapsed_s") or 0.0 for v in tree if v.kind != "reference" and v.result is not None]
    mean = sum(judged) / len(judged) if judged else 0.0
    count = len(skipped(tree))
    return {"gate": gate.name, "gate_ranking": getattr(gate, "ranking", ""), "gate_skipped": count,
            "gate_saved_s": count * mean}


def _no_improvement_reason(tree: Any, state: dict[str, Any] | None = None, status: str = "") -> str:
    state = state or {}
    if state.get("reference_error"):
        return f"the reference fails: {state['reference_error']}"
    if not any(v.kind != "reference" and v.result is not None for v in tree):
        return "stopped before any candidate was judged" if status == "stopped" else "no candidate was judged"
    degenerate = tree.problem_finding()
    if degenerate is not None:
        return f"the problem is degenerate ({degenerate['reason']}): {degenerate['message']}"
    correct = tree.correct()
    if not correct:
        return "no candidate was correct"
    from kernelpro.graphs.second_opinions import untrusted_reason

    if tree.objective == "time" and (untrusted := untrusted_reason(tree)) is not None:
        return untrusted
    better = {"time": "faster than the reference", "energy": "lower in energy per call than the reference",
              "edp": "lower in energy-delay product than the reference"}[tree.objective] + \
        (" in KernelBench's convention" if tree.figure == "kernelbench" else "")
    reason = (f"{len(correct)} correct candidate(s), none measurably {better} at the minimum "
              "effect, within its 95% interval, on a quiet machine")
    busy = sum(1 for v in correct if v.result.get("contended"))
    if busy == len(correct):
        return (reason + "; every one was timed while other programs competed for the CPU, so none could count: "
                "run again on a quiet machine")
    return reason + (f"; {busy} of them timed while other programs competed for the CPU" if busy else "")
