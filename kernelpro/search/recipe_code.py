"""The code of a recipe candidate: a copy of the wrapped module's code plus a generated ``ModelNew``.

``ModelNew`` builds the wrapped class with the same arguments (so parameters are created in the same order,
under the same seed) and applies the recipe's ingredients around its forward. Backend settings (TF32,
``cudnn.benchmark``) are set for the duration of the call and restored afterwards, so the reference, judged in
the same process, never runs under them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kernelpro.search.module_copy import ClassCopy

COMPILE_MODES = {
    "compile_default": "default",
    "compile_reduce_overhead": "reduce-overhead",
    "compile_max_autotune_no_cudagraphs": "max-autotune-no-cudagraphs",
    "compile_max_autotune": "max-autotune",
}
# Modes whose outputs live in CUDA graph memory that the next call overwrites.
CUDAGRAPH_COMPILE_MODES = {"compile_reduce_overhead", "compile_max_autotune"}
KNOWN_INGREDIENTS = {*COMPILE_MODES, "cuda_graph", "tf32", "cudnn_benchmark", "channels_last"}

CLONE_OUTPUTS = '''
    @staticmethod
    def clone_outputs(out):
        # A fresh copy per call: graph output buffers are overwritten by the next replay.
        if isinstance(out, torch.Tensor):
            return out.clone()
        if isinstance(out, (tuple, list)):
            return type(out)(ModelNew.clone_outputs(o) for o in out)
        return out
'''

CUDA_GRAPH = '''
    def replay(self, inputs):
        key = [(tuple(x.shape), x.dtype, x.device) if isinstance(x, torch.Tensor) else x for x in inputs]
        if key != self.graph_key:
            self.capture(inputs)
            self.graph_key = key
        for static, x in zip(self.static_inputs, inputs):
            if isinstance(static, torch.Tensor):
                static.copy_(x)
        self.graph.replay()
        return self.clone_outputs(self.static_output)

    def capture(self, inputs):
        # The graph reads these buffers; every call copies its inputs into them first.
        self.static_inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        # Warm up outside the capture: lazy initialisation (library handles, autotuning, compilation)
        # cannot be captured.
        for _ in range(3):
            {target}(*self.static_inputs)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_output = {target}(*self.static_inputs)
'''


def _docstring(text: str) -> str:
    text = " ".join(text.split()).replace("\\", "\\\\").replace('"""', "'''")
    return f'"""{text}"""'


def render_candidate(base: ClassCopy, ingredients: Iterable[str], idea: str) -> str:
    """The candidate's source: ``base``'s code, then a ``ModelNew`` wrapping ``base.class_name``."""
    chosen = set(ingredients)
    unknown = chosen - KNOWN_INGREDIENTS
    if unknown:
        raise ValueError(f"unknown recipe ingredients: {', '.join(sorted(unknown))}")
    modes = [name for name in COMPILE_MODES if name in chosen]
    if len(modes) > 1:
        raise ValueError(f"one torch.compile mode at a time, got {', '.join(modes)}")
    compiled = modes[0] if modes else None
    target = "self.compiled" if compiled else "self.inner"
    params = f", {base.init_parameters}" if base.init_parameters else ""

    init = [f"        self.inner = {base.class_name}({base.init_arguments})"]
    if "channels_last" in chosen:
        init.append("        self.inner = self.inner.to(memory_format=torch.channels_last)")
    if compiled:
        init.append(f'        self.compiled = torch.compile(self.inner, mode="{COMPILE_MODES[compiled]}")')
    if "cuda_graph" in chosen:
        init += ["        self.graph = None", "        self.graph_key = None", "        self.static_inputs = []",
                 "        self.static_output = None"]

    enter: list[str] = []
    leave: list[str] = []
    if "tf32" in chosen:
        enter += ["        matmul_precision = torch.get_float32_matmul_precision()",
                  '        torch.set_float32_matmul_precision("high")']
        leave.append("            torch.set_float32_matmul_precision(matmul_precision)")
    if "cudnn_benchmark" in chosen:
        enter += ["        benchmark = torch.backends.cudnn.benchmark", "        torch.backends.cudnn.benchmark = True"]
        leave.append("            torch.backends.cudnn.benchmark = benchmark")
    scoped = ["        try:", "            return self.compute(inputs)", "        finally:", *leave]

    compute: list[str] = []
    if "channels_last" in chosen:
        compute.append("        inputs = [x.contiguous(memory_format=torch.channels_last) "
                       "if isinstance(x, torch.Tensor) and x.dim() == 4 else x for x in inputs]")
    if "cuda_graph" in chosen:
        compute.append("        return self.replay(inputs)")
    elif compiled in CUDAGRAPH_COMPILE_MODES:
        compute += ["        torch.compiler.cudagraph_mark_step_begin()",
                    f"        return self.clone_outputs({target}(*inputs))"]
    else:
        compute.append(f"        return {target}(*inputs)")

    parts = [
        base.code.rstrip(), "", "",
        f"# Generated by the built-in recipe {'+'.join(sorted(chosen))}.",
        *([] if re.search(r"^import torch\s*$", base.code, re.MULTILINE) else ["import torch  # noqa: E402"]),
        "", "",
        "class ModelNew(torch.nn.Module):",
        f"    {_docstring(idea)}", "",
        f"    def __init__(self{params}):",
        "        super().__init__()", *init, "",
    ]
    if leave:  # settings scoped to the call wrap the computation
        parts += ["    def forward(self, *inputs):", *enter, *scoped, "", "    def compute(self, inputs):", *compute]
    else:
        parts += ["    def forward(self, *inputs):", *compute]
    if "cuda_graph" in chosen:
        parts.append(CUDA_GRAPH.format(target=target).rstrip())
    if "cuda_graph" in chosen or compiled in CUDAGRAPH_COMPILE_MODES:
        parts.append(CLONE_OUTPUTS.rstrip())
    return "\n".join(parts) + "\n"
