"""The report's content as plain rows, shared by the Markdown and HTML renderings."""

from __future__ import annotations

from dataclasses import dataclass

from kernelpro.harness.result import headline
from kernelpro.harness.timing.stats import Measured
from kernelpro.report.summary import RoleUsage, RunSummary
from kernelpro.search import objective as objectives
from kernelpro.search.objective import energy_text
from kernelpro.search.tree import Variant, VariantTree, speedup_text


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def age_text(seconds: float) -> str:
    """How long ago, in the unit that reads best: 45 s, 12 min, 5.2 h, 3.0 days."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def reused_text(verdict: dict) -> str:
    """`` (reused, measured 5.2 h before)`` for a baseline's verdict reused from the cache, else nothing."""
    reused = verdict.get("reused")
    return f" (reused, measured {age_text(float(reused.get('age_s') or 0.0))} before)" if reused else ""


def cost_text(usage: RoleUsage) -> str:
    return f"${usage.cost_usd:.4f}" if usage.priced else f"${usage.cost_usd:.4f} (unpriced)"


def overview(run: RunSummary, tree: VariantTree) -> list[tuple[str, str]]:
    """The run at a glance, as (label, value) pairs."""
    ideas = run.idea_source if run.idea_source == "recipes" or not run.models else \
        f"llm ({', '.join(f'{role}: {model}' for role, model in run.models.items())})"
    return [
        ("Run", run.run_id), ("Problem", run.problem),
        ("Device", run.device + (f" ({run.gpu_name})" if run.gpu_name else "")),
        ("Ideas from", ideas), ("Search policy", run.search_policy or "-"),
        ("Status", run.status + (f": {run.stop_reason}" if run.stop_reason else "")),
        ("Started", run.started_at.isoformat(timespec="seconds")),
        ("Ended", run.ended_at.isoformat(timespec="seconds") if run.ended_at else "-"),
        ("Iterations", str(run.iterations)), ("Candidates judged", str(run.candidates_judged)),
        ("Profiling", profiling(tree)),
        *([("Gate", f"{run.gate}: {run.gate_skipped} candidate(s) not measured, about {run.gate_saved_s:.1f} s of "
                    "judging saved" + (f" ({run.gate_ranking})" if run.gate_ranking else ""))]
          if run.gate and run.gate != "measure_all" else []),
        *([("Objective", run.objective)] if run.objective != "time" else []),
        ("Best", f"{run.best_variant_id} at {speedup_text(run.best_speedup, run.best_speedup_ci95)} (95% interval)"
         if run.best_variant_id else f"no improvement: keep the reference ({run.no_improvement_reason or 'none'})"),
        *([("Best in KernelBench's convention", kernelbench_text(run.best_kernelbench, run.scorecard))]
          if run.best_variant_id else []),
        *([("Second opinion", second_opinion_text(run.second_opinion))] if run.second_opinion else []),
        *([("Best's energy", best_energy(run))] if run.best_variant_id and run.best_energy_ratio is not None
          else []),
        *([("torch.compile baselines", baselines_text(run))] if run.baselines else []),
    ]


def kernelbench_text(facts: dict | None, scorecard: str) -> str:
    """The best's speedup in KernelBench's convention (``summary.json``'s ``best_kernelbench``) and which of the
    two scorecards chose the best."""
    chose = f"the {scorecard} scorecard chose the best"
    if not facts:
        return f"not measured ({chose})"
    return f"{speedup_text(facts.get('speedup'), facts.get('speedup_ci95'))} (95% interval; {facts.get('method')}; " \
           f"{chose})"


def second_opinion_text(facts: dict | None) -> str:
    """The best timed again in a fresh process by an independent method (``summary.json``'s ``timing.second_opinion``):
    its speedup and interval, and whether it agrees with the judge's; "-" where none was asked for."""
    if not facts:
        return "-"
    if facts.get("speedup") is None:
        return f"{facts.get('status')} ({facts.get('variant')}): {facts.get('message') or 'no figure'}"
    word = {"agree": "agrees", "disagree": "disagrees"}.get(facts.get("status") or "", facts.get("status"))
    return (f"{speedup_text(facts['speedup'], facts.get('speedup_ci95'))} {word} with the judge's "
            f"{speedup_text(facts.get('judged_speedup'), facts.get('judged_ci95'))} ({facts.get('variant')}, "
            f"{facts.get('rounds')} rounds)")


def baselines_text(run: RunSummary) -> str:
    """Each compile baseline's speedup over eager (or why it has none), and the best against the fastest."""
    said, fastest = [], None
    for name, verdict in run.baselines.items():
        speedup = verdict.get("speedup")
        if verdict.get("correct") and speedup:
            said.append(f"{name} {speedup_text(speedup, verdict.get('speedup_ci95'))}{reused_text(verdict)}")
            fastest = max(fastest or (name, speedup), (name, speedup), key=lambda item: item[1])
        else:
            said.append(f"{name} {verdict.get('status', 'not measured')}{reused_text(verdict)}")
    text = "; ".join(said)
    if fastest is not None and run.best_variant_id and run.best_speedup:
        ratio = Measured.of(run.best_speedup, run.best_speedup_ci95).over(
            Measured.of(fastest[1], run.baselines[fastest[0]].get("speedup_ci95")))
        text += (f"; the best is {speedup_text(ratio.value, [ratio.low, ratio.high])} the fastest ({fastest[0]}), "
                 "the intervals combined")
    return text


def profiling(tree: VariantTree) -> str:
    """What was profiled (the reference, the correct candidates) and, where something was not, why: a run on a
    CPU or with profiling off says here that its steps have no diagnosis behind them."""
    root = tree.root
    correct = [v for v in tree if v.parent_id is not None and v.speedup is not None]
    profiled = [v for v in correct if v.profile_notes]
    missing = [v for v in (root, *correct) if not v.profile_notes]
    reasons = list(dict.fromkeys(_unprofiled_why(v) for v in missing))
    if not root.profile_notes and not profiled:
        return "skipped: " + "; ".join(reasons)
    done = ["the reference"] if root.profile_notes else []
    if correct:
        done.append(f"{len(profiled)} of {len(correct)} correct candidate{'s' if len(correct) != 1 else ''}")
    return " and ".join(done) + (f" (not profiled: {'; '.join(reasons)})" if missing else "")


def _unprofiled_why(variant: Variant) -> str:
    return (variant.no_profile or "no reason recorded").removeprefix("not profiled: ")


def best_energy(run: RunSummary) -> str:
    """The best's joules per call and watts against the reference's, and its energy and EDP ratios."""
    def joules(value: float | None) -> str:
        return f"{value:.4g} J" if value is not None else "-"

    def watts(value: float | None) -> str:
        return f"{value:.0f} W" if value is not None else "-"

    return (f"{joules(run.best_energy_j)}/call at {watts(run.best_power_w)} vs reference "
            f"{joules(run.reference_energy_j)}/call at {watts(run.reference_power_w)}; energy ratio "
            f"{speedup_text(run.best_energy_ratio, run.best_energy_ci95)}, EDP ratio "
            f"{speedup_text(run.best_edp_ratio, run.best_edp_ci95)} (95% intervals)")


def energy_rows(tree: VariantTree) -> list[tuple[str, ...]]:
    """Time and energy side by side for every variant whose deciding verdict has NVML readings: speedup, joules
    per call, watts, the energy and EDP ratios with their intervals and calls (empty when none was measured)."""
    rows = []
    for v in tree:
        data = v.final or v.result or {}
        if v.kind == "reference" or data.get("energy_ratio") is None:
            continue
        cand = data.get("candidate") or {}
        rows.append((v.id, f"{speedup_text(data.get('speedup'), data.get('speedup_ci95'))} "
                           f"{data.get('speed_verdict') or ''}".rstrip(),
                     f"{cand['energy_j']:.4g}" if cand.get("energy_j") is not None else "-",
                     f"{cand['power_w']:.0f}" if cand.get("power_w") is not None else "-",
                     v.figure_text("energy").removeprefix("energy "), v.figure_text("edp").removeprefix("EDP ")))
    return rows


ENERGY_HEADER = ("variant", "speedup", "J per call", "W", "energy ratio", "EDP ratio")


def best_title(best: Variant, objective: str = "time") -> str:
    """The heading over the best candidate's code: its id and re-judged speedup with the interval (under an
    energy objective its energy or EDP ratio first)."""
    figures = speedup_text(best.deciding_speedup, best.speedup_ci95)
    if objective != "time":
        figures = f"{best.figure_text(objective)}, time {figures}"
    return f"Best candidate: {best.id} ({figures}, 95% interval)"


def no_improvement(run: RunSummary) -> str:
    """What the report says in place of a best candidate when none is measurably faster."""
    return (f"No improvement: keep the reference. {run.no_improvement_reason.capitalize()}."
            if run.no_improvement_reason else "No improvement: keep the reference.")


def spend(run: RunSummary) -> list[tuple[str, str, str, str]]:
    """(role, tokens in, tokens out, cost) per role and in total."""
    rows = [(role + (f" ({u.model})" if u.model else ""), f"{u.tokens_in:,}", f"{u.tokens_out:,}", cost_text(u))
            for role, u in run.llm_usage.items()]
    total = run.total_usage
    return [*rows, ("total", f"{total.tokens_in:,}", f"{total.tokens_out:,}", cost_text(total))]


def resources(run: RunSummary) -> list[tuple[str, str]]:
    return [("GPU time", duration(run.gpu_seconds) if run.gpu_seconds >= 1 else f"{run.gpu_seconds:.2f} s"),
            ("Wall time", duration(run.wall_seconds))]


# A correct verdict's call against the reference, as the report colours it: better, worse, or within the noise.
_TONES = {"faster": "better", "less": "better", "slower": "worse", "more": "worse"}
CONTENDED_NOTE = "timed on a busy machine (contended): not a figure to act on"


def tone(data: dict | None, objective: str = "time") -> str:
    """``better`` (faster; less energy or EDP), ``worse`` (slower; more) or ``same`` (within the noise, or too
    uncertain to call) for a correct verdict under ``objective``; ``failed`` for any other."""
    if not data or data.get("status") != "ok" or not data.get("correct"):
        return "failed"
    return _TONES.get(objectives.verdict(data, objective) or "", "same")


def contended(data: dict | None) -> bool:
    """The verdict was timed while other work loaded the machine: its call is not to be trusted."""
    return bool((data or {}).get("contended"))


@dataclass(frozen=True)
class Step:
    """One variant as a step of the search: what led to it, what it tried, what came of it."""

    variant: Variant
    parent: Variant | None
    objective: str = "time"

    @property
    def deciding(self) -> dict | None:
        """The verdict its outcome ends with: the finalists' re-judgment when it gave figures, else the first."""
        v = self.variant
        return v.final if v.final and tone(v.final) != "failed" else v.result

    @property
    def tone(self) -> str:
        """How its deciding verdict compares with the reference (``tone``); ``failed`` unless correct."""
        return tone(self.deciding, self.objective)

    @property
    def contended(self) -> bool:
        return contended(self.deciding)

    @property
    def outcome(self) -> str:
        v = self.variant
        if v.correct:
            first = v.result or {}
            text = f"correct, {speedup_text(v.speedup, first.get('speedup_ci95'))} {first.get('speed_verdict') or ''}"
            if v.final:
                final = v.final
                again = speedup_text(final.get("speedup"), final.get("speedup_ci95"))
                text = f"{text.rstrip()}; re-judged as a finalist: {again} {final.get('speed_verdict') or ''}"
            energy = energy_text(v.final or first)
            busy = f"; {CONTENDED_NOTE}" if self.contended else ""
            return text.rstrip() + (f"; {energy}" if energy else "") + busy
        message = (v.result or {}).get("message", "") or v.failure
        return f"{v.verdict}" + (f": {headline(message, 200)}" if message else "")

    @property
    def fields(self) -> list[tuple[str, str]]:
        """The step's labelled lines in report order, the empty ones left out (an idea always shows)."""
        v = self.variant
        labelled = [("Led by", self.led_by), ("Idea", v.idea or "-"), ("Outcome", self.outcome),
                    ("Profile", v.profile_notes or v.no_profile), ("Findings", ", ".join(v.findings)),
                    ("Lesson", v.lesson)]
        return [(label, text) for label, text in labelled if text]

    @property
    def led_by(self) -> str:
        """The parent's profile and findings: what this step was answering."""
        if self.parent is None:
            return ""
        parts = [self.parent.profile_notes] if self.parent.profile_notes else []
        if self.parent.findings:
            parts.append("findings: " + ", ".join(self.parent.findings))
        return "; ".join(parts)


def steps(tree: VariantTree) -> list[Step]:
    """Every variant but the reference, in the order the search made them."""
    ordered = sorted((v for v in tree if v.parent_id is not None), key=lambda v: (v.iteration, v.created_at))
    return [Step(v, tree.get(v.parent_id) if v.parent_id else None, tree.objective) for v in ordered]
