"""The suite report's content as plain rows, shared by the Markdown and HTML renderings."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from kernelpro.harness.timing.stats import speedup_text
from kernelpro.report import content as run_content
from kernelpro.report.content import reused_text
from kernelpro.suite import alone
from kernelpro.suite.ledger import ProblemRow
from kernelpro.suite.overnight import audit_rows
from kernelpro.suite.report_energy import suite_objective
from kernelpro.suite.scores import FAST_P, ProblemScore, Scores, p_key


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _interval(ci: list[float] | None) -> str:
    return "-" if not ci else f"[{ci[0]:.2f}-{ci[1]:.2f}]"


def _x_in(value: float | None, ci: list[float] | None) -> str:
    """A speedup with its interval, where it has one (an exact figure, every problem's reference kept, has none)."""
    return speedup_text(value, ci if value is not None and ci and ci[1] > ci[0] else None)


def _share_in(share: float, shares: list[float] | None) -> str:
    """A fast_p with the range the problems' intervals allow, where it is a range."""
    return f"{share:.3f}" + (f" ({shares[0]:.3f}-{shares[1]:.3f})" if shares and shares[0] != shares[1] else "")


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _minutes(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def overview(summary: dict[str, Any], config: dict[str, Any], rows: list[ProblemRow]) -> list[tuple[str, str]]:
    status = summary["status"] + (f": {summary['stop_reason']}" if summary.get("stop_reason") else "")
    return [("Suite", summary["suite_id"]), ("Status", status),
            ("Sources", ", ".join(config.get("sources", []))), ("Device", str(config.get("device"))),
            ("Policy", str(config.get("policy") or "auto")), ("Objective", suite_objective(config, rows)),
            ("Candidates per problem", str(config.get("max_iters"))),
            ("Baselines", ", ".join(config.get("baselines", []))),
            ("Problems", f"{summary['problems']} ({summary['finished']} finished, {summary['failed']} failed, "
                         f"{summary.get('budget', 0)} cut by a budget, {len(summary['degenerate'])} degenerate)"),
            ("Active time", f"{summary['active_seconds'] / 60:.1f} min"
                            + _time_budget(config.get("totals") or {})),
            *([("ETA", f"{summary['eta_seconds'] / 60:.1f} min (the problems left at the mean time of those "
                       "finished, within the time budget)")] if summary.get("eta_seconds") is not None else []),
            *audit_rows(summary.get("overnight"), str(config.get("device"))),
            ("Settings", _settings(config.get("environment") or {}))]


def _time_budget(totals: dict[str, Any]) -> str:
    return f" of a {totals['time_s'] / 60:.1f} min time budget" if totals.get("time_s") else ""


def _settings(environment: dict[str, str]) -> str:
    """The ``KERNELPRO_*`` settings the suite ran with (``recorded_env``), so a reader can judge it the same way."""
    if not environment:
        return "no KERNELPRO_* variable set"
    return "; ".join(f"{name.removeprefix('KERNELPRO_').lower().replace('__', '.')}={value}"
                     for name, value in environment.items())


def score_rows(scores: Scores, against_compile: bool = True) -> list[tuple[str, ...]]:
    """fast_p against eager and (when a compile baseline was measured) against compile, each with the range its
    problems' intervals allow, then the geomean with its 95% interval and the correctness rate."""
    rows = [(f"fast_{p_key(p)}", _share_in(scores.fast_p[p_key(p)], scores.fast_p_range.get(p_key(p))),
             _share_in(scores.fast_p_vs_compile[p_key(p)], scores.fast_p_vs_compile_range.get(p_key(p))))
            for p in FAST_P]
    rows.append(("geomean speedup (correct problems)", _x_in(scores.geomean_speedup, scores.geomean_speedup_ci95),
                 _x_in(scores.geomean_vs_compile, scores.geomean_vs_compile_ci95)))
    rows.append(("correct", f"{scores.correct}/{scores.problems} ({scores.correct_rate:.0%})", ""))
    rows.append(("improved (re-judged faster)", str(scores.improved), ""))
    if scores.host_bound:
        rows.append(("improved where eager is host-bound", f"{scores.host_bound_improved}/{scores.host_bound}", ""))
    return rows if against_compile else [row[:2] for row in rows]


KERNELBENCH_HEADER = ("score in KernelBench's convention", "against eager")
KERNELBENCH_NOTE = ("The same delivered bests read in KernelBench's convention: the mean of CUDA events behind the "
                    "L2 flush, no floor for the host's time to issue a call (kernelpro's own scorecard above takes "
                    "each round's cost as the larger of the GPU span and that issue time, and the median of paired "
                    "ratios). A kept reference counts at 1x in both; a best judged without this figure is left out "
                    "here.")


def kernelbench_rows(scores: Scores) -> list[tuple[str, str]]:
    """fast_p and the geomean of the delivered bests in KernelBench's convention (``Scores.kernelbench``)."""
    found = scores.kernelbench
    rows = [(f"fast_{p_key(p)}", _share_in(found["fast_p"][p_key(p)], found["fast_p_range"].get(p_key(p))))
            for p in FAST_P]
    rows.append(("geomean speedup (correct problems)", _x_in(found["geomean_speedup"],
                                                             found["geomean_speedup_ci95"])))
    rows.append(("problems scored", str(found["problems_scored"])))
    if found["unmeasured"]:
        rows.append(("improved without a KernelBench figure (left out)", str(found["unmeasured"])))
    return rows


def level_rows(scores: Scores) -> list[tuple[str, ...]]:
    return [(f"level {level}", str(s["problems_scored"]), f"{s['correct_rate']:.0%}", f"{s['fast_p']['1.0']:.3f}",
             f"{s['fast_p']['1.2']:.3f}", _x_in(s["geomean_speedup"], s.get("geomean_speedup_ci95")),
             f"{s['fast_p_vs_compile']['1.0']:.3f}",
             _x_in(s["geomean_speedup_vs_compile"], s.get("geomean_speedup_vs_compile_ci95")))
            for level, s in scores.per_level.items()]


def spend_rows(scores: Scores) -> list[tuple[str, str]]:
    spend = scores.spend()
    return [("GPU minutes", f"{scores.gpu_seconds / 60:.2f}"), ("model dollars", _money(scores.llm_cost_usd)),
            ("GPU minutes per problem", _minutes(spend["gpu_minutes_per_problem"])),
            ("GPU minutes per problem improved", _minutes(spend["gpu_minutes_per_improved"])),
            ("dollars per problem", _money(spend["usd_per_problem"])),
            ("dollars per problem improved", _money(spend["usd_per_improved"]))]


def _baseline_text(row: ProblemRow) -> str:
    reference_ms = row.run_outcome.reference_ms
    parts = [f"eager {reference_ms:.4g} ms"] if reference_ms else []
    for name, b in (row.baselines or {}).items():
        label = name.replace("compile_", "compile ").replace("_", "-")
        parts.append((f"{label} {speedup_text(b.get('speedup'), b.get('speedup_ci95'))}" if b.get("correct")
                      else f"{label} {b.get('status')}") + reused_text(b))
    return "; ".join(parts) or "-"


def report_link(row: ProblemRow, root: Path) -> str:
    """The problem's own report, relative to the suite directory; empty when it has none."""
    report = row.run_outcome.report
    if not report or not Path(report).exists():
        return ""
    return os.path.relpath(report, root)


def problem_rows(rows: list[ProblemRow], problems: list[ProblemScore]) -> list[tuple[str, ...]]:
    """key, status, best over eager, its interval, over compile, baselines, the second opinion on the best (timed
    again in a fresh process, agreeing or not), GPU s, dollars."""
    out = []
    for row, score in zip(rows, problems, strict=True):
        status = "budget (kept the reference)" if row.state == "budget" else row.state if row.state != "done" \
            else ("improved" if score.improved else
                                                         "degenerate" if score.degenerate else
                                                         "kept the reference" if score.correct else "no correct")
        if row.state in ("pending", "running") and row.failure_kind == alone.KIND:
            status += ", alone on its GPU (it ran out of GPU memory beside other problems)"
        best = _x(score.speedup)
        if score.correct and not score.improved and score.fastest_candidate is not None:
            best += f" (the reference; fastest candidate {_x(score.fastest_candidate)})"
        out.append((row.key, status, best, _interval(score.speedup_ci95),
                    _x_in(score.vs_compile, score.vs_compile_ci95), _baseline_text(row),
                    run_content.second_opinion_text(row.run_outcome.second_opinion),
                    f"{row.gpu_s or 0.0:.1f}", _money(row.usd or 0.0), f"{(row.wall_s or 0.0) / 60:.1f}"))
    return out


FAILURE_HEADER = ("reason", "problems")


def failures(rows: list[ProblemRow]) -> dict[str, list[tuple[str, str]]]:
    """Failed problems grouped by kind of failure, then by reason, the commonest first: kind -> [(reason, "N:
    their keys")]. Forty problems failing for one cause (a broken install) read as one line, not forty."""
    grouped: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row.state == "failed":
            kind = row.failure_kind or "crash"
            grouped[kind][row.failure or "no reason recorded"].append(row.key)
    return {kind: [(reason, f"{len(keys)}: {', '.join(keys)}")
                   for reason, keys in sorted(grouped[kind].items(), key=lambda item: -len(item[1]))]
            for kind in sorted(grouped)}


def failure_count(items: list[tuple[str, str]]) -> int:
    """How many problems a kind's grouped failures hold."""
    return sum(int(problems.split(":", 1)[0]) for _, problems in items)


def cut_by_budget(rows: list[ProblemRow]) -> list[tuple[str, str]]:
    """Problems a budget cut before an improvement, each with what cut it: they keep the reference."""
    return [(row.key, row.run_outcome.stop_reason) for row in rows if row.state == "budget"]


def degenerate(problems: list[ProblemScore]) -> list[tuple[str, str]]:
    return [(p.key, p.degenerate or "") for p in problems if p.degenerate]


PRUNED_HEADER = ("problem", "action", "profile of", "file")


def pruned_rows(pruned: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """What the disk budget took, with whose profile each file was (the best's and the finalists' go last)."""
    return [(p["problem"], p["action"], p.get("variant") or "", f"{p['path']} ({p['bytes'] / 1e6:.1f} MB)")
            for p in pruned]


PROBLEM_HEADER = ("problem", "status", "best", "95% interval", "vs compile", "baselines", "second opinion", "GPU s",
                  "model $", "wall min")
LEVEL_HEADER = ("level", "problems", "correct", "fast_1.0", "fast_1.2", "geomean", "fast_1.0 vs compile",
                "geomean vs compile")
