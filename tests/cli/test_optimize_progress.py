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


def _variants(*children: tuple[str, str, str]) -> dict:
    """The state's variants: the reference, and children (id, origin, idea) judged slower."""
    from kernelpro.harness.result import EvalResult
    from kernelpro.search.tree import VariantTree
    from tests.conftest import candidate, problem

    tree = VariantTree.with_root(problem("scale_relu").source)
    for variant_id, origin, idea in children:
        child = tree.spawn(tree.root.id, f"# {variant_id}\n{candidate('honest_scale_relu')}", idea, origin)
        tree.variants[variant_id] = tree.variants.pop(child.id).model_copy(update={"id": variant_id})
        tree.record(variant_id, EvalResult(status="ok", correct=True, speedup=0.5, speed_verdict="slower"))
    return tree.to_state()


def test_a_candidate_is_named_by_its_recipe_or_idea_beside_its_id():
    out = io.StringIO()
    progress = Progress(Console(file=out, width=400, color_system=None), max_iters=3, device="cpu")
    variants = _variants(("864abf46", "recipe:inference_mode", "torch.inference_mode around the call"),
                         ("0badc0de", "llm", "fuse relu and scale: one clamp-multiply expression (why: two passes)"))
    progress.update("judge", {"variants": variants, "iteration": 2, "answered_before": 0,
                              "events": ["judge 864abf46: ok, 0.43x [0.41-0.45] slower",
                                         "judge 0badc0de: ok, 0.50x slower"]})
    first, second = out.getvalue().splitlines()
    assert first.split()[:4] == ["judge", "864abf46", "(inference_mode):", "ok,"]
    assert second.split()[:3] == ["judge", "0badc0de", "(fuse"] and "(fuse relu and scale): ok" in second


def test_a_resumed_run_counts_on_from_what_was_judged():
    out = io.StringIO()
    state = {"variants": _variants(("864abf46", "recipe:freeze", "freeze"), ("f5f78b33", "recipe:single_thread", "x")),
             "iteration": 2, "answered_before": 0, "gpu_s": 12.0}
    progress = Progress(Console(file=out, width=400, color_system=None), max_iters=7, device="cuda", state=state)
    progress.update("select", {"events": ["select (recipes): b92773d4 -> dcb5d9e6 (prior 0.16)"]})
    assert "| 2/7 judged |" in out.getvalue() and "GPU 12 s" in out.getvalue()


def test_a_cpu_run_leaves_gpu_time_out():
    out = io.StringIO()
    Progress(Console(file=out, width=400, color_system=None), max_iters=3, device="cpu").update(
        "select", {"events": ["select (recipes): b92773d4 -> dcb5d9e6 (prior 0.16)"]})
    assert "GPU" not in out.getvalue() and "| 0/3 judged | $0.000" in out.getvalue()
