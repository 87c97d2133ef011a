import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Writes the result over its input and returns the input."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x.relu_().mul_(self.scale)
