"""Built-in recipes: every one passes the static guards, they compose along a path, and a few are judged."""

from __future__ import annotations

import pytest
import torch

from kernelpro.config import Tolerance
from kernelpro.harness.judge import judge, precheck
from kernelpro.harness.result import EvalResult
from kernelpro.problem import load_problems, parse_problem
from kernelpro.search.recipes import recipe_expansions, recipes_for
from kernelpro.search.tree import VariantTree
from tests.conftest import DATA, candidate, problem

CONV_SOURCE = '''import torch
import torch.nn as nn

CHANNELS = 8  # a constant the class uses: it must survive the copy


class Model(nn.Module):
    """A 2-D convolution and ReLU, written the old way (super(Model, self))."""

    def __init__(self, in_channels, kernel_size=3):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, CHANNELS, kernel_size)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(2, 3, 12, 12)]


def get_init_inputs():
    return [3]
'''
CUDA_ONLY = {"cuda_graph", "tf32", "cudnn_benchmark", "compile_reduce_overhead", "compile_max_autotune",
             "compile_max_autotune_no_cudagraphs"}


def all_problems():
    return [*load_problems(DATA / "problems"), parse_problem(CONV_SOURCE, "conv_relu")]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_every_recipe_passes_the_static_guards(device):
    for prob in all_problems():
        recipes = recipes_for(prob, device)
        assert recipes, prob.name
        for recipe in recipes:
            found = precheck(recipe.source)
            assert not isinstance(found, EvalResult), f"{prob.name} {recipe.name}: {found.message}"
            assert all(f.severity != "reject" for f in found)
            assert "class ReferenceModel" in recipe.source and "def get_inputs" not in recipe.source


def test_recipes_fit_the_device_and_the_problem():
    matmul, conv = problem("matmul_relu"), parse_problem(CONV_SOURCE, "conv_relu")
    cpu = {i for r in recipes_for(matmul, "cpu") for i in r.ingredients}
    assert cpu == {"compile_default"}
    assert {i for r in recipes_for(conv, "cpu") for i in r.ingredients} == {"compile_default", "channels_last"}
    cuda = [r.name for r in recipes_for(matmul, "cuda")]
    assert {"compile_max_autotune", "cuda_graph", "tf32", "compile_max_autotune+tf32"} <= set(cuda)
    assert "channels_last" not in cuda and "cudnn_benchmark" not in cuda
    assert {"channels_last", "cudnn_benchmark", "channels_last+cudnn_benchmark"} <= {
        r.name for r in recipes_for(conv, "cuda")}
    half = parse_problem(problem("scale_relu").source.replace("torch.randn(64, 128)",
                                                              "torch.randn(64, 128, dtype=torch.float16)"), "h")
    assert not any("tf32" in r.ingredients for r in recipes_for(half, "cuda"))


def test_priors_order_recipes_and_tolerance_moves_tf32():
    tight = recipes_for(problem("matmul_relu"), "cuda")
    assert [r.prior for r in tight] == sorted((r.prior for r in tight), reverse=True)
    loose = recipes_for(problem("matmul_relu"), "cuda", tolerances={"float32": Tolerance(atol=1e-2, rtol=1e-2)})
    rank = {r.name: i for i, r in enumerate(loose)}
    assert rank["compile_default"] == 0 and rank["compile_default+tf32"] == 1  # TF32 costs little when loose
    # under a tight float32 tolerance TF32 will likely fail the precision check: it drops below plain recipes
    names = [r.name for r in tight]
    assert names.index("compile_default+tf32") > names.index("cuda_graph")


def test_expansions_compose_along_the_path():
    tree = VariantTree.with_root(problem("matmul_relu").source)
    root = tree.root.id
    first = {r.name: r for r in recipe_expansions(tree, root, "cuda")}
    assert set(first) == {r.name for r in recipes_for(problem("matmul_relu"), "cuda")}
    compiled = tree.spawn(root, first["compile_default"].source, first["compile_default"].idea,
                          first["compile_default"].origin)
    assert "compile_default" not in {r.name for r in recipe_expansions(tree, root, "cuda")}  # tried already

    on_compiled = {r.name: r for r in recipe_expansions(tree, compiled.id, "cuda")}
    assert set(on_compiled) == {"cuda_graph", "tf32"}  # no second compile mode, nothing repeated
    graphed = on_compiled["cuda_graph"]
    assert graphed.ingredients == ("compile_default", "cuda_graph")
    assert 'torch.compile(self.inner, mode="default")' in graphed.source and "torch.cuda.graph(" in graphed.source
    child = tree.spawn(compiled.id, graphed.source, graphed.idea, graphed.origin)
    assert {r.name for r in recipe_expansions(tree, child.id, "cuda")} == {"tf32"}
    assert recipe_expansions(tree, compiled.id, "cpu") == []


def test_expansions_wrap_an_llm_variant():
    tree = VariantTree.with_root(problem("matmul_relu").source)
    llm = tree.spawn(tree.root.id, candidate("honest_matmul_relu"), "addmm and clamp", "llm")
    recipes = recipe_expansions(tree, llm.id, "cuda")
    assert "compile_max_autotune+tf32" not in {r.name for r in recipes}  # combinations start at the reference
    for recipe in recipes:
        assert "class BaseModelNew(nn.Module)" in recipe.source
        assert "self.inner = BaseModelNew(in_features, out_features)" in recipe.source
        assert isinstance(precheck(recipe.source), list)


def test_compile_default_is_correct_on_cpu(settings):
    settings.harness.timeout_s = 240  # a cold Inductor cache compiles C++
    recipe = next(r for r in recipes_for(problem("matmul_relu"), "cpu") if r.name == "compile_default")
    result = judge(problem("matmul_relu"), recipe.source, device="cpu", settings=settings)
    assert result.status == "ok", result.message
    assert result.speedup is not None


def test_channels_last_is_correct_on_cpu(settings):
    conv = parse_problem(CONV_SOURCE, "conv_relu")
    recipe = next(r for r in recipes_for(conv, "cpu") if r.name == "channels_last")
    result = judge(conv, recipe.source, device="cpu", settings=settings)
    assert result.status == "ok", result.message


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize(("problem_name", "recipe_name"), [
    ("matmul_relu", "cuda_graph"), ("split_stats", "cuda_graph"), ("inplace_relu", "cuda_graph"),
    ("flatten_view", "cuda_graph"), ("matmul_relu", "compile_reduce_overhead"),
    ("matmul_relu", "compile_default+cuda_graph"), ("softmax_wide", "compile_max_autotune"),
])
def test_cuda_recipes_are_correct_on_cuda(problem_name, recipe_name, settings):
    settings.harness.timeout_s = 600  # max-autotune compiles and benchmarks many kernels
    recipe = next(r for r in recipes_for(problem(problem_name), "cuda") if r.name == recipe_name)
    result = judge(problem(problem_name), recipe.source, device="cuda", settings=settings)
    assert result.status == "ok", result.message
