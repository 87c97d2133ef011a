import pytest
import torch
import torch.nn as nn

from kernelpro.model.extract import region_problem
from kernelpro.model.regions import Region
from kernelpro.model.source import execute
from kernelpro.model.splice import SpliceError, Winner, patched_source, prefixed
from kernelpro.model.splice_runtime import WeightMismatch, splice_all
from kernelpro.search.module_copy import copy_class
from tests.model.helpers import mlp, traced

# The head as a faster module would write it: other names, the same weights in the same order.
HEAD_BY_HAND = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

SCALE = 1.0


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.empty(10, 64))
        self.b = nn.Parameter(torch.empty(10))

    def forward(self, x):
        return F.linear(x, self.w, self.b) * SCALE
'''


def _as_winner(graph_module, region, infos) -> Winner:
    """The region's own extracted code as its ``ModelNew``: splicing it must change nothing."""
    source = region_problem(graph_module, region, infos, region.name).source
    return Winner(region=region, source=copy_class(source, "Model", "ModelNew").code)


def _same_model_outputs(reference_source: str, patched: str, init: list, inputs: list) -> bool:
    torch.manual_seed(3)
    original = execute(reference_source, "original").Model(*init)
    torch.manual_seed(3)
    spliced = execute(patched, "patched").ModelNew(*init)
    with torch.no_grad():
        return torch.equal(original(*inputs), spliced(*inputs))


def test_the_patched_model_gives_the_model_s_output_with_its_weights_in_the_winners():
    source = mlp()
    _, inputs, graph_module, regions, seen = traced(source)
    winners = [_as_winner(graph_module, regions[1], seen["infos"]),
               Winner(region=regions[-1], source=HEAD_BY_HAND)]
    patched = patched_source(source.name, source.reference_source, winners)
    assert "class Model(" not in patched and "Model(" not in patched.replace("OriginalModel(", "")
    init = execute(source.reference_source, "m").get_init_inputs()
    assert _same_model_outputs(source.reference_source, patched, init, [torch.randn(64, 32)])
    module = execute(patched, "patched")
    torch.manual_seed(3)
    spliced = module.ModelNew(*init).spliced
    assert {"spliced_0", "spliced_1"} <= {name for name, _ in spliced.named_children()}
    assert not [name for name, _ in spliced.named_modules() if name.startswith(("blocks.0.", "head"))]


class _Split(nn.Module):
    def __init__(self):
        super().__init__()
        self.left, self.right = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.left(x)), torch.sigmoid(self.right(x))


class _TwoOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.split = _Split()

    def forward(self, x):
        a, b = self.split(x)
        return a * b - a


def test_a_region_with_two_outputs_is_spliced_through_their_positions():
    from kernelpro.model.profile import observe
    from kernelpro.model.regions import partition, trace

    model = _TwoOutputs()
    graph_module = trace(model)
    infos, _ = observe(graph_module, [torch.randn(4, 8)])
    region = partition(graph_module, lambda name: infos[name].is_tensor)[0]
    assert len(region.outputs) == 2
    winner = _as_winner(graph_module, region, infos)
    module = execute(winner.source, "winner")
    spliced = splice_all(model, [(region.to_dict(), module.ModelNew())])
    x = torch.randn(4, 8)
    with torch.no_grad():
        assert torch.equal(spliced(x), model(x))


def test_a_winner_holding_other_weights_is_refused():
    source = mlp()
    model, _, graph_module, regions, _ = traced(source)
    wrong = execute(HEAD_BY_HAND.replace("torch.empty(10, 64)", "torch.empty(10, 32)"), "wrong").ModelNew()
    with pytest.raises(WeightMismatch, match="tensor 0"):
        splice_all(model, [(regions[-1].to_dict(), wrong)])


def test_each_winner_keeps_its_names_to_itself():
    code = prefixed(HEAD_BY_HAND, "region3_")
    assert "class region3_ModelNew" in code and "* region3_SCALE" in code and "region3_F" not in code
    with pytest.raises(SpliceError, match="no ModelNew"):
        prefixed("x = 1\n", "region0_")
    with pytest.raises(SpliceError, match="best candidate of head"):
        patched_source("m", mlp().reference_source, [Winner(Region("head", "head", ["head"]), "def (")])


def test_neighbouring_winners_are_spliced_together_the_second_reading_the_first_s_output():
    source = mlp()
    _, inputs, graph_module, regions, seen = traced(source)
    first, second = regions[1], regions[2]
    assert second.inputs == first.outputs
    patched = patched_source(source.name, source.reference_source,
                             [_as_winner(graph_module, first, seen["infos"]),
                              _as_winner(graph_module, second, seen["infos"])])
    init = execute(source.reference_source, "m").get_init_inputs()
    assert _same_model_outputs(source.reference_source, patched, init, inputs)
