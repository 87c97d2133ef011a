import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over rows of 393,216 uniform draws, as in KernelBench's level-1 softmax (4,096 rows there, 2 here):
    every output is about 2.5e-6 (under 2e-5 with the inputs scaled by 8), all inside atol=1e-4 of zero."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.rand(2, 393216)]


def get_init_inputs():
    return []
