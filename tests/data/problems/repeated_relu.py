import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU then a scale, with the ReLU repeated: the repeats change nothing (ReLU is idempotent) but each costs a
    pass over the tensor, so a candidate that drops them is measurably faster, on any machine."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        for _ in range(16):
            x = torch.relu(x)
        return torch.relu(x) * self.scale


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return [2.0]
