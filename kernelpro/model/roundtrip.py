"""An extracted problem checked against its place in the model: its ``Model``, given the region's weights, on
the inputs the region received in the model's forward, gives what the region gave there."""

from __future__ import annotations

from typing import Any

from kernelpro.model.regions import Region


def round_trip_error(graph_module: Any, region: Region, problem_source: str, values: dict[str, Any],
                     device: str = "cpu") -> str | None:
    """None when the problem reproduces the region's outputs exactly (``values``: the model's node values);
    otherwise what differs."""
    import torch

    from kernelpro.model.source import execute
    from kernelpro.model.splice_runtime import WeightMismatch, load_weights, region_tensors

    module = execute(problem_source, "kernelpro_region_problem")
    model = module.Model(*module.get_init_inputs())
    try:
        load_weights(model, region_tensors(graph_module, region.to_dict()))
    except WeightMismatch as error:
        return f"its Model holds other weights than the region: {error}"
    model = model.to(device)
    with torch.no_grad():
        given = model(*[values[name] for name in region.inputs])
    given = list(given) if isinstance(given, tuple) else [given]
    expected = [values[name] for name in region.outputs]
    if len(given) != len(expected):
        return f"it returns {len(given)} values, the region {len(expected)}"
    for name, mine, theirs in zip(region.outputs, given, expected, strict=True):
        if not isinstance(mine, torch.Tensor) or mine.shape != theirs.shape or not torch.equal(mine, theirs):
            return f"its output for {name} differs from the region's in the model"
    return None
