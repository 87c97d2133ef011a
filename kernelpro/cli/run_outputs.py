"""What a finished (or stopped) optimisation run leaves behind: the best candidate, the report, the summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_outputs(files: Any, state: dict[str, Any], status: str, context: Any, meter: Any) -> dict[str, Any]:
    """The best candidate as a standalone file (and a load_inline version), the report, the final summary."""
    from datetime import datetime, timezone

    from kernelpro.report import RunSummary, write_report
    from kernelpro.report.export import export_candidate
    from kernelpro.report.summary import RoleUsage
    from kernelpro.search.tree import VariantTree

    tree = VariantTree.from_state(state.get("variants", {}), state.get("objective", "time"))
    best = tree.best()
    best_path = Path(files.meta()["problem_path"])  # with no improvement, the reference stays the answer
    if best is not None:
        exported = export_candidate(best.source)
        written = exported.write(files.root, "best_candidate")
        best_path = written[0]
        for note in exported.notes:
            (files.root / "best_candidate_NOTES.txt").write_text(note + "\n")
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
        no_improvement_reason="" if best else _no_improvement_reason(tree),
        llm_usage={role: RoleUsage(model=models.get(role), tokens_in=u["prompt_tokens"],
                                   tokens_out=u["completion_tokens"], cost_usd=u["cost_usd"], priced=u["priced"])
                   for role, u in usage.get("by_role", {}).items()},
        gpu_seconds=state.get("gpu_s", 0.0), **_gate_summary(context.gate.name, tree),
        objective=tree.objective, **_energy_facts(best),
    )
    paths = write_report(summary, tree, files.root)
    files.update_meta(status=status)
    return {"run_id": summary.run_id, "status": status, "improved": best is not None,
            "best_speedup": summary.best_speedup if best is not None else 1.0,
            "best_speedup_ci95": summary.best_speedup_ci95, "best_variant": best.id if best else "reference",
            "best_candidate": str(best_path), "no_improvement_reason": summary.no_improvement_reason,
            "report": str(paths.html),
            "report_md": str(paths.markdown), "candidates_judged": summary.candidates_judged,
            "llm_cost_usd": round(meter.spent_usd, 6) if meter is not None else 0.0,
            "results": str(files.results), "run_dir": str(files.root), "stop_reason": summary.stop_reason,
            "idea_source": summary.idea_source, "search_policy": summary.search_policy,
            "gpu_seconds": round(summary.gpu_seconds, 3), "wall_seconds": summary.wall_seconds,
            "gate": summary.gate, "gate_skipped": summary.gate_skipped, "gate_saved_s": round(summary.gate_saved_s, 2),
            "objective": summary.objective, **_energy_facts(best), **_scoring_facts(tree, best)}


def _energy_facts(best: Any) -> dict[str, Any]:
    """The best's energy figures in its deciding verdict (None where not measured, or with no best)."""
    deciding = best.deciding_result if best is not None else None
    if deciding is None or deciding.energy_ratio is None:
        return {key: None for key in ("best_energy_ratio", "best_energy_ci95", "best_edp_ratio", "best_edp_ci95",
                                      "best_energy_j", "reference_energy_j", "best_power_w", "reference_power_w")}
    cand, ref = deciding.candidate, deciding.reference
    return {"best_energy_ratio": deciding.energy_ratio, "best_energy_ci95": deciding.energy_ci95,
            "best_edp_ratio": deciding.edp_ratio, "best_edp_ci95": deciding.edp_ci95,
            "best_energy_j": cand.energy_j if cand else None, "reference_energy_j": ref.energy_j if ref else None,
            "best_power_w": cand.power_w if cand else None, "reference_power_w": ref.power_w if ref else None}


def _scoring_facts(tree: Any, best: Any) -> dict[str, Any]:
    """What a suite scores a run by: how many candidates were correct, the fastest correct one's deciding
    speedup (the re-judged one for finalists), the reference's time in the deciding verdict, degeneracy."""
    correct = tree.correct()
    fastest = max(correct, key=lambda v: v.deciding_speedup or 0.0) if correct else None
    deciding = (best or fastest).deciding_result if (best or fastest) is not None else None
    degenerate = tree.problem_finding()
    return {"correct_candidates": len(correct),
            "fastest_correct_speedup": fastest.deciding_speedup if fastest is not None else None,
            "fastest_correct_ci95": fastest.speedup_ci95 if fastest is not None else None,
            "reference_ms": deciding.reference_ms if deciding is not None else None,
            "best_ms": deciding.candidate_ms if deciding is not None else None,
            "degenerate": f"{degenerate['reason']}: {degenerate['message']}" if degenerate else None}


def _gate_summary(gate: str, tree: Any) -> dict[str, Any]:
    """How many candidates the gate set aside, and the judging time that saved at this run's mean."""
    from kernelpro.forecast.gate import skipped

    judged = [v.result.get("elapsed_s") or 0.0 for v in tree if v.kind != "reference" and v.result is not None]
    mean = sum(judged) / len(judged) if judged else 0.0
    count = len(skipped(tree))
    return {"gate": gate, "gate_skipped": count, "gate_saved_s": count * mean}


def _no_improvement_reason(tree: Any) -> str:
    degenerate = tree.problem_finding()
    if degenerate is not None:
        return f"the problem is degenerate ({degenerate['reason']}): {degenerate['message']}"
    correct = tree.correct()
    if not correct:
        return "no candidate was correct"
    better = {"time": "faster than the reference", "energy": "lower in energy per call than the reference",
              "edp": "lower in energy-delay product than the reference"}[tree.objective]
    reason = (f"{len(correct)} correct candidate(s), none measurably {better} at the minimum "
              "effect, within its 95% interval, on a quiet machine")
    busy = sum(1 for v in correct if v.result.get("contended"))
    if busy == len(correct):
        return (reason + "; every one was timed while other programs competed for the CPU, so none could count: "
                "run again on a quiet machine")
    return reason + (f"; {busy} of them timed while other programs competed for the CPU" if busy else "")
