import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU then a scale: a small elementwise problem."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return [2.0]
