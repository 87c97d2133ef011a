import torch
import torch.nn as nn


class Model(nn.Module):
    """GPU-bound: a 4096-square FP32 matmul, then a ReLU."""

    def forward(self, a, b):
        c = torch.relu(a @ b)
        c = torch.relu(c)  # redundant pass
        return c


def get_inputs():
    return [torch.randn(4096, 4096), torch.randn(4096, 4096)]


def get_init_inputs():
    return []
