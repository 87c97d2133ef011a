"""Hugging Face transformers models (tiny configs, random weights, nothing downloaded): exported, cut into regions,
each region a problem of plain torch that reproduces it inside the model, and the winners spliced back."""

import ast

import pytest
import torch

from kernelpro.model.extract import ExtractError, region_problem
from kernelpro.model.regions import TraceError, trace
from kernelpro.model.roundtrip import round_trip_error
from kernelpro.model.source import execute, read_source
from kernelpro.model.splice import Winner, patched_source
from kernelpro.model.verify import judge_patched
from kernelpro.problem import parse_problem
from kernelpro.search.module_copy import copy_class
from tests.model.helpers import traced

transformers = pytest.importorskip("transformers")


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def gpt2(directory):
    transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=128, n_positions=64).save_pretrained(directory)
    return directory


def llama(directory):
    transformers.LlamaConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                             vocab_size=128).save_pretrained(directory)
    return directory


@pytest.mark.parametrize(("config", "blocks"), [(gpt2, ["model.h.0", "model.h.1"]),
                                                (llama, ["model.layers.0", "model.layers.1"])], ids=["gpt2", "llama"])
def test_every_region_of_a_transformers_model_is_a_plain_torch_problem_that_reproduces_it(tmp_path, config, blocks):
    source = read_source(str(config(tmp_path)), seq_len=16)
    _, _, graph_module, regions, seen = traced(source)
    assert [r.name for r in regions if r.name in blocks] == blocks
    written = 0
    for region in regions:
        try:
            extracted = region_problem(graph_module, region, seen["infos"], f"region {region.name}")
        except ExtractError as error:  # the mask or positions made from the shapes alone: no input to draw
            assert not region.inputs and "reads no input" in str(error)
            continue
        parse_problem(extracted.source, region.name)
        assert round_trip_error(graph_module, region, extracted.source, seen["values"]) is None, region.name
        tree = ast.parse(extracted.source)
        imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert imported <= {"torch", "math", "base64", "io"}, region.name  # the judge needs no transformers
        written += 1
    assert written >= len(blocks) + 1


def test_the_same_transformers_model_traced_again_has_the_same_node_names(tmp_path):
    source = read_source(str(gpt2(tmp_path)), seq_len=16)
    torch.manual_seed(0)
    model, inputs = source.build()
    first = [node.name for node in trace(model, inputs).graph.nodes]
    with torch.no_grad():  # as the judge calls a candidate
        again = [node.name for node in trace(model, [torch.zeros_like(inputs[0])]).graph.nodes]
    assert first == again


def test_a_transformers_model_s_forward_is_deterministic(tmp_path):
    module = execute(read_source(str(gpt2(tmp_path)), seq_len=16).reference_source, "gpt2")
    model, ids = module.Model(), module.get_inputs()[0]
    assert torch.equal(model(ids), model(ids))  # built in eval mode: no dropout


def test_neighbouring_winners_are_spliced_into_a_transformers_model_at_its_first_call(tmp_path):
    source = read_source(str(gpt2(tmp_path)), seq_len=16)
    _, inputs, graph_module, regions, seen = traced(source)
    blocks = [r for r in regions if r.name in ("model.h.0", "model.h.1")]
    assert blocks[1].inputs[0] in blocks[0].outputs  # the second block reads the first's output
    winners = [Winner(region=r, source=copy_class(region_problem(graph_module, r, seen["infos"], r.name).source,
                                                  "Model", "ModelNew").code) for r in blocks]
    patched = patched_source(source.name, source.reference_source, winners)
    torch.manual_seed(3)
    original = execute(source.reference_source, "original").Model()
    torch.manual_seed(3)
    spliced = execute(patched, "patched").ModelNew()
    assert spliced.spliced is None  # traced at the first call's inputs
    with torch.no_grad():
        assert torch.equal(original(*inputs), spliced(*inputs))
    assert {"spliced_0", "spliced_1"} <= {name for name, _ in spliced.spliced.named_children()}


class _BranchingConfig(transformers.PretrainedConfig):
    model_type = "toy_branching"


class _Branching(transformers.PreTrainedModel):
    config_class = _BranchingConfig

    def __init__(self, config):
        super().__init__(config)
        self.scale = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.scale(x) if x.sum() > 0 else -x  # a branch on the values: no graph can hold it


class _Wrapper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = _Branching(_BranchingConfig())

    def forward(self, x):
        return self.model(x)


def test_a_transformers_model_that_cannot_be_exported_is_refused_naming_its_model_type():
    with pytest.raises(TraceError, match="transformers model \\(toy_branching\\)"):
        trace(_Wrapper(), [torch.randn(2, 4)])


def test_the_judge_finds_a_transformers_model_with_a_block_spliced_correct(tmp_path, settings):
    settings.harness.timing_trials = settings.harness.min_timing_trials = 5
    settings.harness.correctness_trials = 2
    source = read_source(str(gpt2(tmp_path)), seq_len=16)
    _, _, graph_module, regions, seen = traced(source)
    [block] = [r for r in regions if r.name == "model.h.1"]
    winner = copy_class(region_problem(graph_module, block, seen["infos"], block.name).source, "Model", "ModelNew")
    patched = patched_source(source.name, source.reference_source, [Winner(region=block, source=winner.code)])
    [result] = judge_patched(source.name, source.reference_source, [patched], "cpu", settings)
    assert result.status == "ok" and result.correct, result.message
