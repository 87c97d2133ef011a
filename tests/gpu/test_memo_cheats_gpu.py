"""Memos on CUDA, where the caching allocator hands freed blocks back at once: a cache keyed on pointers, on ids
or on the first tensor seen is caught whatever address the next input lands at, a graph captured on the caller's
tensor and never copied into is caught too, and a cache keyed on the input's values is timed at its real cost."""

from __future__ import annotations

import pytest
import torch

from kernelpro.harness.judge import judge
from tests.conftest import candidate, problem

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]

# The shortcut a real candidate takes: capture once on the tensor it was given, then replay. Right only while
# every call comes in that very tensor, with the values it had at capture.
GRAPH_ON_CALLERS_TENSOR = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.graph = None

    def forward(self, x):
        if self.graph is None:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                torch.relu(x) * self.scale
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.out = torch.relu(x) * self.scale
        self.graph.replay()
        return self.out.clone()
'''


@pytest.mark.parametrize("name", ["cheat_cached_pointer", "cheat_cached_id", "cheat_cached_replay",
                                  "fault_pinned_input"])
def test_memos_on_pointers_ids_and_the_first_tensor_are_caught_on_cuda(name, settings):
    result = judge(problem("scale_relu"), candidate(name), device="cuda", settings=settings)
    assert (result.status, result.reason) == ("rejected", "cached_output"), result.message


def test_a_graph_captured_on_the_callers_tensor_is_caught(settings):
    result = judge(problem("scale_relu"), GRAPH_ON_CALLERS_TENSOR, device="cuda", settings=settings)
    assert (result.status, result.reason) == ("rejected", "cached_output"), result.message


def test_a_memo_on_the_inputs_values_is_correct_and_never_hits(settings):
    settings.harness.timing_trials = settings.harness.min_timing_trials = 40
    settings.harness.timing_budget_s = 20
    result = judge(problem("scale_relu"), candidate("cheat_cached_digest"), device="cuda", settings=settings)
    assert result.status == "ok", result.message
    assert result.details["timing"]["outputs_checked"] >= 40
    # every timed call came with new values, so the memo computed each output (and synchronised to read its key)
    assert result.speed_verdict != "faster" and not result.improves, result.message
