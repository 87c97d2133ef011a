"""The progress lines of `kernelpro optimize`: one per event, the node named once."""

from __future__ import annotations

import io

from rich.console import Console

from kernelpro.cli.optimize_terminal import Progress


def shown(node: str, *events: str) -> list[str]:
    out = io.StringIO()
    Progress(Console(file=out, width=400, color_system=None), max_iters=3).update(node, {"events": list(events)})
    return out.getvalue().splitlines()


def test_each_line_names_its_node_once():
    (baseline,) = shown("baseline", "baseline: scale_relu on cpu (CPU); search policy recipes")
    assert baseline.split()[:3] == ["baseline", "scale_relu", "on"] and "baseline baseline" not in baseline
    plan, nothing = shown("plan", "plan from b92773d4: inference_mode; freeze", "plan: nothing left to try from ab")
    assert plan.split()[:3] == ["plan", "from", "b92773d4:"] and "plan plan" not in plan
    assert nothing.split()[:3] == ["plan", "nothing", "left"]
    (judge,) = shown("judge", "judge 864abf46: ok, 0.43x [0.41-0.45] slower")
    assert judge.split()[:3] == ["judge", "864abf46:", "ok,"] and "| best none faster yet | 0/3 judged" in judge


def test_an_event_about_something_else_keeps_its_words():
    (line,) = shown("finish", "finalists re-judged head to head with the reference: abc")
    assert line.split()[:3] == ["finish", "finalists", "re-judged"]
    (line,) = shown("review_code", "abc123 skipped by the user")
    assert line.split()[:2] == ["review_code", "abc123"]
