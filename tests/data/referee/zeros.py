import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Computes nothing: whatever verdict its own process reports, its outputs are zeros."""

    def __init__(self, scale):
        super().__init__()

    def forward(self, x):
        return torch.zeros_like(x)
