import torch
import torch.nn as nn


class Model(nn.Module):
    """Scaled, masked-free attention-score softmax: scale, subtract the row max, exponentiate, normalise."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.softmax(x * self.scale, dim=-1)


def get_inputs():
    return [torch.randn(16, 2048, 2048)]


def get_init_inputs():
    return [0.125]
