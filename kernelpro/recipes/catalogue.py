"""Built-in recipes: candidates that need no LLM (CUDA graphs, torch.compile modes, cuDNN autotuning, TF32,
channels_last; on the CPU inference mode, a frozen trace, one thread).

A recipe is a set of ingredients (``recipes.ingredients``) applied around a module: the reference, or any
candidate's ``ModelNew``. Recipes compose along a path of the tree: a child made by a recipe from a recipe variant
wraps the same base module with the union of both ingredient sets, so a winner is tried again with one more
ingredient on top.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from kernelpro.config import Tolerance
from kernelpro.harness.cpu_load import usable_cores
from kernelpro.problem import Problem
from kernelpro.recipes.code import CUDAGRAPH_COMPILE_MODES, render_candidate
from kernelpro.recipes.ingredients import COMBINATIONS, INGREDIENTS, compatible, compatible_all
from kernelpro.search.input_size import input_bytes
from kernelpro.search.module_copy import copy_class
from kernelpro.search.tree import Variant, VariantTree

__all__ = ["INGREDIENTS", "ProblemTraits", "Recipe", "compatible", "recipe_expansions", "recipes_for",
           "recipes_notice"]

CONV_OPS = re.compile(r"^(Conv(Transpose)?[123]d|conv(_transpose)?[123]d)$")
CONV2D_OPS = re.compile(r"^(Conv(Transpose)?2d|conv(_transpose)?2d)$")
# Layers and calls whose result depends on train/eval mode: such a module cannot be frozen (freezing needs eval).
MODE_SENSITIVE = re.compile(r"^(BatchNorm[123]d|SyncBatchNorm|InstanceNorm[123]d|LazyBatchNorm[123]d|"
                            r"\w*Dropout\w*|\w*dropout\w*|batch_norm|instance_norm|RReLU|rrelu|training)$")
# Calls that turn a tensor into Python values: a trace would bake in the values of the traced call.
TRACE_BAKING = {"item", "tolist", "numpy", "nonzero", "unique", "any", "all"}
TF32_LOOSE_RTOL = 1e-3  # TF32 keeps 10 mantissa bits: about 1e-3 relative error per product
GRAPH_INGREDIENTS = frozenset({"cuda_graph", *CUDAGRAPH_COMPILE_MODES})
GRAPH_ON_GPU_BOUND = 0.5
"""The CUDA-graph recipes' prior factor on a reference that is not host-bound. On the H200's GPU-bound
``elementwise_chain`` (0.57 ms, ``benchmarks/results/energy_objective_h200.json``) every graph variant lost to
its graph-free counterpart: ``cuda_graph`` 0.69x, ``compile_default+cuda_graph`` 1.50x against
``compile_default`` 3.08x, ``compile_max_autotune`` 0.93x against its no-cudagraphs mode's 2.05x; halving
puts them after the graph-free modes (priors 0.5-0.8) there and leaves them first on host-bound problems."""
GRAPH_COPY_BYTES = 4 * 2**20
"""Inputs above this (read from the source, ``input_size``) put the graph recipes after the graph-free ones
before any verdict, and whatever the verdicts say: a graph copies every input into its static buffers on each
call, and 4 MiB is about 2.4 us at the H200's 3.5 TB/s, half the launch a graph saves. Over KernelBench's levels
1 and 2 on the H200 (``benchmarks/results/suite_kernelbench_h200``) every input set was 8 MiB or more and the
graph, tried first, was never faster than eager on the 22 problems it was judged on (0.34x-1.00x), host-bound
ones included (level 1 task 12: a 0.052 ms host-bound reference, 64 MiB of inputs, the graph 0.43x)."""


TF32_MIN_RTOL = 5e-3
"""The float32 relative tolerance from which TF32 recipes are offered (KernelBench judges at 1e-2)."""


@dataclass(frozen=True)
class Recipe:
    """One recipe candidate: ``origin`` is what the variant made from it records."""

    name: str
    idea: str
    source: str
    ingredients: tuple[str, ...] = ()
    prior: float = 0.5
    """Expected value before judging, for ordering (higher first)."""

    @property
    def origin(self) -> str:
        return f"recipe:{self.name}"


def _traceable(tree: ast.Module) -> bool:
    """No control flow on values inside any ``forward`` and no tensor-to-Python conversion: a trace of one call
    then computes what the module computes for every input of the same shapes."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "forward":
            for inner in ast.walk(node):
                if isinstance(inner, (ast.If, ast.While, ast.IfExp, ast.Assert, ast.Try, ast.Match)):
                    return False
                if isinstance(inner, ast.Attribute) and inner.attr in TRACE_BAKING:
                    return False
    return True


@dataclass(frozen=True)
class ProblemTraits:
    """What the recipes need to know about a problem, read from its source (and the machine's cores)."""

    dtype: str = "float32"
    has_conv: bool = False
    has_conv2d: bool = False
    float32_rtol: float = 1e-4
    freezable: bool = False
    """Behaves the same in train and eval mode and can be traced (see ``_traceable``)."""
    multi_core: bool = True
    """More than one usable core: a thread setting can change something."""
    input_bytes: int | None = None
    """One call's inputs, as ``get_inputs`` draws them (None where the source does not say plainly)."""

    @property
    def large_inputs(self) -> bool:
        return self.input_bytes is not None and self.input_bytes > GRAPH_COPY_BYTES

    @property
    def is_float32(self) -> bool:
        return self.dtype == "float32"

    @property
    def tf32_tolerated(self) -> bool:
        """float32 with a relative tolerance TF32 can meet: its 10-bit mantissa rounds each product to about
        5e-4, and a sum over a few hundred products drifts further (6.8e-4 at 1e-4 on an H200, so below
        ``TF32_MIN_RTOL`` the recipe is never offered)."""
        return self.is_float32 and self.float32_rtol >= TF32_MIN_RTOL

    @classmethod
    def of(cls, source: str, dtype: str | None = None, tolerances: dict[str, Tolerance] | None = None
           ) -> ProblemTraits:
        tree = ast.parse(source)
        names = {n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(tree)
                 if isinstance(n, (ast.Attribute, ast.Name))}
        names |= {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg}
        rtol = (tolerances or {}).get("float32", Tolerance(atol=1e-4, rtol=1e-4)).rtol
        return cls(dtype=dtype or guess_dtype(source), has_conv=any(CONV_OPS.match(n) for n in names),
                   has_conv2d=any(CONV2D_OPS.match(n) for n in names), float32_rtol=rtol,
                   freezable=not any(MODE_SENSITIVE.match(n) for n in names) and _traceable(tree),
                   multi_core=usable_cores() > 1, input_bytes=input_bytes(source))

    def allows(self, ingredient: str, device: str) -> bool:
        found = INGREDIENTS[ingredient]
        return device in found.priors and (found.trait is None or bool(getattr(self, found.trait)))


def recipes_notice(problem: Problem, device: str, profiled: bool, remembered: bool,
                   tolerances: dict[str, Tolerance] | None = None) -> str:
    """What the built-in recipes will do for ``problem`` on ``device``, in a sentence, as they will run: the
    ingredients that apply there, and whether candidates are profiled and remembered."""
    names = sorted({i for r in recipes_for(problem, device, tolerances) for i in r.ingredients},
                   key=lambda n: -INGREDIENTS[n].priors[device])
    where = "on this CPU" if device == "cpu" else "on this GPU"
    steps = ["judged"] + (["profiled"] if profiled else []) + (["remembered"] if remembered else [])
    unprofiled = "" if profiled else (" (not profiled: profiling needs an NVIDIA GPU)" if device == "cpu"
                                       else " (not profiled: --no-profile)")
    return (f"{where}: {', '.join(RECIPE_WORDS.get(n, n) for n in names)}, each {' and '.join(steps)} like any "
            f"other candidate{unprofiled}")


RECIPE_WORDS = {
    "cuda_graph": "a hand-captured CUDA graph of the forward", "compile_default": "torch.compile",
    "compile_max_autotune_no_cudagraphs": "torch.compile max-autotune-no-cudagraphs",
    "compile_max_autotune": "torch.compile max-autotune", "compile_reduce_overhead": "torch.compile reduce-overhead",
    "fullgraph": "fullgraph=True", "cudnn_benchmark": "cuDNN autotuning", "channels_last": "channels_last",
    "tf32": "TF32 where the tolerance allows", "inference_mode": "torch.inference_mode",
    "single_thread": "one intra-op thread", "freeze": "a frozen trace (torch.jit.freeze)",
}


def guess_dtype(source: str) -> str:
    """The floating-point dtype a problem computes in, from what its source mentions (float32 when none)."""
    for dtype, pattern in (("float16", r"\bfloat16\b|\bhalf\b"), ("bfloat16", r"\bbfloat16\b"),
                           ("float64", r"\bfloat64\b|\bdouble\b")):
        if re.search(pattern, source):
            return dtype
    return "float32"


def _prior(names: tuple[str, ...], base_prior: float, traits: ProblemTraits, host_bound: bool | None = None
           ) -> float:
    # Under a float32 tolerance tighter than TF32's error the precision guard will likely reject it.
    prior = base_prior * (0.4 if "tf32" in names and traits.float32_rtol < TF32_LOOSE_RTOL else 1.0)
    # A CUDA graph saves launches and pays a copy of every input; where the judge found the reference's cost is
    # its GPU time, not its launches, or the copies are large, the graph-free variants go first.
    graph_late = host_bound is False or traits.large_inputs
    return prior * (GRAPH_ON_GPU_BOUND if graph_late and GRAPH_INGREDIENTS & set(names) else 1.0)


def reference_host_bound(tree: VariantTree) -> bool | None:
    """Whether the judge found the reference's cost to be its launches (any verdict says), None before one."""
    return next((bool(v.result["host_bound"]) for v in tree.variants.values()
                 if v.result and v.result.get("host_bound") is not None), None)


def _idea(names: tuple[str, ...]) -> str:
    return "; ".join(INGREDIENTS[n].idea for n in names)


def _build(base: Variant, names: tuple[str, ...], idea: str) -> str:
    class_name = "Model" if base.kind == "reference" else "ModelNew"
    copy = copy_class(base.source, class_name, "ReferenceModel" if base.kind == "reference" else "BaseModelNew")
    return render_candidate(copy, names, idea)


def _recipe(base: Variant, applied: tuple[str, ...], added: tuple[str, ...], prior: float) -> Recipe:
    ingredients = tuple(sorted({*applied, *added}))
    idea = _idea(added)
    return Recipe(name="+".join(sorted(added)), idea=idea, source=_build(base, ingredients, idea),
                  ingredients=ingredients, prior=prior)


def recipes_for(problem: Problem, device: str, tolerances: dict[str, Tolerance] | None = None,
                dtype: str | None = None) -> list[Recipe]:
    """Every recipe for the problem on ``device`` (``cpu``/``cuda``), single and combined, best prior first."""
    root = Variant(id="root", source=problem.source, kind="reference", origin="reference")
    return _from_base(root, (), ProblemTraits.of(problem.source, dtype, tolerances), device, combine=True)


def _from_base(base: Variant, applied: tuple[str, ...], traits: ProblemTraits, device: str, combine: bool,
               host_bound: bool | None = None) -> list[Recipe]:
    usable = {n for n in INGREDIENTS if traits.allows(n, device)}
    recipes = [_recipe(base, applied, (name,), _prior((name,), INGREDIENTS[name].priors[device], traits, host_bound))
               for name in INGREDIENTS if name in usable and compatible_all(set(applied), (name,))]
    if combine:
        for names, priors in COMBINATIONS:
            if device in priors and set(names) <= usable and compatible_all(set(applied), names):
                recipes.append(_recipe(base, applied, names, _prior(names, priors[device], traits, host_bound)))
    return sorted(recipes, key=lambda r: -r.prior)


def recipe_expansions(tree: VariantTree, variant_id: str, device: str,
                      tolerances: dict[str, Tolerance] | None = None, dtype: str | None = None) -> list[Recipe]:
    """The recipes that can still be applied at ``variant_id``, best prior first.

    From the reference: everything ``recipes_for`` offers. From a variant made by recipes: one more ingredient
    on top of those already on its path. From any other variant (an LLM's): single recipes wrapping its
    ``ModelNew``. Recipes already applied on the path, or already tried as a child of the node, are left out.
    Once a verdict says whether the reference is host-bound, the CUDA-graph recipes' priors follow it.
    """
    path = tree.path_to(variant_id)
    applied: set[str] = set()
    base = path[-1]
    for variant in reversed(path):
        if not variant.recipes:
            base = variant
            break
        applied.update(variant.recipes)
    traits = ProblemTraits.of(tree.root.source, dtype, tolerances)
    tried = {child.origin for child in tree.children(variant_id)}
    if any(name not in INGREDIENTS for name in applied):
        return []  # made by a recipe this version does not know: nothing safe to compose with
    found = _from_base(base, tuple(sorted(applied)), traits, device, combine=base.kind == "reference"
                       and not applied, host_bound=reference_host_bound(tree))
    return [r for r in found if r.origin not in tried and compatible_all(applied, r.name.split("+"))]
