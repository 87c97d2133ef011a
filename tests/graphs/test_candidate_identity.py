"""The judge node answers a candidate from another's verdict only when the judge would run the same code: a
composed recipe is judged itself, the same recipes composed in another order are answered from the first."""

from __future__ import annotations

from langgraph.runtime import Runtime

from kernelpro.graphs.measure import judge
from kernelpro.harness.result import EvalResult
from kernelpro.recipes.catalogue import recipe_expansions
from kernelpro.search.tree import Variant, VariantTree
from tests.graphs.helpers import make_context, results_log


def recipe_child(tree: VariantTree, parent: str, name: str, speedup: float | None = None) -> Variant:
    [recipe] = [r for r in recipe_expansions(tree, parent, "cpu") if r.name == name]
    child = tree.spawn(parent, recipe.source, recipe.idea, recipe.origin)
    if speedup is not None:  # a verdict of its own, told apart from any the judge gives now by its speedup
        child.record(EvalResult(status="ok", correct=True, speedup=speedup, speedup_ci95=[speedup, speedup],
                                speed_verdict="faster" if speedup > 1 else "slower"))
    return child


def test_a_composed_recipe_is_judged_and_the_same_recipes_in_another_order_answered_from_it(settings, tmp_path,
                                                                                           monkeypatch):
    monkeypatch.setattr("kernelpro.recipes.catalogue.usable_cores", lambda: 2)  # single_thread is offered
    context = make_context(settings, tmp_path, None, problem_name="scale_relu", policy="recipes", max_iters=8)
    tree = VariantTree.with_root(context.problem.source)
    root = tree.root.id
    alone = recipe_child(tree, root, "single_thread", 0.69)
    frozen = recipe_child(tree, root, "freeze", 0.61)
    combined = recipe_child(tree, root, "inference_mode+single_thread", 1.37)
    composed = recipe_child(tree, frozen.id, "single_thread")  # origin recipe:single_thread, like `alone`
    reordered = recipe_child(tree, alone.id, "freeze")  # freeze+single_thread again, in the other order
    on_alone = recipe_child(tree, alone.id, "inference_mode")  # inference_mode+single_thread again
    batch = [composed.id, reordered.id, on_alone.id]
    command = judge({"variants": tree.to_state(), "pending": batch, "iteration": 3},
                    Runtime(context=context))
    after = VariantTree({**tree.variants, **VariantTree.from_state(command.update["variants"]).variants})
    judged = after.get(composed.id)
    assert "answered_by" not in judged.result["details"] and judged.result["status"] == "ok"
    assert judged.result["speedup"] not in (0.69, 0.61)  # neither ingredient's verdict
    assert context.evaluate.stats.judged == 1  # the composed recipe, once; its reorder and the other answered
    assert after.get(reordered.id).result["details"]["answered_by"] == composed.id
    assert after.get(on_alone.id).result["details"]["answered_by"] == combined.id
    assert after.get(on_alone.id).speedup == 1.37
    events = command.update["events"]
    assert not any(e.startswith(f"judge {composed.id}:") and "the same candidate" in e for e in events)
    assert any(e.startswith(f"judge {reordered.id}:") and f"the same candidate as {composed.id}" in e
               for e in events)
    logged = {entry["variant"]: entry for entry in results_log(context)}
    assert "answered_by" not in logged[composed.id]["details"]
