import torch
import torch.nn as nn


class Model(nn.Module):
    """Host-bound: a Linear, a multiply and a LeakyReLU (KernelBench level 2's Gemm+Multiply+LeakyReLU)."""

    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def forward(self, x):
        x = self.gemm(x)
        x = x * self.multiplier
        x = torch.abs(x) * torch.sign(x)  # redundant pass
        return self.leaky_relu(x)


def get_inputs():
    return [torch.randn(128, 512)]


def get_init_inputs():
    return [512, 1024, 2.0, 0.1]
