import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """A guard around a fused path whose handler never runs here: legitimate (the handler would be a fallback)."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def fused(self, x):
        return torch.clamp_min(x, 0.0).mul_(self.scale)

    def forward(self, x):
        try:
            return self.fused(x)
        except RuntimeError:
            return torch.relu(x) * self.scale
