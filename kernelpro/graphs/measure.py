"""Measure a batch: the gate chooses what deserves the GPU, the judge takes the batch at once, then profiles.

A verdict is stored in the run directory the moment the judge reaches it, before the batch ends and the state
moves on, so a run killed while judging resumes with every verdict it had (``RunFiles.stored_result``) and
judges nothing twice. The judge is asked through ``runs.judged_once.JudgedOnce``, seeded from the checkpointed
state at every batch: the same code twice (in one batch or across batches) is judged once, and code judged before
the run (``judged_before``: a suite's compile baselines) is not judged again.
"""

from __future__ import annotations

import re
from typing import Literal

from langgraph.types import Command

from kernelpro.graphs.context import OptimizeContext
from kernelpro.graphs.nodes import Ctx, changed, node, tree_of
from kernelpro.graphs.state import OptimizeState
from kernelpro.graphs.time_budget import run_time_budget
from kernelpro.graphs.views import describe_result
from kernelpro.harness.footprint import PROBLEM_TOO_BIG
from kernelpro.harness.ports import Proposal
from kernelpro.harness.result import CUT_AT_DEADLINE, EvalResult
from kernelpro.runs.judged_before import JudgedBefore, JudgedBeforeError
from kernelpro.runs.judged_once import JudgedOnce, Reused
from kernelpro.search.tree import Variant, VariantTree


def judged_once(ctx: OptimizeContext, tree: VariantTree) -> tuple[JudgedOnce, list[str]]:
    """The run's judge answering what it has a verdict on: the tree's verdicts (the checkpointed state, so a
    resumed run knows what it judged) and those the run adopted from before it; notes say why those were not used."""
    try:  # e.g. a suite's compile baselines, judged before the run
        earlier, notes = JudgedBefore.of_run(ctx.files.root), []
    except JudgedBeforeError as error:  # checked when the run adopted it: only a hand-edited file gets here
        earlier, notes = JudgedBefore(), [f"earlier verdicts not used: {error}"]
    once = JudgedOnce(ctx.evaluate, earlier)
    for variant in tree:
        if variant.kind != "reference" and variant.result is not None:
            once.remember(variant.source, EvalResult.model_validate(variant.result), variant.id)
    return once, notes


def answered_note(reused: Reused | None) -> str:
    """How the judge event says a candidate was answered without judging it (nothing when it was judged)."""
    if reused is None:
        return ""
    if reused.before_run:
        return f" (the same code as {reused.label}: its verdict, not judged again)"
    return f" (the same candidate as {reused.label}: its verdict, not judged again)"


@node
def gate(state: OptimizeState, runtime: Ctx) -> Command[Literal["judge"]]:
    ctx, tree = runtime.context, tree_of(state)
    waiting = [v for v in (tree.get(i) for i in state.get("pending", [])) if not v.settled and v.source]
    measured = next((v.result for v in tree if v.result and v.result.get("reference")), None) or {}
    proposals = [Proposal(variant_id=v.id, parent_id=v.parent_id or "", idea=v.idea, source=v.source, prior=v.prior,
                          reference_ms=measured["reference"]["median_ms"] if measured else None,
                          traffic_bytes=(measured.get("details") or {}).get("traffic_bytes"),
                          hardware=ctx.gpu if ctx.device == "cuda" else "cpu")
                 for v in waiting]
    chosen = set(ctx.gate.choose(ctx.problem, proposals)) if proposals else set()
    forecasts, why = getattr(ctx.gate, "forecasts", {}), getattr(ctx.gate, "why", lambda _: "")
    events = []
    for variant in waiting:
        if variant.id in forecasts:
            variant.forecast = forecasts[variant.id].model_dump()
        if variant.id not in chosen:
            reason = why(variant.id) or f"not measured: the gate ({ctx.gate.name}) chose others"
            tree.mark_gated(variant.id, reason)
            events.append(f"gate ({ctx.gate.name}): {variant.id} {reason}")
    return Command(goto="judge", update={"variants": changed(tree, [v.id for v in waiting]), "events": events})


@node
def judge(state: OptimizeState, runtime: Ctx) -> Command[Literal["profile", "finish"]]:
    ctx, tree = runtime.context, tree_of(state)
    batch = [v for v in (tree.get(i) for i in state.get("pending", [])) if not v.settled and v.source]
    once, notes = judged_once(ctx, tree)
    verdicts: dict[str, tuple[EvalResult, str]] = {}  # id -> verdict, and where it came from
    for variant in batch:
        if (stored := ctx.files.stored_result(variant.id, variant.source)) is not None:
            verdicts[variant.id] = (stored, " (recovered from the run directory)")
            once.remember(variant.source, stored, variant.id)
        else:
            ctx.files.write_source(variant.id, variant.source)  # every logged candidate has its code on disk
    asked = [v for v in batch if v.id not in verdicts]
    unjudged, until = [], None
    if (budget := run_time_budget(state, ctx, tree)) is not None:  # the code is written; its judgment must fit
        groups = once.new_codes([v.source for v in asked])
        if budget.costs.measured and groups:
            fits = budget.batch(len(groups), len(tree.finalists(ctx.settings.search.finalists)), True)
            if fits < len(groups):
                notes.append(budget.not_started(f"the judgment of {len(groups) - fits} written candidate(s)") +
                             "; kernelpro optimize --resume judges them")
            left = {index for group in groups[fits:] for index in group}
            unjudged = [v for index, v in enumerate(asked) if index in left]
            asked = [v for index, v in enumerate(asked) if index not in left]
        until = budget.in_flight_until()

    def keep(index: int, result: EvalResult) -> None:  # each verdict on disk as it comes: a kill mid-batch
        if index not in once.reused and result.reason != CUT_AT_DEADLINE:  # costs only those still being judged
            ctx.files.store_result(asked[index].id, result)

    results = once.judge_many(ctx.problem, [v.source for v in asked], on_verdict=keep, until=until,
                              labels=[v.id for v in asked])
    fresh = [(v, r) for index, (v, r) in enumerate(zip(asked, results, strict=True)) if index not in once.reused]
    gpu_s = sum(r.device_s for _, r in fresh) if ctx.device == "cuda" else 0.0
    answered_before = 0  # of the batch, answered from verdicts taken before the run
    for index, (variant, result) in enumerate(zip(asked, results, strict=True)):
        if result.reason == CUT_AT_DEADLINE:  # the budget's end stopped it: no verdict, judged on --resume
            unjudged.append(variant)
            continue
        reused = once.reused.get(index)
        verdicts[variant.id] = (result, answered_note(reused))
        if reused is not None and reused.before_run:
            answered_before += 1
        elif reused is not None and (twin := tree.variants.get(reused.label)) is not None and twin.result is not None:
            variant.profile_notes, variant.findings = twin.profile_notes, list(twin.findings)  # its profile stands
    if stopped := [v.id for v, r in fresh if r.reason == CUT_AT_DEADLINE]:
        notes.append(f"time budget: stopped at the budget's end, not judged: {', '.join(stopped)}; "
                     "kernelpro optimize --resume judges them")
    measured = [(v, r) for v, r in fresh if r.reason != CUT_AT_DEADLINE]
    events = [*notes, *record_judged(ctx, [v for v, _ in measured], [r for _, r in measured])]
    iteration = state.get("iteration", 0)
    left = {v.id for v in unjudged}
    batch = [v for v in batch if v.id not in left]  # left pending: the run's end marks them cut short
    for variant in batch:
        result, note = verdicts[variant.id]
        iteration += 1
        variant.iteration = iteration
        tree.record(variant.id, result)
        ctx.files.record_result(variant.id, result, {"iteration": iteration, "parent": variant.parent_id,
                                                     "idea": variant.idea, "origin": variant.origin,
                                                     **result.to_json_dict()})
        events.append(f"judge {variant.id}: {describe_result(result)}{note}")
    update = {"variants": changed(tree, state.get("pending", [])), "iteration": iteration, "gpu_s": gpu_s,
              "answered_before": state.get("answered_before", 0) + answered_before,
              "events": events, "judged": [v.id for v in batch], "pending": []}
    for variant in batch:
        result = verdicts[variant.id][0]
        if result.reason == PROBLEM_TOO_BIG:  # no candidate can be judged within this machine's memory
            return Command(goto="finish", update={**update, "status": "failed", "too_big": result.message,
                                                  "stop_reason": f"too big for this machine: {result.message}"})
        if result.reason == "reference_failed":
            # Its own error is the problem file's to fix; out of GPU memory is the machine's, and resumable.
            own = {} if result.out_of_gpu_memory else {"reference_error": error_line(result.message)}
            return Command(goto="finish", update={**update, **own, "status": "failed",
                                                  "stop_reason": f"the reference itself fails: {result.message[:300]}"})
        if result.problem_findings:  # no candidate on this problem can be an improvement: say why and stop
            found = result.problem_findings[0]
            why = f"the problem is degenerate ({found.reason}): {found.message}"
            return Command(goto="finish", update={**update, "events": [*events, f"{variant.id} does not count: {why}"],
                                                  "stop_reason": why})
    return Command(goto="profile", update=update)


@node
def profile(state: OptimizeState, runtime: Ctx) -> Command[Literal["interpret", "critique"]]:
    """Profile each correct candidate of the batch, or say why it has no profile (the planner sees either)."""
    ctx, tree = runtime.context, tree_of(state)
    events, gpu_s, profiled = [], 0.0, False
    for variant in (tree.get(i) for i in state.get("judged", [])):
        if variant.speedup is None or variant.profile_notes:
            continue  # no profile for a failure; a twin's profile came with its verdict
        report = ctx.profile(ctx.problem, variant.source) if ctx.profile is not None else None
        if report is None or report.missing:
            variant.no_profile = (report.missing if report is not None else "") or ctx.no_profile_reason or \
                "the profiler could not measure it (see profiles/)"
            gpu_s += report.gpu_s if report is not None else 0.0
            events.append(f"profile {variant.id}: no profile ({variant.no_profile})")
            continue
        variant.profile_notes, variant.findings, variant.no_profile = report.text, report.finding_ids, ""
        gpu_s += report.gpu_s
        profiled = True
        events.append(f"profile {variant.id}: {report.headline}")
    update = {"variants": changed(tree, state.get("judged", [])), "gpu_s": gpu_s, "events": events}
    return Command(goto="interpret" if profiled and ctx.uses_llm else "critique", update=update)


def error_line(message: str) -> str:
    """A failure in one line: what was raised, and where in the problem's file (the worker's copy is
    ``reference.py``: ``reference.py:13 in forward: ...`` reads ``line 13 in forward: ...``)."""
    first, *rest = [line.strip() for line in message.splitlines() if line.strip()] or [message]
    where = re.sub(r"^reference\.py:(\d+)", r"line \1", rest[0]) if rest else ""
    return f"{first} ({where})" if where else first


def record_judged(ctx: OptimizeContext, variants: list[Variant], results: list[EvalResult]) -> list[str]:
    """Append the freshly judged candidates to the judged-candidate dataset; a failure to write is an event."""
    if not ctx.settings.forecast.record or not variants:
        return []
    from kernelpro.forecast.dataset import append_rows, row_for

    hardware = ctx.gpu if ctx.device == "cuda" else "cpu"
    try:
        append_rows(ctx.settings.forecast.dataset, [row_for(ctx.problem, v.source, r, hardware, "optimize",
                                                            ctx.files.root.name)
                                                    for v, r in zip(variants, results, strict=True)])
    except OSError as error:
        return [f"dataset: not recorded ({error})"]
    return []
