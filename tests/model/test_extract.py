import ast

import pytest
import torch
import torch.nn as nn

from kernelpro.model.extract import ExtractError, layer_constructor, region_problem
from kernelpro.model.profile import observe
from kernelpro.model.regions import partition, trace
from kernelpro.model.roundtrip import round_trip_error
from kernelpro.model.source import execute
from kernelpro.problem import parse_problem
from tests.model.helpers import cnn, mlp, traced


@pytest.mark.parametrize("source", [mlp, cnn], ids=["residual_mlp", "small_cnn"])
def test_every_extracted_problem_gives_its_region_s_output_inside_the_model(source):
    _, _, graph_module, regions, seen = traced(source())
    for region in regions:
        extracted = region_problem(graph_module, region, seen["infos"], f"region {region.name}")
        parse_problem(extracted.source, region.name)  # a KernelBench-format problem
        assert round_trip_error(graph_module, region, extracted.source, seen["values"]) is None, region.name
        drawn = execute(extracted.source, "p").get_inputs()
        assert [(tuple(t.shape), t.dtype) for t in drawn] == \
            [(seen["infos"][n].shape, getattr(torch, seen["infos"][n].dtype)) for n in region.inputs]


def test_a_problem_that_computes_something_else_fails_the_round_trip():
    _, _, graph_module, regions, seen = traced(mlp())
    block = regions[1]
    source = region_problem(graph_module, block, seen["infos"], "block").source
    assert "torch.relu(" in source
    wrong = source.replace("torch.relu(", "torch.tanh(")
    assert "differs" in round_trip_error(graph_module, block, wrong, seen["values"])


def test_a_region_in_eval_mode_stays_in_eval_mode_and_its_buffers_keep_their_values():
    _, _, graph_module, regions, seen = traced(cnn())
    source = region_problem(graph_module, regions[0], seen["infos"], "stage").source
    model = execute(source, "p").Model()
    assert not model.training  # BatchNorm normalises by its running statistics, as in the model


class _Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(50, 8)
        self.register_buffer("mask", torch.tril(torch.ones(6, 6)))

    def forward(self, ids):
        return self.table(ids).transpose(1, 2) @ self.mask


def test_integer_inputs_are_drawn_in_the_range_the_model_fed_and_buffers_are_exact():
    model = _Embedder()
    graph_module = trace(model)
    ids = torch.randint(3, 40, (2, 6))
    infos, values = observe(graph_module, [ids], {n.name for n in graph_module.graph.nodes})
    lookup, product = partition(graph_module, lambda name: infos[name].is_tensor)
    drawn = execute(region_problem(graph_module, lookup, infos, "lookup").source, "p").get_inputs()[0]
    assert drawn.dtype == torch.int64 and int(drawn.min()) >= int(ids.min()) and int(drawn.max()) <= int(ids.max())
    source = region_problem(graph_module, product, infos, "product").source
    assert 'register_buffer("mask"' in source
    assert round_trip_error(graph_module, product, source, values) is None


def test_real_weights_ride_in_the_problem():
    _, _, graph_module, regions, seen = traced(mlp())
    head = regions[-1]
    source = region_problem(graph_module, head, seen["infos"], "head", real_weights=True).source
    model = execute(source, "p").Model()
    assert torch.equal(model.head.weight, graph_module.head.weight)


def test_a_layer_that_its_description_cannot_rebuild_is_refused():
    assert layer_constructor(nn.Conv2d(3, 8, 3, stride=2)).startswith("nn.Conv2d(3, 8")
    with pytest.raises(ExtractError, match="cannot be rebuilt"):
        layer_constructor(nn.MultiheadAttention(8, 2))


def test_the_problem_names_no_file_and_imports_nothing_of_the_model():
    _, _, graph_module, regions, seen = traced(mlp())
    tree = ast.parse(region_problem(graph_module, regions[1], seen["infos"], "block").source)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names}
    assert imported <= {"torch", "torch.nn"}
