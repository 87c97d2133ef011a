"""Every GPU recipe judged for real on CUDA: correct on fresh inputs every round (a captured graph copies its
inputs in and clones its output out), never rejected by a guard (the side-stream warm-up is joined both ways)."""

from __future__ import annotations

import pytest
import torch

from kernelpro.harness.judge import judge_many
from kernelpro.problem import parse_problem
from kernelpro.recipes.catalogue import recipe_expansions, recipes_for
from kernelpro.search.tree import VariantTree
from tests.conftest import problem
from tests.recipes.test_catalogue import CONV_SOURCE

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]


@pytest.mark.parametrize("problem_name", ["matmul_relu", "split_stats", "inplace_relu", "flatten_view",
                                          "softmax_wide", "conv_relu"])
def test_every_gpu_recipe_is_correct_on_cuda(problem_name, settings):
    settings.harness.timeout_s = 600  # max-autotune compiles and benchmarks many kernels
    prob = parse_problem(CONV_SOURCE, "conv_relu") if problem_name == "conv_relu" else problem(problem_name)
    recipes = recipes_for(prob, "cuda", settings.harness.tolerances)
    results = judge_many(prob, [r.source for r in recipes], device="cuda", settings=settings)
    for recipe, result in zip(recipes, results, strict=True):
        if "tf32" in recipe.ingredients and result.reason == "precision_downgrade":
            continue  # TF32 under a tight float32 tolerance: refused by the precision guard, as it should be
        assert result.status == "ok" and result.correct, f"{recipe.name}: {result.reason} {result.message}"
        assert not [g for g in result.guards if g.severity == "reject"], recipe.name


def test_a_winning_graph_is_composed_and_still_correct(settings):
    settings.harness.timeout_s = 600
    prob = problem("matmul_relu")
    tree = VariantTree.with_root(prob.source)
    graph = next(r for r in recipes_for(prob, "cuda") if r.name == "cuda_graph")
    child = tree.spawn(tree.root.id, graph.source, graph.idea, graph.origin)
    composed = recipe_expansions(tree, child.id, "cuda")
    assert {"compile_default", "compile_max_autotune_no_cudagraphs"} <= {r.name for r in composed}
    for recipe, result in zip(composed, judge_many(prob, [r.source for r in composed], device="cuda",
                                                   settings=settings), strict=True):
        if result.reason == "precision_downgrade":
            continue
        assert result.status == "ok" and result.correct, f"{recipe.name}: {result.reason} {result.message}"
