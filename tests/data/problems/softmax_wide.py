import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over a wide last dimension: every output is tiny (about 6e-5, under atol=1e-4)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [0.05 * torch.randn(8, 16384)]


def get_init_inputs():
    return []
