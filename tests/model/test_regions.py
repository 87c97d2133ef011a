import math

import torch
import torch.nn as nn

from kernelpro.model.profile import attribute, node_times, observe
from kernelpro.model.regions import partition, trace
from tests.model.helpers import cnn, mlp, traced


def test_the_residual_mlp_is_cut_at_its_children_with_the_root_s_own_operations_apart():
    _, _, _, regions, _ = traced(mlp())
    assert [r.name for r in regions] == ["embed", "blocks.0", "blocks.1", "root.tanh", "head"]
    block = regions[1]
    assert block.inputs == ["embed"] and block.outputs == ["add"]
    assert regions[2].inputs == ["add"]  # a block's output feeds the next


def test_a_factory_s_model_is_cut_one_level_below_its_wrapper():
    _, _, _, regions, _ = traced(cnn())
    assert [r.name for r in regions] == ["model.0", "model.1", "model.2"]
    _, _, _, deeper, _ = traced(cnn(), depth=2)
    assert [r.name for r in deeper][:3] == ["model.0.0", "model.0.1", "model.0.2"]


class _SizeThenView(nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        batch = self.first(x).size(0)  # a number made in one region ...
        return self.second(x).reshape(batch, -1)  # ... read in the root's next operations


def test_a_number_crossing_a_region_edge_joins_the_regions_it_joins():
    graph_module = trace(_SizeThenView())
    infos, _ = observe(graph_module, [torch.randn(4, 8)])
    regions = partition(graph_module, lambda name: infos[name].is_tensor)
    for region in regions:
        assert all(infos[name].is_tensor for name in region.inputs)
    assert any("size" in region.nodes for region in regions)


def test_the_region_table_shares_sum_to_one_with_amdahl_ceilings():
    _, inputs, graph_module, regions, _ = traced(mlp())
    times = node_times(graph_module, inputs, "cpu", repeats=2)
    assert set(times) == {n for r in regions for n in r.nodes}  # every computing node timed, nothing else
    profile = attribute(graph_module, regions, times)
    assert math.isclose(sum(row.share for row in profile.regions), 1.0)
    for row in profile.regions:
        assert row.time_us > 0 and math.isclose(row.ceiling, 1 / (1 - row.share))
    assert math.isclose(profile.modules["blocks.0"], sum(times[n] for n in regions[1].nodes))
    assert profile.top(2) == sorted(profile.regions, key=lambda r: r.share, reverse=True)[:2]


def test_attribution_sums_the_times_it_is_given():
    _, _, graph_module, regions, _ = traced(mlp())
    times = {name: 0.0 for r in regions for name in r.nodes}
    times.update({regions[1].nodes[0]: 30.0, regions[4].nodes[0]: 10.0})
    profile = attribute(graph_module, regions, times)
    assert [round(row.share, 3) for row in profile.regions] == [0.0, 0.75, 0.0, 0.0, 0.25]
    assert profile.regions[1].ceiling == 4.0 and profile.total_us == 40.0
