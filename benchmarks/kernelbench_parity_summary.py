"""How often kernelpro's verdicts agree with KernelBench's evaluator on the same candidates (``kernelbench_parity.py``).

A row holds ``kernelpro`` (the judge's verdict under the ``kernelbench`` correctness profile: its status, its own
speedup and the one in KernelBench's convention) and ``kernelbench`` (what ``eval_kernel_against_ref`` said at its
own tolerance), with ``kernelbench_loose`` where KernelBench was asked again at 1e-2 (v0.1's tolerance, the one
kernelpro's profile applies) because it found only an output mismatch; elsewhere the loose answer is the default's.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

CORRECTNESS_TARGET = 0.95
SPEEDUP_TARGET = 0.90
SPEEDUP_MARGIN = 0.10
"""Two speedups agree when one is within this share of the other (KernelBench's figure is the yardstick)."""

KERNELPRO_NO_VERDICT = {"worker_error", "run_deadline"}
"""Reasons that say the judge, not the candidate, failed: no call on the candidate's correctness."""

VIEWS = {"against_kernelbench": "kernelbench", "against_kernelbench_at_1e-2": "kernelbench_loose"}


def kernelpro_call(verdict: dict[str, Any]) -> str:
    """``correct``, ``incorrect``, ``rejected`` (a guard's call: cheating, not values) or ``none``."""
    status = verdict.get("status")
    if status == "ok":
        return "correct"
    if status == "rejected":
        return "rejected"
    if status in ("incorrect", "compile_error", "runtime_error") and verdict.get("reason") not in KERNELPRO_NO_VERDICT:
        return "incorrect"
    return "none"  # timeout, problem_invalid, the judge's own failure


def kernelbench_call(answer: dict[str, Any] | None) -> str:
    """``correct``, ``incorrect`` or ``none`` (timed out, crashed, no result)."""
    if not answer or answer.get("outcome") != "verdict":
        return "none"
    return "correct" if answer.get("correctness") else "incorrect"


def kernelbench_answer(row: dict[str, Any], view: str) -> dict[str, Any] | None:
    if view == "kernelbench_loose":
        return row.get("kernelbench_loose") or row.get("kernelbench")
    return row.get("kernelbench")


def speedups_agree(kernelpro: float, kernelbench: float) -> bool:
    return abs(kernelpro / kernelbench - 1.0) <= SPEEDUP_MARGIN


def _share(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


def agreement(rows: list[dict[str, Any]], view: str) -> dict[str, Any]:
    """Correctness agreement over the cases where both reached a call (kernelpro's guard rejections counted
    apart, by KernelBench's call), and speedup agreement over the cases both called correct, for the speedup in
    KernelBench's convention and, for contrast, kernelpro's own."""
    compared = agree = 0
    excluded: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    directions: Counter[str] = Counter()
    speed = {name: {"compared": 0, "within_10pct": 0, "no_figure": 0} for name in ("kernelbench", "kernelpro")}
    misses = []
    for row in rows:
        kp, answer = row.get("kernelpro") or {}, kernelbench_answer(row, view)
        kp_call, kb_call = kernelpro_call(kp), kernelbench_call(answer)
        if kp_call == "none" or kb_call == "none":
            if kp_call == "none":
                excluded[f"kernelpro_{kp.get('status')}"] += 1
            if kb_call == "none":
                excluded[f"kernelbench_{(answer or {}).get('outcome', 'missing')}"] += 1
            continue
        if kp_call == "rejected":
            rejected[f"kernelbench_{kb_call}"] += 1
            continue
        compared += 1
        if kp_call == kb_call:
            agree += 1
            directions[f"both_{kp_call}"] += 1
        else:
            directions[f"only_{'kernelpro' if kp_call == 'correct' else 'kernelbench'}_correct"] += 1
            misses.append(_miss(row, answer, "correctness", kp.get("verdict"), kb_call))
        if kp_call == kb_call == "correct":
            for name, key in (("kernelbench", "kernelbench_speedup"), ("kernelpro", "speedup")):
                ours, theirs = kp.get(key), answer.get("speedup")
                if ours is None or theirs is None:
                    speed[name]["no_figure"] += 1
                    continue
                speed[name]["compared"] += 1
                if speedups_agree(ours, theirs):
                    speed[name]["within_10pct"] += 1
                elif name == "kernelbench":
                    misses.append(_miss(row, answer, "speedup", ours, theirs))
    correctness = {"compared": compared, "agree": agree, "fraction": _share(agree, compared),
                   "target": CORRECTNESS_TARGET, "met": compared > 0 and agree / compared >= CORRECTNESS_TARGET,
                   **dict(sorted(directions.items())), "excluded": dict(sorted(excluded.items())),
                   "rejected_by_kernelpro": dict(sorted(rejected.items()))}
    for figures in speed.values():
        figures["fraction"] = _share(figures["within_10pct"], figures["compared"])
        figures["target"] = SPEEDUP_TARGET
        figures["met"] = figures["compared"] > 0 and figures["within_10pct"] / figures["compared"] >= SPEEDUP_TARGET
    return {"correctness": correctness, "speedup_kernelbench_scorecard": speed["kernelbench"],
            "speedup_kernelpro_scorecard": speed["kernelpro"], "misses": misses}


def _miss(row: dict[str, Any], answer: dict[str, Any], kind: str, kernelpro: Any, kernelbench: Any) -> dict[str, Any]:
    kp = row.get("kernelpro") or {}
    return {"case": row.get("case"), "kind": kind, "kernelpro": kernelpro, "kernelbench": kernelbench,
            "kernelpro_ci95": kp.get("kernelbench_ci95") if kind == "speedup" else None,
            "kernelpro_message": (kp.get("message") or "")[:300],
            "kernelbench_message": (answer.get("message") or "")[:300]}


def _outcome(answer: dict[str, Any] | None) -> str:
    call = kernelbench_call(answer)
    return call if call != "none" else (answer or {}).get("outcome", "missing")


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"cases": len(rows),
            "kernelpro_verdicts": dict(Counter((r.get("kernelpro") or {}).get("verdict") for r in rows).most_common()),
            "kernelbench_calls": dict(Counter(_outcome(r.get("kernelbench")) for r in rows).most_common()),
            "kernelbench_asked_again_at_1e-2": sum(1 for r in rows if r.get("kernelbench_loose")),
            **{name: agreement(rows, view) for name, view in VIEWS.items()}}
