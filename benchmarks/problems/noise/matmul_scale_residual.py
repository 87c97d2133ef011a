import torch
import torch.nn as nn


class Model(nn.Module):
    """Host-bound: a small Linear, a scale and a residual add (KernelBench level 2's Matmul+Scaling+ResidualAdd)."""

    def __init__(self, in_features, out_features, scaling):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling = scaling

    def forward(self, x):
        x = self.linear(x)
        original = x.clone().detach()
        x = x * self.scaling
        x = x + 0.0  # redundant pass
        return x + original


def get_inputs():
    return [torch.randn(128, 1024)]


def get_init_inputs():
    return [1024, 512, 0.5]
