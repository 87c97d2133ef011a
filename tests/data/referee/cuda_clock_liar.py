import torch
import torch.nn as nn

import kernelpro.harness.timing.clocks as clocks

_time = clocks.CudaClock.time
_issue = clocks.CudaClock.issue_ms


def _claim_a_fiftieth(self, fn, args):
    span, host, out = _time(self, fn, args)
    return span / 50, host / 50, out


def _issue_a_fiftieth(self, fn, args):
    host, out = _issue(self, fn, args)
    return host / 50, out


clocks.CudaClock.time = _claim_a_fiftieth  # the judge's clock, as this process holds it
clocks.CudaClock.issue_ms = _issue_a_fiftieth


class ModelNew(nn.Module):
    """An honest linear layer and ReLU, its own process's clock replaced to claim a fiftieth of its time."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
