"""A model's regions: its torch.fx graph cut into runs of neighbouring operations, one per sub-module.

``torch.fx.symbolic_trace`` flattens the model into operations (``torch.nn`` layers stay whole, as leaves) and
records the module each one ran in. A region is a maximal run of consecutive operations owned by the same module
at ``depth`` (``blocks.0`` at depth 1; the operations the root's own ``forward`` does between sub-modules form
regions of their own). Every value that crosses a region's edge must be a tensor, since a region becomes a
problem whose inputs ``get_inputs`` draws: a region fed a number (a shape read elsewhere) joins the one before it.
Tracing is deterministic, so the same model code traced again (in the judge's worker) has the same node names.
A ``transformers`` model is exported instead (``torch.export`` at one forward call's inputs, ATen operations, no
``torch.nn`` leaf): ``splice_runtime.trace`` decides which, for kernelpro and the patched model alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

COMPUTE_OPS = ("call_module", "call_function", "call_method")


class TraceError(ValueError):
    """The model cannot be traced into a torch.fx graph; the message says why."""


@dataclass
class Region:
    """Consecutive graph nodes of one module: the nodes it runs, the values it reads and the values it gives."""

    name: str
    owner: str
    nodes: list[str]
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "owner": self.owner, "nodes": self.nodes, "inputs": self.inputs,
                "outputs": self.outputs}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Region:
        return cls(name=data["name"], owner=data["owner"], nodes=list(data["nodes"]), inputs=list(data["inputs"]),
                   outputs=list(data["outputs"]))


def trace(model: Any, example_inputs: list[Any] | None = None) -> Any:
    """The model as a ``torch.fx.GraphModule`` (``example_inputs``: one forward call's, which an exported model is
    traced at); a model that cannot be traced is a ``TraceError`` naming the cause."""
    from kernelpro.model.splice_runtime import trace as traced
    from kernelpro.model.splice_runtime import traced_by_export

    try:
        return traced(model, example_inputs)
    except Exception as error:  # noqa: BLE001 - any tracing failure is the model's shape, told as such
        cause = f"{type(error).__name__}: {str(error).strip()[:300]}"
        if traced_by_export(model):
            raise TraceError(f"torch.export cannot trace this transformers model ({_model_types(model)}): "
                             f"{cause}") from None
        raise TraceError(f"torch.fx cannot trace this model ({cause}); control flow on tensor values, or calls fx "
                         "cannot follow, stop it") from None


def _model_types(model: Any) -> str:
    """The ``model_type`` of each ``transformers`` model inside ``model`` (its class name where none)."""
    found = [getattr(getattr(module, "config", None), "model_type", None) or type(module).__name__
             for module in model.modules() if hasattr(module, "config") and hasattr(module, "base_model_prefix")]
    return ", ".join(dict.fromkeys(found)) or type(model).__name__


def module_paths(node: Any) -> list[str]:
    """The paths of the modules that ran ``node``, outermost first, the root's own "" left out. fx records them as
    the keys of ``nn_module_stack``; torch.export as the first item of its values."""
    stack = node.meta.get("nn_module_stack") or {}
    paths = [value[0] if isinstance(value, tuple) else key for key, value in stack.items()]
    return [path for path in paths if path]


def owner_of(node: Any, depth: int) -> str:
    """The path of the module ``depth`` calls deep that ran ``node`` (the deepest, if fewer; "" for the root's
    own operations): ``blocks.0``, then ``blocks.0.fc``."""
    stack = module_paths(node)
    return stack[min(depth, len(stack)) - 1] if stack else ""


def partition(graph_module: Any, is_tensor: Callable[[str], bool], depth: int = 1) -> list[Region]:
    """The graph's regions in execution order (``is_tensor``: whether a node's value, as the model ran, is a
    tensor)."""
    runs: list[tuple[str, list[Any]]] = []
    for node in graph_module.graph.nodes:
        if node.op not in COMPUTE_OPS:
            continue
        owner = owner_of(node, depth)
        if runs and runs[-1][0] == owner:
            runs[-1][1].append(node)
        else:
            runs.append((owner, [node]))
    runs = _merge_scalar_edges(runs, is_tensor)
    names: dict[str, int] = {}
    regions = []
    for owner, nodes in runs:
        base = owner or f"root.{nodes[0].name}"
        names[base] = names.get(base, 0) + 1
        name = base if names[base] == 1 else f"{base}#{names[base]}"
        regions.append(_region(name, owner, nodes))
    return regions


def _region(name: str, owner: str, nodes: list[Any]) -> Region:
    inside = set(nodes)
    inputs: list[str] = []
    for node in nodes:
        for used in node.all_input_nodes:
            if used not in inside and used.op != "get_attr" and used.name not in inputs:
                inputs.append(used.name)
    outputs = [node.name for node in nodes if any(user not in inside for user in node.users)]
    return Region(name=name, owner=owner, nodes=[n.name for n in nodes], inputs=inputs, outputs=outputs)


def _merge_scalar_edges(runs: list[tuple[str, list[Any]]], is_tensor: Callable[[str], bool]
                        ) -> list[tuple[str, list[Any]]]:
    """Runs joined, from the one that makes a value that is not a tensor to the one that reads it."""
    runs = [(owner, list(nodes)) for owner, nodes in runs]
    changed = True
    while changed:
        changed = False
        where = {node: index for index, (_, nodes) in enumerate(runs) for node in nodes}
        for index, (_, nodes) in enumerate(runs):
            producers = [where[used] for node in nodes for used in node.all_input_nodes
                         if used in where and where[used] < index and not is_tensor(used.name)]
            if producers:
                first = min(producers)
                joined = [node for _, part in runs[first:index + 1] for node in part]
                runs[first:index + 1] = [(runs[first][0], joined)]
                changed = True
                break
    return runs
