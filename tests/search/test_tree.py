"""The variant tree: building, queries, state round trip and rendering."""

from __future__ import annotations

import json

import pytest

from kernelpro.harness.result import EvalResult
from kernelpro.search.kinds import detect_kind
from kernelpro.search.tree import Variant, VariantTree
from tests.conftest import candidate, problem


def ok(speedup: float) -> EvalResult:
    verdict = "faster" if speedup > 1.05 else "slower" if speedup < 0.95 else "same"
    return EvalResult(status="ok", correct=True, speedup=speedup, speedup_ci95=[speedup * 0.98, speedup * 1.02],
                      speed_verdict=verdict)


def small_tree() -> tuple[VariantTree, dict[str, str]]:
    tree = VariantTree.with_root(problem("scale_relu").source)
    root = tree.root.id
    fast = tree.spawn(root, candidate("honest_scale_relu"), "fuse relu and scale", "llm", iteration=1)
    fast.record(ok(1.8))
    wrong = tree.spawn(root, candidate("honest_triton_scale_relu"), "a triton kernel", "llm", iteration=1)
    wrong.record(EvalResult(status="incorrect", reason="mismatch", speedup=None))
    faster = tree.spawn(fast.id, candidate("honest_cuda_scale_relu"), "an NVRTC kernel", "llm", iteration=2)
    faster.record(ok(2.5))
    slow = tree.spawn(fast.id, candidate("honest_env_probe"), "clamp_min instead of relu", "llm", iteration=2)
    slow.record(ok(0.9))
    return tree, {"root": root, "fast": fast.id, "wrong": wrong.id, "faster": faster.id, "slow": slow.id}


def test_kinds_are_read_from_the_source():
    assert detect_kind(problem("scale_relu").source) == "reference"
    assert detect_kind(candidate("honest_scale_relu")) == "pytorch"
    assert detect_kind(candidate("honest_triton_scale_relu")) == "triton"
    assert detect_kind(candidate("honest_cuda_scale_relu")) == "nvrtc"
    assert detect_kind("from kernelpro.runtime import CubinKernel\nclass ModelNew: pass") == "cubin"
    assert detect_kind("from torch.utils.cpp_extension import load_inline\nclass ModelNew: pass") == "load_inline"
    assert detect_kind("import cutlass.cute as cute\nclass ModelNew: pass") == "cute_dsl"


def test_queries_follow_the_tree():
    tree, ids = small_tree()
    assert tree.root.kind == "reference" and tree.root.id == ids["root"]
    assert [v.id for v in tree.children(ids["root"])] == [ids["fast"], ids["wrong"]]
    assert [v.id for v in tree.path_to(ids["faster"])] == [ids["root"], ids["fast"], ids["faster"]]
    assert tree.get(ids["faster"]).depth == 2
    assert tree.best().id == ids["faster"]
    assert [v.id for v in tree.correct()] == [ids["faster"], ids["fast"], ids["slow"]]
    assert tree.get(ids["wrong"]).speedup is None and tree.get(ids["wrong"]).verdict == "incorrect"


def test_leaderboard_keeps_the_slowest_for_contrast():
    tree, ids = small_tree()
    assert [v.id for v in tree.leaderboard(2)] == [ids["faster"], ids["slow"]]
    assert [v.id for v in tree.leaderboard(5)] == [ids["faster"], ids["fast"], ids["slow"]]


def test_speedup_counts_only_when_correct():
    tree, ids = small_tree()
    variant = tree.spawn(ids["root"], "class ModelNew: pass\n# x", "rejected one", "llm")
    variant.record(EvalResult(status="rejected", reason="input_mutation", speedup=3.0))
    assert variant.speedup is None and variant.status == "judged"
    failed = tree.spawn(ids["root"], "class ModelNew: pass\n# y", "no code", "llm")
    failed.mark_failed("the coder returned no code")
    assert failed.status == "failed" and failed.verdict == "failed"


def test_state_round_trips_through_json():
    tree, ids = small_tree()
    state = json.loads(json.dumps(tree.to_state()))
    again = VariantTree.from_state(state)
    assert again.to_state() == tree.to_state()
    assert again.best().id == ids["faster"]
    assert isinstance(again.get(ids["fast"]), Variant)


def test_ids_are_stable_and_unique():
    tree, ids = small_tree()
    twin = tree.spawn(ids["root"], candidate("honest_scale_relu"), "the same again", "llm")
    assert twin.id == f"{ids['fast']}-2"
    assert VariantTree.with_root(problem("scale_relu").source).root.id == ids["root"]
    with pytest.raises(ValueError):
        tree.add(tree.get(ids["fast"]))
    with pytest.raises(KeyError):
        tree.spawn("nope", "x", "", "llm")


def test_render_ascii_shows_structure_speedups_and_the_best():
    tree, ids = small_tree()
    text = tree.render_ascii()
    lines = text.splitlines()
    assert lines[0].startswith(f"{ids['root']} reference")
    assert any(line.startswith(f"├── {ids['fast']} 1.80x") for line in lines)
    assert any(line.startswith(f"│   ├── {ids['faster']} 2.50x *") for line in lines)
    assert any(line.startswith(f"└── {ids['wrong']} incorrect") for line in lines)
    assert len(lines) == len(tree)


def test_a_candidate_that_is_not_measurably_faster_is_never_the_best():
    tree = VariantTree.with_root(problem("scale_relu").source)
    same = tree.spawn(tree.root.id, candidate("honest_scale_relu"), "the same ops", "llm", iteration=1)
    same.record(EvalResult(status="ok", correct=True, speedup=1.01, speedup_ci95=[0.99, 1.03], speed_verdict="same"))
    noisy = tree.spawn(tree.root.id, candidate("honest_env_probe"), "noisy", "llm", iteration=1)
    noisy.record(EvalResult(status="ok", correct=True, speedup=1.3, speedup_ci95=[0.8, 1.9],
                            speed_verdict="uncertain"))
    busy = tree.spawn(tree.root.id, candidate("honest_softmax"), "timed beside other work", "llm", iteration=1)
    busy.record(EvalResult(status="ok", correct=True, speedup=3.0, speedup_ci95=[2.9, 3.1], speed_verdict="faster",
                           contended=True))
    assert tree.best() is None and len(tree.correct()) == 3


def test_once_finalists_are_re_judged_only_their_new_verdicts_count():
    tree, ids = small_tree()
    finalists = tree.finalists(2)
    assert [v.id for v in finalists] == [ids["faster"], ids["fast"]]
    # the faster one does not hold up head to head; the other does
    finalists[0].final = ok(1.01).model_dump(mode="json")
    finalists[1].final = ok(1.7).model_dump(mode="json")
    best = tree.best()
    assert best.id == ids["fast"] and best.deciding_speedup == 1.7 and best.speedup == 1.8
    finalists[1].final = ok(0.99).model_dump(mode="json")
    assert tree.best() is None  # the first verdicts of others do not come back


def test_a_candidate_measured_slower_on_a_quiet_machine_is_no_finalist():
    """It could not become the best, so judging it again would only spend GPU time; one timed beside other
    work gets the quiet look its first verdict lacked."""
    tree, ids = small_tree()
    busy = tree.spawn(ids["root"], candidate("honest_softmax"), "timed beside other work", "llm", iteration=2)
    busy.record(ok(0.5).model_copy(update={"contended": True}))
    same = tree.spawn(ids["root"], candidate("honest_matmul_relu"), "within the noise", "llm", iteration=2)
    same.record(ok(1.0))
    assert [v.id for v in tree.finalists(10)] == [ids["faster"], ids["fast"], same.id, busy.id]
    assert ids["slow"] not in [v.id for v in tree.finalists(10)] and tree.get(ids["slow"]).measured_worse()


def test_the_same_candidate_is_recognised_whatever_its_comments_or_layout():
    tree, ids = small_tree()
    source = tree.get(ids["fast"]).source
    restyled = tree.spawn(ids["root"], "# a comment the first did not have\n" + source.replace("\n\n\n", "\n\n"),
                          "the same code again", "llm")
    assert tree.equivalent_of(restyled).id == ids["fast"]
    other = tree.spawn(ids["root"], source.replace("min=0.0", "min=0.5"), "another clamp", "llm")
    assert tree.equivalent_of(other) is None
    assert tree.equivalent_of(tree.get(ids["fast"])) is None  # a candidate is not its own twin


def recipe_child(tree: VariantTree, parent: str, name: str, speedup: float | None = None) -> Variant:
    """The child the recipe ``name`` makes at ``parent`` (as the loop spawns it), judged when ``speedup`` is given."""
    from kernelpro.recipes.catalogue import recipe_expansions

    [recipe] = [r for r in recipe_expansions(tree, parent, "cpu") if r.name == name]
    child = tree.spawn(parent, recipe.source, recipe.idea, recipe.origin)
    if speedup is not None:
        child.record(ok(speedup))
    return child


def test_a_composed_recipe_is_its_own_candidate_and_the_same_recipes_in_another_order_are_one(monkeypatch):
    """The origin of a composed recipe names only the ingredient it added: compile_default then single_thread is
    ``recipe:single_thread``, like single_thread alone, yet its code holds both."""
    monkeypatch.setattr("kernelpro.recipes.catalogue.usable_cores", lambda: 2)  # single_thread is offered
    tree = VariantTree.with_root(problem("scale_relu").source)
    root = tree.root.id
    alone = recipe_child(tree, root, "single_thread", 0.69)
    compiled = recipe_child(tree, root, "compile_default", 0.59)
    composed = recipe_child(tree, compiled.id, "single_thread")
    assert composed.origin == alone.origin == "recipe:single_thread"
    assert tree.equivalent_of(composed) is None  # neither single_thread alone nor compile_default alone
    composed.record(ok(0.8))
    reordered = recipe_child(tree, alone.id, "compile_default")  # single_thread, then compile_default on top
    assert tree.equivalent_of(reordered).id == composed.id
    combined = recipe_child(tree, root, "inference_mode+single_thread", 1.3)  # one recipe of two at the root
    assert tree.equivalent_of(recipe_child(tree, alone.id, "inference_mode")).id == combined.id
    assert tree.equivalent_of(recipe_child(tree, compiled.id, "inference_mode")) is None


def test_no_variant_is_best_on_a_problem_the_judge_found_degenerate():
    from kernelpro.harness.result import ProblemFinding

    tree, ids = small_tree()
    assert tree.best().id == ids["faster"] and tree.problem_finding() is None
    zeros = tree.spawn(tree.root.id, candidate("suspect_constant_zeros"), "return the constant", "llm", iteration=3)
    zeros.record(EvalResult(status="ok", correct=True, speedup=99.0,
                            problem_findings=[ProblemFinding(reason="constant_output", message="always zero")]))
    assert zeros.correct and zeros.problem_findings[0]["reason"] == "constant_output"
    assert tree.best() is None and tree.correct() == [] and tree.leaderboard() == []
    assert tree.problem_finding() == {"reason": "constant_output", "message": "always zero"}
