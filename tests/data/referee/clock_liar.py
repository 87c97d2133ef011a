import time

import torch
import torch.nn as nn

import kernelpro.harness.timing.clocks as clocks


def _claim_a_fiftieth(self, fn, args):
    start = time.perf_counter_ns()
    out = fn(*args)
    elapsed_ms = (time.perf_counter_ns() - start) / 1e6 / 50
    return elapsed_ms, elapsed_ms, out


clocks.CpuClock.time = _claim_a_fiftieth  # the judge's clock, as this process holds it


class ModelNew(nn.Module):
    """Slow (20 ms a call), with the clock of its own process replaced to claim a fiftieth of that."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        time.sleep(0.02)
        return torch.relu(x) * self.scale
