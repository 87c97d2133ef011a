import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Writes every result into one persistent buffer and returns it: the previous call's output is overwritten."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.out = None

    def forward(self, x):
        if self.out is None or self.out.shape != x.shape:
            self.out = torch.empty_like(x)
        return torch.mul(torch.relu(x), self.scale, out=self.out)
