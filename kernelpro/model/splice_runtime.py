"""Splicing faster modules into a traced model: plain torch, no kernelpro import.

``kernelpro model`` pastes this module's source into every ``patched_model.py`` it writes, so the patched model
imports nothing but torch and what its regions' code imports; kernelpro itself splices with the same functions.
A region is given by the node names of the model's ``torch.fx`` trace, which are the same each time the same
model code is traced. A ``transformers`` model cannot be traced by ``torch.fx.symbolic_trace`` (its forward branches
on its inputs), so it is traced by ``torch.export`` at one forward call's inputs, into ATen operations: the graph
holds the shapes of those inputs (never their values), so the same shapes give the same graph.
"""

import operator

import torch
import torch.fx


def traced_by_export(model):
    """Whether ``model`` is, or holds, a ``transformers`` model (told by its classes' names: no import)."""
    return any(kind.__name__ == "PreTrainedModel" and kind.__module__.startswith("transformers.")
               for module in model.modules() for kind in type(module).__mro__)


def trace(model, example_inputs=None):
    """The model as a ``torch.fx.GraphModule``: exported at ``example_inputs`` where ``traced_by_export``, else
    ``torch.fx.symbolic_trace``."""
    if not traced_by_export(model):
        return torch.fx.symbolic_trace(model)
    if example_inputs is None:
        raise ValueError("a transformers model is traced at one forward call's inputs: give example_inputs")
    from torch.export import export

    program = export(model, tuple(example_inputs), strict=False)
    try:
        return program.module(check_guards=False)  # the inputs' shapes are the judge's; no guard node in the graph
    except TypeError:  # a torch whose unlifted module has no guards to leave out
        return program.module()


def region_tensors(graph_module, region):
    """The region's weights in the order its extracted problem's ``Model`` holds them: the parameters it reads
    directly, then the buffers it reads directly, then each ``torch.nn`` layer's state."""
    nodes = {node.name: node for node in graph_module.graph.nodes}
    attrs, layers = [], []
    for name in region["nodes"]:
        node = nodes[name]
        for used in node.all_input_nodes:
            if used.op == "get_attr" and used.target not in attrs:
                attrs.append(used.target)
        if node.op == "call_module" and node.target not in layers:
            layers.append(node.target)
    values = [_attribute(graph_module, target) for target in attrs]
    params = [value for value in values if isinstance(value, torch.nn.Parameter)]
    buffers = [value for value in values if not isinstance(value, torch.nn.Parameter)]
    state = [t for target in layers for t in graph_module.get_submodule(target).state_dict(keep_vars=True).values()]
    return params + buffers + state


def _attribute(module, target):
    for part in target.split("."):
        module = getattr(module, part)
    return module


def distinct_state(module):
    """A module's state tensors in ``state_dict`` order, each held once (a wrapper that registers the same
    module twice, such as a compiled copy beside the original, lists its tensors twice)."""
    tensors = []
    for tensor in module.state_dict(keep_vars=True).values():
        if not any(tensor is held for held in tensors):
            tensors.append(tensor)
    return tensors


class WeightMismatch(ValueError):
    """The faster module does not hold the region's weights in the same order, shapes and dtypes."""


def load_weights(module, tensors):
    """Copy ``tensors`` into ``module``'s state, position by position."""
    targets = distinct_state(module)
    if len(targets) != len(tensors):
        raise WeightMismatch(f"{type(module).__name__} holds {len(targets)} tensors, the region {len(tensors)}")
    for index, (target, value) in enumerate(zip(targets, tensors, strict=True)):
        if target.shape != value.shape or target.dtype != value.dtype:
            raise WeightMismatch(f"tensor {index}: {tuple(target.shape)} {target.dtype} in "
                                 f"{type(module).__name__}, {tuple(value.shape)} {value.dtype} in the region")
    with torch.no_grad():
        for target, value in zip(targets, tensors, strict=True):
            target.copy_(value)
    return module


def splice(graph_module, region, module, name, spliced_outputs=None):
    """Replace the region's nodes by one call of ``module`` (added as submodule ``name``), which takes the
    region's inputs in order and returns its output, or a tuple of its outputs. ``spliced_outputs``: the nodes
    that stand for the outputs of regions spliced before, by their old names (a region reads its neighbour's),
    this region's added."""
    graph = graph_module.graph
    nodes = {node.name: node for node in graph.nodes}
    nodes.update(spliced_outputs or {})
    inside = set(region["nodes"])
    graph_module.add_submodule(name, module)
    with graph.inserting_before(nodes[region["nodes"][0]]):
        call = graph.call_module(name, tuple(nodes[n] for n in region["inputs"]))
    results = [call]
    if len(region["outputs"]) > 1:
        results = []
        with graph.inserting_after(call):
            for index in reversed(range(len(region["outputs"]))):
                results.insert(0, graph.call_function(operator.getitem, (call, index)))
    for output, result in zip(region["outputs"], results, strict=True):
        nodes[output].replace_all_uses_with(result, delete_user_cb=lambda user: user.name not in inside)
        if spliced_outputs is not None:
            spliced_outputs[output] = result
    for node_name in reversed(region["nodes"]):
        graph.erase_node(nodes[node_name])
    graph.lint()
    graph_module.recompile()
    return graph_module


def splice_all(model, winners, example_inputs=None):
    """The model traced (``trace``), with each ``(region, module)`` of ``winners`` given the region's weights and
    spliced in."""
    graph_module = trace(model, example_inputs)
    spliced_outputs = {}
    for index, (region, module) in enumerate(winners):
        load_weights(module, region_tensors(graph_module, region))
        splice(graph_module, region, module, f"spliced_{index}", spliced_outputs)
    graph_module.delete_all_unused_submodules()
    return graph_module
