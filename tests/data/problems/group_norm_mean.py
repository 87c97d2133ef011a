import torch
import torch.nn as nn


class Model(nn.Module):
    """A group norm, then the mean over everything but the batch: zero in exact arithmetic (every group's mean
    is), so the output is the computation's rounding, about 1e-8, whatever the inputs (a degenerate problem
    shaped like KernelBench's level-2 Conv3d_GroupNorm_Mean)."""

    def __init__(self, channels, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x):
        return self.norm(x).mean(dim=[1, 2, 3])


def get_inputs():
    return [torch.randn(16, 32, 16, 16)]


def get_init_inputs():
    return [32, 8]
