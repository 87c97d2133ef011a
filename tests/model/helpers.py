"""The test models traced and observed as a model run sees them."""

from __future__ import annotations

from typing import Any

import torch

from kernelpro.model.profile import observe
from kernelpro.model.regions import partition, trace
from kernelpro.model.source import ModelSource, read_source
from tests.conftest import DATA

MLP = str(DATA / "models" / "residual_mlp.py")
CNN = (f"{DATA / 'models' / 'small_cnn.py'}:build", f"{DATA / 'models' / 'small_cnn.py'}:example_inputs")


def mlp() -> ModelSource:
    return read_source(MLP)


def cnn() -> ModelSource:
    return read_source(*CNN)


def traced(source: ModelSource, depth: int = 1) -> tuple[Any, list, Any, dict, dict]:
    """The model (built under seed 0), its inputs, its graph, its regions' node infos and every node's value."""
    torch.manual_seed(0)
    model, inputs = source.build()
    graph_module = trace(model, inputs)
    infos, _ = observe(graph_module, inputs)
    regions = partition(graph_module, lambda name: infos[name].is_tensor, depth + (1 if source.wrapped else 0))
    _, values = observe(graph_module, inputs, set(infos))
    return model, inputs, graph_module, regions, {"infos": infos, "values": values}
