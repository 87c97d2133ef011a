import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Host-bound: a Linear, scale, residual, clamp, logsumexp and Mish (about ten small kernels)."""

    def __init__(self, input_size, hidden_size, scale_factor, clamp_min, clamp_max):
        super().__init__()
        self.matmul = nn.Linear(input_size, hidden_size)
        self.scale_factor = scale_factor
        self.clamp_min, self.clamp_max = clamp_min, clamp_max

    def forward(self, x):
        x = self.matmul(x)
        x = x * self.scale_factor
        x = x + x
        x = torch.clamp(x, self.clamp_min, self.clamp_max)
        x = torch.clamp(x, self.clamp_min, self.clamp_max)  # redundant pass
        x = torch.logsumexp(x, dim=1, keepdim=True)
        return x * F.mish(x)


def get_inputs():
    return [torch.randn(128, 512)]


def get_init_inputs():
    return [512, 1024, 2.0, -10.0, 10.0]
