"""A region as a KernelBench-format problem, at the shapes, dtypes and parameter shapes the model ran it with.

The region's nodes are copied into a graph of their own and torch.fx writes its ``forward``; ``Model.__init__``
builds each ``torch.nn`` layer the region calls from its ``repr`` (``nn.Linear(in_features=64, ...)``), a
parameter it reads directly at its shape, and a buffer it reads directly with its exact values (a mask or a table
is not noise). Weights are random, as a problem's are, unless ``real_weights``: then the region's own weights ride
in the file (the judge's worker reads no file but the problem). ``get_inputs`` draws each input at its shape and
dtype: floats from a normal distribution, integers within the range the model fed the region.
"""

from __future__ import annotations

import base64
import io
import re
from dataclasses import dataclass
from typing import Any

from kernelpro.model.profile import ValueInfo
from kernelpro.model.regions import Region

BUILTIN_GLOBALS = {"torch": "import torch", "inf": "from math import inf", "nan": "from math import nan",
                   "NoneType": "NoneType = type(None)", "device": "from torch import device",
                   "fx_pytree": "import torch.fx._pytree as fx_pytree",
                   "pytree": "import torch.utils._pytree as pytree"}


class ExtractError(ValueError):
    """The region cannot be written as a self-contained problem; the message says what it needs."""


@dataclass(frozen=True)
class Extracted:
    region: Region
    source: str


def flat(target: str) -> str:
    name = re.sub(r"\W", "_", target)
    return name if name and not name[0].isdigit() else f"m_{name}"


def layer_constructor(module: Any) -> str:
    """``nn.<repr>``, checked to build a layer of the same type and state shapes; ExtractError otherwise."""
    import torch
    import torch.nn as nn

    text = repr(module)
    kind = type(module)
    if not kind.__module__.startswith("torch.nn.modules") or "\n" in text:
        raise ExtractError(f"the layer {text.splitlines()[0]} cannot be rebuilt from its description")
    try:
        built = eval(f"nn.{text}", {"nn": nn, "torch": torch, "inf": float("inf")})  # noqa: S307 - repr of nn layers
    except Exception as error:  # noqa: BLE001
        raise ExtractError(f"the layer {text} cannot be rebuilt from its description ({error})") from None
    shapes = {k: (tuple(v.shape), v.dtype) for k, v in module.state_dict().items()}
    rebuilt = {k: (tuple(v.shape), v.dtype) for k, v in built.state_dict().items()}
    suffix = ""
    dtypes = {v.dtype for v in module.state_dict().values() if v.is_floating_point()}
    if len(dtypes) == 1 and (dtype := dtypes.pop()) != torch.float32:
        suffix = f".to({dtype})"
        rebuilt = {k: (s, dtype if d.is_floating_point else d) for k, (s, d) in rebuilt.items()}
    if type(built) is not kind or {k: s for k, (s, _) in rebuilt.items()} != {k: s for k, (s, _) in shapes.items()}:
        raise ExtractError(f"the layer {text} rebuilt from its description holds other tensors")
    return f"nn.{text}{suffix}"


def _encoded(value: Any) -> str:
    import torch

    buffer = io.BytesIO()
    torch.save(value, buffer)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _draw(info: ValueInfo, name: str) -> str:
    if not info.is_tensor:
        raise ExtractError(f"the region's input {name} is not a tensor")
    shape, dtype = f"({', '.join(map(str, info.shape))}{',' if len(info.shape) == 1 else ''})", f"torch.{info.dtype}"
    if info.dtype == "bool":
        return f"torch.randint(0, 2, {shape}).bool()"
    if info.dtype.startswith(("int", "uint")):
        return f"torch.randint({int(info.low)}, {int(info.high) + 1}, {shape}, dtype={dtype})"
    return f"torch.randn({shape}, dtype={dtype})"


def _imports(code: Any, title: str) -> list[str]:
    lines = ["import torch", "import torch.nn as nn"]
    for name, value in code.globals.items():
        if not re.search(rf"\b{re.escape(name)}\b", code.src) or name == "torch":
            continue
        if name in BUILTIN_GLOBALS:
            lines.append(BUILTIN_GLOBALS[name])
        elif type(value).__name__ == "module":
            lines.append(f"import {value.__name__} as {name}")
        elif getattr(value, "__module__", None) == "builtins":
            continue
        else:
            module, qualname = getattr(value, "__module__", None) or "", getattr(value, "__qualname__", "")
            if not module or module.startswith("kernelpro_model") or "<" in qualname or not qualname:
                raise ExtractError(f"{title} calls {name}, the model's own function, which torch.fx keeps whole "
                                   "(wrapped): the problem cannot import it")
            head, _, rest = qualname.partition(".")
            lines.append(f"from {module} import {head} as {name}" if not rest else
                         f"from {module} import {head} as _{name}_owner\n{name} = _{name}_owner.{rest}")
    return list(dict.fromkeys(lines))


def region_problem(graph_module: Any, region: Region, infos: dict[str, ValueInfo], title: str,
                   real_weights: bool = False) -> Extracted:
    """The region as one problem file's source; ExtractError when it cannot stand alone."""
    import torch
    import torch.fx

    from kernelpro.model.splice_runtime import region_tensors

    if not region.inputs:
        raise ExtractError("the region reads no input: it computes the same values on every call")
    nodes = {node.name: node for node in graph_module.graph.nodes}
    graph, env = torch.fx.Graph(), {}
    for name in region.inputs:
        env[nodes[name]] = graph.placeholder(name)
    params, buffers, layers = [], [], []
    for name in region.nodes:
        node = nodes[name]
        for used in node.all_input_nodes:
            if used.op == "get_attr" and used not in env:
                value = graph_module
                for part in used.target.split("."):
                    value = getattr(value, part)
                if not isinstance(value, torch.Tensor):
                    raise ExtractError(f"{title} reads {used.target}, which is not a tensor")
                (params if isinstance(value, torch.nn.Parameter) else buffers).append((flat(used.target), value))
                env[used] = graph.get_attr(flat(used.target))
        copied = graph.node_copy(node, lambda n: env[n])
        if node.op == "call_module":
            copied.target = flat(node.target)
            if copied.target not in [n for n, _ in layers]:
                layers.append((copied.target, graph_module.get_submodule(node.target)))
        env[node] = copied
    outputs = [env[nodes[name]] for name in region.outputs]
    graph.output(outputs[0] if len(outputs) == 1 else tuple(outputs))
    code = graph.python_code(root_module="self")
    init = [f"self.{name} = nn.Parameter(torch.randn({tuple(value.shape)}, dtype={value.dtype}))"
            for name, value in params]
    init += [f'self.register_buffer("{name}", _tensor("{_encoded(value.detach().cpu())}"))' for name, value in buffers]
    init += [f"self.{name} = {layer_constructor(module)}" for name, module in layers]
    if any(not module.training for _, module in layers):
        init.append("self.eval()  # as the model ran it: normalisation from its running statistics")
    if real_weights:
        state = [t.detach().cpu() for t in region_tensors(graph_module, region.to_dict())]
        init.append(f'_load_in_order(self, _tensor("{_encoded(state)}"))')
    forward = "\n".join("    " + line if line.strip() else "" for line in code.src.strip().splitlines())
    draws = ",\n        ".join(_draw(infos[name], name) for name in region.inputs)
    helpers = []
    if buffers or real_weights:
        helpers.append('''def _tensor(text):
    """Tensors stored in this file (base64 of torch.save)."""
    import base64
    import io

    return torch.load(io.BytesIO(base64.b64decode(text)), weights_only=True)
''')
    if real_weights:
        helpers.append('''def _load_in_order(module, tensors):
    """The model's own weights, in state_dict order."""
    with torch.no_grad():
        for target, value in zip(module.state_dict(keep_vars=True).values(), tensors):
            target.copy_(value)
''')
    body = "\n        ".join(["super().__init__()", *init])
    source = "\n".join([
        f'"""{title}"""', "", *_imports(code, title), "", "", *[h + "\n" for h in helpers],
        "class Model(nn.Module):", f'    """The region {region.name} of the model, as it computes it."""', "",
        "    def __init__(self):", f"        {body}", "", forward, "", "",
        "def get_inputs():", f"    return [\n        {draws},\n    ]", "", "",
        "def get_init_inputs():", "    return []", ""])
    return Extracted(region=region, source=source)
