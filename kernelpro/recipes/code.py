"""The code of a recipe candidate: a copy of the wrapped module's code plus a generated ``ModelNew``.

``ModelNew`` builds the wrapped class with the same arguments (so parameters are created in the same order,
under the same seed) and applies the recipe's ingredients around its forward. Process-wide settings (TF32,
``cudnn.benchmark``, the intra-op thread count) are set for the duration of the call and restored afterwards,
so the reference, judged in the same process, never runs under them. Every call works on the inputs it is given:
a captured graph copies them into its static buffers and its output is cloned out, a frozen trace is made again
when the shapes change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kernelpro.recipes.snippets import BOUND_ARGUMENTS, CLONE_OUTPUTS, CUDA_GRAPH, FROZEN
from kernelpro.search.module_copy import ClassCopy

COMPILE_MODES = {
    "compile_default": "default",
    "compile_reduce_overhead": "reduce-overhead",
    "compile_max_autotune_no_cudagraphs": "max-autotune-no-cudagraphs",
    "compile_max_autotune": "max-autotune",
}
# Modes whose outputs live in CUDA graph memory that the next call overwrites.
CUDAGRAPH_COMPILE_MODES = {"compile_reduce_overhead", "compile_max_autotune"}
KNOWN_INGREDIENTS = {*COMPILE_MODES, "cuda_graph", "tf32", "cudnn_benchmark", "channels_last", "fullgraph",
                     "inference_mode", "single_thread", "freeze"}
# Settings scoped to one call: (ingredient, lines that save and set, the line that restores).
SCOPED_SETTINGS = [
    ("tf32", ["matmul_precision = torch.get_float32_matmul_precision()",
              'torch.set_float32_matmul_precision("high")'], "torch.set_float32_matmul_precision(matmul_precision)"),
    ("cudnn_benchmark", ["benchmark = torch.backends.cudnn.benchmark", "torch.backends.cudnn.benchmark = True"],
     "torch.backends.cudnn.benchmark = benchmark"),
    ("single_thread", ["threads = torch.get_num_threads()", "torch.set_num_threads(1)"],
     "torch.set_num_threads(threads)"),
]


def _docstring(text: str) -> str:
    text = " ".join(text.split()).replace("\\", "\\\\").replace('"""', "'''")
    return f'"""{text}"""'


def _check(chosen: set[str]) -> str | None:
    """The one compile mode among ``chosen`` (None when there is none); refuses what cannot be rendered."""
    unknown = chosen - KNOWN_INGREDIENTS
    if unknown:
        raise ValueError(f"unknown recipe ingredients: {', '.join(sorted(unknown))}")
    modes = [name for name in COMPILE_MODES if name in chosen]
    if len(modes) > 1:
        raise ValueError(f"one torch.compile mode at a time, got {', '.join(modes)}")
    if "fullgraph" in chosen and not modes:
        raise ValueError("fullgraph needs a torch.compile mode")
    if "freeze" in chosen and (modes or "cuda_graph" in chosen):
        raise ValueError("freeze traces the eager module: no torch.compile or CUDA graph with it")
    return modes[0] if modes else None


def _init(base: ClassCopy, chosen: set[str], compiled: str | None) -> list[str]:
    init = [f"self.inner = {base.class_name}({base.init_arguments})"]
    if "channels_last" in chosen:
        init.append("self.inner = self.inner.to(memory_format=torch.channels_last)")
    if compiled:
        fullgraph = ", fullgraph=True" if "fullgraph" in chosen else ""
        init.append(f'self.compiled = torch.compile(self.inner, mode="{COMPILE_MODES[compiled]}"{fullgraph})')
    if "cuda_graph" in chosen:
        init += ["self.graph = None", "self.graph_key = None", "self.static_inputs = []", "self.static_output = None"]
    if "freeze" in chosen:
        init += ["self.frozen = None", "self.frozen_key = None"]
    return init


def _compute(chosen: set[str], compiled: str | None, target: str) -> list[str]:
    compute: list[str] = []
    if "channels_last" in chosen:
        compute.append("inputs = [x.contiguous(memory_format=torch.channels_last) "
                       "if isinstance(x, torch.Tensor) and x.dim() == 4 else x for x in inputs]")
    if "cuda_graph" in chosen:
        compute.append("return self.replay(inputs)")
    elif "freeze" in chosen:
        compute.append("return self.frozen_call(inputs)")
    elif compiled in CUDAGRAPH_COMPILE_MODES:
        compute += ["torch.compiler.cudagraph_mark_step_begin()", f"return self.clone_outputs({target}(*inputs))"]
    else:
        compute.append(f"return {target}(*inputs)")
    return compute


def _forward(chosen: set[str]) -> list[str]:
    """``forward``'s body: scoped settings around the computation, or the computation itself."""
    enter = [line for name, lines, _ in SCOPED_SETTINGS if name in chosen for line in lines]
    leave = [line for name, _, line in SCOPED_SETTINGS if name in chosen]
    call = ["with torch.inference_mode():", "    return self.compute(inputs)"] if "inference_mode" in chosen \
        else ["return self.compute(inputs)"]
    if not leave:
        return call
    return [*enter, "try:", *("    " + line for line in call), "finally:", *("    " + line for line in leave)]


def _indent(lines: list[str], depth: int) -> list[str]:
    return [" " * (4 * depth) + line for line in lines]


def render_candidate(base: ClassCopy, ingredients: Iterable[str], idea: str) -> str:
    """The candidate's source: ``base``'s code, then a ``ModelNew`` wrapping ``base.class_name``."""
    chosen = set(ingredients)
    compiled = _check(chosen)
    target = "self.compiled" if compiled else "self.inner"
    params = f", {base.init_parameters}" if base.init_parameters else ""
    parts = [
        base.code.rstrip(), "", "",
        f"# Generated by the built-in recipe {'+'.join(sorted(chosen))}.",
        *([] if re.search(r"^import torch\s*$", base.code, re.MULTILINE) else ["import torch  # noqa: E402"]),
    ]
    if "freeze" in chosen:
        parts += ["", "", BOUND_ARGUMENTS.strip("\n")]
    parts += [
        "", "",
        "class ModelNew(torch.nn.Module):",
        f"    {_docstring(idea)}", "",
        f"    def __init__(self{params}):",
        "        super().__init__()", *_indent(_init(base, chosen, compiled), 2), "",
        "    def forward(self, *inputs):", *_indent(_forward(chosen), 2),
    ]
    parts += ["", "    def compute(self, inputs):", *_indent(_compute(chosen, compiled, target), 2)]
    if "cuda_graph" in chosen:
        parts.append(CUDA_GRAPH.format(target=target).rstrip())
    if "freeze" in chosen:
        parts.append(FROZEN.rstrip())
    if "cuda_graph" in chosen or compiled in CUDAGRAPH_COMPILE_MODES:
        parts.append(CLONE_OUTPUTS.rstrip())
    return "\n".join(parts) + "\n"
