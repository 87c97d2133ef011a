import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Host-bound: LayerNorm, GELU, a scale and a residual on a small activation."""

    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        y = self.norm(x)
        y = F.gelu(y)
        y = torch.relu(y + 1.0) - 1.0  # redundant pass (GELU's output is above -0.2)
        return y * 0.5 + x


def get_inputs():
    return [torch.randn(64, 768)]


def get_init_inputs():
    return [768]
