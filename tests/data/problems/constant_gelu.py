import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer, then the max over dim 1 kept as a size-one dim, minus its mean over that dim, then GELU.

    The mean of a size-one dim is the value itself: the output is zero whatever the inputs (a degenerate problem,
    shaped like several in KernelBench's level 2).
    """

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x)
        x = torch.max(x, dim=1, keepdim=True).values
        x = x - x.mean(dim=1, keepdim=True)
        return torch.nn.functional.gelu(x)


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return [128, 256]
